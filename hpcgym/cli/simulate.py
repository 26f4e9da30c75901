"""``hpcgym simulate``: one scheduler on a trace or a window of it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from hpcgym.argtypes import positive_int
from hpcgym.cli.errors import TRACE_LENIENT_HELP, UsageError
from hpcgym.sim.engine import BACKFILLS, CORRECTIONS
from hpcgym.sim.registry import heuristic_names
from hpcgym.sim.schedulers import NAMED, SchedulerSpec, get_scheduler

__all__ = [
    "add_parser",
    "add_plugin_arg",
    "add_trace_args",
    "check_window",
    "cleaning_report",
    "load_plugins",
    "load_trace",
    "run_simulate",
]

BACKFILL_CHOICES = [b for b in BACKFILLS if b != "external"]

#: The scheduler parts and their defaults (``--scheduler`` sets them all: giving one of
#: them with it is refused).
PART_DEFAULTS: dict[str, str] = {
    "policy": "FCFS",
    "backfill": "easy",
    "estimator": "request",
    "correction": "incremental",
}


def _starvation(text: str) -> str:
    """``--starvation``: seconds > 0 or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds > 0 or 'auto', got {text!r}")
    return text


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
    p.add_argument(
        "--scheduler",
        help="named scheduler, POLICY+NAME, or key=value spec (not with the parts below)",
    )
    p.add_argument(
        "--policy",
        default=None,
        help=f"queue policy (FCFS): {', '.join(heuristic_names('policy'))}, or one registered "
        "by --plugin",
    )
    p.add_argument(
        "--backfill",
        default=None,
        help=f"{'|'.join(BACKFILL_CHOICES)} (easy), or a backfiller registered in Python "
        "(hpcgym heuristics --kind backfill)",
    )
    p.add_argument(
        "--estimator",
        default=None,
        help="runtime estimator: request|actual|<predictor name> (default request)",
    )
    p.add_argument("--estimate", dest="estimator", help=argparse.SUPPRESS)  # old name
    p.add_argument(
        "--rank-estimator",
        default=None,
        help="the estimator the queue policy ranks by, apart from --estimator (which then "
        "serves the reservations and backfilling only); default: --estimator",
    )
    p.add_argument(
        "--correction",
        default=None,
        help=f"{'|'.join(CORRECTIONS)} (for predictors; default incremental)",
    )
    p.add_argument(
        "--starvation",
        default=None,
        type=_starvation,
        help="starvation threshold in seconds, or 'auto' (3 x largest request); default off",
    )
    p.add_argument("--start", type=int, default=0, help="index of the first job (cleaned order; 0)")
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
    p.add_argument(
        "--machine-size", type=positive_int, default=None, help="override the machine size"
    )
    p.add_argument("--lenient", action="store_true", help=TRACE_LENIENT_HELP)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_plugin_arg(p)


def add_plugin_arg(p: argparse.ArgumentParser) -> None:
    """``--plugin FILE|MODULE`` (repeatable): heuristics registered in Python."""
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE|MODULE",
        help="a Python file or module that registers heuristics (queue policies, "
        "backfillers...: docs/heuristics.md) before the names are read; repeatable",
    )


def load_plugins(args: argparse.Namespace) -> None:
    """Load the ``--plugin`` files and modules (:func:`hpcgym.sim.registry.load_heuristics`).

    :raises UsageError: a file or module that does not exist
    """
    from hpcgym.sim.registry import load_heuristics

    for source in getattr(args, "plugin", None) or []:
        try:
            load_heuristics(source)
        except ValueError as exc:
            raise UsageError(f"--plugin {source}: {exc}") from None


def load_trace(args: argparse.Namespace) -> Any:
    """The workload of ``--trace`` / ``--machine-size`` / ``--lenient``."""
    from hpcgym.workload import load

    return load(args.trace, machine_size=args.machine_size, lenient=args.lenient)


def _spec_from_args(args: argparse.Namespace) -> SchedulerSpec:
    given = [
        k for k in (*PART_DEFAULTS, "starvation", "rank_estimator") if getattr(args, k) is not None
    ]
    if args.scheduler:
        if given:
            flags = ", ".join(f"--{k.replace('_', '-')} {getattr(args, k)}" for k in given)
            raise UsageError(
                f"--scheduler {args.scheduler} already sets the policy, backfill, estimator, "
                f"correction and starvation; it cannot be combined with {flags} (give "
                "either --scheduler or the parts, or a key=value spec to --scheduler)"
            )
        return get_scheduler(args.scheduler)
    parts = {k: getattr(args, k) or d for k, d in PART_DEFAULTS.items()}
    text = ",".join(
        [
            f"policy={parts['policy']}",
            f"backfill={parts['backfill']}",
            f"estimate={parts['estimator']}",
            f"correction={parts['correction']}",
        ]
        + ([f"starvation={args.starvation}"] if args.starvation is not None else [])
        + ([f"rank={args.rank_estimator}"] if args.rank_estimator is not None else [])
    )
    return get_scheduler(text)


def check_window(n_jobs: int, start: int, length: int | None, trace: str) -> int:
    """Check ``--start`` / ``--length`` against a trace of ``n_jobs`` jobs.

    :param n_jobs: jobs of the (cleaned) trace
    :param start: index of the first job
    :param length: jobs in the window (``None``: to the end of the trace)
    :param trace: the trace's name, for the message
    :return: the length (resolved when ``None``)
    :raises UsageError: stating the valid bounds
    """
    if not 0 <= start < n_jobs:
        raise UsageError(
            f"--start {start} is outside the trace {trace} ({n_jobs} jobs after cleaning): "
            f"valid starts are 0..{n_jobs - 1}"
        )
    room = n_jobs - start
    if length is None:
        return room
    if not 1 <= length <= room:
        raise UsageError(
            f"--length {length} does not fit: the trace {trace} has {n_jobs} jobs after "
            f"cleaning, so from --start {start} the window length must be 1..{room}"
        )
    return length


def cleaning_report(workload: Any) -> dict[str, Any]:
    """What the SWF cleaning did: records read, jobs kept, dropped and patched per rule,
    malformed lines skipped (``--lenient``).

    :param workload: the loaded trace
    """
    rep = workload.report
    dropped = {k: int(v) for k, v in dict(rep.dropped).items()}
    return {
        "records": int(rep.records),
        "kept": len(workload),
        "dropped": dropped,
        "dropped_total": int(sum(dropped.values())),
        "patched": {k: int(v) for k, v in dict(rep.patched).items()},
        "skipped_malformed": int(rep.skipped_malformed),
    }


def _cleaning_line(c: dict[str, Any]) -> str:
    rules = ", ".join(f"{k}: {v}" for k, v in c["dropped"].items() if v) or "no rule applied"
    line = f"cleaning: kept {c['kept']} of {c['records']} records; dropped {c['dropped_total']}"
    line += f" ({rules})"
    patched = ", ".join(f"{k}: {v}" for k, v in c["patched"].items() if v)
    if patched:
        line += f"; patched ({patched})"
    if c["skipped_malformed"]:
        line += f"; skipped {c['skipped_malformed']} malformed lines (--lenient)"
    return line


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h ({seconds:,.0f} s)"


#: the text output of ``hpcgym simulate``: key (as in ``--json``), its value with its unit,
#: what it is
_METRIC_TEXT: tuple[tuple[str, Callable[[Any, dict[str, Any]], str], str], ...] = (
    (
        "avg_bsld",
        lambda v, o: f"{v:.2f}",
        "AVEbsld: mean bounded slowdown (runtimes < 10 s count as 10 s)",
    ),
    ("avg_pp_bsld", lambda v, o: f"{v:.2f}", "mean per-processor bounded slowdown"),
    ("avg_wait", lambda v, o: _hours(v), "mean wait"),
    ("max_wait", lambda v, o: _hours(v), "longest wait"),
    ("avg_turnaround", lambda v, o: _hours(v), "mean turnaround (wait + runtime)"),
    (
        "utilization",
        lambda v, o: f"{100 * v:.1f} %",
        "processor-time used / (processors x makespan)",
    ),
    ("makespan", lambda v, o: _hours(v), "first submit to last end"),
    (
        "backfilled",
        lambda v, o: f"{v} of {o['jobs']} jobs ({100 * v / max(o['jobs'], 1):.1f} %)",
        "jobs started by backfilling",
    ),
    ("jobs", lambda v, o: f"{v}", "jobs in the window"),
    ("machine_size", lambda v, o: f"{v} processors", ""),
    ("sim_seconds", lambda v, o: f"{1000 * v:.1f} ms", "wall time of the simulation"),
)


def metric_lines(out: dict[str, Any]) -> list[str]:
    """The metrics of ``hpcgym simulate`` as aligned text lines with their units: waits,
    turnaround and makespan in hours (and seconds), utilization in %, AVEbsld unitless.
    ``--json`` keeps the raw numbers (seconds, a fraction) under the same keys.

    :param out: the JSON document of the command (metric keys as in ``--json``)
    """
    rows = [(k, fmt(out[k], out), what) for k, fmt, what in _METRIC_TEXT if k in out]
    wk = max(len(k) for k, _, _ in rows)
    wv = max(len(v) for _, v, _ in rows)
    return [f"{k:<{wk}}  {v:>{wv}}  {what}".rstrip() for k, v, what in rows]


def run_simulate(args: argparse.Namespace) -> int:
    """Run ``hpcgym simulate``; prints the metrics (or JSON) and returns the exit code."""
    from hpcgym.sim.engine import warmup

    load_plugins(args)
    spec = _spec_from_args(args)
    wl = load_trace(args)
    length = check_window(len(wl), args.start, args.length, wl.name)
    warmup()
    window = wl.window(args.start, length)
    res = spec.simulate(window)
    out: dict[str, Any] = {
        "trace": wl.name,
        "start": args.start,
        **spec.to_dict(),
        **res.metrics,
        **res.counters,
    }
    out["scheduler"] = spec.name
    cleaning = cleaning_report(wl)
    out["cleaning"] = cleaning
    if args.json:
        print(json.dumps(out, indent=2, default=float))
    else:
        print(f"{spec.name} on {wl.name} jobs {args.start}..{args.start + len(window) - 1}")
        print(f"  {_cleaning_line(cleaning)}")
        for line in metric_lines(out):
            print(f"  {line}")
    return 0
