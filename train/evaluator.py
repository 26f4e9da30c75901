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
from typing import Any

import numpy as np

from hpcgym.evaluation.play import Policy, play_windows
from hpcgym.evaluation.runner import run_baselines
from hpcgym.evaluation.windows import select_windows
from train.build import env_kwargs
from train.config import ConfigError, TrainConfig

__all__ = ["Evaluator", "eval_window_starts"]


def eval_window_starts(
    n_jobs: int,
    length: int,
    k: int,
    train_fraction: float = 0.7,
    seed: int | None = None,
    split: str = "test",
) -> list[int]:
    """Starts of the ``k`` evaluation windows of ``length`` jobs in ``split``: evenly
    spaced (``seed=None``) or drawn with ``seed``. Deterministic.

    :param n_jobs: jobs in the trace
    :param length: jobs per window
    :param k: number of windows
    :param train_fraction: share of the jobs in the training split
    :param seed: ``None``: evenly spaced; else the seed of the draw
    :param split: the split the windows are in
    :raises ValueError: the windows do not fit in the split
    """
    ws = select_windows(n_jobs, length, k, split=split, seed=seed, train_fraction=train_fraction)
    return [int(s) for s in ws.starts]


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
    """

    envs: list[Any]
    starts: list[int]
    length: int
    split: str
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seed: int = 0

    @classmethod
    def for_config(
        cls, cfg: TrainConfig, workload: Any, warn: Callable[[str], None] | None = None
    ) -> Evaluator:
        """Select the windows (``--eval-windows``, ``--eval-length``, ``--eval-seed``),
        build their envs and run the baselines (``--baselines``) on them once.

        :param cfg: the run's options
        :param workload: the run's whole trace
        :param warn: called with the message of every skipped baseline
        :raises ConfigError: the windows do not fit in the split
        """
        from hpcgym.envs.backfill_env import BackfillEnv

        try:
            starts = eval_window_starts(
                len(workload),
                cfg.eval_length,
                cfg.eval_windows,
                cfg.train_fraction,
                cfg.eval_seed,
                cfg.eval_split,
            )
        except ValueError as exc:
            raise ConfigError(f"evaluation windows (--eval-windows/--eval-length): {exc}") from None
        kw = env_kwargs(cfg, cfg.eval_split, cfg.eval_length)
        envs = [BackfillEnv(**kw) for _ in starts]
        baselines, skipped = run_baselines(
            workload, starts, cfg.eval_length, cfg.baselines, cfg.policy, warn
        )
        return cls(envs, starts, cfg.eval_length, cfg.eval_split, baselines, skipped)

    def describe(self) -> dict[str, Any]:
        """``split``, ``length``, ``starts`` (for the summary)."""
        return {"split": self.split, "length": self.length, "starts": list(self.starts)}

    def evaluate(self, policy: Policy) -> dict[str, Any]:
        """Play ``policy`` deterministically on every window.

        :param policy: a ``MaskablePPO`` model or a heuristic agent (SB3's ``predict``)
        :return: ``avg_bsld`` (mean over the windows), ``reward``, ``normalizer_avg_bsld``,
            ``seconds``, ``time`` and ``per_window`` (the rows of
            :func:`~hpcgym.evaluation.play.play_windows`)
        """
        t0 = time.perf_counter()
        rows = play_windows(self.envs, policy, self.starts, seed=self.seed)
        per_window = [
            {k: float(v) if isinstance(v, (np.floating, np.integer)) else v for k, v in r.items()}
            for r in rows
        ]
        return {
            "avg_bsld": float(np.mean([w["avg_bsld"] for w in per_window])),
            "reward": float(np.mean([w["reward"] for w in per_window])),
            "normalizer_avg_bsld": float(np.mean([w["normalizer_avg_bsld"] for w in per_window])),
            "seconds": time.perf_counter() - t0,
            "time": time.time(),
            "per_window": per_window,
        }
