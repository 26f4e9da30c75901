"""The reward of the backfilling env: the comparison with a reference scheduler.

The reference scheduler (``reference=`` of :class:`~hpcgym.envs.backfill_env.BackfillEnv`,
default ``ENV+EASY-SJBF``; :func:`resolve_reference`) is simulated once per window with the
engine's built-in backfiller; its metrics (and, for the dense reward, its start times) are
cached per process (bounded LRU keyed by the workload's content, the window and the
scheduler), so that every episode on the same window pays for it once.
:func:`terminal_reward` is the formula of the env's docstring (*Rewards*); :class:`JobCredit`
spreads the same total over the steps (``reward_mode="dense"``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections import OrderedDict
from typing import Any

import numpy as np

from hpcgym.sim.registry import heuristic_names
from hpcgym.sim.schedulers import NAMED, SchedulerSpec, get_scheduler, starvation_label
from hpcgym.workload.core import Workload

__all__ = [
    "NORMALIZER_CACHE_SIZE",
    "OBJECTIVES",
    "PER_JOB_OBJECTIVES",
    "REWARD_MODES",
    "REWARD_SCALES",
    "ENV_PREFIX",
    "JobCredit",
    "clear_normalizer_cache",
    "resolve_reference",
    "deterministic_metrics",
    "reference_metrics",
    "reference_starts",
    "terminal_reward",
    "workload_fingerprint",
]

#: optimisation objectives: name -> metric of :func:`hpcgym.sim.metrics.compute_metrics`
#: (``awrt``: the area-weighted response time, lower is better, like ``bsld`` and ``wait``)
OBJECTIVES: dict[str, str] = {
    "bsld": "avg_bsld",
    "wait": "avg_wait",
    "utilization": "utilization",
    "awrt": "awrt",
}
#: objectives that are sums over jobs (``reward_mode="dense"`` can pay them job by job)
PER_JOB_OBJECTIVES: tuple[str, ...] = ("bsld", "wait", "awrt")

#: when the reward is paid: ``terminal`` (all at the episode's end) or ``dense`` (the
#: same total, paid job by job at the step in which each job starts: :class:`JobCredit`)
REWARD_MODES: tuple[str, ...] = ("terminal", "dense")

#: how the comparison with the reference becomes the reward: ``linear`` (``1 - r`` for
#: the ratio ``r`` of the agent's AVEbsld to the reference's) or ``log`` (``-ln r``: the
#: expected return is then the log of the geometric-mean ratio that the evaluation
#: reports, so a window where the agent halves AVEbsld counts as much as one where it
#: doubles it; :func:`terminal_reward`)
REWARD_SCALES: tuple[str, ...] = ("linear", "log")

#: the prefix of a reference played with the env's own queue: ``ENV+EASY-SJBF``
ENV_PREFIX = "ENV+"


def resolve_reference(
    reference: str | SchedulerSpec | None,
    policy: str,
    starvation: float | str | None,
) -> SchedulerSpec | None:
    """The reference scheduler a name means, the same everywhere: a scheduler name is
    exactly what ``hpcgym simulate --scheduler NAME`` runs (``EASY`` is FCFS + EASY on the
    requests, ``SAF`` is SAF + EASY on the requests, whatever the env's queue).

    ``ENV+NAME`` is the explicit spelling of "the env's own queue with NAME's
    backfilling": NAME (a scheduler of the FCFS queue, e.g. ``EASY-SJBF``, ``ELOSS``,
    ``EASY,estimate=actual``) played with the env's queue ``policy`` and its starvation
    rule. The result is named for what it runs (``SAF+EASY-SJBF,starvation=54h``).

    :param reference: a scheduler name or spec string, ``ENV+NAME``, a
        :class:`SchedulerSpec`, or ``None`` (no reference)
    :param policy: the env's queue policy
    :param starvation: the env's starvation threshold (seconds, ``"auto"`` or ``None``)
    :raises ValueError: for a queue policy given where a scheduler is meant (``"SJF"``),
        ``ENV+`` with a scheduler that has its own queue policy, or an external backfiller
    """
    if reference is None:
        return None
    if isinstance(reference, SchedulerSpec):
        spec = reference
    else:
        text = str(reference).strip()
        if text[: len(ENV_PREFIX)].upper() == ENV_PREFIX:
            base = get_scheduler(text[len(ENV_PREFIX) :])
            if base.policy != "FCFS" or base.starvation is not None:
                raise ValueError(
                    f"reference {text!r}: ENV+ takes a scheduler of the FCFS queue without a "
                    f"starvation rule (EASY-SJBF, EASY, ELOSS...), not {base.name!r}, which "
                    "has its own queue: give it without ENV+"
                )
            spec = base if policy.upper() == "FCFS" else base.with_policy(policy)
            if starvation is not None:
                label = starvation if isinstance(starvation, str) else starvation_label(starvation)
                spec = dataclasses.replace(
                    spec, starvation=starvation, name=f"{spec.name},starvation={label}"
                )
        else:
            plain = {k.lower() for k in NAMED}
            if text.upper() in heuristic_names("policy") and text.lower() not in plain:
                raise ValueError(
                    f"reference {text!r} is a queue policy, not a scheduler: name the "
                    f"backfilling too ({text.upper()}+EASY-SJBF), or write ENV+EASY-SJBF "
                    "for the env's own queue with EASY-SJBF"
                )
            spec = get_scheduler(text)
    if spec.backfill == "external":
        raise ValueError("the reference needs a built-in backfiller, not 'external'")
    return spec


# ----------------------------------------------------------- normalizer cache
#: maximum number of cached normalizer results (one small dict per window)
NORMALIZER_CACHE_SIZE = 8192
_NORM_CACHE: OrderedDict[tuple[Any, ...], tuple[dict[str, float], np.ndarray | None]] = (
    OrderedDict()
)


def clear_normalizer_cache() -> None:
    """Forget every cached normalizer result (of this process)."""
    _NORM_CACHE.clear()


def workload_fingerprint(w: Workload) -> str:
    """Content hash of a workload's scheduling columns (cache key of the normalizer)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{w.name}|{w.machine_size}|{len(w)}|{w.offset}".encode())
    for col in (w.submit, w.runtime, w.procs, w.request):
        h.update(np.ascontiguousarray(col).view(np.uint8).data)
    return h.hexdigest()


def deterministic_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics without wall-clock timings (infos must be reproducible)."""
    return {k: v for k, v in metrics.items() if k != "sim_seconds"}


def _reference_entry(
    reference: SchedulerSpec, window: Workload, key: tuple[Any, ...], starts: bool
) -> tuple[dict[str, float], np.ndarray | None]:
    """The cached ``(metrics, start times or None)`` of ``reference`` on ``window``;
    simulates (engine seed 0) on a miss, or when ``starts`` are wanted and not kept."""
    hit = _NORM_CACHE.get(key)
    if hit is not None and (hit[1] is not None or not starts):
        _NORM_CACHE.move_to_end(key)
        return hit
    result = reference.simulate(window, seed=0)
    entry = (deterministic_metrics(result.metrics), result.start.copy() if starts else None)
    _NORM_CACHE[key] = entry
    _NORM_CACHE.move_to_end(key)
    if len(_NORM_CACHE) > NORMALIZER_CACHE_SIZE:
        _NORM_CACHE.popitem(last=False)
    return entry


def reference_metrics(
    reference: SchedulerSpec, window: Workload, key: tuple[Any, ...]
) -> dict[str, float]:
    """Metrics of ``reference`` on ``window`` (engine seed 0), cached under ``key``.

    :param reference: the reference scheduler
    :param window: the window's workload
    :param key: cache key identifying (workload, window, reference)
    :return: a fresh copy of the metrics (without wall-clock times)
    """
    return dict(_reference_entry(reference, window, key, starts=False)[0])


def reference_starts(
    reference: SchedulerSpec, window: Workload, key: tuple[Any, ...]
) -> np.ndarray:
    """Start time of every job of ``window`` under ``reference`` (engine seed 0; cached
    with the metrics under ``key``; read-only).

    :param reference: the reference scheduler
    :param window: the window's workload
    :param key: cache key identifying (workload, window, reference)
    """
    starts = _reference_entry(reference, window, key, starts=True)[1]
    assert starts is not None
    return starts


class JobCredit:
    """The dense reward (``reward_mode="dense"``): the terminal reward paid job by job.

    Each step earns, for every job that started since the previous step (at the first
    step: since the window began), its share of the terminal formula: with objective
    ``bsld`` and a reference, ``(b_ref_j - b_j) / (n * B_ref)`` where ``b_j`` is the job's
    bounded slowdown in the agent's schedule, ``b_ref_j`` the same job's in the
    reference's schedule of the window, ``n`` the window's jobs and ``B_ref`` the
    reference's AVEbsld; ``wait`` uses the waits and ``max(W_ref, 1 s)``; without a
    reference, ``-b_j / n`` (``-w_j / n``). A job's value is known when it starts (its
    run time is the trace's), so over an episode the steps sum to the terminal reward
    (up to rounding): the return is unchanged, the credit comes closer to the decisions
    that caused it. The agent's observation is not affected.

    :param objective: ``bsld``, ``wait`` or ``awrt`` (``utilization`` is not a sum over
        jobs)
    :param window: the episode's window
    :param reference_start: the reference's start time of every job, or ``None``
    :raises ValueError: for ``utilization``
    """

    def __init__(
        self, objective: str, window: Workload, reference_start: np.ndarray | None
    ) -> None:
        self.check_objective(objective)
        from hpcgym.sim.metrics import bounded_slowdown

        self._bsld = bounded_slowdown if objective == "bsld" else None
        self._submit = window.submit
        self._runtime = window.runtime
        n = len(window)
        self._weight: np.ndarray | None = None  # awrt: n * a_j / sum(a)
        if objective == "awrt":
            area = window.runtime * window.procs.astype(np.float64)
            total = float(area.sum())
            self._weight = n * area / total if total > 0 else np.ones(n)
        self._waiting = np.ones(n, dtype=bool)  # not started at the last call
        if reference_start is None:
            self._ref = np.zeros(n)
            self._scale = -1.0 / n  # -(sum of values) / n
        else:
            self._ref = self._values(reference_start, slice(None))
            mean = float(self._ref.mean()) if n else 1.0
            self._scale = -1.0 / (n * (mean if objective == "bsld" else max(mean, 1.0)))

    @classmethod
    def of(
        cls,
        objective: str,
        window: Workload,
        reference: SchedulerSpec | None,
        key: tuple[Any, ...],
    ) -> JobCredit:
        """The credit of an episode on ``window`` relative to ``reference`` (its start
        times from the cache under ``key``; ``None``: no reference)."""
        ref = None if reference is None else reference_starts(reference, window, key)
        return cls(objective, window, ref)

    @staticmethod
    def check_objective(objective: str) -> None:
        """:raises ValueError: unless ``objective`` is a sum over jobs
        (:data:`PER_JOB_OBJECTIVES`)"""
        if objective not in PER_JOB_OBJECTIVES:
            raise ValueError(
                f"reward_mode='dense' needs a per-job objective "
                f"({', '.join(map(repr, PER_JOB_OBJECTIVES))}), got {objective!r}: "
                "utilization is not a sum over jobs (use reward_mode='terminal')"
            )

    def _values(self, start: np.ndarray, jobs: Any) -> np.ndarray:
        wait = start[jobs] - self._submit[jobs]
        if self._weight is not None:  # awrt: the job's weighted response time
            return self._weight[jobs] * (wait + self._runtime[jobs])
        return wait if self._bsld is None else self._bsld(wait, self._runtime[jobs])

    def step(self, start: np.ndarray) -> float:
        """The credit of the jobs started since the last call.

        :param start: the agent's start times (``NaN``: not started yet)
        :return: the step's dense reward
        """
        waiting = np.isnan(start)
        new = np.flatnonzero(self._waiting > waiting)  # waiting then, started now
        if new.size == 0:
            return 0.0
        self._waiting = waiting
        return float((self._values(start, new) - self._ref[new]).sum()) * self._scale


def terminal_reward(
    objective: str,
    agent: dict[str, float],
    reference: dict[str, float] | None,
    scale: str = "linear",
) -> float:
    """The terminal reward for the agent's and the reference's metrics.

    :param objective: ``bsld``, ``wait``, ``utilization`` or ``awrt``
    :param agent: the agent's metrics of the window
    :param reference: the reference scheduler's metrics, or ``None`` (raw objective:
        ``-AVEbsld``, ``-mean wait`` in seconds, ``+utilization``, ``-AWRT`` in seconds)
    :param scale: ``linear``: ``(b_ref - b_agent) / b_ref`` for bsld, the same with
        ``max(w_ref, 1 s)`` as denominator for wait and awrt, ``(u_agent - u_ref) / u_ref``
        for utilization; ``log``: ``ln(b_ref / b_agent)``, ``ln(max(w_ref, 1 s) /
        max(w_agent, 1 s))`` (awrt alike), ``ln(u_agent / u_ref)`` (without a reference:
        ``-ln b_agent``, ``-ln max(w_agent, 1 s)``, ``ln u_agent``)
    :raises ValueError: for an unknown ``scale``, or a log of a utilization that is 0
    """
    key = OBJECTIVES[objective]
    a = float(agent[key])
    b = None if reference is None else float(reference[key])
    if scale == "log":
        if objective == "utilization":
            if a <= 0 or (b is not None and b <= 0):
                raise ValueError("reward_scale='log' needs a utilization above 0")
            return math.log(a) if b is None else math.log(a / b)
        if objective in ("wait", "awrt"):
            a = max(a, 1.0)
            b = None if b is None else max(b, 1.0)
        return -math.log(a) if b is None else math.log(b / a)
    if scale != "linear":
        raise ValueError(
            f"unknown reward scale {scale!r}; valid choices: {', '.join(REWARD_SCALES)}"
        )
    if b is None:
        return a if objective == "utilization" else -a
    if objective == "utilization":
        return (a - b) / b
    if objective in ("wait", "awrt"):
        return (b - a) / max(b, 1.0)
    return (b - a) / b
