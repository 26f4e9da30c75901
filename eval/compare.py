"""Compare agents and schedulers on exactly the same windows of a trace.

    python eval/compare.py --trace SDSC-SP2 --agents easy agents/pretrained/X.zip \\
        --schedulers EASY EASY-AR EASY-SJBF SAF EASY++ ELOSS SJF+EASY WFP3+EASY F1+EASY \\
        --windows 10 --length 1024 --split test --seed 1 --out results/sdsc

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

if __package__ in (None, ""):  # run as a script: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval import _common as C  # noqa: E402

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from hpcgym.envs.backfill_env import MODES
    from hpcgym.evaluation import AGENT_HEURISTICS, DEFAULT_SCHEDULERS
    from hpcgym.sim.engine import POLICIES

    p = argparse.ArgumentParser(
        prog="python eval/compare.py",
        description=__doc__.split("\n\n")[0],
        epilog=(
            "Agents: heuristics "
            + ", ".join(AGENT_HEURISTICS)
            + "; a model .zip (its model card <stem>.json next to it, or the config.json of "
            "the train/ppo.py run holding it, configures the env), a card .json, a run folder, "
            "or a card name in --agents-dir. Prefix LABEL= to name a method. Schedulers: "
            "any hpcgym scheduler name (EASY, EASY-AR, EASY-SJBF, SAF, EASY++, ELOSS, "
            "CONSERVATIVE, NONE...), POLICY+NAME (SJF+EASY) or key=value specs."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--trace", default=None, help="registered name, SWF path, or 'synthetic' (default)"
    )
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
    g.add_argument("--policy", default="FCFS", type=str.upper, choices=sorted(POLICIES))
    g.add_argument("--mode", default="guarded", choices=sorted(MODES))
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
    p.add_argument("--out", default=None, help="output folder (default results/compare/<trace>)")
    C.add_reference_arg(p)
    p.add_argument("--vs", default="EASY", help="method of the 'vs' column (EASY)")
    p.add_argument(
        "--skip-unavailable",
        action="store_true",
        help="skip unknown schedulers / failing methods with a warning instead of an error",
    )
    p.add_argument("--json", action="store_true", help="print results.json instead of the table")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; returns the exit code (2 on user errors)."""
    from hpcgym.evaluation import (
        DEFAULT_SCHEDULERS,
        MethodUnavailable,
        build_methods,
        evaluate,
        markdown_table,
        select_windows,
        write_outputs,
        write_tensorboard,
    )
    from hpcgym.workload import load

    parser = build_parser()
    args = parser.parse_args(argv)
    schedulers = args.schedulers
    if schedulers is None:
        schedulers = [] if args.agents else list(DEFAULT_SCHEDULERS)
    if not schedulers and not args.agents:
        parser.error("nothing to compare: give --schedulers and/or --agents")
    methods, failures = build_methods(
        schedulers,
        args.agents,
        policy=args.policy,
        mode=args.mode,
        max_queue=args.max_queue,
        agents_dir=C.agents_dir(args.agents_dir),
        scales=args.scales,
        agent_seed=args.agent_seed,
    )
    for kind, spec, exc in failures:
        if not args.skip_unavailable:
            hint = " (or pass --skip-unavailable)" if kind == "scheduler" else ""
            parser.error(f"--{kind}s {spec}: {exc}{hint}")
        print(f"warning: {kind} {spec!r} skipped: {exc}", file=sys.stderr)
    if not methods:
        parser.error("no method left to evaluate")
    try:
        wl = load(args.trace)
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
    except (FileNotFoundError, ValueError, KeyError) as exc:
        parser.error(str(exc))
    t0 = time.perf_counter()
    try:
        result = evaluate(
            wl,
            methods,
            windows,
            jobs=args.jobs,
            progress=args.progress,
            skip_unavailable=args.skip_unavailable,
            reference=args.vs,
            agent_loader=C.agent_loader(),
            ratio_reference=args.reference,
        )
    except (MethodUnavailable, FileNotFoundError, ValueError) as exc:
        parser.error(f"{type(exc).__name__}: {exc} (--skip-unavailable skips failing methods)")
    wall = time.perf_counter() - t0
    for lab, why in result.skipped.items():
        print(f"warning: {lab} skipped: {why}", file=sys.stderr)
    out = Path(args.out) if args.out else Path("results") / "compare" / wl.name
    paths = write_outputs(result, out, plots=args.plots)
    if args.tb_dir:
        write_tensorboard(result, args.tb_dir, step=args.tb_step)
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
