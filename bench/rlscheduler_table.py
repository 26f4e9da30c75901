"""RLScheduler's job-ordering setup on hpcgym's engine, beside its published numbers.

    HPCGYM_TRACE_DIR=path/to/traces python bench/rlscheduler_table.py [--out-md FILE]

RLScheduler (Zhang et al., SC'20, Table V; the authors' repository README reproduces it)
reports the average bounded slowdown of FCFS, WFP3, UNICEF, SJF, F1 and its RL agent on
10 job sequences of 1,024 jobs sampled from each of four traces (seed 1), without and with
backfilling. This script runs the same heuristics on hpcgym's engine in that setup:

- 10 windows of 1,024 jobs sampled from the whole trace (``--split all``, window seed 1);
- requests as estimates;
- no backfilling (``POLICY+NONE``), or EASY backfilling in the policy's order
  (``POLICY+EASY``).

It prints one Markdown table with the published value and ours, side by side. The
differences in setup are named in ``docs/reproduction.md``. Agent columns come from
``eval/compare.py --agents`` on the same windows (the ``Replay`` line of each output).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

COMPARE = Path(__file__).resolve().parents[1] / "eval" / "compare.py"
POLICIES = ("FCFS", "WFP3", "UNICEF", "SJF", "F1")
TRACES = ("Lublin-1", "SDSC-SP2", "HPC2N", "Lublin-2")

#: RLScheduler SC'20 Table V (bsld): trace -> backfilling -> [FCFS, WFP3, UNI, SJF, F1, RL]
PUBLISHED: dict[str, dict[str, tuple[float, ...]]] = {
    "Lublin-1": {
        "none": (7273.77, 19753.53, 22274.74, 277.35, 258.37, 254.67),
        "easy": (235.82, 133.87, 307.23, 73.31, 75.07, 58.64),
    },
    "SDSC-SP2": {
        "none": (1727.54, 3000.88, 1848.45, 2680.55, 1232.06, 466.44),
        "easy": (1595.12, 1083.12, 548.01, 2167.84, 1098.22, 397.82),
    },
    "HPC2N": {
        "none": (297.18, 426.99, 609.77, 157.71, 118.01, 117.01),
        "easy": (127.38, 97.39, 175.12, 122.04, 71.95, 86.14),
    },
    "Lublin-2": {
        "none": (7842.47, 9523.18, 11265.31, 787.89, 698.34, 724.51),
        "easy": (247.61, 318.35, 379.59, 91.99, 148.25, 118.79),
    },
}


def _run(trace: str, backfill: str, out: Path, jobs: int) -> dict[str, float]:
    name = "NONE" if backfill == "none" else "EASY"
    schedulers = [name if p == "FCFS" else f"{p}+{name}" for p in POLICIES]
    path = out / trace / backfill / "results.json"
    if not path.exists():
        cmd = [
            sys.executable, str(COMPARE), "--trace", trace, "--schedulers", *schedulers,
            "--windows", "10", "--length", "1024", "--split", "all", "--seed", "1",
            "--reference", "none", "--jobs", str(jobs), "--no-plots", "--no-progress",
            "--out", str(path.parent), "--json",
        ]  # fmt: skip
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    res = json.loads(path.read_text())
    means = {s["method"]: s["mean_avg_bsld"] for s in res["summary"]}
    return {p: means[name if p == "FCFS" else f"{p}+{name}"] for p in POLICIES}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("results/rlscheduler"))
    p.add_argument("--out-md", type=Path, default=None)
    args = p.parse_args(argv)
    head = " | ".join(f"{q} (paper / ours)" for q in ("FCFS", "WFP3", "UNI", "SJF", "F1"))
    lines = [f"| trace | backfilling | {head} | RL (paper) |", "|---|---|" + "---:|" * 6]
    for trace in args.traces:
        for bf in ("none", "easy"):
            ours = _run(trace, bf, args.out, args.jobs)
            pub = PUBLISHED[trace][bf]
            cells = [f"{pub[i]:.2f} / {ours[q]:.2f}" for i, q in enumerate(POLICIES)]
            label = "none" if bf == "none" else "EASY"
            lines.append(f"| {trace} | {label} | " + " | ".join(cells) + f" | {pub[5]:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.out_md:
        args.out_md.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
