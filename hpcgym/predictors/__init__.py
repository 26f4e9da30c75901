"""Runtime estimators: what the scheduler believes a job will run (see :mod:`.base`).

Registry (``make_estimator(name, **options)``, or a spec string
``"name:key=value,key=value"``, e.g. ``"noisy:level=0.2"`` or ``"noisy:20%"``):

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
===================  ======  =======================================================

Details, formulas and documented choices: ``docs/predictors.md``.
"""

from __future__ import annotations

import inspect
from typing import Any

from hpcgym.predictors.ave import Ave2Estimator
from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.predictors.corrections import correct
from hpcgym.predictors.eloss import ELossEstimator
from hpcgym.predictors.hmm import HMMPredictor
from hpcgym.predictors.static import ActualEstimator, NoisyActualEstimator, RequestEstimator
from hpcgym.predictors.tang import TangEstimator, TangSelectiveEstimator

__all__ = [
    "ESTIMATORS",
    "Ave2Estimator",
    "ActualEstimator",
    "ELossEstimator",
    "Estimator",
    "HMMPredictor",
    "NoisyActualEstimator",
    "RequestEstimator",
    "SystemView",
    "TangEstimator",
    "TangSelectiveEstimator",
    "correct",
    "make_estimator",
    "parse_spec",
    "register_estimator",
]

#: name -> (class, fixed constructor arguments)
ESTIMATORS: dict[str, tuple[type[Estimator], dict[str, Any]]] = {
    "request": (RequestEstimator, {}),
    "actual": (ActualEstimator, {}),
    "noisy": (NoisyActualEstimator, {}),
    "ave2": (Ave2Estimator, {}),
    "eloss": (ELossEstimator, {}),
    "tang-user": (TangEstimator, {"scheme": "user"}),
    "tang-project": (TangEstimator, {"scheme": "project"}),
    "tang-combined": (TangEstimator, {"scheme": "combined"}),
    "tang-selective": (TangSelectiveEstimator, {}),
    "hmm": (HMMPredictor, {}),
}

_ALIASES: dict[str, str] = {
    "requested": "request",
    "user": "request",
    "clairvoyant": "actual",
    "ar": "actual",
    "e-loss": "eloss",
}

#: option a bare value in a spec string sets ("noisy:0.2" -> level=0.2)
_PRIMARY: dict[str, str] = {"noisy": "level"}


def _value(text: str) -> Any:
    t = text.strip()
    low = t.lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and its options.

    A single bare value sets the estimator's main option (``"noisy:0.2"``).
    """
    name, _, rest = str(spec).partition(":")
    key = _canonical(name)
    opts: dict[str, Any] = {}
    if rest.strip():
        for part in rest.split(","):
            if not part.strip():
                continue
            k, eq, v = part.partition("=")
            if not eq:
                main = _PRIMARY.get(key)
                if main is None or main in opts:
                    raise ValueError(
                        f"estimator spec {spec!r}: option {part.strip()!r} needs the form "
                        f"key=value (options of {key!r}: {', '.join(_options(key)) or 'none'})"
                    )
                opts[main] = _value(k)
            else:
                opts[k.strip()] = _value(v)
    return key, opts


def _canonical(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in ESTIMATORS:
        raise ValueError(
            f"unknown estimator {name!r}; valid choices: {', '.join(ESTIMATORS)} "
            f"(options as 'name:key=value,...', see docs/predictors.md)"
        )
    return key


def _options(key: str) -> list[str]:
    cls, fixed = ESTIMATORS[key]
    params = inspect.signature(cls.__init__).parameters
    return [p for p in params if p != "self" and p not in fixed]


def register_estimator(
    name: str, cls: type[Estimator], overwrite: bool = False, **fixed: Any
) -> None:
    """Add an estimator class to the registry (``fixed`` = constructor arguments it sets).

    :param name: registry name (lower case, ``-`` as separator)
    :param cls: an :class:`Estimator` subclass
    :param overwrite: replace an existing entry of that name
    """
    key = str(name).strip().lower().replace("_", "-")
    if not (isinstance(cls, type) and issubclass(cls, Estimator)):
        raise TypeError(f"{cls!r} is not an Estimator subclass")
    if (key in ESTIMATORS or key in _ALIASES) and not overwrite:
        raise ValueError(f"estimator {key!r} is already registered (use overwrite=True)")
    ESTIMATORS[key] = (cls, dict(fixed))


def make_estimator(name: str, **kw: Any) -> Estimator:
    """A new estimator by registry name (or spec string) and options.

    :param name: one of :data:`ESTIMATORS` (case-insensitive; ``_`` = ``-``), optionally
        followed by ``:key=value,...``
    :param kw: constructor options (override those of the spec string)
    """
    key, opts = parse_spec(name)
    opts.update(kw)
    valid = _options(key)
    bad = [k for k in opts if k not in valid]
    if bad:
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, bad))} for estimator {key!r}; "
            f"valid options: {', '.join(valid) or 'none'}"
        )
    cls, fixed = ESTIMATORS[key]
    if key == "noisy" and "level" not in opts:
        raise ValueError(
            "estimator 'noisy' needs a noise level, e.g. 'noisy:level=0.2' or 'noisy:20%' "
            "(RLBackfilling Fig. 1 uses 0.05, 0.1, 0.2, 0.4 and 1.0)"
        )
    return cls(**fixed, **opts)
