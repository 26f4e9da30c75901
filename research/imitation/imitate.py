"""Behaviour cloning / DAgger of LOOKAHEAD1-CLAIRVOYANT into the kernel policy.

The teacher (``LOOKAHEAD1-CLAIRVOYANT``, clairvoyant: it knows the actual run times and the
future arrivals of the window) labels the decision points of env episodes on the TRAIN
split; the student (the ``MaskablePPO`` kernel policy of ``train/ppo.py``) sees only the
env's online observation and is trained by cross-entropy on its masked logits. DAgger
iterations play episodes with a ``beta``-mixture of teacher and student, label every
state the mixture visits, aggregate and retrain. At the end, student, teacher and a
shipped agent are compared with EASY-SJBF on VALIDATION windows (never test)::

    python -m research.imitation --trace SDSC-SP2 --episodes 300 --dagger-iters 2 \\
        --eval-windows 30 --eval-length 512 --out runs/imitate-sdsc
    python -m research.imitation --trace SDSC-SP2 --features extended ...   # env options
    python -m research.imitation --trace synthetic --episodes 4 --no-eval   # offline smoke run
    python -m research.imitation --teacher prediction-order \\
        --env-kwargs '{"feature_predictor": "log-ridge:lam=10"}' ...   # a greedy start

Writes ``<out>/bc_model.zip`` (``MaskablePPO.load`` / ``hpcgym_agents.load_agent`` load it),
``<out>/imitate.json`` (datasets, collection costs, accuracies, wall times, validation
comparison) and, with ``--save-data``, ``<out>/data.npz``. See ``docs/research/findings.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.imitation.imitate`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.imitation.imitate", *sys.argv[1:]])

import numpy as np  # noqa: E402

from research.imitation.data import TEACHERS  # noqa: E402

__all__ = ["build_parser", "main", "run"]


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _key_values(text: str) -> dict[str, Any]:
    """``--teacher-options``: the LOOKAHEAD1-ONLINE scheduler's decider options (parsed and checked
    by the scheduler registry; the estimator and corrections are the env's)."""
    from hpcgym.sim import get_scheduler

    try:
        spec = get_scheduler(f"LOOKAHEAD1-ONLINE,{text}")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    base = get_scheduler("LOOKAHEAD1-ONLINE")
    if (spec.policy, spec.backfill, spec.estimate, spec.correction) != (
        base.policy,
        base.backfill,
        base.estimate,
        base.correction,
    ):
        raise argparse.ArgumentTypeError(
            f"{text!r}: the teacher decides on the env's own simulation; give its estimator "
            "and corrections in --env-kwargs (estimator, correction), not here"
        )
    return dict(spec.decider_kwargs)


def _unit(text: str) -> float:
    v = float(text)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``research/imitation/imitate.py``."""
    p = argparse.ArgumentParser(
        prog="python -m research.imitation", description=(__doc__ or "").split("\n\n")[0]
    )
    g = p.add_argument_group("env (training windows: the train split)")
    g.add_argument("--trace", default="SDSC-SP2", help="trace name, SWF path or 'synthetic'")
    g.add_argument("--length", type=int, default=256, help="jobs per training window")
    g.add_argument("--mode", default="guarded", choices=["guarded"], help="candidate mode")
    g.add_argument("--reference", default="EASY-SJBF", help="reference of the reward")
    g.add_argument("--max-queue", type=int, default=128, help="K, observation rows")
    g.add_argument(
        "--env-kwargs",
        type=_json_object,
        default={},
        help='more BackfillEnv arguments as JSON, e.g. \'{"features": "extended"}\'',
    )
    g.add_argument("--features", default=None, help="shortcut for --env-kwargs features")
    g = p.add_argument_group("teacher and data")
    g.add_argument(
        "--teacher",
        default="lookahead-oracle",
        choices=list(TEACHERS),
        help="lookahead-oracle (clairvoyant), lookahead (online, Monte Carlo futures from "
        "the past; --teacher-options) or prediction-order (shortest feature prediction "
        "first, never STOP; needs a feature_predictor in --env-kwargs)",
    )
    g.add_argument(
        "--teacher-options",
        type=_key_values,
        default={},
        metavar="KEY=VALUE,...",
        help="options of the lookahead teacher, as for the LOOKAHEAD1-ONLINE scheduler (e.g. "
        "samples=8,match=user-request; docs/research/findings.md)",
    )
    g.add_argument("--episodes", type=int, default=200, help="teacher-driven episodes")
    g.add_argument("--dagger-iters", type=int, default=0, help="DAgger iterations after BC")
    g.add_argument(
        "--dagger-episodes", type=int, default=None, help="episodes per DAgger iteration"
    )
    g.add_argument("--beta", type=_unit, default=0.5, help="teacher share of iteration i: beta**i")
    g.add_argument("--teacher-k", type=int, default=16, help="oracle candidates per decision")
    g.add_argument("--horizon", default="window", help="oracle rollout horizon")
    g.add_argument("--save-data", action="store_true", help="write <out>/data.npz")
    g = p.add_argument_group("student")
    g.add_argument("--epochs", type=int, default=30, help="BC epochs (each fit)")
    g.add_argument("--batch-size", type=int, default=256, help="BC minibatch")
    g.add_argument("--lr", type=float, default=1e-3, help="BC learning rate (Adam)")
    g.add_argument("--held-out", type=float, default=0.15, help="share of episodes held out")
    g.add_argument("--no-value", action="store_true", help="do not regress the value head")
    g.add_argument("--fit-seconds", type=float, default=None, help="time limit of each fit")
    g.add_argument(
        "--kernel-arch", type=int, nargs="+", default=[32, 16, 8], help="kernel MLP widths"
    )
    g.add_argument("--stop-score", default="learned", help="KernelPolicy stop_score")
    g = p.add_argument_group("validation (never test)")
    g.add_argument("--eval-windows", type=int, default=30)
    g.add_argument("--eval-length", type=int, default=512)
    g.add_argument("--eval-seed", type=int, default=7)
    g.add_argument(
        "--compare",
        nargs="*",
        default=None,
        help="more agents (shipped names or .zip files); default: the shipped "
        "<trace>-fcfs-guarded agent if there is one",
    )
    g.add_argument("--no-teacher-eval", action="store_true", help="do not run the teacher")
    g.add_argument("--no-eval", action="store_true", help="skip the validation comparison")
    p.add_argument("--seed", type=int, default=0, help="seed of everything")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--out", default="runs/imitate", help="output folder")
    return p


def _shipped_name(trace: str) -> str | None:
    from hpcgym_agents.loading import pretrained_agents

    name = f"{trace.lower().replace('lublin-', 'lublin')}-fcfs-guarded"
    return name if name in pretrained_agents() else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Collect, train, save and measure (the body of :func:`main`).

    :param args: parsed arguments of :func:`build_parser`
    :return: the contents of ``imitate.json``
    """
    from dataclasses import fields

    import torch as th

    from hpcgym.envs.backfill_env import BackfillEnv
    from research.imitation.bc import accuracy, fit, held_out_split, make_student
    from research.imitation.data import Dataset, collect
    from train.build import env_kwargs
    from train.config import TrainConfig

    th.set_num_threads(int(args.torch_threads))
    t_run = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    extra = dict(args.env_kwargs)
    if args.features is not None:
        extra["features"] = args.features
    # plain sb3-contrib MaskablePPO (the student is trained here, not by PPO's update)
    algo = {"algo": "sb3"} if "algo" in {f.name for f in fields(TrainConfig)} else {}
    cfg = TrainConfig.create(
        "fast",
        **algo,
        trace=args.trace,
        length=args.length,
        mode=args.mode,
        reference=args.reference,
        max_queue=args.max_queue,
        n_envs=1,
        vec_env="dummy",
        n_steps=2048,
        seed=args.seed,
        kernel_arch=tuple(args.kernel_arch),
        stop_score=args.stop_score,
    )
    kw = {**env_kwargs(cfg, "train", cfg.length), **extra}
    env = BackfillEnv(**kw)
    teacher: dict[str, Any] = {}
    if args.teacher == "lookahead-oracle":
        teacher = {"k": args.teacher_k, "horizon": args.horizon}
    elif args.teacher == "lookahead":
        teacher = {"k": args.teacher_k, **args.teacher_options}
    model = make_student(cfg, extra)
    report: dict[str, Any] = {
        "args": dict(vars(args)),
        "env_kwargs": {k: v for k, v in kw.items() if k != "trace"} | {"trace": args.trace},
        "teacher": {"kind": args.teacher, **teacher},
        "iterations": [],
    }

    parts: list[Dataset] = []
    held_parts: list[np.ndarray] = []
    episode0 = 0
    for it in range(int(args.dagger_iters) + 1):
        beta = 1.0 if it == 0 else float(args.beta) ** it
        n_ep = args.episodes if it == 0 or args.dagger_episodes is None else args.dagger_episodes
        data, stats = collect(
            env,
            n_ep,
            rng,
            teacher=teacher,
            student=None if beta >= 1.0 else model,
            beta=beta,
            first_episode=episode0,
            kind=args.teacher,
        )
        episode0 += n_ep
        parts.append(data)
        # held-out windows are chosen among the new episodes only: a sample never moves
        # from the training to the held-out side between iterations
        held_parts.append(held_out_split(data, args.held_out, rng))
        full = Dataset.concat(parts)
        held_mask = np.concatenate(held_parts)
        train_d, held_d = full.subset(~held_mask), full.subset(held_mask)
        res = fit(
            model,
            train_d,
            held_d,
            rng,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            value=not args.no_value,
            seconds=args.fit_seconds,
        )
        entry = {
            "iteration": it,
            "beta": beta,
            "collect": stats.to_dict(),
            "new_data": data.summary(),
            "dataset": full.summary(),
            "fit": {
                "epochs": res.epochs,
                "best_epoch": res.best_epoch,
                "seconds": res.seconds,
                "initial_loss": res.initial_loss,
                "history": res.history,
            },
            "train": accuracy(model.policy, train_d),
            "held_out": accuracy(model.policy, held_d),
        }
        report["iterations"].append(entry)
        print(_iteration_line(entry), flush=True)

    model_path = out / "bc_model.zip"
    model.save(model_path)
    report["model"] = str(model_path)
    if args.save_data:
        Dataset.concat(parts).save(out / "data.npz")
    if not args.no_eval:
        report["validation"] = _validate(args, cfg, extra, model)
    report["seconds"] = time.perf_counter() - t_run
    (out / "imitate.json").write_text(json.dumps(report, indent=2, default=_jsonable))
    return report


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _iteration_line(e: dict[str, Any]) -> str:
    c, tr, ho = e["collect"], e["train"], e["held_out"]
    return (
        f"iter {e['iteration']} beta={e['beta']:.2f}: {c['samples']} new samples "
        f"({c['decisions']} decisions, {c['outside']} outside K, "
        f"oracle {c['oracle_ms_per_decision']:.2f} ms/decision, collect {c['seconds']:.1f} s); "
        f"dataset {e['dataset']['samples']}; fit {e['fit']['seconds']:.1f} s; accuracy train "
        f"{tr.get('accuracy', float('nan')):.3f} held-out {ho.get('accuracy', float('nan')):.3f} "
        f"(copy-SJBF {ho.get('sjbf_agreement', float('nan')):.3f}, not-SJBF labels "
        f"{ho.get('accuracy_not_sjbf', float('nan')):.3f})"
    )


def _validate(
    args: argparse.Namespace, cfg: Any, extra: dict[str, Any], model: Any
) -> dict[str, Any]:
    from hpcgym_agents.loading import load_agent
    from research.imitation.measure import compare_on_validation, format_table
    from train.build import env_kwargs

    names = args.compare
    if names is None:
        shipped = _shipped_name(str(args.trace))
        names = [shipped] if shipped else []
    agents: dict[str, tuple[Any, dict[str, Any]]] = {"student (BC/DAgger)": (model, extra)}
    for name in names:
        agents[name] = (load_agent(name), {})
    base = env_kwargs(cfg, "validation", args.eval_length)
    res = compare_on_validation(
        base,
        agents,
        windows=args.eval_windows,
        length=args.eval_length,
        seed=args.eval_seed,
        teacher=None
        if args.no_teacher_eval or args.teacher != "lookahead-oracle"
        else f"LOOKAHEAD1-CLAIRVOYANT,k={args.teacher_k}",
    )
    table = format_table(res)
    print(table, flush=True)
    res["table"] = table
    return res


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the command line; returns the report written to ``imitate.json``.

    :param argv: arguments (default ``sys.argv[1:]``)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("episodes", "length", "max_queue", "epochs", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.teacher_options and args.teacher != "lookahead":
        parser.error("--teacher-options are options of --teacher lookahead")
    if args.dagger_iters < 0:
        parser.error("--dagger-iters must be >= 0")
    if not 0.0 <= args.held_out < 1.0:
        parser.error("--held-out must be in [0, 1)")
    return run(args)


if __name__ == "__main__":
    main()
