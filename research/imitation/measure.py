"""Student, teacher and other agents against EASY-SJBF on VALIDATION windows.

The windows are drawn by :func:`hpcgym.evaluation.windows.select_windows` from the
``validation`` split (a held-back tail of the training range: never the test split, never
the windows the data came from). Every agent is played by
:func:`hpcgym.evaluation.play.play_window` on a :class:`~hpcgym.envs.backfill_env.BackfillEnv`
of that split; the teacher runs as the scheduler ``LOOKAHEAD1-CLAIRVOYANT`` (the same decisions
as when it drives the env, tested). Each method's per-window AVEbsld is compared with
EASY-SJBF's by :func:`hpcgym.evaluation.statistics.paired_comparison`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.evaluation.play import play_window
from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.evaluation.windows import select_windows
from hpcgym.sim import get_scheduler

__all__ = ["compare_on_validation", "format_table"]


def compare_on_validation(
    env_kwargs: Mapping[str, Any],
    agents: Mapping[str, tuple[Any, Mapping[str, Any]]],
    *,
    windows: int = 30,
    length: int = 512,
    seed: int = 7,
    teacher: str | None = "LOOKAHEAD1-CLAIRVOYANT",
) -> dict[str, Any]:
    """AVEbsld per validation window of each agent, the teacher and EASY-SJBF, and each
    one's paired geo-mean ratio against EASY-SJBF.

    :param env_kwargs: the env arguments (``trace``, ``mode``...); ``split`` and
        ``window_length`` are set here
    :param agents: name -> (an object with SB3's ``predict``, env arguments that differ
        from ``env_kwargs`` for it, e.g. ``{"est_scale": ...}`` or another feature set)
    :param windows: number of windows
    :param length: jobs per window
    :param seed: seed of the window draw
    :param teacher: the teacher's scheduler spec (``None``: do not run it)
    :return: ``windows`` (the window set), ``avg_bsld`` (method -> per-window values),
        ``comparisons`` (method -> :class:`PairedComparison` dict), ``seconds`` per method,
        ``violations`` per agent (summed)
    """
    base = {**env_kwargs, "split": "validation", "window_length": int(length)}
    probe = BackfillEnv(**base)
    ws = select_windows(
        len(probe.workload),
        length,
        windows,
        split="validation",
        seed=seed,
        train_fraction=probe.train_fraction,
    )
    values: dict[str, list[float]] = {"EASY-SJBF": []}
    seconds: dict[str, float] = {"EASY-SJBF": 0.0}
    violations: dict[str, int] = {}
    ref = get_scheduler("EASY-SJBF")
    for s in ws.starts:
        t0 = time.perf_counter()
        values["EASY-SJBF"].append(
            float(ref.simulate(probe.workload.window(s, length)).metrics["avg_bsld"])
        )
        seconds["EASY-SJBF"] += time.perf_counter() - t0
    if teacher is not None:
        spec = get_scheduler(teacher)
        values[teacher], seconds[teacher] = [], 0.0
        for s in ws.starts:
            t0 = time.perf_counter()
            values[teacher].append(
                float(spec.simulate(probe.workload.window(s, length)).metrics["avg_bsld"])
            )
            seconds[teacher] += time.perf_counter() - t0
    for name, (agent, extra) in agents.items():
        env = BackfillEnv(**{**base, **extra}) if extra else probe
        values[name], seconds[name], violations[name] = [], 0.0, 0
        for s in ws.starts:
            t0 = time.perf_counter()
            row = play_window(env, agent, int(s), seed=0, deterministic=True)
            seconds[name] += time.perf_counter() - t0
            values[name].append(float(row["avg_bsld"]))
            violations[name] += int(row["violations"])
            ref_env = float(row["reference_avg_bsld"])
            i = len(values[name]) - 1
            if not np.isclose(ref_env, values["EASY-SJBF"][i], rtol=1e-9):
                raise RuntimeError(
                    f"the env's reference ({ref_env}) is not EASY-SJBF's AVEbsld "
                    f"({values['EASY-SJBF'][i]}) on window {s}: check the env arguments"
                )
    refv = values["EASY-SJBF"]
    comps = {m: paired_comparison(v, refv).to_dict() for m, v in values.items() if m != "EASY-SJBF"}
    return {
        "windows": ws.to_dict(),
        "avg_bsld": values,
        "comparisons": comps,
        "seconds": seconds,
        "violations": violations,
    }


def format_table(result: Mapping[str, Any]) -> str:
    """The comparison as a Markdown table (mean AVEbsld, ratio [95% CI], wins, s/window)."""
    ws = result["windows"]
    n = len(ws["starts"])
    lines = [
        f"{n} {ws['split']} windows of {ws['length']} jobs (seed {ws['seed']}); paired "
        "geo-mean AVEbsld ratio vs EASY-SJBF, 95% bootstrap interval",
        "",
        "| method | mean AVEbsld | ratio vs EASY-SJBF [95% CI] | wins | s / window |",
        "|---|---:|---|---:|---:|",
    ]
    for m, v in result["avg_bsld"].items():
        c = result["comparisons"].get(m)
        cell = "1" if c is None else f"{c['geo_ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"
        wins = "–" if c is None else f"{c['wins']}/{c['windows']}"
        lines.append(
            f"| {m} | {np.mean(v):.2f} | {cell} | {wins} | {result['seconds'][m] / n:.3f} |"
        )
    return "\n".join(lines)
