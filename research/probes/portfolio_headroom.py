"""Would choosing a heuristic from the trace's recent past beat the best single one?
(never the test split)

A *portfolio* scheduler (Deng, Verboon and Iosup's periodic portfolio scheduling, 2013)
keeps several schedulers, replays the recent past with each and runs the one that did
best. Before building one into the engine, this asks whether the trace rewards it: each
``--member`` and the ``--reference`` are played on windows starting every ``--step`` jobs
across the train split and, on a grid of its own, the validation split (as
``period_profile.py``; the test split is never played), and per window

* **oracle**: the member with the lowest AVEbsld on the window itself (clairvoyant, and
  favoured by the noise of each window: the best of several noisy draws);
* **past k**: the member with the lowest mean log AVEbsld ratio over the ``k`` latest
  windows that end at least ``--gap`` jobs before this window starts (only jobs already
  submitted, so a scheduler could replay them from the accounting log; with the default
  gap of one window length their jobs have all been submitted a window earlier). Ties go
  to the first member listed.

is set beside each member alone, as the paired geometric-mean AVEbsld ratio against the
reference with its 95 % bootstrap interval, all on the same windows (those with at least
the largest ``k`` of history before them)::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/portfolio_headroom.py \\
        --trace SDSC-SP2 --member ELOSS,EASY++,EASY-SJBF --reference ELOSS --jobs 2

``--member`` is a comma-separated list of scheduler names as ``period_profile.py``'s
``--method`` (``ELOSS,warm=log`` is one member). The windows' starts are fixed by
``--step`` (no randomness); the bootstrap is seeded with ``--seed``. With overlapping
windows (``--step`` below ``--length``) neighbouring windows are alike and the intervals
too narrow; the default step is the window length. ``--out FILE`` writes the per-window
values, choices and rows as JSON. docs/research/findings.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.portfolio_headroom`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.portfolio_headroom", *sys.argv[1:]]
    )


def oracle_choice(logs: np.ndarray) -> np.ndarray:
    """Per window, the member with the lowest log ratio (first on ties).

    :param logs: ``(members, windows)`` log AVEbsld ratios against the reference
    :return: the chosen member per window
    """
    return np.argmin(np.asarray(logs, dtype=np.float64), axis=0)


def past_choice(
    logs: np.ndarray, starts: np.ndarray, length: int, history: int, gap: int
) -> np.ndarray:
    """Per window, the member with the lowest mean log ratio over the ``history`` latest
    windows that end at least ``gap`` jobs before the window's start; -1 where fewer than
    ``history`` such windows exist.

    :param logs: ``(members, windows)`` log ratios, windows in the order of ``starts``
    :param starts: the windows' first jobs, increasing
    :param length: jobs per window
    :param history: windows of the past to score the members on (at least 1)
    :param gap: jobs between the end of a past window and the start of the chosen one
    :raises ValueError: a history below 1, a negative gap, starts not increasing
    """
    v = np.asarray(logs, dtype=np.float64)
    s = np.asarray(starts, dtype=np.int64)
    if history < 1 or gap < 0:
        raise ValueError(f"history must be >= 1 and gap >= 0, got {history} and {gap}")
    if len(s) > 1 and (np.diff(s) <= 0).any():
        raise ValueError("window starts must be increasing")
    if v.ndim != 2 or v.shape[1] != len(s):
        raise ValueError("logs must be (members, windows) with one column per start")
    ends = s + length
    out = np.full(len(s), -1, dtype=np.int64)
    for i, start in enumerate(s):
        past = np.flatnonzero(ends <= start - gap)
        if len(past) >= history:
            out[i] = int(np.argmin(v[:, past[-history:]].mean(axis=1)))
    return out


def chosen(logs: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """The log ratio of the chosen member per window (``choice`` >= 0 everywhere)."""
    v = np.asarray(logs, dtype=np.float64)
    c = np.asarray(choice, dtype=np.int64)
    if (c < 0).any():
        raise ValueError("a window without a choice")
    return v[c, np.arange(v.shape[1])]


def _cell(logs: np.ndarray, resamples: int, seed: int) -> dict:
    from research.probes._played import log_ratio_cell

    cell = log_ratio_cell(logs, resamples, seed)
    return {k: cell[k] for k in ("geo_ratio", "ci_low", "ci_high")} | {
        "wins": int(np.sum(logs < 0))
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="registered trace name")
    ap.add_argument("--member", required=True, help="comma-separated scheduler names (2+)")
    ap.add_argument("--reference", default="ELOSS", help="reference scheduler (ELOSS)")
    ap.add_argument("--length", type=int, default=1024, help="jobs per window (1024)")
    ap.add_argument("--step", type=int, default=None, help="jobs between starts (--length)")
    ap.add_argument(
        "--history", default="1,2,4,8", help="past windows a choice is scored on (1,2,4,8)"
    )
    ap.add_argument(
        "--gap", type=int, default=None, help="jobs between the past and the window (--length)"
    )
    ap.add_argument("--resamples", type=int, default=10_000, help="bootstrap (10,000)")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed (0)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = ap.parse_args(argv)
    step = args.step or args.length
    gap = args.length if args.gap is None else args.gap
    try:
        histories = sorted({int(h) for h in args.history.split(",") if h.strip()})
    except ValueError:
        ap.error(f"--history wants comma-separated integers, got {args.history!r}")
    if step <= 0 or args.length <= 0 or gap < 0 or not histories or histories[0] < 1:
        ap.error("--step, --length and --history must be positive, --gap at least 0")

    from hpcgym.evaluation.statistics import MIN_RESAMPLES

    if args.resamples < MIN_RESAMPLES:
        ap.error(f"--resamples must be at least {MIN_RESAMPLES}")
    from hpcgym.workload import load, split_range, trace_spec
    from research.probes._played import named_methods, played_log_ratios, split_grids

    members = named_methods(args.member, ap)
    if len(members) < 2:
        ap.error("a portfolio needs at least two --member schedulers")
    wl = load(trace_spec(args.trace))
    validation, end = split_range(len(wl), "validation")
    starts = split_grids(validation, end, args.length, step)
    logs_by = played_log_ratios(
        wl, members, args.reference, starts.tolist(), args.length, args.jobs
    )
    labels = [m.label for m in members]
    logs = np.stack([logs_by[k] for k in labels])
    choices = {f"past {k}": past_choice(logs, starts, args.length, k, gap) for k in histories}
    scored = np.flatnonzero(np.all(np.stack(list(choices.values())) >= 0, axis=0))
    if len(scored) < 2:
        ap.error("too few windows with the history before them: lower --history or --gap")
    choices["oracle"] = oracle_choice(logs)
    print(
        f"{args.trace}: {len(scored)} of {len(starts)} windows of {args.length} jobs "
        f"(starts every {step} jobs in [0, {validation}) and [{validation}, {end}); the test "
        f"split from job {end} not played), scored where {histories[-1]} past windows end "
        f"{gap} jobs before the start. Paired geometric-mean AVEbsld ratio vs "
        f"{args.reference} [95 % bootstrap interval], wins of {len(scored)}.\n"
    )
    print("| rule | ratio | wins | choices (" + ", ".join(labels) + ") |")
    print("|---|---:|---:|---|")
    rows: list[dict] = []
    for i, label in enumerate(labels):
        cell = _cell(logs[i, scored], args.resamples, args.seed)
        rows.append({"rule": label, **cell})
    for name, choice in choices.items():
        c = choice[scored]
        cell = _cell(chosen(logs[:, scored], c), args.resamples, args.seed)
        counts = [int(np.sum(c == i)) for i in range(len(labels))]
        rows.append({"rule": name, **cell, "counts": counts})
    for r in rows:
        counts = " / ".join(map(str, r["counts"])) if "counts" in r else ""
        print(
            f"| {r['rule']} | {r['geo_ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
            f"| {r['wins']} | {counts} |"
        )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "trace": args.trace,
                    "reference": args.reference,
                    "members": labels,
                    "length": args.length,
                    "step": step,
                    "gap": gap,
                    "starts": starts.tolist(),
                    "scored": scored.tolist(),
                    "log_ratios": logs.tolist(),
                    "choices": {k: v.tolist() for k, v in choices.items()},
                    "rows": rows,
                },
                indent=1,
            )
        )
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
