"""The online runtime-distribution predictor of chapter 4 (:class:`HMMPredictor`).

An :class:`~hpcgym.sim.estimators.Estimator`: it bins the jobs as they finish,
retrains the :class:`~hpcgym.predictors.hmm.model.CountHMM` on the closed submit bins
and predicts each job's runtime-bin distribution at submission.
"""

from __future__ import annotations

import math
import time

import numpy as np

from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.predictors.hmm.bins import RuntimeBins, distribution_quantile, submit_bin_index
from hpcgym.predictors.hmm.inference import forward_filter
from hpcgym.predictors.hmm.kernels import _safe_log
from hpcgym.predictors.hmm.model import CountHMM
from hpcgym.predictors.hmm.params import CRITERIA, LOAD_MODELS
from hpcgym.workload.core import Workload

__all__ = ["WEEK", "HMMPredictor"]

WEEK = 7 * 86400.0


class HMMPredictor(Estimator):
    """Online runtime-distribution predictor of chapter 4.

    At each submission the predictor returns the job's runtime-bin distribution
    ``p_j = sum_i Pr(q_t = i | O) B_ij`` where ``t`` is the job's submit bin and ``O``
    the information available now (forward variables, [Rabiner]):

    * bins before the first submit bin that still has a job in the system are
      *closed*: all their jobs terminated, their counts are final. Baum-Welch trains
      on exactly these bins (§4: "the Observation sequence period ends before the
      first non-terminated submission"), and their forward variables are cached;
    * from that bin to the job's bin, terminated jobs count as observations,
      running jobs contribute ``Pr(r >= elapsed | q) = sum_{j >= bin(elapsed)} B_ij``
      (§4, no interpolation), waiting jobs nothing.

    Schedule (§4): no prediction before every job of the first week (``warmup``)
    has finished; then Baum-Welch runs from Static-IV until the L1 criterion holds,
    and is restarted (warm, on the longer sequence) as soon as
    ``sqrt(n_t) * L1_last >= eps`` again, ``n_t`` being the jobs of the (growing)
    training sequence and ``L1_last`` the distance of the last iteration.
    ``retrain="weekly"`` instead runs ``rounds`` iterations once a week (the
    thesis' other option). If the closed bins cannot be explained by the model (a
    runtime bin never seen before), Baum-Welch runs at once on them; if the open
    bins cannot, the job gets no prediction (§4).

    :meth:`predict` (the point estimate used by the engine) is the ``quantile``
    (default the median) of the distribution truncated at the request with
    log-uniform mass inside the bins, capped at the request; without a
    distribution it is the request. :meth:`distribution` returns the distribution
    stored at submission (what the probabilistic backfiller truncates later,
    Algorithm 5); the predictor itself never uses user requests (§4).

    :param n_states: ``M`` (16)
    :param submit_bin: ``t_s`` in seconds (900)
    :param runtime_ratio: ``t_r`` (1.8)
    :param n_runtime_bins: ``N``; default: enough bins for the largest request or
        runtime of the bound workload (a machine limit, known in advance)
    :param load_model: ``None`` (thesis' choice for scheduling), ``"geometric"``,
        ``"poisson"``
    :param criterion: Baum-Welch termination, ``"l1"``, ``"linf"`` or ``"fixed"``
    :param eps: criterion parameter (200 for ``l1``)
    :param max_iter: cap on the Baum-Welch iterations of one (re)training
    :param warmup: initial period without predictions, seconds (one week)
    :param retrain: ``"l1"`` (thesis) or ``"weekly"``
    :param retrain_every: period of ``"weekly"`` retraining, seconds
    :param rounds: iterations per ``"weekly"`` retraining
    :param quantile: quantile returned by :meth:`predict`
    :param point: what :meth:`predict` returns to the engine: ``"quantile"`` (the
        default, the truncated distribution's ``quantile``) or ``"request"`` (the user
        request; the distribution is still predicted and stored at each submission).
        The EASY-HMM scheduler uses ``"request"``: the engine then runs plain EASY with
        requests, and the probabilistic backfiller
        (:class:`hpcgym.sim.deciders.ProbabilisticBackfiller`) reads the stored
        distributions (chapter 5).
    """

    name = "hmm"
    online = True
    no_warm_start = (
        "it trains on closed submission bins, a bin closes only when every job submitted in "
        "it has finished, and the jobs of the log still running at the window's start are "
        "never reported finished, so a warm HMM would stop training at the first of them"
    )

    def __init__(
        self,
        n_states: int = 16,
        submit_bin: float = 900.0,
        runtime_ratio: float = 1.8,
        n_runtime_bins: int | None = None,
        load_model: str | None = None,
        criterion: str = "l1",
        eps: float = 200.0,
        max_iter: int = 100,
        warmup: float = WEEK,
        retrain: str = "l1",
        retrain_every: float = WEEK,
        rounds: int = 10,
        quantile: float = 0.5,
        point: str = "quantile",
    ) -> None:
        if load_model not in LOAD_MODELS:
            raise ValueError(
                f"unknown load model {load_model!r}; valid: None, 'geometric', 'poisson'"
            )
        if criterion not in CRITERIA:
            raise ValueError(f"unknown criterion {criterion!r}; valid: {', '.join(CRITERIA)}")
        if retrain not in ("l1", "weekly"):
            raise ValueError(f"unknown retrain schedule {retrain!r}; valid: 'l1', 'weekly'")
        if retrain == "l1" and criterion != "l1":
            raise ValueError("retrain='l1' restarts on the L1 criterion: use criterion='l1'")
        if not 0.0 < quantile < 1.0:
            raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
        if point not in ("quantile", "request"):
            raise ValueError(f"unknown point estimate {point!r}; valid: 'quantile', 'request'")
        if int(n_states) < 1 or not submit_bin > 0 or int(max_iter) < 1:
            raise ValueError("need n_states >= 1, submit_bin > 0 and max_iter >= 1")
        self.n_states = int(n_states)
        self.submit_bin = float(submit_bin)
        self.runtime_ratio = float(runtime_ratio)
        self.n_runtime_bins = n_runtime_bins
        self.load_model = load_model
        self.criterion = criterion
        self.eps = float(eps)
        self.max_iter = int(max_iter)
        self.warmup = float(warmup)
        self.retrain = retrain
        self.retrain_every = float(retrain_every)
        self.rounds = int(rounds)
        self.quantile = float(quantile)
        self.point = point
        self.model: CountHMM | None = None

    # ------------------------------------------------------------------ binding
    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        n = len(workload)
        if self.n_runtime_bins is not None:
            self.bins = RuntimeBins(self.runtime_ratio, int(self.n_runtime_bins))
        else:
            top = float(max(workload.request.max(), workload.runtime.max())) if n else 1.0
            self.bins = RuntimeBins.covering(top, self.runtime_ratio)
        self.edges = self.bins.edges
        self.origin = float(workload.submit[0]) if n else 0.0
        self.job_bin = submit_bin_index(workload.submit, self.submit_bin, self.origin)
        self.n_steps = int(self.job_bin[-1]) + 1 if n else 0
        N = self.bins.n_bins
        self.counts = np.zeros((self.n_steps, N))
        self.finished = np.zeros(n, dtype=bool)
        self.start_time = np.full(n, np.nan)
        self.dists = np.zeros((n, N))
        self.has_dist = np.zeros(n, dtype=bool)
        self._first_unfinished = 0
        self._now = -math.inf
        self.model = None
        self._trained_until = 0  # training sequence = bins [0, _trained_until)
        self._last_distance = math.inf
        self._last_train_time = -math.inf
        self._force_retrain = False
        self._cache_t = 0
        self._cache_alpha: np.ndarray | None = None
        self._logS: np.ndarray | None = None
        self._warm_steps = int(math.ceil(self.warmup / self.submit_bin))
        self.stats: dict[str, float] = {
            "trainings": 0,
            "iterations": 0,
            "train_seconds": 0.0,
            "predictions": 0,
            "no_prediction": 0,
            "predict_seconds": 0.0,
            "reinitialised": 0,
        }
        self.history: list[dict[str, float]] = []

    # --------------------------------------------------------- engine callbacks
    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        jobs = np.asarray(jobs, dtype=np.int64)
        self.start_time[jobs] = np.asarray(start_times, dtype=np.float64)
        if len(jobs):
            self._now = max(self._now, float(np.max(start_times)))

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        jobs = np.asarray(jobs, dtype=np.int64)
        if len(jobs) == 0:
            return
        if self.finished[jobs].any():
            raise ValueError("observe_finished: a job was reported finished twice")
        self.finished[jobs] = True
        # the runtime is revealed at termination
        rb = self.bins.index(self.workload.runtime[jobs])
        np.add.at(self.counts, (self.job_bin[jobs], rb), 1.0)
        self._now = max(self._now, float(np.max(end_times)))
        n = len(self.finished)
        fu = self._first_unfinished
        while fu < n and self.finished[fu]:
            fu += 1
        self._first_unfinished = fu
        self._maybe_train()

    # ------------------------------------------------------------ bookkeeping
    def _closed_until(self, now: float) -> int:
        """First submit bin that may still change: bins before it are closed."""
        tnow = int(math.floor((now - self.origin) / self.submit_bin))
        n_sub = int(np.searchsorted(self.workload.submit, now, side="right"))
        fu = self._first_unfinished
        t = int(self.job_bin[fu]) if fu < n_sub else tnow
        return max(0, min(t, tnow, self.n_steps))

    def _n_train(self, t_end: int) -> int:
        return int(np.searchsorted(self.job_bin, t_end, side="left"))

    def _maybe_train(self) -> None:
        t_end = self._closed_until(self._now)
        if t_end <= self._trained_until:
            return
        if self.model is None:
            if t_end >= self._warm_steps and self._n_train(t_end) > 0:
                self._train(t_end)
            return
        if self._force_retrain:
            self._train(t_end)
        elif self.retrain == "l1":
            if math.sqrt(self._n_train(t_end)) * self._last_distance >= self.eps:
                self._train(t_end)
        elif self._now >= self._last_train_time + self.retrain_every:
            self._train(t_end)

    def _train(self, t_end: int) -> None:
        t0 = time.perf_counter()
        X = self.counts[:t_end]
        N = self.bins.n_bins
        fresh = self.model is None
        if fresh:
            mean_load = float(X.sum()) / max(len(X), 1)
            self.model = CountHMM.static(self.n_states, N, self.load_model, mean_load)
        assert self.model is not None
        crit, eps = (
            ("fixed", float(self.rounds))
            if self.retrain == "weekly"
            else (self.criterion, self.eps)
        )
        if self.retrain == "weekly" and fresh:
            crit, eps = self.criterion, self.eps  # first training runs to convergence
        try:
            res = self.model.fit(X, criterion=crit, eps=eps, max_iter=self.max_iter)
        except ValueError:
            # warm parameters forbid the new sequence (zero transitions): start over
            self.stats["reinitialised"] += 1
            mean_load = float(X.sum()) / max(len(X), 1)
            self.model = CountHMM.static(self.n_states, N, self.load_model, mean_load)
            res = self.model.fit(X, criterion=crit, eps=eps, max_iter=self.max_iter)
        self._trained_until = t_end
        self._last_distance = res.last_distance
        self._last_train_time = self._now
        self._force_retrain = False
        self._cache_t = 0
        self._cache_alpha = None
        B = self.model.params.emission
        S = np.cumsum(B[:, ::-1], axis=1)[:, ::-1]  # S[i, k] = sum_{j >= k} B_ij
        self._logS = _safe_log(np.minimum(S, 1.0))
        dt = time.perf_counter() - t0
        self.stats["trainings"] += 1
        self.stats["iterations"] += res.iterations
        self.stats["train_seconds"] += dt
        self.history.append(
            {
                "time": self._now,
                "bins": float(t_end),
                "jobs": float(res.n_jobs),
                "iterations": float(res.iterations),
                "distance": res.last_distance,
                "converged": float(res.converged),
                "loglik": res.logliks[-1] if res.logliks else math.nan,
                "seconds": dt,
            }
        )

    def _loads(self, a: int, b: int, now: float) -> np.ndarray | None:
        if self.load_model is None:
            return None
        n_sub = int(np.searchsorted(self.workload.submit, now, side="right"))
        lo = int(np.searchsorted(self.job_bin, a, side="left"))
        jb = self.job_bin[lo:n_sub]
        jb = jb[jb < b]
        return np.bincount(jb - a, minlength=b - a).astype(np.float64)

    def _extend_cache(self, t_end: int) -> bool:
        assert self.model is not None
        if self._cache_t >= t_end:
            return True
        a = self._cache_t
        X = self.counts[a:t_end]
        logE = self.model.log_emissions(X, None)  # closed bins: load = counts
        p = self.model.params
        if self._cache_alpha is None:
            res = forward_filter(p.startprob, p.transmat, logE, False)
        else:
            res = forward_filter(self._cache_alpha, p.transmat, logE, True)
        if res is None:
            return False
        self._cache_alpha = res[0][-1].copy()
        self._cache_t = t_end
        return True

    # -------------------------------------------------------------- prediction
    def predict_distribution(
        self, job: int, now: float, view: SystemView | None = None
    ) -> np.ndarray | None:
        """Runtime-bin distribution of ``job`` given what is known at ``now``.

        The result is also stored (see :meth:`distribution`).

        :param view: the engine's view (running jobs and start times); without it the
            starts reported to :meth:`observe_started` are used
        :return: probabilities over :attr:`bins` (sum 1), or ``None`` when there is no
            prediction (first week, or the model cannot explain the current
            observations)
        """
        t0 = time.perf_counter()
        self.stats["predictions"] += 1
        out = self._predict(int(job), float(now), view)
        if out is None:
            self.stats["no_prediction"] += 1
        else:
            self.dists[job] = out
            self.has_dist[job] = True
        self.stats["predict_seconds"] += time.perf_counter() - t0
        return out

    def _predict(self, job: int, now: float, view: SystemView | None) -> np.ndarray | None:
        self._now = max(self._now, now)
        if self.model is None:
            return None
        t_min = self._closed_until(now)
        tq = int(self.job_bin[job])
        t_min = min(t_min, tq)
        if self._cache_t > t_min:  # asked about an older bin than the cached forward pass
            self._cache_t, self._cache_alpha = 0, None
        if not self._extend_cache(t_min):
            # closed bins the model cannot explain: Baum-Welch must run on them now
            self._train(t_min)
            if not self._extend_cache(t_min):
                return None
        model = self.model
        assert model is not None and self._logS is not None
        X = self.counts[t_min : tq + 1]
        logE = model.log_emissions(X, self._loads(t_min, tq + 1, now))
        # running jobs: Pr(r >= elapsed | q) (§4)
        if view is not None:
            run = np.asarray(view.running, dtype=np.int64)
            st = np.asarray(view.start, dtype=np.float64)[run]
        else:
            lo = self._first_unfinished
            cand = np.arange(lo, len(self.finished))
            m = ~self.finished[lo:] & ~np.isnan(self.start_time[lo:])
            run, st = cand[m], self.start_time[lo:][m]
        if len(run):
            rows = self.job_bin[run] - t_min
            keep = (rows >= 0) & (rows < len(X)) & ~self.finished[run]
            if keep.any():
                k = self.bins.index(np.maximum(now - st[keep], 0.0))
                np.add.at(logE, rows[keep], self._logS[:, k].T)
        if not np.all(np.isfinite(logE.max(axis=1))):
            self._force_retrain = True
            return None
        p = model.params
        if self._cache_alpha is None:
            res = forward_filter(p.startprob, p.transmat, logE, False)
        else:
            res = forward_filter(self._cache_alpha, p.transmat, logE, True)
        if res is None:
            self._force_retrain = True
            return None
        return model.predictive(res[0][-1])

    def distribution(self, job: int) -> np.ndarray | None:
        """The distribution predicted at ``job``'s submission (``None`` if it had none)."""
        return self.dists[job] if self.has_dist[job] else None

    def predict(self, job: int, view: SystemView) -> float:
        """Point estimate: the ``quantile`` of the distribution truncated at the request
        (or the request with ``point="request"``). Predicts and stores the distribution."""
        d = self.predict_distribution(job, view.now, view)
        req = float(self.workload.request[job])
        if d is None or self.point == "request":
            return req
        return distribution_quantile(d, self.edges, self.quantile, req)
