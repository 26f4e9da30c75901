"""Training-time evaluation: fixed windows, the baselines on them, the agent played on them.

Everything here is :mod:`hpcgym.evaluation`'s: windows from
:func:`~hpcgym.evaluation.windows.select_windows`, baselines from
:func:`~hpcgym.evaluation.runner.run_baselines`, the agent played by
:func:`~hpcgym.evaluation.play.play_windows` (all windows in lockstep, one batched forward
pass per step). This module only ties them to a run's options.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.play import Policy, play_windows
from hpcgym.evaluation.runner import run_baselines
from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.evaluation.windows import select_windows
from hpcgym.workload.sequences import VALIDATION_FRACTION
from train.build import env_kwargs
from train.config import DEFAULT_EVAL_LENGTH, PRESETS, ConfigError, TrainConfig

__all__ = ["Evaluator", "eval_length", "eval_window_starts", "paired_stats", "ratio_reference"]

#: The scheduler of the paired statistics when the run's reward has no reference
#: (``--reference none``): the default reference of every claim.
DEFAULT_RATIO_REFERENCE = "EASY-SJBF"


def ratio_reference(cfg: TrainConfig) -> str:
    """The scheduler the agent's paired ratio is computed against: ``--reference``, or
    :data:`DEFAULT_RATIO_REFERENCE` with ``--reference none``.

    :param cfg: the run's options
    """
    ref = str(cfg.reference)
    ref = DEFAULT_RATIO_REFERENCE if ref.lower() == "none" else ref
    from hpcgym.envs.reward import ENV_PREFIX, resolve_reference

    if ref[: len(ENV_PREFIX)].upper() == ENV_PREFIX:  # the env's own queue: its real name
        from hpcgym.tasks import get_task
        from train.tasks import queue_policy

        # the env's queue's starvation guard (Schedule-v0's), or None
        starvation = get_task(cfg.task).reference_starvation(cfg.trace)
        spec = resolve_reference(ref, queue_policy(cfg), starvation)
        assert spec is not None
        ref = spec.name
    return ref


def paired_stats(
    values: list[float], reference: str, reference_values: list[float]
) -> dict[str, Any] | None:
    """The paired statistics of the agent against ``reference`` on the same windows
    (:func:`hpcgym.evaluation.statistics.paired_comparison`).

    :param values: the agent's AVEbsld per window
    :param reference: the reference scheduler's name
    :param reference_values: its AVEbsld on the same windows, in the same order
    :return: ``reference, geo_ratio, ci_low, ci_high, wins, windows, verdict`` (``None``
        when a value is not a positive number, e.g. a failed window)
    """
    try:
        cmp = paired_comparison(values, reference_values)
    except ValueError:
        return None
    return {"reference": reference, **cmp.to_dict(), "verdict": cmp.verdict}


def eval_window_starts(
    n_jobs: int,
    length: int,
    k: int,
    train_fraction: float = 0.7,
    seed: int | None = None,
    split: str = "validation",
    validation_fraction: float = VALIDATION_FRACTION,
) -> list[int]:
    """Starts of the ``k`` evaluation windows of ``length`` jobs in ``split``: evenly
    spaced (``seed=None``) or drawn with ``seed``. Deterministic.

    :param n_jobs: jobs in the trace
    :param length: jobs per window
    :param k: number of windows
    :param train_fraction: share of the jobs in the training split
    :param seed: ``None``: evenly spaced; else the seed of the draw
    :param split: the split the windows are in
    :param validation_fraction: share of the training split that is the validation split
    :raises ValueError: the windows do not fit in the split
    """
    ws = select_windows(
        n_jobs, length, k, split, seed, train_fraction, validation_fraction=validation_fraction
    )
    return [int(s) for s in ws.starts]


def eval_length(cfg: TrainConfig, n_jobs: int, warn: Callable[[str], None] | None = None) -> int:
    """Jobs per evaluation window: ``--eval-length``, or by default the preset's
    (``fast``: 256) or :data:`~train.config.DEFAULT_EVAL_LENGTH` -- a default is cut to
    half the evaluation split when that is too short to hold ``--eval-windows`` distinct
    windows of it (with a warning).

    :param cfg: the run's options
    :param n_jobs: jobs in the trace
    :param warn: called with the message when the default is shortened
    :raises ConfigError: the split cannot hold ``--eval-windows`` distinct windows of the
        length, with the numbers and what to change
    """
    from hpcgym.workload import split_range

    lo, hi = split_range(n_jobs, cfg.eval_split, cfg.train_fraction, cfg.validation_fraction)
    size, k = hi - lo, cfg.eval_windows
    longest = size - k + 1  # the longest length with k distinct starts
    where = (
        f"the {cfg.eval_split!r} split of {cfg.trace} has {size} jobs (jobs {lo}..{hi - 1} "
        f"of {n_jobs}, --train-fraction {cfg.train_fraction}, --validation-fraction "
        f"{cfg.validation_fraction})"
    )
    preset = PRESETS.get(cfg.preset, {}).get("eval_length")  # a default, not a choice
    default = DEFAULT_EVAL_LENGTH if preset is None else int(preset)
    if cfg.eval_length is not None and cfg.eval_length != preset:
        length = int(cfg.eval_length)
    else:
        length = default if default <= longest else max(1, size // 2)
        if length != default and length <= longest and warn is not None:
            warn(
                f"{where}: too few for {k} windows of {default} jobs; evaluating "
                f"on {k} windows of {length} jobs (set --eval-length to choose)"
            )
    if length > longest:
        raise ConfigError(
            f"evaluation windows: {where}, too few for {k} distinct windows of {length} jobs; "
            f"pick a shorter --eval-length (at most {max(longest, 0)}) or fewer --eval-windows, "
            "a larger --train-fraction or a longer trace"
        )
    return length


@dataclass
class Evaluator:
    """The fixed evaluation windows of a run, one env per window, and the baselines.

    Build it with :meth:`for_config`.

    :param envs: one :class:`~hpcgym.envs.backfill_env.BackfillEnv` per window
    :param starts: window starts
    :param length: jobs per window
    :param split: the split the windows are in
    :param baselines: baseline results by name (``per_window``, ``mean``...)
    :param skipped: baselines that could not run: name -> reason
    :param seed: reset seed of the evaluation envs
    :param reference: the scheduler of the paired ratio (:func:`ratio_reference`)
    :param reference_result: its result on the windows (as a baseline's), ``None``: it
        could not run (no paired statistics)
    :param workload: the run's whole trace (the heuristics' TensorBoard runs simulate
        their other metrics on it; ``None``: AVEbsld only)
    :param settings: the options that define the windows (``trace``, ``eval_split``,
        ``eval_length``, ``eval_windows``, ``policy``...: the heuristics' runs' hparams)
    """

    envs: list[Any]
    starts: list[int]
    length: int
    split: str
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    reference: str = DEFAULT_RATIO_REFERENCE
    reference_result: dict[str, Any] | None = None
    workload: Any = None
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_config(
        cls, cfg: TrainConfig, workload: Any, warn: Callable[[str], None] | None = None
    ) -> Evaluator:
        """Select the windows (``--eval-windows``, ``--eval-length``, ``--eval-seed``),
        build their envs and run the baselines (``--baselines``) and the reference of the
        paired ratio (:func:`ratio_reference`; taken from the baselines when it is one) on
        them once.

        :param cfg: the run's options
        :param workload: the run's whole trace
        :param warn: called with the message of every skipped baseline
        :raises ConfigError: the windows do not fit in the split
        """
        from train.tasks import env_class, queue_policy, task_baselines

        length = eval_length(cfg, len(workload), warn)
        try:
            starts = eval_window_starts(
                len(workload),
                length,
                cfg.eval_windows,
                cfg.train_fraction,
                cfg.eval_seed,
                cfg.eval_split,
                cfg.validation_fraction,
            )
        except ValueError as exc:
            raise ConfigError(f"evaluation windows (--eval-windows/--eval-length): {exc}") from None
        kw = env_kwargs(cfg, cfg.eval_split, length)
        envs = [env_class(cfg.task)(**kw) for _ in starts]
        policy = queue_policy(cfg)
        names = task_baselines(cfg)
        baselines, skipped = run_baselines(workload, starts, length, names, policy, warn)
        ref = ratio_reference(cfg)
        ref_result = baselines.get(ref)
        if ref_result is None and ref not in skipped:
            extra, _ = run_baselines(workload, starts, length, [ref], policy, warn)
            ref_result = extra.get(ref)
        return cls(
            envs,
            starts,
            length,
            cfg.eval_split,
            baselines,
            skipped,
            reference=ref,
            reference_result=ref_result,
            workload=workload,
            settings={
                "trace": cfg.trace,
                "task": cfg.task,
                "policy": policy,
                "eval_split": cfg.eval_split,
                "eval_length": length,
                "eval_windows": len(starts),
                "reference": ref,
            },
        )

    def describe(self) -> dict[str, Any]:
        """``split``, ``length``, ``starts``, ``reference``, ``windows_key`` (for the
        summary)."""
        return {
            "split": self.split,
            "length": self.length,
            "starts": list(self.starts),
            "reference": self.reference,
            "windows_key": self.windows_key(),
        }

    def windows_key(self) -> str:
        """The name of these windows (:func:`hpcgym.evaluation.tensorboard.windows_key`):
        the split, their number and length, a hash of the starts, the queue policy and
        the trace's size."""
        from hpcgym.evaluation.tensorboard import windows_key

        wl = self.workload
        return windows_key(
            self.split,
            self.starts,
            self.length,
            trace=self.settings.get("trace"),
            policy=self.settings.get("policy"),
            jobs=None if wl is None else len(wl),
            machine_size=None if wl is None else int(wl.machine_size),
        )

    def heuristics(self) -> dict[str, dict[str, Any]]:
        """The heuristics of the evaluation by the name they ran as (``SJF+EASY`` for
        ``EASY`` under ``--policy SJF``): the baselines and the reference of the ratio."""
        out = {str(r["name"]): r for r in self.baselines.values()}
        ref = self.reference_result
        if ref is not None:
            out.setdefault(str(ref["name"]), ref)
        return out

    def heuristic_rows(self, name: str) -> list[dict[str, Any]]:
        """A heuristic's metrics per window
        (:func:`hpcgym.evaluation.tensorboard.baseline_rows`; AVEbsld only without the
        workload).

        :param name: a key of :meth:`heuristics`
        """
        from hpcgym.evaluation.tensorboard import baseline_rows

        res = self.heuristics()[name]
        if self.workload is None:
            return [{"avg_bsld": float(v)} for v in res["per_window"]]
        return baseline_rows(self.workload, res, self.starts, self.length)

    def write_baselines(self, logdir: str | Path, step: int) -> Path:
        """Write (once) or extend the heuristics' TensorBoard runs of these windows,
        ``<logdir>/baselines/<trace>-<windows key>/<method>/``
        (:func:`hpcgym.evaluation.tensorboard.write_baseline_runs`), to reach ``step``.

        :param logdir: the folder that holds the run
        :param step: the evaluation's step
        :return: the baselines folder
        """
        from hpcgym.evaluation.tensorboard import baselines_folder, write_baseline_runs

        ref = self.reference_result
        folder = baselines_folder(logdir, str(self.settings.get("trace")), self.windows_key())
        return write_baseline_runs(
            folder,
            list(self.heuristics()),
            self.heuristic_rows,
            step=step,
            reference=None if ref is None else self.reference,
            reference_values=None if ref is None else ref["per_window"],
            hparams=self.settings,
        )

    def evaluate(self, policy: Policy) -> dict[str, Any]:
        """Play ``policy`` deterministically on every window.

        :param policy: a ``MaskablePPO`` model or a heuristic agent (SB3's ``predict``)
        :return: ``avg_bsld`` (mean over the windows), ``reward``, ``reference_avg_bsld``
            (the env's reward reference), ``paired`` (:func:`paired_stats` against
            :attr:`reference`, ``None`` without its results), ``seconds``, ``time`` and
            ``per_window`` (the rows of :func:`~hpcgym.evaluation.play.play_windows`)
        """
        t0 = time.perf_counter()
        rows = play_windows(self.envs, policy, self.starts, seed=self.seed)
        per_window = [
            {k: float(v) if isinstance(v, (np.floating, np.integer)) else v for k, v in r.items()}
            for r in rows
        ]
        values = [w["avg_bsld"] for w in per_window]
        ref = self.reference_result
        paired = None if ref is None else paired_stats(values, self.reference, ref["per_window"])
        return {
            "avg_bsld": float(np.mean(values)),
            "reward": float(np.mean([w["reward"] for w in per_window])),
            "reference_avg_bsld": float(np.mean([w["reference_avg_bsld"] for w in per_window])),
            "paired": paired,
            "seconds": time.perf_counter() - t0,
            "time": time.time(),
            "per_window": per_window,
        }
