"""Ray Tune sweeps of train/ppo.py over traces x seeds x hyperparameters.

Usage (after ``pip install -e ".[train,ray]"``, from a checkout)::

    python train/sweep.py --traces synthetic SDSC-SP2 --seeds 0 1 2 \\
        --grid learning-rate=1e-4,3e-4 --grid n-epochs=10,80 -- --preset fast
    python train/sweep.py --name my-sweep --resume        # continue an interrupted sweep
    python train/sweep.py --address auto ...              # on a running Ray cluster
    tensorboard --logdir runs/sweeps/<name>

Every trial is one run of the project's trainer (:func:`train.session.start`, the same
code as ``train/ppo.py``; options after ``--`` are train/ppo.py's) in its Tune trial folder,
then the trained agent and the reference scheduler on the **validation** windows: the
results table has the paired geometric-mean ratio of AVEbsld vs the reference with its 95%
bootstrap interval (:mod:`hpcgym.evaluation.statistics`). See docs/scaling.md.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import itertools
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m train.sweep`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "train.sweep", *sys.argv[1:]])

from train.cli import OneLineParser  # noqa: E402
from train.config import PRESETS, ConfigError, TrainConfig  # noqa: E402
from train.options import Option  # noqa: E402

__all__ = ["build_parser", "main", "run_trial", "results_table"]

#: options a sweep sets itself (not in --grid, not after --)
SWEEP_SET = ("trace", "seed", "logdir", "run_name", "progress")
#: the train/ppo.py run inside each trial folder
RUN_NAME = "train"
RESULT_COLUMNS = (
    "trace",
    "seed",
    "params",
    "status",
    "timesteps",
    "agent_avg_bsld",
    "reference_avg_bsld",
    "geo_ratio",
    "ci_low",
    "ci_high",
    "wins",
    "windows",
    "wall_time_s",
    "trial_dir",
)

DESCRIPTION = """\
Ray Tune sweep of train/ppo.py over traces x seeds x hyperparameters (a grid). Each trial
trains one run of the project's trainer in its Tune trial folder, then plays the trained
agent and the reference scheduler on the validation windows of its trace; the table ranks
the trials by the paired geometric-mean ratio of AVEbsld vs the reference (< 1: better)
with its 95% bootstrap interval.

Ray: an embedded local Ray on this machine by default (no cluster needed); --address joins
a running cluster (ray start --head). pip install -e ".[train,ray]".
"""

EPILOG = """\
Options after -- go to every trial's train/ppo.py (e.g. -- --preset fast --total-steps
200000). --grid NAME=V1,V2 takes any of its options, with dashes or underscores
(learning-rate, n-epochs, clip-range, stop-init, ...); separate values that hold commas
with ';' (kernel-arch='32,16,8;64,32').

Outputs: <storage>/<name>/ holds Tune's state and TensorBoard events, one folder per trial
with the trainer's run in <trial>/train/, and results.md / results.csv / results.json
(tensorboard --logdir <storage>/<name>). --resume continues an interrupted sweep (Tune's
restore): unfinished trials continue from their trainer checkpoint, errored ones rerun.
On a cluster, --storage must be a folder every node sees (shared file system).
"""


# --------------------------------------------------------------------------- parsing
def _option(name: str) -> tuple[str, Option]:
    """The TrainConfig field and its command-line option for ``name`` (dashes allowed)."""
    key = name.strip().lstrip("-").replace("-", "_")
    for f in dataclasses.fields(TrainConfig):
        opt = f.metadata.get("cli")
        if opt is not None and f.name == key:
            if key in SWEEP_SET:
                raise ValueError(f"--grid {name}: the sweep sets {key} itself (--traces/--seeds)")
            return key, opt
    raise ValueError(f"--grid {name}: not an option of train/ppo.py (see its --help)")


def parse_grid(spec: str) -> tuple[str, list[Any]]:
    """``NAME=V1,V2,...`` -> (TrainConfig field, parsed values); ``;`` separates values
    that contain commas (``kernel-arch=32,16;64,32``).

    :param spec: the ``--grid`` argument
    :raises ValueError: no ``=``, an unknown option, a value its parser refuses
    """
    if "=" not in spec:
        raise ValueError(f"--grid {spec!r}: expected NAME=V1,V2,...")
    name, _, text = spec.partition("=")
    key, opt = _option(name)
    raw = text.split(";") if ";" in text else text.split(",")
    values: list[Any] = []
    for item in raw:
        try:
            value = opt.parse(item.strip()) if opt.parse is not None else item.strip()
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise ValueError(f"--grid {name}: bad value {item!r} ({exc})") from None
        values.append(list(value) if isinstance(value, tuple) else value)
    if not values or values == [""]:
        raise ValueError(f"--grid {spec!r}: no values")
    return key, values


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``train/sweep.py`` (one-line errors, exit status 2)."""
    from hpcgym.argtypes import positive_int

    p = OneLineParser(
        prog="python train/sweep.py",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("the grid (every combination is one trial)")
    g.add_argument("--traces", nargs="+", default=["synthetic"], help="traces (synthetic)")
    g.add_argument("--seeds", nargs="+", type=int, default=[0], help="training seeds (0)")
    g.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="a train/ppo.py option and its values (repeatable)",
    )
    v = p.add_argument_group("validation (the results table)")
    v.add_argument(
        "--split",
        default="validation",
        help="split of the windows the trials are compared on (validation: the last 10%% "
        "of the training range; test only for a final report)",
    )
    v.add_argument("--val-windows", type=positive_int, default=10, help="validation windows (10)")
    v.add_argument("--val-length", type=positive_int, default=1024, help="jobs per window (1024)")
    v.add_argument("--reference", default="EASY-SJBF", help="scheduler of the ratio (EASY-SJBF)")
    v.add_argument(
        "--model",
        choices=("final", "best"),
        default="final",
        help="model validated: final (default) or the trainer's best, which it picked on "
        "validation windows too (an optimistic ratio)",
    )
    r = p.add_argument_group("Ray")
    r.add_argument(
        "--address",
        default=None,
        help="Ray cluster to join (HOST:PORT of 'ray start --head', 'auto'); default: an "
        "embedded local Ray on this machine",
    )
    r.add_argument(
        "--cpus-per-trial",
        type=positive_int,
        default=1,
        help="CPUs per trial (1); also the trial's --n-envs unless the options after -- or "
        "their --preset set it",
    )
    r.add_argument(
        "--max-concurrent", type=positive_int, default=None, help="trials at once (all fit)"
    )
    r.add_argument(
        "--num-cpus", type=positive_int, default=None, help="CPUs of the embedded Ray (all)"
    )
    o = p.add_argument_group("outputs and resume")
    o.add_argument("--name", default=None, help="experiment name (sweep_<date-time>)")
    o.add_argument("--storage", default="runs/sweeps", help="parent folder (runs/sweeps)")
    o.add_argument("--resume", action="store_true", help="continue the sweep --name")
    o.add_argument("--json", action="store_true", help="print results.json, not the table")
    return p


def _check_split(split: str) -> str | None:
    """Why ``split`` cannot be used (``None``: it can)."""
    from hpcgym.workload import SPLITS

    if split in SPLITS:
        return None
    return f"--split {split}: expected one of {', '.join(SPLITS)}"


def _base_options(args: argparse.Namespace, train_argv: list[str]) -> dict[str, Any]:
    """The trainer options every trial shares (after ``--``), validated."""
    from train.cli import parse_args

    parsed = parse_args(train_argv)
    if parsed.resume is not None:
        raise ConfigError("--resume after --: resume a sweep with train/sweep.py --resume")
    bad = sorted(set(parsed.options) & set(SWEEP_SET))
    if bad:
        raise ConfigError(f"after --: the sweep sets {', '.join(bad)} itself")
    options = dict(parsed.options)
    # --cpus-per-trial is the trial's --n-envs unless the options or their preset set it
    # (``--preset fast`` steps its 64 envs as one batch in one process)
    preset = PRESETS.get(options.get("preset", "paper"), {})
    if "n_envs" not in options and "n_envs" not in preset:
        options["n_envs"] = args.cpus_per_trial
    return options


def _param_space(args: argparse.Namespace, base: dict[str, Any]) -> dict[str, Any]:
    """Tune's parameter space: a grid over traces, seeds and ``--grid``; every combination
    is checked by building its :class:`TrainConfig` (no trace is loaded)."""
    from ray import tune

    grid = dict(parse_grid(s) for s in args.grid)
    for combo in itertools.product(*grid.values()):
        hp = dict(zip(grid, combo, strict=True))
        TrainConfig.create(**{**base, **hp, "trace": args.traces[0], "seed": args.seeds[0]})
    return {
        "trace": tune.grid_search(list(args.traces)),
        "seed": tune.grid_search(list(args.seeds)),
        "hp": {k: tune.grid_search(v) for k, v in grid.items()},
        "base": base,
        "validation": {
            "split": args.split,
            "windows": args.val_windows,
            "length": args.val_length,
            "reference": args.reference,
            "model": args.model,
        },
    }


# --------------------------------------------------------------------------- one trial
def run_trial(config: dict[str, Any]) -> None:
    """One Tune trial: train (or continue) the run ``<trial dir>/train``, validate its
    agent and report the metrics to Tune.

    :param config: ``trace``, ``seed``, ``hp`` (grid values), ``base`` (shared trainer
        options), ``validation`` (``split, windows, length, reference, model``)
    """
    from ray import tune

    from train import session
    from train.rundir import RunDir

    logdir = _trial_folder(tune.get_context())
    run = RunDir(logdir / RUN_NAME)
    options = {
        **config["base"],
        **{k: tuple(v) if isinstance(v, list) else v for k, v in config["hp"].items()},
        "trace": config["trace"],
        "seed": int(config["seed"]),
        "logdir": str(logdir),
        "run_name": RUN_NAME,
        "progress": False,
    }
    t0 = time.time()
    cfg = TrainConfig.create(**options)
    if run.holds_run() and run.latest_checkpoint() is not None:  # a restored trial
        summary = session.resume(str(run.path), {})
    else:
        summary = session.start(cfg)
    metrics = validate(run.path, cfg, **config["validation"])
    metrics.update(timesteps=int(summary["timesteps"]), wall_time_s=time.time() - t0)
    tune.report(metrics)


def _trial_folder(ctx: Any) -> Path:
    """The trial's folder in the sweep's storage (written directly, so an interrupted
    sweep resumes from the trainer's checkpoints); Tune's staging folder when the storage
    is not a file system path (e.g. s3://, synced by Tune)."""
    storage = ctx.get_storage()
    fs = getattr(storage, "storage_filesystem", None)
    if storage is not None and getattr(fs, "type_name", "") == "local":
        return Path(storage.trial_fs_path)
    return Path(ctx.get_trial_dir())


def validate(
    run_dir: Path,
    cfg: TrainConfig,
    *,
    split: str,
    windows: int,
    length: int,
    reference: str,
    model: str = "final",
) -> dict[str, Any]:
    """The run's agent and ``reference`` on evenly spaced windows of ``split``.

    :param run_dir: the trainer's run folder (its config.json configures the agent's env)
    :param cfg: the run's options (trace, lenient, train_fraction, validation_fraction)
    :param split: the split of the windows (validation)
    :param windows: number of windows
    :param length: jobs per window (cut to the split's size)
    :param reference: the scheduler of the paired ratio
    :param model: ``final`` or ``best`` (the trainer's best model)
    :return: ``agent_avg_bsld, reference_avg_bsld, geo_ratio, ci_low, ci_high, wins,
        windows``
    """
    from hpcgym.evaluation import build_methods, evaluate, select_windows
    from hpcgym.workload import load
    from hpcgym_agents import load_agent

    path = run_dir / f"{model}_model.zip"
    if not path.is_file():
        path = run_dir / "final_model.zip"
    wl = load(cfg.trace, lenient=True) if cfg.lenient else load(cfg.trace)
    ws = select_windows(
        len(wl),
        length,
        windows,
        split,
        None,
        cfg.train_fraction,
        validation_fraction=cfg.validation_fraction,
    )
    methods, failures = build_methods([reference], [f"agent={path}"])
    if failures:
        kind, spec, exc = failures[0]
        raise RuntimeError(f"{kind} {spec}: {exc}")
    res = evaluate(
        wl,
        methods,
        ws,
        jobs=1,
        progress=False,
        reference=reference,
        agent_loader=load_agent,
        ratio_reference=reference,
    )
    rows = {r["method"]: r for r in res.summary()}
    agent = rows["agent"]
    return {
        "agent_avg_bsld": agent["mean_avg_bsld"],
        "reference_avg_bsld": rows[reference]["mean_avg_bsld"],
        "geo_ratio": agent["geo_ratio"],
        "ci_low": agent["ci_low"],
        "ci_high": agent["ci_high"],
        "wins": agent["wins"],
        "windows": len(ws.starts),
    }


# --------------------------------------------------------------------------- results
def _rows(grid: Any) -> list[dict[str, Any]]:
    """One row per trial of a Tune ``ResultGrid``."""
    rows = []
    for res in grid:
        cfg = res.config or {}
        m = res.metrics or {}
        row: dict[str, Any] = {
            "trace": cfg.get("trace"),
            "seed": cfg.get("seed"),
            "params": ", ".join(f"{k}={v}" for k, v in sorted(cfg.get("hp", {}).items())),
            "status": "error" if res.error else "ok" if "geo_ratio" in m else "unfinished",
            "trial_dir": str(res.path),
        }
        for key in RESULT_COLUMNS:
            if key not in row:
                row[key] = m.get(key)
        if res.error:
            row["error"] = str(res.error).strip().splitlines()[-1][:300]
        rows.append(row)
    return sorted(rows, key=_sort_key)


def _sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    ratio = row.get("geo_ratio")
    bad = ratio is None or (isinstance(ratio, float) and math.isnan(ratio))
    return (str(row["trace"]), bad, ratio if not bad else 0.0, str(row["params"]), row["seed"])


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def results_table(rows: Sequence[dict[str, Any]], reference: str) -> str:
    """Markdown table of the trials, best ratio first per trace.

    :param rows: the trials' rows (:data:`RESULT_COLUMNS`)
    :param reference: the reference scheduler's name (column titles)
    """
    head = (
        f"| trace | seed | params | steps | agent AVEbsld | {reference} | geo ratio "
        "| 95% CI | wins |\n|---|---:|---|---:|---:|---:|---:|---|---:|"
    )
    lines = [head]
    for r in rows:
        if r["status"] == "unfinished":
            lines.append(f"| {r['trace']} | {r['seed']} | {r['params']} | unfinished |")
            continue
        if r["status"] != "ok":
            lines.append(
                f"| {r['trace']} | {r['seed']} | {r['params']} | error: {r.get('error', '')} |"
            )
            continue
        ci = f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
        lines.append(
            f"| {r['trace']} | {r['seed']} | {r['params']} | {r['timesteps']} "
            f"| {_fmt(r['agent_avg_bsld'], 2)} | {_fmt(r['reference_avg_bsld'], 2)} "
            f"| {_fmt(r['geo_ratio'])} | {ci} | {r['wins']}/{r['windows']} |"
        )
    return "\n".join(lines)


def write_results(exp_dir: Path, rows: Sequence[dict[str, Any]], reference: str) -> list[Path]:
    """``results.md``, ``results.csv`` and ``results.json`` in the experiment folder.

    :param exp_dir: the Tune experiment folder
    :param rows: the trials' rows
    :param reference: the reference scheduler
    """
    exp_dir.mkdir(parents=True, exist_ok=True)
    md = exp_dir / "results.md"
    md.write_text(
        f"# Sweep {exp_dir.name}: ratio vs {reference} on the validation windows\n\n"
        + results_table(rows, reference)
        + "\n"
    )
    out_csv = exp_dir / "results.csv"
    with out_csv.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*RESULT_COLUMNS, "error"], extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    js = exp_dir / "results.json"
    js.write_text(json.dumps({"reference": reference, "trials": list(rows)}, indent=2))
    return [md, out_csv, js]


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run (or resume) a sweep; returns the results rows (also written as files).

    :param argv: command-line arguments (default ``sys.argv[1:]``); options after ``--``
        go to every trial's train/ppo.py
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    own, train_argv = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = build_parser()
    args = parser.parse_args(own)
    if args.resume and (args.name is None or train_argv or args.grid):
        parser.error(
            "--resume continues the sweep --name as it was defined: give --name (and "
            "--storage), no --grid and no options after --"
        )
    problem = None if args.resume else _check_split(args.split)
    if problem:
        parser.error(problem)
    from hpcgym.evaluation.ray_backend import RAY_INSTALL_HINT, RayUnavailable, require_ray

    try:
        require_ray()
        from ray import tune
    except RayUnavailable as exc:
        parser.error(str(exc))
    except ImportError as exc:
        parser.error(f"Ray Tune is not available ({exc}): {RAY_INSTALL_HINT}")
    try:
        base = _base_options(args, train_argv)
        space = _param_space(args, base)
    except (ConfigError, ValueError) as exc:
        parser.error(str(exc))
    storage = Path(args.storage).expanduser().resolve()
    name = args.name or time.strftime("sweep_%Y%m%d-%H%M%S")
    exp_dir = storage / name
    if args.resume and not tune.Tuner.can_restore(str(exp_dir)):
        parser.error(f"--resume: no sweep to continue in {exp_dir} (give its --name/--storage)")
    if not args.resume and exp_dir.exists():
        parser.error(f"{exp_dir} exists: continue it with --resume or choose another --name")
    _start_ray(args, parser)
    trainable = tune.with_resources(run_trial, {"cpu": args.cpus_per_trial})
    if args.resume:
        tuner = tune.Tuner.restore(str(exp_dir), trainable, resume_errored=True)
    else:
        tuner = tune.Tuner(
            trainable,
            param_space=space,
            tune_config=tune.TuneConfig(max_concurrent_trials=args.max_concurrent),
            run_config=tune.RunConfig(name=name, storage_path=str(storage), verbose=1),
        )
    grid = tuner.fit()
    rows = _rows(grid)
    reference = next(
        (r.config["validation"]["reference"] for r in grid if r.config), args.reference
    )
    paths = write_results(exp_dir, rows, reference)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(results_table(rows, reference))
        print(f"wrote {', '.join(p.name for p in paths)} to {exp_dir}/")
        print(f"TensorBoard: tensorboard --logdir {exp_dir}")
    if any(r["status"] != "ok" for r in rows):
        print(
            f"unfinished or failed trials: continue with python train/sweep.py --resume "
            f"--name {name} --storage {args.storage}",
            file=sys.stderr,
        )
    return rows


def _start_ray(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Embedded local Ray or the cluster of ``--address``; the ``train`` folder is shipped
    to the workers (``py_modules``): the nodes need only ``pip install hpcgym[train]``."""
    import ray

    if ray.is_initialized():
        return
    train_dir = str(Path(__file__).resolve().parent)
    env = {"py_modules": [train_dir], "excludes": ["__pycache__"]}
    kw: dict[str, Any] = {"runtime_env": env, "ignore_reinit_error": True}
    try:
        if args.address is None:
            ray.init(num_cpus=args.num_cpus, include_dashboard=False, **kw)
        else:
            ray.init(address=args.address, **kw)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        parser.error(f"--address {args.address}: cannot start or join Ray ({exc})")


if __name__ == "__main__":
    main()
