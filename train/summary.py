"""``summary.json`` of a run and the final table printed at its end."""

from __future__ import annotations

import math
import platform
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from train.rundir import RunDir

__all__ = [
    "Session",
    "CLAIRVOYANT_MARK",
    "build_summary",
    "final_table",
    "format_paired",
    "format_table",
    "overlap",
    "tied_windows",
    "versions",
]


@dataclass
class Session:
    """One invocation of the training script on a run (a fresh start or a resume).

    :param started: wall-clock time it started (``time.time()``)
    :param ended: wall-clock time it ended
    :param resumed_from: the checkpoint it resumed from (``None``: a fresh run)
    :param timesteps_start: the step counter at its start
    :param timesteps_end: the step counter at its end
    :param stop_reason: why it stopped: ``target reached``, ``time limit``, ``SIGINT``
        (Ctrl-C), ``SIGTERM``
    :param learn_time_s: time in ``model.learn``
    :param eval_time_s: time spent evaluating
    :param rollout_time_s: time collecting rollouts
    :param update_time_s: time in PPO updates
    :param rollout_steps: environment steps collected in complete rollouts
    :param discarded_steps: steps of the rollout in progress when it stopped (not learned
        from, not counted)
    :param command: the command line of the session (``python train/ppo.py ...``; ``None``
        when started from Python)
    """

    started: float
    ended: float
    resumed_from: str | None
    timesteps_start: int
    timesteps_end: int
    stop_reason: str
    learn_time_s: float
    eval_time_s: float
    rollout_time_s: float
    update_time_s: float
    rollout_steps: int
    discarded_steps: int = 0
    command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The session's entry of ``summary.json["sessions"]``."""
        steps = self.timesteps_end - self.timesteps_start
        return {
            "started": _iso(self.started),
            "ended": _iso(self.ended),
            "resumed_from": self.resumed_from,
            "timesteps_start": self.timesteps_start,
            "timesteps_end": self.timesteps_end,
            "steps": steps,
            "stop_reason": self.stop_reason,
            "wall_time_s": self.ended - self.started,
            "learn_time_s": self.learn_time_s,
            "eval_time_s": self.eval_time_s,
            "rollout_time_s": self.rollout_time_s,
            "update_time_s": self.update_time_s,
            "discarded_steps": self.discarded_steps,
            "command": self.command,
            "steps_per_s": steps / self.learn_time_s if self.learn_time_s > 0 else math.nan,
            "rollout_steps_per_s": self.rollout_steps / self.rollout_time_s
            if self.rollout_time_s > 0
            else math.nan,
        }


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    """Versions of Python and the libraries a run depends on."""
    import gymnasium
    import sb3_contrib
    import stable_baselines3
    import torch

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
    }


def _eval_brief(rec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {k: rec.get(k) for k in ("timesteps", "avg_bsld", "paired", "per_window")}


def format_paired(paired: Mapping[str, Any] | None) -> str:
    """``0.953 [0.912, 1.004], 6/10 wins: on par`` -- the paired statistics of an
    evaluation (``-`` without them).

    :param paired: ``geo_ratio, ci_low, ci_high, wins, windows, verdict`` or ``None``
    """
    if not paired:
        return "-"
    return (
        f"{paired['geo_ratio']:.3f} [{paired['ci_low']:.3f}, {paired['ci_high']:.3f}], "
        f"{paired['wins']}/{paired['windows']} wins: {paired['verdict']}"
    )


def build_summary(
    *,
    run: RunDir,
    config: dict[str, Any],
    workload: Mapping[str, Any],
    timesteps: int,
    rollout: Mapping[str, Any],
    sessions: Sequence[Mapping[str, Any]],
    evaluation: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
    baselines: Mapping[str, Mapping[str, Any]],
    skipped: Mapping[str, str],
    warnings: Sequence[str],
) -> dict[str, Any]:
    """The contents of ``summary.json``.

    :param run: the run folder
    :param config: the run's options and resolved rollout (as in ``config.json``)
    :param workload: ``trace`` (label), ``jobs``, ``machine_size``
    :param timesteps: the step counter at the end
    :param rollout: ``n_steps``, ``n_envs``, ``rollout_size``, ``batch_size``,
        ``calibration`` (the measured steps per trajectory or ``None``)
    :param sessions: every session of the run, the current one last
    :param evaluation: ``split``, ``length``, ``starts``, ``reference`` of the evaluation
        windows
    :param history: the evaluation records, the final one last (``eval.final`` and
        ``eval.best`` carry their ``paired`` statistics vs the reference)
    :param baselines: results of the baselines by name
    :param skipped: baselines that could not run: name -> reason
    :param warnings: warnings of the session
    """
    from hpcgym.sim.schedulers import is_clairvoyant

    best = run.best()
    last_checkpoint = run.latest_checkpoint()
    return {
        "run_dir": str(run.path),
        "args": config,
        "trace": workload["trace"],
        "jobs": workload["jobs"],
        "machine_size": workload["machine_size"],
        "timesteps": int(timesteps),
        "updates": int(timesteps) // int(rollout["rollout_size"]),
        "n_steps": rollout["n_steps"],
        "n_envs": rollout["n_envs"],
        "rollout_size": rollout["rollout_size"],
        "batch_size": rollout["batch_size"],
        "steps_per_trajectory_measured": rollout["calibration"],
        "wall_time_s": sum(float(s["wall_time_s"]) for s in sessions),
        "sessions": list(sessions),
        "eval": {
            **evaluation,
            "final": _eval_brief(history[-1] if history else None),
            "best": _eval_brief(best),
            "history": [
                {
                    **{k: r[k] for k in ("timesteps", "updates", "avg_bsld", "reward")},
                    "geo_ratio": (r.get("paired") or {}).get("geo_ratio"),
                }
                for r in history
            ],
        },
        "baselines": {
            k: {**dict(v), "clairvoyant": is_clairvoyant(k)} for k, v in baselines.items()
        },
        "skipped_baselines": dict(skipped),
        "warnings": list(warnings),
        "paths": {
            "run_dir": str(run.path),
            "tensorboard": str(run.path),
            "config": str(run.config),
            "final_model": str(run.final_model) if run.final_model.exists() else None,
            "best_model": str(run.best_model) if run.best_model.exists() else None,
            "last_checkpoint": str(last_checkpoint) if last_checkpoint else None,
            "checkpoints": sorted(str(p) for p in run.checkpoints()),
            "evaluations": str(run.evaluations),
        },
        "versions": versions(),
    }


#: The mark of a clairvoyant method's column (:func:`hpcgym.sim.schedulers.is_clairvoyant`).
CLAIRVOYANT_MARK = "\u2020"


def tied_windows(columns: Mapping[str, Sequence[float]], digits: int = 2) -> list[int]:
    """The windows where every method shows the same value at ``digits`` decimals (e.g.
    all 1.00: no job waited): nothing to compare there.

    :param columns: method -> value per window
    :param digits: the printed decimals
    """
    cols = list(columns.values())
    n = len(cols[0]) if cols else 0
    return [i for i in range(n) if len({f"{c[i]:.{digits}f}" for c in cols}) == 1]


def format_table(
    starts: Sequence[int],
    length: int,
    columns: Mapping[str, Sequence[float]],
    hide: Sequence[int] = (),
) -> str:
    """A text table: one row per window (``[start:end]``: jobs ``start..end-1`` of the
    trace), one column per method, and the mean over every window.

    :param starts: window starts
    :param length: jobs per window
    :param columns: method (the column's heading) -> AVEbsld per window
    :param hide: indices of windows left out of the rows (still in the mean)
    """
    names = list(columns)
    width = max(10, *(len(n) + 1 for n in names))
    head = f"{'window':>16}" + "".join(f"{n:>{width}}" for n in names)
    lines = [head, "-" * len(head)]
    hidden = set(hide)
    for i, s in enumerate(starts):
        if i in hidden:
            continue
        row = f"{f'[{s}:{s + length}]':>16}"
        row += "".join(f"{columns[n][i]:>{width}.2f}" for n in names)
        lines.append(row)
    lines.append("-" * len(head))
    lines.append(f"{'mean':>16}" + "".join(f"{np.mean(columns[n]):>{width}.2f}" for n in names))
    return "\n".join(lines)


def overlap(starts: Sequence[int], length: int) -> str:
    """``non-overlapping`` when no two windows of ``length`` jobs at ``starts`` share a
    job, else ``overlapping`` (the split is too short to hold them side by side).

    :param starts: window starts
    :param length: jobs per window
    """
    s = sorted(int(x) for x in starts)
    apart = all(b - a >= length for a, b in zip(s, s[1:], strict=False))
    return "non-overlapping" if apart else "overlapping"


def _split_jobs(summary: Mapping[str, Any], split: str) -> str:
    """``jobs 126000..139999 of 200000`` -- the range of ``split`` in the trace."""
    from hpcgym.workload import split_range

    args = summary.get("args") or {}
    try:
        lo, hi = split_range(
            int(summary["jobs"]),
            split,
            float(args.get("train_fraction", 0.7)),
            float(args.get("validation_fraction", 0.1)),
        )
    except (KeyError, TypeError, ValueError):
        return f"the {split} split"
    return f"the {split} split, jobs {lo}..{hi - 1} of {summary['jobs']}"


def final_table(summary: Mapping[str, Any], policy: str, mode: str) -> str:
    """The text printed at the end of a run: AVEbsld of the final model (``agent``), of
    the best model (``agent*``, when it is another one) and of the baselines per window,
    with a caption saying what the rows and columns are, then the paired ratio vs the
    reference, skipped baselines and the session's throughput.

    Windows where every method shows the same value (e.g. all 1.00) are left out of the
    rows, and counted in the caption (the mean is over every window). ``agent*`` is the
    best of the run's evaluations *on these same windows*, so its figures are biased in
    its favour: the caption says so, and the verdict to trust is the final model's (or a
    test-split evaluation's, ``eval/compare.py --split test``). A clairvoyant baseline
    (:func:`hpcgym.sim.schedulers.is_clairvoyant`, e.g. EASY-AR) carries
    :data:`CLAIRVOYANT_MARK` and a footnote.

    :param summary: the run's summary (:func:`build_summary`)
    :param policy: the base queue policy (for the caption)
    :param mode: the agent's mode (for the caption)
    """
    from hpcgym.sim.schedulers import is_clairvoyant

    ev = summary["eval"]
    final, best = ev["final"], ev["best"]
    columns: dict[str, list[float]] = {"agent": [w["avg_bsld"] for w in final["per_window"]]}
    if best is not None and best["timesteps"] != final["timesteps"]:
        columns["agent*"] = [w["avg_bsld"] for w in best["per_window"]]
    clairvoyant = []
    for name, res in summary["baselines"].items():
        head = name
        if is_clairvoyant(name):
            head = name + CLAIRVOYANT_MARK
            clairvoyant.append(name)
        columns[head] = list(res["per_window"])
    starts, length = ev["starts"], ev["length"]
    ties = tied_windows(columns)
    n = len(starts)
    evaluations = len(ev.get("history") or [])
    reference = ev.get("reference", "the reference")
    caption = [
        f"AVEbsld (mean bounded slowdown, lower is better) on {n} "
        f"{overlap(starts, length)} windows of {length} jobs in "
        f"{_split_jobs(summary, ev['split'])} ({summary['trace']}"
        + ("; never trained on)" if ev["split"] == "validation" else ")"),
        "  rows: a window [a:b] holds jobs a..b-1 of the trace (cleaned, in submit order); "
        "every column runs the same jobs",
        f"  agent: the final model at {final['timesteps']} steps ({policy}, {mode})",
    ]
    if "agent*" in columns:
        caption.append(
            f"  agent*: the best model ({best['timesteps']} steps), chosen as the lowest mean "
            f"of {evaluations} evaluations on THESE windows: its figures are biased in its "
            "favour; judge it on test windows (eval/compare.py --split test)"
        )
    caption.append(
        "  other columns: heuristics on the same windows, played by the same engine"
        + (f" with queue policy {policy}" if policy.upper() != "FCFS" else "")
    )
    if clairvoyant:
        caption.append(
            f"  {CLAIRVOYANT_MARK} clairvoyant ({', '.join(clairvoyant)}): uses the jobs' "
            "actual run times, which no scheduler knows in advance -- a reference point, "
            "not a competitor"
        )
    if ties:
        caption.append(
            f"  {len(ties)} of {n} windows where every column shows the same value (e.g. "
            f"1.00: no job waited) are not listed; the mean is over all {n}"
        )
    wrapped = [textwrap.fill(c, 100, subsequent_indent="    ") for c in caption]
    lines = ["", *wrapped, format_table(starts, length, columns, hide=ties)]
    lines.append(
        textwrap.fill(
            f"paired geo-mean ratio of AVEbsld vs {reference} over the {n} windows "
            f"[95% bootstrap interval] (< 1: lower slowdowns than {reference}):",
            100,
            subsequent_indent="    ",
        )
    )
    lines.append(f"{'agent':>16}  {format_paired(final.get('paired'))}")
    if "agent*" in columns:
        lines.append(
            f"{'agent*':>16}  {format_paired(best.get('paired'))} (chosen on these windows)"
        )
    skipped = summary["skipped_baselines"]
    if skipped:
        lines.append("skipped baselines: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    s = summary["sessions"][-1]
    steps = s["timesteps_end"] - s["timesteps_start"]
    if steps == 0:  # --total-steps 0: the initial policy, evaluated and saved
        work = "no training steps (the initial policy, saved as the final model);"
    else:
        work = (
            f"{steps} steps in {s['learn_time_s']:.0f} s: "
            f"rollouts {s['rollout_time_s']:.0f} s ({s['rollout_steps_per_s']:.0f} steps/s), "
            f"updates {s['update_time_s']:.0f} s,"
        )
    lines.append(
        f"\n{work} evaluations {s['eval_time_s']:.0f} s; "
        f"summary: {summary['paths']['run_dir']}/summary.json"
    )
    return "\n".join(lines)
