"""``hpcgym simulate``: one scheduler on a trace or a window of it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hpcgym.sim.engine import BACKFILLS, CORRECTIONS, POLICIES
from hpcgym.sim.schedulers import NAMED, SchedulerSpec, get_scheduler

__all__ = ["add_parser", "add_trace_args", "load_trace", "run_simulate"]

BACKFILL_CHOICES = [b for b in BACKFILLS if b != "external"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``simulate`` command to the main parser."""
    p = sub.add_parser(
        "simulate",
        help="simulate a scheduler on a trace (or a window of it)",
        description=(
            "Simulate one scheduler on a trace, or on a window of it, with the hpcgym engine. "
            "Give either --scheduler NAME or the parts (--policy/--backfill/--estimator/"
            "--correction). Named schedulers: " + ", ".join(NAMED)
        ),
    )
    add_trace_args(p)
    p.add_argument("--scheduler", help="named scheduler, POLICY+NAME, or key=value spec")
    p.add_argument("--policy", default="FCFS", help=f"queue policy: {', '.join(POLICIES)}")
    p.add_argument("--backfill", default="easy", help=f"{'|'.join(BACKFILL_CHOICES)}")
    p.add_argument(
        "--estimator",
        default="request",
        help="runtime estimator: request|actual|<predictor name> (default request)",
    )
    p.add_argument("--estimate", dest="estimator", help=argparse.SUPPRESS)  # old name
    p.add_argument(
        "--correction", default="incremental", help=f"{'|'.join(CORRECTIONS)} (for predictors)"
    )
    p.add_argument(
        "--starvation",
        default=None,
        help="starvation threshold in seconds, or 'auto' (3 x largest request); default off",
    )
    p.add_argument("--start", type=int, default=0, help="index of the first job (cleaned order)")
    p.add_argument(
        "--length", type=int, default=None, help="jobs in the window (default: to the end)"
    )
    p.add_argument("--jobs", dest="length", type=int, help=argparse.SUPPRESS)  # old name
    p.set_defaults(func=run_simulate)


def add_trace_args(p: argparse.ArgumentParser) -> None:
    """``--trace --machine-size --json`` (shared with ``hpcgym compare``)."""
    p.add_argument(
        "--trace", default=None, help="registered name, SWF path, or 'synthetic' (default)"
    )
    p.add_argument("--machine-size", type=int, default=None, help="override the machine size")
    p.add_argument("--json", action="store_true", help="print JSON")


def load_trace(args: argparse.Namespace) -> Any:
    """The workload of ``--trace`` / ``--machine-size``."""
    from hpcgym.workload import load

    return load(args.trace, machine_size=args.machine_size)


def _spec_from_args(args: argparse.Namespace) -> SchedulerSpec:
    if args.scheduler:
        return get_scheduler(args.scheduler)
    parts = [
        f"policy={args.policy}",
        f"backfill={args.backfill}",
        f"estimate={args.estimator}",
        f"correction={args.correction}",
    ]
    if args.starvation is not None:
        parts.append(f"starvation={args.starvation}")
    spec = get_scheduler(",".join(parts))
    return spec


def run_simulate(args: argparse.Namespace) -> int:
    """Run ``hpcgym simulate``; prints the metrics (or JSON) and returns the exit code."""
    from hpcgym.sim.engine import warmup

    spec = _spec_from_args(args)
    wl = load_trace(args)
    warmup()
    window = wl.window(args.start, args.length)
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
