"""Discretisation of the HMM model (§2.2) and bin-distribution read-outs.

Runtime bins of constant log ratio (:class:`RuntimeBins`), submit-time bins
(:func:`submit_bin_index`), the count matrix of the observations
(:func:`observation_counts`), and what a predicted bin distribution says about one
job: :func:`completion_cdf` and :func:`distribution_quantile` (both truncate with
Algorithm 5, :func:`hpcgym.sim.probabilistic.truncate_distribution`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hpcgym.sim.probabilistic import truncate_distribution

__all__ = [
    "RuntimeBins",
    "completion_cdf",
    "distribution_quantile",
    "observation_counts",
    "submit_bin_index",
]


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
