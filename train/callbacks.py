"""The SB3 callbacks of ``train/ppo.py``; each does one thing.

* :class:`EpisodeMetricsCallback` -- per update, the mean metrics of the training episodes
  that finished during the rollout (from the env's terminal ``info``);
* :class:`PhaseCallback` -- torch threads per phase, rollout vs update time;
* :class:`StopCallback` -- stops ``learn()`` at the time limit or on SIGTERM
  (:mod:`train.stopping`);
* :class:`TqdmProgressCallback` -- a ``tqdm`` progress bar with ETA, of steps or of the
  time limit (SB3's own bar needs ``rich``, which hpcgym does not depend on);
* :class:`EvalCheckpointCallback` -- after every N-th update: evaluation
  (:class:`train.evaluator.Evaluator`), best model, checkpoints, and the update's logs.
"""

from __future__ import annotations

import logging
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
from train.stopping import StopControl

__all__ = [
    "EpisodeMetricsCallback",
    "EvalCheckpointCallback",
    "PhaseCallback",
    "StopCallback",
    "TqdmProgressCallback",
    "bar_options",
]

log = logging.getLogger(__name__)

_EPISODE_KEYS: tuple[str, ...] = ("avg_bsld", "norm", "reward", "steps", "backfilled", "violations")


class EpisodeMetricsCallback(BaseCallback):
    """Mean metrics of the training episodes that finished during each rollout.

    Reads the terminal ``info`` of every finished episode (``info["agent"]``,
    ``info["reference"]``) and records at the end of the rollout (dumped by SB3 with the
    rest of the update's logs): ``rollout/avg_bsld`` (agent), ``rollout/avg_bsld_reference``
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
            "avg_bsld_reference": norm,
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
    ``time/rollout_s``, ``time/update_s``, ``time/rollout_steps_per_s``,
    ``train/epochs_run`` (passes over the rollout the previous update started, at most
    ``n_epochs``; one stopped by the KL limit counts but made no gradient step) and, with
    the rollout buffer of :mod:`train.stopping`, ``train/minibatches`` (minibatches the
    update ran) and ``train/update_cut`` (1: the time limit or SIGTERM cut it). Put it
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
        self.discarded_steps = 0
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
            previous = getattr(self.model.rollout_buffer, "previous", None)
            if previous is not None:  # the deadline buffer of train.stopping
                self.logger.record("train/minibatches", previous[0])
                self.logger.record("train/update_cut", int(previous[1]))
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
        self._t_start = None
        self._t_end = time.perf_counter()

    def discard_partial_rollout(self) -> int:
        """When training stopped during a rollout, set the step counter back to the
        rollout's start: its steps are lost with the rollout buffer, and checkpoints stay
        on the grid of whole updates. Returns the discarded steps.
        """
        if self._t_start is None:
            return 0
        n = int(self.model.num_timesteps) - self._steps0
        self.model.num_timesteps = self._steps0
        self._t_start = None
        self.discarded_steps += n
        return n

    def _on_training_end(self) -> None:
        self.discard_partial_rollout()
        # the last update is over; the final evaluation runs on small batches
        self._on_rollout_start()

    def _on_step(self) -> bool:
        return True


class StopCallback(BaseCallback):
    """Stop ``learn()`` when ``stop`` is due (``--time-limit`` or SIGTERM), within seconds.

    Starts ``stop``'s clock when training starts (put it first in the callback list, so the
    evaluations during training count towards the budget), hands it to the rollout buffer
    (:class:`train.stopping.DeadlineRolloutBuffer`: an update in progress ends after its
    current minibatch) and checks it at every environment step (SB3 then abandons the
    rollout and returns).

    :param stop: the session's stop control
    """

    def __init__(self, stop: StopControl) -> None:
        super().__init__()
        self.stop = stop

    def _on_training_start(self) -> None:
        self.stop.start()
        buffer = getattr(self.model, "rollout_buffer", None)
        if buffer is not None and hasattr(buffer, "stop"):
            buffer.stop = self.stop

    def _on_step(self) -> bool:
        return not self.stop.due()


def bar_options(
    total_timesteps: int, start_timesteps: int, seconds: float | None
) -> dict[str, Any]:
    """The ``tqdm`` arguments of the progress bar: steps done of the target, or, with a
    time limit (``seconds``), the elapsed time of the limit (the time-limited fast preset
    has a target of 1e9 steps: its ETA would be meaningless).

    :param total_timesteps: the step count at which training ends
    :param start_timesteps: the step count at the start of the session
    :param seconds: the session's time limit (``None``: none)
    """
    # redirected to a file: a line every 30 s instead of 10 per second
    common = {"dynamic_ncols": True, "mininterval": 0.5 if sys.stderr.isatty() else 30.0}
    if seconds is None:
        return {
            **common,
            "total": int(total_timesteps),
            "initial": int(start_timesteps),
            "unit": "step",
            "smoothing": 0.05,
        }
    from tqdm import tqdm

    limit = tqdm.format_interval(seconds)
    return {
        **common,
        "total": float(seconds),
        "unit": "s",
        "bar_format": "time {percentage:3.0f}%|{bar}| {elapsed} of "
        + limit
        + " [{remaining} left{postfix}]",
    }


class TqdmProgressCallback(BaseCallback):
    """A ``tqdm`` bar with ETA, continuing across resumes: environment steps of the
    target, or the elapsed time of the time limit (:func:`bar_options`).

    :param total_timesteps: the step count at which training ends
    :param postfix: called at each rollout start for the bar's postfix dict
    :param stop: the session's stop control; with a time limit, the bar shows time
    """

    def __init__(
        self,
        total_timesteps: int,
        postfix: Callable[[], dict[str, Any]] | None = None,
        stop: StopControl | None = None,
    ) -> None:
        super().__init__()
        self.total_timesteps = int(total_timesteps)
        self.postfix = postfix
        self.stop = stop
        self.seconds = stop.seconds if stop is not None else None
        self.bar: Any = None
        self._shown: float = 0

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        steps = int(self.model.num_timesteps)
        self.bar = tqdm(**bar_options(self.total_timesteps, steps, self.seconds))
        self._shown = self.bar.n

    def _progress(self) -> float:
        if self.seconds is not None and self.stop is not None:
            return min(self.stop.elapsed(), self.seconds)
        return int(self.model.num_timesteps)

    def _on_step(self) -> bool:
        now = self._progress()
        if self.bar is not None and now > self._shown:
            self.bar.update(now - self._shown)
            self._shown = now
        return True

    def _on_rollout_start(self) -> None:
        if self.bar is not None and self.postfix is not None:
            extra = self.postfix()
            if self.seconds is not None:
                extra = {"steps": int(self.model.num_timesteps), **extra}
            self.bar.set_postfix(extra, refresh=True)

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self._on_rollout_start()
            self.bar.close()
            self.bar = None


class EvalCheckpointCallback(BaseCallback):
    """Evaluation, best model and checkpoints after whole updates.

    Runs at the start of every rollout (right after the previous PPO update; the number
    of completed updates is ``num_timesteps // rollout_size``) and at the end of training:

    - every ``eval_every`` updates (and before the first update of a fresh run, and at the
      end): ``evaluator.evaluate(model)``, recorded with
      :func:`train.logs.record_evaluation` and appended to ``evaluations.jsonl``; a better
      mean AVEbsld saves the best model; the heuristics' TensorBoard runs beside the run
      are written (once) or extended to the evaluation's step
      (:meth:`train.evaluator.Evaluator.write_baselines`);
    - every ``checkpoint_every`` updates (and at the end): a checkpoint
      (:meth:`train.rundir.RunDir.checkpoint`); only the newest ``keep_checkpoints`` are
      kept (0: all; the best model is ``best_model.zip``, never pruned);
    - when ``stop`` is due, nothing until the end; after a signal, the end saves a
      checkpoint without the final evaluation (a cluster's grace period is short);
    - after every update: writes the pending log values (the update's ``train/*``) at the
      current step.

    :param run: the run folder
    :param rollout_size: ``n_steps * n_envs`` (environment steps per update)
    :param evaluator: the evaluation windows and baselines
    :param eval_every: updates between evaluations (0: only at the end)
    :param checkpoint_every: updates between checkpoints (0: only at the end)
    :param history: previous evaluation records (resumed run)
    :param best: best mean AVEbsld so far (a resumed run passes the old best)
    :param keep_checkpoints: checkpoints kept (the newest, or spread: ``keep_spread``; 0: all)
    :param keep_spread: keep ``keep_checkpoints`` spread over the run instead of the
        newest (:meth:`train.rundir.RunDir.prune_checkpoints`)
    :param stop: the session's stop control
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
        keep_checkpoints: int = 0,
        keep_spread: bool = False,
        stop: StopControl | None = None,
    ) -> None:
        super().__init__()
        self.run = run
        self.keep_checkpoints = int(keep_checkpoints)
        self.keep_spread = bool(keep_spread)
        self.stop = stop
        self.rollout_size = int(rollout_size)
        self.evaluator = evaluator
        self.eval_every = int(eval_every)
        self.checkpoint_every = int(checkpoint_every)
        self.history: list[dict[str, Any]] = list(history or [])
        self.best = float(best)
        self.last_checkpoint: Path | None = None
        self.eval_seconds = 0.0
        self.overhead_seconds = 0.0
        self.baselines_folder: Path | None = None
        self.baselines_error: str | None = None

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
        ref = self.evaluator.reference_result
        record_evaluation(
            self.logger,
            rec,
            None if ref is None else self.evaluator.reference,
            None if ref is None else ref["per_window"],
        )
        self.write_baselines(rec["timesteps"])
        return rec

    def write_baselines(self, step: int) -> None:
        """Write or extend the heuristics' TensorBoard runs beside the run
        (:meth:`train.evaluator.Evaluator.write_baselines`) to reach ``step``; a folder
        that cannot be written is reported once, and training goes on."""
        if self.baselines_error is not None:
            return
        try:
            self.baselines_folder = self.evaluator.write_baselines(self.run.path.parent, step)
        except (OSError, RuntimeError) as exc:  # an unwritable folder, a mismatch
            self.baselines_error = f"{type(exc).__name__}: {exc}"
            log.warning("the heuristics' TensorBoard runs not written: %s", self.baselines_error)

    def checkpoint(self) -> Path:
        """Save a checkpoint of the current model and prune the old ones; returns its path."""
        steps = int(self.model.num_timesteps)
        path = self.run.save_model(self.model, self.run.checkpoint(steps))
        self.last_checkpoint = path
        if self.keep_checkpoints > 0:
            self.run.prune_checkpoints(self.keep_checkpoints, upto=steps, spread=self.keep_spread)
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

    def checkpointed_now(self) -> bool:
        """Whether a checkpoint at the current step count was saved."""
        return self.last_checkpoint == self.run.checkpoint(int(self.model.num_timesteps))

    def _on_training_start(self) -> None:
        if self.model.num_timesteps == 0:
            self.evaluate()
            self.flush()

    def _on_rollout_start(self) -> None:
        # Right after an update (SB3 has no post-update hook): its train/* values are still
        # pending in the logger and are written here, at the step count of the rollout the
        # update was computed from.
        if self.updates == 0 or (self.stop is not None and self.stop.due()):
            return
        t0 = time.perf_counter()
        if self._due(self.eval_every) and not self._evaluated_now():
            self.evaluate()
        if self._due(self.checkpoint_every) and not self.checkpointed_now():
            self.checkpoint()
        self.flush()
        self.overhead_seconds += time.perf_counter() - t0

    def _on_training_end(self) -> None:
        signalled = self.stop is not None and self.stop.signal is not None
        if not signalled and not self._evaluated_now():
            self.evaluate()
        if not self.checkpointed_now():
            self.checkpoint()
        self.flush()

    def _on_step(self) -> bool:
        return True
