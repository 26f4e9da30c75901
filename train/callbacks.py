"""The SB3 callbacks of ``train/ppo.py``; each does one thing.

* :class:`EpisodeMetricsCallback` -- per update, the mean metrics of the training episodes
  that finished during the rollout (from the env's terminal ``info``);
* :class:`PhaseCallback` -- torch threads per phase, rollout vs update time;
* :class:`TimeLimitCallback` -- stops ``learn()`` after a wall-time budget;
* :class:`TqdmProgressCallback` -- a ``tqdm`` progress bar with ETA (SB3's own bar needs
  ``rich``, which hpcgym does not depend on);
* :class:`EvalCheckpointCallback` -- after every N-th update: evaluation
  (:class:`train.evaluator.Evaluator`), best model, checkpoints, and the update's logs.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from train.evaluator import Evaluator
from train.logs import record_evaluation
from train.rundir import RunDir

__all__ = [
    "EpisodeMetricsCallback",
    "EvalCheckpointCallback",
    "PhaseCallback",
    "TimeLimitCallback",
    "TqdmProgressCallback",
]

_EPISODE_KEYS: tuple[str, ...] = ("avg_bsld", "norm", "reward", "steps", "backfilled", "violations")


class EpisodeMetricsCallback(BaseCallback):
    """Mean metrics of the training episodes that finished during each rollout.

    Reads the terminal ``info`` of every finished episode (``info["agent"]``,
    ``info["reference"]``) and records at the end of the rollout (dumped by SB3 with the
    rest of the update's logs): ``rollout/avg_bsld`` (agent), ``rollout/avg_bsld_normalizer``
    (the reference scheduler's), ``rollout/reward`` (episode return), ``rollout/episodes``,
    ``rollout/ep_steps``, ``rollout/backfilled``, ``rollout/violations``. Nothing without a
    finished episode.
    """

    def __init__(self) -> None:
        super().__init__()
        self._returns: np.ndarray | None = None
        self._buf: dict[str, list[float]] = {}
        self.last: dict[str, float] = {}

    def _on_training_start(self) -> None:
        self._returns = np.zeros(self.training_env.num_envs, dtype=np.float64)

    def _on_rollout_start(self) -> None:
        self._buf = {k: [] for k in _EPISODE_KEYS}

    def _on_step(self) -> bool:
        assert self._returns is not None
        self._returns += np.asarray(self.locals["rewards"], dtype=np.float64)
        for i, done in enumerate(self.locals["dones"]):
            if done:
                self._episode_done(i, self.locals["infos"][i])
        return True

    def _episode_done(self, i: int, info: dict[str, Any]) -> None:
        agent = info.get("agent")
        if agent is not None:
            norm = info.get("reference")
            self._buf["avg_bsld"].append(float(agent["avg_bsld"]))
            self._buf["norm"].append(float(norm["avg_bsld"]) if norm else math.nan)
            self._buf["backfilled"].append(float(agent.get("backfilled", 0)))
            self._buf["violations"].append(float(info.get("violations", 0)))
            self._buf["steps"].append(float(info.get("episode_steps", 0)))
            self._buf["reward"].append(float(self._returns[i]))  # type: ignore[index]
        self._returns[i] = 0.0  # type: ignore[index]

    def _on_rollout_end(self) -> None:
        if not self._buf.get("avg_bsld"):
            return
        b = {k: np.asarray(v, dtype=np.float64) for k, v in self._buf.items()}
        norm = float(np.nanmean(b["norm"])) if np.isfinite(b["norm"]).any() else math.nan
        self.last = {
            "avg_bsld": float(b["avg_bsld"].mean()),
            "avg_bsld_normalizer": norm,
            "reward": float(b["reward"].mean()),
            "episodes": float(len(b["avg_bsld"])),
            "ep_steps": float(b["steps"].mean()),
            "backfilled": float(b["backfilled"].mean()),
            "violations": float(b["violations"].mean()),
        }
        for k, v in self.last.items():
            if not math.isnan(v):
                self.logger.record(f"rollout/{k}", v)


class PhaseCallback(BaseCallback):
    """Torch threads per phase, and the time spent collecting rollouts vs updating.

    Uses ``rollout_threads`` torch threads while collecting rollouts (small batches: more
    threads only add overhead) and ``train_threads`` during the PPO update. Records
    ``time/rollout_s``, ``time/update_s``, ``time/rollout_steps_per_s`` and
    ``train/epochs_run`` (passes over the rollout the previous update started, at most
    ``n_epochs``; one stopped by the KL limit counts but made no gradient step). Put it
    first in the callback list; the time ``overhead`` spends in the rollout-start hook is
    excluded.

    :param rollout_threads: torch threads during rollouts
    :param train_threads: torch threads during updates
    :param overhead: an object whose ``overhead_seconds`` attribute grows by the time it
        spends in the hooks (evaluation, checkpoints)
    """

    def __init__(self, rollout_threads: int, train_threads: int, overhead: Any = None) -> None:
        super().__init__()
        self.rollout_threads = rollout_threads
        self.train_threads = train_threads
        self.overhead = overhead
        self.rollout_seconds = 0.0
        self.update_seconds = 0.0
        self.rollout_steps = 0
        self._t_start: float | None = None
        self._t_end: float | None = None
        self._steps0 = 0
        self._ovh0 = 0.0
        self._n_upd0 = 0

    def _ovh(self) -> float:
        return float(getattr(self.overhead, "overhead_seconds", 0.0))

    def _on_rollout_start(self) -> None:
        now = time.perf_counter()
        if self._t_end is not None:
            dt = now - self._t_end
            self.update_seconds += dt
            self.logger.record("time/update_s", dt)
            self.logger.record("train/epochs_run", int(self.model._n_updates) - self._n_upd0)
            self._t_end = None
        th.set_num_threads(self.rollout_threads)
        self._t_start = now
        self._steps0 = int(self.model.num_timesteps)
        self._ovh0 = self._ovh()

    def _on_rollout_end(self) -> None:
        now = time.perf_counter()
        if self._t_start is not None:
            dt = max(now - self._t_start - (self._ovh() - self._ovh0), 1e-9)
            steps = int(self.model.num_timesteps) - self._steps0
            self.rollout_seconds += dt
            self.rollout_steps += steps
            self.logger.record("time/rollout_s", dt)
            self.logger.record("time/rollout_steps_per_s", steps / dt)
        th.set_num_threads(self.train_threads)
        self._n_upd0 = int(self.model._n_updates)
        self._t_end = time.perf_counter()

    def _on_training_end(self) -> None:
        # the last update is over; the final evaluation runs on small batches
        self._on_rollout_start()

    def _on_step(self) -> bool:
        return True


class TimeLimitCallback(BaseCallback):
    """Stop ``learn()`` once ``seconds`` of wall time have passed since training started
    (SB3 ends the current rollout without an update and returns).

    :param seconds: the budget
    """

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.t0 = 0.0
        self.stopped = False

    def _on_training_start(self) -> None:
        self.t0 = time.perf_counter()

    def _on_step(self) -> bool:
        if time.perf_counter() - self.t0 >= self.seconds:
            self.stopped = True
            return False
        return True


class TqdmProgressCallback(BaseCallback):
    """A ``tqdm`` bar over the environment steps (with ETA), continuing across resumes.

    :param total_timesteps: the step count at which training ends
    :param postfix: called at each rollout start for the bar's postfix dict
    """

    def __init__(
        self, total_timesteps: int, postfix: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        super().__init__()
        self.total_timesteps = int(total_timesteps)
        self.postfix = postfix
        self.bar: Any = None
        self._shown = 0

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        self._shown = int(self.model.num_timesteps)
        self.bar = tqdm(
            total=self.total_timesteps,
            initial=self._shown,
            unit="step",
            dynamic_ncols=True,
            smoothing=0.05,
            # redirected to a file: a line every 30 s instead of 10 per second
            mininterval=0.5 if sys.stderr.isatty() else 30.0,
        )

    def _on_step(self) -> bool:
        now = int(self.model.num_timesteps)
        if self.bar is not None and now > self._shown:
            self.bar.update(now - self._shown)
            self._shown = now
        return True

    def _on_rollout_start(self) -> None:
        if self.bar is not None and self.postfix is not None:
            self.bar.set_postfix(self.postfix(), refresh=True)

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class EvalCheckpointCallback(BaseCallback):
    """Evaluation, best model and checkpoints after whole updates.

    Runs at the start of every rollout (right after the previous PPO update; the number
    of completed updates is ``num_timesteps // rollout_size``) and at the end of training:

    - every ``eval_every`` updates (and before the first update of a fresh run, and at the
      end): ``evaluator.evaluate(model)``, recorded with
      :func:`train.logs.record_evaluation` and appended to ``evaluations.jsonl``; a better
      mean AVEbsld saves the best model;
    - every ``checkpoint_every`` updates (and at the end): a checkpoint
      (:meth:`train.rundir.RunDir.checkpoint`);
    - after every update: writes the pending log values (the update's ``train/*``) at the
      current step.

    :param run: the run folder
    :param rollout_size: ``n_steps * n_envs`` (environment steps per update)
    :param evaluator: the evaluation windows and baselines
    :param eval_every: updates between evaluations (0: only at the end)
    :param checkpoint_every: updates between checkpoints (0: only at the end)
    :param history: previous evaluation records (resumed run)
    :param best: best mean AVEbsld so far (a resumed run passes the old best)
    """

    def __init__(
        self,
        run: RunDir,
        rollout_size: int,
        evaluator: Evaluator,
        eval_every: int,
        checkpoint_every: int,
        history: list[dict[str, Any]] | None = None,
        best: float = math.inf,
    ) -> None:
        super().__init__()
        self.run = run
        self.rollout_size = int(rollout_size)
        self.evaluator = evaluator
        self.eval_every = int(eval_every)
        self.checkpoint_every = int(checkpoint_every)
        self.history: list[dict[str, Any]] = list(history or [])
        self.best = float(best)
        self.last_checkpoint: Path | None = None
        self.eval_seconds = 0.0
        self.overhead_seconds = 0.0

    @property
    def updates(self) -> int:
        """Completed PPO updates."""
        return int(self.model.num_timesteps) // self.rollout_size

    @property
    def last_eval(self) -> dict[str, Any] | None:
        """The latest evaluation record."""
        return self.history[-1] if self.history else None

    def evaluate(self) -> dict[str, Any]:
        """Evaluate the current model now, log, update the best model; return the record."""
        rec = {
            "timesteps": int(self.model.num_timesteps),
            "updates": self.updates,
            **self.evaluator.evaluate(self.model),
        }
        self.eval_seconds += rec["seconds"]
        improved = rec["avg_bsld"] < self.best
        if improved:
            self.best = rec["avg_bsld"]
        rec["best_avg_bsld"] = self.best
        rec["is_best"] = improved
        if improved:
            self.run.save_best(self.model, rec)
        self.history.append(rec)
        self.run.append_evaluation(rec)
        record_evaluation(self.logger, rec, self.evaluator.baselines)
        return rec

    def checkpoint(self) -> Path:
        """Save a checkpoint of the current model; returns its path."""
        path = self.run.checkpoint(int(self.model.num_timesteps))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.model.save(path)
        self.last_checkpoint = path
        return path

    def flush(self) -> None:
        """Write the pending log values (this update's ``train/*``, ``eval/*``) at the
        current step."""
        if self.logger.name_to_value:
            self.logger.dump(int(self.model.num_timesteps))

    def _due(self, every: int) -> bool:
        return every > 0 and self.updates > 0 and self.updates % every == 0

    def _evaluated_now(self) -> bool:
        last = self.last_eval
        return last is not None and last["timesteps"] == self.model.num_timesteps

    def _checkpointed_now(self) -> bool:
        return self.last_checkpoint == self.run.checkpoint(int(self.model.num_timesteps))

    def _on_training_start(self) -> None:
        if self.model.num_timesteps == 0:
            self.evaluate()
            self.flush()

    def _on_rollout_start(self) -> None:
        # Right after an update (SB3 has no post-update hook): its train/* values are still
        # pending in the logger and are written here, at the step count of the rollout the
        # update was computed from.
        if self.updates == 0:
            return
        t0 = time.perf_counter()
        if self._due(self.eval_every) and not self._evaluated_now():
            self.evaluate()
        if self._due(self.checkpoint_every) and not self._checkpointed_now():
            self.checkpoint()
        self.flush()
        self.overhead_seconds += time.perf_counter() - t0

    def _on_training_end(self) -> None:
        if not self._evaluated_now():
            self.evaluate()
        if not self._checkpointed_now():
            self.checkpoint()
        self.flush()

    def _on_step(self) -> bool:
        return True
