"""Learning per wall-clock: ``--preset fast`` before and after the speed work.

Runs two ``train/ppo.py --preset fast`` trainings **at the same time** (so they share
the machine's load) for the same wall-time budget:

* ``before`` -- the fast preset with the native vector env stepped sub-env by sub-env in
  Python (``--env-step python``: the fast preset before the compiled batch step; the same
  episodes, so the two runs take the same updates and differ only in time per step;
  ``--before-options`` changes it, e.g. ``'--algo sb3'`` for the one before the lean PPO);
* ``after`` -- the fast preset as configured now (the compiled batch step of
  :mod:`hpcgym.envs.batch`, the lean PPO of ``train/lean_ppo.py``);
* optionally more runs (``--also NAME='options'``, e.g. ``after-b512='--batch-size 512'``).

Each run saves a checkpoint every ``--checkpoint-every`` updates (all kept, no evaluation
during training, so the budget is spent on training only). Afterwards every checkpoint
is evaluated on the run's **validation** windows (``train.evaluator.Evaluator``: the
training script's own windows and reference) and placed at its wall time since the
start of training. Output in ``--out``: ``curve.csv``, ``curve.md`` (a Markdown table of
the validation geo-mean ratio vs EASY-SJBF over time) and ``curve.png``.

With ``--seeds 0 1 2`` the runs are repeated for each seed (one seed after the other, in
``--out``/``seed-<s>``) and ``--out`` also gets ``seeds.md`` and ``seeds.png``: for every
configuration and every minute of the budget, the validation ratio of the latest
checkpoint saved by then (the model that run would hand over if stopped at that minute),
as the mean over the seeds with its range, and each seed's final model.

Usage (in the background)::

    HPCGYM_TRACE_DIR=path/to/traces nohup python bench/learning_curve.py \\
        --trace SDSC-SP2 --minutes 10 --out /tmp/learning_curve > /tmp/learning_curve.log 2>&1 &
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.learning_curve`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.learning_curve", *sys.argv[1:]])

#: The two configurations: extra ``train/ppo.py`` options over ``--preset fast``.
CONFIGS: dict[str, list[str]] = {
    "before": ["--env-step", "python"],
    "after": [],
}


def worker(name: str, argv: list[str]) -> int:
    """Run one training (in a subprocess): ``train.ppo.main(argv)``.

    :param name: the configuration's name
    :param argv: ``train/ppo.py`` arguments
    """
    from train.ppo import main as ppo_main

    ppo_main(argv)
    return 0


def _train_args(args: argparse.Namespace, name: str, run_dir: Path) -> list[str]:
    return [
        "--trace",
        args.trace,
        "--preset",
        "fast",
        "--seed",
        str(args.seed),
        "--time-limit",
        str(args.minutes),
        "--eval-every",
        "0",
        "--eval-windows",
        str(args.eval_windows),
        "--baselines",
        "EASY-SJBF",
        "--checkpoint-every",
        str(args.checkpoint_every[name]),
        "--keep-checkpoints",
        "0",
        "--logdir",
        str(run_dir.parent),
        "--run-name",
        run_dir.name,
        "--no-progress",
        *CONFIGS[name],
    ]


def train_both(args: argparse.Namespace, out: Path) -> dict[str, Path]:
    """Start both trainings, wait for them; returns their run folders.

    :param args: the parsed options
    :param out: the output folder
    """
    procs: dict[str, subprocess.Popen[bytes]] = {}
    runs: dict[str, Path] = {}
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for name in CONFIGS:
        run = out / "runs" / name
        runs[name] = run
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--"]
        cmd += _train_args(args, name, run)
        log = (out / f"{name}.log").open("wb")
        procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        print(f"started {name}: pid {procs[name].pid}, log {out / f'{name}.log'}", flush=True)
    for name, proc in procs.items():
        if proc.wait() != 0:
            raise SystemExit(f"{name} failed (exit {proc.returncode}); see {out / f'{name}.log'}")
    return runs


def _first_evaluation(run: Path) -> dict[str, Any]:
    """The run's first evaluation record (of the untrained policy, at the start)."""
    from hpcgym.evaluation.cards import read_evaluations
    from train.rundir import RunDir

    records = read_evaluations(RunDir(run).evaluations)
    if not records:
        raise SystemExit(f"{run}: no evaluation records in evaluations.jsonl")
    return records[0]


def _session_start(run: Path) -> float:
    """Wall-clock time at which training started (the first evaluation's time minus its
    duration, which ran right at the start of training)."""
    first = _first_evaluation(run)
    return float(first["time"]) - float(first["seconds"])


def evaluate_checkpoints(name: str, run: Path) -> list[dict[str, Any]]:
    """Evaluate every checkpoint of ``run`` on its validation windows.

    :param name: the configuration
    :param run: the run folder
    :return: one row per checkpoint: ``config``, ``minutes``, ``steps``, ``avg_bsld``,
        ``reference_avg_bsld``, ``geo_ratio``
    """
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.evaluation.statistics import geo_ratio
    from train.build import env_kwargs
    from train.config import TrainConfig
    from train.evaluator import Evaluator
    from train.rundir import checkpoint_steps

    cfg = TrainConfig.from_json(run / "config.json")
    workload = BackfillEnv(**env_kwargs(cfg, "train", cfg.length)).workload
    evaluator = Evaluator.for_config(cfg, workload)
    t0 = _session_start(run)
    untrained = _first_evaluation(run)
    points: list[tuple[float, int, dict[str, Any]]] = [(0.0, 0, untrained)]
    ckpts = sorted((run / "checkpoints").glob("*.zip"), key=lambda p: checkpoint_steps(p) or 0)
    for path in ckpts:
        rec = evaluator.evaluate(MaskablePPO.load(path, device="cpu"))
        points.append((path.stat().st_mtime - t0, int(checkpoint_steps(path) or 0), rec))
    rows = []
    for seconds, steps, rec in points:
        agent = [w["avg_bsld"] for w in rec["per_window"]]
        ref = [w["reference_avg_bsld"] for w in rec["per_window"]]
        rows.append(
            {
                "config": name,
                "minutes": round(seconds / 60.0, 2),
                "steps": steps,
                "avg_bsld": float(rec["avg_bsld"]),
                "reference_avg_bsld": float(sum(ref) / len(ref)),
                "geo_ratio": float(geo_ratio(agent, ref)),
            }
        )
    return rows


def write_outputs(rows: list[dict[str, Any]], out: Path) -> None:
    """``curve.csv``, ``curve.md`` and ``curve.png`` in ``out``.

    :param rows: the rows of :func:`evaluate_checkpoints` for both configurations
    :param out: the output folder
    """
    import csv

    with (out / "curve.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        "| configuration | minutes | steps | validation AVEbsld | EASY-SJBF | geo-mean ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['minutes']:.1f} | {r['steps']:,} | {r['avg_bsld']:.1f} "
            f"| {r['reference_avg_bsld']:.1f} | {r['geo_ratio']:.3f} |"
        )
    (out / "curve.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name in CONFIGS:
        pts = [(r["minutes"], r["geo_ratio"]) for r in rows if r["config"] == name]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"fast ({name})")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--", label="EASY-SJBF")
    ax.set_xlabel("wall-clock minutes of training")
    ax.set_ylabel("validation geo-mean ratio vs EASY-SJBF")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=120)


def at_minutes(rows: list[dict[str, Any]], grid: list[float]) -> list[float]:
    """The validation ratio of the latest checkpoint saved by each minute of ``grid``.

    :param rows: one configuration's rows of one seed (:func:`evaluate_checkpoints`),
        the untrained policy at minute 0 first
    :param grid: minutes since the start of training
    :return: one ratio per minute of ``grid`` (the untrained policy's before the first
        checkpoint)
    """
    ordered = sorted(rows, key=lambda r: r["minutes"])
    values = []
    for t in grid:
        saved = [r for r in ordered if r["minutes"] <= t + 1e-9]
        values.append(float((saved or ordered[:1])[-1]["geo_ratio"]))
    return values


def aggregate_seeds(
    per_seed: dict[int, list[dict[str, Any]]], minutes: float
) -> tuple[list[float], dict[str, dict[str, Any]]]:
    """Mean, range and final models over the seeds, per configuration.

    :param per_seed: the rows of every seed (all configurations)
    :param minutes: the training budget; the grid is every whole minute up to it, its last
        minute the end of the runs (their final models)
    :return: the grid and, per configuration, ``mean``/``low``/``high`` (one value per
        grid minute), ``finals`` (each seed's final model's ratio) and ``steps`` (each
        seed's steps at its final checkpoint)
    """
    grid = [float(m) for m in range(0, int(math.floor(minutes)) + 1)]
    # the last minute is the end of the budget: the final models (a run saves its last
    # checkpoint a few seconds after its time limit)
    lookup = [*grid[:-1], math.inf]
    configs = list(dict.fromkeys(r["config"] for rows in per_seed.values() for r in rows))
    out: dict[str, dict[str, Any]] = {}
    for name in configs:
        curves, finals, steps = [], [], []
        for rows in per_seed.values():
            mine = [r for r in rows if r["config"] == name]
            if not mine:
                continue
            curves.append(at_minutes(mine, lookup))
            last = max(mine, key=lambda r: r["minutes"])
            finals.append(float(last["geo_ratio"]))
            steps.append(int(last["steps"]))
        out[name] = {
            "mean": [sum(c[i] for c in curves) / len(curves) for i in range(len(grid))],
            "low": [min(c[i] for c in curves) for i in range(len(grid))],
            "high": [max(c[i] for c in curves) for i in range(len(grid))],
            "finals": finals,
            "steps": steps,
        }
    return grid, out


def write_seed_outputs(
    per_seed: dict[int, list[dict[str, Any]]], minutes: float, out: Path, trace: str
) -> str:
    """``seeds.md`` and ``seeds.png`` in ``out``; returns the Markdown.

    :param per_seed: the rows of every seed
    :param minutes: the training budget of each run
    :param out: the output folder
    :param trace: the trace's name (for the figure's title)
    """
    grid, agg = aggregate_seeds(per_seed, minutes)
    shown = [t for t in grid if t > 0 and (t % 2 == 0 or t == grid[-1])]
    seeds = ", ".join(str(s) for s in per_seed)
    lines = [
        f"Validation geo-mean ratio vs EASY-SJBF of the latest checkpoint by each minute, "
        f"mean over seeds {seeds} (range in brackets):",
        "",
        "| configuration | "
        + " | ".join(f"{t:g} min" if t < grid[-1] else f"end ({t:g} min)" for t in shown)
        + " | final models | "
        "steps at the end |",
        "|---|" + "---:|" * (len(shown) + 2),
    ]
    for name, a in agg.items():
        cells = [
            f"{a['mean'][grid.index(t)]:.3f} [{a['low'][grid.index(t)]:.2f}, "
            f"{a['high'][grid.index(t)]:.2f}]"
            for t in shown
        ]
        finals = " / ".join(f"{f:.3f}" for f in a["finals"])
        steps = sum(a["steps"]) / len(a["steps"])
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {finals} | {steps:,.0f} |")
    text = "\n".join(lines) + "\n"
    (out / "seeds.md").write_text(text)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, a in agg.items():
        (line,) = ax.step(grid, a["mean"], where="post", label=name)
        ax.fill_between(grid, a["low"], a["high"], step="post", alpha=0.15, color=line.get_color())
    ax.axhline(1.0, color="grey", lw=0.8, ls="--", label="EASY-SJBF")
    ax.set_xlabel("wall-clock minutes of training")
    ax.set_ylabel("validation geo-mean ratio vs EASY-SJBF")
    ax.set_title(f"{trace}: mean of {len(per_seed)} seeds (band: range)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "seeds.png", dpi=120)
    plt.close(fig)
    return text


def run_seed(args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """Train (unless ``--evaluate-only``) and evaluate every configuration of one seed.

    :param args: the parsed options (``args.seed`` is the seed)
    :param out: this seed's output folder
    """
    out.mkdir(parents=True, exist_ok=True)
    done = out / "curve.csv"
    if done.exists() and not args.evaluate_only:
        import csv

        with done.open() as fh:
            rows = [dict(r) for r in csv.DictReader(fh)]
        if {r["config"] for r in rows} == set(CONFIGS):
            print(f"{out}: finished before, reusing {done}", flush=True)
            for r in rows:
                r["minutes"], r["steps"] = float(r["minutes"]), int(r["steps"])
                for key in ("avg_bsld", "reference_avg_bsld", "geo_ratio"):
                    r[key] = float(r[key])
            return rows
    t0 = time.time()
    if args.evaluate_only:
        runs = {name: out / "runs" / name for name in CONFIGS}
    else:
        runs = train_both(args, out)
    print(f"trained in {(time.time() - t0) / 60:.1f} min; evaluating checkpoints", flush=True)
    rows = [row for name, run in runs.items() for row in evaluate_checkpoints(name, run)]
    write_outputs(rows, out)
    print((out / "curve.md").read_text())
    finals = {name: [r for r in rows if r["config"] == name][-1] for name in CONFIGS}
    for name, r in finals.items():
        print(f"{name}: final geo-mean ratio {r['geo_ratio']:.3f} at {r['minutes']:.1f} min")
    print(f"outputs: {out}/curve.md, curve.csv, curve.png", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Train both configurations, evaluate their checkpoints, write the curve.

    :param argv: command-line arguments
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        name, rest = argv[1], argv[2:]
        return worker(name, rest[1:] if rest[:1] == ["--"] else rest)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="SDSC-SP2")
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget of each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=None,
        help="repeat for each seed (in --out/seed-<s>) and aggregate them (seeds.md, seeds.png)",
    )
    parser.add_argument("--eval-windows", type=int, default=10)
    parser.add_argument(
        "--checkpoint-every",
        default="40,80",
        help="updates between checkpoints of each run, in order (before,after,also...; "
        "about a minute each)",
    )
    parser.add_argument(
        "--before-options",
        default="--env-step python",
        help="train/ppo.py options of the 'before' run over --preset fast",
    )
    parser.add_argument(
        "--after-options",
        default="",
        help="extra train/ppo.py options of the 'after' run, e.g. '--batch-size 512'",
    )
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=OPTIONS",
        help="one more run at the same time, e.g. after-b512='--batch-size 512' (repeatable)",
    )
    parser.add_argument("--out", default="/tmp/learning_curve")
    parser.add_argument("--evaluate-only", action="store_true", help="reuse the runs in --out")
    args = parser.parse_args(argv)
    CONFIGS["before"] = args.before_options.split()
    CONFIGS["after"] = args.after_options.split()
    for item in args.also:
        name, _, options = item.partition("=")
        CONFIGS[name] = options.split()
    every = [int(x) for x in args.checkpoint_every.split(",")]
    every += every[-1:] * (len(CONFIGS) - len(every))
    args.checkpoint_every = dict(zip(CONFIGS, every, strict=False))
    out = Path(args.out)
    if not args.seeds:
        run_seed(args, out)
        return 0
    per_seed: dict[int, list[dict[str, Any]]] = {}
    for seed in args.seeds:
        args.seed = seed
        per_seed[seed] = run_seed(args, out / f"seed-{seed}")
    print(write_seed_outputs(per_seed, args.minutes, out, args.trace))
    print(f"outputs: {out}/seeds.md, seeds.png", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
