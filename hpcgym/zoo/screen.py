"""Several runs' checkpoint choices side by side: a screen of training settings.

A hyperparameter screen trains one run per setting (``train/ppo.py`` with other options,
or the trials of ``train/sweep.py``) and chooses each run's checkpoint on the same
validation windows (``eval/select_checkpoint.py``, which writes ``<run>/selection.json``).
:func:`compare_selections` reads those choices and sets them side by side: per run, the
setting that tells it from the others (the options of its training configuration, as its
run card records it, where it departs from the value most of the runs have), its chosen
checkpoint's paired ratio, the median candidate's (what a checkpoint of the setting scores
without a choice) and the
split-half holdout of the run's own choice; and the choice **across** the runs, the
lowest ratio of all their candidates, with the holdout of that larger choice
(:func:`hpcgym.evaluation.statistics.choice_holdout` over every candidate of every run):
choosing among more candidates is biased lower, and this says by how much. The runs must
have been scored on the same windows against the same reference (checked).
"""

from __future__ import annotations

import json
import os
import statistics as pystats
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hpcgym.evaluation.statistics import HOLDOUT_MIN_WINDOWS, choice_holdout
from hpcgym.zoo.selection import load_selection, runs_and_config

__all__ = ["BOOKKEEPING", "compare_selections", "screen_markdown"]

#: training options that do not make another setting: folders, logging, threads,
#: checkpointing, and values the trainer derives from the others
BOOKKEEPING = frozenset(
    {
        "logdir",
        "run_name",
        "progress",
        "verbose",
        "device",
        "torch_threads",
        "train_threads",
        "keep_checkpoints",
        "keep_spread",
        "checkpoint_every",
        "n_steps_resolved",
        "batch_size_resolved",
        "rollout_size",
        "calibration",
        "target_timesteps",
    }
)
#: what every selection must share to be compared
SAME = ("trace", "split", "length", "seed", "starts", "reference")


def _setting(configs: Sequence[dict[str, Any]]) -> list[str]:
    """Per config, ``key=value`` of the keys where it departs from the common setting:
    per key, the value most of the configs have (on a tie, the earliest run's)."""
    keys = sorted({k for c in configs for k in c} - BOOKKEEPING)
    values = {k: [json.dumps(c.get(k), sort_keys=True) for c in configs] for k in keys}

    def most_common(v: list[str]) -> str:
        return max(v, key=lambda x: (v.count(x), -v.index(x)))

    common = {k: most_common(v) for k, v in values.items()}
    return [
        ", ".join(f"{k}={values[k][i]}" for k in keys if values[k][i] != common[k])
        or "the common setting"
        for i in range(len(configs))
    ]


def compare_selections(runs: Sequence[str | os.PathLike[str]]) -> dict[str, Any]:
    """Set side by side the checkpoint choices of several runs scored on the same windows.

    :param runs: ``train/ppo.py`` run folders (or ``--seeds`` roots), each with the
        ``selection.json`` of ``eval/select_checkpoint.py``
    :raises FileNotFoundError: a run has no selection (the message says how to make one)
    :raises ValueError: fewer than two runs, a run named twice, or selections made on other
        windows or against another reference than the first run's (the message says
        which)
    :return: ``runs`` (per run: ``run``, ``setting``, ``candidates``, ``chosen``, the
        chosen candidate's ``geo_ratio``, ``ci_low``, ``ci_high``, ``wins``, ``median``
        (the median candidate's ratio) and ``holdout``), ``across`` (``chosen`` as
        ``run: model``, its ``geo_ratio``, ``ci_low``, ``ci_high``, ``candidates`` and
        ``holdout`` over every candidate of every run), and the shared windows
    """
    dirs = [Path(r).resolve() for r in runs]
    if len(dirs) < 2:
        raise ValueError("a screen compares at least two runs")
    if len(set(dirs)) < len(dirs):
        raise ValueError("a run is named twice")
    sels = [load_selection(d) for d in dirs]
    first = sels[0]
    for d, s in zip(dirs[1:], sels[1:], strict=True):
        bad = [k for k in SAME if s.get(k) != first.get(k)]
        if bad:
            raise ValueError(
                f"{d}: its selection differs from {dirs[0]}'s in {', '.join(bad)}; "
                "choose every run's checkpoint with the same eval/select_checkpoint.py "
                "--windows, --length, --seed and --reference"
            )
    settings = _setting([runs_and_config(d)[1] for d in dirs])
    names = [d.name for d in dirs]
    if len(set(names)) < len(names):
        names = [str(d) for d in dirs]
    rows = []
    every: dict[str, list[float]] = {}
    stats: dict[str, dict[str, Any]] = {}
    for name, setting, sel in zip(names, settings, sels, strict=True):
        cands = sel["candidates"]
        chosen = next(c for c in cands if c["model"] == sel["chosen"])
        rows.append(
            {
                "run": name,
                "setting": setting,
                "candidates": len(cands),
                "chosen": sel["chosen"],
                **{k: chosen[k] for k in ("geo_ratio", "ci_low", "ci_high", "wins")},
                "median": float(pystats.median(c["geo_ratio"] for c in cands)),
                "holdout": sel.get("holdout"),
            }
        )
        for c in cands:
            every[f"{name}: {c['model']}"] = c["avg_bsld"]
            stats[f"{name}: {c['model']}"] = c
    ref = first["reference_avg_bsld"]
    best = min(stats, key=lambda k: (stats[k]["geo_ratio"], stats[k].get("steps") or 0))
    across = {
        "chosen": best,
        **{k: stats[best][k] for k in ("geo_ratio", "ci_low", "ci_high", "wins")},
        "candidates": len(every),
        "holdout": choice_holdout(every, ref) if len(ref) >= HOLDOUT_MIN_WINDOWS else None,
    }
    return {
        **{k: first.get(k) for k in ("trace", "split", "windows", "length", "seed")},
        "reference": first["reference"],
        "runs": rows,
        "across": across,
    }


def _holdout(h: dict[str, Any] | None) -> str:
    return "—" if not h else f"{h['geo_ratio']:.3f} ({100 * h['agreement']:.0f} %)"


def screen_markdown(screen: dict[str, Any]) -> str:
    """The screen as Markdown: one row per run, then the choice across the runs.

    :param screen: the result of :func:`compare_selections`
    """
    ref = screen["reference"]
    out = [
        f"{screen['windows']} {screen['split']} windows of {screen['length']} jobs of "
        f"{screen['trace']} (window seed {screen['seed']}); ratios vs {ref}, lower is "
        "better. *median*: the run's median candidate; *holdout*: the choice made on half "
        "of the windows, scored on the other half (how often a half makes the same "
        "choice).",
        "",
        f"| run | setting | candidates | chosen | ratio vs {ref} [95%] | wins | median | holdout |",
        "|---|---|---:|---|---|---:|---:|---|",
    ]
    for r in screen["runs"]:
        out.append(
            f"| {r['run']} | {r['setting']} | {r['candidates']} | {r['chosen']} "
            f"| {r['geo_ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['wins']} "
            f"| {r['median']:.3f} | {_holdout(r['holdout'])} |"
        )
    a = screen["across"]
    out += [
        "",
        f"Across the {len(screen['runs'])} runs ({a['candidates']} candidates) the lowest "
        f"is `{a['chosen']}`: {a['geo_ratio']:.3f} [{a['ci_low']:.3f}, {a['ci_high']:.3f}]"
        + (
            f"; the same choice made on half of the windows scores {_holdout(a['holdout'])} "
            "on the other half"
            if a["holdout"]
            else ""
        )
        + ".",
    ]
    return "\n".join(out)
