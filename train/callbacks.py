"""Callbacks and evaluation helpers of the hpcgym PPO training script (``train/ppo.py``).

* :func:`evaluate_agent` -- play an agent (a ``MaskablePPO`` model or a heuristic agent
  with the same ``predict``) deterministically on fixed windows of the backfilling env;
* :func:`compute_baselines` -- the named schedulers' metrics on the same windows, straight
  from the engine;
* :class:`EpisodeMetricsCallback` -- per update, the mean metrics of the training episodes
  that finished during the rollout (read from the env's terminal ``info``);
* :class:`EvalCheckpointCallback` -- after every N-th update: evaluation on the fixed test
  windows (TensorBoard scalars next to the baselines), checkpoints and the best model;
* :class:`TqdmProgressCallback` -- a plain ``tqdm`` progress bar with ETA (SB3's own bar
  needs ``rich``, which hpcgym does not depend on);
* :func:`tensorboard_writer`, :func:`add_custom_scalars_layout`: TensorBoard helpers.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat

__all__ = [
    "BaselineResult",
    "EpisodeMetricsCallback",
    "EvalCheckpointCallback",
    "PredictAgent",
    "PurgingTensorBoardFormat",
    "TqdmProgressCallback",
    "PhaseCallback",
    "add_custom_scalars_layout",
    "compute_baselines",
    "evaluate_agent",
    "tensorboard_writer",
]

#: metrics of one evaluated window kept in the results (from the env's terminal info)
WINDOW_METRICS: tuple[str, ...] = ("avg_bsld", "avg_wait", "utilization", "backfilled")


class PredictAgent(Protocol):
    """Anything with SB3's ``predict`` (``MaskablePPO``, :class:`agents.HeuristicAgent`)."""

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]: ...


# --------------------------------------------------------------------------- evaluation
def evaluate_agent(
    agent: PredictAgent,
    envs: Sequence[Any],
    starts: Sequence[int],
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Play ``agent`` deterministically on one window per env, all windows in lockstep.

    Every env is reset with ``options={"start": s}`` (and ``seed``, which only matters for
    stochastic predictors); at each step the observations of the unfinished windows are
    stacked into one batch and ``agent.predict(batch, action_masks=masks,
    deterministic=True)`` chooses all their actions at once (one forward pass), until every
    window terminated. Results come from the terminal ``info``.

    :param agent: a ``MaskablePPO`` model or a heuristic agent (SB3 ``predict``)
    :param envs: one :class:`hpcgym.envs.backfill_env.BackfillEnv` per window (unwrapped)
    :param starts: window starts (job indices, inside the envs' split)
    :param seed: reset seed of every env
    :return: one dict per window: ``start``, ``avg_bsld``, ``avg_wait``, ``utilization``,
        ``backfilled`` (agent), ``normalizer_avg_bsld`` (``nan`` without a normalizer),
        ``reward`` (episode return), ``steps``, ``decisions``, ``violations``,
        ``overflow_decisions``
    """
    if len(envs) != len(starts):
        raise ValueError(f"{len(envs)} envs for {len(starts)} window starts")
    n = len(envs)
    obs: list[np.ndarray] = []
    for env, s in zip(envs, starts, strict=True):
        o, _ = env.reset(seed=seed, options={"start": int(s)})
        obs.append(o)
    returns = [0.0] * n
    results: list[dict[str, Any] | None] = [None] * n
    active = list(range(n))
    while active:
        batch = np.stack([obs[i] for i in active])
        masks = np.stack([envs[i].action_masks() for i in active])
        actions, _ = agent.predict(batch, action_masks=masks, deterministic=True)
        actions = np.asarray(actions).reshape(len(active))
        still: list[int] = []
        for i, a in zip(active, actions, strict=True):
            o, r, terminated, truncated, info = envs[i].step(int(a))
            obs[i] = o
            returns[i] += float(r)
            if terminated or truncated:
                results[i] = _window_result(int(starts[i]), returns[i], info)
            else:
                still.append(i)
        active = still
    return [r for r in results if r is not None]


def _window_result(start: int, ret: float, info: dict[str, Any]) -> dict[str, Any]:
    if "agent" not in info:
        raise RuntimeError(
            "the env's terminal info has no 'agent' metrics (was the episode truncated by a "
            "wrapper?): cannot evaluate the window"
        )
    agent = info["agent"]
    norm = info.get("normalizer")
    res: dict[str, Any] = {"start": start}
    for k in WINDOW_METRICS:
        res[k] = float(agent[k])
    res["normalizer_avg_bsld"] = float(norm["avg_bsld"]) if norm else math.nan
    res["reward"] = ret
    res["steps"] = int(info.get("episode_steps", 0))
    res["decisions"] = int(info.get("decisions", 0))
    res["violations"] = int(info.get("violations", 0))
    res["overflow_decisions"] = int(info.get("overflow_decisions", 0))
    return res


class BaselineResult(dict):  # type: ignore[type-arg]
    """``{"name", "spec", "per_window": [avg_bsld...], "mean", "seconds"}`` of one scheduler."""


def compute_baselines(
    workload: Any,
    starts: Sequence[int],
    length: int,
    names: Sequence[str],
    policy: str = "FCFS",
    warn: Callable[[str], None] | None = None,
) -> tuple[dict[str, BaselineResult], dict[str, str]]:
    """AVEbsld of named schedulers on the windows ``workload.window(s, length)``.

    A named scheduler with the FCFS queue policy is run with ``policy`` when that is not
    FCFS (``SJF+EASY`` for ``EASY`` under ``policy="SJF"``), like the env's normalizer, so
    that it differs from the agent in the backfilling only. Others (``SAF``, ``POLICY+NAME``
    specs) run as given. A scheduler that cannot run (e.g. its runtime predictor is not
    available) is skipped with a warning.

    :param workload: the whole :class:`hpcgym.workload.Workload`
    :param starts: window starts
    :param length: window length (jobs)
    :param names: scheduler names / specs of :func:`hpcgym.sim.get_scheduler`
    :param policy: the agent's base queue policy
    :param warn: called with the message of every skipped scheduler
    :return: ``(results by name, skipped: name -> reason)``
    """
    from hpcgym.sim import NAMED, get_scheduler

    named = {k.lower() for k in NAMED}
    out: dict[str, BaselineResult] = {}
    skipped: dict[str, str] = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            spec = get_scheduler(name)
            if name.strip().lower() in named and spec.policy == "FCFS" and policy != "FCFS":
                spec = spec.with_policy(policy)
            values = [
                float(spec.simulate(workload.window(int(s), length), seed=0).metrics["avg_bsld"])
                for s in starts
            ]
        except (ImportError, ValueError, KeyError, RuntimeError, NotImplementedError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            skipped[name] = reason
            if warn is not None:
                warn(f"baseline {name!r} skipped ({reason})")
            continue
        out[name] = BaselineResult(
            name=spec.name,
            spec=spec.to_dict(),
            per_window=values,
            mean=float(np.mean(values)),
            seconds=time.perf_counter() - t0,
        )
    return out, skipped


# --------------------------------------------------------------------------- TensorBoard
class PurgingTensorBoardFormat(TensorBoardOutputFormat):
    """SB3's TensorBoard output with a ``purge_step``: when a killed run is resumed from a
    checkpoint at step ``s``, TensorBoard hides the events at steps > ``s`` written by the
    lost part of the old session, so the curves continue without a zig-zag.

    :param folder: the run folder (events files go straight into it)
    :param purge_step: the resume step + 1 (events at steps >= it are hidden), or ``None``
    """

    def __init__(self, folder: str, purge_step: int | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=folder, purge_step=purge_step)
        self._is_closed = False


def tensorboard_writer(logger: Logger) -> Any | None:
    """The ``SummaryWriter`` of ``logger``'s TensorBoard output, or ``None``."""
    for fmt in logger.output_formats:
        if isinstance(fmt, TensorBoardOutputFormat):
            return fmt.writer
    return None


def tb_tag(name: str) -> str:
    """A scheduler name as a TensorBoard tag component (``/`` would add a level)."""
    return name.replace("/", "_").replace(" ", "_")


def add_custom_scalars_layout(logger: Logger, baseline_names: Sequence[str]) -> None:
    """Write a TensorBoard *Custom Scalars* layout: the agent's and the baselines' test
    AVEbsld in one chart, and the training episodes' AVEbsld against the normalizer's."""
    writer = tensorboard_writer(logger)
    if writer is None:
        return
    layout = {
        "hpcgym": {
            "eval: AVEbsld on the test windows (agent vs baselines)": [
                "Multiline",
                ["eval/avg_bsld/agent"] + [f"eval/avg_bsld/{tb_tag(n)}$" for n in baseline_names],
            ],
            "train episodes: AVEbsld (agent vs normalizer)": [
                "Multiline",
                ["rollout/avg_bsld$", "rollout/avg_bsld_normalizer$"],
            ],
            "train episodes: terminal reward": ["Multiline", ["rollout/reward$"]],
        }
    }
    # Regexes: escape the '+' of names like EASY++
    for chart in layout["hpcgym"].values():
        chart[1] = [p.replace("+", r"\+") for p in chart[1]]
    writer.add_custom_scalars(layout)
    writer.flush()


# --------------------------------------------------------------------------- callbacks
class EpisodeMetricsCallback(BaseCallback):
    """Mean metrics of the training episodes that finished during each rollout.

    Reads the terminal ``info`` of every finished episode (``info["agent"]``,
    ``info["normalizer"]``) from the ``infos``/``dones`` of the rollout loop and records,
    at the end of the rollout (dumped by SB3 with the rest of the update's logs):
    ``rollout/avg_bsld`` (agent), ``rollout/avg_bsld_normalizer``, ``rollout/reward``
    (episode return), ``rollout/episodes``, ``rollout/ep_steps``, ``rollout/backfilled``,
    ``rollout/violations``. With no finished episode in a rollout nothing is recorded.
    """

    def __init__(self) -> None:
        super().__init__()
        self._returns: np.ndarray | None = None
        self._buf: dict[str, list[float]] = {}
        self.last: dict[str, float] = {}

    def _on_training_start(self) -> None:
        self._returns = np.zeros(self.training_env.num_envs, dtype=np.float64)

    def _on_rollout_start(self) -> None:
        self._buf = {
            k: [] for k in ("avg_bsld", "norm", "reward", "steps", "backfilled", "violations")
        }

    def _on_step(self) -> bool:
        assert self._returns is not None
        rewards = np.asarray(self.locals["rewards"], dtype=np.float64)
        self._returns += rewards
        for i, done in enumerate(self.locals["dones"]):
            if not done:
                continue
            info = self.locals["infos"][i]
            agent = info.get("agent")
            if agent is not None:
                norm = info.get("normalizer")
                self._buf["avg_bsld"].append(float(agent["avg_bsld"]))
                self._buf["norm"].append(float(norm["avg_bsld"]) if norm else math.nan)
                self._buf["backfilled"].append(float(agent.get("backfilled", 0)))
                self._buf["violations"].append(float(info.get("violations", 0)))
                self._buf["steps"].append(float(info.get("episode_steps", 0)))
                self._buf["reward"].append(float(self._returns[i]))
            self._returns[i] = 0.0
        return True

    def _on_rollout_end(self) -> None:
        if not self._buf.get("avg_bsld"):
            return
        b = {k: np.asarray(v, dtype=np.float64) for k, v in self._buf.items()}
        self.last = {
            "avg_bsld": float(b["avg_bsld"].mean()),
            "avg_bsld_normalizer": float(np.nanmean(b["norm"]))
            if np.isfinite(b["norm"]).any()
            else math.nan,
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

    Uses ``rollout_threads`` torch threads while collecting rollouts (batches of
    ``n_envs`` observations: more threads only add overhead) and ``train_threads`` during
    the PPO update (large batches; the env workers are idle then). Records
    ``time/rollout_s``, ``time/update_s`` and ``train/epochs_run`` (passes over the rollout
    the previous update started, at most ``n_epochs``; one stopped by the KL limit counts
    but made no gradient step) and
    ``time/rollout_steps_per_s`` (environment steps per second of rollout collection,
    policy forward passes included). Put it first in the callback list; the time that
    ``overhead`` (e.g. :class:`EvalCheckpointCallback`) spends in the rollout-start hook is
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
    (SB3 ends the current rollout without an update and returns)."""

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
        tty = sys.stderr.isatty()
        self.bar = tqdm(
            total=self.total_timesteps,
            initial=self._shown,
            unit="step",
            dynamic_ncols=True,
            smoothing=0.05,
            # redirected to a file: a line every 30 s instead of 10 per second
            mininterval=0.5 if tty else 30.0,
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
    """Evaluation on fixed windows, checkpoints and the best model, after whole updates.

    Runs at the start of every rollout (i.e. right after the previous PPO update; the
    number of completed updates is ``num_timesteps // rollout_size``) and at the end of
    training:

    - every ``eval_every`` updates (and before the first update of a fresh run, and at the
      end): :func:`evaluate_agent` on ``eval_envs`` / ``eval_starts``; records
      ``eval/avg_bsld/agent``, ``eval/avg_bsld/<baseline>`` (the precomputed ``baselines``,
      repeated at every evaluation so that they draw flat reference lines in the same
      chart), ``eval/reward``, ``eval/avg_bsld_normalizer``, ``eval/best_avg_bsld``, and
      appends the result to ``evaluations.jsonl``; saves ``best_model.zip`` (and
      ``best_model.json``, the evaluation record) when the mean AVEbsld improves;
    - every ``checkpoint_every`` updates (and at the end):
      ``checkpoints/model_<steps>_steps.zip``;
    - after every update: writes the pending log values (the update's ``train/*``) at the
      current step.

    :param run_dir: run folder
    :param rollout_size: ``n_steps * n_envs`` (environment steps per update)
    :param eval_envs: one env per evaluation window
    :param eval_starts: window starts
    :param baselines: ``{name: {"mean": ...}}`` from :func:`compute_baselines`
    :param eval_every: updates between evaluations (0: only at the end)
    :param checkpoint_every: updates between checkpoints (0: only at the end)
    :param best: best mean AVEbsld so far (a resumed run passes the old best)
    :param history: previous evaluation records (resumed run)
    :param eval_seed: reset seed of the evaluation envs
    """

    def __init__(
        self,
        run_dir: Path,
        rollout_size: int,
        eval_envs: Sequence[Any],
        eval_starts: Sequence[int],
        baselines: dict[str, dict[str, Any]],
        eval_every: int,
        checkpoint_every: int,
        best: float = math.inf,
        history: list[dict[str, Any]] | None = None,
        eval_seed: int = 0,
    ) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.rollout_size = int(rollout_size)
        self.eval_envs = list(eval_envs)
        self.eval_starts = [int(s) for s in eval_starts]
        self.baselines = baselines
        self.eval_every = int(eval_every)
        self.checkpoint_every = int(checkpoint_every)
        self.best = float(best)
        self.history: list[dict[str, Any]] = list(history or [])
        self.eval_seed = eval_seed
        self.last_eval: dict[str, Any] | None = self.history[-1] if self.history else None
        self.last_checkpoint: Path | None = None
        self.checkpoints: list[str] = []
        self.eval_seconds = 0.0
        self.overhead_seconds = 0.0

    # -- helpers
    @property
    def updates(self) -> int:
        return int(self.model.num_timesteps) // self.rollout_size

    def evaluate(self) -> dict[str, Any]:
        """Evaluate the current model now, log, update the best model; return the record."""
        t0 = time.perf_counter()
        per_window = evaluate_agent(self.model, self.eval_envs, self.eval_starts, self.eval_seed)
        dt = time.perf_counter() - t0
        self.eval_seconds += dt
        bsld = [w["avg_bsld"] for w in per_window]
        mean = float(np.mean(bsld))
        rec: dict[str, Any] = {
            "timesteps": int(self.model.num_timesteps),
            "updates": self.updates,
            "avg_bsld": mean,
            "reward": float(np.mean([w["reward"] for w in per_window])),
            "normalizer_avg_bsld": float(np.mean([w["normalizer_avg_bsld"] for w in per_window])),
            "seconds": dt,
            "time": time.time(),
            "per_window": per_window,
        }
        improved = mean < self.best
        if improved:
            self.best = mean
        rec["best_avg_bsld"] = self.best
        rec["is_best"] = improved
        if improved:
            self.model.save(self.run_dir / "best_model.zip")
            tmp = self.run_dir / "best_model.json.tmp"
            tmp.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
            tmp.replace(self.run_dir / "best_model.json")
        self.history.append(rec)
        self.last_eval = rec
        with open(self.run_dir / "evaluations.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
        lg = self.logger
        lg.record("eval/avg_bsld/agent", mean)
        for name, res in self.baselines.items():
            lg.record(f"eval/avg_bsld/{tb_tag(name)}", float(res["mean"]))
        if "EASY" in self.baselines:
            easy = float(self.baselines["EASY"]["mean"])
            lg.record("eval/improvement_vs_EASY", (easy - mean) / easy)
        if math.isfinite(rec["normalizer_avg_bsld"]):
            lg.record("eval/avg_bsld_normalizer", rec["normalizer_avg_bsld"])
        lg.record("eval/reward", rec["reward"])
        lg.record("eval/best_avg_bsld", self.best)
        lg.record("eval/seconds", dt)
        return rec

    def flush(self) -> None:
        """Write the pending log values (this update's ``train/*``, ``eval/*``) at the
        current step."""
        if self.logger.name_to_value:
            self.logger.dump(int(self.model.num_timesteps))

    def checkpoint(self) -> Path:
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        path = self.ckpt_dir / f"model_{int(self.model.num_timesteps)}_steps.zip"
        self.model.save(path)
        self.last_checkpoint = path
        self.checkpoints.append(str(path))
        return path

    def _due(self, every: int) -> bool:
        return every > 0 and self.updates > 0 and self.updates % every == 0

    # -- hooks
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
        if self._due(self.eval_every) and not self._evaluated_at_current_step():
            self.evaluate()
        if self._due(self.checkpoint_every) and not self._checkpointed_at_current_step():
            self.checkpoint()
        self.flush()
        self.overhead_seconds += time.perf_counter() - t0

    def _on_training_end(self) -> None:
        if not self._evaluated_at_current_step():
            self.evaluate()
        if not self._checkpointed_at_current_step():
            self.checkpoint()
        self.flush()

    def _evaluated_at_current_step(self) -> bool:
        return (
            self.last_eval is not None
            and self.last_eval["timesteps"] == self.model.num_timesteps
            and self.last_eval in self.history
        )

    def _checkpointed_at_current_step(self) -> bool:
        return self.last_checkpoint is not None and self.last_checkpoint.name == (
            f"model_{int(self.model.num_timesteps)}_steps.zip"
        )

    def _on_step(self) -> bool:
        return True
