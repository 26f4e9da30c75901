"""Inspection: accept or reject each start of the queue policy's pick (SchedInspector).

With inspection on (:meth:`Inspection.enable_inspection`), every time a scheduling pass of
a built-in queue policy is about to start its head -- the policy's pick, which fits now --
the engine stops with :attr:`~hpcgym.sim.engine.Event.INSPECT` and waits for a verdict:

* :meth:`~Inspection.accept`: the pass goes on exactly as the policy's own pass: the pick
  starts, the next pick is inspected in turn, a pick that does not fit is reserved for and
  the configured backfiller (EASY, SJBF or none) fills the machine around it;
* :meth:`~Inspection.reject`: the pass ends at once -- nothing more starts at this time,
  no backfilling either -- and the scheduler waits for the next event (an arrival, a
  completion or a correction), where a new pass starts and the pick (possibly another
  job by then) is inspected again.

Accepting every start reproduces the policy's schedule exactly (the verdicts happen at
points of the same pass, and accepting changes nothing). Only starts of the head are
inspected: jobs the backfiller starts are not, as in SchedInspector, whose backfilling
runs inside the accepted pick's wait.

The guard (no livelock, no job held forever): no verdict is asked -- the start is
accepted -- when a reject would leave nothing to wait for (no job running and none left
to arrive), or when that job was rejected ``max_rejections`` times already. Every
inspection decision therefore has both verdicts allowed, and a window has at most as many
of them as it has starts plus ``max_rejections`` per job.

Quick use::

    sim = Simulation(workload, policy="SJF", backfill="easy")
    sim.enable_inspection(max_rejections=8)
    res = sim.run(reject=lambda s: s.view.free < 0.1 * s.view.machine_size)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim.options import POLICIES

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation

__all__ = ["DEFAULT_MAX_REJECTIONS", "Inspection"]

#: rejections allowed per job by default
DEFAULT_MAX_REJECTIONS = 8


class Inspection:
    """The inspection decision of :class:`~hpcgym.sim.engine.Simulation` (a mixin: every
    simulation has these methods; the state lives in the engine arrays, so snapshots,
    clones and restores carry it)."""

    JI: np.ndarray
    C: np.ndarray
    config: dict[str, Any]
    policy: str
    backfill_mode: str
    #: the rule :meth:`~hpcgym.sim.engine.Simulation.run` asks when called without one:
    #: ``reject(sim) -> bool`` (True rejects the pick); shared by clones
    inspector: Callable[[Simulation], bool] | None = None

    def enable_inspection(
        self,
        max_rejections: int = DEFAULT_MAX_REJECTIONS,
        inspector: Callable[[Simulation], bool] | None = None,
    ) -> None:
        """Inspect every start of the queue policy's pick from now on (see the module doc).

        :param max_rejections: rejections allowed per job (>= 1); a job rejected that often
            starts when its turn comes, without a verdict
        :param inspector: the rule ``run()`` uses, ``reject(sim) -> bool``
        :raises ValueError: the external queue policy, conservative backfilling (it
            reserves for every job at once: there is no single pick), or a bad count
        """
        if int(self.C[K.C_POLICY]) == K.POL_EXTERNAL:
            raise ValueError(
                "inspection needs a built-in queue policy (its pick is what is inspected); "
                f"valid: {', '.join(POLICIES)}"
            )
        if int(self.C[K.C_BACKFILL]) == K.BF_CONSERVATIVE:
            raise ValueError(
                "inspection inspects the start of one pick at a time; conservative "
                "backfilling reserves for every job: use backfill none, easy or sjbf"
            )
        if int(max_rejections) != max_rejections or int(max_rejections) < 1:
            raise ValueError(f"max_rejections must be an integer >= 1, got {max_rejections!r}")
        C = self.C
        if int(C[K.C_PHASE]) != K.P_INSPECT or int(C[K.C_INSPECT]) == 0:
            C[K.C_IJOB] = -1
            C[K.C_IANSWER] = -1
        C[K.C_INSPECT] = 1
        C[K.C_IMAXREJ] = int(max_rejections)
        self.config["inspect"] = int(max_rejections)
        if inspector is not None:
            self.inspector = inspector

    def disable_inspection(self) -> None:
        """Stop inspecting: from now on every pick starts as the policy's pass starts it.
        At an inspection decision, the verdict given stands (none given: accept) and
        inspection stops after it. Rollouts of an inspector use it on a clone."""
        C = self.C
        if int(C[K.C_PHASE]) == K.P_INSPECT and int(C[K.C_IJOB]) >= 0:
            if int(C[K.C_IANSWER]) < 0:
                C[K.C_IANSWER] = 0
            C[K.C_INSPECT] = 2  # the kernel applies the verdict, then switches off
        else:
            C[K.C_INSPECT] = 0

    @property
    def inspecting(self) -> bool:
        """Whether inspection is on."""
        return int(self.C[K.C_INSPECT]) == 1

    @property
    def inspected(self) -> int:
        """The job whose start awaits the verdict (-1 outside an inspection decision)."""
        C = self.C
        pending = int(C[K.C_PHASE]) == K.P_INSPECT and int(C[K.C_IANSWER]) < 0
        return int(C[K.C_IJOB]) if pending else -1

    @property
    def max_rejections(self) -> int:
        """Rejections allowed per job."""
        return int(self.C[K.C_IMAXREJ])

    @property
    def rejections(self) -> np.ndarray:
        """Per job, how often its start was rejected (read-only view)."""
        v = self.JI[K.I_NREJECT]
        v = v.view()
        v.flags.writeable = False
        return v

    def _verdict(self, reject: bool) -> None:
        if self.inspected < 0:
            raise RuntimeError(
                "accept() and reject() are only valid at an inspection decision (Event.INSPECT)"
            )
        self.C[K.C_IANSWER] = int(bool(reject))

    def accept(self) -> None:
        """Start the inspected pick now (:meth:`advance` goes on with the pass)."""
        self._verdict(False)

    def reject(self) -> None:
        """Do not start the inspected pick now: nothing more starts at this time, and the
        scheduler waits for the next event (:meth:`advance` runs to it)."""
        self._verdict(True)

    def _answer(self, reject: Callable[[Simulation], bool] | None) -> None:
        """Give the verdict of rule ``reject`` (``run()`` at each inspection decision)."""
        if reject is None:
            raise RuntimeError("inspection is on: run() needs a reject() callback")
        self._verdict(bool(reject(self)))  # type: ignore[arg-type]

    def _inspection_counters(self) -> dict[str, int]:
        C = self.C
        if int(C[K.C_INSPECT]) == 0 and int(C[K.C_IDECISIONS]) == 0:
            return {}
        return {"inspections": int(C[K.C_IDECISIONS]), "rejections": int(C[K.C_IREJECTS])}
