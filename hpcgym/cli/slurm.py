"""``hpcgym slurm``: hpcgym beside a live Slurm.

``hpcgym slurm prioritize --policy SAF|F2|<agent>`` orders the pending jobs of a running
Slurm with an hpcgym queue policy or Schedule-v0 agent by setting their priorities
(:mod:`hpcgym.slurm.bridge`).
"""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import datetime

from hpcgym.argtypes import positive_float, positive_int
from hpcgym.cli.errors import UsageError, writable_file
from hpcgym.sim.engine import POLICIES

__all__ = ["add_parser", "run_prioritize"]

DEFAULT_LOG = "hpcgym-prioritize.jsonl"


def _origin(text: str) -> float:
    """``--origin``: epoch seconds or an ISO date and time (local time)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch seconds or an ISO time such as 2026-01-31T08:00, got {text!r}"
        ) from None


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``slurm`` command (and its ``prioritize`` sub-command)."""
    p = sub.add_parser(
        "slurm",
        help="run hpcgym policies beside a live Slurm",
        description="hpcgym beside a live Slurm cluster.",
    )
    ss = p.add_subparsers(dest="slurm_command", metavar="SUBCOMMAND")
    q = ss.add_parser(
        "prioritize",
        help="order Slurm's pending jobs with an hpcgym policy or agent (sets job priorities)",
        description=(
            "At every pass, read Slurm's pending and running jobs (squeue, sinfo), order the "
            "pending jobs with an hpcgym queue policy or Schedule-v0 agent, and set their "
            "priorities (scontrol update jobid=N priority=P) so that Slurm's own scheduler "
            "starts them in that order. Only priorities are set, never on a held job. Every "
            "pass is one JSON line in --log. Needs the rights of Slurm's operator (SlurmUser, "
            "root or an operator account) unless --dry-run."
        ),
    )
    q.add_argument(
        "--policy",
        required=True,
        help=(
            f"a queue policy ({', '.join(POLICIES)}), a zoo agent's name, a model card .json, a "
            "Schedule-v0 model .zip, or the heuristic agents first / random. A Backfill-v0 "
            "agent orders by the queue policy it was trained under"
        ),
    )
    q.add_argument(
        "--interval", type=positive_float, default=10.0, help="seconds between passes (10)"
    )
    q.add_argument("--passes", type=positive_int, default=None, help="stop after this many passes")
    q.add_argument(
        "--dry-run",
        action="store_true",
        help="print and log the order and priorities it would set; set nothing",
    )
    q.add_argument("--log", default=DEFAULT_LOG, help=f"JSON-lines log ({DEFAULT_LOG})")
    q.add_argument("--partition", default=None, help="only this partition's jobs and CPUs")
    q.add_argument(
        "--top-priority",
        type=positive_int,
        default=None,
        help="the top of the bridge's priority range (65000 values; default 4294967040, "
        "above priority/basic's priorities of new jobs)",
    )
    q.add_argument(
        "--max-jobs",
        type=positive_int,
        default=10000,
        help="order at most this many pending jobs per pass (10000)",
    )
    q.add_argument(
        "--origin",
        type=_origin,
        default=None,
        help="time 0 of the submit times of F1-F4 (epoch seconds or ISO time; default: the "
        "earliest submit time listed at the first pass)",
    )
    q.add_argument(
        "--starvation",
        type=positive_float,
        default=None,
        help="starvation threshold in seconds: jobs that waited longer go first, oldest first "
        "(for an agent: its card's by default)",
    )
    q.add_argument(
        "--order",
        default=None,
        help="an agent's row order (its card's queue policy, else FCFS)",
    )
    q.add_argument(
        "--est-scale",
        type=positive_float,
        default=None,
        help="an agent's duration scale in seconds (its card's, else the largest time limit)",
    )
    q.add_argument(
        "--unlimited",
        type=positive_float,
        default=365 * 86400.0,
        help="the runtime estimate of a job without a time limit, seconds (one year)",
    )
    q.set_defaults(func=run_prioritize)
    p.set_defaults(func=lambda args: _help(p))


def _help(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def run_prioritize(args: argparse.Namespace) -> int:
    """Run ``hpcgym slurm prioritize``."""
    from hpcgym.slurm.bridge import DEFAULT_TOP_PRIORITY, Bridge, SubprocessRunner
    from hpcgym.slurm.bridge_agents import make_orderer

    if args.order is not None and args.order.upper() not in POLICIES:
        raise UsageError(f"--order {args.order}: valid queue policies are {', '.join(POLICIES)}")
    writable_file(args.log, "--log")

    def notice(msg: str) -> None:
        sys.stderr.write(f"hpcgym slurm prioritize: {msg}\n")

    orderer = make_orderer(
        args.policy,
        origin=args.origin,
        starvation=args.starvation,
        order=args.order,
        est_scale=args.est_scale,
        unlimited=args.unlimited,
        notice=notice,
    )
    top = DEFAULT_TOP_PRIORITY if args.top_priority is None else args.top_priority
    with Bridge(
        orderer,
        SubprocessRunner(),
        log=args.log,
        dry_run=args.dry_run,
        top=top,
        max_jobs=args.max_jobs,
        partition=args.partition,
        warn=notice,
    ) as bridge:
        notice(
            f"ordering with {orderer.name} every {args.interval:g} s"
            f"{' (dry run: nothing is set)' if args.dry_run else ''}; log: {args.log}"
        )
        # SIGTERM ends the loop between two commands, like Ctrl-C (the log stays whole)
        before = signal.signal(signal.SIGTERM, lambda *_: bridge.stop())
        try:
            bridge.run(args.interval, args.passes)
        finally:
            signal.signal(signal.SIGTERM, before)
    return 0
