"""hpcgym: learning HPC batch-job backfilling with reinforcement learning.

Layers (each a sub-package): :mod:`hpcgym.workload` (SWF traces, registry, synthetic
Lublin-Feitelson workloads, windows), :mod:`hpcgym.sim` (the one event-driven scheduler
engine, queue policies, backfilling, metrics), :mod:`hpcgym.predictors` (runtime
estimators), :mod:`hpcgym.envs` (the Gymnasium env ``hpcgym/Backfill-v0``).
"""

__version__ = "0.1.0"

# The predictors register their names into the engine's estimator registry (lazily for
# the heavy ones); the envs package registers the gymnasium env "hpcgym/Backfill-v0".
import hpcgym.predictors  # noqa: E402,F401
import hpcgym.envs  # noqa: E402,F401
