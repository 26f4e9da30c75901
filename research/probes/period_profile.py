"""Is a method's gain the same in every period of a trace? (never the test split)

The CMA-ES searches of a linear backfilling score (``research/search/``) gain on their
train windows and lose it on the validation windows (docs/research/findings.md). Two
readings: the search fits the noise of the windows it sees (then every period of the
training range looks alike, and the validation range is one more such period), or the
trace's periods differ (then a method's ratio moves from period to period, and a gain
found over the whole training range need not hold in the next period). This plays each
``--method`` and the ``--reference`` on windows starting every ``--step`` jobs across the
train split and, on a grid of its own, across the validation split (no window mixes the
two; the test split is never played), groups the train split's windows by start into
``--periods`` equal slices and takes the validation split's as the last period, and prints
per period the paired geometric-mean AVEbsld ratio with its 95 % bootstrap interval::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/period_profile.py \\
        --trace SDSC-SP2 --method sdsc-sp2-fcfs-guarded-cmaes-w256,ELOSS \\
        --reference EASY-SJBF --jobs 2

``--method`` is a comma-separated list of scheduler names (``ELOSS``, ``SJF+ELOSS``...)
and agents' names / cards (the zoo's or the retired agents'), all played on the same
windows. Below the table, per method, a permutation test of "the periods differ": the
statistic is the between-period sum of squares of the per-window log ratios, ``sum_g n_g
(mean_g - mean)^2``, and its p-value the share of ``--permutations`` random reassignments
of the windows to the periods (same period sizes) that reach it. The test treats the
windows as exchangeable, which holds for windows that do not overlap (the default
``--step``, the window length: each window starts from an empty machine and shares no job
with another); with overlapping windows neighbours are alike and the p-value would be too
small, so it is not printed. Beside it, a test of a steady drift: the least-squares slope
of the log ratios on the windows' starts, with its permutation p-value (same assumption).
With two or more methods the script also gives the correlation of their per-period log
ratios: whether they gain and lose in the same periods.

The windows' starts are fixed by ``--step`` (no randomness); the bootstrap and the
permutations draw from ``numpy`` Generators seeded with ``--seed``. ``--out FILE`` writes
the per-window values and the table as JSON. ``--stored-test CARD [CARD ...]`` adds a row of
the ratios that agents' held-out tests on the trace *stored* on their cards, for the
methods of ``--method`` that those tests played (the reference heuristics, and each
agent itself; a method's values from the first card that holds them, all cards tested on
the same windows): the test range read back, never played again. docs/research/findings.md
has the SDSC-SP2 and HPC2N figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.period_profile`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.period_profile", *sys.argv[1:]]
    )

from research.probes._played import merge_stored_tests, stored_test_row  # noqa: E402


@dataclass(frozen=True)
class Period:
    """One period of the range before the test split.

    :param name: ``"1"``, ``"2"``, ... for the train split's slices, ``"validation"``
    :param lo: first job of the period's windows' starts
    :param hi: one past the last job any of its windows covers
    :param index: the windows (positions in the starts) whose start lies in the period
    """

    name: str
    lo: int
    hi: int
    index: tuple[int, ...]


def periods_of(starts: np.ndarray, length: int, validation: int, periods: int) -> list[Period]:
    """Group windows by start: ``periods`` equal slices of ``[0, validation)`` (the train
    split), then one period of the windows starting at or after ``validation``.

    :param starts: window starts, increasing
    :param length: jobs per window
    :param validation: first job of the validation split
    :param periods: slices of the train split (at least 1)
    :return: the non-empty periods in time order
    :raises ValueError: fewer than one slice, or starts not increasing
    """
    s = np.asarray(starts, dtype=np.int64)
    if periods < 1:
        raise ValueError(f"periods must be >= 1, got {periods}")
    if len(s) > 1 and (np.diff(s) <= 0).any():
        raise ValueError("window starts must be increasing")
    edges = np.linspace(0, validation, periods + 1)
    out: list[Period] = []
    for g in range(periods):
        last = g == periods - 1
        inside = (s >= edges[g]) & ((s < edges[g + 1]) if not last else (s < validation))
        idx = np.flatnonzero(inside)
        if len(idx):
            out.append(
                Period(str(g + 1), int(s[idx[0]]), int(s[idx[-1]]) + length, tuple(idx.tolist()))
            )
    idx = np.flatnonzero(s >= validation)
    if len(idx):
        out.append(
            Period("validation", int(s[idx[0]]), int(s[idx[-1]]) + length, tuple(idx.tolist()))
        )
    return out


def between_sum_of_squares(logs: np.ndarray, groups: list[tuple[int, ...]]) -> float:
    """``sum_g n_g (mean_g - mean)^2`` of the values in ``groups`` (positions in
    ``logs``), ``mean`` over the grouped values."""
    vals = np.concatenate([logs[list(g)] for g in groups])
    mean = vals.mean()
    return float(sum(len(g) * (logs[list(g)].mean() - mean) ** 2 for g in groups))


def permutation_p(
    logs: np.ndarray, groups: list[tuple[int, ...]], permutations: int, rng: np.random.Generator
) -> float:
    """Share of random reassignments of the grouped values to groups of the same sizes
    whose :func:`between_sum_of_squares` reaches the observed one (the observed
    assignment counted once: ``(1 + hits) / (1 + permutations)``).

    :raises ValueError: fewer than two groups or fewer than 1 permutation
    """
    if len(groups) < 2:
        raise ValueError("a between-period test needs at least two periods")
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    vals = np.concatenate([logs[list(g)] for g in groups])
    consecutive = _consecutive([len(g) for g in groups])
    observed = between_sum_of_squares(vals, consecutive)
    hits = sum(
        between_sum_of_squares(rng.permutation(vals), consecutive) >= observed - 1e-12
        for _ in range(permutations)
    )
    return (1 + hits) / (1 + permutations)


def trend_p(
    starts: np.ndarray, logs: np.ndarray, permutations: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Least-squares slope of the per-window values on the windows' starts, in value per
    10,000 jobs, and its two-sided permutation p-value: the share of random reassignments
    of the values to the starts whose slope is at least as far from 0 (the observed one
    counted once). A steady drift over the range shows here before the periods differ.

    :raises ValueError: fewer than three windows, or fewer than 1 permutation
    """
    x = np.asarray(starts, dtype=np.float64) / 10_000.0
    y = np.asarray(logs, dtype=np.float64)
    if len(x) < 3 or len(x) != len(y):
        raise ValueError("a trend needs at least three windows, one value each")
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean())) / sxx
    shuffled = np.stack([rng.permutation(y) for _ in range(permutations)])
    slopes = shuffled @ xc / sxx
    hits = int(np.sum(np.abs(slopes) >= abs(slope) - 1e-12))
    return slope, (1 + hits) / (1 + permutations)


def _consecutive(sizes: list[int]) -> list[tuple[int, ...]]:
    out, at = [], 0
    for n in sizes:
        out.append(tuple(range(at, at + n)))
        at += n
    return out


def _cell(logs: np.ndarray, index: tuple[int, ...], resamples: int, seed: int) -> dict:
    from research.probes._played import log_ratio_cell

    return log_ratio_cell(logs[list(index)], resamples, seed)


def _fmt(cell: dict) -> str:
    if cell["ci_low"] is None:
        return f"{cell['geo_ratio']:.3f}"
    return f"{cell['geo_ratio']:.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="registered trace name")
    ap.add_argument("--method", required=True, help="comma-separated scheduler names / agents")
    ap.add_argument("--reference", default="EASY-SJBF", help="reference scheduler")
    ap.add_argument("--length", type=int, default=1024, help="jobs per window (1024)")
    ap.add_argument("--step", type=int, default=None, help="jobs between starts (--length)")
    ap.add_argument("--periods", type=int, default=6, help="slices of the train split (6)")
    ap.add_argument("--permutations", type=int, default=10_000, help="(10,000)")
    ap.add_argument("--resamples", type=int, default=10_000, help="bootstrap (10,000)")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap / permutation seed (0)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument(
        "--stored-test",
        nargs="+",
        default=None,
        metavar="CARD",
        help="add the ratios of the methods stored in these cards' tests on --trace (read, "
        "never replayed; each method from the first card that holds it)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = ap.parse_args(argv)
    step = args.step or args.length
    if step <= 0 or args.length <= 0 or args.periods < 1:
        ap.error("--step, --length and --periods must be positive")

    from hpcgym.evaluation.statistics import MIN_RESAMPLES

    if args.resamples < MIN_RESAMPLES or args.permutations < 1:
        ap.error(f"--resamples must be at least {MIN_RESAMPLES}, --permutations at least 1")
    from hpcgym.workload import load, split_range, trace_spec
    from research.probes._played import named_methods, played_log_ratios, split_grids

    wl = load(trace_spec(args.trace))
    validation, end = split_range(len(wl), "validation")
    # two grids, so that no window mixes train and validation jobs
    starts = split_grids(validation, end, args.length, step)
    if len(starts) < 2:
        ap.error(f"{args.trace}'s range before its test split is too short for the windows")
    methods = named_methods(args.method, ap)
    logs = played_log_ratios(wl, methods, args.reference, starts.tolist(), args.length, args.jobs)
    groups = periods_of(starts, args.length, validation, args.periods)
    overlap = step < args.length
    print(
        f"{args.trace}: {len(starts)} windows of {args.length} jobs starting every {step} "
        f"jobs in the train split [0, {validation}) and in the validation split "
        f"[{validation}, {end}); the test split (not played) from job {end}. Paired geometric-mean "
        f"AVEbsld ratio vs {args.reference} [95 % bootstrap interval] per period.\n"
    )
    labels = [m.label for m in methods]
    print("| period | jobs | windows | " + " | ".join(labels) + " |")
    print("|---|---|---:|" + "---:|" * len(labels))
    table: list[dict] = []
    train_idx = tuple(i for g in groups if g.name != "validation" for i in g.index)
    rows = [(g.name, g.lo, g.hi, g.index) for g in groups]
    if train_idx:
        rows.append(("train split", 0, int(starts[train_idx[-1]]) + args.length, train_idx))
    for name, lo, hi, index in rows:
        cells = {k: _cell(v, index, args.resamples, args.seed) for k, v in logs.items()}
        table.append({"period": name, "lo": lo, "hi": hi, "windows": len(index), **cells})
        print(
            f"| {name} | {lo:,}-{hi:,} | {len(index)} | "
            + " | ".join(_fmt(cells[k]) for k in labels)
            + " |"
        )
    if args.stored_test:
        merged = merge_stored_tests(
            [stored_test_row(c, args.trace, args.reference, labels) for c in args.stored_test]
        )
        if merged is None:
            print(f"\nno card of --stored-test holds a test on {args.trace}")
        else:
            cells = {
                k: _cell(v, tuple(range(len(v))), args.resamples, args.seed)
                for k, v in merged["log_ratios"].items()
            }
            table.append({"period": "test (stored)", "cards": merged["cards"], **cells})
            print(
                f"| test (stored, seed {merged['seed']}) | {end:,}-{len(wl):,} | "
                f"{merged['windows']} | "
                + " | ".join(_fmt(cells[k]) if k in cells else "—" for k in labels)
                + " |"
            )
            print(
                "\ntest values read from: "
                + ", ".join(f"{k}: `{c}`" for k, c in merged["cards"].items())
            )
    tests: dict[str, float | None] = {}
    trends: dict[str, dict[str, float]] = {}
    print()
    index_groups = [g.index for g in groups]
    for k, v in logs.items():
        spread = float(np.std([v[list(g)].mean() for g in index_groups], ddof=1))
        if len(index_groups) < 2 or overlap:
            tests[k] = None
            why = "overlapping windows" if overlap else "one period"
            print(f"{k}: SD of the period log ratios {spread:.3f} (no test: {why})")
            continue
        p = permutation_p(v, index_groups, args.permutations, np.random.default_rng(args.seed))
        slope, p_trend = trend_p(starts, v, args.permutations, np.random.default_rng(args.seed))
        tests[k] = p
        trends[k] = {"slope_per_10k_jobs": slope, "p": p_trend}
        n = sum(map(len, index_groups))
        print(
            f"{k}: SD of the period log ratios {spread:.3f}; test of 'the periods differ': "
            f"permutation p = {p:.4f}; trend {slope:+.3f} in the log ratio per 10,000 jobs, "
            f"p = {p_trend:.4f} ({args.permutations:,} reassignments of {n} windows)"
        )
    correlations: dict[str, float] = {}
    if len(labels) > 1 and len(index_groups) > 2:
        means = {k: np.array([v[list(g)].mean() for g in index_groups]) for k, v in logs.items()}
        print()
        for i, a in enumerate(labels):
            for b in labels[i + 1 :]:
                if np.ptp(means[a]) == 0 or np.ptp(means[b]) == 0:
                    print(f"correlation of the period log ratios, {a} ~ {b}: none (constant)")
                    continue
                r = float(np.corrcoef(means[a], means[b])[0, 1])
                correlations[f"{a} ~ {b}"] = r
                print(f"correlation of the period log ratios, {a} ~ {b}: {r:+.2f}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "trace": args.trace,
                    "reference": args.reference,
                    "length": args.length,
                    "step": step,
                    "validation": validation,
                    "test": end,
                    "starts": starts.tolist(),
                    "log_ratios": {k: v.tolist() for k, v in logs.items()},
                    "periods": [asdict(g) for g in groups],
                    "table": table,
                    "permutation_p": tests,
                    "trend": trends,
                    "correlations": correlations,
                },
                indent=1,
            )
        )
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
