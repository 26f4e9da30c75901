"""The one event-driven scheduling engine: queue policies, backfilling, metrics.

* :class:`Simulation` -- resumable state of one simulated window; stops at decision
  points when the backfiller is external (the RL env drives it this way).
* :func:`simulate` -- run a built-in scheduler to the end.
* :func:`get_scheduler` -- named schedulers (``EASY``, ``EASY-AR``, ``EASY-SJBF``,
  ``SAF``, ``EASY++``, ``ELOSS``...), ``POLICY+NAME`` and ``key=value`` specs.

See ``docs/engine.md`` for the exact semantics.
"""

from hpcgym.sim.engine import (
    BACKFILLS,
    CORRECTIONS,
    POLICIES,
    Event,
    SimResult,
    Simulation,
    simulate,
)
from hpcgym.sim.metrics import compute_metrics
from hpcgym.sim.schedulers import NAMED, SchedulerSpec, get_scheduler, list_schedulers

__all__ = [
    "BACKFILLS",
    "CORRECTIONS",
    "POLICIES",
    "Event",
    "NAMED",
    "SchedulerSpec",
    "SimResult",
    "Simulation",
    "compute_metrics",
    "get_scheduler",
    "list_schedulers",
    "simulate",
]
