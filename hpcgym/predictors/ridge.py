"""An online ridge regression of the log accuracy ``log(runtime / request)``: a runtime
predictor fitted for *ranking* jobs, not for reservations.

E-Loss (:mod:`.eloss`) is built to under-predict (its loss punishes over-prediction
squared), which is what a reservation needs; as a *ranking* of the jobs by runtime it is
no better than the request on the real traces (docs/research/findings.md). This predictor keeps
E-Loss's 20 submission-time features (Gaussier et al. Table 2, computed the same way)
and fits, one finished job at a time, the plain least-squares model

.. math:: \\log(p_j / \\tilde p_j) \\approx w^T d(x_j),
          \\quad w = (D^T D + \\lambda I)^{-1} D^T y

over every finished job so far (``D``'s rows are the finished jobs' inputs), where
``d(x)`` (:func:`design`) is a bias, the features (``log1p`` of the non-negative ones,
the cyclic and ratio ones as they are), three "has history" flags and the squares of the
first eight transformed features: 32 inputs. The target is the log of the accuracy
``p / p~`` (runtime over request), so the ridge shrinks toward *the request itself*: with
no finished job the prediction is the request, and it moves away from it only as fast as
the data allow. The prediction is ``p~ exp(w^T d(x))``, capped at the request and
floored at 1 s.

The sufficient statistics ``D^T D`` and ``D^T y`` grow by one outer product per finished
job; ``w`` is solved again (a 32 x 32 system) before the next prediction that follows a
completion. Nothing of a job's own runtime is read before it finishes.

With ``templates=True`` four inputs more describe the user's *similar* jobs, in the sense
of the job templates of Gibbons (1997) and Smith, Foster & Taylor (1998): the log
accuracy ``log(p / p~)`` of the user's last finished job with the same request, and of
the last one with the same request and processor count, each with a 0/1 "exists" flag
(0 and 0 without such a job).

Documented choices (docs/predictors.md): the model is linear in the inputs (no pairwise
products, unlike E-Loss's 231-term polynomial); the target is floored at 1 s; ``lam``
(default 1.0) was not tuned on any test window; a template is keyed by the user id
(unknown users, id < 0, have none).
"""

from __future__ import annotations

import math

import numpy as np

from hpcgym.predictors.base import SystemView
from hpcgym.predictors.eloss import FEATURES, ELossEstimator
from hpcgym.workload.core import Workload

__all__ = ["FLAGS", "LINEAR", "N_INPUTS", "N_TEMPLATE", "LogRidgeEstimator", "design"]

#: Features used as they are (bounded or a ratio); the others enter as ``log1p``.
LINEAR: tuple[str, ...] = ("day_cos", "day_sin", "week_cos", "week_sin", "procs_over_ave_hist")
#: Features whose being 0 means "no history": a 0/1 flag each.
FLAGS: tuple[str, ...] = ("last1", "ave2", "ave_all")
_LIN = np.array([f in LINEAR for f in FEATURES])
_FLAG_COLS = np.array([FEATURES.index(f) for f in FLAGS])
#: Squared transformed features: the first eight (request and the user's history).
N_SQUARED = 8
#: Inputs of the regression: bias, features, flags, squares.
N_INPUTS = 1 + len(FEATURES) + len(FLAGS) + N_SQUARED
#: Inputs added by ``templates=True``.
N_TEMPLATE = 4


def design(x: np.ndarray) -> np.ndarray:
    """The regression's inputs of E-Loss feature rows.

    :param x: features in :data:`~hpcgym.predictors.eloss.FEATURES` order, ``(n, 20)``
        or ``(20,)``
    :return: ``(n, N_INPUTS)`` (or ``(N_INPUTS,)``): a bias, the features (``log1p`` of
        the non-negative ones, :data:`LINEAR` as they are), the :data:`FLAGS` and the
        squares of the first :data:`N_SQUARED` transformed features
    """
    x = np.asarray(x, dtype=np.float64)
    one = x.ndim == 1
    x2 = np.atleast_2d(x)
    if x2.shape[1] != len(FEATURES):
        raise ValueError(f"expected {len(FEATURES)} E-Loss features per row, got {x2.shape[1]}")
    t = np.where(_LIN, x2, np.log1p(np.maximum(x2, 0.0)))
    flags = (x2[:, _FLAG_COLS] > 0).astype(np.float64)
    d = np.concatenate([np.ones((len(x2), 1)), t, flags, t[:, :N_SQUARED] ** 2], axis=1)
    return d[0] if one else d


class LogRidgeEstimator(ELossEstimator):
    """Online ridge regression of ``log(runtime / request)`` on E-Loss's features.

    :param lam: ridge coefficient (on every weight, the bias included: with little data
        the prediction stays near the request)
    :param local_time: use the site's local time for the time-of-day/week features
        (as :class:`~hpcgym.predictors.eloss.ELossEstimator`)
    :param missing: value of the last1..3 / AVE2 / AVE3 features without history:
        ``"zero"`` (default) or ``"request"`` (as E-Loss)
    :param templates: add the :data:`N_TEMPLATE` inputs of the user's similar jobs (same
        request; same request and processors)
    :param keep_features: keep every job's E-Loss features in ``X`` (as
        :class:`~hpcgym.predictors.eloss.ELossEstimator`; off by default)
    """

    name = "log-ridge"
    online = True

    def __init__(
        self,
        lam: float = 1.0,
        local_time: bool = True,
        missing: str = "zero",
        templates: bool = False,
        keep_features: bool = False,
    ) -> None:
        if not (lam > 0 and math.isfinite(lam)):
            raise ValueError(f"lam must be a positive finite number, got {lam!r}")
        super().__init__(local_time=local_time, missing=missing, keep_features=keep_features)
        self.ridge = float(lam)
        self.templates = bool(templates)
        opts = ([f"lam={lam:g}"] if lam != 1.0 else []) + (["templates=true"] if templates else [])
        self.name = "log-ridge" + (":" + ",".join(opts) if opts else "")
        self.n_inputs = N_INPUTS + (N_TEMPLATE if self.templates else 0)

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)  # self._pending: d(x) of submitted, unfinished jobs
        self._a = self.ridge * np.eye(self.n_inputs)
        self._b = np.zeros(self.n_inputs)
        self.weights: np.ndarray = np.zeros(self.n_inputs)
        self._stale = False
        # log accuracy of the user's last finished job per (user, request) and
        # (user, request, procs)
        self._same_req: dict[tuple[int, float], float] = {}
        self._same_rq: dict[tuple[int, float, float], float] = {}

    def _template_inputs(self, job: int) -> list[float]:
        u = self._uid[job]
        if u < 0:
            return [0.0] * N_TEMPLATE
        req = self._req[job]
        a = self._same_req.get((u, req))
        b = self._same_rq.get((u, req, self._procs[job]))
        return [
            0.0 if a is None else a,
            0.0 if a is None else 1.0,
            0.0 if b is None else b,
            0.0 if b is None else 1.0,
        ]

    def predict(self, job: int, view: SystemView) -> float:
        d = design(self.features(job, view))
        if self.templates:
            d = np.concatenate([d, self._template_inputs(job)])
        self._pending[job] = d
        if self._stale:
            self.weights = np.linalg.solve(self._a, self._b)
            self._stale = False
        f = float(d @ self.weights)
        self.predictions[job] = f
        req = self._req[job]
        est = req * math.exp(min(f, 0.0))  # capped at the request
        return min(max(est, min(1.0, req)), req)

    def _learn(self, j: int) -> None:
        d = self._take_pending(j)
        y = math.log(max(self._runtime[j], 1.0) / max(self._req[j], 1.0))
        u = self._uid[j]
        if self.templates and u >= 0:
            req = self._req[j]
            self._same_req[(u, req)] = y
            self._same_rq[(u, req, self._procs[j])] = y
        self._a += np.outer(d, d)
        self._b += y * d
        self._stale = True
        self.trained += 1
