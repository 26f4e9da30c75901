"""Feeding an online runtime estimator from a running simulation, and capping
estimates the way the engine uses them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim.estimators import Estimator, SystemView

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation

__all__ = ["EstimatorFeed", "cap_estimates"]


def cap_estimates(est: np.ndarray, request: np.ndarray) -> np.ndarray:
    """Estimates as the engine uses them: non-finite -> the request; then clipped to
    ``[min(1 s, request), request]``."""
    est = np.where(np.isfinite(est), est, request)
    return np.clip(est, np.minimum(1.0, request), request)


class EstimatorFeed:
    """Keeps an online :class:`Estimator` in step with a :class:`Simulation`.

    :meth:`predict` first tells the estimator about every job that finished
    (``observe_finished``, completion order) and started (``observe_started``) since
    the previous call, then asks it for the jobs ``lo .. hi-1`` (submitted now) with a
    :class:`SystemView` of the current state, and writes the capped estimates into
    ``out``. The engine uses it for its own estimator; the env uses a second one for
    an optional feature predictor.
    """

    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self.finished_seen = 0
        self.started_seen = 0

    def predict(self, sim: Simulation, lo: int, hi: int, out: np.ndarray) -> None:
        est = self.estimator
        JF, JI, C = sim.JF, sim.JI, sim.C
        nfin = int(C[K.C_NFIN])
        if nfin > self.finished_seen:
            jobs = JI[K.I_FIN, self.finished_seen : nfin].copy()
            est.observe_finished(jobs, JF[K.F_START, jobs] + JF[K.F_RUNTIME, jobs])
            self.finished_seen = nfin
        nst = int(C[K.C_NSTART])
        if nst > self.started_seen:
            jobs = JI[K.I_STARTLOG, self.started_seen : nst].copy()
            est.observe_started(jobs, JF[K.F_START, jobs])
            self.started_seen = nst
        if hi <= lo:
            return
        view = SystemView(
            now=sim.now,
            running=JI[K.I_RUN, : int(C[K.C_RLEN])].copy(),
            start=JF[K.F_START],
            free=int(C[K.C_FREE]),
            machine_size=int(C[K.C_M]),
        )
        req = JF[K.F_REQUEST]
        for j in range(lo, hi):
            v = float(est.predict(j, view))
            if not np.isfinite(v):
                v = req[j]
            out[j] = min(max(v, min(1.0, req[j])), req[j])
