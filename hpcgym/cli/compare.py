"""``hpcgym compare``: several schedulers (and agents) on the same windows, one table."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hpcgym.cli.simulate import add_trace_args, load_trace

__all__ = ["add_parser", "compare_windows", "run_compare"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``compare`` command to the main parser."""
    c = sub.add_parser(
        "compare",
        help="run several schedulers on the same windows and print one table",
        description="Every scheduler on exactly the same windows (replayable by start index). "
        "--agents also plays agents through the env (FCFS, guarded; loaded by the installed "
        "agent loader, entry point group hpcgym.agent_loaders); eval/compare.py has every "
        "option.",
    )
    add_trace_args(c)
    c.add_argument("--schedulers", nargs="+", default=["EASY", "EASY-AR", "EASY-SJBF", "SAF"])
    c.add_argument(
        "--agents",
        nargs="+",
        default=[],
        help="agents: heuristic names (easy sjbf stop random first), model .zip files or cards",
    )
    c.add_argument("--windows", type=int, default=10, help="number of windows")
    c.add_argument("--length", type=int, default=1024, help="jobs per window")
    c.add_argument("--split", default="test", help="train|test|all (time split)")
    c.add_argument("--seed", type=int, default=1, help="seed of the window sampler")
    c.add_argument("--starts", type=int, nargs="*", help="explicit window start indices")
    c.add_argument("--full-trace", action="store_true", help="one window: the whole trace")
    c.add_argument(
        "--jobs", type=int, default=1, help="worker processes (default 1; see eval/compare.py)"
    )
    c.add_argument(
        "--out",
        default=None,
        help="also write table.md, summary.csv, windows.csv, results.json, per_job.npz and "
        "plots into this folder (hpcgym.evaluation.write_outputs)",
    )
    c.add_argument(
        "--skip-unavailable",
        action="store_true",
        help="skip unknown or failing schedulers with a warning instead of an error",
    )
    c.set_defaults(func=run_compare)


def compare_windows(
    workload: Any,
    schedulers: list[str],
    starts: list[int],
    length: int,
    jobs: int = 1,
) -> list[dict[str, Any]]:
    """Every scheduler on every window; one row per (scheduler, window).

    A thin wrapper of :func:`hpcgym.evaluation.evaluate` (rows keep this command's keys:
    scheduler, start, length, avg_bsld, avg_wait, utilization, seconds).

    :param workload: the trace
    :param schedulers: scheduler names / specs
    :param starts: window starts
    :param length: jobs per window
    :param jobs: worker processes
    """
    return _rows(_evaluate(workload, schedulers, [], starts, length, jobs, skip=False))


def _evaluate(
    workload: Any,
    schedulers: list[str],
    agents: list[str],
    starts: list[int],
    length: int,
    jobs: int,
    skip: bool,
) -> Any:
    from hpcgym.evaluation import (
        LoaderUnavailable,
        WindowSet,
        build_methods,
        evaluate,
        resolve_agent_loader,
    )

    methods, failures = build_methods(schedulers, agents)
    for kind, spec, exc in failures:
        if not skip:
            raise ValueError(str(exc)) from None
        print(f"warning: {kind} {spec!r} skipped: {exc}", file=sys.stderr)
    loader = None
    if any(m.kind == "agent" for m in methods):
        try:
            loader = resolve_agent_loader()
        except LoaderUnavailable as exc:
            raise ValueError(str(exc)) from None
    windows = WindowSet(tuple(int(s) for s in starts), int(length))
    return evaluate(
        workload,
        methods,
        windows,
        jobs=jobs,
        progress=False,
        skip_unavailable=skip,
        agent_loader=loader,
    )


def _rows(result: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for r in result.rows:
        rows.append(
            {
                "scheduler": r["method"],
                "start": r["start"],
                "length": r["length"],
                "avg_bsld": r["avg_bsld"],
                "avg_wait": r["avg_wait"],
                "utilization": r["utilization"],
                "seconds": result.timings[r["method"]][r["window"]],
            }
        )
    return rows


def run_compare(args: argparse.Namespace) -> int:
    """Run ``hpcgym compare``; prints the table (or JSON) and returns the exit code."""
    from hpcgym.evaluation import select_windows, write_outputs

    wl = load_trace(args)
    if args.full_trace:
        ws = select_windows(len(wl), full_trace=True, split="all")
    else:
        ws = select_windows(
            len(wl), args.length, args.windows, args.split, args.seed, starts=args.starts
        )
    starts, length = list(ws.starts), ws.length
    result = _evaluate(
        wl, args.schedulers, args.agents, starts, length, args.jobs, args.skip_unavailable
    )
    for name, why in result.skipped.items():
        kind = "method" if args.agents else "scheduler"
        print(f"warning: {kind} {name!r} skipped: {why}", file=sys.stderr)
    if args.out:
        write_outputs(result, args.out)
    rows = _rows(result)
    summary: dict[str, dict[str, float]] = {}
    for r in rows:
        s = summary.setdefault(r["scheduler"], {"avg_bsld": 0.0, "avg_wait": 0.0, "n": 0})
        s["avg_bsld"] += r["avg_bsld"]
        s["avg_wait"] += r["avg_wait"]
        s["n"] += 1
    for s in summary.values():
        s["avg_bsld"] /= s["n"]
        s["avg_wait"] /= s["n"]
    if args.json:
        json.dump(
            {"trace": wl.name, "starts": starts, "length": length, "rows": rows, "mean": summary},
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    print(f"trace {wl.name}: {len(starts)} window(s) of {length} jobs, starts {starts}")
    print(f"| {'method' if args.agents else 'scheduler'} | mean AVEbsld | mean wait (s) |")
    print("|---|---:|---:|")
    for name, s in summary.items():
        print(f"| {name} | {s['avg_bsld']:.2f} | {s['avg_wait']:.0f} |")
    if args.out:
        print(f"wrote the evaluation outputs to {args.out}/")
    return 0
