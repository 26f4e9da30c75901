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
 2  estimate         ``min(est / est_scale, 1)`` (est <= request <= est_scale: clipped
                     only when ``est_scale`` is smaller, e.g. another trace's)
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

With ``time_scale="log"`` the durations of columns 1, 2, 10 and 12 are read on a log
scale instead: ``min(ln(1 + x / tau) / ln(1 + scale / tau), 1)`` with ``tau`` =
:data:`LOG_TAU` (10 s, the bound of the bounded slowdown) and the column's scale, so that
a minute and ten minutes, or an hour's and a day's wait, stay apart (linearly, with a
scale of days, short jobs all read about 0).

With ``features="extended"`` the env appends the columns of
:mod:`hpcgym.envs.features` (:func:`column_names`): :func:`build` with ``ext`` fills them
in the same compiled call (:func:`_build_ext`: :func:`_build`, then :func:`_sync` and
:func:`_fill`). Those kernels live in this module, not in :mod:`hpcgym.envs.features`,
because numba's disk cache only notices changes of a compiled function's own file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from hpcgym.sim.view import EngineView, easy_test

if TYPE_CHECKING:
    from hpcgym.envs.features import EpisodeFeatures

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
    "LOG_TAU",
    "N_BASE_FEATURES",
    "TIME_SCALES",
    "build",
    "column_names",
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

#: How the duration columns (wait, estimate, shadow, prediction) map seconds to [0, 1].
TIME_SCALES = ("linear", "log")
#: ``tau`` of the log time scale, seconds: the bound of the bounded slowdown.
LOG_TAU = 10.0

# ---- constants of the extended features' kernels (hpcgym.envs.features), defined in this
# module: numba's disk cache only notices changes of the compiled function's own file
#: completed jobs per user in ``user_accuracy``
USER_HISTORY = 4
HOUR = 3600.0
DAY = 86400.0
WEEK = 7 * DAY
_MONDAY = 4 * DAY  # 1970-01-01 was a Thursday: the first Monday is 4 days later

#: column name -> description (the table of the module docstring)
COLUMNS: dict[str, str] = {
    "valid": "1 for a candidate row, 0 for a padding row",
    "wait": "min((now - submit) / wait_scale, 1)",
    "estimate": "min(est / est_scale, 1) (the engine's runtime estimate; est <= request <= "
    "est_scale by default)",
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


def n_features(with_prediction: bool, extended: bool = False) -> int:
    """Row width ``F``: the paper's columns, ``prediction``, the extended columns."""
    return len(column_names(with_prediction, extended))


def column_names(with_prediction: bool, extended: bool = False) -> tuple[str, ...]:
    """Name of every column, in order (:data:`COLUMNS`, then, with ``extended``, the
    columns of :data:`hpcgym.envs.features.EXTENDED_COLUMNS`).

    :param with_prediction: the ``prediction`` column (a feature predictor) is present
    :param extended: the extended feature set (``features="extended"``)
    """
    from hpcgym.envs.features import EXTENDED_COLUMNS

    names = list(COLUMNS)[: N_BASE_FEATURES + (1 if with_prediction else 0)]
    if extended:
        names += list(EXTENDED_COLUMNS)
    return tuple(names)


def build(
    view: EngineView,
    pos: np.ndarray,
    pred: np.ndarray,
    est_scale: float,
    wait_scale: float,
    max_rows: int,
    n_cols: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ext: EpisodeFeatures | None = None,
    time_scale: str = "linear",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The observation of the decision point the simulation of ``view`` is at.

    :param view: the simulation's state view (``sim.view``)
    :param pos: int64 scratch of length ``n`` (overwritten)
    :param pred: feature predictions per job (the ``prediction`` column is written when
        ``pred`` is not empty; an empty array: no such column)
    :param est_scale: seconds that map to 1 in the estimate columns
    :param wait_scale: seconds that map to 1 in the wait column
    :param max_rows: ``K``, rows of the observation
    :param n_cols: ``F``, columns (:func:`n_features`); columns after the paper's (and
        ``prediction``) are left zero here (the extended features fill them)
    :param out: ``(obs, mask, rows)`` arrays of the shapes and dtypes of the return values
        to overwrite in place (e.g. one env's slice of a batched buffer: C-contiguous
        rows); ``None`` allocates fresh arrays
    :param ext: the episode's extended features (``features="extended"``): fills the
        columns after the paper's (and ``prediction``) of the real rows
    :param time_scale: ``linear`` or ``log`` (:data:`TIME_SCALES`): how the duration
        columns read seconds (module docstring)
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
    args = (
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
        LOG_TAU if time_scale == "log" else 0.0,
        obs,
        mask,
        rows,
    )
    if ext is None:
        total = _build(*args)
    else:  # one compiled call: the paper's columns, then the extended ones
        col = N_BASE_FEATURES + (1 if n_cols > N_BASE_FEATURES and pred.shape[0] > 0 else 0)
        total = _build_ext(*args, col, *ext.kernel_args())
    return obs, mask, rows, total


@njit(cache=True)
def _den(scale, tau):  # pragma: no cover - numba
    """The denominator of a duration column (:func:`_dur`): ``scale``, or with ``tau > 0``
    (the log time scale) ``ln(1 + scale / tau)``; computed once per observation."""
    return np.log1p(scale / tau) if tau > 0.0 else scale


@njit(cache=True)
def _dur(x, den, tau):  # pragma: no cover - numba
    """A duration column: ``min(x / scale, 1)``, or with ``tau > 0`` (the log time scale)
    ``min(ln(1 + x / tau) / ln(1 + scale / tau), 1)`` (``x < 0`` reads 0); ``den`` is
    :func:`_den` of the column's scale."""
    if tau > 0.0:
        return min(np.log1p(max(x, 0.0) / tau) / den, 1.0)
    return min(x / den, 1.0)


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
    tau,
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
    den_est = _den(est_scale, tau)
    den_wait = _den(wait_scale, tau)
    shadow_col = _dur(left, den_est, tau)
    with_pred = n_cols > 12 and pred.shape[0] > 0
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
        easy = easy_test(now, e, p, free, shadow, extra)  # the engine's EASY test
        if guarded and not easy:
            continue
        total += 1
        if c >= max_rows:
            continue
        row = obs[c]
        row[0] = 1.0
        row[1] = _dur(now - submit[j], den_wait, tau)
        row[2] = _dur(e, den_est, tau)
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
            row[12] = max(_dur(pred[j], den_est, tau), 0.0)
        rows[c] = j
        mask[c] = True
        c += 1
    return total


@njit(cache=True)
def _build_ext(
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
    tau,
    obs,
    mask,
    rows,
    col,
    seen,
    table,
    nt,
    clock_base,
    ints,
    floats,
    n,
    nu,
    jstart,
    wstart,
    runtime,
    request,
):  # pragma: no cover - numba
    """:func:`_build`, then the extended columns ``col ..`` of the real rows
    (:func:`_fill`); returns the number of candidates."""
    total = _build(
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
        tau,
        obs,
        mask,
        rows,
    )
    _fill(
        obs,
        rows,
        min(total, obs.shape[0]),
        col,
        now,
        shadow,
        m,
        extra,
        head,
        qlen,
        procs,
        est,
        queue,
        seen,
        table,
        nt,
        clock_base,
        ints,
        floats,
        n,
        nu,
        jstart,
        wstart,
        runtime,
        request,
    )
    return total


# ------------------------------------------------------------------ extended features
# The compiled part of hpcgym.envs.features (here, with _build, for numba's disk cache).


@njit(cache=True)
def _sync(now, seen_w, start, runtime, request, ints, floats, n, nu):  # pragma: no cover
    """Update the per-user state with the jobs started and completed since the last call
    (completions in the order of their end, ties by index)."""
    user = ints[:n]
    count = ints[n : n + nu]
    running = ints[n + nu : n + 2 * nu]
    b = n + 3 * nu
    phase = ints[b : b + n]
    act = ints[b + n : b + 2 * n]
    fin = ints[b + 2 * n : b + 3 * n]
    sc = b + 3 * n  # ints[sc]: first job not started; ints[sc + 1]: running jobs
    lo = ints[sc]
    nact = ints[sc + 1]
    for j in range(lo, seen_w):
        if phase[j] == 0 and np.isfinite(start[j]):
            phase[j] = 1
            act[nact] = j
            nact += 1
            u = user[j]
            if u >= 0:
                running[u] += 1
    while lo < seen_w and phase[lo] != 0:
        lo += 1
    ints[sc] = lo
    k = 0
    nf = 0
    for i in range(nact):
        j = act[i]
        if start[j] + runtime[j] <= now:
            # insertion into fin[:nf] by (end, index)
            e = start[j] + runtime[j]
            p = nf
            while p > 0 and (
                start[fin[p - 1]] + runtime[fin[p - 1]] > e
                or (start[fin[p - 1]] + runtime[fin[p - 1]] == e and fin[p - 1] > j)
            ):
                fin[p] = fin[p - 1]
                p -= 1
            fin[p] = j
            nf += 1
        else:
            act[k] = j
            k += 1
    ints[sc + 1] = k
    nh = USER_HISTORY
    pop = nu * nh
    for i in range(nf):
        j = fin[i]
        phase[j] = 2
        r = min(max(runtime[j] / request[j], 0.0), 1.0)
        floats[pop] += r
        floats[pop + 1] += 1.0
        u = user[j]
        if u >= 0:
            c = count[u]
            floats[u * nh + c % nh] = r
            count[u] = c + 1
            running[u] -= 1


@njit(cache=True)
def _cnt(x):  # pragma: no cover - numba
    return min(np.log2(1.0 + x) / 10.0, 1.0)


@njit(cache=True)
def _fill(
    obs,
    rows,
    shown,
    col,
    now,
    shadow,
    m,
    extra,
    head,
    qlen,
    procs,
    est,
    queue,
    seen,
    table,
    nt,
    clock_base,
    ints,
    floats,
    n,
    nu,
    start,
    wstart,
    runtime,
    request,
):  # pragma: no cover - numba
    """The extended columns ``col ..`` of rows ``0 .. shown-1`` (the other columns
    built; ``seen``: trace jobs submitted so far; ``table``, ``nt``, ``clock_base``: the
    :class:`TraceContext`; ``ints``, ``floats``, ``n``, ``nu``: the
    :class:`EpisodeFeatures` state; ``start``, ``runtime``, ``request``: the window's
    jobs, ``wstart`` its first trace index)."""
    _sync(now, seen - wstart, start, runtime, request, ints, floats, n, nu)
    if shown == 0:
        return
    tsubmit = table[:nt]
    cum_work = table[nt : 2 * nt + 1]
    clock_offset = table[2 * nt + 1 :]
    user = ints[:n]
    count = ints[n : n + nu]
    running = ints[n + nu : n + 2 * nu]
    waiting = ints[n + 2 * nu : n + 3 * nu]
    nh = USER_HISTORY
    pop = nu * nh
    ranks = floats[pop + 2 :]
    mf = float(m)
    # ---- clock
    k = int(np.floor((now - clock_base) / HOUR))
    k = min(max(k, 0), clock_offset.shape[0] - 1)
    local = now + clock_offset[k]
    day = 2.0 * np.pi * ((local % DAY) / DAY)
    tod_sin = 0.5 * (1.0 + np.sin(day))
    tod_cos = 0.5 * (1.0 + np.cos(day))
    weekday = ((local - _MONDAY) % WEEK) / WEEK
    # ---- arrivals: trace jobs 0 .. seen-1 have been submitted
    lo = np.searchsorted(tsubmit, now - HOUR, side="right")
    w = cum_work[seen] - cum_work[lo] if lo < seen else 0.0
    r = w / (mf * HOUR)
    load_hour = r / (1.0 + r)
    lo = np.searchsorted(tsubmit, now - DAY, side="right")
    w = cum_work[seen] - cum_work[lo] if lo < seen else 0.0
    r = w / (mf * DAY)
    load_day = r / (1.0 + r)
    # ---- queue
    backlog = 0.0
    for q in range(qlen):
        j = queue[q]
        backlog += procs[j] * est[j]
        u = user[j]
        if u >= 0:
            waiting[u] += 1
    backlog /= mf
    queue_jobs = _cnt(qlen)
    queue_work = backlog / (backlog + DAY)
    shadow_free = min((extra + procs[head]) / mf, 1.0) if head >= 0 else 0.0
    # ---- population prior of user_accuracy
    prior = floats[pop] / floats[pop + 1] if floats[pop + 1] > 0 else 1.0
    # ---- size rank among the rows (sorted estimates in ``ranks``)
    for c in range(shown):
        ranks[c] = est[rows[c]]
    if shown > 1:
        ranks[:shown].sort()
    srt = ranks[:shown]
    rank_den = max(shown - 1, 1)
    left = shadow - now
    for c in range(shown):
        j = rows[c]
        e = est[j]
        p = procs[j]
        row = obs[c]
        row[col] = tod_sin
        row[col + 1] = tod_cos
        row[col + 2] = weekday
        row[col + 3] = load_hour
        row[col + 4] = load_day
        row[col + 5] = queue_jobs
        row[col + 6] = queue_work
        row[col + 7] = shadow_free
        s = left - e
        row[col + 8] = 0.5 * (1.0 + s / (abs(s) + HOUR)) if np.isfinite(s) else 1.0
        xl = extra - p if now + e > shadow else extra
        row[col + 9] = min(max(0.5 * (1.0 + xl / mf), 0.0), 1.0)
        row[col + 10] = np.searchsorted(srt, e, side="left") / rank_den
        u = user[j]
        if u >= 0:
            h = min(count[u], nh)
            if h > 0:
                acc = 0.0
                for i in range(h):
                    acc += floats[u * nh + i]
                row[col + 11] = acc / h
            else:
                row[col + 11] = prior
            row[col + 12] = _cnt(max(running[u], 0))
            row[col + 13] = _cnt(max(waiting[u] - 1, 0))
        else:
            row[col + 11] = prior
            row[col + 12] = 0.0
            row[col + 13] = 0.0
    for q in range(qlen):
        u = user[queue[q]]
        if u >= 0:
            waiting[u] = 0
