"""``hpcgym compare``: several schedulers (and agents) on the same windows, one table."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hpcgym.argtypes import positive_int
from hpcgym.cli.errors import UsageError, check_choice, refuse_window_conflicts, writable_dir
from hpcgym.cli.simulate import add_trace_args, load_plugins, load_trace
from hpcgym.sim.registry import heuristic_names
from hpcgym.tasks import list_tasks
from hpcgym.workload.sequences import SPLITS

__all__ = ["add_parser", "compare_windows", "run_compare"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``compare`` command to the main parser."""
    c = sub.add_parser(
        "compare",
        help="run several schedulers on the same windows and print one table",
        description="Every scheduler on exactly the same windows (replayable by start index). "
        "--agents also plays agents, each in the env of its task (hpcgym/Schedule-v0 or "
        "hpcgym/Backfill-v0: from its model card, else from the model's spaces, or --task): "
        "models of any Stable-Baselines3 / sb3-contrib algorithm and policy class, zoo names, "
        "cards, train/ppo.py run folders, heuristics (loaded by the installed agent loader, "
        "entry point group hpcgym.agent_loaders); eval/compare.py has every option.",
    )
    add_trace_args(c)
    c.add_argument(
        "--schedulers",
        nargs="+",
        default=["EASY", "EASY-AR", "EASY-SJBF", "SAF"],
        help="scheduler names (hpcgym simulate --help): NAME, POLICY+NAME, key=value specs; "
        "a queue policy or backfiller of --plugin too (POLICY+EASY-SJBF)",
    )
    c.add_argument(
        "--agents",
        nargs="+",
        default=[],
        help="agents: model .zip files (MaskablePPO, PPO, A2C, DQN... of any policy class), "
        "zoo names, model cards, run folders, heuristic names "
        f"({' '.join(heuristic_names('agent'))})",
    )
    c.add_argument(
        "--task",
        default=None,
        choices=list_tasks(),
        help="the task the --agents play (hpcgym.tasks: "
        f"{', '.join(list_tasks())}); default: each agent's own (its card, its model's "
        "spaces); an agent of another task is an error naming its spaces",
    )
    c.add_argument("--windows", type=positive_int, default=None, help="number of windows (10)")
    c.add_argument("--length", type=positive_int, default=None, help="jobs per window (1024)")
    c.add_argument("--split", default=None, help=f"{'|'.join(SPLITS)} (time split; test)")
    c.add_argument("--seed", type=int, default=None, help="seed of the window sampler (1)")
    c.add_argument("--starts", type=int, nargs="+", help="explicit window start indices")
    c.add_argument(
        "--full-trace",
        action="store_true",
        help="one window: the whole trace (with --split: the whole split range)",
    )
    c.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="worker processes (default 1; see eval/compare.py)",
    )
    c.add_argument(
        "--out",
        default=None,
        help="also write table.md, summary.csv, windows.csv, results.json, per_job.npz and "
        "plots into this folder (hpcgym.evaluation.write_outputs)",
    )
    c.add_argument(
        "--skip-unavailable",
        action="store_true",
        help="skip unknown or failing schedulers with a warning instead of an error",
    )
    c.set_defaults(func=run_compare)


def compare_windows(
    workload: Any,
    schedulers: list[str],
    starts: list[int],
    length: int,
    jobs: int = 1,
) -> list[dict[str, Any]]:
    """Every scheduler on every window; one row per (scheduler, window).

    A thin wrapper of :func:`hpcgym.evaluation.evaluate` (rows keep this command's keys:
    scheduler, start, length, avg_bsld, avg_wait, utilization, seconds).

    :param workload: the trace
    :param schedulers: scheduler names / specs
    :param starts: window starts
    :param length: jobs per window
    :param jobs: worker processes
    """
    return _rows(_evaluate(workload, schedulers, [], starts, length, jobs, skip=False))


def _evaluate(
    workload: Any,
    schedulers: list[str],
    agents: list[str],
    starts: list[int],
    length: int,
    jobs: int,
    skip: bool,
    task: str | None = None,
) -> Any:
    from hpcgym.evaluation import (
        LoaderUnavailable,
        WindowSet,
        build_methods,
        evaluate,
        resolve_agent_loader,
    )

    methods, failures = build_methods(schedulers, agents, task=task)
    for kind, spec, exc in failures:
        if not skip:
            raise UsageError(f"--{kind}s {spec}: {exc}") from None
        print(f"warning: {kind} {spec!r} skipped: {exc}", file=sys.stderr)
    loader = None
    if any(m.kind == "agent" for m in methods):
        try:
            loader = resolve_agent_loader()
        except LoaderUnavailable as exc:
            raise ValueError(str(exc)) from None
    windows = WindowSet(tuple(int(s) for s in starts), int(length))
    return evaluate(
        workload,
        methods,
        windows,
        jobs=jobs,
        progress=False,
        skip_unavailable=skip,
        agent_loader=loader,
    )


def _rows(result: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for r in result.rows:
        rows.append(
            {
                "scheduler": r["method"],
                "start": r["start"],
                "length": r["length"],
                "avg_bsld": r["avg_bsld"],
                "avg_wait": r["avg_wait"],
                "utilization": r["utilization"],
                "seconds": result.timings[r["method"]][r["window"]],
            }
        )
    return rows


#: the reference of the ratios when none is stated and it is among the methods
DEFAULT_REFERENCE = "EASY-SJBF"


def _set_reference(result: Any, wanted: str | None) -> None:
    """Give ``result`` its ratio reference when the evaluation did not: ``wanted``, else
    :data:`DEFAULT_REFERENCE`, else the first method, when it is among the methods (its
    per-window AVEbsld become the reference values of the paired statistics).

    :param result: the :class:`~hpcgym.evaluation.EvalResult`
    :param wanted: the stated reference (``None``: the default)
    """
    if result.ratio_values is not None or not result.labels:
        return
    labels = result.labels
    ref = wanted or (DEFAULT_REFERENCE if DEFAULT_REFERENCE in labels else labels[0])
    if ref not in labels:
        print(f"warning: no ratios: the reference {ref!r} is not among the methods",
              file=sys.stderr)  # fmt: skip
        return
    result.ratio_reference = ref
    result.ratio_values = [float(v) for v in result.per_window("avg_bsld")[ref]]


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    """A summary row for JSON: ``nan`` as ``None``."""
    return {
        k: None if isinstance(v, float) and v != v else v  # nan != nan
        for k, v in row.items()
    }


def _windows(args: argparse.Namespace, n_jobs: int) -> Any:
    """The windows of ``--windows --length --split --seed`` / ``--starts`` /
    ``--full-trace``; options that the chosen way ignores are refused.

    :param args: the parsed arguments
    :param n_jobs: jobs of the trace
    :raises UsageError: conflicting options, an unknown split
    """
    from hpcgym.evaluation import select_windows

    refuse_window_conflicts(
        starts=bool(args.starts),
        full_trace=args.full_trace,
        windows=args.windows is not None,
        seed=args.seed is not None,
        split=args.split is not None,
        length=args.length is not None,
    )
    if args.full_trace:  # the whole trace, or the whole --split range
        split = check_choice(args.split, SPLITS, "--split", "split") if args.split else "all"
        return select_windows(n_jobs, full_trace=True, split=split)
    split = check_choice(args.split, SPLITS, "--split", "split") if args.split else "test"
    return select_windows(
        n_jobs,
        args.length or 1024,
        args.windows or 10,
        split,
        1 if args.seed is None else args.seed,
        starts=args.starts,
    )


def run_compare(args: argparse.Namespace) -> int:
    """Run ``hpcgym compare``; prints the table (or JSON) and returns the exit code."""
    from hpcgym.evaluation import write_outputs

    writable_dir(args.out, "--out")
    load_plugins(args)
    wl = load_trace(args)
    ws = _windows(args, len(wl))
    starts, length = list(ws.starts), ws.length
    if args.task is not None and not args.agents:
        raise UsageError("--task says which env the --agents play, and no --agents are given")
    result = _evaluate(
        wl,
        args.schedulers,
        args.agents,
        starts,
        length,
        args.jobs,
        args.skip_unavailable,
        args.task,
    )
    for name, why in result.skipped.items():
        kind = "method" if args.agents else "scheduler"
        print(f"warning: {kind} {name!r} skipped: {why}", file=sys.stderr)
    _set_reference(result, getattr(args, "reference", None))
    if args.out:
        write_outputs(result, args.out)
    rows = _rows(result)
    summary: dict[str, dict[str, float]] = {}
    for r in rows:
        s = summary.setdefault(r["scheduler"], {"avg_bsld": 0.0, "avg_wait": 0.0, "n": 0})
        s["avg_bsld"] += r["avg_bsld"]
        s["avg_wait"] += r["avg_wait"]
        s["n"] += 1
    for s in summary.values():
        s["avg_bsld"] /= s["n"]
        s["avg_wait"] /= s["n"]
    if args.json:
        json.dump(
            {
                "trace": wl.name,
                "starts": starts,
                "length": length,
                "rows": rows,
                "mean": summary,
                "reference": result.ratio_reference if result.ratio_values is not None else None,
                "summary": [_json_safe(s) for s in result.summary()],
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    from hpcgym.evaluation.report import compare_table

    print(f"trace {wl.name}: {len(starts)} window(s) of {length} jobs, starts {starts}")
    for line in compare_table(result, "method" if args.agents else "scheduler"):
        print(line)
    if args.out:
        print(f"wrote the evaluation outputs to {args.out}/")
    return 0
