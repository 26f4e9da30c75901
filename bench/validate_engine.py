"""Reproduce the published full-trace AVEbsld of Gaussier et al. (SC'15, Tables 1 and 6).

    HPCGYM_TRACE_DIR=../shared/traces python bench/validate_engine.py [--json]

Prints a Markdown table (ours, published, relative difference) and the commands that
reproduce each number with the CLI. Results are recorded in docs/engine.md.
"""

from __future__ import annotations

import argparse
import json
import time

from hpcgym.sim import get_scheduler
from hpcgym.sim.engine import warmup
from hpcgym.workload import load

#: Gaussier et al. SC'15, pyss simulator: EASY / EASY with actual runtimes / SJBF-AR
PUBLISHED = {
    "SDSC-SP2": {"EASY": 87.9, "EASY-AR": 70.5, "EASY-SJBF-AR": 56.8},
    "CTC-SP2": {"EASY": 49.6, "EASY-AR": 37.2, "EASY-SJBF-AR": 17.6},
    "SDSC-BLUE": {"EASY": 36.5, "EASY-AR": 30.6, "EASY-SJBF-AR": 13.2},
}
TOLERANCE = 0.07


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    warmup()
    rows = []
    for trace, cols in PUBLISHED.items():
        wl = load(trace)
        for sched, pub in cols.items():
            t0 = time.perf_counter()
            res = get_scheduler(sched).simulate(wl)
            ours = res.metrics["avg_bsld"]
            rows.append(
                {
                    "trace": trace,
                    "scheduler": sched,
                    "jobs": len(wl),
                    "ours": ours,
                    "published": pub,
                    "diff": ours / pub - 1,
                    "within": abs(ours / pub - 1) <= TOLERANCE,
                    "seconds": time.perf_counter() - t0,
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| trace | scheduler | jobs | AVEbsld (ours) | published | diff | within ±7% |")
    print("|---|---|---:|---:|---:|---:|:---:|")
    for r in rows:
        print(
            f"| {r['trace']} | {r['scheduler']} | {r['jobs']} | {r['ours']:.2f} | "
            f"{r['published']:.1f} | {100 * r['diff']:+.1f}% | {'yes' if r['within'] else 'NO'} |"
        )
    print()
    print("Reproduce one cell: hpcgym simulate --trace SDSC-SP2 --scheduler EASY-AR --json")


if __name__ == "__main__":
    main()
