"""How alike are the results of two overlapping windows? (never the test split)

Test windows are drawn uniformly, with replacement, from a split's range, so on a short
range (the Lublin traces' test split has 3,000 jobs) 30 windows of 1,024 jobs overlap a
lot. This measures how much that overlap makes their results alike: a method and a
reference are played on windows starting every ``--step`` jobs across the range *before*
the test split (training and validation ranges: ``[0, b)``), the per-window log ratio
``ln(x_i / r_i)`` of AVEbsld is taken, and its correlation between windows ``d`` jobs apart
is printed for ``d = step, 2 step, ...`` next to the share of jobs two such windows have in
common (``1 - d / length``)::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/window_dependence.py \\
        --trace Lublin-1 --method lublin1-fcfs-guarded-dense-vf03-s1 --reference EASY-SJBF \\
        --step 32 --jobs 2

``--method`` is a scheduler name (``ELOSS``, ``SJF+ELOSS``...) or an agent's name (the
zoo's or a retired agent's) / card. Each window is simulated from an empty machine, so two
windows that share most of their jobs still schedule them differently at first; the
correlation says how much of a window's ratio survives that (docs/evaluation.md, *What a
test interval covers*).

For an agent with a held-out test on the trace, the script then reads the test's
window starts from its card (starts only: no test result is recomputed), and those of the
validation windows its checkpoint was chosen on, and gives for each

* ``rho``: the mean correlation over the pairs of windows, each pair's taken from
  the table at the distance of their starts (:func:`correlation_at`: 1 at distance 0, linear
  between the measured distances, negative values as 0, 0 beyond the table);
* ``n_eff = n / (1 + (n - 1) rho)``: as many independent windows as the ``n`` windows
  are worth for a claim about the system beyond the period of their range;
* the card's paired interval against the reference (the test's; the chosen checkpoint's
  on validation, when it was chosen against the same reference) widened for that by
  ``k = sqrt(n (1 + (n - 1) rho) / ((n - 1) (1 - rho)))`` on the log scale (the variance
  of a mean of correlated windows over the variance the resampling of the windows
  sees). The card's interval is about the mean over the windows of the range, which
  the windows are independent draws from; the widened one treats the range's period
  as one sample of the system's time (an approximation: the correlation measured before
  the test split, and a normal shape). A validation choice's widened interval also
  says how little a short validation range can tell its candidates apart.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.window_dependence`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.window_dependence", *sys.argv[1:]]
    )


@dataclass(frozen=True)
class Lag:
    """The correlation of per-window values at one distance between window starts.

    :param distance: jobs between the two windows' starts
    :param shared: share of jobs the two windows have in common (``1 - d / length``, >= 0)
    :param pairs: window pairs at this distance
    :param correlation: Pearson correlation of their values (``nan`` with < 3 pairs or
        constant values)
    """

    distance: int
    shared: float
    pairs: int
    correlation: float


def lag_correlations(
    starts: np.ndarray, values: np.ndarray, length: int, max_distance: int
) -> list[Lag]:
    """The correlation of ``values`` between windows ``k * step`` jobs apart, for every
    ``k`` with ``k * step <= max_distance`` (``step``: the spacing of ``starts``).

    :param starts: window starts, evenly spaced and increasing
    :param values: one value per window (here the log ratio against the reference)
    :param length: jobs per window (for :attr:`Lag.shared`)
    :param max_distance: the largest distance reported
    :raises ValueError: the starts are not evenly spaced and increasing, fewer than two,
        or not one value per start
    """
    s = np.asarray(starts, dtype=np.int64)
    v = np.asarray(values, dtype=np.float64)
    if s.ndim != 1 or s.shape != v.shape or len(s) < 2:
        raise ValueError("give at least two window starts and one value per start")
    gaps = np.diff(s)
    if gaps[0] <= 0 or not (gaps == gaps[0]).all():
        raise ValueError("window starts must be evenly spaced and increasing")
    step = int(gaps[0])
    out = []
    for k in range(1, len(s)):
        d = k * step
        if d > max_distance:
            break
        a, b = v[:-k], v[k:]
        r = float("nan")
        if len(a) >= 3 and a.std() > 0 and b.std() > 0:
            r = float(np.corrcoef(a, b)[0, 1])
        out.append(Lag(d, max(0.0, 1.0 - d / length), len(a), r))
    return out


def correlation_at(lags: list[Lag], distance: float) -> float:
    """The correlation of two windows ``distance`` jobs apart from a :func:`lag_correlations`
    table: 1 at 0, linear between the table's distances, negative values taken as 0 (and an
    undefined one as 1), 0 beyond the table's last distance.

    :param lags: the table (increasing distances)
    :param distance: jobs between the two starts
    """
    d = abs(float(distance))
    xs = [0.0] + [float(g.distance) for g in lags]
    ys = [1.0] + [1.0 if math.isnan(g.correlation) else max(0.0, g.correlation) for g in lags]
    if d > xs[-1]:
        return 0.0
    return float(np.interp(d, xs, ys))


def mean_pair_correlation(starts: list[int], lags: list[Lag]) -> float:
    """The mean of :func:`correlation_at` over the pairs ``i < j`` of window starts (a window
    drawn twice is a pair at distance 0)."""
    s = [int(x) for x in starts]
    if len(s) < 2:
        raise ValueError("the mean pair correlation needs at least two windows")
    vals = [correlation_at(lags, s[i] - s[j]) for i in range(len(s)) for j in range(i)]
    return float(np.mean(vals))


def widening(n: int, rho: float) -> tuple[float, float]:
    """``(n_eff, k)`` of ``n`` windows with mean pair correlation ``rho`` (module docstring).

    :raises ValueError: ``n < 2`` or ``rho`` outside ``[0, 1)``
    """
    if n < 2 or not 0.0 <= rho < 1.0:
        raise ValueError(f"need n >= 2 and 0 <= rho < 1, got n={n}, rho={rho}")
    n_eff = n / (1.0 + (n - 1) * rho)
    k = math.sqrt(n * (1.0 + (n - 1) * rho) / ((n - 1) * (1.0 - rho)))
    return n_eff, k


def widen(ratio: float, low: float, high: float, k: float) -> tuple[float, float]:
    """The interval ``[low, high]`` around ``ratio`` widened ``k`` times on the log scale."""
    lr = math.log(ratio)
    return math.exp(lr + k * (math.log(low) - lr)), math.exp(lr + k * (math.log(high) - lr))


def _design(
    what: str, starts: list[int], length: int, paired: dict | None, ref: str, lags: list[Lag]
) -> str:
    from hpcgym.evaluation.windows import distinct_jobs

    rho = mean_pair_correlation(starts, lags)
    n_eff, k = widening(len(starts), rho)
    out = [
        f"\n{what}: {len(starts)} windows of {length} jobs holding "
        f"{distinct_jobs(starts, length):,} different jobs; mean pair correlation {rho:.3f}, "
        f"worth {n_eff:.1f} independent windows; widening k = {k:.2f}"
    ]
    if paired:
        lo, hi = widen(paired["geo_ratio"], paired["ci_low"], paired["ci_high"], k)
        out.append(
            f"vs {ref}: {paired['geo_ratio']:.3f} [{paired['ci_low']:.3f}, "
            f"{paired['ci_high']:.3f}] -> widened [{lo:.3f}, {hi:.3f}]"
        )
    return "\n".join(out)


def _other_length(what: str, windows: int, length: int | None) -> str | None:
    if length is None or int(windows) == int(length):
        return None
    return f"\n{what} has windows of {windows} jobs: measure with --length {windows} for it"


def heldout_design(
    card: dict, trace: str, reference: str, lags: list[Lag], length: int | None = None
) -> str | None:
    """The lines on the card's test on ``trace`` (None without one or its starts).
    ``length``: the windows' length the table was measured with; a test on other windows
    is not widened."""
    sec = (card.get("test") or {}).get(trace)
    if not sec or not sec.get("starts"):
        return None
    note = _other_length(f"The card's test on {trace}", int(sec["length"]), length)
    if note:
        return note
    starts = [int(x) for x in sec["starts"]]
    paired = (sec.get("paired") or {}).get(reference)
    return _design(
        f"The card's test on {trace}", starts, int(sec["length"]), paired, reference, lags
    )


def selection_design(
    card: dict, trace: str, reference: str, lags: list[Lag], length: int | None = None
) -> str | None:
    """The lines on the validation windows the card's checkpoint was chosen on, with the
    chosen candidate's interval when the choice was made against ``reference`` (None
    without a selection on ``trace``'s split with its starts). ``length``: the windows'
    length the table was measured with; a choice made on other windows is not widened."""
    sel = card.get("selection") or {}
    if not sel.get("starts") or sel.get("generated") or sel.get("trace") != trace:
        return None
    note = _other_length("The checkpoint choice", int(sel["length"]), length)
    if note:
        return note
    starts = [int(x) for x in sel["starts"]]
    chosen = next((c for c in sel.get("candidates", []) if c["model"] == sel.get("chosen")), None)
    paired = chosen if chosen and sel.get("reference") == reference else None
    what = f"The checkpoint choice's {sel.get('split', 'validation')} windows on {trace}"
    return _design(what, starts, int(sel["length"]), paired, reference, lags)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="registered trace name")
    ap.add_argument("--method", required=True, help="scheduler name or agent / card")
    ap.add_argument("--reference", default="EASY-SJBF", help="reference scheduler")
    ap.add_argument("--length", type=int, default=1024, help="jobs per window (1024)")
    ap.add_argument("--step", type=int, default=64, help="jobs between window starts (64)")
    ap.add_argument("--max-windows", type=int, default=200, help="at most this many (200)")
    ap.add_argument("--max-distance", type=int, default=None, help="default: 2 x length")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    args = ap.parse_args(argv)
    if args.step <= 0 or args.length <= 0 or args.max_windows < 2:
        ap.error("--step and --length must be positive, --max-windows at least 2")

    from hpcgym.workload import load, split_range, trace_spec
    from research.probes._played import named_method, played_log_ratios

    wl = load(trace_spec(args.trace))
    _, end = split_range(len(wl), "train", validation_fraction=0.0)  # [0, b): before test
    last = end - args.length
    if last < args.step:
        ap.error(f"{args.trace}'s range before its test split is too short for the windows")
    starts = list(range(last, -1, -args.step))[: args.max_windows][::-1]
    method, model_card = named_method(args.method)
    logs = played_log_ratios(wl, [method], args.reference, starts, args.length, args.jobs)[
        method.label
    ]
    lags = lag_correlations(
        np.asarray(starts), logs, args.length, args.max_distance or 2 * args.length
    )
    print(
        f"{args.trace}: {method.label} vs {args.reference}, {len(starts)} windows of "
        f"{args.length} jobs starting every {args.step} jobs in [{starts[0]}, "
        f"{starts[-1] + args.length}) (before the test split at job {end}); per-window "
        f"log ratio: mean {logs.mean():+.3f}, SD {logs.std(ddof=1):.3f}\n"
    )
    print("| distance (jobs) | shared jobs | pairs | correlation |\n|---:|---:|---:|---:|")
    for g in lags:
        print(f"| {g.distance} | {g.shared:.2f} | {g.pairs} | {g.correlation:.2f} |")
    if model_card is not None:
        from hpcgym.evaluation.cards import canonical_trace

        name = canonical_trace(args.trace)
        text = heldout_design(model_card.data, name, args.reference, lags, args.length)
        print(text or f"\n{model_card.name} has no held-out test on {args.trace}")
        text = selection_design(model_card.data, name, args.reference, lags, args.length)
        if text:
            print(text)


if __name__ == "__main__":
    main()
