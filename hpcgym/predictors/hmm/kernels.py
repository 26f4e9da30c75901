"""The numba-compiled recursions over time of the HMM (scaled forward-backward).

Scaled forward pass with emissions shifted by their per-step maximum in log space
and a per-step log-domain fallback (:func:`_forward_scaled`), the scaled backward
pass (:func:`_backward_scaled`) and the pure log-domain forward-backward used when
the scaled one overflows (:func:`_fb_log`). Private: the public entry points are in
:mod:`hpcgym.predictors.hmm.inference`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: scaled-forward normaliser below which a step is redone in the log domain
_TINY = 1e-280


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
