"""Exact distributions of the Lublin-Feitelson model (used by the generator and checks).

The gamma CDF (:func:`gamma_cdf`), the daily cycle of arrivals
(:func:`daily_cycle_weights`), machine scaling of the size parameters
(:func:`scaled_type_params`) and the exact job-size distribution (:func:`size_pmf`,
:func:`expected_pow2_fraction`) that the measured statistics are compared with.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from hpcgym.workload.lublin.params import _BUCKETS, _CYCLIC_DAY_START, _REF_LOG2, LublinTypeParams

__all__ = [
    "scaled_type_params",
    "daily_cycle_weights",
    "expected_pow2_fraction",
    "size_pmf",
    "gamma_cdf",
]


# ------------------------------------------------------------------ special functions
def _gamma_p(a: float, x: float) -> float:
    """Regularised lower incomplete gamma function P(a, x) (series / continued fraction)."""
    if a <= 0:
        raise ValueError(f"gamma shape must be positive, got {a}")
    if x <= 0.0:
        return 0.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        # P(a, x) = e^-x x^a / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n))
        term = 1.0 / a
        total = term
        ap = a
        for _ in range(10_000):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return min(1.0, total * math.exp(log_front))
    # Q(a, x) by the modified Lentz evaluation of its continued fraction
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """CDF of the gamma distribution with the given shape and scale at ``x``."""
    return _gamma_p(shape, x / scale)


# ------------------------------------------------------------------ model pieces
def daily_cycle_weights(anum: float, bnum: float) -> np.ndarray:
    """Relative arrival rate of each 30-minute slot of the day (mean 1), as in the model.

    Slot ``i`` (``i = 11 .. 58`` of the cyclic day that starts at slot 11) gets the gamma
    probability mass ``cdf(i + 0.5) - cdf(i - 0.5)`` and is stored at slot ``(i - 1) % 48``
    of the clock day (slot 0 is 00:00-00:30).

    :param anum: gamma shape of the daily cycle
    :param bnum: gamma scale of the daily cycle
    :return: array of 48 weights with mean 1
    """
    w = np.zeros(_BUCKETS)
    for i in range(_CYCLIC_DAY_START, _BUCKETS + _CYCLIC_DAY_START):
        w[(i - 1) % _BUCKETS] = gamma_cdf(i + 0.5, anum, bnum) - gamma_cdf(i - 0.5, anum, bnum)
    if not np.all(w > 0):
        raise ValueError(
            f"daily cycle gamma(anum={anum}, bnum={bnum}) gives an empty 30-minute slot"
        )
    return w / w.mean()


def scaled_type_params(tp: LublinTypeParams, machine_size: int) -> LublinTypeParams:
    """Adapt the size parameters of a job class to a machine of ``machine_size`` nodes.

    ``umed`` and ``uhi`` are shifted by ``log2(machine_size) - 7`` (the published values
    are for 128 nodes; the model's documentation: ``uhi`` is log2 of the system size,
    ``umed = uhi - 2.5`` give or take 1); ``uhi`` is kept within ``[1, log2(machine_size)]``
    (``0`` on a 1-processor machine) and ``ulow <= umed <= uhi`` is restored by clamping for
    very small machines.
    """
    top = math.log2(machine_size)
    shift = top - _REF_LOG2
    uhi = min(max(tp.uhi + shift, min(1.0, top)), top)
    ulow = min(tp.ulow, uhi)
    umed = min(max(tp.umed + shift, ulow), uhi)
    return replace(tp, ulow=ulow, umed=umed, uhi=uhi)


def _par_below(tp: LublinTypeParams, x: np.ndarray) -> np.ndarray:
    """P(par < x) for the two-stage uniform ``par`` of log2 sizes (``tp`` scaled)."""
    x = np.asarray(x, dtype=np.float64)
    if tp.umed > tp.ulow:
        first = np.clip((x - tp.ulow) / (tp.umed - tp.ulow), 0.0, 1.0)
    else:  # degenerate first stage: a point mass at ulow
        first = (x > tp.ulow).astype(np.float64)
    if tp.uhi > tp.umed:
        second = np.clip((x - tp.umed) / (tp.uhi - tp.umed), 0.0, 1.0)
    else:
        second = (x > tp.umed).astype(np.float64)
    return tp.uprob * first + (1.0 - tp.uprob) * second


def size_pmf(tp: LublinTypeParams, machine_size: int) -> np.ndarray:
    """Exact distribution of the job size of class ``tp`` on ``machine_size`` processors.

    Serial jobs have size 1; power-of-two jobs ``2**round(par)`` (at most the largest
    power of two <= ``machine_size``); the other parallel jobs ``round(2**par)``, where
    ``par`` is the two-stage uniform. ``tp`` must already be scaled
    (:func:`scaled_type_params`).

    :return: array ``pmf`` of length ``machine_size + 1``; ``pmf[s]`` = P(size = s)
    """
    m = int(machine_size)
    pmf = np.zeros(m + 1)
    pmf[1] += tp.serial_prob
    max_k = math.floor(math.log2(m) + 1e-12)
    j = np.arange(max_k + 1, dtype=np.float64)
    pk = _par_below(tp, j + 0.5) - _par_below(tp, j - 0.5)
    pk[-1] = 1.0 - float(_par_below(tp, np.array(max_k - 0.5)))
    np.add.at(pmf, (2 ** j.astype(np.int64)), tp.pow2_prob * pk)
    sizes = np.arange(1, m + 1, dtype=np.float64)
    hi = _par_below(tp, np.log2(sizes + 0.5))
    lo = _par_below(tp, np.log2(sizes - 0.5))
    hi[-1] = 1.0  # round(2**par) never exceeds the machine (par <= log2 m)
    pmf[1:] += (1.0 - tp.serial_prob - tp.pow2_prob) * (hi - lo)
    return pmf


def expected_pow2_fraction(tp: LublinTypeParams, machine_size: int) -> float:
    """Exact probability that a job of class ``tp`` has a power-of-two size > 1.

    Power-of-two draws (of size > 1) always do; the other parallel draws do when
    ``round(2**par)`` happens to be a power of two. ``tp`` must already be scaled.
    """
    pmf = size_pmf(tp, machine_size)
    k = 2 ** np.arange(1, math.floor(math.log2(machine_size) + 1e-12) + 1)
    return float(pmf[k].sum())
