"""Compare agents and schedulers on exactly the same windows of a trace.

    python eval/compare.py --trace SDSC-SP2 --agents easy agents/pretrained/X.zip \\
        --schedulers EASY EASY-AR EASY-SJBF SAF EASY++ ELOSS SJF+EASY WFP3+EASY F1+EASY \\
        --windows 30 --length 1024 --split test --seed 1 --out results/sdsc

Every method runs on the same windows (replayable with ``--starts``); AVEbsld and mean
wait per window and on average go to ``--out`` as ``table.md``, ``summary.csv``,
``windows.csv``, ``results.json``, ``per_job.npz`` and PNG plots (box plot over windows,
per-job slowdown CDF). Agents are played through the env with deterministic ``predict``
and action masks. See docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.compare`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.compare", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import UsageError, check_schedulers, check_trace_name  # noqa: E402

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``eval/compare.py``."""
    from hpcgym.envs.backfill_env import MODES
    from hpcgym.evaluation import AGENT_HEURISTICS, DEFAULT_SCHEDULERS
    from hpcgym.sim.engine import POLICIES
    from hpcgym.tasks import list_tasks

    p = C.make_parser(
        "python eval/compare.py",
        (__doc__ or "").split("\n\n")[0],
        epilog=(
            "Agents: heuristics "
            + ", ".join(AGENT_HEURISTICS)
            + "; a model .zip of any Stable-Baselines3 / sb3-contrib algorithm and policy "
            "class (its model card <stem>.json next to it, or the config.json of the "
            "train/ppo.py run holding it, configures the env; else its spaces say its task), "
            "a card .json, a run folder, or a card name in --agents-dir. Each agent plays the "
            "env of its task (Schedule-v0 or Backfill-v0; --task states it). Prefix LABEL= to "
            "name a method. Schedulers: "
            "any hpcgym scheduler name (EASY, EASY-AR, EASY-SJBF, SAF, EASY++, ELOSS, "
            "CONSERVATIVE, NONE...), POLICY+NAME (SJF+EASY) or key=value specs."
        ),
    )
    p.add_argument(
        "--trace", default=None, help="registered name, SWF path, or 'synthetic' (default)"
    )
    C.add_lenient_arg(p)
    p.add_argument(
        "--schedulers",
        nargs="*",
        default=None,
        help="engine schedulers (default without --agents: " + " ".join(DEFAULT_SCHEDULERS) + ")",
    )
    p.add_argument("--agents", nargs="*", default=[], help="agents (see below)")
    p.add_argument(
        "--agents-dir", default=None, help="folder of shipped agents (agents/pretrained)"
    )
    g = p.add_argument_group("env of heuristic agents and of models without a card")
    g.add_argument(
        "--task",
        default=None,
        choices=list_tasks(),
        help="the env the agents play (a task of hpcgym.tasks): schedule (hpcgym/Schedule-v0), "
        "backfill (hpcgym/Backfill-v0)...; default: each agent's own (its card, its model's "
        "spaces); checked against them",
    )
    g.add_argument(
        "--policy",
        default=None,
        type=str.upper,
        choices=sorted(POLICIES),
        help="Backfill-v0's queue policy (FCFS); Schedule-v0's queue order (the env's default)",
    )
    g.add_argument("--mode", default=None, choices=sorted(MODES), help="(guarded)")
    g.add_argument("--max-queue", type=C.positive_int, default=None, help="K (128)")
    g.add_argument(
        "--scales",
        default="target",
        choices=("target", "card"),
        help="observation scales: of the evaluated trace (target, default, as the paper) or "
        "of the training trace (card)",
    )
    g.add_argument("--agent-seed", type=int, default=0, help="seed of the random agent (0)")
    C.add_window_args(p)
    C.add_run_args(p)
    C.add_backend_args(p)
    p.add_argument("--out", default=None, help="output folder (default results/compare/<trace>)")
    C.add_reference_arg(p)
    p.add_argument(
        "--vs", default=None, help="method of the 'vs' column (EASY when it is evaluated)"
    )
    p.add_argument(
        "--skip-unavailable",
        action="store_true",
        help="skip unknown schedulers / failing methods with a warning instead of an error",
    )
    p.add_argument("--json", action="store_true", help="print results.json instead of the table")
    p.add_argument(
        "--tb-agent",
        default=None,
        metavar="METHOD",
        help="write this method's TensorBoard scalars into --tb-dir itself (the training "
        "run's folder; the other methods get runs of their own inside it); default: the "
        "model whose file lies inside --tb-dir",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    return C.run(parser, lambda: _run(parser, args))


def _methods(args: argparse.Namespace) -> list[Any]:
    """The methods of ``--schedulers`` / ``--agents`` (unknown ones refused or skipped).

    :param args: the parsed arguments
    :raises UsageError: unknown names, options that would be ignored
    """
    from hpcgym.evaluation import DEFAULT_SCHEDULERS, build_methods

    schedulers = args.schedulers
    if schedulers is None:
        schedulers = [] if args.agents else list(DEFAULT_SCHEDULERS)
    if not schedulers and not args.agents:
        raise UsageError("nothing to compare: give --schedulers and/or --agents")
    env_flags = {
        "--task": args.task,
        "--policy": args.policy,
        "--mode": args.mode,
        "--max-queue": args.max_queue,
    }
    given = [f"{k} {v}" for k, v in env_flags.items() if v is not None]
    if given and not args.agents:
        raise UsageError(
            f"{', '.join(given)} configure the env of agents, and no --agents are given "
            "(engine schedulers take their policy from their name, e.g. SJF+EASY)"
        )
    if args.reference is not None:
        check_schedulers([args.reference], "--reference")
    methods, failures = build_methods(
        schedulers,
        args.agents,
        task=args.task,
        policy=args.policy,
        mode=args.mode or "guarded",
        max_queue=args.max_queue,
        agents_dir=C.agents_dir(args.agents_dir),
        scales=args.scales,
        agent_seed=args.agent_seed,
    )
    for kind, spec, exc in failures:
        if not args.skip_unavailable:
            hint = " (or pass --skip-unavailable)" if kind == "scheduler" else ""
            raise UsageError(f"--{kind}s {spec}: {exc}{hint}")
        print(f"warning: {kind} {spec!r} skipped: {exc}", file=sys.stderr)
    if not methods:
        raise UsageError("no method left to evaluate")
    labels = [m.label for m in methods]
    if args.tb_agent is not None:
        if args.tb_dir is None:
            raise UsageError("--tb-agent names a method of the --tb-dir scalars: give --tb-dir")
        if args.tb_agent not in labels:
            raise UsageError(
                f"--tb-agent {args.tb_agent}: not an evaluated method; methods: "
                + ", ".join(labels)
            )
    if args.vs is not None and args.vs.lower() != "none" and args.vs not in labels:
        raise UsageError(f"--vs {args.vs}: not an evaluated method; methods: {', '.join(labels)}")
    return methods


def _tb_rename(args: argparse.Namespace, result: Any) -> dict[str, str]:
    """The method written as ``agent`` in the TensorBoard tags (training's label): the
    ``--tb-agent`` method, else the one model whose file lies inside ``--tb-dir`` (the run
    it was trained in), else none.

    :param args: the parsed arguments
    :param result: the evaluation
    """
    from hpcgym.evaluation.tensorboard import AGENT_LABEL

    if args.tb_agent is not None:
        return {args.tb_agent: AGENT_LABEL}
    tb = Path(args.tb_dir).resolve()
    own = [
        m.label for m in result.methods if m.is_model and Path(m.spec).resolve().is_relative_to(tb)
    ]
    return {own[0]: AGENT_LABEL} if len(own) == 1 else {}


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The comparison itself (user errors raise, :func:`main` reports them).

    :param parser: the parser (``--backend`` errors)
    :param args: the parsed arguments
    """
    from hpcgym.evaluation import (
        MethodUnavailable,
        evaluate,
        markdown_table,
        select_windows,
        write_outputs,
        write_tensorboard,
    )
    from hpcgym.workload import load

    C.resolve_windows(args)
    check_trace_name(args.trace)
    methods = _methods(args)
    wl = load(args.trace, lenient=args.lenient)
    windows = select_windows(
        len(wl),
        args.length,
        args.windows,
        args.split,
        args.seed,
        args.train_fraction,
        starts=args.starts,
        full_trace=args.full_trace,
        prefix=args.prefix,
    )
    out = Path(args.out) if args.out else Path("results") / "compare" / wl.name
    C.check_outputs(out=str(out), tb_dir=args.tb_dir)
    C.start_backend(args, parser)
    t0 = time.perf_counter()
    vs = "EASY" if args.vs is None else (None if args.vs.lower() == "none" else args.vs)
    try:
        result = evaluate(
            wl,
            methods,
            windows,
            jobs=args.jobs,
            progress=args.progress,
            skip_unavailable=args.skip_unavailable,
            reference=vs,
            agent_loader=C.agent_loader(),
            ratio_reference=args.reference,
            backend=args.backend,
        )
    except (MethodUnavailable, FileNotFoundError, ValueError) as exc:
        raise UsageError(
            f"{type(exc).__name__}: {exc} (--skip-unavailable skips failing methods)"
        ) from None
    wall = time.perf_counter() - t0
    for lab, why in result.skipped.items():
        print(f"warning: {lab} skipped: {why}", file=sys.stderr)
    paths = write_outputs(result, out, plots=args.plots)
    if args.tb_dir:
        write_tensorboard(result, args.tb_dir, step=args.tb_step, rename=_tb_rename(args, result))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(markdown_table(result))
        print(f"wrote {', '.join(sorted(paths))} to {out}/ in {wall:.1f} s")
        if args.tb_dir:
            print(f"TensorBoard scalars in {args.tb_dir} (tensorboard --logdir {args.tb_dir})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
