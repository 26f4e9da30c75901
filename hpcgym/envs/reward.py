"""The reward of the backfilling env: the terminal comparison with a reference scheduler.

The reference scheduler (``reference=`` of :class:`~hpcgym.envs.backfill_env.BackfillEnv`,
default EASY-SJBF) is simulated once per window with the engine's built-in backfiller;
its metrics are cached per process (bounded LRU keyed by the workload's content, the
window and the scheduler), so that every episode on the same window pays for it once.
:func:`terminal_reward` is the formula of the env's docstring (*Rewards*).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import numpy as np

from hpcgym.sim.schedulers import SchedulerSpec
from hpcgym.workload.core import Workload

__all__ = [
    "NORMALIZER_CACHE_SIZE",
    "OBJECTIVES",
    "clear_normalizer_cache",
    "deterministic_metrics",
    "reference_metrics",
    "terminal_reward",
    "workload_fingerprint",
]

#: optimisation objectives: name -> metric of :func:`hpcgym.sim.metrics.compute_metrics`
OBJECTIVES: dict[str, str] = {"bsld": "avg_bsld", "wait": "avg_wait", "utilization": "utilization"}

# ----------------------------------------------------------- normalizer cache
#: maximum number of cached normalizer results (one small dict per window)
NORMALIZER_CACHE_SIZE = 8192
_NORM_CACHE: OrderedDict[tuple[Any, ...], dict[str, float]] = OrderedDict()


def clear_normalizer_cache() -> None:
    """Forget every cached normalizer result (of this process)."""
    _NORM_CACHE.clear()


def workload_fingerprint(w: Workload) -> str:
    """Content hash of a workload's scheduling columns (cache key of the normalizer)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{w.name}|{w.machine_size}|{len(w)}|{w.offset}".encode())
    for col in (w.submit, w.runtime, w.procs, w.request):
        h.update(np.ascontiguousarray(col).view(np.uint8))
    return h.hexdigest()


def deterministic_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics without wall-clock timings (infos must be reproducible)."""
    return {k: v for k, v in metrics.items() if k != "sim_seconds"}


def reference_metrics(
    reference: SchedulerSpec, window: Workload, key: tuple[Any, ...]
) -> dict[str, float]:
    """Metrics of ``reference`` on ``window`` (engine seed 0), cached under ``key``.

    :param reference: the reference scheduler
    :param window: the window's workload
    :param key: cache key identifying (workload, window, reference)
    :return: a fresh copy of the metrics (without wall-clock times)
    """
    hit = _NORM_CACHE.get(key)
    if hit is not None:
        _NORM_CACHE.move_to_end(key)
        return dict(hit)
    metrics = deterministic_metrics(reference.simulate(window, seed=0).metrics)
    _NORM_CACHE[key] = metrics
    if len(_NORM_CACHE) > NORMALIZER_CACHE_SIZE:
        _NORM_CACHE.popitem(last=False)
    return dict(metrics)


def terminal_reward(
    objective: str, agent: dict[str, float], reference: dict[str, float] | None
) -> float:
    """The terminal reward for the agent's and the reference's metrics.

    :param objective: ``bsld``, ``wait`` or ``utilization``
    :param agent: the agent's metrics of the window
    :param reference: the reference scheduler's metrics, or ``None`` (raw objective:
        ``-AVEbsld``, ``-mean wait`` in seconds, ``+utilization``)
    :return: ``(b_ref - b_agent) / b_ref`` for bsld, the same with ``max(w_ref, 1 s)`` as
        denominator for wait, ``(u_agent - u_ref) / u_ref`` for utilization
    """
    key = OBJECTIVES[objective]
    a = float(agent[key])
    if reference is None:
        return a if objective == "utilization" else -a
    b = float(reference[key])
    if objective == "utilization":
        return (a - b) / b
    if objective == "wait":
        return (b - a) / max(b, 1.0)
    return (b - a) / b
