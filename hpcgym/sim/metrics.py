"""Scheduling metrics of a simulated window.

All metrics are over the window's jobs. ``tau = 10`` seconds bounds the slowdown of
very short jobs (Feitelson et al.; Gaussier et al. SC'15 §2, Carastan-Santos Eq. 3.2).

Beside the bounded slowdown (which rewards running short jobs first and can hide a
starved wide job), every window reports objectives of a different kind:

* ``utilization``: busy processor-seconds over the processor-seconds of the window,
  ``sum_j procs_j * run_j / (m * makespan)``, ``makespan`` = the last job's end minus the
  first job's submission (the window's jobs only, from an empty machine);
* ``awrt``: the area-weighted response time (Schwiegelshohn and Yahyapour),
  ``sum_j a_j * (wait_j + run_j) / sum_j a_j`` with area ``a_j = procs_j * run_j``: the
  response time of a processor-second of work, which a schedule cannot improve by
  favouring small short jobs at the expense of wide long ones;
* ``avg_wait_<class>`` and ``p95_wait_<class>``: the mean and the 95th-percentile wait of
  the jobs of each size class (:data:`SIZE_CLASSES`, :func:`size_class`): ``serial`` (1
  processor), ``small`` (2 to :data:`SMALL_MAX_PROCS` = 8), ``medium`` (up to
  :data:`MEDIUM_MACHINE_FRACTION` = 1/8 of the machine) and ``wide`` (more), taken in
  that order; ``nan`` for a class without jobs in the window.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hpcgym.workload.core import Workload

TAU = 10.0

__all__ = [
    "COMPARISON_METRICS",
    "KERNEL_METRICS",
    "MEDIUM_MACHINE_FRACTION",
    "SIZE_CLASSES",
    "SIZE_CLASS_METRICS",
    "SMALL_MAX_PROCS",
    "TAU",
    "bounded_slowdown",
    "compute_metrics",
    "head_delay_summary",
    "metrics_kernel",
    "pp_bounded_slowdown",
    "request_reservation_delays",
    "size_class",
]


def bounded_slowdown(wait: np.ndarray, runtime: np.ndarray, tau: float = TAU) -> np.ndarray:
    """Per-job ``bsld = max((wait + runtime) / max(runtime, tau), 1)``."""
    return np.maximum((wait + runtime) / np.maximum(runtime, tau), 1.0)


def pp_bounded_slowdown(
    wait: np.ndarray, runtime: np.ndarray, procs: np.ndarray, tau: float = TAU
) -> np.ndarray:
    """Per-processor bounded slowdown (Carastan-Santos Eq. 4.1):
    ``max((wait + runtime) / (procs * max(runtime, tau)), 1)``."""
    return np.maximum((wait + runtime) / (procs * np.maximum(runtime, tau)), 1.0)


#: the job-size classes of the per-class waits, in the order they are tested
SIZE_CLASSES: tuple[str, ...] = ("serial", "small", "medium", "wide")
#: the largest job of the ``small`` class (processors)
SMALL_MAX_PROCS = 8
#: the ``medium`` class: jobs on at most this share of the machine (and more than
#: :data:`SMALL_MAX_PROCS` processors); ``wide``: the rest
MEDIUM_MACHINE_FRACTION = 1.0 / 8.0
_MEDIUM_DIV = 8  # procs * 8 <= m: the medium test in integers (1 / MEDIUM_MACHINE_FRACTION)
#: the per-class wait metrics (mean, then 95th percentile, per class)
SIZE_CLASS_METRICS: tuple[str, ...] = tuple(
    f"{stat}_wait_{c}" for c in SIZE_CLASSES for stat in ("avg", "p95")
)

#: the objectives beyond bounded slowdown that every comparison reports per window
COMPARISON_METRICS: tuple[str, ...] = ("awrt", *SIZE_CLASS_METRICS)

#: the float metrics of :func:`metrics_kernel`, in the order of its output (new metrics
#: are appended, so that the first ones keep their places)
KERNEL_METRICS: tuple[str, ...] = (
    "avg_bsld",
    "p99_bsld",
    "avg_pp_bsld",
    "avg_wait",
    "max_wait",
    "avg_turnaround",
    "utilization",
    "makespan",
    *COMPARISON_METRICS,
)


def size_class(procs: np.ndarray, machine_size: int) -> np.ndarray:
    """The size class of every job, an index into :data:`SIZE_CLASSES`: ``serial`` (1
    processor), ``small`` (at most :data:`SMALL_MAX_PROCS`), ``medium`` (at most 1/8 of
    ``machine_size``), ``wide`` (the rest), tested in that order.

    :param procs: processors of every job
    :param machine_size: processors of the machine
    """
    p = np.asarray(procs, dtype=np.int64)
    return np.where(
        p <= 1,
        0,
        np.where(p <= SMALL_MAX_PROCS, 1, np.where(p * _MEDIUM_DIV <= machine_size, 2, 3)),
    )


@njit(cache=True)
def _size_class(p, m):  # pragma: no cover - numba
    """:func:`size_class` of one job (``m``: the machine's processors, a float)."""
    if p <= 1:
        return 0
    if p <= SMALL_MAX_PROCS:
        return 1
    if p * _MEDIUM_DIV <= m:
        return 2
    return 3


@njit(cache=True)
def _block_sum(a, lo, n):  # pragma: no cover - numba
    """numpy's float64 sum of at most 128 values: eight partial sums per block."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        b = lo + i
        r0 += a[b]
        r1 += a[b + 1]
        r2 += a[b + 2]
        r3 += a[b + 3]
        r4 += a[b + 4]
        r5 += a[b + 5]
        r6 += a[b + 6]
        r7 += a[b + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise_sum(a, lo, n):  # pragma: no cover - numba
    """numpy's own float64 summation (``np.add.reduce`` of a contiguous array): halves
    (a multiple of 8 on the left) summed down to blocks of at most 128 values, so that a
    mean here equals numpy's to the bit. Iterative (numba caches no recursion)."""
    if n <= 128:
        return _block_sum(a, lo, n)
    los = np.empty(64, dtype=np.int64)
    ns = np.empty(64, dtype=np.int64)
    state = np.zeros(64, dtype=np.int64)
    vals = np.empty(64)
    los[0] = lo
    ns[0] = n
    sp = 1
    vp = 0
    while sp > 0:
        top = sp - 1
        at, m = los[top], ns[top]
        if m <= 128:
            vals[vp] = _block_sum(a, at, m)
            vp += 1
            sp -= 1
            continue
        half = m // 2
        half -= half % 8
        if state[top] == 0:  # the left half first
            state[top] = 1
            los[sp], ns[sp], state[sp] = at, half, 0
            sp += 1
        elif state[top] == 1:  # then the right half
            state[top] = 2
            los[sp], ns[sp], state[sp] = at + half, m - half, 0
            sp += 1
        else:  # both done: left + right
            vp -= 1
            vals[vp - 1] = vals[vp - 1] + vals[vp]
            sp -= 1
    return vals[0]


@njit(cache=True)
def _percentile(values, q):  # pragma: no cover - numba
    """``np.percentile(values, q)`` (linear method), computed as numpy computes it."""
    n = values.shape[0]
    a = np.sort(values)
    vi = (n - 1) * (q / 100.0)
    lo = int(np.floor(vi))
    hi = lo + 1
    if vi >= n - 1:
        lo = hi = n - 1
        t = vi - np.floor(vi) if n > 1 else 0.0
    else:
        t = vi - lo
    x, y = a[lo], a[hi]
    d = y - x
    return y - d * (1.0 - t) if t >= 0.5 else x + d * t


@njit(cache=True)
def metrics_kernel(submit, runtime, procs, start, m, out):  # pragma: no cover - numba
    """The float metrics of :func:`compute_metrics` (:data:`KERNEL_METRICS`, in order) of
    one finished window into ``out``; compiled, so that the batched envs compute an
    episode's metrics without leaving compiled code, with the same numbers."""
    n = submit.shape[0]
    wait = np.empty(n)
    bsld = np.empty(n)
    pp = np.empty(n)
    turn = np.empty(n)
    work = np.empty(n)
    end_max = -np.inf
    wait_max = -np.inf
    for j in range(n):
        r = runtime[j]
        w = start[j] - submit[j]
        wait[j] = w
        den = max(r, TAU)
        bsld[j] = max((w + r) / den, 1.0)
        pp[j] = max((w + r) / (procs[j] * den), 1.0)
        turn[j] = w + r
        work[j] = r * procs[j]
        end_max = max(end_max, start[j] + r)
        wait_max = max(wait_max, w)
    makespan = end_max - submit[0]
    out[0] = _pairwise_sum(bsld, 0, n) / n
    out[1] = _percentile(bsld, 99.0)
    out[2] = _pairwise_sum(pp, 0, n) / n
    out[3] = _pairwise_sum(wait, 0, n) / n
    out[4] = wait_max
    out[5] = _pairwise_sum(turn, 0, n) / n
    area = _pairwise_sum(work, 0, n)
    out[6] = area / (m * makespan) if makespan > 0 else 0.0
    out[7] = makespan
    # area-weighted response time (equal weights when no job has any area)
    for j in range(n):
        pp[j] = work[j] * turn[j]  # pp is not needed any more: reuse it
    out[8] = _pairwise_sum(pp, 0, n) / area if area > 0 else out[5]
    # waits by size class: the class's waits in submission order, as numpy's wait[mask]
    for k in range(4):
        cnt = 0
        for j in range(n):
            if _size_class(procs[j], m) == k:
                bsld[cnt] = wait[j]  # bsld is not needed any more: reuse it
                cnt += 1
        if cnt == 0:
            out[9 + 2 * k] = np.nan
            out[10 + 2 * k] = np.nan
        else:
            out[9 + 2 * k] = _pairwise_sum(bsld, 0, cnt) / cnt
            out[10 + 2 * k] = _percentile(bsld[:cnt], 95.0)


def compute_metrics(
    workload: Workload, start: np.ndarray, backfilled: np.ndarray | None = None
) -> dict[str, float]:
    """Metrics of a finished simulation.

    Keys: ``avg_bsld`` (AVEbsld), ``p99_bsld`` (99th percentile of the bounded
    slowdowns: the tail that SJF-like orders can starve), ``avg_pp_bsld``, ``avg_wait``,
    ``max_wait``,
    ``avg_turnaround``, ``utilization`` (work / (m x makespan)), ``makespan`` (last
    completion - first submission), ``awrt`` (area-weighted response time, seconds),
    ``avg_wait_<class>`` and ``p95_wait_<class>`` for the classes of
    :data:`SIZE_CLASSES` (seconds; ``nan`` without jobs of the class), ``backfilled``
    (count), ``jobs``, ``machine_size``. The module docstring defines them.
    The float metrics come from :func:`metrics_kernel` (numpy's summation and
    percentile, reproduced).
    """
    out = np.empty(len(KERNEL_METRICS))
    start = np.ascontiguousarray(start, dtype=np.float64)
    metrics_kernel(workload.submit, workload.runtime, workload.procs, start,
                   float(workload.machine_size), out)  # fmt: skip
    metrics: dict[str, float] = dict(zip(KERNEL_METRICS, out.tolist(), strict=True))
    metrics["backfilled"] = int(backfilled.sum()) if backfilled is not None else 0
    metrics["jobs"] = len(workload)
    metrics["machine_size"] = int(workload.machine_size)
    return metrics


def request_reservation_delays(
    workload: Workload,
    start: np.ndarray,
    head_since: np.ndarray | None = None,
    backfilled: np.ndarray | None = None,
) -> np.ndarray:
    """How long each job started after the **request-based reservation** it had when it
    last became the head of the queue (seconds, ``>= 0``; the like-for-like count).

    A job ``j`` that does not start when it becomes the head at ``t0`` has as its
    request-based reservation the *shadow time* computed at ``t0`` from the jobs running at
    ``t0`` with their **requested** times (``end = start + request``; a job already past its
    request counts as ending at ``t0``): the earliest time at which enough processors are
    free. Jobs started at ``t0`` by backfilling, after ``j`` became the head, are not
    counted as running. EASY with requested times never delays a head beyond this
    reservation (requests bound the runtimes); a scheduler whose reservations come from
    *predicted* run times (EASY++, ELOSS, an agent with a predicted guard) may, and this
    measures how often and how long.

    ``t0`` comes from one of two sources:

    * the schedule alone (``head_since`` not given): the FCFS queue, where ``j`` becomes
      the head at ``t0 = max(submit_j, latest start of the jobs submitted before it)`` and
      the jobs submitted after ``j`` that started at ``t0`` were backfilled;
    * the engine's record (``head_since`` and ``backfilled`` of a
      :class:`~hpcgym.sim.engine.SimResult`), for any queue policy: the time ``j`` last
      became the reserved head, renewed whenever a job ahead of it in the queue order
      started (a shorter job arriving under SJF, say) -- the reservation EASY then owes it.
      For the FCFS queue the two give the same delays.

    :param workload: the simulated jobs (a window), in submission order
    :param start: start time of every job
    :param head_since: per job, when it last became the reserved head (``nan``: never)
    :param backfilled: per job, True if it was started by backfilling (with ``head_since``)
    :return: per-job delay beyond the reservation, seconds (0 for jobs that started
        when they reached the head or before)
    """
    start = np.asarray(start, dtype=np.float64)
    n = len(workload)
    if start.shape != (n,):
        raise ValueError(f"start has shape {start.shape}, the workload has {n} jobs")
    idx = np.arange(n)
    if head_since is None:
        prev_max = np.maximum.accumulate(np.concatenate(([-np.inf], start[:-1])))
        head_at = np.maximum(workload.submit.astype(np.float64), prev_max)
        later = idx  # a job submitted after j that started at t0 was backfilled
    else:
        head_at = np.asarray(head_since, dtype=np.float64)
        if backfilled is None or head_at.shape != (n,) or np.shape(backfilled) != (n,):
            raise ValueError(
                f"head_since and backfilled must both be given with one value per job ({n})"
            )
        later = np.where(np.asarray(backfilled, dtype=bool), n, -1)  # backfilled: after j
    runtime = workload.runtime.astype(np.float64)
    request = np.maximum(workload.request.astype(np.float64), runtime)
    procs = workload.procs.astype(np.int64)
    m = int(workload.machine_size)
    end = start + runtime
    delays = np.zeros(n)
    for j in np.flatnonzero(start > head_at):  # nan compares False: never reserved
        t0 = head_at[j]
        running = (start <= t0) & (end > t0) & ~((later > j) & (start == t0))
        free = m - int(procs[running].sum())
        if free >= procs[j]:  # it fitted when it reached the head: the reservation is t0
            delays[j] = start[j] - t0
            continue
        ends = np.maximum(start[running] + request[running], t0)
        order = np.argsort(ends, kind="stable")
        freed = free + np.cumsum(procs[running][order])
        k = int(np.searchsorted(freed, procs[j]))
        shadow = float(ends[order][min(k, len(order) - 1)])
        delays[j] = max(0.0, start[j] - shadow)
    return delays


def head_delay_summary(delays: np.ndarray) -> dict[str, float]:
    """``head_delayed`` (jobs started after their request-based reservation) and
    ``head_delay`` (their mean delay, seconds; 0 when none) of
    :func:`request_reservation_delays`."""
    d = np.asarray(delays, dtype=np.float64)
    late = d > 0
    return {
        "head_delayed": int(late.sum()),
        "head_delay": float(d[late].mean()) if late.any() else 0.0,
    }
