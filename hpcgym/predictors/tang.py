"""Tang et al.'s adjusted user estimates (paper 001, §V "Adjusting user runtime estimates").

The scheduler uses ``t_sched = t_req x A`` (Eq. 4), where the adjusting parameter
``A`` is a prediction of the accuracy ratio ``R = t_act / t_req`` (Eq. 2) of the
job's estimate:

* **user-based** (``tang-user``): ``A`` is the 80th percentile of the R values of the
  user's historical jobs; ``A = 1`` (no adjustment) when the user has fewer than 50
  historical jobs;
* **project-based** (``tang-project``): the same over the jobs of the job's project
  (the SWF group field, field 13);
* **combined** (``tang-combined``, Eq. 5): the average of ``A_u`` and ``A_p`` when both
  have enough history, the one that has enough history otherwise, 1 when neither has;
* **selective** (``tang-selective``): the combined estimate for queue order and for
  backfill eligibility, the user request for the running jobs' ends, i.e. for the
  shadow time ("user-estimated runtime to drain partitions"; class attribute
  :attr:`~hpcgym.predictors.base.Estimator.running_estimate` ``= "request"``).

Documented choices

* **History** is the jobs that have *finished* so far in the simulation (online),
  not a separate earlier workload as in the paper (WL-I); a job's own R joins the
  history only when it finishes, so no estimate uses a runtime from the future.
* **Percentile**: "A is larger than 80 % of those N jobs' R values". We take the
  order statistic ``sorted(R)[ceil(0.8 (N - 1))]`` (0-based), which is
  ``numpy.percentile(R, 80, method="higher")`` and, for the 80th percentile, also
  ``sorted(R)[floor(0.8 N)]``: the smallest R value with at least 80 % of the values
  at or below it and never an interpolated value.
* **Threshold**: "fewer than 50 historical jobs" -> A = 1; with 50 or more the
  percentile is used.
* **Eq. 5** tests ``A_u = 1`` / ``A_p = 1`` "because of lacking historical data"; we
  test the *sufficiency* of the history (``combine="sufficiency"``, default), so a
  user whose 80th-percentile R is exactly 1 still counts as informed. The literal
  value test is available as ``combine="literal"``.
* **Unknown ids**: a negative user or group id (SWF ``-1``: CTC-SP2 and SDSC-BLUE have
  no groups, the Lublin traces no users) means "no history" (A = 1), not one shared
  pseudo-user or project.
* ``R = runtime / request`` is at most 1 after cleaning (request >= runtime), so
  ``t_sched <= t_req``; estimates are capped at the request and at least
  ``min(1 s, request)``.

Efficiency: each user/project keeps its R values in a sorted list (``bisect.insort``,
a C memmove) and its current ``A`` is recomputed once when a job of it finishes, so a
prediction is two dictionary-free list look-ups.
"""

from __future__ import annotations

from bisect import insort

import numpy as np

from hpcgym.predictors.ave import dense_ids
from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.workload.core import Workload

__all__ = [
    "COMBINE_MODES",
    "TANG_SCHEMES",
    "TangEstimator",
    "TangSelectiveEstimator",
    "combine_a",
    "percentile_higher",
]

#: adjusting schemes of Tang et al. §V.A
TANG_SCHEMES: tuple[str, ...] = ("user", "project", "combined")
#: how Eq. 5 decides that A_u / A_p are "not available"
COMBINE_MODES: dict[str, str] = {
    "sufficiency": "A_u (A_p) counts when the user (project) has >= min_jobs finished jobs",
    "literal": "A_u (A_p) counts when its value is < 1 (Eq. 5 as printed)",
}


def percentile_higher(sorted_values: list[float], percentile: float) -> float:
    """``sorted_values[ceil(p/100 * (N-1))]``: numpy's ``method="higher"`` percentile.

    :param sorted_values: non-empty, ascending
    :param percentile: in [0, 100]
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of an empty history")
    p = float(percentile)
    if p.is_integer():  # exact integer arithmetic: ceil(p (n-1) / 100)
        idx = -((-int(p) * (n - 1)) // 100)
    else:
        idx = int(np.ceil(p * (n - 1) / 100.0))
    return sorted_values[min(max(idx, 0), n - 1)]


def combine_a(a_u: float, ok_u: bool, a_p: float, ok_p: bool, mode: str = "sufficiency") -> float:
    """Tang et al. Eq. 5: the combined adjusting parameter.

    :param a_u, a_p: user-based and project-based A (1 when not available)
    :param ok_u, ok_p: whether the user / project has enough history
    :param mode: one of :data:`COMBINE_MODES`
    """
    if mode == "literal":
        ok_u, ok_p = a_u < 1.0, a_p < 1.0
    if ok_u and ok_p:
        return 0.5 * (a_u + a_p)
    if ok_u:
        return a_u
    if ok_p:
        return a_p
    return 1.0


class _History:
    """Sorted R values and the current A of every user (or project)."""

    def __init__(self, n_keys: int, percentile: float, min_jobs: int) -> None:
        self.values: list[list[float]] = [[] for _ in range(n_keys)]
        self.a: list[float] = [1.0] * n_keys
        self.ok: list[bool] = [False] * n_keys
        self.percentile = percentile
        self.min_jobs = min_jobs

    def add(self, key: int, r: float) -> None:
        if key < 0:
            return
        vals = self.values[key]
        insort(vals, r)
        if len(vals) >= self.min_jobs:
            self.ok[key] = True
            self.a[key] = percentile_higher(vals, self.percentile)

    def get(self, key: int) -> tuple[float, bool]:
        if key < 0:
            return 1.0, False
        return self.a[key], self.ok[key]


class TangEstimator(Estimator):
    """``t_sched = t_req x A`` with A from the user's / project's historical accuracy.

    :param scheme: ``"user"``, ``"project"`` or ``"combined"`` (Tang et al. §V.A)
    :param percentile: percentile of the historical R values (paper: 80)
    :param min_jobs: history needed before adjusting (paper: 50; fewer -> A = 1)
    :param combine: Eq. 5 reading, one of :data:`COMBINE_MODES` (combined scheme only)
    """

    online = True

    def __init__(
        self,
        scheme: str = "combined",
        percentile: float = 80.0,
        min_jobs: int = 50,
        combine: str = "sufficiency",
    ) -> None:
        if scheme not in TANG_SCHEMES:
            raise ValueError(
                f"unknown Tang scheme {scheme!r}; valid choices: {', '.join(TANG_SCHEMES)}"
            )
        if combine not in COMBINE_MODES:
            raise ValueError(
                f"unknown combine mode {combine!r}; valid choices: {', '.join(COMBINE_MODES)}"
            )
        if not 0.0 <= float(percentile) <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {percentile!r}")
        if int(min_jobs) < 1:
            raise ValueError(f"min_jobs must be >= 1, got {min_jobs!r}")
        self.scheme = scheme
        self.percentile = float(percentile)
        self.min_jobs = int(min_jobs)
        self.combine = combine
        if type(self) is TangEstimator:
            self.name = f"tang-{scheme}"

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self._uid, nu = dense_ids(workload.user)
        self._gid, ng = dense_ids(workload.group)
        self._users = _History(nu, self.percentile, self.min_jobs)
        self._projects = _History(ng, self.percentile, self.min_jobs)
        self._ratio = workload.runtime / workload.request
        self._request = workload.request

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        uid, gid, ratio = self._uid, self._gid, self._ratio
        for j in np.asarray(jobs, dtype=np.int64).tolist():
            r = float(ratio[j])
            self._users.add(int(uid[j]), r)
            self._projects.add(int(gid[j]), r)

    def adjusting_parameter(self, job: int) -> float:
        """The A of ``job`` from the history observed so far."""
        if self.scheme == "user":
            return self._users.get(int(self._uid[job]))[0]
        if self.scheme == "project":
            return self._projects.get(int(self._gid[job]))[0]
        a_u, ok_u = self._users.get(int(self._uid[job]))
        a_p, ok_p = self._projects.get(int(self._gid[job]))
        return combine_a(a_u, ok_u, a_p, ok_p, self.combine)

    def predict(self, job: int, view: SystemView) -> float:
        req = float(self._request[job])
        est = req * self.adjusting_parameter(job)
        return min(max(est, min(1.0, req)), req)


class TangSelectiveEstimator(TangEstimator):
    """Tang et al.'s selective scheme: combined A for queue order and backfilling, the
    request for the running jobs' ends (shadow time).

    :param percentile, min_jobs, combine: as :class:`TangEstimator`
    """

    name = "tang-selective"
    running_estimate = "request"

    def __init__(
        self, percentile: float = 80.0, min_jobs: int = 50, combine: str = "sufficiency"
    ) -> None:
        super().__init__("combined", percentile, min_jobs, combine)
