"""``hpcgym traces ...``: list, inspect, fetch and generate workloads.

* ``hpcgym traces list [--json]``: registered traces and where they are found locally;
* ``hpcgym traces info TRACE [--json] [--machine-size N] [--lenient]``: machine size,
  kept jobs, the cleaning report per rule and workload statistics (``TRACE`` is a
  registered name, an SWF or Slurm accounting path or ``synthetic``);
* ``hpcgym traces fetch NAME [--dest DIR] [--url URL] [--force]``: download a trace;
* ``hpcgym traces generate lublin --jobs N --machine-size M [--load L] [--seed S]
  [--request-model R] -o FILE``: write a synthetic Lublin-Feitelson workload as SWF;
* ``hpcgym traces convert INPUT OUTPUT.swf [--format sacct|jobcomp] [--tz TZ]
  [--machine-size N] [--partition-limit PART=LIMIT] [--unlimited runtime|drop]
  [--arrival submit|eligible] [--lenient]``: Slurm accounting (a ``sacct --parsable2``
  export or a jobcomp log) as a standard SWF file, its header giving the source and the
  cleaning report.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from hpcgym.argtypes import positive_int as _positive_int
from hpcgym.workload.core import Workload
from hpcgym.workload.swf import DROP_RULES, PATCH_RULES, write_swf
from hpcgym.workload.traces import (
    TRACES,
    fetch_trace,
    find_local,
    load,
    trace_search_dirs,
    trace_url,
)

__all__ = ["add_parser", "workload_info"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``traces`` command (and its sub-commands) to the main parser."""
    p = subparsers.add_parser(
        "traces",
        help="list, inspect, download and generate workloads",
        description="Workload traces: the registry, SWF cleaning reports, downloads and "
        "synthetic Lublin-Feitelson workloads. See docs/workloads.md.",
    )
    sub = p.add_subparsers(dest="traces_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: _no_subcommand(p))

    q = sub.add_parser("list", help="registered traces and where they are found locally")
    q.add_argument("--json", action="store_true", help="print JSON instead of a table")
    q.set_defaults(func=cmd_list)

    q = sub.add_parser(
        "info",
        help="machine size, cleaning report and statistics of a trace",
        description="Load TRACE (registered name, SWF path, Slurm accounting - a 'sacct "
        "--parsable2' export or a jobcomp log - or 'synthetic'; a missing registered trace is "
        "downloaded) and print its cleaning report and statistics.",
    )
    q.add_argument(
        "trace", metavar="TRACE", help="registered name, SWF or Slurm accounting path, 'synthetic'"
    )
    q.add_argument("--json", action="store_true", help="print JSON")
    q.add_argument("--machine-size", type=_positive_int, metavar="N", help="override MaxProcs")
    q.add_argument("--lenient", action="store_true", help="skip (and count) malformed job lines")
    q.set_defaults(func=cmd_info)

    q = sub.add_parser(
        "fetch",
        help="download a registered trace",
        description="Download a registered trace into DIR (default: the user cache) and "
        "verify its SHA-256; a valid copy already there is kept.",
    )
    q.add_argument("name", metavar="NAME", help=f"one of: {', '.join(TRACES)}")
    q.add_argument("--dest", metavar="DIR", help="target directory (default: user cache)")
    q.add_argument("--url", metavar="URL", help="download from URL (mirror, file://...)")
    q.add_argument("--force", action="store_true", help="download even if a copy exists")
    q.set_defaults(func=cmd_fetch)

    q = sub.add_parser(
        "generate",
        help="write a synthetic workload as SWF",
        description="Generate a synthetic workload and write it as an SWF file.",
    )
    q.add_argument("model", choices=["lublin"], help="workload model")
    q.add_argument("--jobs", type=_positive_int, default=10_000, metavar="N", help="jobs")
    q.add_argument(
        "--machine-size", type=_positive_int, default=256, metavar="M", help="processors"
    )
    q.add_argument(
        "--load", type=float, default=None, metavar="L", help="target offered load (optional)"
    )
    q.add_argument("--seed", type=int, default=0, metavar="S", help="random seed")
    try:
        from hpcgym.workload.lublin import REQUEST_MODELS

        models: list[str] | None = list(REQUEST_MODELS)
    except ImportError:  # pragma: no cover - lublin.py is part of the package
        models = None
    q.add_argument(
        "--request-model",
        default="tsafrir",
        choices=models,
        help="how user runtime requests (estimates) are generated (default: tsafrir)",
    )
    q.add_argument("-o", "--output", required=True, metavar="FILE", help="SWF file (.gz ok)")
    q.set_defaults(func=cmd_generate)
    _add_convert(sub)
    return p


def _add_convert(sub: Any) -> None:
    from hpcgym.workload.sacct import ARRIVALS, SACCT_COMMAND, UNLIMITED_POLICIES

    q = sub.add_parser(
        "convert",
        help="write Slurm accounting (sacct, jobcomp) as an SWF file",
        description="Read Slurm accounting - a 'sacct --parsable2' export or a "
        "jobcomp/filetxt log, told apart by the content - clean it (steps folded, requeued "
        "runs, jobs never started and unfinished jobs dropped, each counted) and write a "
        "standard SWF file whose header gives the source and the cleaning report. Export "
        f"at a site with: {SACCT_COMMAND}. See docs/workloads.md.",
    )
    q.add_argument("input", metavar="INPUT", help="sacct export or jobcomp log (.gz ok)")
    q.add_argument("output", metavar="OUTPUT", help="SWF file to write (.gz: compressed)")
    q.add_argument(
        "--format", choices=["sacct", "jobcomp"], help="input format (default: from content)"
    )
    q.add_argument(
        "--tz",
        default="UTC",
        metavar="TZ",
        help="time zone of Slurm's local times: UTC (default), local, +02:00, Europe/Berlin",
    )
    q.add_argument(
        "--machine-size",
        type=_positive_int,
        metavar="N",
        help="CPUs of the cluster (default: the peak of CPUs in use at once in the accounting)",
    )
    q.add_argument(
        "--partition-limit",
        action="append",
        default=[],
        metavar="PART=LIMIT",
        help="time limit of jobs without one (UNLIMITED, Partition_Limit) in partition PART "
        "('*': any), as a Slurm duration (e.g. long=7-00:00:00); repeatable",
    )
    q.add_argument(
        "--unlimited",
        choices=UNLIMITED_POLICIES,
        default="runtime",
        help="other jobs without a time limit: request = run time (default) or drop them",
    )
    q.add_argument(
        "--arrival",
        choices=ARRIVALS,
        default="submit",
        help="a job arrives at its Submit time (default) or its Eligible time",
    )
    q.add_argument("--lenient", action="store_true", help="skip (and count) malformed lines")
    q.set_defaults(func=cmd_convert)


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


# ------------------------------------------------------------------- commands
def cmd_list(args: argparse.Namespace) -> int:
    """``hpcgym traces list``."""
    rows = []
    for info in TRACES.values():
        found = find_local(info, verify=False)
        rows.append(
            {
                "name": info.name,
                "machine_size": info.machine_size,
                "jobs": info.jobs,
                "file": info.file,
                "local": str(found[0]) if found else None,
                "where": found[1] if found else None,
                "url": trace_url(info),
                "description": info.description,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = ("NAME", "PROCS", "JOBS", "FILE", "LOCAL COPY")
    table = [
        (
            r["name"],
            f"{r['machine_size']:,}",
            f"{r['jobs']:,}",
            r["file"],
            f"{r['local']} ({r['where']})" if r["local"] else "- (downloaded on first use)",
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table, strict=True)]
    for i, row in enumerate([header, *table]):
        cells = [
            str(c).rjust(w) if j in (1, 2) and i else str(c).ljust(w)
            for j, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
    print("\nsearched, in order:")
    for d, label in trace_search_dirs():
        print(f"  {d}  ({label})")
    return 0


def _stats(x: np.ndarray) -> dict[str, float]:
    if x.size == 0:
        return {k: math.nan for k in ("min", "median", "mean", "max")}
    return {
        "min": float(x.min()),
        "median": float(np.median(x)),
        "mean": float(x.mean()),
        "max": float(x.max()),
    }


def workload_info(w: Workload) -> dict[str, Any]:
    """Machine size, cleaning report and statistics of a workload (``traces info``)."""
    rep = w.report
    users = w.user[w.user >= 0]
    return {
        "name": w.name,
        "source": w.source,
        "machine_size": int(w.machine_size),
        "records": int(rep.records),
        "jobs": len(w),
        "dropped": dict(rep.dropped),
        "patched": dict(rep.patched),
        "counted": dict(rep.counted),
        "skipped_malformed": int(rep.skipped_malformed),
        "header_lines": int(rep.header_lines),
        "first_submit": float(w.submit[0]) if len(w) else math.nan,
        "last_submit": float(w.submit[-1]) if len(w) else math.nan,
        "span_seconds": w.span,
        "offered_load": w.offered_load,
        "runtime": _stats(w.runtime),
        "request": _stats(w.request),
        "procs": _stats(w.procs.astype(np.float64)),
        "users": int(np.unique(users).size),
        # the trace's own schedule (SWF field 3): jobs with a recorded wait, or None
        "recorded_waits": None
        if w.recorded_wait is None
        else int(np.count_nonzero(np.isfinite(w.recorded_wait))),
    }


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    return obj


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 or x == int(x) else f"{x:,.2f}"


def cmd_info(args: argparse.Namespace) -> int:
    """``hpcgym traces info``."""
    w = load(args.trace, machine_size=args.machine_size, lenient=args.lenient)
    info = workload_info(w)
    if args.json:
        print(json.dumps(_json_safe(info), indent=2))
        return 0
    print(f"trace:          {info['name']}")
    if info["source"]:
        print(f"source:         {info['source']}")
    how = w.meta.get("MachineSizeSource", "given")
    note = "" if how == "given" else f" ({how})"
    print(f"machine size:   {info['machine_size']:,} processors{note}")
    print(f"records read:   {info['records']:,}")
    print(f"jobs kept:      {info['jobs']:,}")
    print("cleaning report:")
    # the reader's own rules (SWF or Slurm accounting); SWF's for a generated workload
    drops = list(info["dropped"]) or list(DROP_RULES)
    patches = list(info["patched"]) or list(PATCH_RULES)
    width = max(len(r) for r in (*drops, *patches, *info["counted"]))
    for rule in drops:
        print(f"  dropped  {rule:<{width}}  {info['dropped'].get(rule, 0):>9,}")
    for rule in patches:
        print(f"  patched  {rule:<{width}}  {info['patched'].get(rule, 0):>9,}")
    for rule, n in info["counted"].items():
        print(f"  counted  {rule:<{width}}  {n:>9,}")
    if info["skipped_malformed"]:
        print(f"  skipped  malformed lines (--lenient)  {info['skipped_malformed']:>9,}")
    span = info["span_seconds"]
    print(
        f"time span:      {_fmt(span)} s ({span / 86400:,.1f} days; submits "
        f"{_fmt(info['first_submit'])} .. {_fmt(info['last_submit'])})"
    )
    print(f"offered load:   {info['offered_load']:.3f}")
    for key, unit in (("runtime", "s"), ("request", "s"), ("procs", "")):
        s = info[key]
        label = f"{key} ({unit}):" if unit else f"{key}:"
        print(
            f"{label:<15} min {_fmt(s['min'])}  median {_fmt(s['median'])}  "
            f"mean {_fmt(s['mean'])}  max {_fmt(s['max'])}"
        )
    print(f"users:          {info['users']:,}")
    rec = info["recorded_waits"]
    if not rec:
        count = "none" if rec is None else f"0 of {info['jobs']:,} jobs"
        print(f"recorded waits: {count} (no recorded schedule: no features='extended-log')")
    else:
        print(f"recorded waits: {rec:,} of {info['jobs']:,} jobs (the trace's own schedule)")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    """``hpcgym traces fetch``."""
    path = fetch_trace(args.name, dest=args.dest, url=args.url, force=args.force)
    print(path)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    """``hpcgym traces generate``."""
    from hpcgym.cli.errors import writable_file
    from hpcgym.workload import lublin

    writable_file(args.output, "--output")
    w = lublin.generate(
        n_jobs=args.jobs,
        machine_size=args.machine_size,
        load=args.load,
        seed=args.seed,
        request_model=args.request_model,
    )
    path = write_swf(w, args.output)
    print(
        f"wrote {len(w):,} jobs on {w.machine_size} processors (offered load "
        f"{w.offered_load:.3f}) to {path}"
    )
    return 0


def _partition_limits(items: list[str]) -> dict[str, str]:
    from hpcgym.cli.errors import UsageError
    from hpcgym.workload.sacct import parse_duration

    out: dict[str, str] = {}
    for item in items:
        part, eq, limit = (x.strip() for x in item.partition("="))
        try:
            if not eq or not part:
                raise ValueError("expected PART=LIMIT")
            parse_duration(limit)
        except ValueError as exc:
            raise UsageError(f"--partition-limit {item}: {exc}") from None
        out[part] = limit
    return out


def cmd_convert(args: argparse.Namespace) -> int:
    """``hpcgym traces convert``."""
    from hpcgym.cli.errors import writable_file
    from hpcgym.workload.sacct import read_accounting

    writable_file(args.output, "OUTPUT")
    w = read_accounting(
        args.input,
        format=args.format,
        machine_size=args.machine_size,
        lenient=args.lenient,
        tz=args.tz,
        partition_limits=_partition_limits(args.partition_limit),
        unlimited=args.unlimited,
        arrival=args.arrival,
    )
    rep = w.report
    limits = "".join(f", partition limit {x}" for x in args.partition_limit)
    w.meta["Note"] = "\n".join(
        [
            f"converted from {w.meta.get('Computer', 'Slurm accounting')} {args.input} by "
            f"hpcgym traces convert (tz {args.tz}, unlimited {args.unlimited}, arrival "
            f"{args.arrival}{limits})",
            "cleaning report:",
            *(f"  {line}" for line in rep.lines()),
        ]
    )
    path = write_swf(w, args.output)
    dropped = sum(rep.dropped.values())
    print(f"wrote {len(w):,} jobs on {w.machine_size} processors to {path}")
    print(f"read {rep.records:,} lines; dropped {dropped:,}; cleaning report:")
    for line in rep.lines()[2:]:
        if not line.endswith(": 0"):
            print(f"  {line}")
    return 0
