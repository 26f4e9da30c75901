"""The one event-driven scheduling engine: queue policies, backfilling, metrics.

* :class:`Simulation` -- resumable state of one simulated window; stops at decision
  points when the backfiller is external (the RL env drives it this way).
* :func:`simulate` -- run a built-in scheduler to the end.
* :func:`get_scheduler` -- named schedulers (``EASY``, ``EASY-AR``, ``EASY-SJBF``,
  ``SAF``, ``EASY++``, ``ELOSS``, ``LOOKAHEAD1-CLAIRVOYANT``, ``LOOKAHEAD1-ONLINE``...),
  ``POLICY+NAME``, ``key=value`` and ``NAME,key=value`` specs.
* :meth:`Simulation.snapshot` / :meth:`Simulation.restore` / :meth:`Simulation.clone`
  -- cheap copies of a simulation's state (rollouts, :mod:`hpcgym.sim.lookahead`).

* :func:`register_policy`, :func:`register_backfill`, :func:`register_chooser`,
  :func:`register_estimator` -- the one registry of heuristics (:mod:`hpcgym.sim.registry`,
  ``docs/heuristics.md``).

See ``docs/engine.md`` for the exact semantics.
"""

from hpcgym.sim.engine import (
    BACKFILLS,
    CORRECTIONS,
    POLICIES,
    Event,
    SimResult,
    SimSnapshot,
    Simulation,
    simulate,
)
from hpcgym.sim.metrics import compute_metrics
from hpcgym.sim.registry import (
    get_heuristic,
    list_heuristics,
    register_backfill,
    register_chooser,
    register_estimator,
    register_policy,
)
from hpcgym.sim.schedulers import (
    NAMED,
    SchedulerSpec,
    get_scheduler,
    list_schedulers,
    policy_name,
)

__all__ = [
    "BACKFILLS",
    "CORRECTIONS",
    "POLICIES",
    "Event",
    "NAMED",
    "SchedulerSpec",
    "SimResult",
    "SimSnapshot",
    "Simulation",
    "compute_metrics",
    "get_heuristic",
    "get_scheduler",
    "list_heuristics",
    "list_schedulers",
    "policy_name",
    "register_backfill",
    "register_chooser",
    "register_estimator",
    "register_policy",
    "simulate",
]
