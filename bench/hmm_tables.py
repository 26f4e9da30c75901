"""Reproduce Nissimov's Tables 5.1 and 5.2 (EASY vs EASY+HMM) on whole traces.

Usage (from the repository root)::

    HPCGYM_TRACE_DIR=path/to/traces PYTHONPATH=. python bench/hmm_tables.py
    ... python bench/hmm_tables.py --traces SDSC-SP2 --jobs 10000   # a quick window
    ... python bench/hmm_tables.py --traces SDSC-SP2 --tau 0.04 --single-scan

Each trace is simulated once with ``EASY`` and once with ``EASY-HMM`` (FCFS, EASY's
backfill test replaced by the probabilistic one on HMM runtime distributions, tau =
0.05, M = 16, t_s = 15 min, t_r = 1.8, Static-IV, L1 criterion with eps = 200: the
thesis' §5.3 settings, which are the defaults of ``HMMPredictor``). Printed: the
Markdown tables of the mean wait (minutes) and of the geometric mean wait (seconds;
the thesis' formula ``exp(mean(ln max(W, 10 s)))``) beside the thesis' values, then
AVEbsld, counters and run times. "Total" is the geometric mean of the EASY+HMM/EASY
ratios over the traces (this reproduces the thesis' Total rows: -8.7% and -16.7%).

CTC-SP2 is simulated on 512 processors by default: the thesis' EASY numbers for CTC
(21.3 min, 28.2 s) are those of the whole machine (512 nodes; our EASY gives 21.5 min
and 28.1 s), not of the 338-node batch partition of the current archive header
(250 min). Use ``CTC-SP2:338`` to simulate the partition.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np

from hpcgym.sim import get_scheduler
from hpcgym.sim.engine import warmup
from hpcgym.workload import load

#: thesis Tables 5.1 / 5.2: trace -> ((EASY, EASY+HMM, change %) in minutes,
#: (EASY, EASY+HMM, change %) in seconds); the changes as printed in the thesis
THESIS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "CTC-SP2": ((21.3, 18.1, -15.2), (28.2, 25.3, -10.1)),
    "SDSC-SP2": ((364.0, 373.0, 2.6), (639.0, 635.0, -0.7)),
    "SDSC-BLUE": ((131.0, 105.0, -19.5), (203.0, 135.0, -33.6)),
    "KTH-SP2": ((114.0, 113.0, -0.6), (181.0, 147.0, -18.9)),
}
DEFAULT_TRACES = ["CTC-SP2:512", "SDSC-SP2", "SDSC-BLUE", "KTH-SP2"]
W_MIN = 10.0  # seconds: the thesis' lower bound on waits in the geometric mean


def geo_mean_wait(wait: np.ndarray, w_min: float = W_MIN) -> float:
    """The thesis' geometric mean: ``exp(mean(ln max(W, W_min)))`` (W_min = 10 s)."""
    return float(np.exp(np.mean(np.log(np.maximum(wait, w_min)))))


def run_row(spec_text: str, jobs: int | None, tau: float, rescan: bool) -> dict[str, Any]:
    name, _, m = spec_text.partition(":")
    wl = load(name, machine_size=int(m) if m else None)
    if jobs is not None and jobs < len(wl):
        wl = wl.window(0, jobs)
    out: dict[str, Any] = {"trace": name, "machine": wl.machine_size, "jobs": len(wl)}
    t0 = time.perf_counter()
    easy = get_scheduler("EASY").simulate(wl)
    out["easy_seconds"] = time.perf_counter() - t0
    hmm = get_scheduler("EASY-HMM")
    kw = dict(hmm.decider_kwargs) | {"tau": tau, "rescan": rescan}
    hmm = replace(hmm, decider_kwargs=tuple(sorted(kw.items())))
    t0 = time.perf_counter()
    sim = hmm.make_simulation(wl)
    res = sim.run()
    out["hmm_seconds"] = time.perf_counter() - t0
    stats = sim.estimator.stats  # type: ignore[union-attr]
    out.update(
        easy_wait=easy.wait.mean() / 60.0,
        hmm_wait=res.wait.mean() / 60.0,
        easy_gm=geo_mean_wait(easy.wait),
        hmm_gm=geo_mean_wait(res.wait),
        easy_bsld=easy.metrics["avg_bsld"],
        hmm_bsld=res.metrics["avg_bsld"],
        decide_seconds=sim.decider.seconds,  # type: ignore[union-attr]
        predict_seconds=stats["predict_seconds"] + stats["train_seconds"],
        trainings=int(stats["trainings"]),
        no_prediction=int(stats["no_prediction"]),
        **res.counters,
    )
    return out


def pct(a: float, b: float) -> str:
    return f"{100.0 * (b / a - 1.0):+.1f}%"


def geo_change(ratios: list[float]) -> str:
    """The thesis' "Total": geometric mean of the ratios, as a change."""
    if not ratios:
        return ""
    return f"{100.0 * (math.exp(np.mean(np.log(ratios))) - 1.0):+.1f}%"


TABLES = (
    ("Table 5.1: arithmetic mean of waiting times", "easy_wait", "hmm_wait", "min", 0),
    ("Table 5.2: geometric mean of waiting times", "easy_gm", "hmm_gm", "s", 1),
)


def render(rows: list[dict[str, Any]], tau: float, rescan: bool) -> str:
    lines: list[str] = []
    for title, a, b, unit, ti in TABLES:
        lines += [
            f"**{title}** (tau = {tau}{'' if rescan else ', single scan'})",
            "",
            f"| trace | procs | jobs | EASY ({unit}) | EASY+HMM ({unit}) | change "
            f"| thesis EASY | thesis EASY+HMM | thesis change |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        theirs = []
        for r in rows:
            th = THESIS.get(r["trace"])
            ts = ("", "", "")
            if th is not None:
                e, h, c = th[ti]
                ts = (f"{e:g}", f"{h:g}", f"{c:+.1f}%")
                theirs.append(1.0 + c / 100.0)
            lines.append(
                f"| {r['trace']} | {r['machine']} | {r['jobs']} | {r[a]:.1f} | {r[b]:.1f} "
                f"| {pct(r[a], r[b])} | {ts[0]} | {ts[1]} | {ts[2]} |"
            )
        ours = geo_change([r[b] / r[a] for r in rows])
        lines += [f"| Total | | | | | {ours} | | | {geo_change(theirs)} |", ""]
    lines += [
        "**AVEbsld, counters and run times** (EASY-HMM run = engine + HMM predictor + "
        "decider, whole run; one run each)",
        "",
        "| trace | AVEbsld EASY | AVEbsld EASY+HMM | decisions | HMM starts | of which not "
        "EASY-allowed (violations) | stops with an EASY-allowed candidate | jobs without "
        "prediction | trainings | EASY run | EASY-HMM run | of which predictor | of which "
        "decider |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['trace']} | {r['easy_bsld']:.2f} | {r['hmm_bsld']:.2f} | {r['decisions']} "
            f"| {r['hmm_starts']} | {r['violations']} | {r['hmm_stops_with_easy_candidate']} "
            f"| {r['no_prediction']} | {r['trainings']} | {r['easy_seconds']:.2f} s "
            f"| {r['hmm_seconds']:.1f} s | {r['predict_seconds']:.1f} s "
            f"| {r['decide_seconds']:.1f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--traces",
        nargs="+",
        default=DEFAULT_TRACES,
        help="registered trace names, NAME:PROCS to override the machine size",
    )
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs only (default: all)")
    ap.add_argument("--tau", type=float, default=0.05, help="threshold (thesis: 0.05)")
    ap.add_argument(
        "--single-scan",
        action="store_true",
        help="test each job once per scheduling pass instead of rescanning after a start",
    )
    args = ap.parse_args(argv)
    warmup()
    rows = []
    for t in args.traces:
        t0 = time.perf_counter()
        rows.append(run_row(t, args.jobs, args.tau, not args.single_scan))
        print(f"# {t}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    print(render(rows, args.tau, not args.single_scan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
