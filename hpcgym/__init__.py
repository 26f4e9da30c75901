"""hpcgym: learning HPC batch-job backfilling with reinforcement learning.

Layers (each a sub-package): :mod:`hpcgym.workload` (SWF traces, registry, synthetic
Lublin-Feitelson workloads, windows), :mod:`hpcgym.sim` (the one event-driven scheduler
engine, queue policies, backfilling, metrics), :mod:`hpcgym.predictors` (runtime
estimators), :mod:`hpcgym.envs` (the Gymnasium env ``hpcgym/Backfill-v0``),
:mod:`hpcgym.evaluation` (agents and schedulers on the same windows, statistics, reports)
and :mod:`hpcgym.cli` (the ``hpcgym`` command). Arrows point down only; see
``docs/architecture.md``.
"""

# The predictors register their names into the engine's estimator registry (lazily for
# the heavy ones); the envs package registers the gymnasium env "hpcgym/Backfill-v0".
import hpcgym.envs
import hpcgym.predictors  # noqa: F401
from hpcgym._version import __version__

__all__ = ["__version__"]
