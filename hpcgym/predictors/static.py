"""Static estimators: the user request, the clairvoyant actual runtime, a seeded noisy actual.

All three know every estimate from the job's own fields, so they return the whole
array at once (:meth:`~hpcgym.predictors.base.Estimator.static_estimates`) and the
engine never calls back into Python.
"""

from __future__ import annotations

import numpy as np

from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.workload.core import Workload

__all__ = [
    "ActualEstimator",
    "NOISE_DISTRIBUTIONS",
    "NoisyActualEstimator",
    "PAPER_NOISE_LEVELS",
    "RequestEstimator",
    "parse_level",
]

#: noise levels of RLBackfilling Fig. 1 (Kolker-Hicks et al., paper 004 §1): +5% ... +100%
PAPER_NOISE_LEVELS: tuple[float, ...] = (0.05, 0.10, 0.20, 0.40, 1.00)

#: how the relative error ``e`` of :class:`NoisyActualEstimator` is drawn for a level ``L``
NOISE_DISTRIBUTIONS: dict[str, str] = {
    "uniform": "e ~ U[0, L): over-estimation only (the '+L' of paper 004 Fig. 1; default)",
    "symmetric": "e ~ U[-L, L): over- and under-estimation (needs L < 1)",
    "fixed": "e = L for every job (deterministic)",
}


def _clip(est: np.ndarray, request: np.ndarray) -> np.ndarray:
    """Cap at the request and keep strictly positive (same rule as the engine)."""
    return np.clip(est, np.minimum(1.0, request), request)


class _Static(Estimator):
    """A static estimator can also answer :meth:`predict` (its precomputed estimate)."""

    online = False

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self._cache: np.ndarray | None = None

    def static_estimates(self) -> np.ndarray:
        """All estimates at once (float64, one per job of the bound workload)."""
        raise NotImplementedError

    def predict(self, job: int, view: SystemView) -> float:
        if self._cache is None:
            self._cache = self.static_estimates()
        return float(self._cache[job])


class RequestEstimator(_Static):
    """The user's requested time ``p~_j`` (SWF field 9): plain EASY (Gaussier et al. Table 1)."""

    name = "request"

    def static_estimates(self) -> np.ndarray:
        return np.array(self.workload.request, dtype=np.float64, copy=True)


class ActualEstimator(_Static):
    """The actual runtime ``p_j`` (clairvoyant, Gaussier et al. §2.2 "EASY-CLAIRVOYANT").

    Clairvoyant by definition: it reads the job's own runtime.
    """

    name = "actual"

    def static_estimates(self) -> np.ndarray:
        return _clip(np.array(self.workload.runtime, dtype=np.float64), self.workload.request)


def parse_level(level: float | str) -> float:
    """A noise level as a fraction: ``0.2``, ``"0.2"``, ``"20%"`` and ``"+20%"`` all give 0.2.

    :param level: fraction (float) or percentage string
    """
    if isinstance(level, str):
        s = level.strip()
        try:
            value = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
        except ValueError:
            raise ValueError(
                f"noise level {level!r} is not a number; give a fraction (0.2) or a "
                f"percentage ('20%'); the paper's levels are "
                f"{', '.join(f'{x:g}' for x in PAPER_NOISE_LEVELS)}"
            ) from None
    else:
        value = float(level)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"noise level must be a finite fraction >= 0, got {level!r}")
    return value


class NoisyActualEstimator(_Static):
    """Noisy actual runtime: ``min(p_j (1 + e_j), p~_j)`` with a seeded relative error ``e_j``.

    This is the "AR + L" estimate of RLBackfilling (paper 004, §1 and Fig. 1): the
    actual runtime with "random prediction errors" of +5 %, +10 %, +20 %, +40 % or
    +100 %. The paper does not give the distribution; we read "+L" as a random
    over-estimation of at most L, i.e. ``e ~ U[0, L)`` (``distribution="uniform"``,
    the default). ``"symmetric"`` draws ``e ~ U[-L, L)`` and ``"fixed"`` uses
    ``e = L``. The estimate is capped at the request (Gaussier et al. §5.2: estimates
    stay bounded by the request) and is never below ``min(1 s, request)``.

    Draws come from the generator given to :meth:`bind` (one ``U[0, 1)`` draw per job,
    in job order), so a simulation is reproducible from its seed. Clairvoyant by
    definition (it reads the job's own runtime).

    :param level: the noise level L as a fraction (0.2) or a percentage string ("20%")
    :param distribution: one of :data:`NOISE_DISTRIBUTIONS`
    """

    def __init__(self, level: float | str, distribution: str = "uniform") -> None:
        self.level = parse_level(level)
        if distribution not in NOISE_DISTRIBUTIONS:
            raise ValueError(
                f"unknown noise distribution {distribution!r}; valid choices: "
                f"{', '.join(NOISE_DISTRIBUTIONS)}"
            )
        if distribution == "symmetric" and self.level >= 1.0:
            raise ValueError(
                f"symmetric noise needs level < 1 (a level of {self.level:g} can make the "
                f"estimate zero or negative); use distribution='uniform'"
            )
        self.distribution = distribution
        self.name = f"noisy:level={self.level:g}"
        self._est: np.ndarray | None = None

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self._est = None

    def relative_errors(self) -> np.ndarray:
        """Draw the relative errors ``e_j`` for every job of the bound workload."""
        n = len(self.workload)
        if self.distribution == "fixed":
            return np.full(n, self.level)
        u = self.rng.random(n)
        if self.distribution == "uniform":
            return self.level * u
        return self.level * (2.0 * u - 1.0)

    def static_estimates(self) -> np.ndarray:
        if self._est is None:
            e = self.relative_errors()
            self._est = _clip(self.workload.runtime * (1.0 + e), self.workload.request)
        return self._est.copy()
