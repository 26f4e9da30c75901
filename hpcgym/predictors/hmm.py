"""Nissimov's hidden-Markov-model runtime distributions (thesis chapters 2-4).

Reference: A. Nissimov (supervisor D. G. Feitelson), *Locality and its usage in
parallel job runtime distribution modeling using HMM*, M.Sc. thesis, Hebrew
University, 2006 (``/work/shared/papers/003_*``). Section numbers below are the
thesis'. The full model, every equation and every documented choice are in
``docs/hmm.md``.

The model
=========

* **Discretisation** (§2.2). Submit times are cut into bins of ``t_s`` seconds
  (default 15 min, §5.3); runtimes into bins of constant ratio ``t_r`` in log space
  (default 1.8). Runtimes recorded below 1.5 s (SWF rounds to whole seconds, so 0 s
  and 1 s) share the lowest bin. :class:`RuntimeBins`, :func:`submit_bin_index`.
* **Observation** (§3.1). The signal of submit bin ``t`` is the multiset of runtime
  bins of its jobs, a count vector ``x_t`` over the ``N`` runtime bins.
* **HMM** with ``M`` hidden states (default 16). State ``i`` emits the jobs of a
  bin independently from its runtime distribution ``B_i``:
  ``Pr(x_t | q_t = i) = prod_j B_ij ** x_jt`` -- an empty bin has emission 1, so
  empty bins only let time pass (§3.1 formula). In log space the whole emission
  matrix is ``X @ log(B).T``. Optional load modelling multiplies a geometric or
  Poisson factor ``Pr(l_t | q_t = i)`` of the bin's job count (§3.1, §3.4.4).
* **Baum-Welch** (Rabiner's EM, the thesis' M-step ``B_ij = sum_t g_t(i) x_jt /
  sum_tk g_t(i) x_kt``), numerically stable: scaled forward-backward whose
  emissions are shifted by their per-step maximum in log space, with a per-step
  log-domain fallback and a pure log-domain fallback kernel. Initialisation:
  Static-IV (Algorithm 3) with uniform ``A`` and ``pi`` (§3.2). Termination
  (§3.3): ``L1`` (default, ``sqrt(n_t) * L1(theta, theta') < eps``, ``eps = 200``,
  ``n_t`` the number of jobs in the training set), ``Linf`` or a fixed number of rounds.
* **Online predictor** (chapter 4): :class:`HMMPredictor`.

The recursions over time are compiled with numba (the project already depends on
it for the simulator): a forward-backward pass over 70,000 bins then takes about
30 ms instead of about a second with a per-step numpy loop (see ``docs/hmm.md``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numba import njit

from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.sim.probabilistic import truncate_distribution, truncate_distributions
from hpcgym.workload.core import Workload

__all__ = [
    "CRITERIA",
    "LOAD_MODELS",
    "CountHMM",
    "FitResult",
    "HMMParams",
    "HMMPredictor",
    "Posterior",
    "RuntimeBins",
    "completion_cdf",
    "distribution_quantile",
    "forward_filter",
    "observation_counts",
    "repair_impossible_bins",
    "static_iv",
    "submit_bin_index",
    "truncate_distribution",
    "truncate_distributions",
]

WEEK = 7 * 86400.0
#: load models of §3.1 (``None``: runtimes only, the thesis' choice for scheduling)
LOAD_MODELS: tuple[str | None, ...] = (None, "geometric", "poisson")
#: Baum-Welch termination criteria of §3.3
CRITERIA: tuple[str, ...] = ("l1", "linf", "fixed")
#: scaled-forward normaliser below which a step is redone in the log domain
_TINY = 1e-280


# =============================================================== discretisation
@dataclass(frozen=True)
class RuntimeBins:
    """Runtime bins of constant ratio in log space (§2.2, "Simple" binning).

    Bin ``j >= 1`` is ``[t_r**(k0+j-1), t_r**(k0+j))`` where ``k0`` is the smallest
    ``k >= 1`` with ``t_r**k >= short``; bin 0 holds every runtime below
    ``t_r**k0`` -- in particular all runtimes under ``short`` = 1.5 s (recorded 0 s
    and 1 s). For ``t_r = 1.8`` this is plain ``floor(log(r) / log(1.8))`` with
    runtimes under 1 s counted as 1 s, as in the thesis. Runtimes at or above the
    last edge are counted in the last bin (size the bins with :meth:`covering`).

    :param ratio: ``t_r`` (> 1)
    :param n_bins: ``N``, number of runtime bins
    :param short: runtimes below this (seconds) are always in the lowest bin
    """

    ratio: float = 1.8
    n_bins: int = 25
    short: float = 1.5

    def __post_init__(self) -> None:
        if not (self.ratio > 1.0 and math.isfinite(self.ratio)):
            raise ValueError(f"runtime bin ratio t_r must be > 1, got {self.ratio!r}")
        if int(self.n_bins) < 1:
            raise ValueError(f"n_bins must be >= 1, got {self.n_bins!r}")
        if not self.short > 0:
            raise ValueError(f"short must be > 0, got {self.short!r}")

    @property
    def first_power(self) -> int:
        """``k0``: the lowest bin ends at ``ratio**k0 >= short``."""
        k = 1
        while self.ratio**k < self.short:
            k += 1
        return k

    @cached_property
    def edges(self) -> np.ndarray:
        """``N + 1`` bin edges in seconds (read-only array).

        ``edges[0] = 1`` s is the lower end used for the log-uniform mass of the
        lowest bin (Algorithm 5 needs a positive start; the thesis treats runtimes of
        0 s as 1 s, §2.2); ``edges[j], edges[j+1]`` bound bin ``j``.
        """
        k0 = self.first_power
        e = np.concatenate(
            ([1.0], float(self.ratio) ** np.arange(k0, k0 + int(self.n_bins), dtype=np.float64))
        )
        e.flags.writeable = False
        return e

    def index(self, runtime: np.ndarray | float) -> np.ndarray:
        """Runtime bin of each runtime (seconds; int64, ``0 .. N-1``)."""
        r = np.asarray(runtime, dtype=np.float64)
        return np.searchsorted(self.edges[1:-1], r, side="right").astype(np.int64)

    @classmethod
    def covering(cls, max_runtime: float, ratio: float = 1.8, short: float = 1.5) -> RuntimeBins:
        """The fewest bins whose last bin contains ``max_runtime``."""
        probe = cls(ratio=ratio, n_bins=1, short=short)
        k0 = probe.first_power
        n = 1
        while float(ratio) ** (k0 + n - 1) <= max_runtime:
            n += 1
        return cls(ratio=ratio, n_bins=n, short=short)


def submit_bin_index(
    submit: np.ndarray | float, width: float = 900.0, origin: float = 0.0
) -> np.ndarray:
    """Submit-time bin ``floor((submit - origin) / width)`` (§2.2 Simple binning)."""
    if not width > 0:
        raise ValueError(f"submit bin width t_s must be > 0 seconds, got {width!r}")
    s = np.asarray(submit, dtype=np.float64)
    return np.floor((s - origin) / width).astype(np.int64)


def observation_counts(
    submit_bins: np.ndarray, runtime_bins: np.ndarray, n_bins: int, n_steps: int | None = None
) -> np.ndarray:
    """Count matrix ``X[t, j]`` = jobs of submit bin ``t`` and runtime bin ``j`` (float64).

    :param submit_bins: submit bin of each job (>= 0)
    :param runtime_bins: runtime bin of each job (``0 .. n_bins-1``)
    :param n_steps: number of submit bins ``T`` (default: last bin + 1)
    """
    sb = np.asarray(submit_bins, dtype=np.int64)
    rb = np.asarray(runtime_bins, dtype=np.int64)
    if sb.shape != rb.shape:
        raise ValueError("submit_bins and runtime_bins must have the same shape")
    if len(sb) and (sb.min() < 0 or rb.min() < 0 or rb.max() >= n_bins):
        raise ValueError("bins out of range: submit bins must be >= 0, runtime bins < n_bins")
    T = int(sb.max()) + 1 if n_steps is None and len(sb) else int(n_steps or 0)
    if len(sb) and sb.max() >= T:
        raise ValueError(f"a submit bin is >= n_steps={T}")
    flat = np.bincount(sb * n_bins + rb, minlength=T * n_bins)
    return flat.reshape(T, n_bins).astype(np.float64)


def _truncated_bin_ends(edges: np.ndarray, elapsed: float, request: float) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
    return np.minimum(e[1:], np.maximum(request, e[:-1]))


def completion_cdf(
    probs: np.ndarray | None,
    edges: np.ndarray,
    elapsed: float,
    request: float,
    horizons: np.ndarray,
    interpolation: str = "bin_end",
) -> np.ndarray:
    """``Pr(runtime <= h | elapsed <= runtime <= request)`` for each duration ``h``.

    ``h`` is measured from the job's start (so ``P(still running at start + h)`` is
    ``1 - completion_cdf(...)``). The distribution is first truncated with
    Algorithm 5.

    :param probs: bin probabilities predicted at submission, or ``None`` (no
        prediction: the job ends at its request with probability 1)
    :param interpolation: ``"bin_end"`` (default) puts each truncated bin's mass at
        its end, as the probabilistic backfiller does ("the job runtime probabilities
        are estimated only at the ends of the runtime bins", §5.2); ``"loguniform"``
        spreads it log-uniformly inside the truncated bin (continuous CDF)
    """
    h = np.asarray(horizons, dtype=np.float64)
    trunc = None if probs is None else truncate_distribution(probs, edges, elapsed, request)
    if trunc is None:
        return (h >= request).astype(np.float64)
    e = np.asarray(edges, dtype=np.float64)
    ends = _truncated_bin_ends(e, elapsed, request)
    if interpolation == "bin_end":
        return (trunc[None, :] * (ends[None, :] <= h.reshape(-1, 1))).sum(axis=1).reshape(h.shape)
    if interpolation == "loguniform":
        starts = np.maximum(e[:-1], np.minimum(elapsed, e[1:]))
        width = np.log(np.maximum(ends, starts)) - np.log(starts)
        hh = np.maximum(h.reshape(-1, 1), 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(
                width[None, :] > 0,
                (np.log(hh) - np.log(starts)[None, :]) / width[None, :],
                (hh >= ends[None, :]).astype(np.float64),
            )
        return (trunc[None, :] * np.clip(frac, 0.0, 1.0)).sum(axis=1).reshape(h.shape)
    raise ValueError(f"unknown interpolation {interpolation!r}; valid: 'bin_end', 'loguniform'")


def distribution_quantile(
    probs: np.ndarray, edges: np.ndarray, q: float = 0.5, request: float = np.inf
) -> float:
    """Quantile ``q`` of a bin distribution truncated at ``request`` (log-uniform in bins).

    :return: the quantile in seconds, at most ``request``; ``request`` if the
        truncation leaves no mass
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q!r}")
    e = np.asarray(edges, dtype=np.float64)
    upper = float(request) if np.isfinite(request) else float(e[-1])
    p = truncate_distribution(probs, e, 0.0, upper)
    if p is None:
        return float(request)
    cum = np.cumsum(p)
    j = int(np.searchsorted(cum, q * cum[-1], side="left"))
    j = min(j, len(p) - 1)
    before = cum[j - 1] if j > 0 else 0.0
    lo = e[j]
    hi = min(e[j + 1], max(upper, lo))
    frac = (q * cum[-1] - before) / p[j] if p[j] > 0 else 1.0
    val = math.exp(math.log(lo) + min(max(frac, 0.0), 1.0) * (math.log(hi) - math.log(lo)))
    return float(min(val, request))


# ================================================================== parameters
@dataclass
class HMMParams:
    """HMM parameters ``theta = (pi, A, B[, load])``.

    :param startprob: ``pi``, shape ``(M,)``
    :param transmat: ``A``, shape ``(M, M)``, rows sum to 1
    :param emission: ``B``, shape ``(M, N)``, rows sum to 1 (runtime-bin distributions)
    :param load: per-state load parameter: geometric ``p_i`` or Poisson ``lambda_i``
        (``None`` without load modelling)
    :param load_model: ``None``, ``"geometric"`` or ``"poisson"``
    """

    startprob: np.ndarray
    transmat: np.ndarray
    emission: np.ndarray
    load: np.ndarray | None = None
    load_model: str | None = None

    def __post_init__(self) -> None:
        if self.load_model not in LOAD_MODELS:
            raise ValueError(
                f"unknown load model {self.load_model!r}; valid: None, 'geometric', 'poisson'"
            )
        self.startprob = np.ascontiguousarray(self.startprob, dtype=np.float64)
        self.transmat = np.ascontiguousarray(self.transmat, dtype=np.float64)
        self.emission = np.ascontiguousarray(self.emission, dtype=np.float64)
        M = self.startprob.shape[0]
        if self.transmat.shape != (M, M) or self.emission.ndim != 2 or len(self.emission) != M:
            raise ValueError(
                f"inconsistent shapes: startprob {self.startprob.shape}, transmat "
                f"{self.transmat.shape}, emission {self.emission.shape}"
            )
        if self.load_model is None:
            self.load = None
        else:
            if self.load is None:
                raise ValueError(f"load model {self.load_model!r} needs a load parameter")
            self.load = np.ascontiguousarray(self.load, dtype=np.float64)
            if self.load.shape != (M,):
                raise ValueError(f"load parameter must have shape ({M},)")

    @property
    def n_states(self) -> int:
        return int(self.startprob.shape[0])

    @property
    def n_bins(self) -> int:
        return int(self.emission.shape[1])

    def copy(self) -> HMMParams:
        return HMMParams(
            self.startprob.copy(),
            self.transmat.copy(),
            self.emission.copy(),
            None if self.load is None else self.load.copy(),
            self.load_model,
        )

    def vector(self) -> np.ndarray:
        """All parameters in one vector (for the termination distances of §3.3)."""
        parts = [self.startprob, self.transmat.ravel(), self.emission.ravel()]
        if self.load is not None:
            parts.append(self.load)
        return np.concatenate(parts)

    def distance(self, other: HMMParams, kind: str = "l1") -> float:
        """``L1`` (sum) or ``Linf`` (max) distance between all parameters (§3.3)."""
        d = np.abs(self.vector() - other.vector())
        if kind == "l1":
            return float(d.sum())
        if kind == "linf":
            return float(d.max())
        raise ValueError(f"unknown distance {kind!r}; valid: 'l1', 'linf'")


def static_iv(
    n_states: int = 16, n_bins: int = 25, load_model: str | None = None, mean_load: float = 1.0
) -> HMMParams:
    """Static initial values, Algorithm 3 (§3.2), with uniform ``A`` and ``pi``.

    State ``i`` doubles the weight of the runtime bins
    ``X_i = [floor(i*N/M), floor((i+1)*N/M))``: ``B_ix = 2/(|X_i|+N)`` for ``x`` in
    ``X_i`` and ``1/(|X_i|+N)`` elsewhere. (The listing writes ``i*M/N`` in Rabiner's
    notation, ``M`` = symbols, ``N`` = states; the text's normaliser ``|X_i| + N``
    uses ``N`` = runtime bins, so the bins are partitioned among the states.)

    :param mean_load: initial expected load of every state when load is modelled
        (geometric ``p = 1/(1+mean_load)``, Poisson ``lambda = mean_load``); the thesis
        gives no initial values for the load parameters
    """
    M, N = int(n_states), int(n_bins)
    if M < 1 or N < 1:
        raise ValueError(f"need n_states >= 1 and n_bins >= 1, got {M}, {N}")
    B = np.empty((M, N))
    for i in range(M):
        a, b = i * N // M, (i + 1) * N // M
        B[i, :] = 1.0 / (b - a + N)
        B[i, a:b] *= 2.0
    load = None
    if load_model == "geometric":
        load = np.full(M, 1.0 / (1.0 + float(mean_load)))
    elif load_model == "poisson":
        load = np.full(M, float(mean_load))
    return HMMParams(np.full(M, 1.0 / M), np.full((M, M), 1.0 / M), B, load, load_model)


def repair_impossible_bins(emission: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, int]:
    """The thesis' adjustment for submit bins no state can emit (§3.2).

    For each bin ``t`` whose jobs have probability 0 under every state,
    ``B_ij <- (1 - lambda(t)) B_ij + lambda(t) p(j|t)`` with ``lambda(t)`` the fraction
    of all jobs of ``X`` that are in bin ``t`` and ``p(j|t)`` the runtime-bin fractions of
    bin ``t``. With log-space arithmetic this only happens when ``B`` has exact zeros
    (warm starts on data with a runtime bin never seen before), never from underflow.

    :return: the repaired emission matrix and the number of bins repaired
    """
    B = np.array(emission, dtype=np.float64)
    Xp = (X > 0).astype(np.float64)
    total = float(X.sum())
    repairs = 0
    for _ in range(B.shape[1] + 1):
        imp = (Xp @ (B <= 0).T.astype(np.float64)) > 0  # (T, M): state i cannot emit bin t
        bad = np.flatnonzero(imp.all(axis=1))
        if len(bad) == 0:
            break
        t = int(bad[0])
        lam = float(X[t].sum()) / total
        B = (1.0 - lam) * B + lam * (X[t] / X[t].sum())[None, :]
        repairs += 1
    return B, repairs


# ================================================================ numba kernels
@njit(cache=True)
def _forward_scaled(init, A, logE, init_is_alpha, alpha, logscale):  # pragma: no cover
    """Scaled forward pass. ``alpha[t]`` = Pr(q_t | O_1..t); returns False if impossible.

    ``logscale[t] = log Pr(O_t | O_1..t-1)``. If ``init_is_alpha``, ``init`` is the
    filtered distribution of the step before ``logE[0]`` (a transition is applied);
    otherwise it is the initial distribution ``pi``.
    """
    T, M = logE.shape
    pred = np.empty(M)
    a = np.empty(M)
    for t in range(T):
        if t == 0:
            if init_is_alpha:
                for j in range(M):
                    s = 0.0
                    for k in range(M):
                        s += init[k] * A[k, j]
                    pred[j] = s
            else:
                for j in range(M):
                    pred[j] = init[j]
        else:
            for j in range(M):
                s = 0.0
                for k in range(M):
                    s += alpha[t - 1, k] * A[k, j]
                pred[j] = s
        m = -np.inf
        for i in range(M):
            if logE[t, i] > m:
                m = logE[t, i]
        if not m > -np.inf:
            return False
        c = 0.0
        for i in range(M):
            if logE[t, i] > -np.inf:
                a[i] = pred[i] * np.exp(logE[t, i] - m)
            else:
                a[i] = 0.0
            c += a[i]
        if c > _TINY:
            for i in range(M):
                alpha[t, i] = a[i] / c
            logscale[t] = m + np.log(c)
        else:
            # log-domain step: the predicted mass sits where the emission underflowed
            lmax = -np.inf
            for i in range(M):
                if pred[i] > 0.0 and logE[t, i] > -np.inf:
                    a[i] = np.log(pred[i]) + (logE[t, i] - m)
                else:
                    a[i] = -np.inf
                if a[i] > lmax:
                    lmax = a[i]
            if not lmax > -np.inf:
                return False
            s = 0.0
            for i in range(M):
                s += np.exp(a[i] - lmax)
            for i in range(M):
                alpha[t, i] = np.exp(a[i] - lmax) / s
            logscale[t] = m + lmax + np.log(s)
    return True


@njit(cache=True)
def _backward_scaled(A, logE, logscale, alpha, gamma, xi):  # pragma: no cover
    """Scaled backward pass; fills ``gamma`` (T, M) and the summed ``xi`` (M, M).

    ``beta_t(i) = sum_j A_ij b_j(O_t+1) beta_t+1(j) / C_t+1`` with the forward
    normalisers ``C``; ``gamma_t = alpha_t * beta_t`` sums to 1 without renormalising.
    Returns False if a value overflowed (the caller then uses the log-domain kernel).
    """
    T, M = logE.shape
    beta = np.ones(M)
    w = np.empty(M)
    nb = np.empty(M)
    for i in range(M):
        gamma[T - 1, i] = alpha[T - 1, i]
        for j in range(M):
            xi[i, j] = 0.0
    for t in range(T - 2, -1, -1):
        for j in range(M):
            e = logE[t + 1, j]
            if e > -np.inf:
                w[j] = np.exp(e - logscale[t + 1]) * beta[j]
            else:
                w[j] = 0.0
        for i in range(M):
            s = 0.0
            ai = alpha[t, i]
            for j in range(M):
                aw = A[i, j] * w[j]
                s += aw
                xi[i, j] += ai * aw
            nb[i] = s
        for i in range(M):
            beta[i] = nb[i]
            gamma[t, i] = alpha[t, i] * nb[i]
            if not np.isfinite(nb[i]):
                return False
    return True


@njit(cache=True)
def _lse(v):  # pragma: no cover
    m = -np.inf
    for x in v:
        if x > m:
            m = x
    if not m > -np.inf:
        return -np.inf
    s = 0.0
    for x in v:
        s += np.exp(x - m)
    return m + np.log(s)


@njit(cache=True)
def _fb_log(logpi, logA, logE, alpha, logscale, gamma, xi):  # pragma: no cover
    """Forward-backward entirely in the log domain (slow, exact fallback). Returns log Pr(O)."""
    T, M = logE.shape
    la = np.empty((T, M))
    lb = np.zeros((T, M))
    tmp = np.empty(M)
    for i in range(M):
        la[0, i] = logpi[i] + logE[0, i]
    for t in range(1, T):
        for j in range(M):
            for k in range(M):
                tmp[k] = la[t - 1, k] + logA[k, j]
            la[t, j] = _lse(tmp) + logE[t, j]
    prev = 0.0
    for t in range(T):
        z = _lse(la[t])
        logscale[t] = z - prev
        prev = z
        for i in range(M):
            alpha[t, i] = np.exp(la[t, i] - z) if z > -np.inf else np.nan
    L = _lse(la[T - 1])
    for t in range(T - 2, -1, -1):
        for i in range(M):
            for j in range(M):
                tmp[j] = logA[i, j] + logE[t + 1, j] + lb[t + 1, j]
            lb[t, i] = _lse(tmp)
    for i in range(M):
        for j in range(M):
            xi[i, j] = 0.0
    for t in range(T):
        for i in range(M):
            gamma[t, i] = np.exp(la[t, i] + lb[t, i] - L)
    for t in range(T - 1):
        for i in range(M):
            for j in range(M):
                v = la[t, i] + logA[i, j] + logE[t + 1, j] + lb[t + 1, j] - L
                if v > -np.inf:
                    xi[i, j] += np.exp(v)
    return L


def _safe_log(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, -np.inf)
    np.log(x, out=out, where=x > 0)
    return out


# ================================================================ inference API
@dataclass
class Posterior:
    """Result of the forward-backward pass (E-step).

    :param gamma: ``(T, M)`` posterior state marginals ``Pr(q_t = i | O)``
    :param xi: ``(M, M)`` expected transition counts ``sum_t Pr(q_t=i, q_t+1=j | O)``
    :param alpha: ``(T, M)`` filtered distributions ``Pr(q_t = i | O_1..t)``
    :param logscale: ``(T,)`` ``log Pr(O_t | O_1..t-1)``
    :param loglik: ``log Pr(O)`` (natural log)
    """

    gamma: np.ndarray
    xi: np.ndarray
    alpha: np.ndarray
    logscale: np.ndarray
    loglik: float


def log_emissions(
    params: HMMParams,
    X: np.ndarray,
    loads: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """``log Pr(x_t | q_t = i)`` for every bin and state, shape ``(T, M)``.

    ``X @ log(B).T`` (the multinomial coefficient is omitted: it does not depend on
    the state); ``-inf`` where a state gives probability 0 to one of the bin's jobs;
    0 for empty bins. With load modelling the load term of each state is added;
    ``loads`` defaults to the row sums of ``X``.

    :param rows: indices of the non-empty rows of ``X`` if already known (only they
        are multiplied: most 15-minute bins of real traces are empty)
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != params.n_bins:
        raise ValueError(f"X must have shape (T, {params.n_bins}), got {X.shape}")
    if rows is None:
        rows = np.flatnonzero(X.any(axis=1))
    B = params.emission
    pos = B > 0
    logB = np.zeros_like(B)
    np.log(B, out=logB, where=pos)
    L = np.zeros((X.shape[0], B.shape[0]))
    if len(rows):
        Xn = X[rows]
        Ln = Xn @ logB.T
        if not pos.all():
            imp = ((Xn > 0).astype(np.float64) @ (~pos).T.astype(np.float64)) > 0
            Ln[imp] = -np.inf
        L[rows] = Ln
    if params.load_model is not None:
        ld = X.sum(axis=1) if loads is None else np.asarray(loads, dtype=np.float64)
        L += _load_loglik(params, ld)
    return L


def _load_loglik(params: HMMParams, loads: np.ndarray) -> np.ndarray:
    par = params.load
    assert par is not None
    l_ = loads.reshape(-1, 1)
    if params.load_model == "geometric":
        # p (1-p)^l
        log1mp = _safe_log(1.0 - par)[None, :]
        term = np.where(l_ > 0, l_ * np.where(np.isfinite(log1mp), log1mp, -np.inf), 0.0)
        return _safe_log(par)[None, :] + term
    # Poisson: e^-lam lam^l / l!
    li = np.rint(loads).astype(np.int64)
    lg = np.array([math.lgamma(k + 1.0) for k in range(int(li.max(initial=0)) + 1)])
    loglam = _safe_log(par)[None, :]
    term = np.where(l_ > 0, l_ * np.where(np.isfinite(loglam), loglam, -np.inf), 0.0)
    return -par[None, :] + term - lg[li][:, None]


def forward_filter(
    init: np.ndarray, transmat: np.ndarray, logE: np.ndarray, init_is_alpha: bool = False
) -> tuple[np.ndarray, np.ndarray] | None:
    """Filtered state distributions ``Pr(q_t | O_1..t)`` (scaled forward pass).

    :param init: ``pi`` (``init_is_alpha=False``) or the filtered distribution of the
        bin just before ``logE[0]`` (``init_is_alpha=True``; a transition is applied)
    :param logE: ``(T, M)`` log emissions
    :return: ``(alpha, logscale)``, or ``None`` if the observations are impossible
        under the model (every state has probability 0 at some step)
    """
    logE = np.ascontiguousarray(logE, dtype=np.float64)
    T, M = logE.shape
    alpha = np.empty((T, M))
    logscale = np.empty(T)
    if T == 0:
        return alpha, logscale
    ok = _forward_scaled(
        np.ascontiguousarray(init, dtype=np.float64),
        np.ascontiguousarray(transmat, dtype=np.float64),
        logE,
        bool(init_is_alpha),
        alpha,
        logscale,
    )
    return (alpha, logscale) if ok else None


def forward_backward(params: HMMParams, logE: np.ndarray) -> Posterior | None:
    """E-step over one observation sequence; ``None`` if the sequence is impossible."""
    logE = np.ascontiguousarray(logE, dtype=np.float64)
    T, M = logE.shape
    if T == 0:
        raise ValueError("empty observation sequence")
    alpha = np.empty((T, M))
    logscale = np.empty(T)
    gamma = np.empty((T, M))
    xi = np.empty((M, M))
    ok = _forward_scaled(params.startprob, params.transmat, logE, False, alpha, logscale)
    if not ok:
        return None
    ok = _backward_scaled(params.transmat, logE, logscale, alpha, gamma, xi)
    if not ok:  # overflow after an extreme log-domain step: exact log-domain kernel
        L = _fb_log(
            _safe_log(params.startprob), _safe_log(params.transmat), logE, alpha, logscale,
            gamma, xi,
        )  # fmt: skip
        return Posterior(gamma, xi, alpha, logscale, float(L))
    return Posterior(gamma, xi, alpha, logscale, float(logscale.sum()))


def forward_backward_log(params: HMMParams, logE: np.ndarray) -> Posterior:
    """The same E-step entirely in the log domain (reference; ~10x slower)."""
    logE = np.ascontiguousarray(logE, dtype=np.float64)
    T, M = logE.shape
    alpha = np.empty((T, M))
    logscale = np.empty(T)
    gamma = np.empty((T, M))
    xi = np.empty((M, M))
    L = _fb_log(
        _safe_log(params.startprob), _safe_log(params.transmat), logE, alpha, logscale, gamma, xi
    )
    return Posterior(gamma, xi, alpha, logscale, float(L))


def m_step(
    params: HMMParams,
    X: np.ndarray,
    post: Posterior,
    loads: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> HMMParams:
    """Re-estimation (Rabiner; §3.1 for ``B``, ``lambda_i`` and ``p_i``).

    ``pi = gamma_0``; ``A_ij = xi_ij / sum_j xi_ij``;
    ``B_ij = sum_t gamma_t(i) x_jt / sum_tk gamma_t(i) x_kt``; geometric
    ``p_i = sum_t gamma_t(i) / sum_t gamma_t(i)(l_t + 1)``; Poisson
    ``lambda_i = sum_t gamma_t(i) l_t / sum_t gamma_t(i)``. A state with no expected
    jobs (or no expected transitions) keeps its previous row: the data say nothing
    about it (this avoids 0/0 and cannot lower the likelihood). ``rows``: the
    non-empty rows of ``X`` if known.
    """
    g = post.gamma
    pi = g[0] / g[0].sum()
    xs = post.xi.sum(axis=1, keepdims=True)
    A = np.where(xs > 0, post.xi / np.where(xs > 0, xs, 1.0), params.transmat)
    num = g.T @ X if rows is None else g[rows].T @ X[rows]
    den = num.sum(axis=1, keepdims=True)
    B = np.where(den > 0, num / np.where(den > 0, den, 1.0), params.emission)
    load = None
    if params.load_model is not None:
        ld = X.sum(axis=1) if loads is None else np.asarray(loads, dtype=np.float64)
        occ = g.sum(axis=0)
        wl = g.T @ ld
        assert params.load is not None
        if params.load_model == "geometric":
            load = np.where(occ > 0, occ / np.where(occ > 0, occ + wl, 1.0), params.load)
        else:
            load = np.where(occ > 0, wl / np.where(occ > 0, occ, 1.0), params.load)
    return HMMParams(pi, A, B, load, params.load_model)


@dataclass
class FitResult:
    """What one Baum-Welch run did.

    :param logliks: ``log Pr(O | theta_k)`` for the parameters *entering* iteration
        ``k`` (EM guarantees this sequence never decreases)
    :param distances: termination distance between ``theta_k`` and ``theta_k+1``
    :param converged: the termination criterion was met (always True for ``fixed``)
    :param n_jobs: ``n_t``, the number of jobs of the training sequence
    :param repaired: submit bins repaired by :func:`repair_impossible_bins` first
    """

    iterations: int = 0
    logliks: list[float] = field(default_factory=list)
    distances: list[float] = field(default_factory=list)
    converged: bool = False
    n_jobs: int = 0
    repaired: int = 0
    seconds: float = 0.0

    @property
    def last_distance(self) -> float:
        return self.distances[-1] if self.distances else float("inf")


class CountHMM:
    """An HMM whose observation per step is a count vector over runtime bins (§3.1).

    :param params: the parameters (default: :func:`static_iv` with 16 states, 25 bins)
    """

    def __init__(self, params: HMMParams | None = None) -> None:
        self.params = params if params is not None else static_iv()

    @classmethod
    def static(
        cls,
        n_states: int = 16,
        n_bins: int = 25,
        load_model: str | None = None,
        mean_load: float = 1.0,
    ) -> CountHMM:
        """A model with Static-IV initial values (Algorithm 3)."""
        return cls(static_iv(n_states, n_bins, load_model, mean_load))

    @property
    def n_states(self) -> int:
        return self.params.n_states

    @property
    def n_bins(self) -> int:
        return self.params.n_bins

    def log_emissions(self, X: np.ndarray, loads: np.ndarray | None = None) -> np.ndarray:
        return log_emissions(self.params, X, loads)

    def posterior(self, X: np.ndarray, loads: np.ndarray | None = None) -> Posterior | None:
        """Forward-backward over ``X``; ``None`` if ``X`` is impossible under the model."""
        return forward_backward(self.params, self.log_emissions(X, loads))

    def score(self, X: np.ndarray, loads: np.ndarray | None = None) -> float:
        """``log Pr(X | theta)`` (``-inf`` if impossible)."""
        res = forward_filter(
            self.params.startprob, self.params.transmat, self.log_emissions(X, loads)
        )
        return -math.inf if res is None else float(res[1].sum())

    def filter(self, X: np.ndarray, loads: np.ndarray | None = None) -> np.ndarray | None:
        """Filtered state distributions ``Pr(q_t | x_1..t)``, shape ``(T, M)``."""
        res = forward_filter(
            self.params.startprob, self.params.transmat, self.log_emissions(X, loads)
        )
        return None if res is None else res[0]

    def predictive(self, state_dist: np.ndarray) -> np.ndarray:
        """Runtime-bin distribution of a job in a bin with state distribution ``state_dist``."""
        p = np.asarray(state_dist, dtype=np.float64) @ self.params.emission
        return p / p.sum()

    def fit(
        self,
        X: np.ndarray,
        loads: np.ndarray | None = None,
        *,
        criterion: str = "l1",
        eps: float = 200.0,
        max_iter: int = 1000,
    ) -> FitResult:
        """Baum-Welch from the current parameters until the termination criterion (§3.3).

        :param X: ``(T, N)`` counts of one observation sequence
        :param criterion: ``"l1"``: stop when ``sqrt(n_t) * sum|theta - theta'| < eps``
            (``n_t`` = jobs in ``X``; thesis default ``eps = 200``); ``"linf"``: when
            ``max|theta - theta'| < eps``; ``"fixed"``: after ``int(eps)`` rounds
        :param max_iter: hard cap on the iterations of this call
        :raises ValueError: bad option, or ``X`` impossible under the model even after
            the §3.2 repair (only possible with zero transition probabilities)
        """
        if criterion not in CRITERIA:
            raise ValueError(f"unknown criterion {criterion!r}; valid: {', '.join(CRITERIA)}")
        X = np.ascontiguousarray(X, dtype=np.float64)
        t0 = time.perf_counter()
        res = FitResult(n_jobs=int(round(X.sum())))
        B, res.repaired = repair_impossible_bins(self.params.emission, X)
        if res.repaired:
            p = self.params.copy()
            p.emission = B
            self.params = p
        rounds = int(eps) if criterion == "fixed" else int(max_iter)
        limit = min(rounds, int(max_iter))
        threshold = eps / math.sqrt(max(res.n_jobs, 1)) if criterion == "l1" else eps
        kind = "linf" if criterion == "linf" else "l1"
        rows = np.flatnonzero(X.any(axis=1))
        while res.iterations < limit:
            post = forward_backward(self.params, log_emissions(self.params, X, loads, rows))
            if post is None:
                raise ValueError(
                    "the observation sequence is impossible under the current parameters "
                    "(zero transition probabilities); re-initialise with static_iv()"
                )
            new = m_step(self.params, X, post, loads, rows)
            d = self.params.distance(new, kind)
            self.params = new
            res.iterations += 1
            res.logliks.append(post.loglik)
            res.distances.append(d)
            if criterion != "fixed" and d < threshold:
                res.converged = True
                break
        if criterion == "fixed":
            res.converged = res.iterations >= rounds
        res.seconds = time.perf_counter() - t0
        return res

    def sample(
        self, n_steps: int, rng: np.random.Generator, loads: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw a state path and count matrix from the model.

        :param loads: jobs per step; required without load modelling, otherwise drawn
            from the state's load distribution when not given
        :return: ``(states (T,), X (T, N))``
        """
        p = self.params
        M, N = p.n_states, p.n_bins
        states = np.empty(n_steps, dtype=np.int64)
        s = int(rng.choice(M, p=p.startprob))
        for t in range(n_steps):
            states[t] = s
            s = int(rng.choice(M, p=p.transmat[s]))
        if loads is None:
            if p.load_model is None:
                raise ValueError("without load modelling, sample() needs loads (jobs per step)")
            assert p.load is not None
            par = p.load[states]
            if p.load_model == "geometric":
                loads = rng.geometric(par) - 1  # numpy's geometric counts trials (>= 1)
            else:
                loads = rng.poisson(par)
        loads = np.asarray(loads, dtype=np.int64)
        if loads.shape != (n_steps,):
            raise ValueError(f"loads must have shape ({n_steps},)")
        X = np.zeros((n_steps, N))
        for i in range(M):
            rows = np.flatnonzero(states == i)
            if len(rows):
                X[rows] = rng.multinomial(loads[rows], p.emission[i])
        return states, X


# ================================================================ the predictor
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
