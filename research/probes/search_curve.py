"""Does what a linear-score search gains on its train windows reach the validation range?

``research/search/`` ships CMA-ES's mean at the end of the search and scores each generation
on that generation's fresh *train-split* windows only. This replays the mean of every
``--every``-th generation (its weights are in the search's ``search_state.pkl``), and the
start, on **fixed** windows of a split -- by default the 30 x 1,024-job validation windows
of window seed 7 that ``eval/select_checkpoint.py`` scores a shipped search on, so the
last generation's row is the card's validation ratio -- and prints, per generation, the
train ratio the search saw beside the ratio on those windows with its 95 % bootstrap
interval (paired geometric mean against the search's reference under the search's queue
policy, e.g. ``SJF+EASY-SJBF`` for an ``--policy SJF`` search)::

    python research/probes/search_curve.py runs/search-sdsc [runs/search-hpc2n ...] \\
        [--every 10] [--split validation] [--windows 30] [--length 1024] [--seed 7] [--jobs 2]

A validation curve that falls with the train curve says the search learns what carries to
the next period; a flat or rising one says it does not. The curve is a diagnostic: a
search's shipped policy is its final mean, chosen before any validation window is played
(docs/research/findings.md), and the lowest point of the curve is a choice made in hindsight.

Writes ``search_curve_<split>.json`` into each search folder. About 3 s per point on
SDSC-SP2 (30 x 1,024 jobs, one core); docs/research/findings.md has the figures of the
searches whose agents were shipped.
"""

from __future__ import annotations

import argparse
import json
import pickle
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.search_curve`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.search_curve", *sys.argv[1:]])

__all__ = ["curve", "main", "search_config"]


def search_config(out: Path) -> Any:
    """The run options (:class:`train.config.TrainConfig`) of the search in ``out``, from
    the command in its ``search.json``.

    :raises ConfigError: ``out`` holds no finished or stopped search
    """
    from research.search.search import build_parser, ppo_config
    from train.config import ConfigError

    path = out / "search.json"
    if not path.is_file():
        raise ConfigError(f"{path} is missing: not the folder of a finished or stopped search")
    argv = shlex.split(json.loads(path.read_text())["search_command"])[2:]
    _, rest = build_parser().parse_known_args(argv)
    return ppo_config(rest)


def curve(
    out: Path,
    *,
    every: int = 10,
    split: str = "validation",
    windows: int = 30,
    length: int = 1024,
    seed: int = 7,
    jobs: int = 1,
) -> dict[str, Any]:
    """Play the start and CMA-ES's mean of every ``every``-th generation (and the last) of
    the search in ``out`` on fixed windows of ``split``.

    :param out: the search's folder (``search.json``, ``search_state.pkl``)
    :param every: the generations' step
    :param split: ``validation`` or ``train`` (fixed windows of the train split)
    :param windows: windows
    :param length: jobs per window
    :param seed: window seed (``eval/select_checkpoint.py --seed``)
    :param jobs: processes playing the policies
    :return: the rows (also written to ``out/search_curve_<split>.json``)
    """
    from hpcgym.evaluation.statistics import paired_comparison
    from hpcgym.sim.schedulers import policy_name
    from research.search.linear_search import STATE_FILE, Evaluations, SearchProblem
    from train.config import ConfigError

    if every < 1:
        raise ConfigError(f"--every must be at least 1, got {every}")
    cfg = search_config(out)
    with open(out / STATE_FILE, "rb") as fh:
        state = pickle.load(fh)
    history = state["history"]
    # the run's --trace alone, also for a search that played a trace mix
    problem = SearchProblem.for_config(
        cfg, state["names"], windows, length, 0, split, mix=False, hidden=state.get("hidden", 0)
    )
    starts = problem.windows_at(seed)
    reference = problem.reference_values(starts)
    picks = sorted({*range(0, len(history), every), len(history) - 1})
    points: list[tuple[str, np.ndarray, float | None]] = [
        ("start", np.asarray(state["es"].x0, dtype=np.float64), None)
    ]
    points += [
        (str(g), np.asarray(history[g]["x_mean"]), float(history[g]["mean_policy"])) for g in picks
    ]
    policies = [problem.candidate(x, state["radius"]) for _, x, _ in points]
    evals = Evaluations(problem, jobs)
    try:
        played = evals.played(policies, starts)
    finally:
        evals.close()
    rows = []
    for (gen, _, train), values in zip(points, played, strict=True):
        cmp = paired_comparison(values.tolist(), reference.tolist())
        rows.append(
            {
                "generation": gen,
                "train": train,
                "ratio": cmp.geo_ratio,
                "ci": [cmp.ci_low, cmp.ci_high],
                "wins": cmp.wins,
                "avg_bsld": float(values.mean()),
            }
        )
    result = {
        "search": str(out),
        "trace": cfg.trace,
        "reference": policy_name(problem.reference, cfg.policy),
        "split": split,
        "windows": windows,
        "length": length,
        "seed": seed,
        "reference_avg_bsld": float(reference.mean()),
        "rows": rows,
    }
    (out / f"search_curve_{split}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['search']} ({result['trace']}): {result['windows']} x {result['length']} "
        f"{result['split']} windows, seed {result['seed']}, vs {result['reference']} "
        f"(mean AVEbsld {result['reference_avg_bsld']:.2f})",
        "",
        f"| generation | train windows (the search's) | {result['split']} [95% interval] | wins |",
        "|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        train = "—" if r["train"] is None else f"{r['train']:.3f}"
        lo, hi = r["ci"]
        lines.append(
            f"| {r['generation']} | {train} | {r['ratio']:.3f} [{lo:.3f}, {hi:.3f}] | "
            f"{r['wins']}/{result['windows']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Command line; returns one result per search.

    :param argv: arguments (default ``sys.argv[1:]``)
    """
    from train.config import ConfigError

    parser = argparse.ArgumentParser(
        prog="python research/probes/search_curve.py",
        description="Replay a linear-score search's generations on fixed validation windows.",
    )
    parser.add_argument("searches", nargs="+", type=Path, help="search folders (--out)")
    parser.add_argument("--every", type=int, default=10, help="generation step (default 10)")
    parser.add_argument(
        "--split",
        default="validation",
        choices=("validation", "train"),
        help="split of the fixed windows (default validation)",
    )
    parser.add_argument("--windows", type=int, default=30, help="windows (default 30)")
    parser.add_argument("--length", type=int, default=1024, help="jobs per window (default 1024)")
    parser.add_argument("--seed", type=int, default=7, help="window seed (default 7)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    ns = parser.parse_args(argv)
    results = []
    try:
        for out in ns.searches:
            res = curve(
                out,
                every=ns.every,
                split=ns.split,
                windows=ns.windows,
                length=ns.length,
                seed=ns.seed,
                jobs=ns.jobs,
            )
            print(_table(res) + "\n", flush=True)
            results.append(res)
    except ConfigError as exc:
        parser.error(str(exc))
    return results


if __name__ == "__main__":
    main()
