"""The generic Gymnasium env of a decision task: :class:`TaskEnv`.

Everything that is the same for every task (:mod:`hpcgym.tasks`) lives here: the trace and
its windows, seeding, the agent's scheduler and the reference scheduler, the terminal and
dense rewards, invalid actions, the episode's end, infos and pickling. The task says where
the agent decides, what it sees and what its actions do. The env's public episode state
(:attr:`TaskEnv.state`, an :class:`EpisodeState`) and its episode core
(:meth:`TaskEnv.reset_episode`, :meth:`TaskEnv.transition`) are what the vector env and the
compiled batch step (:mod:`hpcgym.envs.vector`, :mod:`hpcgym.envs.batch`) use.
``hpcgym.envs.backfill_env.BackfillEnv`` and ``hpcgym.envs.schedule_env.ScheduleEnv`` are
this env with a task and its documented arguments.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import os
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from hpcgym.envs import observation as FT
from hpcgym.envs._args import _UNSET, _choice, _Unset, agent_spec
from hpcgym.envs.predictions import episode_predictions
from hpcgym.envs.reward import (
    OBJECTIVES,
    REWARD_MODES,
    REWARD_SCALES,
    JobCredit,
    deterministic_metrics,
    reference_metrics,
    resolve_reference,
    terminal_reward,
    workload_fingerprint,
)
from hpcgym.sim.engine import EstimatorFeed, Event, Simulation
from hpcgym.sim.estimators import BUILTIN_ESTIMATORS, Estimator, canonical_name, make_estimator
from hpcgym.sim.schedulers import SchedulerSpec
from hpcgym.tasks import DecisionTask, get_task
from hpcgym.tasks.base import Buffers
from hpcgym.workload.core import Workload
from hpcgym.workload.sequences import VALIDATION_FRACTION, WindowSampler

__all__ = ["INVALID_ACTIONS", "EpisodeState", "TaskEnv"]

#: what an invalid action does: ``stop`` (default) and ``penalty`` act as the task's
#: fallback action (``penalty`` with ``invalid_penalty`` -1 unless given), ``raise`` raises
#: ``ValueError`` (debugging)
INVALID_ACTIONS: tuple[str, ...] = ("stop", "penalty", "raise")


@dataclasses.dataclass
class EpisodeState:
    """The state of an env's episode, public for the vector env and the compiled batch
    (which binds the arrays to its slots and writes the counters back).

    :param sim: the engine of the episode (``None``: no episode yet)
    :param start: the window's first job in the trace
    :param done: the episode is over (or never started)
    :param at_decision: the engine stopped at a decision point
    :param obs: the observation ``(K, F)``
    :param mask: the valid actions
    :param rows: the window job of every row (``-1``: padding)
    :param count: the candidates of the decision point (may exceed ``K``)
    :param steps: steps of the episode
    :param overflow: decision points with more candidates than rows
    :param final_info: the episode-end infos (after the last step)
    :param credit: the dense reward's job shares (``reward_mode="dense"``)
    :param pred: the feature predictor's prediction of every job of the window
    :param pred_feed: the online feature predictor's feed of the engine
    :param out: the arrays the rows are written into (a vector env's slices), or ``None``
    """

    sim: Simulation | None
    obs: np.ndarray
    mask: np.ndarray
    rows: np.ndarray
    start: int = -1
    done: bool = True
    at_decision: bool = False
    count: int = 0
    steps: int = 0
    overflow: int = 0
    final_info: dict[str, Any] = dataclasses.field(default_factory=dict)
    credit: JobCredit | None = None
    pred: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    pred_feed: EstimatorFeed | None = None
    out: Buffers | None = None


class TaskEnv(gym.Env[np.ndarray, np.int64]):
    """A decision task (:class:`~hpcgym.tasks.DecisionTask`) as a Gymnasium env.

    ``TaskEnv("backfill", trace="SDSC-SP2", mode="free")`` is
    :class:`~hpcgym.envs.backfill_env.BackfillEnv` (``hpcgym/Backfill-v0``); the
    specification of every task (spaces, columns, rewards) is its env class's docstring.
    The arguments below are those of every task; the task's own (its ``options``) follow
    as keywords.

    :param task: a registered task's name, or a task object
    :param trace: trace name, SWF path, Workload, or ``None`` (synthetic)
    :param reference: the reward's reference scheduler (default: the task's
        ``default_reference``; ``None``: the raw objective)
    :param task_options: the task's own arguments (only with a task name)
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        task: str | DecisionTask,
        trace: str | os.PathLike[str] | Workload | None = None,
        machine_size: int | None = None,
        estimator: str = "request",
        correction: str = "incremental",
        starvation: float | str | None = None,
        window_length: int | None = None,
        split: str = "train",
        train_fraction: float = 0.7,
        validation_fraction: float = VALIDATION_FRACTION,
        reference: str | SchedulerSpec | None | _Unset = _UNSET,
        objective: str = "bsld",
        max_queue: int = 128,
        invalid_action: str = "stop",
        invalid_penalty: float | None = None,
        wait_scale: float | None = None,
        trace_kwargs: dict[str, Any] | None = None,
        estimator_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
        est_scale: float | None = None,
        reward_mode: str = "terminal",
        load_weighting: float = 0.0,
        reward_scale: str = "linear",
        time_scale: str = "linear",
        rank_estimator: str | None = None,
        rank_estimator_kwargs: dict[str, Any] | None = None,
        **task_options: Any,
    ) -> None:
        super().__init__()
        from hpcgym.workload import load

        if isinstance(task, str):
            task = get_task(task)(**task_options)
        elif task_options:
            raise TypeError(f"unexpected argument(s) {sorted(task_options)} with a task object")
        #: the decision task (its configuration and its episode scratch)
        self.task: DecisionTask = task
        if window_length is None:
            window_length = 256
        if reference is _UNSET:
            reference = task.default_reference
        if render_mode not in (None, *self.metadata["render_modes"]):
            # not an error: SB3's make_vec_env always asks for "rgb_array"
            gym.logger.warn(
                f"render_mode {render_mode!r} is not supported by {type(self).__name__} "
                f"(supported: {self.metadata['render_modes']}); render() will return None"
            )
        self.render_mode = render_mode
        self.objective = _choice("objective", objective, OBJECTIVES)
        self.invalid_action = _choice("invalid_action", invalid_action, INVALID_ACTIONS)
        self.reward_mode = _choice("reward_mode", reward_mode, REWARD_MODES)
        if self.reward_mode == "dense":
            JobCredit.check_objective(self.objective)
        self.reward_scale = _choice("reward_scale", reward_scale, REWARD_SCALES)
        if int(max_queue) < 1:
            raise ValueError(f"max_queue must be >= 1, got {max_queue}")
        if int(window_length) < 1:
            raise ValueError(f"window_length must be >= 1, got {window_length}")
        if invalid_penalty is None:
            invalid_penalty = -1.0 if self.invalid_action == "penalty" else 0.0
        if not np.isfinite(invalid_penalty) or invalid_penalty > 0:
            raise ValueError(f"invalid_penalty must be a finite number <= 0, got {invalid_penalty}")
        self.max_queue = int(max_queue)
        self.window_length = int(window_length)
        self.invalid_penalty = float(invalid_penalty)

        # ---- workload (kept by spec so that pickling can reload it by name)
        self._trace = trace
        self._machine_size = machine_size
        self._trace_kwargs = dict(trace_kwargs or {})
        workload = load(trace, machine_size=machine_size, **self._trace_kwargs)
        self._workload = workload
        self._fingerprint = workload_fingerprint(workload)
        label = trace.name if isinstance(trace, Workload) else trace
        label = None if label is None else str(label)
        self.trace_label = "synthetic" if label is None else label
        self.split = split
        self._sampler = WindowSampler(
            workload,
            self.window_length,
            split,
            train_fraction,
            0,
            None,
            validation_fraction,
            load_weighting,
        )
        self.train_fraction, self.validation_fraction = self._sampler.fractions

        # ---- the agent's scheduler (the task decides) and the reference
        queue = task.queue_setup(workload, label, starvation, reference)
        self._spec = agent_spec(
            queue.policy,
            estimator,
            estimator_kwargs,
            correction,
            queue.starvation,
            rank_estimator,
            rank_estimator_kwargs,
        )
        # validate every name now (not at the first reset)
        Simulation(
            workload.window(self._sampler.lo, 1),
            policy=queue.policy,
            backfill="external",
            estimate=self._spec._estimator(),
            correction=correction,
            starvation=self._spec.starvation,
            rank_estimate=self._spec._rank_estimator(),
        )
        self.policy = queue.policy.upper()
        self.estimator = self._spec.estimate
        #: the estimator the queue ranks by, or ``None`` (``estimator`` ranks too)
        self.rank_estimator = self._spec.rank_estimate if self._spec.ranks_apart else None
        #: the starvation threshold of the agent's queue (seconds, ``"auto"`` or ``None``)
        self.starvation = self._spec.starvation
        self.reference = resolve_reference(queue.reference, self.policy, self._spec.starvation)
        self._norm_key = None if self.reference is None else repr(self.reference.to_dict())

        # ---- rows
        fpred = task.feature_predictor
        if isinstance(fpred, str):
            fp = canonical_name(fpred)
            fpred = make_estimator(fp) if fp not in BUILTIN_ESTIMATORS else fp
        self._fpred = fpred
        self.est_scale = float(workload.request.max() if est_scale is None else est_scale)
        self.wait_scale = float(wait_scale) if wait_scale is not None else self.est_scale
        for name, value in (("est_scale", self.est_scale), ("wait_scale", self.wait_scale)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0 seconds, got {value}")
        self.time_scale = _choice("time_scale", time_scale, FT.TIME_SCALES)
        task.setup(self)
        #: name of every observation column, in order
        self.feature_names: tuple[str, ...] = tuple(task.columns)
        self.n_features = len(self.feature_names)
        self.observation_space = task.observation_space(self.max_queue)
        self.action_space = task.action_space(self.max_queue)
        self.init_episode_state()

    def init_episode_state(self, out: Buffers | None = None) -> None:
        """No episode yet: fresh arrays, or (a vector env's sub-env) the given slices.

        :param out: ``(obs, mask, rows)`` to write the rows into, or ``None``
        """
        kq = self.max_queue
        n_actions = int(self.action_space.n)  # type: ignore[attr-defined]
        if out is None:
            obs = np.zeros((kq, self.n_features), dtype=np.float32)
            mask = np.zeros(n_actions, dtype=bool)
            rows = np.full(kq, -1, dtype=np.int64)
        else:
            obs, mask, rows = out
            obs.fill(0.0)
            mask.fill(False)
            rows.fill(-1)
        #: the episode's public state (:class:`EpisodeState`)
        self.state = EpisodeState(None, obs, mask, rows, pred=np.zeros(0, dtype=np.float64))
        self.state.out = out

    def spawn(self, obs_out: np.ndarray, mask_out: np.ndarray) -> TaskEnv:
        """A twin for a vector env: the same configuration and the same (read-only)
        workload, its own generator, task scratch, episode state and feature predictor,
        writing its observation and mask into the given slices.

        :param obs_out: ``(K, F)`` float32 C-contiguous slice of the batched observation
        :param mask_out: bool slice of the batched mask (one entry per action)
        :return: the new env (no episode yet: call ``reset``)
        """
        twin = copy.copy(self)
        if isinstance(self._fpred, Estimator):
            twin._fpred = copy.deepcopy(self._fpred)  # bound to one window at a time
        twin.observation_space = copy.deepcopy(self.observation_space)
        twin.action_space = copy.deepcopy(self.action_space)
        twin._np_random = None
        twin._np_random_seed = None
        twin.task = self.task.spawn()
        twin.init_episode_state((obs_out, mask_out, np.full(self.max_queue, -1, dtype=np.int64)))
        return twin

    # ---------------------------------------------------------------- set-up
    @property
    def sequence_length(self) -> int:
        """Old name of :attr:`window_length`."""
        return self.window_length

    @property
    def normalizer(self) -> SchedulerSpec | None:
        """Old name of :attr:`reference`."""
        return self.reference

    @property
    def workload(self) -> Workload:
        """The whole loaded workload (all splits)."""
        return self._workload

    @property
    def agent_scheduler(self) -> SchedulerSpec:
        """The agent's scheduler (queue policy, estimates, starvation guard; its
        decisions are the task's)."""
        return self._spec

    @property
    def simulation(self) -> Simulation:
        """The engine of the current episode (read-only use, please)."""
        if self.state.sim is None:
            raise RuntimeError("no episode yet: call reset()")
        return self.state.sim

    @property
    def valid_starts(self) -> tuple[int, int]:
        """First and last valid window start of the split."""
        return self._sampler.lo, self._sampler.hi - self.window_length

    @property
    def predictions(self) -> np.ndarray:
        """The feature predictor's predictions of the episode's jobs (the array itself)."""
        return self.state.pred

    @property
    def feature_predictor(self) -> Any:
        """The rows' runtime predictor (a built-in name, an Estimator, or ``None``)."""
        return self._fpred

    def candidate_jobs(self) -> np.ndarray:
        """Window job index of every observation row (``-1`` for padding)."""
        return self.state.rows.copy()

    def feature_predictions(self) -> np.ndarray:
        """The feature predictor's runtime prediction (s) of every job of the episode's
        window (``nan`` until an online one has predicted it; empty without one)."""
        return self.state.pred.copy()

    # the episode's state under its former private names (read-only)
    _sim = property(lambda self: self.state.sim)
    _start = property(lambda self: self.state.start)
    _obs = property(lambda self: self.state.obs)
    _ncand = property(lambda self: self.state.count)
    _pred = property(lambda self: self.state.pred)
    _steps = property(lambda self: self.state.steps)

    # -------------------------------------------------------------- gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self.reset_episode(seed, options)
        return self.state.obs, self.info()

    def reset_episode(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """:meth:`reset` without its info: seed, draw the window, run the engine to the
        first decision point and observe it (also the vector env's reset).

        :param seed: seed of ``self.np_random`` (``None``: keep the generator)
        :param options: ``None`` or ``{"start": i}``
        """
        start, sim_seed = self.draw_window(seed, options)
        window = self._workload.window(start, self.window_length)
        st = self.state
        st.sim = sim = self.task.make_simulation(self, window, sim_seed)
        st.start = start
        st.steps = 0
        st.overflow = 0
        st.pred, st.pred_feed = episode_predictions(self._fpred, window, sim_seed, sim)
        self.task.begin_episode(self, sim, start)
        st.done = False
        st.final_info = {}
        if self.reward_mode == "dense":
            key = self.reference_key()
            st.credit = JobCredit.of(self.objective, window, self.reference, key)
        self.observe(sim.advance())

    def draw_window(self, seed: int | None, options: dict[str, Any] | None) -> tuple[int, int]:
        """Seed the generator, draw the window's start (or take ``options["start"]``) and
        the engine's seed: ``(start, seed)`` (also the compiled batch's reset)."""
        super().reset(seed=seed)
        start = None
        if options:
            unknown = set(options) - {"start"}
            if unknown:
                raise ValueError(f"unknown reset option(s) {sorted(unknown)}; valid: 'start'")
            start = options.get("start")
        lo, last = self.valid_starts
        if start is None:
            start = self._sampler.draw(self.np_random)
        else:
            start = operator.index(start)
            if not lo <= start <= last:
                raise ValueError(
                    f"start {start} is outside the {self.split!r} split of {self.trace_label}: "
                    f"valid starts are {lo}..{last} (window_length={self.window_length})"
                )
        return start, int(self.np_random.integers(0, 2**63 - 1))

    def observe(self, ev: Event) -> None:
        """Observe the engine's stop ``ev``: the task's rows at its decision point, else
        the terminal state (padding, only the fallback action valid). Into fresh arrays
        (single env) or, batched, into the vector env's slices."""
        st = self.state
        kq = self.max_queue
        if ev == self.task.decision_event:
            assert st.sim is not None
            st.obs, st.mask, st.rows, st.count = self.task.observe(self, st.sim, st.out)
            if st.count > kq:
                st.overflow += 1
            st.at_decision = True
            return
        if st.out is not None:
            st.obs.fill(0.0)
            st.mask.fill(False)
            st.rows.fill(-1)
        else:
            st.obs = np.zeros((kq, self.n_features), dtype=np.float32)
            st.mask = np.zeros(st.mask.shape[0], dtype=bool)
            st.rows = np.full(kq, -1, dtype=np.int64)
        st.mask[self.task.fallback_action(kq)] = True
        st.count = 0
        st.at_decision = False

    def info(self) -> dict[str, Any]:
        """The info of the current state (every step's entries)."""
        st = self.state
        assert st.sim is not None
        view = st.sim.view
        return {
            "action_mask": st.mask.copy(),
            "decision": st.at_decision,
            "candidates": st.count,
            "time": view.now,
            "decisions": self.task.decisions(view),
            "backfills": view.backfills,
            "violations": view.violations,
            "start": st.start,
            "window": f"{self.trace_label}[{st.start}:{st.start + self.window_length}]",
        }

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool, one per action; see the env's *Action Space*).

        Through Gymnasium's wrappers: ``env.get_wrapper_attr("action_masks")()``.

        :raises RuntimeError: before the first :meth:`reset`
        """
        if self.state.sim is None:
            raise RuntimeError(
                "action_masks() before reset(): call env.reset() first (the mask of the "
                "first decision point is also info['action_mask'] of reset)"
            )
        return self.state.mask.copy()

    def invalid_error(self, action: Any) -> ValueError:
        """The error of an invalid action under ``invalid_action="raise"``."""
        valid = np.flatnonzero(self.state.mask).tolist()
        return ValueError(self.task.invalid_message(action, valid))

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        reward, terminated, violation, invalid = self.transition(action)
        return self.state.obs, reward, terminated, False, self.step_info(violation, invalid)

    def step_info(self, violation: bool, invalid: bool) -> dict[str, Any]:
        """The info of the step just taken (after :meth:`transition`).

        :param violation: the step's action broke a promise of the engine (a delayed
            reservation)
        :param invalid: the step's action was invalid (acted as the fallback action)
        """
        info = self.info()
        info["violation"] = violation
        info["invalid_action"] = invalid
        info["invalid"] = invalid  # old name of "invalid_action"
        if self.state.done:
            info.update(self.state.final_info)
        return info

    def transition(self, action: Any) -> tuple[float, bool, bool, bool]:
        """The one env step (the reference of the compiled batch step): check the action
        (invalid -> the task's fallback), apply it, advance the engine to its next stop,
        observe it, and compute the reward and termination (at the end also the
        episode-end infos, ``state.final_info``). Builds no info dict.

        :param action: an element of the action space
        :return: ``(reward, terminated, violation, invalid)``
        """
        st = self.state
        if st.done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        try:
            a = operator.index(action)
        except TypeError:
            arr = np.asarray(action)
            if arr.size != 1 or arr.dtype.kind not in "iu":
                raise self.invalid_error(action) from None
            a = int(arr.reshape(()))
        reward = 0.0
        invalid = False
        if not (0 <= a < st.mask.shape[0] and st.mask[a]):
            if self.invalid_action == "raise":
                raise self.invalid_error(action)
            invalid = True
            reward += self.invalid_penalty
            a = self.task.fallback_action(self.max_queue)
        sim = st.sim
        assert sim is not None
        violation = False
        if st.at_decision:
            violation = self.task.apply(sim, st.rows, a)
            ev = sim.advance()
            penalty = self.task.step_reward(violation)
            if penalty:
                reward += penalty
        else:
            ev = Event.DONE
        st.steps += 1
        self.observe(ev)
        if st.credit is not None:
            reward += st.credit.step(sim.start_times)
        terminated = ev == Event.DONE
        if terminated:
            st.done = True
            reward += self.end_episode()
        return reward, terminated, violation, invalid

    # --------------------------------------------------------------- reward
    def normalizer_metrics(self) -> dict[str, float] | None:
        """Metrics of the reference scheduler on the current window (cached), or ``None``."""
        if self.reference is None or self.state.sim is None:
            return None
        return reference_metrics(self.reference, self.state.sim.workload, self.reference_key())

    def reference_key(self) -> tuple[Any, ...]:
        """The key of the current window's reference metrics in the per-process cache."""
        return (self._fingerprint, self.state.start, self.window_length, self._norm_key)

    def end_episode(
        self, metrics: tuple[dict[str, float], dict[str, float] | None] | None = None
    ) -> float:
        """The last step's reward (dense: what job shares left); sets ``state.final_info``.

        :param metrics: the agent's and the reference's (the compiled batch step has
            them), or ``None``: computed here
        """
        st = self.state
        if metrics is None:
            assert st.sim is not None
            agent = deterministic_metrics(st.sim.result().metrics)
            norm = self.normalizer_metrics()
        else:
            agent, norm = metrics
        st.final_info = {
            "agent": agent,
            "reference": norm,
            "normalizer": norm,  # old name of "reference"
            "objective": self.objective,
            "overflow_decisions": st.overflow,
            "episode_steps": st.steps,
        }
        if st.credit is None:
            return self.terminal_reward(agent, norm)
        if self.reward_scale == "linear":  # dense: the jobs' shares have paid it all
            return 0.0
        return self.terminal_reward(agent, norm) - terminal_reward(self.objective, agent, norm)

    def terminal_reward(self, agent: dict[str, float], norm: dict[str, float] | None) -> float:
        """The terminal reward for the agent's and the reference's metrics (see the env's
        *Rewards*, and :func:`hpcgym.envs.reward.terminal_reward`)."""
        return terminal_reward(self.objective, agent, norm, self.reward_scale)

    # ------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if not isinstance(self._trace, Workload):
            state["_workload"] = None  # reloaded by name (cached loader) on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._workload is None:
            from hpcgym.workload import load

            self._workload = load(
                self._trace, machine_size=self._machine_size, **self._trace_kwargs
            )
        self.task.setup(self)  # the task's trace-level state, rebuilt where dropped

    def render(self) -> str | None:
        """``render_mode="ansi"``: the decision point as text."""
        if self.render_mode != "ansi" or self.state.sim is None:
            return None
        return self.task.render(self)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.task.describe()}, trace={self.trace_label!r}, "
            f"reference={None if self.reference is None else self.reference.name!r}, "
            f"window_length={self.window_length}, max_queue={self.max_queue})"
        )
