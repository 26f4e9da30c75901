"""Clairvoyant search over per-job priorities: how far a fixed queue order can go.

A per-job priority array (lower goes first) ranks the queue as the engine's separate
ranking estimate under SJF (``rank_estimate=``: a static priority order), with
the engine's EASY-SJBF backfilling and reservations on ``estimate``; every evaluation is
one run of the one engine. :func:`improve_priorities` starts from a seed order (e.g. the
best clairvoyant static order: areas with ``estimate="actual"`` reproduce
``SAF+EASY-SJBF-AR`` exactly) and hill-climbs with a budget of ``budget`` evaluations:

* a job is drawn with probability proportional to its ``bsld - 1`` in the current
  schedule (the jobs that waited);
* with probability 3/4 it is moved just ahead of a job drawn among those that started
  while it waited and rank before it (the jobs that overtook it); otherwise its priority
  is scaled by ``exp(u)``, ``u ~ U(-2, 2)``;
* the move is kept when the window's AVEbsld is strictly lower.

The result is never worse than the seed (the seed is the first evaluation) and depends
only on the window, the seed order and the generator. It reads the window's real run
times: a reference point of what a clairvoyant fixed order reaches, not a scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcgym.evaluation.ranking import simulate_ranked
from hpcgym.sim.metrics import bounded_slowdown
from hpcgym.workload.core import Workload

__all__ = ["SearchResult", "improve_priorities"]


@dataclass
class SearchResult:
    """Outcome of :func:`improve_priorities`.

    :param value: the best AVEbsld found
    :param seed_value: the seed order's AVEbsld
    :param priorities: the best priorities
    :param start: the best schedule's start times
    :param metrics: the best schedule's metrics
    :param evaluations: engine runs spent
    :param accepted: moves kept
    """

    value: float
    seed_value: float
    priorities: np.ndarray
    start: np.ndarray
    metrics: dict[str, float]
    evaluations: int
    accepted: int
    trace: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "seed_value": self.seed_value,
            "evaluations": self.evaluations,
            "accepted": self.accepted,
        }


def improve_priorities(
    window: Workload,
    priorities: np.ndarray,
    budget: int = 200,
    estimate: str = "actual",
    starvation: float | str | None = None,
    rng: np.random.Generator | int = 0,
) -> SearchResult:
    """Hill-climb over per-job priorities (see the module text).

    :param window: the jobs
    :param priorities: the seed order's per-job priorities (lower goes first)
    :param budget: engine runs, the seed's included (>= 1)
    :param estimate: the engine's estimate for reservations and backfilling
    :param starvation: the engine's starvation threshold
    :param rng: the generator of the moves (or its seed)
    """
    if int(budget) < 1:
        raise ValueError(f"the search budget must be >= 1 evaluation, got {budget}")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n = len(window)

    def run(prio: np.ndarray) -> tuple[float, np.ndarray, dict[str, float]]:
        res, _ = simulate_ranked(
            window, prio, policy="SJF", estimate=estimate, starvation=starvation
        )
        return float(res.metrics["avg_bsld"]), res.start, res.metrics

    cur = np.asarray(priorities, dtype=np.float64).copy()
    if cur.shape != (n,):
        raise ValueError(f"priorities have shape {cur.shape}, expected ({n},)")
    val, start, metrics = run(cur)
    seed_val, accepted, trace = val, 0, [val]
    for _ in range(int(budget) - 1):
        excess = bounded_slowdown(start - window.submit, window.runtime) - 1.0
        tot = float(excess.sum())
        if tot <= 0:
            break  # every job at bsld 1: nothing to improve
        j = int(gen.choice(n, p=excess / tot))
        cand = cur.copy()
        over = np.flatnonzero((start >= window.submit[j]) & (start < start[j]) & (cur < cur[j]))
        if len(over) and gen.random() < 0.75:
            k = int(over[gen.integers(len(over))])
            cand[j] = np.nextafter(cur[k], -np.inf) - 1e-9 * abs(cur[k])
        else:
            cand[j] = cur[j] * float(np.exp(gen.uniform(-2.0, 2.0)))
        v, s, m = run(cand)
        if v < val:
            cur, val, start, metrics = cand, v, s, m
            accepted += 1
        trace.append(val)
    return SearchResult(val, seed_val, cur, start, metrics, len(trace), accepted, trace)
