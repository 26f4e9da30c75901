"""A randomized scheduler's ratio pooled over its decider seeds, from compare outputs.

A Monte Carlo decider (``LOOKAHEAD1-ONLINE``: its futures are drawn) gives another per-window
AVEbsld with another ``seed=``; one seed's ratio to a reference then carries the
decider's own noise besides the windows'. This script reads the ``windows.csv`` of one or
more ``eval/compare.py`` runs on the *same windows* (same trace, starts and length),
groups the methods that differ only in their ``seed=`` option (``seed`` absent is the
decider's default, 0), and prints per group each seed's paired geometric-mean ratio to
``--reference`` and the *pooled* ratio: per window, the mean over the seeds of the log
ratio, with its 95 % percentile bootstrap interval over the windows
(``hpcgym.evaluation.statistics``). Its *seed spread* is the mean absolute difference,
window by window, between the log ratios of the group's first two seeds::

    python research/probes/seed_pooled.py /tmp/a/windows.csv /tmp/b/windows.csv \\
        --reference ELOSS

Nothing is played: the values are the compare runs' own.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.seed_pooled`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.seed_pooled", *sys.argv[1:]])

from research.probes._played import log_ratio_cell  # noqa: E402

_SEED = re.compile(r",seed=([0-9]+)(?=,|$)")


def split_seed(method: str) -> tuple[str, int]:
    """``("LOOKAHEAD1-ONLINE,a=1", 3)`` for ``"LOOKAHEAD1-ONLINE,a=1,seed=3"``; seed 0 when
    absent."""
    m = _SEED.search(method)
    if m is None:
        return method, 0
    return method[: m.start()] + method[m.end() :], int(m.group(1))


def read_windows(paths: list[Path]) -> dict[str, dict[int, float]]:
    """``{method: {start: AVEbsld}}`` over the ``windows.csv`` files; one trace and
    length only, and a method's value on a start the same in every file."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    seen: set[tuple[str, str]] = set()
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                seen.add((row["trace"], row["length"]))
                start, value = int(row["start"]), float(row["avg_bsld"])
                old = out[row["method"]].get(start)
                if old is not None and old != value:
                    raise ValueError(
                        f"{path}: {row['method']} on window {start} gives {value}, another "
                        f"file {old}: not the same run"
                    )
                out[row["method"]][start] = value
    if len(seen) > 1:
        raise ValueError(f"the files mix traces or lengths: {sorted(seen)}")
    return dict(out)


def pooled_rows(
    values: dict[str, dict[int, float]], reference: str, resamples: int = 10_000
) -> list[dict[str, object]]:
    """One row per method group (``split_seed``): its seeds, each seed's cell and the
    pooled cell (:func:`research.probes._played.log_ratio_cell`) on the windows every member and the
    reference share, and the mean absolute per-window difference of log ratios between
    its first two seeds (``None`` with one seed)."""
    if reference not in values:
        raise ValueError(f"no reference {reference!r}; methods: {', '.join(sorted(values))}")
    ref = values[reference]
    groups: dict[str, dict[int, str]] = defaultdict(dict)
    for method in values:
        if method != reference:
            base, seed = split_seed(method)
            if seed in groups[base]:
                raise ValueError(f"{method!r} and {groups[base][seed]!r} are one seed")
            groups[base][seed] = method
    rows = []
    for base, members in groups.items():
        seeds = sorted(members)
        starts = sorted(set(ref).intersection(*(values[members[s]] for s in seeds)))
        if not starts:
            raise ValueError(f"{base}: no window shared by every seed and the reference")
        r = np.array([ref[s] for s in starts])
        logs = np.array([[np.log(values[members[k]][s]) for s in starts] for k in seeds])
        logs -= np.log(r)
        rows.append(
            {
                "method": base,
                "seeds": seeds,
                "per_seed": [log_ratio_cell(v, resamples, 0) for v in logs],
                "pooled": log_ratio_cell(logs.mean(axis=0), resamples, 0),
                "seed_spread": None
                if len(seeds) < 2
                else float(np.mean(np.abs(logs[0] - logs[1]))),
            }
        )
    return rows


def _cell(c: dict[str, object]) -> str:
    if c["ci_low"] is None:
        return f"{c['geo_ratio']:.3f}"
    return f"{c['geo_ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path, help="windows.csv of eval/compare.py runs")
    p.add_argument("--reference", default="ELOSS")
    args = p.parse_args(argv)
    try:
        rows = pooled_rows(read_windows(args.files), args.reference)
    except (ValueError, KeyError) as exc:
        p.error(str(exc))
    print(f"| method (x {args.reference}) | seeds | each seed | pooled [95 %] | seed spread |")
    print("|---|---|---|---|---:|")
    for row in rows:
        each = " / ".join(f"{c['geo_ratio']:.3f}" for c in row["per_seed"])
        spread = "—" if row["seed_spread"] is None else f"{row['seed_spread']:.3f}"
        seeds = ", ".join(map(str, row["seeds"]))
        print(f"| {row['method']} | {seeds} | {each} | {_cell(row['pooled'])} | {spread} |")


if __name__ == "__main__":
    main()
