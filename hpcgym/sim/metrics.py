"""Scheduling metrics of a simulated window.

All metrics are over the window's jobs. ``tau = 10`` seconds bounds the slowdown of
very short jobs (Feitelson et al.; Gaussier et al. SC'15 §2, Carastan-Santos Eq. 3.2).
"""

from __future__ import annotations

import numpy as np

from hpcgym.workload.core import Workload

TAU = 10.0

__all__ = ["TAU", "bounded_slowdown", "compute_metrics", "pp_bounded_slowdown"]


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

    Keys: ``avg_bsld`` (AVEbsld), ``avg_pp_bsld``, ``avg_wait``, ``max_wait``,
    ``avg_turnaround``, ``utilization`` (work / (m x makespan)), ``makespan`` (last
    completion - first submission), ``backfilled`` (count), ``jobs``, ``machine_size``.
    """
    runtime = workload.runtime
    wait = start - workload.submit
    end = start + runtime
    makespan = float(end.max() - workload.submit[0])
    work = float(np.dot(runtime, workload.procs.astype(np.float64)))
    return {
        "avg_bsld": float(bounded_slowdown(wait, runtime).mean()),
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
