"""Scheduling metrics of a simulated window.

All metrics are over the window's jobs. ``tau = 10`` seconds bounds the slowdown of
very short jobs (Feitelson et al.; Gaussier et al. SC'15 §2, Carastan-Santos Eq. 3.2).
"""

from __future__ import annotations

import numpy as np

from hpcgym.workload.core import Workload

TAU = 10.0

__all__ = [
    "TAU",
    "bounded_slowdown",
    "compute_metrics",
    "head_delay_summary",
    "pp_bounded_slowdown",
    "request_reservation_delays",
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


def compute_metrics(
    workload: Workload, start: np.ndarray, backfilled: np.ndarray | None = None
) -> dict[str, float]:
    """Metrics of a finished simulation.

    Keys: ``avg_bsld`` (AVEbsld), ``p99_bsld`` (99th percentile of the bounded
    slowdowns: the tail that SJF-like orders can starve), ``avg_pp_bsld``, ``avg_wait``,
    ``max_wait``,
    ``avg_turnaround``, ``utilization`` (work / (m x makespan)), ``makespan`` (last
    completion - first submission), ``backfilled`` (count), ``jobs``, ``machine_size``.
    """
    runtime = workload.runtime
    wait = start - workload.submit
    end = start + runtime
    makespan = float(end.max() - workload.submit[0])
    work = float(np.dot(runtime, workload.procs.astype(np.float64)))
    bsld = bounded_slowdown(wait, runtime)
    return {
        "avg_bsld": float(bsld.mean()),
        "p99_bsld": float(np.percentile(bsld, 99)),
        "avg_pp_bsld": float(pp_bounded_slowdown(wait, runtime, workload.procs).mean()),
        "avg_wait": float(wait.mean()),
        "max_wait": float(wait.max()),
        "avg_turnaround": float((wait + runtime).mean()),
        "utilization": work / (workload.machine_size * makespan) if makespan > 0 else 0.0,
        "makespan": makespan,
        "backfilled": int(backfilled.sum()) if backfilled is not None else 0,
        "jobs": len(workload),
        "machine_size": int(workload.machine_size),
    }


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
