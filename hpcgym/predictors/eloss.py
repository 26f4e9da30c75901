"""The E-Loss learned runtime predictor of Gaussier, Glesser, Reis & Trystram (SC'15, §4).

An online l2-regularised polynomial regression (Eq. 1-2)

.. math:: f(w, x) = w^T \\Phi(x), \\quad
          \\Phi(x) = (1, x_1..x_n, x_1^2..x_n^2, x_k x_l \\;(k<l)),
          \\quad w \\in R^{1 + 2n + \\binom{n}{2}}

over the features of Table 2 (:data:`FEATURES`, n = 20, so 231 weights), trained one
finished job at a time with the Normalized Adaptive Gradient (NAG) of Ross, Mineiro &
Langford ("Normalized online learning", UAI 2013, Algorithm 2) on the asymmetric
weighted loss family of §4.2:

.. math:: \\mathcal{L} = \\gamma_j L_{over}(f - p_j) \\text{ if } f \\ge p_j,
          \\quad \\gamma_j L_{under}(p_j - f) \\text{ if } f < p_j,

with ``L_over, L_under`` in {z, z^2} (Table 5) and ``gamma_j`` one of the five
weights of Table 3 (:data:`WEIGHTS`). The default is the paper's choice, Eq. 3
("E-Loss"): squared over-prediction, linear under-prediction, ``gamma = log(q p)``.

NAG (Ross et al. Alg. 2), per example ``x`` (here ``Phi(x)``) with label ``p``::

    for each i with |x_i| > s_i:  w_i <- w_i s_i / |x_i| ;  s_i <- |x_i|
    N <- N + sum_i x_i^2 / s_i^2
    g <- gradient of  L(w^T x, p) + lambda/2 ||w||^2
    G_i <- G_i + g_i^2
    w_i <- w_i - eta sqrt(t / N) g_i / (s_i sqrt(G_i))        (t = examples so far)

Documented choices (see docs/predictors.md)

* Features are computed at the job's submission (from the history of finished jobs
  and the :class:`~hpcgym.predictors.base.SystemView`), stored, and used to train the
  model when the job finishes, with its actual runtime as the label. A job's own
  runtime is never read before it finishes.
* "Last/second/third-to-last job of the user" and the AVE features are in completion
  order (the order of :meth:`observe_finished`); AVE2/AVE3 average the available
  runtimes when the user has fewer than 2/3 finished jobs, and are 0 with none (the
  Table 2 "0 if N/A" convention). AVE_hist(q) is the mean processor count of the
  user's finished jobs; ``q / AVE_hist(q)`` is 0 without history.
* Unknown users (negative SWF user id) have no history and no "own" running jobs:
  all user features are 0.
* Time of day / week: the absolute submission time is ``submit + UnixStartTime``
  (``Workload.meta``) shifted to the site's local time (``TimeZoneString`` via
  :mod:`zoneinfo`, else the fixed ``TimeZone`` offset) when ``local_time=True``; without
  ``UnixStartTime`` the trace seconds are used as in the authors' simulator. Weeks
  start on Monday 00:00. (A constant phase shift is a linear combination of the
  sin/cos features, so the model class does not depend on it.)
* Eq. 2 writes the regulariser ``lambda ||w||_2``; we use the usual
  ``lambda/2 ||w||_2^2`` (gradient ``lambda w``), as the authors' code does.
* Weights gamma <= 0 (e.g. ``11 + log(1/(q p))`` for jobs of area > e^11, or
  ``log(q p)`` for q p <= 1) are clamped to 0: the paper requires gamma > 0 and a
  negative weight would make the loss concave. Logarithms are natural.
* Eq. 3 prints ``log(r_j p_j)``; r_j is the release date in §2.3's notation, which
  contradicts Table 3 and the text ("a weighting factor that increases with the size
  of jobs in terms of p and q"), so we use ``log(q_j p_j)``.
* The paper does not say how a model output ``f = w^T Phi(x) <= 0`` becomes a
  runtime. The authors' simulator (predictsim, which produced the published tables)
  uses ``max(1, |f|)`` capped at the request; that is the default here
  (``negative="abs"``). ``negative="floor"`` clips ``f`` itself to
  ``[min(1 s, request), request]``. The choice matters: the rare over-predictions
  (squared branch, gradient ``2 gamma (f - p) Phi``) dominate NAG's accumulated ``G_i``
  (KTH-SP2: 0.4 % of the training steps, ~100 % of ``G_i`` for the median weight), so
  the linear under-prediction steps barely move the weights, each over-prediction
  kicks the output down, and 65-95 % of the outputs end up negative, ``|f|`` growing
  with the job's size (rank correlation with the actual runtime on KTH-SP2: ``f``
  -0.52, ``|f|`` +0.59). With ``"floor"`` 80-97 % of the predictions are the 1 s floor.
* The authors' simulator fills the last1..3 / AVE2 / AVE3 features of a user without
  history with the job's request (``missing="request"``); Table 2 says 0 (default).
* ``eta`` (NAG's scale-free learning rate, in seconds) and ``lam`` are not given in
  the paper; the defaults are those of the authors' experiment configuration
  (predictsim: ``eta=5000``, ``lambda=4e9``).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from hpcgym.predictors.ave import dense_ids
from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.workload.core import Workload

__all__ = [
    "BASIS_LOSSES",
    "FEATURES",
    "MISSING",
    "OUTPUTS",
    "WEIGHTS",
    "ELossEstimator",
    "NAG",
    "asymmetric_loss",
    "job_weights",
    "polynomial_features",
    "submit_clock",
]

#: Table 2 of Gaussier et al., in the order of the feature vector
FEATURES: tuple[str, ...] = (
    "request",  # p~_j, the requested time
    "last1",  # p_{j-1}^{(k)}: runtime of the user's last finished job (0 if none)
    "last2",  # p_{j-2}^{(k)} (0 if N/A)
    "last3",  # p_{j-3}^{(k)} (0 if N/A)
    "ave2",  # AVE_2^{(k)}(p)
    "ave3",  # AVE_3^{(k)}(p)
    "ave_all",  # AVE_all^{(k)}(p)
    "procs",  # q_j
    "ave_hist_procs",  # AVE_{hist,r_j}^{(k)}(q)
    "procs_over_ave_hist",  # q_j / AVE_{hist,r_j}^{(k)}(q)
    "ave_curr_procs",  # AVE_{curr,r_j}^{(k)}(q): mean procs of the user's running jobs
    "jobs_running",  # JOBS CURRENTLY RUNNING (of the user)
    "longest_running",  # LONGEST CURRENT RUNNING TIME (so far, of the user's running jobs)
    "sum_running",  # SUM CURRENT RUNNING TIMES
    "occupied",  # OCCUPIED RESOURCES (processors of the user's running jobs)
    "break_time",  # BREAK TIME: since the user's last job completion (0 if none)
    "day_cos",  # cos(2 pi (r_j mod t_day) / t_day)
    "day_sin",
    "week_cos",  # cos(2 pi (r_j mod t_week) / t_week)
    "week_sin",
)
N_FEATURES = len(FEATURES)

#: basis losses L(z), z >= 0 (Gaussier et al. §4.2, Table 5)
BASIS_LOSSES: dict[str, str] = {"linear": "L(z) = z", "squared": "L(z) = z^2"}

#: Table 3 weights gamma_j (q = processors, p = actual runtime, natural log)
WEIGHTS: dict[str, str] = {
    "constant": "1",
    "short-wide": "5 + log(q/p)  (short jobs with large resource request)",
    "long-narrow": "5 + log(p/q)  (long jobs with small resource request)",
    "small-area": "11 + log(1/(q p))  (jobs of small area)",
    "large-area": "log(q p)  (jobs of large area; E-Loss, Eq. 3)",
}

#: how the model output f becomes a runtime estimate (then clipped to [min(1, request), request])
OUTPUTS: dict[str, str] = {
    "abs": "|f|, as the authors' simulator (predictsim: max(1, int(|f|)))",
    "floor": "f itself: every f <= 1 s becomes the 1 s floor",
}

#: value of the last1..3 / AVE2 / AVE3 features without enough finished jobs of the user
MISSING: dict[str, str] = {
    "zero": "0 (Table 2: 'or 0 if such a job does not exist')",
    "request": "the job's own request (the authors' simulator)",
}

_DAY = 86400.0
_WEEK = 7 * _DAY
_MONDAY = 4 * _DAY  # 1970-01-01 was a Thursday: the first Monday is 4 days later


def job_weights(kind: str, procs: Any, runtime: Any, offset: float = 0.0) -> np.ndarray:
    """Table 3 weights ``gamma_j`` (plus ``offset``, clamped at 0), vectorised.

    :param kind: one of :data:`WEIGHTS`
    :param procs: q_j
    :param runtime: actual runtime p_j
    :param offset: constant added before the clamp (the authors' configuration uses
        ``1 + log(q p)`` for the large-area weight)
    """
    q = np.asarray(procs, dtype=np.float64)
    p = np.asarray(runtime, dtype=np.float64)
    if kind == "constant":
        g = np.ones(np.broadcast(q, p).shape)
    elif kind == "short-wide":
        g = 5.0 + np.log(q / p)
    elif kind == "long-narrow":
        g = 5.0 + np.log(p / q)
    elif kind == "small-area":
        g = 11.0 - np.log(q * p)
    elif kind == "large-area":
        g = np.log(q * p)
    else:
        raise ValueError(f"unknown weight {kind!r}; valid choices: {', '.join(WEIGHTS)}")
    return np.maximum(g + offset, 0.0)


def asymmetric_loss(
    pred: Any,
    actual: Any,
    procs: Any,
    over: str = "squared",
    under: str = "linear",
    weight: str = "large-area",
) -> np.ndarray:
    """The loss family of §4.2 per job (default: E-Loss, Eq. 3), vectorised.

    :param pred: predictions f(x_j)
    :param actual: actual runtimes p_j
    :param procs: processors q_j (for the weight)
    :param over: basis loss of over-prediction (f >= p), one of :data:`BASIS_LOSSES`
    :param under: basis loss of under-prediction (f < p)
    :param weight: one of :data:`WEIGHTS`
    """
    f = np.asarray(pred, dtype=np.float64)
    p = np.asarray(actual, dtype=np.float64)
    for side, v in (("over", over), ("under", under)):
        if v not in BASIS_LOSSES:
            raise ValueError(
                f"unknown {side} basis loss {v!r}; valid choices: {', '.join(BASIS_LOSSES)}"
            )
    e = f - p
    lo = e * e if over == "squared" else e
    lu = e * e if under == "squared" else -e
    return job_weights(weight, procs, p) * np.where(e >= 0, lo, lu)


def polynomial_features(x: np.ndarray) -> np.ndarray:
    """Phi(x) of Eq. 1: ``(1, x, x^2, x_k x_l for k < l)``, length ``1 + 2n + n(n-1)/2``."""
    n = x.shape[0]
    iu, ju = np.triu_indices(n, k=1)
    return np.concatenate(([1.0], x, x * x, x[iu] * x[ju]))


class NAG:
    """Normalized Adaptive Gradient (Ross, Mineiro & Langford 2013, Algorithm 2) for a
    linear model, with a per-example loss derivative and l2 regularisation.

    :param dim: number of weights
    :param eta: scale-free learning rate (in units of the label)
    :param lam: l2 coefficient (penalty ``lam/2 ||w||^2``)
    """

    def __init__(self, dim: int, eta: float, lam: float) -> None:
        self.eta = float(eta)
        self.lam = float(lam)
        self.w = np.zeros(dim)
        self.s = np.zeros(dim)  # largest |x_i| seen
        self.inv_s = np.zeros(dim)  # 1 / s_i (0 while s_i = 0)
        self.G = np.zeros(dim)  # sum of squared gradients
        self.N = 0.0
        self.t = 0

    def predict(self, phi: np.ndarray) -> float:
        return float(self.w @ phi)

    def rescale(self, phi: np.ndarray) -> None:
        """Lines 5-9: grow the per-feature scales and shrink the weights accordingly."""
        ax = np.abs(phi)
        grow = ax > self.s
        if grow.any():
            i = np.flatnonzero(grow)
            self.w[i] *= self.s[i] / ax[i]
            self.s[i] = ax[i]
            self.inv_s[i] = 1.0 / ax[i]

    def update(self, phi: np.ndarray, dloss_df: float) -> None:
        """One NAG step on an example whose loss derivative w.r.t. the prediction
        (evaluated at the current weights, after :meth:`rescale`) is ``dloss_df``.
        """
        self.t += 1
        z = phi * self.inv_s
        self.N += float(z @ z)
        g = dloss_df * phi
        if self.lam:
            g += self.lam * self.w
        self.G += g * g
        # g_i = 0 wherever G_i = 0, so the tiny constant only avoids 0/0
        self.w -= (
            (self.eta * math.sqrt(self.t / self.N)) * g * self.inv_s / np.sqrt(self.G + 1e-300)
        )


def submit_clock(workload: Workload, local_time: bool = True) -> tuple[np.ndarray, str]:
    """Absolute (local) submission times used for the time-of-day/week features.

    :return: seconds since the Unix epoch in local wall-clock time (or trace seconds
        when the workload has no ``UnixStartTime``) and a description of the reference
    """
    submit = np.asarray(workload.submit, dtype=np.float64)
    meta = workload.meta or {}
    raw = meta.get("UnixStartTime")
    if raw is None:
        return submit.copy(), "trace seconds (no UnixStartTime in the header)"
    try:
        unix0 = float(raw)
    except (TypeError, ValueError):
        raise ValueError(
            f"workload {workload.name!r}: header UnixStartTime={raw!r} is not a number"
        ) from None
    t = submit + unix0
    if not local_time:
        return t, "UTC (UnixStartTime)"
    zone = meta.get("TimeZoneString")
    if zone:
        try:
            from zoneinfo import ZoneInfo

            tz = ZoneInfo(str(zone).strip())
        except Exception:  # unknown zone or no tz database: fall through to TimeZone
            tz = None
        if tz is not None:
            uniq, inv = np.unique(t, return_inverse=True)
            off = np.empty(uniq.shape[0])
            for i, v in enumerate(uniq.tolist()):
                d = datetime.fromtimestamp(v, timezone.utc).astimezone(tz).utcoffset()
                off[i] = (d or timedelta(0)).total_seconds()
            return t + off[inv.reshape(-1)], f"local time {zone} (UnixStartTime)"
    fixed = meta.get("TimeZone")
    if fixed is not None:
        try:
            return t + float(fixed), f"UTC{float(fixed) / 3600:+g}h (UnixStartTime, TimeZone)"
        except (TypeError, ValueError):
            pass
    return t, "UTC (UnixStartTime; no usable time zone)"


class ELossEstimator(Estimator):
    """Online polynomial regression trained with NAG on the asymmetric loss (E-Loss).

    :param over: basis loss for over-prediction (f >= p): ``"squared"`` (E-Loss) or ``"linear"``
    :param under: basis loss for under-prediction (f < p): ``"linear"`` (E-Loss) or ``"squared"``
    :param weight: Table 3 weight, one of :data:`WEIGHTS` (E-Loss: ``"large-area"``)
    :param eta: NAG learning rate in seconds (default from the authors' configuration)
    :param lam: l2 regularisation coefficient
    :param local_time: use the site's local time for the time-of-day/week features
    :param negative: how the model output ``f`` becomes a runtime (before the clip to
        ``[min(1 s, request), request]``): ``"abs"`` uses ``|f|`` as the authors'
        simulator does (default, see :data:`OUTPUTS`), ``"floor"`` keeps ``f`` (so every
        ``f <= 1`` becomes the 1 s floor)
    :param missing: value of the last1..3 / AVE2 / AVE3 features when the user has no such
        finished job: ``"zero"`` (Table 2's "0 if N/A", default) or ``"request"`` (the
        authors' simulator: the job's own request)
    :param gamma_offset: constant added to the Table 3 weight before the clamp at 0 (the
        authors' configuration file uses ``1 + log(q p)``, i.e. ``gamma_offset=1``)
    :param keep_features: keep every job's Table 2 features in :attr:`X` (``(n_jobs, 20)``,
        rows of jobs not yet submitted are 0) for analysis; off by default, since the
        model never reads them again (they are 20 floats a job of the whole trace, most of
        a warm-started estimator's state) and :attr:`X` is then ``None``
    """

    name = "eloss"
    online = True
    warm_static = (
        "workload",
        "rng",
        "_uid_arr",
        "_uid",
        "_req",
        "_procs_arr",
        "_procs",
        "_runtime",
        "_gamma",
        "_clock",
        "_iu",
        "_ju",
    )

    def __init__(
        self,
        over: str = "squared",
        under: str = "linear",
        weight: str = "large-area",
        eta: float = 5000.0,
        lam: float = 4e9,
        local_time: bool = True,
        negative: str = "abs",
        missing: str = "zero",
        gamma_offset: float = 0.0,
        keep_features: bool = False,
    ) -> None:
        for side, v in (("over", over), ("under", under)):
            if v not in BASIS_LOSSES:
                raise ValueError(
                    f"unknown {side} basis loss {v!r}; valid choices: {', '.join(BASIS_LOSSES)}"
                )
        if weight not in WEIGHTS:
            raise ValueError(f"unknown weight {weight!r}; valid choices: {', '.join(WEIGHTS)}")
        if not (eta > 0 and math.isfinite(eta)):
            raise ValueError(f"eta must be a positive number, got {eta!r}")
        if not (lam >= 0 and math.isfinite(lam)):
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
        if negative not in OUTPUTS:
            raise ValueError(f"unknown negative={negative!r}; valid choices: {', '.join(OUTPUTS)}")
        if missing not in MISSING:
            raise ValueError(f"unknown missing={missing!r}; valid choices: {', '.join(MISSING)}")
        if not math.isfinite(gamma_offset):
            raise ValueError(f"gamma_offset must be a finite number, got {gamma_offset!r}")
        self.over, self.under, self.weight = over, under, weight
        self.eta, self.lam = float(eta), float(lam)
        self.local_time = bool(local_time)
        self.negative, self.missing = negative, missing
        self.gamma_offset = float(gamma_offset)
        self.keep_features = bool(keep_features)
        if (over, under, weight) != ("squared", "linear", "large-area"):
            self.name = f"eloss:over={over},under={under},weight={weight}"
        n = N_FEATURES
        self.dim = 1 + 2 * n + n * (n - 1) // 2
        self._iu, self._ju = np.triu_indices(n, k=1)

    # ------------------------------------------------------------------ setup
    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        n = len(workload)
        self._uid_arr, nu = dense_ids(workload.user)
        self._uid = self._uid_arr.tolist()
        self._req = workload.request.astype(np.float64).tolist()
        self._procs_arr = workload.procs.astype(np.float64)
        self._procs = self._procs_arr.tolist()
        self._runtime = workload.runtime.astype(np.float64).tolist()
        # Table 3 weights; they use the actual runtime, so they are read only in _learn,
        # after the job has finished
        self._gamma = job_weights(
            self.weight, self._procs_arr, workload.runtime, self.gamma_offset
        ).tolist()
        clock, self.time_reference = submit_clock(workload, self.local_time)
        day = 2.0 * np.pi * np.mod(clock, _DAY) / _DAY
        week = 2.0 * np.pi * np.mod(clock - _MONDAY, _WEEK) / _WEEK
        self._clock = np.stack(
            [np.cos(day), np.sin(day), np.cos(week), np.sin(week)], axis=1
        ).tolist()
        # per-user history of finished jobs
        self._l1 = [0.0] * nu
        self._l2 = [0.0] * nu
        self._l3 = [0.0] * nu
        self._cnt = [0] * nu
        self._sum_rt = [0.0] * nu
        self._sum_q = [0.0] * nu
        self._last_end = [float("nan")] * nu
        # every job's features at its submission (keep_features), else one row reused
        self.X: np.ndarray | None = np.zeros((n, N_FEATURES)) if self.keep_features else None
        self._x = np.zeros(N_FEATURES)
        self._pending: dict[int, np.ndarray] = {}  # Phi(x) of submitted, unfinished jobs
        self.predictions = np.full(n, np.nan)  # raw model outputs w^T Phi(x) (unclipped)
        self.model = NAG(self.dim, self.eta, self.lam)
        self._sq_over = self.over == "squared"
        self._sq_under = self.under == "squared"
        self.trained = 0

    def _features_into(self, phi: np.ndarray, x: np.ndarray) -> np.ndarray:
        n = N_FEATURES
        phi[1 : n + 1] = x
        np.multiply(x, x, out=phi[n + 1 : 2 * n + 1])
        np.multiply(x[self._iu], x[self._ju], out=phi[2 * n + 1 :])
        return phi

    # --------------------------------------------------------------- features
    def features(self, job: int, view: SystemView) -> np.ndarray:
        """The Table 2 feature vector of ``job`` submitted now: the row ``X[job]`` with
        ``keep_features``, else a buffer that the next call overwrites."""
        u = self._uid[job]
        q = self._procs[job]
        now = view.now
        # value of last1..3 / AVE2 / AVE3 without such a finished job (AVE_all stays 0)
        na = self._req[job] if self.missing == "request" else 0.0
        hist = [na, na, na, na, na, 0.0]  # last1..3, ave2, ave3, ave_all
        user_q = [0.0, 0.0]  # ave_hist_procs, procs_over_ave_hist
        cur = [0.0] * 5  # ave_curr_procs, jobs_running, longest, sum, occupied
        brk = 0.0
        if u >= 0:
            c = self._cnt[u]
            if c:
                l1, l2, l3 = self._l1[u], self._l2[u], self._l3[u]
                a2 = l1 if c == 1 else 0.5 * (l1 + l2)
                a3 = a2 if c <= 2 else (l1 + l2 + l3) / 3.0
                hist = [l1, l2 if c > 1 else na, l3 if c > 2 else na, a2, a3, self._sum_rt[u] / c]
                aq = self._sum_q[u] / c
                user_q = [aq, q / aq]
                brk = now - self._last_end[u]
            run = view.running
            if run.shape[0]:
                mine = run[self._uid_arr[run] == u]
                k = mine.shape[0]
                if k:
                    el = now - view.start[mine]
                    occ = float(self._procs_arr[mine].sum())
                    cur = [occ / k, float(k), float(el.max()), float(el.sum()), occ]
        x = self._x if self.X is None else self.X[job]
        x[:] = [self._req[job], *hist, q, *user_q, *cur, brk, *self._clock[job]]
        return x

    # ------------------------------------------------------------- interface
    def predict(self, job: int, view: SystemView) -> float:
        x = self.features(job, view)
        phi = self._features_into(np.empty(self.dim), x)
        phi[0] = 1.0
        self._pending[job] = phi
        f = self.model.predict(phi)
        self.predictions[job] = f
        req = self._req[job]
        if not math.isfinite(f):
            return req
        if self.negative == "abs":
            f = abs(f)
        return min(max(f, min(1.0, req)), req)

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        ends = np.asarray(end_times, dtype=np.float64).tolist()
        for j, end in zip(np.asarray(jobs, dtype=np.int64).tolist(), ends, strict=True):
            self._learn(j)
            u = self._uid[j]
            if u < 0:
                continue
            self._l3[u] = self._l2[u]
            self._l2[u] = self._l1[u]
            p = self._runtime[j]
            self._l1[u] = p
            self._cnt[u] += 1
            self._sum_rt[u] += p
            self._sum_q[u] += self._procs[j]
            self._last_end[u] = end

    def _take_pending(self, j: int) -> np.ndarray:
        """The model inputs stored at ``j``'s prediction (removed; an error if none)."""
        x = self._pending.pop(j, None)
        if x is None:
            raise RuntimeError(
                f"{self.name}: job {j} finished but was never predicted; the engine must "
                f"call predict() at each job's submission before reporting it finished"
            )
        return x

    def _learn(self, j: int) -> None:
        phi = self._take_pending(j)
        model = self.model
        model.rescale(phi)
        p = self._runtime[j]
        e = model.predict(phi) - p
        if e > 0:
            d = 2.0 * e if self._sq_over else 1.0
        elif e < 0:
            d = 2.0 * e if self._sq_under else -1.0
        else:
            d = 0.0
        model.update(phi, self._gamma[j] * d)
        self.trained += 1
