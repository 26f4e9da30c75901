"""A public, read-only, zero-copy view of a :class:`~hpcgym.sim.engine.Simulation`.

Observation builders (the RL env's :mod:`hpcgym.envs.observation`), Python backfillers
and monitoring code read the engine's state through :class:`EngineView` instead of the
engine core's private arrays. The arrays are views of the engine's own memory: they
change in place as the simulation advances and cost nothing to obtain; they are marked
read-only, so a caller cannot corrupt the simulation through them. Scalars are read at
the moment the property is accessed.

Per-job arrays are indexed by the job's position in the simulated window (``0 .. n-1``,
submission order). ``waiting_buffer[:n_waiting]`` holds the waiting jobs in submission
(FCFS) order; at a decision point ``order_buffer[:n_order]`` holds the waiting jobs in
the queue policy's order, the reserved head first, then the *backfill order*. Both
buffers are valid until the next call that changes the simulation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpcgym.sim import _core as K

if TYPE_CHECKING:
    from hpcgym.sim.engine import Simulation

__all__ = ["EngineView", "easy_test"]

#: EASY's test (``easy_test(now, est, procs, free, shadow, extra) -> bool``), the compiled
#: core's own: for row builders that read the view
easy_test = K.easy_test


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class EngineView:
    """Read-only view of one simulation's state (obtain it as ``sim.view``).

    :param sim: the simulation to look at
    """

    __slots__ = (
        "_C",
        "_S",
        "estimate",
        "finished_buffer",
        "order_buffer",
        "procs",
        "rank_estimate",
        "request",
        "running_buffer",
        "running_estimate",
        "start",
        "submit",
        "waiting_buffer",
    )

    def __init__(self, sim: Simulation) -> None:
        JF, JI = sim.JF, sim.JI
        self._S, self._C = sim.S, sim.C
        #: submit time of every job (trace seconds)
        self.submit: np.ndarray = _ro(JF[K.F_SUBMIT])
        #: user request (requested run time, seconds)
        self.request: np.ndarray = _ro(JF[K.F_REQUEST])
        #: the engine's reservation estimate (the estimator's; corrections change
        #: ``running_estimate``)
        self.estimate: np.ndarray = _ro(JF[K.F_EST])
        #: the run time the queue policy ranks by: the ranking estimate
        #: (``rank_estimate=``), or the reservation estimate when none is set
        self.rank_estimate: np.ndarray = _ro(JF[K.F_RANK if sim.C[K.C_RANKSEP] else K.F_EST])
        #: processors of every job
        self.procs: np.ndarray = _ro(JI[K.I_PROCS])
        #: start time of every job (``nan`` until it starts)
        self.start: np.ndarray = _ro(JF[K.F_START])
        #: waiting jobs in submission order: ``waiting_buffer[:n_waiting]``
        self.waiting_buffer: np.ndarray = _ro(JI[K.I_QUEUE])
        #: at a decision point: head, then the backfill order: ``order_buffer[:n_order]``
        self.order_buffer: np.ndarray = _ro(JI[K.I_ORDER])
        #: finished jobs in completion order: ``finished_buffer[:n_finished]``
        self.finished_buffer: np.ndarray = _ro(JI[K.I_FIN])
        #: running jobs by estimated end (``start + running_estimate``, then index):
        #: ``running_buffer[:n_running]``
        self.running_buffer: np.ndarray = _ro(JI[K.I_RUN])
        #: a running job's current estimate of its duration (after corrections)
        self.running_estimate: np.ndarray = _ro(JF[K.F_REST])

    # ------------------------------------------------------------------ time
    @property
    def now(self) -> float:
        """Current simulated time (trace seconds)."""
        return float(self._S[K.S_T])

    # ------------------------------------------------------------- machine
    @property
    def machine_size(self) -> int:
        return int(self._C[K.C_M])

    @property
    def free(self) -> int:
        """Free processors now."""
        return int(self._C[K.C_FREE])

    # --------------------------------------------------------------- queue
    @property
    def n_waiting(self) -> int:
        return int(self._C[K.C_QLEN])

    @property
    def n_running(self) -> int:
        return int(self._C[K.C_RLEN])

    @property
    def queue_decisions(self) -> int:
        """Queue decisions asked so far (``policy="external"``)."""
        return int(self._C[K.C_QDECISIONS])

    @property
    def n_order(self) -> int:
        return int(self._C[K.C_OLEN])

    @property
    def n_finished(self) -> int:
        """Number of jobs finished so far."""
        return int(self._C[K.C_NFIN])

    @property
    def submitted(self) -> int:
        """Number of jobs submitted so far (jobs ``0 .. submitted-1``)."""
        return int(self._C[K.C_NEXT])

    # ------------------------------------------------------ decision point
    @property
    def head(self) -> int:
        """The reserved (blocked) head job at a decision point, or -1."""
        return int(self._C[K.C_HEAD])

    @property
    def shadow(self) -> float:
        """The head's reservation time (``inf`` when there is none)."""
        return float(self._S[K.S_SHADOW])

    @property
    def extra(self) -> int:
        """Processors free at the shadow time beyond what the head needs."""
        return int(self._C[K.C_EXTRA])

    @property
    def guarded(self) -> bool:
        """Candidates are only the jobs EASY allows (they cannot delay the head)."""
        return int(self._C[K.C_CANDMODE]) == K.CAND_EASY

    # ------------------------------------------------------------ counters
    @property
    def inspections(self) -> int:
        """Inspection decisions asked so far (:mod:`hpcgym.sim.inspection`)."""
        return int(self._C[K.C_IDECISIONS])

    @property
    def decisions(self) -> int:
        return int(self._C[K.C_DECISIONS])

    @property
    def backfills(self) -> int:
        """Jobs started by backfilling so far."""
        return int(self._C[K.C_NBACKFILLED])

    @property
    def violations(self) -> int:
        """Backfill starts that delayed the head's reservation so far."""
        return int(self._C[K.C_VIOLATIONS])

    def waiting(self) -> np.ndarray:
        """A copy of the waiting jobs in submission order."""
        return np.array(self.waiting_buffer[: self.n_waiting])

    def finished(self, since: int = 0) -> np.ndarray:
        """A copy of the jobs finished so far, in completion order, from the ``since``-th
        on (an online predictor that re-reads the history at a decision point passes the
        count it has already seen).

        :param since: how many of the first finished jobs to skip
        """
        return np.array(self.finished_buffer[since : self.n_finished])
