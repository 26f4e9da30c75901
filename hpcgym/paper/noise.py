"""RLBackfilling Fig. 1: AVEbsld of ``POLICY+EASY`` against the noise of runtime
predictions (:func:`noise_sweep`, :func:`noise_markdown`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hpcgym.evaluation.runner import parallel_map, worker_context
from hpcgym.workload.core import Workload

__all__ = [
    "NOISE_LEVELS",
    "NOISE_POLICIES",
    "noise_markdown",
    "noise_sweep",
    "write_noise_sweep",
]

#: RLBackfilling Fig. 1 noise levels and policies.
NOISE_LEVELS: tuple[float, ...] = (0.0, 0.05, 0.10, 0.20, 0.40, 1.00)
NOISE_POLICIES: tuple[str, ...] = ("FCFS", "WFP3", "SJF", "F1")


def _noise_task(task: tuple[str, str, int]) -> float:
    """(policy, level key, seed) on the context's workload -> AVEbsld."""
    from hpcgym.predictors import make_estimator
    from hpcgym.sim import Simulation

    pol, lev, seed = task
    wl = worker_context()["traces"]["noise"]
    if lev == "request":
        res = Simulation(wl, policy=pol, backfill="easy").run()
    else:
        level = float(lev)
        est = make_estimator("actual") if level == 0 else make_estimator("noisy", level=level)
        res = Simulation(wl, policy=pol, backfill="easy", estimate=est, seed=seed).run()
    return float(res.metrics["avg_bsld"])


def noise_sweep(
    trace: str | os.PathLike[str] | Workload | None,
    policies: Sequence[str] = NOISE_POLICIES,
    levels: Sequence[float] = NOISE_LEVELS,
    seeds: Sequence[int] = (0, 1, 2),
    first_jobs: int | None = None,
    *,
    jobs: int | None = None,
    progress: bool = True,
) -> dict[str, dict[str, float]]:
    """RLBackfilling Fig. 1: AVEbsld of ``POLICY+EASY`` on the whole trace (or its first
    ``first_jobs`` jobs) with runtime estimates ``actual x (1 + U[0, L))`` capped at the
    request (predictor ``noisy``), mean over ``seeds`` (L = 0: the clairvoyant EASY-AR, one
    run), plus ``request`` (plain EASY with user requests).

    :return: ``{policy: {f"{L:g}": AVEbsld, ..., "request": AVEbsld}}``
    """
    from hpcgym.workload import load

    wl = load(trace)
    if first_jobs:
        wl = wl.window(0, int(first_jobs))
    tasks: list[tuple[str, str, int]] = []
    for pol in policies:
        for lev in levels:
            for seed in seeds if lev > 0 else list(seeds)[:1]:
                tasks.append((pol, f"{lev:g}", int(seed)))
        tasks.append((pol, "request", 0))
    vals = parallel_map(
        _noise_task,
        tasks,
        jobs=jobs,
        progress=progress,
        desc="noise sweep",
        context={"traces": {"noise": wl}},
    )
    acc: dict[str, dict[str, list[float]]] = {}
    for (pol, level, _seed), v in zip(tasks, vals, strict=True):
        acc.setdefault(pol, {}).setdefault(level, []).append(v)
    return {pol: {lev: float(np.mean(v)) for lev, v in row.items()} for pol, row in acc.items()}


def noise_markdown(
    res: dict[str, dict[str, float]], trace: str, levels: Sequence[float], seeds: Sequence[int]
) -> str:
    """The Markdown table of :func:`noise_sweep` (``noise_sweep.md``)."""
    cols = [f"{lev:g}" for lev in levels] + ["request"]
    lines = [
        f"AVEbsld, {trace}, EASY backfilling, estimate = actual x (1 + U[0, L)), "
        f"mean of seeds {list(seeds)}",
        "",
        "| policy | "
        + " | ".join(("L=" + c if c != "request" else "user request") for c in cols)
        + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for pol, row in res.items():
        lines.append(f"| {pol} | " + " | ".join(f"{row[c]:.1f}" for c in cols) + " |")
    return "\n".join(lines)


def write_noise_sweep(
    res: dict[str, dict[str, float]],
    trace: str,
    levels: Sequence[float],
    seeds: Sequence[int],
    out_dir: str | os.PathLike[str],
    *,
    plots: bool = True,
) -> dict[str, Path]:
    """Write ``noise_sweep.md``, ``noise_sweep.json`` and (``plots``) ``noise_sweep.png``.

    :param res: the result of :func:`noise_sweep`
    :param trace: the trace's name (captions, JSON)
    :param levels: the noise levels of the sweep
    :param seeds: the seeds of the sweep
    :param out_dir: destination folder (created)
    :return: file name -> path
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"noise_sweep.md": out / "noise_sweep.md", "noise_sweep.json": out / "noise_sweep.json"}
    paths["noise_sweep.md"].write_text(noise_markdown(res, trace, levels, seeds) + "\n")
    paths["noise_sweep.json"].write_text(
        json.dumps({"trace": trace, "seeds": list(seeds), "avg_bsld": res}, indent=2)
    )
    if plots:
        from hpcgym.evaluation.plots import plot_noise_sweep

        paths["noise_sweep.png"] = plot_noise_sweep(res, levels, trace, out / "noise_sweep.png")
    return paths
