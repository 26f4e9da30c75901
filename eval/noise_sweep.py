"""RLBackfilling Fig. 1: AVEbsld against the noise of runtime predictions.

    HPCGYM_TRACE_DIR=../shared/traces python eval/noise_sweep.py --trace SDSC-SP2 \
        --out docs/figures [--seeds 0 1 2]

For every queue policy (FCFS, WFP3, SJF, F1) with EASY backfilling, the estimate is the
actual runtime inflated by a seeded noise of level L: ``est = actual x (1 + e)``,
``e ~ U[0, L)``, capped at the request (``hpcgym.predictors`` ``noisy``); L = 0 is the
clairvoyant EASY-AR and "request" is plain EASY with user estimates. Whole trace; the
mean over the seeds is reported. Writes ``noise_sweep.md``, ``noise_sweep.json`` and
``noise_sweep.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hpcgym.predictors import make_estimator
from hpcgym.sim import Simulation
from hpcgym.workload import load

LEVELS = [0.0, 0.05, 0.10, 0.20, 0.40, 1.00]
POLICIES = ["FCFS", "WFP3", "SJF", "F1"]


def sweep(
    trace: str | None,
    policies: list[str],
    levels: list[float],
    seeds: list[int],
    jobs: int | None = None,
) -> dict[str, dict[str, float]]:
    wl = load(trace)
    if jobs:
        wl = wl.window(0, jobs)
    out: dict[str, dict[str, float]] = {}
    for pol in policies:
        row: dict[str, float] = {}
        for lev in levels:
            vals = []
            for seed in seeds if lev > 0 else seeds[:1]:
                est = make_estimator("actual") if lev == 0 else make_estimator("noisy", level=lev)
                res = Simulation(wl, policy=pol, backfill="easy", estimate=est, seed=seed).run()
                vals.append(res.metrics["avg_bsld"])
            row[f"{lev:g}"] = float(np.mean(vals))
        row["request"] = Simulation(wl, policy=pol, backfill="easy").run().metrics["avg_bsld"]
        out[pol] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="SDSC-SP2")
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--levels", nargs="+", type=float, default=LEVELS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    ap.add_argument("--out", default="docs/figures")
    args = ap.parse_args(argv)
    res = sweep(args.trace, args.policies, args.levels, args.seeds, args.jobs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cols = [f"{lev:g}" for lev in args.levels] + ["request"]
    lines = [
        f"AVEbsld, {args.trace}, EASY backfilling, estimate = actual x (1 + U[0, L)), "
        f"mean of seeds {args.seeds}",
        "",
        "| policy | "
        + " | ".join(("L=" + c if c != "request" else "user request") for c in cols)
        + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for pol, row in res.items():
        lines.append(f"| {pol} | " + " | ".join(f"{row[c]:.1f}" for c in cols) + " |")
    text = "\n".join(lines)
    print(text)
    (out / "noise_sweep.md").write_text(text + "\n")
    (out / "noise_sweep.json").write_text(
        json.dumps({"trace": args.trace, "seeds": args.seeds, "avg_bsld": res}, indent=2)
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    x = [100 * lev for lev in args.levels]
    for pol, row in res.items():
        ax.plot(x, [row[f"{lev:g}"] for lev in args.levels], marker="o", label=f"{pol}+EASY")
    ax.set_xlabel("prediction noise level L (%)")
    ax.set_ylabel("AVEbsld (whole trace)")
    ax.set_title(f"Noisy runtime predictions, {args.trace}")
    ax.set_xscale("symlog", linthresh=5)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{v:g}" for v in x])
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "noise_sweep.png", dpi=120)
    print(f"wrote {out / 'noise_sweep.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
