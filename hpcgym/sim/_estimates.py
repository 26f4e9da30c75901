"""How :class:`~hpcgym.sim.engine.Simulation` turns its ``estimate=`` and
``rank_estimate=`` arguments into the engine's estimate rows.

The engine keeps two run-time estimates per job:

* the **reservation estimate** (``estimate=``, row ``F_EST``): backfill eligibility,
  the SJBF backfill order, conservative reservations and the running jobs' ends (the
  shadow time);
* the **ranking estimate** (``rank_estimate=``, row ``F_RANK``): the run time the queue
  policies' keys use (SJF, SAF, WFP3, UNICEF, F1-F4...). By default it *is* the
  reservation estimate (one row, as the engine always had).

Both accept a registered estimator name (:func:`hpcgym.sim.estimators.make_estimator`),
an :class:`~hpcgym.sim.estimators.Estimator`, or a float array with one value per job.
A registered estimator's estimates are capped at the request in both roles. An array of
*ranking* values is used as given (positive and finite): it is a static priority key,
so that ``SJF`` with ``rank_estimate=keys`` runs the jobs in the order of ``keys``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcgym.sim.estimators import (
    BUILTIN_ESTIMATORS,
    Estimator,
    canonical_name,
    make_estimator,
)
from hpcgym.sim.feed import cap_estimates
from hpcgym.workload.core import Workload

__all__ = ["EstimateSetup", "setup_estimate"]

EstimateArg = str | Estimator | np.ndarray


@dataclass
class EstimateSetup:
    """One estimate row of a new simulation.

    :param values: the row's initial values (an online estimator's are the requests,
        replaced at each arrival)
    :param name: the name the configuration reports (``request``, ``actual``, ``array``
        or the estimator's)
    :param estimator: the bound :class:`Estimator`, or ``None`` for a built-in or an array
    :param online: the estimator predicts at each arrival
    :param run_request: the estimator asks for the request as the running jobs' estimate
    """

    values: np.ndarray
    name: str
    estimator: Estimator | None = None
    online: bool = False
    run_request: bool = False


def setup_estimate(
    workload: Workload,
    estimate: EstimateArg,
    rng: np.random.Generator,
    *,
    ranking: bool = False,
) -> EstimateSetup:
    """Resolve ``estimate`` for ``workload`` (binding an estimator to ``rng``).

    :param workload: the simulated jobs
    :param estimate: ``request``, ``actual``, a registered estimator name or spec string,
        an :class:`Estimator`, or a float array (one value per job)
    :param rng: the generator a stochastic estimator draws from
    :param ranking: the ranking estimate: an array is a priority key, used as given
        (positive, finite) instead of being capped at the request
    :raises ValueError: for an array of the wrong shape or (ranking) a non-positive or
        non-finite key, or an estimator that gives no estimates
    """
    n = len(workload)
    what = "rank_estimate" if ranking else "estimate"
    if isinstance(estimate, str) and canonical_name(estimate) not in BUILTIN_ESTIMATORS:
        estimate = make_estimator(estimate)  # the registry the predictors fill
    if isinstance(estimate, Estimator):
        estimate.bind(workload, rng)
        if estimate.online:
            return EstimateSetup(
                np.array(workload.request, dtype=np.float64),
                estimate.name,
                estimate,
                online=True,
                run_request=estimate.running_estimate == "request",
            )
        static = estimate.static_estimates()
        if static is None:
            raise ValueError(f"estimator {estimate.name!r} gave no static estimates")
        values = cap_estimates(np.asarray(static, dtype=np.float64), workload.request)
        return EstimateSetup(
            values, estimate.name, estimate, run_request=estimate.running_estimate == "request"
        )
    if isinstance(estimate, np.ndarray):
        if estimate.shape != (n,):
            raise ValueError(f"{what} array has shape {estimate.shape}, expected ({n},)")
        values = estimate.astype(np.float64)
        if ranking:
            bad = ~(np.isfinite(values) & (values > 0))
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"rank_estimate array: every value must be positive and finite (a "
                    f"priority key or a run time in seconds); job {j} has {values[j]!r} "
                    "(for a permutation, pass its position + 1)"
                )
            return EstimateSetup(values, "array")
        return EstimateSetup(cap_estimates(values, workload.request), "array")
    if canonical_name(estimate) == "request":
        return EstimateSetup(np.array(workload.request, dtype=np.float64), "request")
    return EstimateSetup(np.array(workload.runtime, dtype=np.float64), "actual")
