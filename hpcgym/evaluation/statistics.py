"""The statistics every claim uses: a method against a reference on the same windows.

For per-window AVEbsld values ``x_i`` of a method and ``r_i`` of the reference on the
same windows ``i = 1..n``:

* the **paired geometric-mean ratio** ``exp(mean(log(x_i / r_i)))`` (< 1: the method's
  slowdowns are lower; a ratio, so every window counts the same whatever its scale);
* its **95% percentile bootstrap interval**: the windows are resampled with replacement
  (``resamples`` times, at least 4,000, from a seeded :class:`numpy.random.Generator`),
  the ratio recomputed on each resample, and the 2.5% and 97.5% percentiles taken;
* **wins**: the number of windows where the method's AVEbsld is strictly lower.

The verdict (:attr:`PairedComparison.verdict`, :func:`verdict`) is the only place
generated text takes its words from: ``better`` only when the comparison covers at least
:data:`MIN_WINDOWS` (30) windows and the whole interval lies below 1, ``worse`` when (with
as many windows) it lies above 1, ``on par`` otherwise — including every comparison over
fewer windows, whose interval is too unreliable for a claim.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "DEFAULT_SPLITS",
    "HOLDOUT_MIN_WINDOWS",
    "MIN_RESAMPLES",
    "MIN_WINDOWS",
    "PairedComparison",
    "VERDICT_ALPHA",
    "VERDICT_CAPTION",
    "bootstrap_interval",
    "bootstrap_log_means",
    "bootstrap_p_below_one",
    "choice_holdout",
    "geo_ratio",
    "holdout_text",
    "holm",
    "p_below_one",
    "paired_comparison",
    "spread",
    "verdict",
    "wins",
]

#: Bootstrap resamples by default; fewer than :data:`MIN_RESAMPLES` are refused.
DEFAULT_RESAMPLES = 10_000
MIN_RESAMPLES = 4_000
#: Seed of the bootstrap generator by default (results are reproducible).
DEFAULT_SEED = 0
#: Fewest windows for a verdict other than "on par" (the project's rule for a claim).
MIN_WINDOWS = 30
#: One-sided error level of the verdict "the 95 % interval is below 1"; the default
#: family-wise level of :func:`holm`.
VERDICT_ALPHA = 0.025
#: Random half splits of :func:`choice_holdout` by default.
DEFAULT_SPLITS = 2_000
#: Fewest windows :func:`choice_holdout` splits in halves.
HOLDOUT_MIN_WINDOWS = 4


def _log_ratios(values: Sequence[float], reference: Sequence[float]) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if x.ndim != 1 or x.shape != r.shape:
        raise ValueError(
            f"paired statistics need two 1-d sequences of the same length (one value per "
            f"window), got shapes {x.shape} and {r.shape}"
        )
    if len(x) == 0:
        raise ValueError("paired statistics need at least one window")
    if not (np.isfinite(x).all() and np.isfinite(r).all() and (x > 0).all() and (r > 0).all()):
        raise ValueError(
            "paired ratios need finite positive values (AVEbsld is >= 1); got "
            f"min {x.min()} / {r.min()} for the method / the reference"
        )
    return np.log(x) - np.log(r)


def geo_ratio(values: Sequence[float], reference: Sequence[float]) -> float:
    """The paired geometric-mean ratio ``exp(mean(log(values / reference)))``.

    :param values: the method's value per window
    :param reference: the reference's value on the same windows, in the same order
    """
    return float(np.exp(_log_ratios(values, reference).mean()))


def bootstrap_log_means(
    logs: np.ndarray, resamples: int, seed: int | np.random.Generator
) -> np.ndarray:
    """Mean log ratio of each bootstrap resample (windows drawn with replacement): the
    resampling behind :func:`bootstrap_interval` and :func:`bootstrap_p_below_one`.

    :param logs: per-window log ratios
    :param resamples: bootstrap resamples (at least :data:`MIN_RESAMPLES`)
    :param seed: seed of the ``numpy`` Generator (or a Generator, which is advanced)
    """
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"use at least {MIN_RESAMPLES} bootstrap resamples, got {resamples}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    idx = rng.integers(0, len(logs), size=(int(resamples), len(logs)))
    return logs[idx].mean(axis=1)


def bootstrap_interval(
    values: Sequence[float],
    reference: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int | np.random.Generator = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of :func:`geo_ratio` (windows resampled in pairs).

    :param values: the method's value per window
    :param reference: the reference's value on the same windows
    :param resamples: bootstrap resamples (at least :data:`MIN_RESAMPLES`)
    :param confidence: coverage of the interval (0.95: the 2.5% and 97.5% percentiles)
    :param seed: seed of the ``numpy`` Generator (or a Generator)
    :return: ``(low, high)``
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    means = bootstrap_log_means(_log_ratios(values, reference), resamples, seed)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(np.exp(low)), float(np.exp(high))


def wins(values: Sequence[float], reference: Sequence[float]) -> int:
    """Windows where the method's value is strictly lower than the reference's."""
    _log_ratios(values, reference)  # same checks
    return int(np.sum(np.asarray(values, np.float64) < np.asarray(reference, np.float64)))


@dataclass(frozen=True)
class PairedComparison:
    """A method against a reference on the same windows.

    :param geo_ratio: paired geometric-mean ratio (< 1: lower than the reference)
    :param ci_low: lower end of the bootstrap interval
    :param ci_high: upper end of the bootstrap interval
    :param wins: windows where the method is strictly lower
    :param windows: number of windows
    """

    geo_ratio: float
    ci_low: float
    ci_high: float
    wins: int
    windows: int

    @property
    def verdict(self) -> str:
        """``better`` (interval entirely below 1), ``worse`` (entirely above) or ``on par``
        (it contains 1, or fewer than :data:`MIN_WINDOWS` windows: too few for a claim)."""
        if self.windows < MIN_WINDOWS:
            return "on par"
        if self.ci_high < 1.0:
            return "better"
        if self.ci_low > 1.0:
            return "worse"
        return "on par"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (``geo_ratio, ci_low, ci_high, wins, windows``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedComparison:
        """The comparison of a dict with ``geo_ratio, ci_low, ci_high`` (``wins`` and
        ``windows`` default to 0), e.g. a row of ``summary.csv`` or a table cell.

        :param data: the values
        """
        return cls(
            geo_ratio=float(data["geo_ratio"]),
            ci_low=float(data["ci_low"]),
            ci_high=float(data["ci_high"]),
            wins=int(data.get("wins") or 0),
            windows=int(data.get("windows") or 0),
        )


#: The sentence explaining the verdict words (every generated table that shows them).
VERDICT_CAPTION = (
    "`verdict`: read from the 95% interval over at least 30 windows — an interval entirely "
    "below 1 is the only case that claims lower slowdowns than the reference, one entirely "
    "above 1 says *worse*; one that contains 1, or any comparison over fewer than 30 "
    "windows, says *on par*."
)


def verdict(cell: Mapping[str, Any] | None) -> str | None:
    """The verdict word of a dict of paired statistics (``None`` without statistics).

    :param cell: ``geo_ratio, ci_low, ci_high`` (e.g. a summary row), or ``None``
    """
    if not cell or any(cell.get(k) is None for k in ("geo_ratio", "ci_low", "ci_high")):
        return None
    return PairedComparison.from_dict(cell).verdict


def paired_comparison(
    values: Sequence[float],
    reference: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int | np.random.Generator = DEFAULT_SEED,
) -> PairedComparison:
    """Ratio, bootstrap interval and wins of ``values`` against ``reference``.

    :param values: the method's value per window
    :param reference: the reference's value on the same windows, in the same order
    :param resamples: bootstrap resamples (at least :data:`MIN_RESAMPLES`)
    :param confidence: coverage of the interval
    :param seed: seed of the bootstrap generator
    """
    low, high = bootstrap_interval(
        values, reference, resamples=resamples, confidence=confidence, seed=seed
    )
    return PairedComparison(
        geo_ratio=geo_ratio(values, reference),
        ci_low=low,
        ci_high=high,
        wins=wins(values, reference),
        windows=len(values),
    )


def spread(values: Sequence[float | None]) -> dict[str, float | int] | None:
    """``mean``, ``std`` (sample standard deviation, 0 for one value), ``min``, ``max``
    and ``n`` of the finite ``values`` (``None`` without any): the spread of a figure
    across training seeds.

    :param values: one value per seed (``None``: missing)
    """
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if len(x) == 0:
        return None
    return {
        "mean": float(x.mean()),
        "std": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
        "min": float(x.min()),
        "max": float(x.max()),
        "n": len(x),
    }


def choice_holdout(
    values: Mapping[str, Sequence[float]],
    reference: Sequence[float],
    *,
    splits: int = DEFAULT_SPLITS,
    seed: int | np.random.Generator = DEFAULT_SEED,
) -> dict[str, Any]:
    """How well "the candidate with the lowest ratio" does on windows it was not chosen on.

    Choosing the lowest of many noisy ratios picks, in part, the luckiest candidate: the
    chosen ratio is biased low (the winner's curse), and the more candidates and the fewer
    windows, the more. This estimates the choice's ratio on fresh windows of the same
    range by split-half cross-validation: ``splits`` times, the windows are split at random
    into two halves, the candidate with the lowest :func:`geo_ratio` on the first half is
    taken, and its ratio on the second half recorded. It uses half the windows for each
    choice, so it is slightly pessimistic; it cannot see a difference between the range
    the windows come from and another one (validation vs test).

    :param values: per candidate (name), its value per window, all on the same windows
    :param reference: the reference's value on those windows, in the same order
    :param splits: random half splits (at least 100)
    :param seed: seed of the ``numpy`` Generator (or a Generator)
    :return: ``geo_ratio`` (the geometric mean of the held-out ratios over the splits),
        ``low`` and ``high`` (their 2.5 % and 97.5 % percentiles: the spread over splits,
        not a confidence interval), ``chosen`` (the candidate with the lowest ratio on all
        the windows), ``agreement`` (the share of splits whose half chose it), ``median``
        (the median candidate's ratio on all the windows: what a candidate scores without
        any choice), ``splits``
    :raises ValueError: no candidate, fewer than 4 windows, or values that
        :func:`geo_ratio` refuses (the message says which)
    """
    if not values:
        raise ValueError("choice_holdout needs at least one candidate")
    if splits < 100:
        raise ValueError(f"use at least 100 splits, got {splits}")
    names = list(values)
    logs = np.stack([_log_ratios(values[n], reference) for n in names])  # (C, W)
    n = logs.shape[1]
    if n < HOLDOUT_MIN_WINDOWS:
        raise ValueError(
            f"choice_holdout needs at least {HOLDOUT_MIN_WINDOWS} windows to split in halves, "
            f"got {n}"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    order = np.argsort(rng.random((int(splits), n)), axis=1)
    first, second = order[:, : n // 2], order[:, n // 2 :]
    picked = logs[:, first].mean(axis=2).argmin(axis=0)  # (splits,)
    held = logs[picked[:, None], second].mean(axis=1)
    full = int(logs.mean(axis=1).argmin())
    low, high = np.percentile(held, [2.5, 97.5])
    return {
        "geo_ratio": float(np.exp(held.mean())),
        "low": float(np.exp(low)),
        "high": float(np.exp(high)),
        "chosen": names[full],
        "agreement": float((picked == full).mean()),
        "median": float(np.exp(np.median(logs.mean(axis=1)))),
        "splits": int(splits),
    }


def holdout_text(holdout: Mapping[str, Any] | None, reference: str) -> str:
    """One sentence on a :func:`choice_holdout` result ("" without one), for the output of
    ``eval/select_checkpoint.py`` and the model card.

    :param holdout: the result (``None``: a selection made before it was recorded)
    :param reference: the reference scheduler's name
    """
    if not holdout:
        return ""
    return (
        f"Chosen on a random half of the windows and scored on the other half "
        f"({int(holdout['splits']):,} splits), the choice scores "
        f"{float(holdout['geo_ratio']):.3f} x {reference} (middle 95 % of the splits "
        f"{float(holdout['low']):.3f}-{float(holdout['high']):.3f}): what to expect on fresh "
        f"windows of this range, where the chosen ratio is biased low by the choice itself. "
        f"{100 * float(holdout['agreement']):.0f} % of the halves choose the same checkpoint"
        + (
            f"; the median candidate scores {float(holdout['median']):.3f}."
            if holdout.get("median") is not None
            else "."
        )
    )


def p_below_one(cell: Mapping[str, Any], confidence: float = 0.95) -> float:
    """One-sided p-value of "the ratio is not below 1", read from a paired comparison's
    ratio and the upper end of its interval (when the per-window values are not at hand,
    as in model cards written before they were stored).

    The log of the geometric-mean ratio is a mean over windows, close to normal; the
    interval's upper half gives its standard error, ``(ln high - ln ratio) / z`` with ``z``
    the normal quantile of the interval's upper end (1.96 for 95 %). The p-value is
    ``Phi(ln ratio / se)``: exactly ``(1 - confidence) / 2`` (0.025) when the upper end is
    1, below it exactly when the whole interval is below 1, so the unadjusted verdict and
    this p-value never disagree. Its values feed :func:`holm`, to count how many of several
    agents tested on one trace stay below 1 when every look is paid for.

    :param cell: ``geo_ratio`` and ``ci_high`` (a :class:`PairedComparison` dict)
    :param confidence: the interval's coverage (two-sided)
    :raises ValueError: a ratio or upper end that is not positive, or an upper end below
        the ratio
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    g, hi = float(cell["geo_ratio"]), float(cell["ci_high"])
    if not (g > 0 and hi > 0) or hi < g:
        raise ValueError(
            f"p_below_one needs 0 < geo_ratio <= ci_high, got geo_ratio {g}, ci_high {hi}"
        )
    if hi == g:  # no spread: the ratio is what it is
        return 0.0 if g < 1.0 else 1.0
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    return NormalDist().cdf(math.log(g) / ((math.log(hi) - math.log(g)) / z))


def bootstrap_p_below_one(
    values: Sequence[float],
    reference: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | np.random.Generator = DEFAULT_SEED,
) -> float:
    """One-sided bootstrap p-value of "the ratio is not below 1" from the per-window
    values: the share of the resamples of :func:`bootstrap_interval` (the same windows
    drawn with the same seed) whose geometric-mean ratio is 1 or more.

    With the default resamples it is at most 0.025 when the 95 % interval's upper end is
    below 1 and at least 0.025 when the upper end is above 1 (the percentile interpolates
    between neighbouring resamples), so it agrees with the verdict. Prefer it to
    :func:`p_below_one` (the normal approximation from the interval alone) where the
    per-window values are stored.

    :param values: the method's value per window
    :param reference: the reference's value on the same windows, in the same order
    :param resamples: bootstrap resamples (at least :data:`MIN_RESAMPLES`)
    :param seed: seed of the ``numpy`` Generator (or a Generator)
    """
    means = bootstrap_log_means(_log_ratios(values, reference), resamples, seed)
    return float(np.mean(means >= 0.0))


def holm(pvalues: Sequence[float], alpha: float = VERDICT_ALPHA) -> list[bool]:
    """Holm's step-down test of several hypotheses at family-wise error ``alpha``: which
    are rejected when all ``k`` were looked at.

    The p-values are taken in increasing order and the ``j``-th (from 0) is rejected while
    ``p <= alpha / (k - j)``; the first that is not stops the rejections. It holds the
    chance of any false claim among the ``k`` at ``alpha`` whatever their dependence, and
    rejects at least what Bonferroni's ``alpha / k`` does. The default,
    :data:`VERDICT_ALPHA` (one-sided), matches the single test "the 95 % interval is below
    1" (:func:`p_below_one`).

    :param pvalues: one p-value per hypothesis
    :param alpha: the family-wise error rate
    :return: per hypothesis, in the given order, whether it is rejected
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    p = [float(v) for v in pvalues]
    if any(not 0.0 <= v <= 1.0 for v in p):
        raise ValueError(f"p-values must be in [0, 1], got {p}")
    rejected = [False] * len(p)
    for j, i in enumerate(sorted(range(len(p)), key=lambda i: p[i])):
        if p[i] > alpha / (len(p) - j):
            break
        rejected[i] = True
    return rejected
