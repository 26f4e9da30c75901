"""Speed of the naive list-based reference scheduler (tests/oracle.py) on whole traces.

This is the "naive implementation" baseline the numba engine is compared against. It
reads the traces with its own tiny gzip + numpy SWF reader (independent of
``hpcgym.workload``; the cleaning rules are the ones documented in tests/oracle.py's
task: procs = f5 if > 0 else f8, drop if <= 0; runtime = f4, drop if <= 0; drop if
submit f2 < 0; request = f9 if > 0 else runtime; request = max(request, runtime);
procs = min(procs, MaxProcs header (else MaxNodes)); stable sort by submit), simulates
the whole trace once and prints the wall time and jobs/s.

Usage::

    HPCGYM_TRACE_DIR=path/to/traces PYTHONPATH=. python bench/naive_baseline.py
    ... python bench/naive_baseline.py --trace CTC-SP2 --policy FCFS --backfill easy
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.naive_baseline`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.naive_baseline", *sys.argv[1:]])
from tests.oracle import BACKFILLS, ESTIMATES, POLICIES, oracle_avebsld, oracle_simulate  # noqa: E402

#: trace name -> file name in HPCGYM_TRACE_DIR
TRACE_FILES = {
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "CTC-SP2": "CTC-SP2-1996-3.1-cln.swf.gz",
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": "HPC2N-2002-2.2-cln.swf.gz",
    "Lublin-1": "lublin_256.swf.gz",
    "Lublin-2": "lublin_256_new2.swf.gz",
}


def read_swf_clean(path: Path) -> tuple[dict[str, np.ndarray], int, dict[str, int]]:
    """Tiny SWF reader with the documented cleaning rules.

    :param path: gzip-compressed SWF file
    :return: (columns submit/runtime/procs/request, machine size, counts of dropped and
        patched records per rule)
    """
    with gzip.open(path, "rt", encoding="ascii") as fh:
        text = fh.read()
    header: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith(";"):
            continue
        mt = re.match(r";\s*(MaxProcs|MaxNodes)\s*:\s*(-?\d+)", line)
        if mt:
            header[mt.group(1)] = int(mt.group(2))
    m = header.get("MaxProcs", 0)
    if m <= 0:
        m = header.get("MaxNodes", 0)
    if m <= 0:
        raise ValueError(f"{path}: no positive MaxProcs or MaxNodes in the header")
    data = np.loadtxt(io.StringIO(text), comments=";", dtype=np.float64, ndmin=2)
    if data.shape[1] != 18:
        raise ValueError(f"{path}: expected 18 fields per job line, got {data.shape[1]}")
    submit, runtime = data[:, 1], data[:, 3]
    procs = np.where(data[:, 4] > 0, data[:, 4], data[:, 7])
    counts = {
        "records": len(data),
        "dropped_procs": int(np.sum(procs <= 0)),
        "dropped_runtime": int(np.sum((procs > 0) & (runtime <= 0))),
        "dropped_submit": int(np.sum((procs > 0) & (runtime > 0) & (submit < 0))),
    }
    keep = (procs > 0) & (runtime > 0) & (submit >= 0)
    submit, runtime, procs, req = submit[keep], runtime[keep], procs[keep], data[keep, 8]
    counts["patched_request_missing"] = int(np.sum(req <= 0))
    request = np.where(req > 0, req, runtime)
    counts["patched_request_below_runtime"] = int(np.sum(request < runtime))
    request = np.maximum(request, runtime)
    counts["patched_procs_clipped"] = int(np.sum(procs > m))
    procs = np.minimum(procs, m).astype(np.int64)
    order = np.argsort(submit, kind="stable")
    cols = {
        "submit": submit[order],
        "runtime": runtime[order],
        "procs": procs[order],
        "request": request[order],
    }
    return cols, m, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="SDSC-SP2", choices=sorted(TRACE_FILES))
    ap.add_argument("--policy", default="FCFS", choices=POLICIES)
    ap.add_argument("--backfill", default="easy", choices=BACKFILLS)
    ap.add_argument("--estimate", default="request", choices=ESTIMATES)
    ap.add_argument("--limit", type=int, default=None, help="simulate only the first N jobs")
    args = ap.parse_args(argv)

    trace_dir = os.environ.get("HPCGYM_TRACE_DIR")
    if not trace_dir:
        print("set HPCGYM_TRACE_DIR to the folder holding the .swf.gz traces", file=sys.stderr)
        return 2
    path = Path(trace_dir) / TRACE_FILES[args.trace]
    if not path.is_file():
        print(f"trace file not found: {path} (HPCGYM_TRACE_DIR={trace_dir})", file=sys.stderr)
        return 2

    cols, m, counts = read_swf_clean(path)
    if args.limit is not None:
        cols = {k: v[: args.limit] for k, v in cols.items()}
    n = len(cols["submit"])
    print(f"{args.trace}: {n} jobs, m={m}, cleaning {counts}")
    t0 = time.perf_counter()
    out = oracle_simulate(
        cols["submit"],
        cols["runtime"],
        cols["procs"],
        cols["request"],
        m,
        policy=args.policy,
        backfill=args.backfill,
        estimate=args.estimate,
    )
    dt = time.perf_counter() - t0
    bsld = oracle_avebsld(cols["submit"], cols["runtime"], out["start"])
    print(
        f"naive oracle {args.policy}+{args.backfill} ({args.estimate}): {dt:.2f} s, "
        f"{n / dt:,.0f} jobs/s, AVEbsld {bsld:.4f}, "
        f"backfilled {int(out['backfilled'].sum())} jobs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
