"""Queue deciders: choose the head of the queue at the engine's queue decisions.

A *queue decider* (a *chooser*) is a callable ``choose(sim) -> job`` for
:meth:`hpcgym.sim.engine.Simulation.run` with ``policy="external"``: at every
scheduling pass with at least two waiting jobs (and no job past the starvation
threshold, which goes first for every method alike) it returns the waiting job that
becomes the head. The engine starts it if it fits and asks again; otherwise it reserves
for it and backfills with the configured backfiller. Heuristic orders, the lookahead
schedulers below and the Schedule-v0 agent all decide at these points of the one loop.

The *reference* of a chooser is the built-in queue policy it compares with and rolls
out with; by default the simulation's ``rest_order`` (the policy of the named scheduler:
``SAF+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT`` rolls out with SAF).

===================================  ================================================
name                                 rule
===================================  ================================================
``policy``                           the first job of a built-in policy's order
                                     (reproduces the policy exactly; tests, baselines)
``schedule-lookahead1-clairvoyant``  CLAIRVOYANT: one-step lookahead over the first
                                     ``k`` jobs of the reference order, each rolled
                                     out with the reference policy on the window's
                                     real future (:class:`ScheduleOracle`); a
                                     reference point, not a bound
``schedule-lookahead1-online``       online: the same over Monte Carlo futures
                                     sampled from what is known now
                                     (:class:`ScheduleLookahead`)
===================================  ================================================

The old names ``schedule-oracle`` and ``schedule-lookahead`` still resolve, with a
:class:`FutureWarning` (:mod:`hpcgym.sim.renamed`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim import _core_ext as KX
from hpcgym.sim.lookahead import Lookahead, bsld, parse_horizon
from hpcgym.sim.registry import RegistryView
from hpcgym.sim.renamed import RENAMED_DECIDERS, renamed
from hpcgym.sim.samplers import _int_option
from hpcgym.suggest import did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation

__all__ = ["CHOOSERS", "PolicyChooser", "ScheduleLookahead", "ScheduleOracle", "make_chooser"]


def _reference(sim: Simulation, reference: str | None) -> int:
    from hpcgym.sim.engine import policy_id

    return policy_id(reference if reference is not None else sim.rest_order)


class PolicyChooser:
    """The head a built-in queue policy would choose: the first job of its order.

    :param policy: a queue policy (:data:`hpcgym.sim.engine.POLICIES`); ``None``: the
        simulation's ``rest_order``
    """

    decides = "queue"

    def __init__(self, policy: str | None = None) -> None:
        self.policy = policy
        self.name = f"policy-{policy}" if policy else "policy"
        self.counters: dict[str, int] = {}

    def __call__(self, sim: Simulation) -> int:
        return int(_options(sim, _reference(sim, self.policy), 1)[0])


class _QueueCounted:
    def _reset_counters(self) -> None:
        self._counters = {
            "schedule_decisions": 0,
            "schedule_rollouts": 0,
            "schedule_not_reference": 0,
        }
        self.seconds = 0.0

    @property
    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def _count(self, best: int, rollouts: int, t0: float) -> None:
        c = self._counters
        c["schedule_decisions"] += 1
        c["schedule_rollouts"] += rollouts
        c["schedule_not_reference"] += int(best != 0)
        self.seconds += time.perf_counter() - t0


def _options(sim: Simulation, pol: int, k: int) -> np.ndarray:
    c = KX.policy_order(sim.JF, sim.JI, sim.S, sim.C, pol, sim._buf_jobs)
    return sim._buf_jobs[: min(c, k)].copy()


class ScheduleOracle(_QueueCounted):
    """Clairvoyant one-step lookahead over the head choice
    (``SCHEDULE-LOOKAHEAD1-CLAIRVOYANT``): a reference point, not a bound.

    It sees the window's future, so no site could run it; it looks one step ahead and
    then follows the reference, so what it reaches is a lower bound on the room that
    clairvoyance gives over the reference (a clairvoyant static order can do far
    better); it bounds nothing from above.

    At every queue decision: for each of the first ``k`` waiting jobs in the reference
    policy's order, copy the state, make it the head, and run the rest of the window
    with the reference policy (and the configured backfiller) on the window's **actual**
    future (arrivals, and run times as the estimates and the real ends give them). The
    cost is the sum of the bounded slowdowns of the jobs not started yet (up to the
    horizon); the lowest wins, ties to the reference's own choice (the first option).
    With ``horizon="window"`` the reference's choice is always an option and its value
    is exactly what the reference does next, so the window's AVEbsld is never above the
    reference's (the rollout guarantee; tested).

    :param k: options examined per decision (default 8)
    :param horizon: ``"window"`` (default), a number of further arrivals, or a time
        (``"12h"``; :func:`hpcgym.sim.lookahead.parse_horizon`)
    :param reference: the reference queue policy; ``None``: the simulation's
        ``rest_order``
    """

    name = "schedule-lookahead1-clairvoyant"
    decides = "queue"

    def __init__(
        self, k: int | str = 8, horizon: str | int | None = "window", reference: str | None = None
    ) -> None:
        self.k = _int_option("k", k, 1)
        self.horizon = parse_horizon(horizon)
        self.reference = reference
        self._sim: Simulation | None = None
        self._reset_counters()

    def _bind(self, sim: Simulation) -> None:
        self._sim = sim
        self._pol = _reference(sim, self.reference)
        self._submit = np.asarray(sim.workload.submit, dtype=np.float64)
        self._runtime = np.asarray(sim.workload.runtime, dtype=np.float64)
        self._last: tuple[int, np.ndarray] | None = None  # (decision, final starts)
        self._reset_counters()

    def _last_job(self, sim: Simulation) -> int:
        kind, h = self.horizon
        n = len(sim.workload)
        nxt = int(sim.C[K.C_NEXT])
        if kind == "window":
            return n
        if kind == "jobs":
            return min(n, nxt + int(h))
        return max(nxt, int(np.searchsorted(self._submit, sim.now + h, side="right")))

    def __call__(self, sim: Simulation) -> int:
        if sim is not self._sim:
            self._bind(sim)
        t0 = time.perf_counter()
        opts = _options(sim, self._pol, self.k)
        lj = self._last_job(sim)
        affected = np.flatnonzero(sim.status[:lj] <= K.ST_WAITING)
        sub, rt = self._submit[affected], self._runtime[affected]
        decision = int(sim.C[K.C_QDECISIONS])
        values = np.empty(len(opts))
        starts: list[np.ndarray] = []
        rollouts = 0
        exact = self.horizon[0] == "window"
        for i, o in enumerate(opts):
            if i == 0 and exact and self._last is not None and self._last[0] == decision - 1:
                # the reference's choice continues exactly the rollout chosen at the
                # previous decision (deterministic model): reuse its final start times
                start = self._last[1]
            else:
                JF, JI, S, C = sim.JF.copy(), sim.JI.copy(), sim.S.copy(), sim.C.copy()
                C[K.C_N] = lj
                KX.rollout_choice(JF, JI, S, C, sim.PF.copy(), int(o), self._pol)
                start = JF[K.F_START]
                rollouts += 1
            starts.append(start)
            values[i] = float(bsld(start[affected] - sub, rt).sum())
        best = int(np.argmin(values))  # first minimum: the reference's choice on ties
        if exact:
            self._last = (decision, starts[best])
        self._count(best, rollouts, t0)
        return int(opts[best])


class ScheduleLookahead(Lookahead):
    """Online one-step lookahead over the head choice, on Monte Carlo futures
    (``SCHEDULE-LOOKAHEAD1-ONLINE``): a reference point for online planning, not a
    bound on what online methods reach.

    A scheduler a site could run: at every queue decision it draws ``samples`` futures
    from what is known now (as :class:`hpcgym.sim.lookahead.Lookahead` does: run times
    of the waiting and running jobs from the users' history, arrivals replayed from the
    recent past), and for each of the first ``k`` jobs of the reference order, makes it
    the head in every future and rolls out with the reference policy and the configured
    backfiller. The lowest mean bounded slowdown wins, but it replaces the reference's
    choice only if its paired improvement over the futures exceeds ``z`` standard
    errors. Options as :class:`~hpcgym.sim.lookahead.Lookahead` (``samples``,
    ``horizon``, ``seed``, ``past``, ``future``, ``runtimes``, ``sampler``, ``z``...),
    with ``k`` (default 8) and ``reference`` (default: the simulation's ``rest_order``).
    """

    name = "schedule-lookahead1-online"
    decides = "queue"

    def __init__(self, k: int | str = 8, reference: str | None = None, **kwargs: Any) -> None:
        super().__init__(k=k, **kwargs)
        self.reference = reference

    def _bind(self, sim: Simulation) -> None:
        super()._bind(sim)
        self._pol = _reference(sim, self.reference)
        self._qc = _QueueCounted()
        self._qc._reset_counters()

    @property
    def counters(self) -> dict[str, int]:
        qc = getattr(self, "_qc", None)
        return qc.counters if qc is not None else {}

    def __call__(self, sim: Simulation) -> int:  # type: ignore[override]
        if sim is not self._sim:
            self._bind(sim)
        t0 = time.perf_counter()
        opts = _options(sim, self._pol, self.k)
        wait = sim.waiting()
        values = np.zeros((self.samples, len(opts)))
        backfill = int(sim.C[K.C_BACKFILL])
        for s, (JF0, JI0, S0, C0, PF) in enumerate(self._futures(sim)):
            C0[K.C_BACKFILL] = backfill
            nxt = int(sim.C[K.C_NEXT])
            jobs = np.concatenate([wait, np.arange(nxt, JF0.shape[1])])
            sub, rt = JF0[K.F_SUBMIT, jobs], JF0[K.F_RUNTIME, jobs]
            for i, o in enumerate(opts):
                JF, JI, S, C = JF0.copy(), JI0.copy(), S0.copy(), C0.copy()
                KX.rollout_choice(JF, JI, S, C, PF, int(o), self._pol)
                values[s, i] = bsld(JF[K.F_START, jobs] - sub, rt).mean()
        mean = values.mean(axis=0)
        self.last_values = mean
        best = int(np.argmin(mean))
        if best != 0 and self.z > 0.0 and self.samples > 1:
            diff = values[:, 0] - values[:, best]
            se = diff.std(ddof=1) / math.sqrt(self.samples)
            if diff.mean() <= self.z * se:
                best = 0
        self._qc._count(best, len(opts) * self.samples, t0)
        return int(opts[best])


#: registered queue deciders: name -> class (a read-only view of :mod:`hpcgym.sim.registry`,
#: :func:`hpcgym.sim.registry.register_chooser`)
CHOOSERS: Mapping[str, Any] = RegistryView("chooser", lambda h: h.resolve())


def make_chooser(name: str, **kwargs: Any) -> Any:
    """A fresh queue decider by registered name (see :data:`CHOOSERS`)."""
    key = renamed(str(name).strip().lower(), RENAMED_DECIDERS, "queue decider")
    if key not in CHOOSERS:
        raise ValueError(
            f"unknown queue decider {name!r}{did_you_mean(key, CHOOSERS)}; valid choices: "
            f"{', '.join(CHOOSERS)}"
        )
    try:
        return CHOOSERS[key](**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad option for queue decider {name!r}: {exc}") from None
