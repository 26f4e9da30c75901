"""The statistics every claim uses: a method against a reference on the same windows.

For per-window AVEbsld values ``x_i`` of a method and ``r_i`` of the reference on the
same windows ``i = 1..n``:

* the **paired geometric-mean ratio** ``exp(mean(log(x_i / r_i)))`` (< 1: the method's
  slowdowns are lower; a ratio, so every window counts the same whatever its scale);
* its **95% percentile bootstrap interval**: the windows are resampled with replacement
  (``resamples`` times, at least 4,000, from a seeded :class:`numpy.random.Generator`),
  the ratio recomputed on each resample, and the 2.5% and 97.5% percentiles taken;
* the **ratio of means** ``mean(x_i) / mean(r_i)`` (what a site sees over the windows
  taken together: the busy windows weigh more) with its own 95% paired bootstrap interval
  (the same resamples, the ratio of the resampled means);
* the **equivalence interval**: the 90% bootstrap interval of the geometric-mean ratio
  (the 5% and 95% percentiles of the same resamples), read by the two one-sided tests
  (TOST, 5% each) against the margin :data:`EQUIVALENCE_MARGIN` (``±5%`` in ratio);
* **wins**: the number of windows where the method's AVEbsld is strictly lower.

The verdict (:attr:`PairedComparison.verdict`, :func:`verdict`) is the only place
generated text takes its words from, over at least :data:`MIN_WINDOWS` (30) windows:
``better`` when the whole 95% interval lies below 1, ``worse`` when it lies above 1,
``on par`` when the equivalence test supports it (the 90% interval lies inside
``[1 / margin, margin]``), and ``inconclusive`` otherwise -- including every comparison
over fewer windows, too few for a claim. :func:`replicated_verdict` combines the verdicts
of two tests (a second test period or trace): a claim holds when both make it.
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
    "EQUIVALENCE_CONFIDENCE",
    "EQUIVALENCE_MARGIN",
    "HOLDOUT_MIN_WINDOWS",
    "MIN_RESAMPLES",
    "MIN_WINDOWS",
    "PairedComparison",
    "VERDICTS",
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
    "ratio_of_means",
    "replicated_verdict",
    "spread",
    "verdict",
    "verdict_caption",
    "wins",
]

#: Bootstrap resamples by default; fewer than :data:`MIN_RESAMPLES` are refused.
DEFAULT_RESAMPLES = 10_000
MIN_RESAMPLES = 4_000
#: Seed of the bootstrap generator by default (results are reproducible).
DEFAULT_SEED = 0
#: Fewest windows for a verdict other than "inconclusive" (the project's rule for a claim).
MIN_WINDOWS = 30
#: The equivalence margin of "on par", a ratio: the method is on par with the reference
#: when its geometric-mean ratio is shown to lie within ``[1 / 1.05, 1.05]`` (±5%).
EQUIVALENCE_MARGIN = 1.05
#: Two-sided coverage of the equivalence interval: 90% (two one-sided tests at 5% each).
EQUIVALENCE_CONFIDENCE = 0.90
#: The verdict words, from the strongest claim down.
VERDICTS: tuple[str, ...] = ("better", "worse", "on par", "inconclusive")
#: One-sided error level of the verdict "the 95 % interval is below 1"; the default
#: family-wise level of :func:`holm`.
VERDICT_ALPHA = 0.025
#: Random half splits of :func:`choice_holdout` by default.
DEFAULT_SPLITS = 2_000
#: Fewest windows :func:`choice_holdout` splits in halves.
HOLDOUT_MIN_WINDOWS = 4


def _log_ratios(
    values: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray
) -> np.ndarray:
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


def geo_ratio(
    values: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray
) -> float:
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
    return logs[_bootstrap_indices(len(logs), resamples, seed)].mean(axis=1)


def _bootstrap_indices(n: int, resamples: int, seed: int | np.random.Generator) -> np.ndarray:
    """The windows of every bootstrap resample, ``(resamples, n)`` (one draw of the
    Generator: every statistic of a comparison reads the same resamples)."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"use at least {MIN_RESAMPLES} bootstrap resamples, got {resamples}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.integers(0, n, size=(int(resamples), n))


def ratio_of_means(
    values: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray
) -> float:
    """The ratio of means ``mean(values) / mean(reference)`` over the same windows (the
    windows with large values weigh more than in :func:`geo_ratio`).

    :param values: the method's value per window
    :param reference: the reference's value on the same windows, in the same order
    """
    _log_ratios(values, reference)  # same checks
    return float(
        np.mean(np.asarray(values, np.float64)) / np.mean(np.asarray(reference, np.float64))
    )


def bootstrap_interval(
    values: Sequence[float] | np.ndarray,
    reference: Sequence[float] | np.ndarray,
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


def wins(values: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray) -> int:
    """Windows where the method's value is strictly lower than the reference's."""
    _log_ratios(values, reference)  # same checks
    return int(np.sum(np.asarray(values, np.float64) < np.asarray(reference, np.float64)))


@dataclass(frozen=True)
class PairedComparison:
    """A method against a reference on the same windows.

    :param geo_ratio: paired geometric-mean ratio (< 1: lower than the reference)
    :param ci_low: lower end of the 95% bootstrap interval
    :param ci_high: upper end of the 95% bootstrap interval
    :param wins: windows where the method is strictly lower
    :param windows: number of windows
    :param mean_ratio: ratio of means ``mean(x) / mean(r)`` (``None``: not recorded)
    :param mean_low: lower end of its 95% paired bootstrap interval
    :param mean_high: upper end of it
    :param eq_low: lower end of the 90% interval of the geometric-mean ratio (the
        equivalence test's; ``None``: not recorded, the 95% interval stands in for it)
    :param eq_high: upper end of it
    :param margin: the equivalence margin of "on par" (a ratio above 1)
    """

    geo_ratio: float
    ci_low: float
    ci_high: float
    wins: int
    windows: int
    mean_ratio: float | None = None
    mean_low: float | None = None
    mean_high: float | None = None
    eq_low: float | None = None
    eq_high: float | None = None
    margin: float = EQUIVALENCE_MARGIN

    @property
    def equivalent(self) -> bool:
        """Whether the equivalence test (TOST at the :attr:`margin`) says the ratio lies
        within ``[1 / margin, margin]``: the 90% interval does (without one, recorded
        before it was, the 95% interval must: a stricter test)."""
        lo, hi = (
            (self.eq_low, self.eq_high)
            if self.eq_low is not None and self.eq_high is not None
            else (self.ci_low, self.ci_high)
        )
        return 1.0 / self.margin <= lo and hi <= self.margin

    @property
    def verdict(self) -> str:
        """``better`` (95% interval entirely below 1), ``worse`` (entirely above), ``on
        par`` (the equivalence test holds: :attr:`equivalent`) or ``inconclusive``
        (neither, or fewer than :data:`MIN_WINDOWS` windows: too few for a claim)."""
        if self.windows < MIN_WINDOWS:
            return "inconclusive"
        if self.ci_high < 1.0:
            return "better"
        if self.ci_low > 1.0:
            return "worse"
        if self.equivalent:
            return "on par"
        return "inconclusive"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (``geo_ratio, ci_low, ci_high, wins, windows, mean_ratio,
        mean_low, mean_high, eq_low, eq_high, margin``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedComparison:
        """The comparison of a dict with ``geo_ratio, ci_low, ci_high`` (``wins`` and
        ``windows`` default to 0, the ratio of means and the equivalence interval to
        ``None``, the margin to :data:`EQUIVALENCE_MARGIN`), e.g. a row of
        ``summary.csv`` or a table cell.

        :param data: the values
        """

        def opt(key: str) -> float | None:
            v = data.get(key)
            return None if v is None or v == "" else float(v)

        return cls(
            geo_ratio=float(data["geo_ratio"]),
            ci_low=float(data["ci_low"]),
            ci_high=float(data["ci_high"]),
            wins=int(data.get("wins") or 0),
            windows=int(data.get("windows") or 0),
            mean_ratio=opt("mean_ratio"),
            mean_low=opt("mean_low"),
            mean_high=opt("mean_high"),
            eq_low=opt("eq_low"),
            eq_high=opt("eq_high"),
            margin=float(data.get("margin") or EQUIVALENCE_MARGIN),
        )


def verdict_caption(margin: float = EQUIVALENCE_MARGIN) -> str:
    """The sentence explaining the verdict words (every generated table that shows them).

    :param margin: the equivalence margin of the table's comparisons
    """
    pct = 100.0 * (margin - 1.0)
    return (
        f"`verdict`: read over at least {MIN_WINDOWS} windows. A 95% interval of the "
        "geometric-mean ratio entirely below 1 is the only case that claims lower "
        "slowdowns than the reference; one entirely above 1 says *worse*; *on par* needs "
        f"an equivalence test (TOST: the 90% interval inside [1/{margin:g}, {margin:g}], a "
        f"margin of ±{pct:g}% in ratio); anything else, and every comparison over fewer "
        f"than {MIN_WINDOWS} windows, is *inconclusive*. A claim of lower slowdowns from "
        "one test holds where a second test period or trace makes it too "
        "(`hpcgym.evaluation.statistics.replicated_verdict`)."
    )


#: The sentence explaining the verdict words at the default margin.
VERDICT_CAPTION = verdict_caption()


def verdict(cell: Mapping[str, Any] | None) -> str | None:
    """The verdict word of a dict of paired statistics (``None`` without statistics).

    :param cell: ``geo_ratio, ci_low, ci_high`` and ``windows`` (e.g. a summary row;
        ``eq_low, eq_high, margin`` where recorded), or ``None``
    """
    if not cell or any(cell.get(k) is None for k in ("geo_ratio", "ci_low", "ci_high")):
        return None
    return PairedComparison.from_dict(cell).verdict


def replicated_verdict(first: Any, second: Any) -> str | None:
    """The verdict of a claim tested twice (a second test period or a second trace): a
    claim holds only where both tests make it. ``better`` or ``worse`` when both say so,
    ``on par`` when both do, ``inconclusive`` when they disagree or either is; ``None``
    when either test is missing (``None``).

    :param first: the first test: a :class:`PairedComparison`, a dict of paired
        statistics (:func:`verdict`) or a verdict word
    :param second: the second test, in the same forms
    """

    def word(x: Any) -> str | None:
        if x is None:
            return None
        if isinstance(x, PairedComparison):
            return x.verdict
        if isinstance(x, str):
            w = x.split(" (")[0]  # "inconclusive (longer tail)" -> "inconclusive"
            if w not in VERDICTS:
                raise ValueError(f"unknown verdict {x!r}; valid choices: {', '.join(VERDICTS)}")
            return w
        return verdict(x)

    a, b = word(first), word(second)
    if a is None or b is None:
        return None
    return a if a == b else "inconclusive"


def paired_comparison(
    values: Sequence[float] | np.ndarray,
    reference: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int | np.random.Generator = DEFAULT_SEED,
    margin: float = EQUIVALENCE_MARGIN,
) -> PairedComparison:
    """Ratio, bootstrap interval, ratio of means with its interval, equivalence interval
    and wins of ``values`` against ``reference`` (one set of bootstrap resamples for all).

    :param values: the method's value per window
    :param reference: the reference's value on the same windows, in the same order
    :param resamples: bootstrap resamples (at least :data:`MIN_RESAMPLES`)
    :param confidence: coverage of the intervals of the two ratios
    :param seed: seed of the bootstrap generator
    :param margin: equivalence margin of "on par" (a ratio above 1;
        :data:`EQUIVALENCE_MARGIN`)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not margin > 1.0:
        raise ValueError(f"the equivalence margin is a ratio above 1 (1.05: ±5%), got {margin}")
    logs = _log_ratios(values, reference)
    idx = _bootstrap_indices(len(logs), resamples, seed)
    means = logs[idx].mean(axis=1)
    tail = 100.0 * (1.0 - confidence) / 2.0
    eq_tail = 100.0 * (1.0 - EQUIVALENCE_CONFIDENCE) / 2.0
    low, high, eq_low, eq_high = np.exp(
        np.percentile(means, [tail, 100.0 - tail, eq_tail, 100.0 - eq_tail])
    )
    x = np.asarray(values, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    mean_ratios = x[idx].sum(axis=1) / r[idx].sum(axis=1)
    m_low, m_high = np.percentile(mean_ratios, [tail, 100.0 - tail])
    return PairedComparison(
        geo_ratio=geo_ratio(values, reference),
        ci_low=float(low),
        ci_high=float(high),
        wins=wins(values, reference),
        windows=len(values),
        mean_ratio=ratio_of_means(values, reference),
        mean_low=float(m_low),
        mean_high=float(m_high),
        eq_low=float(eq_low),
        eq_high=float(eq_high),
        margin=float(margin),
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
    values: Mapping[str, Sequence[float] | np.ndarray],
    reference: Sequence[float] | np.ndarray,
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
    values: Sequence[float] | np.ndarray,
    reference: Sequence[float] | np.ndarray,
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
