"""Lookahead schedulers vs EASY-SJBF on test-split windows: AVEbsld, paired ratios, cost.

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/lookahead.py [--windows 10]
        [--trace SDSC-SP2] [--length 1024] [--seed 1] [--split test|validation]
        [--schedulers EASY-SJBF LOOKAHEAD1-CLAIRVOYANT LOOKAHEAD] [--limit LOOKAHEAD1-ONLINE=5]

Windows: ``--windows`` starts drawn in the test split (the last 30 % of the trace) by
:class:`hpcgym.workload.WindowSampler` seeded with ``--seed`` -- the same windows as
``hpcgym compare --split test --seed 1`` (replay one with ``hpcgym simulate --scheduler
NAME --trace TRACE --start S --jobs 1024``); ``--split validation`` draws them from the
validation split instead (bounds that guide development). ``--limit NAME=M`` runs a
slow scheduler on the first ``M`` windows only; its ratio is then paired on those
windows. The interval is :func:`hpcgym.evaluation.statistics.paired_comparison`'s
(4,000 resamples, seed 0).

Printed per scheduler: mean AVEbsld over its windows (and EASY-SJBF's over the same
windows), the paired geometric-mean ratio of AVEbsld vs EASY-SJBF with a 95 %
percentile-bootstrap interval, wins (windows strictly below EASY-SJBF), seconds per
window, and for the lookaheads decisions per window, rollouts per decision and
milliseconds per decision. Results are read in docs/research/findings.md.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.sim import get_scheduler
from hpcgym.sim.engine import warmup
from hpcgym.workload import WindowSampler, load

REFERENCE = "EASY-SJBF"


def run(args: argparse.Namespace) -> dict[str, Any]:
    warmup()
    wl = load(args.trace)
    starts = WindowSampler(wl, args.length, args.split, seed=args.seed).sample_many(args.windows)
    starts = [int(s) for s in starts]
    limits = {}
    for item in args.limit:
        name, m = item.rsplit("=", 1)
        limits[name.upper()] = int(m)
    scheds = list(dict.fromkeys([REFERENCE, *args.schedulers]))
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in scheds}
    print(f"{wl.name}: {len(starts)} {args.split} windows of {args.length} jobs, seed {args.seed}")
    print(f"starts: {starts}")
    for i, st in enumerate(starts):
        w = wl.window(st, args.length)
        line = [f"window {i} start {st}:"]
        for s in scheds:
            if i >= limits.get(s.upper(), len(starts)):
                continue
            t0 = time.perf_counter()
            res = get_scheduler(s).simulate(w)
            sec = time.perf_counter() - t0
            c = res.counters
            rows[s].append(
                {
                    "start": st,
                    "avg_bsld": res.metrics["avg_bsld"],
                    "seconds": sec,
                    "decisions": c.get("lookahead_decisions", 0),
                    "rollouts": c.get("lookahead_rollouts", 0),
                    "violations": c["violations"],
                }
            )
            line.append(f"{s} {res.metrics['avg_bsld']:.2f} ({sec:.1f}s)")
        print("  ".join(line), flush=True)
    ref = {r["start"]: r["avg_bsld"] for r in rows[REFERENCE]}
    print()
    print(
        "| scheduler | windows | avg bsld | EASY-SJBF on the same | geo-mean ratio "
        "[95% CI] | wins | s / window | decisions / window | rollouts / decision | "
        "ms / decision | violations |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    summary: dict[str, Any] = {}
    for s in scheds:
        rs = rows[s]
        if not rs:
            continue
        b = np.array([r["avg_bsld"] for r in rs])
        base = np.array([ref[r["start"]] for r in rs])
        cmp = paired_comparison(b, base, resamples=4000, seed=0)
        g, lo, hi = cmp.geo_ratio, cmp.ci_low, cmp.ci_high
        sec = float(np.mean([r["seconds"] for r in rs]))
        dec = float(np.mean([r["decisions"] for r in rs]))
        rol = sum(r["rollouts"] for r in rs) / max(1, sum(r["decisions"] for r in rs))
        ms = 1000 * sum(r["seconds"] for r in rs) / max(1, sum(r["decisions"] for r in rs))
        viol = sum(r["violations"] for r in rs)
        wins = int((b < base).sum())
        summary[s] = {
            "windows": len(rs),
            "avg_bsld": float(b.mean()),
            "reference_avg_bsld": float(base.mean()),
            "geo_ratio": g,
            "ci": [lo, hi],
            "wins": wins,
            "seconds_per_window": sec,
            "decisions_per_window": dec,
            "violations": viol,
        }
        la = dec > 0
        print(
            f"| {s} | {len(rs)} | {b.mean():.2f} | {base.mean():.2f} | {g:.3f} "
            f"[{lo:.3f}, {hi:.3f}] | {wins} | {sec:.2f} | "
            + (f"{dec:.0f} | {rol:.1f} | {ms:.1f}" if la else "– | – | –")
            + f" | {viol} |"
        )
    return {
        "trace": wl.name,
        "split": args.split,
        "length": args.length,
        "starts": starts,
        "rows": rows,
        **summary,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", default="SDSC-SP2")
    ap.add_argument("--windows", type=int, default=10, help="windows (default 10)")
    ap.add_argument(
        "--split",
        choices=["test", "validation"],
        default="test",
        help="split the windows are drawn from (default test)",
    )
    ap.add_argument("--length", type=int, default=1024, help="jobs per window")
    ap.add_argument("--seed", type=int, default=1, help="seed of the window sampler")
    ap.add_argument(
        "--schedulers",
        nargs="+",
        default=["EASY-SJBF", "LOOKAHEAD1-CLAIRVOYANT", "LOOKAHEAD1-ONLINE"],
    )
    ap.add_argument(
        "--limit", nargs="*", default=[], help="NAME=M: run NAME on the first M windows only"
    )
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()
    out = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
