"""Observation builder of the backfilling env (the row loop is compiled with numba).

:func:`build` reads the engine's public state view (:class:`hpcgym.sim.view.EngineView`,
``sim.view``) at a decision point and returns the observation (one row per backfill
candidate, FCFS order), the action mask and the job of every row. It reads nothing
private of the engine and calls nothing in it; the one rule it re-implements (EASY's
test) is checked against the engine's own ``Simulation.candidates`` in
``tests/test_env.py``.

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

from hpcgym.sim.view import EngineView

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


def build(
    view: EngineView,
    pos: np.ndarray,
    pred: np.ndarray,
    est_scale: float,
    wait_scale: float,
    max_rows: int,
    n_cols: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The observation of the decision point the simulation of ``view`` is at.

    :param view: the simulation's state view (``sim.view``)
    :param pos: int64 scratch of length ``n`` (overwritten)
    :param pred: feature predictions per job (used when ``n_cols`` has the column)
    :param est_scale: seconds that map to 1 in the estimate columns
    :param wait_scale: seconds that map to 1 in the wait column
    :param max_rows: ``K``, rows of the observation
    :param n_cols: ``F``, columns (:func:`n_features`)
    :param out: ``(obs, mask, rows)`` arrays of the shapes and dtypes of the return values
        to overwrite in place (e.g. one env's slice of a batched buffer: C-contiguous
        rows); ``None`` allocates fresh arrays
    :return: observation ``(max_rows, n_cols)`` float32, mask ``(max_rows + 1,)`` bool, the
        job index of each row (``-1`` for padding) and the total number of candidates
        (which may exceed ``max_rows``; the first ``max_rows`` by FCFS are shown); with
        ``out`` the arrays returned are those of ``out``
    """
    if out is None:
        obs = np.empty((max_rows, n_cols), dtype=np.float32)
        mask = np.empty(max_rows + 1, dtype=np.bool_)
        rows = np.empty(max_rows, dtype=np.int64)
    else:
        obs, mask, rows = out
    total = _build(
        view.submit,
        view.estimate,
        view.procs,
        view.waiting_buffer,
        view.n_waiting,
        view.order_buffer,
        view.n_order,
        view.now,
        view.shadow,
        view.machine_size,
        view.free,
        view.extra,
        view.head,
        view.guarded,
        pos,
        pred,
        est_scale,
        wait_scale,
        obs,
        mask,
        rows,
    )
    return obs, mask, rows, total


@njit(cache=True)
def _build(
    submit,
    est,
    procs,
    queue,
    qlen,
    order,
    olen,
    now,
    shadow,
    m,
    free,
    extra,
    head,
    guarded,
    pos,
    pred,
    est_scale,
    wait_scale,
    obs,
    mask,
    rows,
):  # pragma: no cover - numba
    """The row loop of :func:`build`: overwrites ``obs``, ``mask``, ``rows`` (padding
    zeros / ``False`` / ``-1``) and returns the number of candidates."""
    max_rows, n_cols = obs.shape
    obs[:] = 0.0
    mask[:] = False
    rows[:] = -1
    mask[max_rows] = True  # STOP
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
    for k in range(qlen):
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
    return total
