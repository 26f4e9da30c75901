"""The estimator interface (defined by the engine, :mod:`hpcgym.sim.estimators`).

Predictors subclass :class:`Estimator` and see the engine through :class:`SystemView`;
both live in the engine's layer so that the engine never imports a predictor. They are
re-exported here for the predictors' convenience.
"""

from hpcgym.sim.estimators import Estimator, SystemView

__all__ = ["Estimator", "SystemView"]
