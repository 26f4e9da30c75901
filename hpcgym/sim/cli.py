"""``hpcgym simulate`` and ``hpcgym compare``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hpcgym.sim.engine import BACKFILLS, CORRECTIONS, POLICIES
from hpcgym.sim.schedulers import NAMED, SchedulerSpec, get_scheduler

BACKFILL_CHOICES = [b for b in BACKFILLS if b != "external"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "simulate",
        help="simulate a scheduler on a trace (or a window of it)",
        description=(
            "Simulate one scheduler on a trace, or on a window of it, with the hpcgym engine. "
            "Give either --scheduler NAME or the parts (--policy/--backfill/--estimate/"
            "--correction). Named schedulers: " + ", ".join(NAMED)
        ),
    )
    _common(p)
    p.add_argument("--scheduler", help="named scheduler, POLICY+NAME, or key=value spec")
    p.add_argument("--policy", default="FCFS", help=f"queue policy: {', '.join(POLICIES)}")
    p.add_argument("--backfill", default="easy", help=f"{'|'.join(BACKFILL_CHOICES)}")
    p.add_argument(
        "--estimate", default="request", help="request|actual|<predictor name> (default request)"
    )
    p.add_argument(
        "--correction", default="incremental", help=f"{'|'.join(CORRECTIONS)} (for predictors)"
    )
    p.add_argument(
        "--starvation",
        default=None,
        help="starvation threshold in seconds, or 'auto' (3 x largest request); default off",
    )
    p.add_argument("--start", type=int, default=0, help="index of the first job (cleaned order)")
    p.add_argument("--jobs", type=int, default=None, help="window length (default: to the end)")
    p.set_defaults(func=run_simulate)

    c = sub.add_parser(
        "compare",
        help="run several schedulers on the same windows and print one table",
        description="Every scheduler on exactly the same windows (replayable by start index).",
    )
    _common(c)
    c.add_argument("--schedulers", nargs="+", default=["EASY", "EASY-AR", "EASY-SJBF", "SAF"])
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


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trace", default=None, help="registered name, SWF path, or 'synthetic' (default)"
    )
    p.add_argument("--machine-size", type=int, default=None, help="override the machine size")
    p.add_argument("--json", action="store_true", help="print JSON")


def _load(args: argparse.Namespace) -> Any:
    from hpcgym.workload import load

    return load(args.trace, machine_size=args.machine_size)


def _spec_from_args(args: argparse.Namespace) -> SchedulerSpec:
    if args.scheduler:
        return get_scheduler(args.scheduler)
    parts = [
        f"policy={args.policy}",
        f"backfill={args.backfill}",
        f"estimate={args.estimate}",
        f"correction={args.correction}",
    ]
    if args.starvation is not None:
        parts.append(f"starvation={args.starvation}")
    spec = get_scheduler(",".join(parts))
    return spec


def run_simulate(args: argparse.Namespace) -> int:
    from hpcgym.sim.engine import warmup

    spec = _spec_from_args(args)
    wl = _load(args)
    warmup()
    window = wl.window(args.start, args.jobs)
    res = spec.simulate(window)
    out: dict[str, Any] = {
        "trace": wl.name,
        "start": args.start,
        **spec.to_dict(),
        **res.metrics,
        **res.counters,
    }
    out["scheduler"] = spec.name
    if args.json:
        print(json.dumps(out, indent=2, default=float))
    else:
        print(f"{spec.name} on {wl.name} jobs {args.start}..{args.start + len(window) - 1}")
        for k in (
            "avg_bsld",
            "avg_pp_bsld",
            "avg_wait",
            "max_wait",
            "avg_turnaround",
            "utilization",
            "makespan",
            "backfilled",
            "jobs",
            "machine_size",
            "sim_seconds",
        ):
            v = out[k]
            print(f"  {k:15s} {v:.4f}" if isinstance(v, float) else f"  {k:15s} {v}")
    return 0


def compare_windows(
    workload: Any,
    schedulers: list[str],
    starts: list[int],
    length: int,
    jobs: int = 1,
) -> list[dict[str, Any]]:
    """Every scheduler on every window; one row per (scheduler, window).

    A thin wrapper of :func:`hpcgym.evaluation.evaluate` (rows keep this command's keys:
    scheduler, start, length, avg_bsld, avg_wait, utilization, seconds)."""
    return _rows(_evaluate(workload, schedulers, starts, length, jobs, skip=False))


def _evaluate(
    workload: Any, schedulers: list[str], starts: list[int], length: int, jobs: int, skip: bool
) -> Any:
    from hpcgym.evaluation import (
        MethodUnavailable,
        WindowSet,
        evaluate,
        scheduler_method,
    )

    methods = []
    for s in schedulers:
        try:
            methods.append(scheduler_method(s))
        except MethodUnavailable as exc:
            if not skip:
                raise ValueError(str(exc)) from None
            print(f"warning: scheduler {s!r} skipped: {exc}", file=sys.stderr)
    windows = WindowSet(tuple(int(s) for s in starts), int(length))
    return evaluate(workload, methods, windows, jobs=jobs, progress=False, skip_unavailable=skip)


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
    from hpcgym.evaluation import select_windows, write_outputs

    wl = _load(args)
    if args.full_trace:
        ws = select_windows(len(wl), full_trace=True, split="all")
    else:
        ws = select_windows(
            len(wl), args.length, args.windows, args.split, args.seed, starts=args.starts
        )
    starts, length = list(ws.starts), ws.length
    result = _evaluate(wl, args.schedulers, starts, length, args.jobs, args.skip_unavailable)
    for name, why in result.skipped.items():
        print(f"warning: scheduler {name!r} skipped: {why}", file=sys.stderr)
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
    print("| scheduler | mean AVEbsld | mean wait (s) |")
    print("|---|---:|---:|")
    for name, s in summary.items():
        print(f"| {name} | {s['avg_bsld']:.2f} | {s['avg_wait']:.0f} |")
    if args.out:
        print(f"wrote the evaluation outputs to {args.out}/")
    return 0
