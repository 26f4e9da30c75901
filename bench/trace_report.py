"""Per-trace cleaning report of every registered trace found locally (docs/workloads.md).

Usage::

    HPCGYM_TRACE_DIR=/path/to/traces PYTHONPATH=. python bench/trace_report.py [--timing]
        [--json] [--download] [NAME ...]

Prints a Markdown table: machine size, job records read, kept jobs and the count of
every cleaning rule (see :mod:`hpcgym.workload.swf`). With ``--timing`` it adds the
load time of :func:`~hpcgym.workload.read_swf` (best of 3, plain run) and its peak
traced memory (a separate run under :mod:`tracemalloc`, which tracks numpy buffers).
Traces that are not available locally are listed as missing unless ``--download``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from typing import Any

from hpcgym.workload import DROP_RULES, PATCH_RULES, TRACES, get_trace, read_swf
from hpcgym.workload.traces import TraceNotFoundError, resolve_trace


def measure(name: str, timing: bool, download: bool) -> dict[str, Any] | None:
    info = get_trace(name)
    try:
        path = resolve_trace(info.name, download=download)
    except TraceNotFoundError:
        return None
    w = read_swf(path, name=info.name)
    row: dict[str, Any] = {
        "name": info.name,
        "file": path.name,
        "machine_size": w.machine_size,
        "records": w.report.records,
        "kept": w.report.kept,
        "registered_jobs": info.jobs,
        "dropped": dict(w.report.dropped),
        "patched": dict(w.report.patched),
    }
    if timing:
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            read_swf(path)
            best = min(best, time.perf_counter() - t0)
        tracemalloc.start()
        read_swf(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        row["load_seconds"] = round(best, 3)
        row["peak_mib"] = round(peak / 2**20, 1)
    return row


def markdown(rows: list[dict[str, Any]], missing: list[str], timing: bool) -> str:
    head = ["trace", "procs", "records", "kept"]
    head += [f"drop: {r}" for r in DROP_RULES] + [f"patch: {r}" for r in PATCH_RULES]
    if timing:
        head += ["load (s)", "peak MiB"]
    out = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for r in rows:
        cells = [r["name"], f"{r['machine_size']:,}", f"{r['records']:,}", f"{r['kept']:,}"]
        cells += [f"{r['dropped'][k]:,}" for k in DROP_RULES]
        cells += [f"{r['patched'][k]:,}" for k in PATCH_RULES]
        if timing:
            cells += [f"{r['load_seconds']:.2f}", f"{r['peak_mib']:.0f}"]
        out.append("| " + " | ".join(cells) + " |")
    if missing:
        out.append("")
        out.append("Not available locally: " + ", ".join(missing))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help="traces (default: all registered)")
    ap.add_argument("--timing", action="store_true", help="add load time and peak memory")
    ap.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    ap.add_argument("--download", action="store_true", help="download missing traces")
    args = ap.parse_args(argv)
    rows, missing = [], []
    for name in args.names or list(TRACES):
        row = measure(name, args.timing, args.download)
        if row is None:
            missing.append(name)
            continue
        if row["kept"] != row["registered_jobs"]:
            print(
                f"warning: {name}: kept {row['kept']} jobs, registry says {row['registered_jobs']}",
                file=sys.stderr,
            )
        rows.append(row)
    if args.json:
        print(json.dumps({"traces": rows, "missing": missing}, indent=2))
    else:
        print(markdown(rows, missing, args.timing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
