"""Ranking the queue on one estimate while reservations use another.

The engine's queue policies rank on the same estimate that its reservations and
backfilling use. :class:`RankChooser` is a queue decider (``policy="external"``, see
:mod:`hpcgym.sim.queue_deciders`) that ranks the waiting jobs with a built-in policy's
key on a *separate* ranking estimate, so that, e.g., a clairvoyant order or a like-job
rule ranks while reservations stay on the request:

* ``mode="key"``: the head is the first job of ``policy``'s order computed on the ranking
  estimates (the engine's own key formula, :meth:`Simulation.policy_order`);
* ``mode="first"``: the jobs whose ranking estimate is at most ``threshold`` seconds go
  first; among each class, ``policy``'s order on the engine's estimates (the
  reservations' estimates).

The ranking estimates come from an array (one per job: a static oracle, or per-job
priorities of a search) or from an :class:`~hpcgym.sim.estimators.Estimator`: a static
one is evaluated once, an online one predicts each job at its submission from what has
finished by then (:class:`~hpcgym.sim.feed.EstimatorFeed`), never from the future.

The engine applies the starvation threshold before asking the chooser, for every method
alike. :func:`simulate_ranked` runs one window: ``mode="key"`` through the engine's own
separate ranking estimate (``Simulation(rank_estimate=...)``, compiled: the fast route),
``mode="first"`` through the chooser. ``RankChooser(mode="key")`` gives the same schedule
as the engine's route (``tests/test_ladder.py``): it serves a caller that needs a chooser
(``policy="external"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim.estimators import Estimator, make_estimator
from hpcgym.sim.feed import EstimatorFeed

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import SimResult, Simulation
    from hpcgym.workload.core import Workload

__all__ = ["RANK_MODES", "RankChooser", "simulate_ranked"]

#: how :class:`RankChooser` uses its ranking estimate
RANK_MODES: tuple[str, ...] = ("key", "first")


class RankChooser:
    """Choose the head of the queue with a separate ranking estimate.

    :param rank: the ranking estimate: an array (one value per job of the window), an
        :class:`Estimator`, or a registered estimator name / spec (``"like-job:warm=log"``)
    :param policy: the built-in queue policy whose key ranks (``SAF``, ``SJF``...)
    :param mode: ``key`` or ``first`` (:data:`RANK_MODES`)
    :param threshold: with ``mode="first"``: the jobs with a ranking estimate at most this
        many seconds go first
    """

    decides = "queue"

    def __init__(
        self,
        rank: np.ndarray | Estimator | str,
        policy: str = "SAF",
        mode: str = "key",
        threshold: float = 60.0,
    ) -> None:
        if mode not in RANK_MODES:
            raise ValueError(f"unknown rank mode {mode!r}; valid choices: {', '.join(RANK_MODES)}")
        self.policy = str(policy).upper()
        self.mode = mode
        self.threshold = float(threshold)
        self._array: np.ndarray | None = None
        self.estimator: Estimator | None = None
        if isinstance(rank, np.ndarray):
            self._array = np.asarray(rank, dtype=np.float64)
        elif isinstance(rank, str):
            self.estimator = make_estimator(rank)
        else:
            self.estimator = rank
        label = "array" if self.estimator is None else self.estimator.name
        self.name = f"rank-{mode}-{self.policy}-{label}"
        self.counters: dict[str, int] = {}
        self.values: np.ndarray | None = None

    def attach(self, sim: Simulation) -> None:
        """Bind to ``sim`` before its first step: fill the ranking estimates (static) or
        register to predict each job at its submission (online)."""
        n = len(sim.workload)
        if self._array is not None:
            if self._array.shape != (n,):
                raise ValueError(f"rank array has shape {self._array.shape}, expected ({n},)")
            self.values = self._array.copy()
            return
        est = self.estimator
        assert est is not None
        est.bind(sim.workload, sim.rng)
        if not est.online:
            static = est.static_estimates()
            if static is None:
                raise ValueError(f"estimator {est.name!r} gave no static estimates")
            self.values = np.asarray(static, dtype=np.float64).copy()
            return
        self.values = np.array(sim.workload.request, dtype=np.float64)
        feed = EstimatorFeed(est)
        values = self.values

        def observe(s: Simulation, lo: int, hi: int) -> None:
            feed.predict(s, lo, hi, values)

        sim.observe_arrivals(observe)

    def __call__(self, sim: Simulation) -> int:
        values = self.values
        if values is None:
            raise RuntimeError("RankChooser.attach(sim) must be called before the run")
        if self.mode == "first":
            order = sim.policy_order(self.policy)
            fast = order[values[order] <= self.threshold]
            return int(fast[0] if len(fast) else order[0])
        # the engine's key formula on the ranking estimates: swap them in for the waiting
        # jobs, take the policy's order, and put the engine's estimates back
        waiting = sim.waiting()
        est = sim.JF[K.F_EST]
        saved = est[waiting].copy()
        est[waiting] = values[waiting]
        try:
            order = sim.policy_order(self.policy)
        finally:
            est[waiting] = saved
        return int(order[0])


def simulate_ranked(
    workload: Workload,
    rank: np.ndarray | Estimator | str,
    policy: str = "SAF",
    mode: str = "key",
    threshold: float = 60.0,
    backfill: str = "sjbf",
    estimate: str | Estimator | np.ndarray = "request",
    starvation: float | str | None = None,
    seed: int = 0,
    route: str = "engine",
) -> tuple[SimResult, np.ndarray]:
    """One window ranked on ``rank``, reserved and backfilled on ``estimate``.

    :param workload: the window
    :param rank, policy, mode, threshold: as for :class:`RankChooser`
    :param backfill: the backfiller (``easy``, ``sjbf``, ``none``)
    :param estimate: the engine's estimate, for reservations and backfilling
    :param starvation: the engine's starvation threshold (seconds, ``"auto"``, ``None``)
    :param seed: the engine's seed
    :param route: with ``mode="key"``: ``engine`` (the engine's ``rank_estimate=``) or
        ``chooser`` (:class:`RankChooser`); ``mode="first"`` always uses the chooser
    :return: the result and the ranking estimates used (one per job)
    """
    from hpcgym.sim.engine import Simulation

    if route not in ("engine", "chooser"):
        raise ValueError(f"unknown route {route!r}; valid choices: engine, chooser")
    if isinstance(estimate, str) and ":" in estimate:
        estimate = make_estimator(estimate)
    if mode == "key" and route == "engine":
        if isinstance(rank, str):
            rank = make_estimator(rank)
        sim = Simulation(
            workload,
            policy=policy,
            backfill=backfill,
            estimate=estimate,
            starvation=starvation,
            seed=seed,
            rank_estimate=rank,
        )
        res = sim.run()
        return res, sim.rank_estimates.copy()
    chooser = RankChooser(rank, policy=policy, mode=mode, threshold=threshold)
    sim = Simulation(
        workload,
        policy="external",
        rest_order=policy,
        chooser=chooser,
        backfill=backfill,
        estimate=estimate,
        starvation=starvation,
        seed=seed,
    )
    chooser.attach(sim)
    res = sim.run()
    assert chooser.values is not None
    return res, chooser.values.copy()
