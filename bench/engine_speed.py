"""Engine speed: whole-trace simulations, jobs/s for every shipped trace and policy.

    HPCGYM_TRACE_DIR=../shared/traces python bench/engine_speed.py [--traces ...] [--quick]

``sim_seconds`` is engine time alone (the kernels are compiled/loaded from numba's
cache by a warm-up before timing; trace parsing excluded). Also reports the peak
memory of the simulation of CEA-Curie (tracemalloc: numpy allocations of the engine
state) and the process's peak RSS. Results are recorded in docs/engine.md.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

from hpcgym.sim import get_scheduler
from hpcgym.sim.engine import warmup
from hpcgym.workload import load

TRACES = [
    "SDSC-SP2",
    "CTC-SP2",
    "HPC2N",
    "SDSC-BLUE",
    "LANL-CM5",
    "CEA-Curie",
    "Lublin-1",
    "Lublin-2",
]
SCHEDULERS = [
    "EASY",
    "EASY-AR",
    "EASY-SJBF",
    "SJF+EASY",
    "SAF",
    "WFP3+EASY",
    "UNICEF+EASY",
    "F1+EASY",
    "NONE",
    "CONSERVATIVE",
]
#: the naive list-based implementation of the same semantics (tests/oracle.py), measured
#: with bench/naive_baseline.py on this machine
NAIVE_SECONDS = {"SDSC-SP2": 1.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--traces", nargs="*", default=TRACES)
    ap.add_argument("--schedulers", nargs="*", default=SCHEDULERS)
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = ap.parse_args()
    warmup()
    print("| trace | jobs | " + " | ".join(args.schedulers) + " |")
    print("|---|---:|" + "---:|" * len(args.schedulers))
    for trace in args.traces:
        wl = load(trace)
        cells = []
        for name in args.schedulers:
            spec = get_scheduler(name)
            best = float("inf")
            for _ in range(args.repeat if name != "CONSERVATIVE" else 1):
                t0 = time.perf_counter()
                res = spec.simulate(wl)
                best = min(best, res.metrics["sim_seconds"])
                del t0
            cells.append(f"{best:.3f} s ({len(wl) / best / 1e3:,.0f}k/s)")
        print(f"| {trace} | {len(wl)} | " + " | ".join(cells) + " |")
    if "CEA-Curie" in args.traces:
        wl = load("CEA-Curie")
        tracemalloc.start()
        get_scheduler("EASY").simulate(wl)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"\nCEA-Curie FCFS+EASY: peak traced memory of the simulation {peak / 2**20:.1f} MiB;"
            f" process peak RSS {rss:.0f} MiB (interpreter, numba, all traces loaded)"
        )


if __name__ == "__main__":
    main()
