"""Switching a running simulation to another configuration (the rollouts of lookaheads).

:meth:`Switching.switch` is a method of every :class:`~hpcgym.sim.engine.Simulation` (a
mixin, like :class:`~hpcgym.sim.inspection.Inspection`): a lookahead scheduler clones a
simulation and hands the rest of the run to a compiled backfiller, optionally with other
estimates, so that a rollout never leaves compiled code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim import _core_ext as KX
from hpcgym.sim._estimates import setup_estimate
from hpcgym.sim.estimators import BUILTIN_ESTIMATORS, canonical_name
from hpcgym.sim.feed import cap_estimates
from hpcgym.sim.options import BACKFILLS, _choice, policy_id

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.estimators import Estimator
    from hpcgym.sim.feed import EstimatorFeed
    from hpcgym.sim.view import EngineView
    from hpcgym.workload.core import Workload

__all__ = ["Switching"]


class Switching:
    """The :meth:`switch` of :class:`~hpcgym.sim.engine.Simulation` (a mixin)."""

    JF: np.ndarray
    JI: np.ndarray
    S: np.ndarray
    C: np.ndarray
    PF: np.ndarray
    rng: np.random.Generator
    workload: Workload
    config: dict[str, Any]
    policy: str
    backfill_mode: str
    estimate_name: str
    rank_estimate_name: str | None
    estimator: Estimator | None
    rank_estimator: Estimator | None
    decider: Any
    chooser: Any
    _feed: EstimatorFeed | None
    _rank_feed: EstimatorFeed | None
    _view: EngineView | None

    def _switch_values(self, what: str, value: str | np.ndarray) -> tuple[np.ndarray, str]:
        """The values and name of a :meth:`switch` estimate (uncapped)."""
        if not isinstance(value, str):
            return np.asarray(value, dtype=np.float64), "array"
        which = canonical_name(value)
        if which not in BUILTIN_ESTIMATORS:
            raise ValueError(f"switch({what}={value!r}): valid are 'request', 'actual' or an array")
        est = self.workload.runtime if which == "actual" else self.workload.request
        return np.ascontiguousarray(est, dtype=np.float64), which

    def switch(
        self,
        backfill: str | None = None,
        estimate: str | np.ndarray | None = None,
        last_job: int | None = None,
        policy: str | None = None,
        rank_estimate: str | np.ndarray | None = None,
    ) -> None:
        """Continue this simulation under another configuration (rollouts).

        Used by lookahead schedulers on a :meth:`clone`: hand the rest of the run to a
        compiled backfiller, optionally with other estimates, so a rollout never
        leaves compiled code. At a decision point, the interrupted scheduling pass is
        finished at the current time by the new backfiller (with external backfilling
        kept, the reservation is recomputed instead).

        :param backfill: ``none``, ``easy``, ``sjbf``, ``conservative`` or ``external``;
            a built-in mode drops the decider
        :param estimate: ``"actual"``, ``"request"`` or an array of estimates (one per
            job, capped at the request) for every job not yet done; detaches an online
            estimator. Running jobs take the new estimate as their running estimate if
            it still lies in the future. Without a separate ranking estimate the queue
            ranks by it too.
        :param rank_estimate: ``"actual"``, ``"request"`` or an array of positive keys:
            the queue ranks by it from now on (reservations keep ``estimate``); detaches
            an online ranking estimator
        :param policy: a built-in queue policy to continue with (rollouts of a queue
            decider); drops the chooser. At a pending queue decision the interrupted
            pass is run again at the current time by that policy
        :param last_job: only jobs ``0 .. last_job-1`` arrive from now on (a rollout
            horizon); must not be below the number of jobs already arrived. Jobs
            beyond it never start, so :meth:`result` is not meaningful afterwards.
        """
        JF, JI, S, C = self.JF, self.JI, self.S, self.C
        if last_job is not None:
            lj = int(last_job)
            if not (int(C[K.C_NEXT]) <= lj <= len(self.workload)):
                raise ValueError(
                    f"last_job={lj} must lie in [{int(C[K.C_NEXT])}, {len(self.workload)}]"
                )
            C[K.C_N] = lj
        if rank_estimate is not None:
            rank, name = self._switch_values("rank_estimate", rank_estimate)
            if name == "array":  # a priority key, as given
                rank = setup_estimate(self.workload, rank, self.rng, ranking=True).values
            KX.set_rank_estimates(JF, JI, C, rank)
            self._view = None  # its rank_estimate looked at the reservation row
            self.rank_estimator, self._rank_feed = None, None
            self.rank_estimate_name = self.config["rank_estimate"] = name
            C[K.C_ONLINE] = int(self._feed is not None)
        if estimate is not None:
            est, self.estimate_name = self._switch_values("estimate", estimate)
            if self.estimate_name == "array":
                est = cap_estimates(est, self.workload.request)
            KX.set_estimates(JF, JI, S, C, est)
            self.estimator, self._feed = None, None
            C[K.C_ONLINE] = int(self._rank_feed is not None)
            self.config["estimate"] = self.estimate_name
        deciding = int(C[K.C_PHASE]) == K.P_DECIDE
        if backfill is not None:
            bf = _choice("backfill", backfill, BACKFILLS)
            if bf == K.BF_CONSERVATIVE and self.PF.shape[1] < 2 * len(self.workload) + 4:
                self.PF = np.zeros((2, 2 * len(self.workload) + 4))
            C[K.C_BACKFILL] = bf
            self.backfill_mode = backfill.lower()
            self.config["backfill"] = self.backfill_mode
            if bf != K.BF_EXTERNAL:
                self.decider = None
                self.config.pop("decider", None)
        if policy is not None:
            pol = policy_id(policy)
            if pol == K.POL_EXTERNAL:
                raise ValueError("switch(policy=...) takes a built-in queue policy")
            self.policy = policy.upper()
            self.config["policy"] = self.policy
            self.chooser = None
            self.config.pop("chooser", None)
            KX.set_policy(JF, JI, S, C, self.PF, pol)
        if deciding:
            if int(C[K.C_BACKFILL]) == K.BF_EXTERNAL:
                if estimate is not None:
                    K._compute_shadow(JF, JI, S, C, int(C[K.C_HEAD]))
            else:
                KX.rerun_pass(JF, JI, S, C, self.PF)
