"""E-step and M-step of Baum-Welch for the count-emission HMM (§3.1).

Log emissions of count vectors (:func:`log_emissions`, with the optional geometric
or Poisson load term of §3.1/§3.4.4), the filtered forward pass
(:func:`forward_filter`), forward-backward (:func:`forward_backward`, and the
log-domain reference :func:`forward_backward_log`) and re-estimation (:func:`m_step`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hpcgym.predictors.hmm.kernels import _backward_scaled, _fb_log, _forward_scaled, _safe_log
from hpcgym.predictors.hmm.params import HMMParams

__all__ = [
    "Posterior",
    "forward_backward",
    "forward_backward_log",
    "forward_filter",
    "log_emissions",
    "m_step",
]


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
