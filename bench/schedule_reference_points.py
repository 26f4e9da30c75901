"""Reference points of the job-ordering task (Schedule-v0), and its reference schedulers.

    HPCGYM_TRACE_DIR=path/to/traces python bench/schedule_reference_points.py [--jobs 2]
    HPCGYM_TRACE_DIR=path/to/traces python bench/schedule_reference_points.py --references [--check]

Per trace and split (train, validation; 30 windows of 1,024 jobs, window seed 5) the
default mode runs, with ``eval/compare.py`` on the same windows:

* ``REF+EASY-SJBF`` -- the trace's unguarded reference queue heuristic
  (:data:`hpcgym.sim.references.REFERENCE_POLICY`) with EASY-SJBF backfilling;
* ``REF+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT`` -- clairvoyant one-step lookahead over the head
  choice (the first 8 jobs of the reference order, rolled out with the reference on the
  window's actual future). A reference point, not a bound: one step of lookahead is a lower
  bound on the room clairvoyance gives (a clairvoyant static order does far better);
* ``REF+SCHEDULE-LOOKAHEAD1-ONLINE`` -- the same with Monte Carlo futures sampled from what
  is known at the decision: what this online planner reaches, not a limit of online methods.

It prints (and with ``--out-md`` writes) the table of paired geometric-mean ratios to the
reference with 95% bootstrap intervals, and the fairness columns (mean over windows of
the maximum wait and of the 99th-percentile bounded slowdown). Every compare run writes
its ``results.json`` under ``--out``; runs whose file exists are not repeated, so an
interrupted measurement resumes where it stopped.

``--references`` instead ranks the thirteen queue policies (EASY-SJBF backfilling) on the
30 train windows of each trace twice: without a starvation guard (the unguarded
references, :data:`~hpcgym.sim.references.REFERENCE_POLICY`) and under the thesis's guard
(Carastan-Santos: a job that has waited longer than three times the platform's largest
allowed request goes first; :func:`~hpcgym.sim.references.starvation_threshold`), the
deployable references (:data:`~hpcgym.sim.references.DEPLOYABLE_REFERENCE`). It prints the
three strongest of each ranking with the mean per-window maximum wait, and ``--check``
fails (exit 1) when a strongest order differs from the tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from hpcgym.sim.engine import POLICIES
from hpcgym.sim.references import (
    DEPLOYABLE_REFERENCE,
    REFERENCE_POLICY,
    platform_limit,
    reference_policy,
    starvation_threshold,
)
from hpcgym.sim.schedulers import policy_name, starvation_label

TRACES = ("SDSC-SP2", "HPC2N", "CTC-SP2", "KTH-SP2", "Lublin-1", "Lublin-2")
REFERENCE_TRACES = (*TRACES, "SDSC-BLUE", "synthetic")
QUEUE_POLICIES = tuple(dict.fromkeys(k for k, _ in POLICIES.items() if k not in ("SPF", "LPF")))
COMPARE = Path(__file__).resolve().parents[1] / "eval" / "compare.py"
KINDS = {"clairvoyant": "SCHEDULE-LOOKAHEAD1-CLAIRVOYANT", "online": "SCHEDULE-LOOKAHEAD1-ONLINE"}


def _compare(
    trace: str,
    split: str,
    schedulers: list[str],
    reference: str,
    out: Path,
    args: argparse.Namespace,
) -> dict:
    path = out / "results.json"
    if not path.exists():
        cmd = [
            sys.executable,
            str(COMPARE),
            "--trace",
            trace,
            "--schedulers",
            *schedulers,
            "--reference",
            reference,
            "--windows",
            str(args.windows),
            "--length",
            str(args.length),
            "--split",
            split,
            "--seed",
            str(args.seed),
            "--jobs",
            str(args.jobs),
            "--no-plots",
            "--no-progress",
            "--out",
            str(out),
            "--json",
        ]
        print("$", " ".join(cmd[1:]), flush=True)
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return json.loads(path.read_text())


def _rows(res: dict) -> dict[str, dict]:
    return {s["method"]: s for s in res["summary"]}


def _fair(res: dict, method: str) -> tuple[float, float]:
    rows = [r for r in res["rows"] if r["method"] == method]
    mw = sum(r["max_wait"] for r in rows) / len(rows) / 3600.0
    p99 = sum(r["p99_bsld"] for r in rows) / len(rows)
    return mw, p99


def _ranking(res: dict) -> list[tuple[float, str]]:
    return sorted(
        (s["geo_ratio"] if s["geo_ratio"] is not None else 1.0, s["method"]) for s in res["summary"]
    )


def _order(method: str) -> str:
    head = method.split(",")[0]
    return head.split("+")[0] if "+" in head else "FCFS"


def references(args: argparse.Namespace) -> int:
    from hpcgym.workload import load, trace_spec

    bad = 0
    for trace in args.traces:
        wl = load(trace_spec(trace) if trace != "synthetic" else None)
        theta = starvation_threshold(wl)
        guard = f",starvation={starvation_label(theta)}"
        base = args.out / "references" / trace
        for kind, suffix in (("unguarded", ""), ("guarded", guard)):
            names = [policy_name("EASY-SJBF", p) + suffix for p in QUEUE_POLICIES]
            res = _compare(trace, "train", names, "EASY-SJBF", base / kind, args)
            rank = _ranking(res)
            best = rank[0][1]
            if kind == "unguarded":
                listed = REFERENCE_POLICY.get(trace)
                ok = listed is None or listed == _order(best)
            else:
                listed = DEPLOYABLE_REFERENCE.get(trace)
                ok = listed is None or listed.lower() == best.lower()
            bad += not ok
            top = ", ".join(f"{m} {r:.3f} (max wait {_fair(res, m)[0]:.1f} h)" for r, m in rank[:3])
            print(
                f"{trace:10s} {kind:9s} platform limit {platform_limit(wl.request) / 3600:g} h: "
                f"strongest {best} (table: {listed}) {'ok' if ok else 'DIFFERS'}: {top}",
                flush=True,
            )
    return 1 if (args.check and bad) else 0


def reference_points(args: argparse.Namespace) -> int:
    lines = [
        "| trace | split | reference | REF AVEbsld | SCHEDULE-LOOKAHEAD1-CLAIRVOYANT ratio "
        "[95% CI] | SCHEDULE-LOOKAHEAD1-ONLINE ratio [95% CI] | max wait h (REF / "
        "CLAIRVOYANT / ONLINE) | p99 bsld (REF / CLAIRVOYANT / ONLINE) |",
        "|---|---|---|---:|---|---|---|---|",
    ]
    for trace in args.traces:
        ref = reference_policy(trace)
        base = f"{ref}+EASY-SJBF"
        for split in args.splits:
            cells = {}
            for kind in args.methods:
                name = f"{ref}+{KINDS[kind]}"
                out = args.out / trace / split / kind
                try:
                    cells[kind] = _compare(trace, split, [base, name], base, out, args)
                except subprocess.CalledProcessError as exc:
                    print(f"{trace} {split} {kind}: failed\n{exc.stderr}", file=sys.stderr)
            if not cells:
                continue
            any_res = next(iter(cells.values()))
            b = _rows(any_res)[base]
            txt, mws, p99s = [], [], []
            mw0, p0 = _fair(any_res, base)
            for kind in KINDS:
                if kind not in cells:
                    txt.append("not run")
                    continue
                s = _rows(cells[kind])[f"{ref}+{KINDS[kind]}"]
                txt.append(f"{s['geo_ratio']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]")
                mw, p = _fair(cells[kind], f"{ref}+{KINDS[kind]}")
                mws.append(f"{mw:.1f}")
                p99s.append(f"{p:.0f}")
            lines.append(
                f"| {trace} | {split} | {base} | {b['mean_avg_bsld']:.2f} | {txt[0]} | {txt[1]} | "
                f"{mw0:.1f} / {' / '.join(mws)} | {p0:.0f} / {' / '.join(p99s)} |"
            )
    table = "\n".join(lines)
    print(table)
    if args.out_md:
        args.out_md.write_text(table + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--traces", nargs="+", default=None, help="default: six traces; eight with --references"
    )
    p.add_argument("--splits", nargs="+", default=["train", "validation"])
    p.add_argument("--methods", nargs="+", default=list(KINDS), choices=list(KINDS))
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("results/schedule-reference-points"))
    p.add_argument("--out-md", type=Path, default=None, help="also write the table here")
    p.add_argument(
        "--references",
        action="store_true",
        help="rank the 13 queue policies, unguarded and under the starvation guard",
    )
    p.add_argument("--check", action="store_true", help="with --references: fail on a change")
    args = p.parse_args(argv)
    if args.traces is None:
        args.traces = list(REFERENCE_TRACES if args.references else TRACES)
    return references(args) if args.references else reference_points(args)


if __name__ == "__main__":
    raise SystemExit(main())
