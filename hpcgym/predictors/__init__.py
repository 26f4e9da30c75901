"""Runtime estimators: what the scheduler believes a job will run (see :mod:`.base`).

The predictors register into the engine's registry (:mod:`hpcgym.sim.estimators`);
:func:`make_estimator` ``(name, **options)`` (re-exported here) also takes a spec string
``"name:key=value,key=value"``, e.g. ``"noisy:level=0.2"`` or ``"noisy:20%"``:

===================  ======  =======================================================
name                 kind    estimate
===================  ======  =======================================================
``request``          static  the user request (plain EASY)
``actual``           static  the actual runtime (clairvoyant)
``noisy``            static  ``min(actual (1 + e), request)``, seeded ``e`` (option ``level``)
``ave2``             online  mean runtime of the user's last two finished jobs (Tsafrir)
``eloss``            online  Gaussier et al.'s learned predictor (options: loss family)
``tang-user``        online  ``request x A``, A = 80th pct of the user's R (Tang et al.)
``tang-project``     online  same over the project (SWF group)
``tang-combined``    online  Eq. 5 combination of the two
``tang-selective``   online  combined, but the request for running jobs' ends
``log-ridge``        online  ridge regression of log(runtime/request) on E-Loss's features
``blurred``          static  ``actual x exp(sigma z)``: clairvoyant, log-normal blur
``ends-within``      static  a classifier of "ends within X s" (graded precision/recall)
``like-job``         online  run time of the user's last finished job with that request
===================  ======  =======================================================

Details, formulas and documented choices: ``docs/predictors.md``.
"""

from __future__ import annotations

from hpcgym.predictors.ave import Ave2Estimator
from hpcgym.predictors.corrections import correct
from hpcgym.predictors.eloss import ELossEstimator
from hpcgym.predictors.oracles import (
    BlurredActualEstimator,
    EndsWithinEstimator,
    LikeJobEstimator,
)
from hpcgym.predictors.ridge import LogRidgeEstimator
from hpcgym.predictors.static import ActualEstimator, NoisyActualEstimator, RequestEstimator
from hpcgym.predictors.tang import TangEstimator, TangSelectiveEstimator
from hpcgym.sim.estimators import (
    ESTIMATORS,
    Estimator,
    SystemView,
    estimator_names,
    make_estimator,
    parse_spec,
    register_estimator,
)

__all__ = [
    "ESTIMATORS",
    "Ave2Estimator",
    "ActualEstimator",
    "BlurredActualEstimator",
    "ELossEstimator",
    "EndsWithinEstimator",
    "Estimator",
    "HMMPredictor",
    "LikeJobEstimator",
    "LogRidgeEstimator",
    "NoisyActualEstimator",
    "RequestEstimator",
    "SystemView",
    "TangEstimator",
    "TangSelectiveEstimator",
    "correct",
    "estimator_names",
    "make_estimator",
    "parse_spec",
    "register_estimator",
]


def _hmm() -> type[Estimator]:
    from hpcgym.predictors.hmm import HMMPredictor

    return HMMPredictor


def __getattr__(name: str) -> object:
    if name == "HMMPredictor":  # imported on first use: the HMM code is large
        return _hmm()
    raise AttributeError(f"module 'hpcgym.predictors' has no attribute {name!r}")


def _register() -> None:
    table: dict[str, tuple[object, dict[str, object]]] = {
        "request": (RequestEstimator, {}),
        "actual": (ActualEstimator, {}),
        "noisy": (NoisyActualEstimator, {}),
        "ave2": (Ave2Estimator, {}),
        "eloss": (ELossEstimator, {}),
        "tang-user": (TangEstimator, {"scheme": "user"}),
        "tang-project": (TangEstimator, {"scheme": "project"}),
        "tang-combined": (TangEstimator, {"scheme": "combined"}),
        "tang-selective": (TangSelectiveEstimator, {}),
        "hmm": (_hmm, {}),
        "log-ridge": (LogRidgeEstimator, {}),
        "blurred": (BlurredActualEstimator, {}),
        "ends-within": (EndsWithinEstimator, {}),
        "like-job": (LikeJobEstimator, {}),
    }
    for name, (cls, fixed) in table.items():
        if name in ESTIMATORS:  # re-import (e.g. importlib.reload): keep the first
            continue
        extra: dict[str, object] = {}
        if name == "noisy":
            extra = {
                "primary": "level",
                "required": {
                    "level": "a noise level, e.g. 'noisy:level=0.2' or 'noisy:20%' "
                    "(RLBackfilling Fig. 1 uses 0.05, 0.1, 0.2, 0.4 and 1.0)"
                },
            }
        if name == "blurred":
            extra = {"primary": "sigma", "required": {"sigma": "a blur, e.g. 'blurred:sigma=0.5'"}}
        if name == "ends-within":
            extra = {"primary": "threshold"}
        register_estimator(name, cls, **extra, **fixed)  # type: ignore[arg-type]


_register()
