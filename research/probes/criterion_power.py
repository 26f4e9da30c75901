"""How large a gain does the test criterion detect? (never the test split)

The test criterion calls a method *better* than a reference when the paired geometric-mean AVEbsld
ratio over 30 test windows has its 95 % bootstrap interval below 1 (and, with several
agents tested on one trace, when its p-value survives Holm's rule). This probe asks
how often that criterion is met by a method whose true ratio over the system is ``delta``,
for a test of the same shape as the real one, using only the range *before* the test
split:

1. the method and the reference are played on windows starting every ``--step`` jobs
   across ``[0, b)``, ``b`` the first job of the test split (train and validation jobs),
   and the per-window log ratio ``ln(x_i / r_i)`` is taken; its mean over the grid is
   subtracted, so what remains is the method's *noise* around a ratio of 1: how its
   windows scatter, how neighbouring windows agree, how periods differ;
2. a simulated test takes a sub-range as long as the real test range (``n - b`` jobs) at a
   uniform position in ``[0, b)``, draws ``--windows`` starts uniformly in it as the test
   sampler does, each moved to the nearest grid start, and computes the percentile
   bootstrap of the mean log ratio as ``hpcgym.evaluation.statistics`` does;
3. adding ``ln delta`` to every window shifts every bootstrap mean by ``ln delta``, so the
   criterion holds at ``delta`` exactly when the bootstrap's upper quantile ``U`` (the
   97.5th percentile; ``1 - 0.025 / k`` with Holm's rule over ``k`` agents, the first
   step's threshold) is below ``-ln delta``. One bootstrap per simulated test gives the
   power at every ``delta``: ``P(U < -ln delta)``.

The model is the simplest one: a constant multiplicative gain on every window, with the
scatter of an existing method (an agent's against its reference: agents whose
choices stay close to the reference's scatter less and are easier to tell apart). Drawing
the sub-range at random positions carries the differences between periods of the trace
into the power, as a claim about the system's time beyond the test period needs; with
``delta = 1`` the power is the criterion's rate of false claims under that variation (0.025
if the windows were independent draws from the system). Starts move to a grid (at most
``step / 2`` jobs), an approximation where neighbouring windows correlate (docs/evaluation.md,
*What a test interval covers*)::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/criterion_power.py --trace HPC2N \\
        --reference ELOSS --method hpc2n-fcfs-guarded-eloss-cmaes-h4 --family 6 --jobs 2

Results and their reading: docs/research/findings.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.criterion_power`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.criterion_power", *sys.argv[1:]]
    )

from hpcgym.evaluation.statistics import VERDICT_ALPHA, bootstrap_log_means  # noqa: E402

#: The true ratios the table reports the power at.
DELTAS: tuple[float, ...] = (0.80, 0.85, 0.90, 0.93, 0.95, 0.97, 1.00)


@dataclass(frozen=True)
class PowerCurve:
    """Upper bootstrap quantiles of simulated tests of a method with no gain.

    :param upper: ``{k: U per simulated test}``, ``U`` the ``1 - VERDICT_ALPHA / k`` quantile of
        the bootstrap mean log ratio of the centred windows
    :param test_means: each simulated test's mean log ratio (centred)
    :param sd: standard deviation of the per-window log ratio over the grid
    """

    upper: dict[int, np.ndarray]
    test_means: np.ndarray
    sd: float

    def power(self, delta: float, k: int = 1, at_most: float | None = None) -> float:
        """Share of simulated tests that meet the criterion when every window's ratio is
        multiplied by ``delta`` (with Holm's first threshold over ``k`` tests).

        :param at_most: also ask the test's ratio itself to be at most this (the FCFS
            own-trace target's "ratio <= 0.85")
        """
        if delta <= 0 or (at_most is not None and at_most <= 0):
            raise ValueError(f"delta and at_most must be positive, got {delta}, {at_most}")
        met = self.upper[k] < -math.log(delta)
        if at_most is not None:
            met &= self.test_means + math.log(delta) <= math.log(at_most)
        return float(np.mean(met))

    def detectable(self, power: float, k: int = 1, at_most: float | None = None) -> float:
        """The true ratio ``delta`` met with probability ``power``: ``exp(-quantile(U))``,
        or with ``at_most`` the same quantile of ``max(U, test mean - ln at_most)``."""
        if not 0.0 < power < 1.0:
            raise ValueError(f"power must be in (0, 1), got {power}")
        need = self.upper[k]
        if at_most is not None:
            need = np.maximum(need, self.test_means - math.log(at_most))
        return float(np.exp(-np.quantile(need, power)))


def simulate_tests(
    logs: np.ndarray,
    grid: np.ndarray,
    *,
    range_jobs: int,
    length: int,
    windows: int,
    draws: int,
    resamples: int,
    family: tuple[int, ...] = (1,),
    rng: np.random.Generator,
) -> PowerCurve:
    """Simulated tests of ``windows`` windows on sub-ranges of ``range_jobs`` jobs.

    :param logs: per-window log ratio of the method at each grid start
    :param grid: the grid's window starts, increasing
    :param range_jobs: jobs of a simulated test range (the real test range's length)
    :param length: jobs per window
    :param windows: windows per simulated test
    :param draws: simulated tests
    :param resamples: bootstrap resamples per simulated test
    :param family: the Holm family sizes ``k`` to report
    :param rng: every random choice
    :raises ValueError: shapes that disagree, or a test range that the grid does not cover
    """
    logs = np.asarray(logs, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.int64)
    if logs.shape != grid.shape or logs.ndim != 1 or len(grid) < 2:
        raise ValueError(f"need one log ratio per grid start, got {logs.shape} and {grid.shape}")
    if np.any(np.diff(grid) <= 0):
        raise ValueError("grid starts must increase")
    if not np.isfinite(logs).all():
        raise ValueError("log ratios must be finite")
    span = int(grid[-1]) + length - int(grid[0])
    if range_jobs < length or range_jobs > span:
        raise ValueError(
            f"a test range of {range_jobs} jobs needs {length} <= range <= {span} "
            "(the jobs the grid covers)"
        )
    if windows < 2 or draws < 1:
        raise ValueError("need windows >= 2 and draws >= 1")
    if any(k < 1 for k in family):
        raise ValueError(f"family sizes must be >= 1, got {family}")
    centred = logs - logs.mean()
    first, last_range = int(grid[0]), int(grid[-1]) + length - range_jobs
    levels = [1.0 - VERDICT_ALPHA / k for k in family]
    upper = {k: np.empty(draws) for k in family}
    means = np.empty(draws)
    for d in range(draws):
        lo = int(rng.integers(first, last_range + 1))
        starts = rng.integers(lo, lo + range_jobs - length + 1, size=windows)
        pos = np.clip(np.searchsorted(grid, starts), 1, len(grid) - 1)
        nearer_left = (starts - grid[pos - 1]) <= (grid[pos] - starts)
        idx = np.where(nearer_left, pos - 1, pos)
        sample = centred[idx]
        means[d] = sample.mean()
        boot = bootstrap_log_means(sample, resamples, rng)
        for k, q in zip(family, np.quantile(boot, levels), strict=True):
            upper[k][d] = q
    return PowerCurve(upper=upper, test_means=means, sd=float(logs.std(ddof=1)))


def normal_detectable(
    sd: float, windows: int, power: float, k: int = 1, at_most: float | None = None
) -> float:
    """The true ratio met with probability ``power`` by independent windows of log-ratio
    standard deviation ``sd`` (the normal approximation, for the scatter a card's stored
    test measured): ``exp(-(z(power) se + z(1 - VERDICT_ALPHA / k) se))``, ``se = sd /
    sqrt(windows)``; with ``at_most`` the interval's term is ``max(z(1 - VERDICT_ALPHA / k) se,
    -ln at_most)`` (the ratio itself must also be at most ``at_most``)."""
    if sd < 0 or windows < 2 or not 0.0 < power < 1.0 or k < 1:
        raise ValueError(
            f"need sd >= 0, windows >= 2, 0 < power < 1, k >= 1; got {sd}, {windows}, {power}, {k}"
        )
    z = NormalDist().inv_cdf
    se = sd / math.sqrt(windows)
    bound = z(1.0 - VERDICT_ALPHA / k) * se
    if at_most is not None:
        bound = max(bound, -math.log(at_most))
    return math.exp(-(z(power) * se + bound))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="registered trace name")
    ap.add_argument(
        "--method",
        required=True,
        help="comma-separated scheduler names / agents whose scatter is used",
    )
    ap.add_argument("--reference", default="EASY-SJBF", help="reference scheduler")
    ap.add_argument("--length", type=int, default=1024, help="jobs per window (1024)")
    ap.add_argument("--step", type=int, default=256, help="jobs between grid starts (256)")
    ap.add_argument("--windows", type=int, default=30, help="windows per test (30)")
    ap.add_argument("--family", type=int, default=1, help="Holm's k besides 1 (1: only 1)")
    ap.add_argument(
        "--at-most",
        type=float,
        default=None,
        help="the test's ratio must also be at most this (the FCFS own-trace target: 0.85)",
    )
    ap.add_argument(
        "--stored-test",
        nargs="+",
        default=None,
        metavar="CARD",
        help="also the scatter these cards' stored tests on --trace measured (read, never "
        "replayed), and the ratio it would detect",
    )
    ap.add_argument("--draws", type=int, default=4000, help="simulated tests (4,000)")
    ap.add_argument("--resamples", type=int, default=10_000, help="bootstrap (10,000)")
    ap.add_argument("--seed", type=int, default=0, help="simulation seed (0)")
    ap.add_argument(
        "--out", type=Path, default=None, help="write the grid, its log ratios and the powers"
    )
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    args = ap.parse_args(argv)
    if args.step <= 0 or args.length <= 0 or args.family < 1 or args.draws < 1:
        ap.error("--step, --length, --family and --draws must be positive")
    from hpcgym.workload import load, split_range, trace_spec
    from research.probes._played import named_methods, played_log_ratios

    wl = load(trace_spec(args.trace))
    test_lo, n = split_range(len(wl), "test")
    grid = np.arange(0, test_lo - args.length + 1, args.step)
    range_jobs = n - test_lo
    if args.length > range_jobs:
        ap.error(f"--length {args.length} is longer than {args.trace}'s test range ({range_jobs})")
    if len(grid) < 2 or range_jobs > int(grid[-1]) + args.length:
        ap.error(
            f"{args.trace}: the windows before the test split (jobs [0, {test_lo}), every "
            f"{args.step} jobs) do not cover a range as long as the test's ({range_jobs} jobs)"
        )
    methods = named_methods(args.method, ap)
    logs = played_log_ratios(wl, methods, args.reference, grid.tolist(), args.length, args.jobs)
    family = (1,) if args.family == 1 else (1, args.family)
    print(
        f"{args.trace}: {len(grid)} windows of {args.length} jobs every {args.step} jobs in "
        f"[0, {test_lo}) (the test split, not played, from job {test_lo}); {args.draws:,} "
        f"simulated tests of {args.windows} windows on {range_jobs:,}-job sub-ranges; "
        f"criterion: the {args.resamples:,}-resample bootstrap interval vs {args.reference} "
        "below 1 (k = 1), or Holm's first threshold 0.025 / k"
        + ("" if args.at_most is None else f", and the ratio at most {args.at_most}")
        + ".\n"
    )
    head = " | ".join(f"{d:.2f}" for d in DELTAS)
    print(
        f"| method (its scatter) | window SD | test-mean SD (naive) | k | power at true ratio "
        f"{head} | ratio met at 50 % / 80 % |"
    )
    print("|---|---:|---:|---:|" + "---:|" * len(DELTAS) + "---|")
    record: dict = {"trace": args.trace, "reference": args.reference, "grid": grid.tolist()}
    record.update(length=args.length, windows=args.windows, range_jobs=range_jobs, methods={})
    for m in methods:
        curve = simulate_tests(
            logs[m.label],
            grid,
            range_jobs=range_jobs,
            length=args.length,
            windows=args.windows,
            draws=args.draws,
            resamples=args.resamples,
            family=family,
            rng=np.random.default_rng(args.seed),
        )
        naive = curve.sd / math.sqrt(args.windows)
        record["methods"][m.label] = {
            "log_ratios": logs[m.label].tolist(),
            "power": {
                str(k): {f"{d:.2f}": curve.power(d, k, args.at_most) for d in DELTAS}
                for k in family
            },
        }
        for k in family:
            cells = " | ".join(f"{curve.power(d, k, args.at_most):.2f}" for d in DELTAS)
            print(
                f"| {m.label} | {curve.sd:.3f} | {curve.test_means.std():.3f} ({naive:.3f}) | "
                f"{k} | {cells} | {curve.detectable(0.5, k, args.at_most):.3f} / "
                f"{curve.detectable(0.8, k, args.at_most):.3f} |"
            )

    if args.stored_test:
        _stored_scatter(args, [m.label for m in methods], family)
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"\nwrote {args.out}")


def _stored_scatter(args: argparse.Namespace, labels: list[str], family: tuple[int, ...]) -> None:
    """The second table of :func:`main`: the test range's own scatter, from the cards."""
    from research.probes._played import merge_stored_tests, stored_test_row

    merged = merge_stored_tests(
        [stored_test_row(c, args.trace, args.reference, labels) for c in args.stored_test]
    )
    if merged is None:
        print(f"\nno card of --stored-test holds a test on {args.trace} vs {args.reference}")
        return
    print(
        f"\nThe test range's own scatter (stored test, window seed {merged['seed']}, "
        f"{merged['windows']} windows; read from the cards, nothing replayed) and the true "
        "ratio it would detect four times in five (normal approximation, windows taken as "
        "independent, a constant gain on every window"
        + ("" if args.at_most is None else f"; the ratio at most {args.at_most}")
        + "):\n"
    )
    print("| method | test window SD | tied windows | k | ratio met at 80 % |")
    print("|---|---:|---:|---:|---:|")
    for label in labels:
        logs = merged["log_ratios"].get(label)
        if logs is None:
            continue
        sd = float(np.std(logs, ddof=1))
        for k in family:
            print(
                f"| {label} | {sd:.3f} | {int(np.sum(logs == 0.0))}/{len(logs)} | {k} | "
                f"{normal_detectable(sd, len(logs), 0.8, k, args.at_most):.3f} |"
            )


if __name__ == "__main__":
    main()
