"""AVE2: the mean runtime of the user's last two finished jobs (Tsafrir, Etsion & Feitelson).

Tsafrir et al. ("Backfilling using system-generated predictions rather than user
runtime estimates", IEEE TPDS 2007; ref. [24] of Gaussier et al.) predict a job's
runtime as the average runtime of the two most recent *finished* jobs of the same
user, never more than the user's request. Gaussier et al. (SC'15, §3.2 and §6.2) use it
as :math:`AVE_2^{(k)}(p)`; with EASY-SJBF and the incremental correction it is EASY++.

Documented choices

* "most recent" is in completion order: the two jobs of the user that finished last
  before the submission (the order of :meth:`observe_finished`).
* With fewer than ``min_history`` (default 2) finished jobs the user request is used.
  Tsafrir et al. fall back to the user estimate when the history is missing, and the
  authors' simulator (predictsim, used for Gaussier et al.'s results) predicts only
  once two runtimes are known, so a user with one finished job gets the request.
  ``min_history=1`` uses the single runtime instead (mean of what is available).
* A job whose user is unknown (negative SWF user id, e.g. ``-1`` in the synthetic
  Lublin traces) has no history: it gets the request. Unknown users are not pooled
  into one pseudo-user (that would average unrelated jobs).
* The estimate is ``min(mean, request)`` and at least ``min(1 s, request)``.
"""

from __future__ import annotations

import numpy as np

from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.workload.core import Workload

__all__ = ["Ave2Estimator", "dense_ids"]


def dense_ids(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Map integer ids to ``0..k-1``; negative ids (SWF ``-1``, "unknown") map to ``-1``.

    :return: the mapped array and ``k``, the number of distinct known ids
    """
    values = np.asarray(values, dtype=np.int64)
    out = np.full(values.shape, -1, dtype=np.int64)
    known = values >= 0
    uniq, inv = np.unique(values[known], return_inverse=True)
    out[known] = inv.reshape(-1)
    return out, int(uniq.shape[0])


class Ave2Estimator(Estimator):
    """Mean runtime of the user's last two finished jobs, else the request.

    :param min_history: finished jobs a user needs before the average replaces the
        request (2 = Tsafrir et al. / predictsim; 1 = use a single job's runtime)
    """

    name = "ave2"
    online = True

    def __init__(self, min_history: int = 2) -> None:
        if int(min_history) not in (1, 2):
            raise ValueError(f"min_history must be 1 or 2, got {min_history!r}")
        self.min_history = int(min_history)

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self._uid, nu = dense_ids(workload.user)
        # last and second-to-last finished runtime per user (nan = none yet)
        self._last1 = [float("nan")] * nu
        self._last2 = [float("nan")] * nu
        self._count = [0] * nu
        self._runtime = workload.runtime
        self._request = workload.request

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        uid, rt = self._uid, self._runtime
        last1, last2, count = self._last1, self._last2, self._count
        for j in np.asarray(jobs, dtype=np.int64).tolist():
            u = int(uid[j])
            if u < 0:
                continue
            last2[u] = last1[u]
            last1[u] = float(rt[j])
            count[u] += 1

    def predict(self, job: int, view: SystemView) -> float:
        u = int(self._uid[job])
        req = float(self._request[job])
        if u < 0:
            return req
        c = self._count[u]
        if c < self.min_history:
            return req
        mean = self._last1[u] if c == 1 else 0.5 * (self._last1[u] + self._last2[u])
        return min(max(mean, min(1.0, req)), req)
