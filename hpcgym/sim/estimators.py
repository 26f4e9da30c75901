"""The estimator interface and registry: how runtime predictors plug into the engine.

An estimator gives the runtime the scheduler *believes* for each job, ``est(j)``.
The engine (:mod:`hpcgym.sim.engine`) uses it for queue keys, for the shadow time
and for backfill eligibility. Jobs always run for their actual runtime.

Two kinds:

* **static** estimators (``online = False``) know every estimate up front from the
  job's own fields (user request, clairvoyant actual runtime, seeded noisy actual).
  :meth:`Estimator.static_estimates` returns the whole array; the engine then never
  calls back into Python, which keeps whole-trace runs fast.
* **online** estimators (``online = True``) are asked at each submission
  (:meth:`Estimator.predict`) and are told, before that, about every job that has
  finished since the previous call (:meth:`Estimator.observe_finished`) and, when
  they want it, about starts. They may use only the job's own fields (not its
  runtime), the history of finished jobs and the current system state
  (:class:`SystemView`).

All estimates are capped at the user request by the engine.

When a running job reaches its estimated end without finishing, the engine applies
a **correction** (``correction=`` of :class:`~hpcgym.sim.engine.Simulation`);
corrections are part of the engine, not of the estimator.

**Registry.** The engine knows estimators by name only through this module:
:func:`make_estimator` builds one from a name or a spec string
(``"name:key=value,key=value"``, e.g. ``"noisy:level=0.2"``), and the predictors of
:mod:`hpcgym.predictors` add themselves with :func:`register_estimator` when hpcgym is
imported. The engine never imports a predictor; a registration may be *lazy* (a
callable returning the class), so that e.g. the HMM code is loaded only when used.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hpcgym.suggest import did_you_mean
from hpcgym.workload.core import Workload

__all__ = [
    "ESTIMATORS",
    "Estimator",
    "SystemView",
    "BUILTIN_ESTIMATORS",
    "canonical_name",
    "estimator_names",
    "make_estimator",
    "parse_spec",
    "register_estimator",
]


@dataclass
class SystemView:
    """Read-only view of the engine at a submission (valid only during the call).

    :param now: current simulated time (trace seconds)
    :param running: indices (into the simulated workload) of the running jobs
    :param start: start time of every job of the workload (``nan`` if not started)
    :param free: free processors now
    :param machine_size: processors of the machine
    """

    now: float
    running: np.ndarray
    start: np.ndarray
    free: int
    machine_size: int


class Estimator:
    """Base class of runtime estimators.

    Subclasses set :attr:`name` and :attr:`online` and implement either
    :meth:`static_estimates` (static) or :meth:`predict` (online).

    The same estimator object can be reused for many simulations: the engine calls
    :meth:`bind` at the start of each one.
    """

    #: short name used in scheduler specs (``--estimate NAME``)
    name: str = "base"
    #: True if :meth:`predict` must be called at each submission
    online: bool = False
    #: if not None, estimate used for *running* jobs' ends (shadow time) instead of
    #: the prediction (Tang et al.'s *selective* adjusting uses the user request)
    running_estimate: str | None = None
    #: why this online estimator cannot be warm-started from the accounting log
    #: (:mod:`hpcgym.sim.warmstart`), or ``None`` when it can
    no_warm_start: str | None = None
    #: the attributes :meth:`bind` sets and nothing writes afterwards (per-job tables,
    #: the workload...), or ``None``. Declaring them lets a warm start from the log replay
    #: the whole trace once per process and share them between the windows' copies
    #: (:mod:`hpcgym.sim.warmcache`); it also states that binding to a longer workload
    #: leaves the first rows of every per-job table as binding to its prefix would, and
    #: that ``bind`` and the replay draw nothing from the generator
    warm_static: tuple[str, ...] | None = None

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        """Start a new simulation of ``workload`` (reset any online state)."""
        self.workload = workload
        self.rng = rng

    # -- static estimators -------------------------------------------------------
    def static_estimates(self) -> np.ndarray | None:
        """All estimates at once (float64, len = jobs), or ``None`` for online ones."""
        return None

    # -- online estimators -------------------------------------------------------
    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        """Jobs (indices) that finished since the last call, in completion order."""

    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        """Jobs (indices) that started since the last call (optional)."""

    def predict(self, job: int, view: SystemView) -> float:
        """Estimate for ``job`` submitted now (uses no information from the future)."""
        raise NotImplementedError


# ====================================================================== registry
@dataclass
class _Entry:
    """One registered estimator: its class (or a loader of it) and fixed arguments."""

    cls: type[Estimator] | Callable[[], type[Estimator]]
    fixed: dict[str, Any]
    #: the option a bare value in a spec string sets (``"noisy:0.2"`` -> level=0.2)
    primary: str | None = None
    #: options that must be given, with the hint shown when one is missing
    required: dict[str, str] | None = None

    def resolve(self) -> type[Estimator]:
        if not (isinstance(self.cls, type) and issubclass(self.cls, Estimator)):
            loaded = self.cls()
            if not (isinstance(loaded, type) and issubclass(loaded, Estimator)):
                raise TypeError(f"estimator loader returned {loaded!r}, not an Estimator class")
            self.cls = loaded
        return self.cls


#: name -> registered estimator (filled by :mod:`hpcgym.predictors` on import)
ESTIMATORS: dict[str, _Entry] = {}

_ALIASES: dict[str, str] = {
    "requested": "request",
    "user": "request",
    "clairvoyant": "actual",
    "ar": "actual",
    "e-loss": "eloss",
}


#: estimators the engine applies itself, without an :class:`Estimator` object
BUILTIN_ESTIMATORS: tuple[str, ...] = ("request", "actual")


def canonical_name(name: str) -> str:
    """The registry spelling of an estimator name: case, ``_`` and aliases resolved
    (``"User"`` -> ``"request"``, ``"AR"`` -> ``"actual"``, ``"E_Loss"`` -> ``"eloss"``);
    options after ``:`` and unknown names are kept as given. The one alias table of
    estimator names is :data:`_ALIASES` here."""
    head, sep, rest = str(name).partition(":")
    key = head.strip().lower().replace("_", "-")
    return _ALIASES.get(key, key) + sep + rest


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
                main = ESTIMATORS[key].primary
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
    key = canonical_name(name)
    if key not in ESTIMATORS:
        raise ValueError(
            f"unknown estimator {name!r}{did_you_mean(name, ESTIMATORS)}; valid choices: "
            f"{', '.join(ESTIMATORS)} "
            f"(options as 'name:key=value,...', see docs/predictors.md)"
        )
    return key


def _options(key: str) -> list[str]:
    entry = ESTIMATORS[key]
    params = inspect.signature(entry.resolve().__init__).parameters
    return [p for p in params if p != "self" and p not in entry.fixed]


def estimator_names() -> list[str]:
    """Registered estimator names (``request`` and ``actual`` are always there)."""
    return list(ESTIMATORS)


def register_estimator(
    name: str,
    cls: type[Estimator] | Callable[[], type[Estimator]],
    overwrite: bool = False,
    *,
    primary: str | None = None,
    required: dict[str, str] | None = None,
    **fixed: Any,
) -> None:
    """Add an estimator to the registry (``fixed`` = constructor arguments it sets).

    :param name: registry name (lower case, ``-`` as separator)
    :param cls: an :class:`Estimator` subclass, or a callable without arguments that
        imports and returns one (a lazy registration: nothing is imported until the
        estimator is first used)
    :param overwrite: replace an existing entry of that name
    :param primary: the option a bare value of a spec string sets (``"noisy:0.2"``)
    :param required: options that must be given -> what to say when one is missing
        (``"estimator NAME needs <this> (option 'x')"``)
    :param fixed: constructor arguments this name sets
    """
    key = str(name).strip().lower().replace("_", "-")
    if isinstance(cls, type):
        if not issubclass(cls, Estimator):
            raise TypeError(f"{cls!r} is not an Estimator subclass")
    elif not callable(cls):
        raise TypeError(f"{cls!r} is neither an Estimator subclass nor a loader of one")
    if (key in ESTIMATORS or key in _ALIASES) and not overwrite:
        raise ValueError(f"estimator {key!r} is already registered (use overwrite=True)")
    ESTIMATORS[key] = _Entry(cls, dict(fixed), primary, dict(required or {}) or None)


def make_estimator(name: str, **kw: Any) -> Estimator:
    """A new estimator by registry name (or spec string) and options.

    :param name: one of :data:`ESTIMATORS` (case-insensitive; ``_`` = ``-``), optionally
        followed by ``:key=value,...``
    :param kw: constructor options (override those of the spec string); ``warm``
        (``"log"`` or a number of jobs), an option of every online estimator, returns it
        wrapped in :class:`~hpcgym.sim.warmstart.LogWarmStart`: warm-started at each bind
        from the trace's recorded schedule before the window
    """
    key, opts = parse_spec(name)
    opts.update(kw)
    warm = opts.pop("warm", None)
    valid = _options(key)
    bad = [k for k in opts if k not in valid]
    if bad:
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, bad))} for estimator {key!r}; "
            f"valid options: {', '.join([*valid, 'warm'])}"
        )
    entry = ESTIMATORS[key]
    for option, hint in (entry.required or {}).items():
        if option not in opts:
            raise ValueError(f"estimator {key!r} needs {hint} (option {option!r})")
    est = entry.resolve()(**entry.fixed, **opts)
    from hpcgym.sim.warmstart import LogWarmStart, parse_warm

    if parse_warm(warm) is not None:
        return LogWarmStart(est, warm)
    return est
