"""Observation builder of the backfilling env (compiled with numba).

One call of :func:`build` reads the engine's state arrays (``JF``, ``JI``, ``S``, ``C``
of :mod:`hpcgym.sim._kernel`) at a decision point and returns the observation (one
row per backfill candidate, FCFS order), the action mask and the job of every row.

The layout constants of the kernel are passed at run time (:data:`LAYOUT`) instead of
being read as globals inside the compiled function: numba's on-disk cache does not
notice when another module changes, so a compiled-in constant could silently go stale
if the kernel's layout changed. Nothing here calls into the kernel either; the one
rule it re-implements (EASY's test) is checked against the engine's own
``Simulation.candidates`` in ``tests/test_env.py``.

Columns (see :data:`COLUMNS`; every value is in ``[0, 1]``):

==  ===============  ===================================================================
 #  name             value
==  ===============  ===================================================================
 0  valid            1 for a candidate row, 0 for padding
 1  wait             ``min(wait / wait_scale, 1)``; wait = now - submit
 2  estimate         ``est / est_scale`` (est <= request <= est_scale: never clipped)
 3  procs            ``procs / machine_size``
 4  est_vs_shadow    ``est / (est + (shadow - now))``: <= 0.5 iff the job ends by the shadow
 5  procs_vs_free    ``procs / free``: <= 1 for every candidate
 6  procs_vs_extra   ``procs / (procs + extra)``: <= 0.5 iff the job fits in the extra procs
 7  easy             1 if EASY itself would start the job now (never delays the reservation)
 8  free             ``free / machine_size`` (machine availability, same in every row)
 9  rank             position in the base policy's backfill order / max(waiting - 2, 1)
10  shadow           ``min((shadow - now) / est_scale, 1)`` (same in every row)
11  extra            ``extra / machine_size`` (same in every row)
12  prediction       ``min(prediction / est_scale, 1)`` (only with a feature predictor)
==  ===============  ===================================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hpcgym.sim import _kernel as K

__all__ = [
    "COLUMNS",
    "COL_EASY",
    "COL_EST",
    "COL_EST_SHADOW",
    "COL_EXTRA",
    "COL_FREE",
    "COL_PRED",
    "COL_PROCS",
    "COL_PROCS_EXTRA",
    "COL_PROCS_FREE",
    "COL_RANK",
    "COL_SHADOW",
    "COL_VALID",
    "COL_WAIT",
    "LAYOUT",
    "N_BASE_FEATURES",
    "build",
    "n_features",
]

COL_VALID = 0
COL_WAIT = 1
COL_EST = 2
COL_PROCS = 3
COL_EST_SHADOW = 4
COL_PROCS_FREE = 5
COL_PROCS_EXTRA = 6
COL_EASY = 7
COL_FREE = 8
COL_RANK = 9
COL_SHADOW = 10
COL_EXTRA = 11
N_BASE_FEATURES = 12
COL_PRED = 12  # only present with a feature predictor

#: column name -> description (the table of the module docstring)
COLUMNS: dict[str, str] = {
    "valid": "1 for a candidate row, 0 for a padding row",
    "wait": "min((now - submit) / wait_scale, 1)",
    "estimate": "est / est_scale (the engine's runtime estimate; est <= request <= est_scale)",
    "procs": "procs / machine_size",
    "est_vs_shadow": "est / (est + shadow - now): <= 0.5 iff the job ends by the shadow time",
    "procs_vs_free": "procs / free processors (<= 1 for a candidate)",
    "procs_vs_extra": "procs / (procs + extra): <= 0.5 iff the job fits in the extra processors",
    "easy": "1 if EASY would start the job now (cannot delay the reservation), else 0",
    "free": "free processors / machine_size",
    "rank": "position in the base policy's backfill order / max(waiting jobs - 2, 1)",
    "shadow": "min((shadow - now) / est_scale, 1)",
    "extra": "extra processors / machine_size",
    "prediction": "min(feature prediction / est_scale, 1) (only with feature_predictor)",
}


def n_features(with_prediction: bool) -> int:
    """Row width ``F``."""
    return N_BASE_FEATURES + (1 if with_prediction else 0)


# indices into LAYOUT
_L_F_SUBMIT = 0
_L_F_EST = 1
_L_I_PROCS = 2
_L_I_QUEUE = 3
_L_I_ORDER = 4
_L_S_T = 5
_L_S_SHADOW = 6
_L_C_M = 7
_L_C_FREE = 8
_L_C_EXTRA = 9
_L_C_HEAD = 10
_L_C_QLEN = 11
_L_C_OLEN = 12
_L_C_CANDMODE = 13
_L_CAND_EASY = 14

#: The kernel layout constants :func:`build` needs, in the ``_L_*`` order.
LAYOUT = np.array(
    [
        K.F_SUBMIT,
        K.F_EST,
        K.I_PROCS,
        K.I_QUEUE,
        K.I_ORDER,
        K.S_T,
        K.S_SHADOW,
        K.C_M,
        K.C_FREE,
        K.C_EXTRA,
        K.C_HEAD,
        K.C_QLEN,
        K.C_OLEN,
        K.C_CANDMODE,
        K.CAND_EASY,
    ],
    dtype=np.int64,
)


@njit(cache=True)
def build(JF, JI, S, C, L, pos, pred, scales, max_rows, n_cols):  # pragma: no cover - numba
    """Observation ``(max_rows, n_cols)`` float32, mask ``(max_rows + 1,)`` bool, the job
    index of each row (``-1`` for padding) and the total number of candidates (which
    may exceed ``max_rows``; the first ``max_rows`` by FCFS are shown).

    :param pos: int64 scratch of length ``n`` (overwritten)
    :param pred: feature predictions per job (used when ``n_cols`` has the column)
    :param scales: ``[est_scale, wait_scale]``
    """
    obs = np.zeros((max_rows, n_cols), dtype=np.float32)
    mask = np.zeros(max_rows + 1, dtype=np.bool_)
    rows = np.full(max_rows, -1, dtype=np.int64)
    mask[max_rows] = True  # STOP
    est_scale = scales[0]
    wait_scale = scales[1]
    submit = JF[L[_L_F_SUBMIT]]
    est = JF[L[_L_F_EST]]
    procs = JI[L[_L_I_PROCS]]
    queue = JI[L[_L_I_QUEUE]]
    order = JI[L[_L_I_ORDER]]
    now = S[L[_L_S_T]]
    shadow = S[L[_L_S_SHADOW]]
    m = C[L[_L_C_M]]
    free = C[L[_L_C_FREE]]
    extra = C[L[_L_C_EXTRA]]
    head = C[L[_L_C_HEAD]]
    guarded = C[L[_L_C_CANDMODE]] == L[_L_CAND_EASY]
    olen = C[L[_L_C_OLEN]]
    # rank in the backfill order: ORDER[0] is the head, ORDER[1:] the backfill order
    for k in range(1, olen):
        pos[order[k]] = k - 1
    rank_den = max(olen - 2, 1)
    left = shadow - now
    free_frac = free / m
    extra_frac = extra / m
    shadow_col = min(left / est_scale, 1.0)
    with_pred = n_cols > 12
    total = 0
    c = 0
    for k in range(C[L[_L_C_QLEN]]):
        j = queue[k]
        if j == head:
            continue
        p = procs[j]
        if p > free:
            continue
        e = est[j]
        easy = now + e <= shadow or p <= extra
        if guarded and not easy:
            continue
        total += 1
        if c >= max_rows:
            continue
        row = obs[c]
        row[0] = 1.0
        row[1] = min((now - submit[j]) / wait_scale, 1.0)
        row[2] = e / est_scale
        row[3] = p / m
        d = e + left
        row[4] = e / d if d > 0.0 else 1.0
        row[5] = p / free
        row[6] = p / (p + extra)
        row[7] = 1.0 if easy else 0.0
        row[8] = free_frac
        row[9] = min(pos[j] / rank_den, 1.0)
        row[10] = shadow_col
        row[11] = extra_frac
        if with_pred:
            v = pred[j] / est_scale
            row[12] = min(max(v, 0.0), 1.0)
        rows[c] = j
        mask[c] = True
        c += 1
    return obs, mask, rows, total
