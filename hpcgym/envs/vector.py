"""The native batched vector env of every decision task: :class:`TaskVectorEnv`
(:class:`BackfillVectorEnv`, :class:`ScheduleVectorEnv`).

``N`` backfilling simulations stepped in one process, with batched ``(N, K, F)``
observations and ``(N, K + 1)`` masks written in place by the observation builder. Every
sub-env is a twin of the single env (:meth:`~hpcgym.envs.generic_env.TaskEnv.spawn`) sharing
the loaded workload; the vector env calls the single env's one step
(:meth:`~hpcgym.envs.generic_env.TaskEnv.reset_episode`, ``transition``), or the compiled
batch step (:mod:`hpcgym.envs.batch`), so both produce the same episodes, step for step.
See ``docs/env.md`` (*Vector env*) for the semantics and the measured speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.envs.batch import BatchState, fast_path_problem
from hpcgym.envs.generic_env import TaskEnv
from hpcgym.envs.schedule_env import ScheduleEnv
from hpcgym.sim import _core as K

__all__ = ["BackfillVectorEnv", "ScheduleVectorEnv", "TaskVectorEnv", "trace_mix"]


def trace_mix(env_kwargs: dict[str, Any], env_class: Any = BackfillEnv) -> list[dict[str, Any]]:
    """The :class:`~hpcgym.envs.backfill_env.BackfillEnv` keywords of every trace of
    ``env_kwargs["trace"]`` (a name, or a list of them: a *trace mix*).

    Every entry has the same keywords with its own ``trace``, and, for a mix, the same
    ``est_scale`` / ``wait_scale`` (unless given: the first trace's defaults), so that a
    second is the same feature value on every trace.

    :param env_kwargs: keywords of ``BackfillEnv``, ``trace`` possibly a list
    :return: one keyword dict per trace (one dict, a copy, when ``trace`` is no list)
    :raises ValueError: ``trace`` is an empty list
    """
    traces = env_kwargs.get("trace")
    if not isinstance(traces, (list, tuple)):
        return [dict(env_kwargs)]
    if not traces:
        raise ValueError("trace: an empty list; give a trace name or a non-empty list of them")
    first = {**env_kwargs, "trace": traces[0]}
    scales = {k: env_kwargs.get(k) for k in ("est_scale", "wait_scale")}
    if len(traces) > 1 and None in scales.values():
        probe = env_class(**first)
        scales = {"est_scale": probe.est_scale, "wait_scale": probe.wait_scale}
    return [first, *({**env_kwargs, "trace": t, **scales} for t in traces[1:])]


def spawn(env: TaskEnv, obs_out: np.ndarray, mask_out: np.ndarray) -> TaskEnv:
    """A twin of ``env`` writing into the given slices (:meth:`TaskEnv.spawn
    <hpcgym.envs.generic_env.TaskEnv.spawn>`)."""
    return env.spawn(obs_out, mask_out)


def _autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    try:
        return mode if isinstance(mode, AutoresetMode) else AutoresetMode(mode)
    except ValueError:
        valid = ", ".join(repr(m.value) for m in AutoresetMode)
        raise ValueError(f"unknown autoreset_mode {mode!r}; valid: {valid}") from None


class TaskVectorEnv(VectorEnv):
    """``num_envs`` envs of one decision task stepped in one process, with batched arrays
    (``TaskVectorEnv(N, task="backfill", ...)``; the subclasses below fix the task). The
    examples below are Backfill-v0's.

    Equivalent, step for step, to ``gymnasium.vector.SyncVectorEnv([lambda:
    BackfillEnv(**env_kwargs)] * num_envs)`` (same seeds and actions: the same
    observations, rewards, terminations, truncations and ``info["action_mask"]``; tested),
    but cheaper per env-step (1.15-2.3x from ``N = 16`` in ``bench/env_speed.py``): the
    observation builder writes straight into the batched buffers, and no per-env info
    dict is built unless ``full_info``.

    ``gymnasium.make_vec("hpcgym/Backfill-v0", num_envs=N,
    vectorization_mode="vector_entry_point", **env_kwargs)`` builds it (it is the
    registered ``vector_entry_point``, so it is also what ``make_vec`` picks without a
    ``vectorization_mode``), or construct it directly: ``BackfillVectorEnv(N,
    trace="SDSC-SP2", mode="guarded")``.

    ## Spaces

    ``observation_space``: ``Box(0, 1, (N, K, F), float32)``; ``action_space``:
    ``MultiDiscrete([K + 1] * N)``; ``single_observation_space`` /
    ``single_action_space`` are the single env's. :meth:`action_masks` returns the
    ``(N, K + 1)`` bool masks of the current observations.

    ## Autoreset

    ``autoreset_mode`` (``metadata["autoreset_mode"]``): Gymnasium's default,
    ``AutoresetMode.NEXT_STEP``, like ``SyncVectorEnv``. When sub-env ``i`` terminates
    (or is truncated by ``max_episode_steps``), the step returns its terminal
    observation (all padding, only STOP valid) with the terminal reward and
    ``terminated[i] = True``; the *next* ``step`` ignores ``actions[i]``, resets sub-env
    ``i`` (no seed: its generator continues) and returns the first observation of the
    new episode with reward 0 and ``terminated[i] = truncated[i] = False``. Also
    ``SAME_STEP`` (the reset happens in the terminating step; the terminal observation
    and info are in ``info["final_obs"]`` / ``info["final_info"]``) and ``DISABLED``
    (reset finished sub-envs yourself with ``reset(options={"reset_mask": m})``;
    stepping a finished sub-env raises).

    ## Seeding

    ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (like ``SyncVectorEnv``); a list
    gives one seed per sub-env; ``None`` keeps the generators (entropy at the first
    reset). ``options`` are passed to every sub-env (``{"start": j}``), plus
    ``"reset_mask"``: a bool ``(N,)`` array selecting the sub-envs to reset.

    ## Trace mix

    ``trace=["SDSC-SP2", "HPC2N"]`` (a list) runs sub-env ``i`` on trace ``i % len(trace)``
    (:attr:`traces`), every other keyword shared: one batch of experience from several
    systems, e.g. to train an agent that carries over to traces it never saw. The traces
    share ``est_scale`` / ``wait_scale`` (default: the first trace's), so a second is the
    same feature value on every trace (estimates above ``est_scale`` read 1); each trace
    keeps its own machine size (columns are fractions of it), split, windows and
    reference schedules.

    ## Info

    Every ``reset`` and ``step``: ``info["action_mask"]`` (bool ``(N, K + 1)``) and
    ``info["_action_mask"]`` (which rows are set: all, except after a partial reset),
    in Gymnasium's batched info format. When sub-envs end an episode by termination,
    the single env's episode-end entries, batched the same way with their ``_key``
    masks: ``agent`` and ``reference`` / ``normalizer`` (dicts of arrays),
    ``objective``, ``overflow_decisions``, ``episode_steps``. ``full_info=True`` adds
    every per-step entry of the single env (``decision``, ``candidates``, ``time``,
    ``decisions``, ``backfills``, ``violations``, ``violation``, ``invalid_action``,
    ``start``, ``window``...): exactly ``SyncVectorEnv``'s infos, at the single env's
    cost.

    :param num_envs: ``N``, the number of sub-envs
    :param copy: return a copy of the observation buffer (default); ``False`` returns
        the buffer itself, overwritten in place by the next ``step``/``reset``
    :param autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``
        (an :class:`~gymnasium.vector.AutoresetMode` or its value)
    :param full_info: also return every per-step info entry of the single env (slower)
    :param max_episode_steps: truncate an episode after this many steps (like
        ``gymnasium.make(..., max_episode_steps=T)``'s ``TimeLimit``); ``None``: never
    :param env_kwargs: keywords of :class:`~hpcgym.envs.backfill_env.BackfillEnv`
        (``trace``, ``mode``, ``window_length``, ``reference``, ``max_queue``...);
        ``trace`` may be a list of traces (a *trace mix*, see above)
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "autoreset_mode": AutoresetMode.NEXT_STEP}
    #: the single env this vector env batches
    env_class: Any = TaskEnv

    def __init__(
        self,
        num_envs: int = 1,
        *,
        copy: bool = True,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        full_info: bool = False,
        max_episode_steps: int | None = None,
        compiled: bool | None = None,
        threads: int | None = 1,
        **env_kwargs: Any,
    ) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if max_episode_steps is not None and int(max_episode_steps) < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        self.num_envs = n = int(num_envs)
        self.copy = bool(copy)
        self.full_info = bool(full_info)
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        firsts = [self.env_class(**kw) for kw in trace_mix(env_kwargs, self.env_class)]
        first = firsts[0]
        self.render_mode = first.render_mode
        self.max_queue = kq = first.max_queue
        self.n_features = first.n_features
        self._obs_buf = np.zeros((n, kq, first.n_features), dtype=np.float32)
        self._mask_buf = np.zeros((n, int(first.action_space.n)), dtype=bool)
        #: the sub-envs (read-only use, please: ``envs[i].simulation``, ``candidate_jobs()``)
        self.envs: tuple[TaskEnv, ...] = tuple(
            spawn(firsts[i % len(firsts)], self._obs_buf[i], self._mask_buf[i]) for i in range(n)
        )
        #: the trace of every sub-env (``trace`` given as a list: ``trace[i % len(trace)]``)
        self.traces: tuple[str, ...] = tuple(env.trace_label for env in self.envs)
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._autoreset = np.zeros(n, dtype=bool)
        self._all = np.ones(n, dtype=bool)
        self._index = np.arange(n)
        self._started = False
        if compiled is not None and not isinstance(compiled, bool):
            raise ValueError(f"compiled must be True, False or None (auto), got {compiled!r}")
        self._compiled_option = compiled
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be an int >= 1 or None (every core), got {threads!r}")
        self.threads = threads
        #: the compiled batch step (:mod:`hpcgym.envs.batch`), set at the first reset when
        #: every sub-env's configuration allows it; ``None``: one Python step per sub-env
        self.batch: BatchState | None = None

    @property
    def compiled(self) -> bool:
        """Whether :meth:`step` is one compiled call for the whole batch (known after the
        first :meth:`reset`)."""
        return self.batch is not None

    def _start_batch(self) -> None:
        """After the first full reset: the compiled batch step, when allowed and possible."""
        option = self._compiled_option
        if option is False:
            return
        problem = None
        if self.full_info:
            problem = "full_info=True (its per-step infos are built in Python)"
        for env in self.envs:
            problem = problem or fast_path_problem(env)
        if problem is not None:
            if option is True:
                raise ValueError(f"compiled=True: this configuration has {problem}")
            return
        first = self.envs[0]
        kernel = first.task.kernel
        assert kernel is not None  # fast_path_problem said so
        n_jobs = len(first.simulation.workload)
        self.batch = BatchState(
            self.envs, self._obs_buf, self._mask_buf, kernel, n_jobs, self.threads
        )
        for i in range(self.num_envs):
            self.batch.bind(i)

    # ----------------------------------------------------------------- reset
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the sub-envs (all, or those of ``options["reset_mask"]``).

        :param seed: ``s`` (sub-env ``i`` gets ``s + i``), one seed per sub-env, or ``None``
        :param options: passed to every sub-env's reset (``{"start": j}``), plus an
            optional ``"reset_mask"`` (bool ``(N,)``)
        :return: the batched observation and info
        """
        n = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            super().reset(seed=None if seed is None else int(seed))
            seeds: list[int | None] = [None if seed is None else int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"{len(seeds)} seeds given for num_envs={n}")
        selected = self._all
        if options is not None and "reset_mask" in options:
            options = dict(options)
            selected = np.asarray(options.pop("reset_mask"))
            if selected.shape != (n,) or selected.dtype != np.bool_ or not selected.any():
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape ({n},) with at "
                    f"least one True, got {selected!r}"
                )
            if not self._started:
                raise RuntimeError("the first reset() must reset every sub-env (no reset_mask)")
        opts = options or None
        infos: dict[str, Any] = {}
        batch = self.batch
        chosen = np.flatnonzero(selected).tolist()
        if batch is not None and batch.reset_on:  # one compiled call for all of them
            batch.reset(chosen, [seeds[i] for i in chosen], opts)
            self._autoreset[chosen] = False
        for i in chosen if batch is None or not batch.reset_on else ():
            env = self.envs[i]
            env.reset_episode(seeds[i], opts)
            if batch is not None:
                batch.bind(i)
            self._autoreset[i] = False
            if self.full_info:
                self._add_info(infos, env.info(), i)
        if not self._started:
            self._started = True
            self._start_batch()
        if not self.full_info:
            self._mask_info(infos, selected)
        return self._observations(), infos

    # ------------------------------------------------------------------ step
    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (autoreset: see the class docstring).

        :param actions: ``(N,)`` integer actions (invalid ones act as STOP by default)
        :return: batched ``(observation, reward, terminated, truncated, info)``
        """
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        n = self.num_envs
        acts = np.asarray(actions)
        if acts.shape != (n,):
            if acts.size != n:
                raise ValueError(f"expected {n} actions, got shape {acts.shape}")
            acts = acts.reshape(n)
        alist = acts.tolist()
        mode = self.autoreset_mode
        autoreset = self._autoreset
        if mode is AutoresetMode.DISABLED and autoreset.any():
            raise RuntimeError(
                f"sub-env(s) {np.flatnonzero(autoreset).tolist()} ended their episode and "
                "autoreset_mode is DISABLED: reset them with reset(options={'reset_mask': m})"
            )
        if self.batch is not None:
            return self._step_batch(acts)
        full = self.full_info
        same_step = mode is AutoresetMode.SAME_STEP
        limit = self.max_episode_steps
        add = self._add_info
        rewards = [0.0] * n
        terminated = [False] * n
        truncated = [False] * n
        infos: dict[str, Any] = {}
        pending = autoreset.tolist()
        for i, env in enumerate(self.envs):
            if pending[i]:  # NEXT_STEP: this step resets sub-env i, ignoring its action
                env.reset_episode(None, None)
                if full:
                    add(infos, env.info(), i)
                continue
            r, term, violation, invalid = env.transition(alist[i])
            rewards[i] = r
            terminated[i] = term
            trunc = limit is not None and env.state.steps >= limit  # as TimeLimit: even if term
            truncated[i] = trunc
            if full:
                info: dict[str, Any] | None = env.step_info(violation, invalid)
            else:  # only the episode-end entries
                info = env.state.final_info if term else None
            if same_step and (term or trunc):
                if info is None or not full:
                    info = {"action_mask": env.state.mask.copy(), **(info or {})}
                add(infos, {"final_obs": env.state.obs.copy(), "final_info": info}, i)
                env.reset_episode(None, None)
                info = env.info() if full else None
            if info:
                add(infos, info, i)
        terms = np.array(terminated, dtype=bool)
        truncs = np.array(truncated, dtype=bool)
        if same_step:
            autoreset.fill(False)
        else:
            np.logical_or(terms, truncs, out=autoreset)
        if not full:
            self._mask_info(infos, self._all)
        return self._observations(), np.array(rewards, dtype=np.float64), terms, truncs, infos

    def _step_batch(
        self, acts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """:meth:`step` by the compiled batch step: the single env's ``_transition`` for
        every sub-env at once (invalid actions, penalties, the engine, the rows), the
        episode ends and resets by the single env's own code."""
        batch = self.batch
        assert batch is not None
        envs = self.envs
        first = envs[0]
        n = self.num_envs
        pending = self._autoreset.copy()  # NEXT_STEP: reset now, the action ignored
        any_pending = bool(pending.any())
        active = ~pending
        acts = acts.astype(np.int64, copy=True)
        inside = (acts >= 0) & (acts < self._mask_buf.shape[1])
        valid = inside & self._mask_buf[self._index, np.where(inside, acts, 0)]
        rewards = np.zeros(n, dtype=np.float64)
        if not valid.all():
            invalid = active & ~valid
            if invalid.any():
                if first.invalid_action == "raise":
                    i = int(np.flatnonzero(invalid)[0])
                    raise envs[i].invalid_error(acts[i])
                acts[invalid] = first.task.fallback_action(first.max_queue)
                rewards[invalid] += first.invalid_penalty
        if any_pending:
            acts[pending] = 0
        batch.step(acts, active)
        penalty = first.task.step_reward(True)  # a violation's (Backfill-v0: penalized)
        if penalty:
            rewards[batch.violation & active] += penalty
        term = active & (batch.event == K.EV_DONE)
        limit = self.max_episode_steps
        trunc = active & (batch.STEPS >= limit) if limit is not None else np.zeros(n, dtype=bool)
        infos: dict[str, Any] = {}
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        any_term = bool(term.any())
        if any_term:
            add = self._add_info
            for i in np.flatnonzero(term).tolist():
                env = envs[i]
                batch.sync(i)
                env.state.done = True
                rewards[i] += env.end_episode(batch.episode_end(i))
                if not same_step:
                    add(infos, env.state.final_info, i)
        if any_pending:
            self._reset_batch(np.flatnonzero(pending).tolist())
        if same_step:
            if any_term or trunc.any():
                ended = np.flatnonzero(term | trunc).tolist()
                for i in ended:
                    env = envs[i]
                    batch.sync(i)
                    final_info = env.state.final_info if term[i] else {}
                    final = {"action_mask": env.state.mask.copy(), **final_info}
                    ended_info = {"final_obs": env.state.obs.copy(), "final_info": final}
                    self._add_info(infos, ended_info, i)
                self._reset_batch(ended)
            self._autoreset.fill(False)
        else:
            np.logical_or(term, trunc, out=self._autoreset)
        self._mask_info(infos, self._all)
        return self._observations(), rewards, term, trunc, infos

    def _reset_batch(self, indices: list[int]) -> None:
        """Autoreset the sub-envs ``indices`` of the compiled batch (no seed, no options):
        one compiled call, or each by its own reset where resets are not compiled."""
        batch = self.batch
        assert batch is not None
        if batch.reset_on:
            batch.reset(indices)
            return
        for i in indices:
            self.envs[i].reset_episode(None, None)
            batch.bind(i)

    def _sync(self) -> None:
        """The sub-envs' own counters as the compiled step left them (before Python reads
        a sub-env)."""
        if self.batch is not None:
            for i in range(self.num_envs):
                self.batch.sync(i)

    # --------------------------------------------------------------- helpers
    def _observations(self) -> np.ndarray:
        return self._obs_buf.copy() if self.copy else self._obs_buf

    def _mask_info(self, infos: dict[str, Any], rows: np.ndarray) -> None:
        """``info["action_mask"]`` of the sub-envs in ``rows`` (Gymnasium's format)."""
        if rows is self._all:
            infos["action_mask"] = self._mask_buf.copy()
            infos["_action_mask"] = self._all.copy()
        else:
            infos["action_mask"] = np.where(rows[:, None], self._mask_buf, False)
            infos["_action_mask"] = rows.copy()

    def action_masks(self) -> np.ndarray:
        """Valid actions of every sub-env now: bool ``(N, K + 1)``, column ``K`` = STOP.

        :raises RuntimeError: before the first :meth:`reset`
        """
        if not self._started:
            raise RuntimeError("action_masks() before reset(): call reset() first")
        return self._mask_buf.copy()

    # the sub-envs' text (None without a render_mode): Gymnasium's annotation has no None
    def render(self) -> tuple[str | None, ...]:  # type: ignore[override]
        """Every sub-env's :meth:`~hpcgym.envs.backfill_env.BackfillEnv.render`."""
        self._sync()
        return tuple(env.render() for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (or read the attribute).

        :param name: method or attribute of :class:`~hpcgym.envs.backfill_env.BackfillEnv`
        :return: one result per sub-env
        """
        self._sync()
        out = []
        for env in self.envs:
            attr = getattr(env, name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every sub-env.

        :param name: attribute of :class:`~hpcgym.envs.backfill_env.BackfillEnv`
        :return: one value per sub-env
        """
        self._sync()
        return tuple(getattr(env, name) for env in self.envs)

    def __repr__(self) -> str:
        mix = dict.fromkeys(self.traces)
        extra = f", traces={list(mix)}" if len(mix) > 1 else ""
        name = type(self).__name__
        return f"{name}({self.envs[0]!r}, num_envs={self.num_envs}{extra})"


class BackfillVectorEnv(TaskVectorEnv):
    """``num_envs`` backfilling envs (:class:`~hpcgym.envs.backfill_env.BackfillEnv`)
    stepped in one process with batched arrays (:class:`TaskVectorEnv`): ``(N, K + 1)``
    masks (column ``K`` = STOP) and ``MultiDiscrete([K + 1] * N)`` actions.

    ``gymnasium.make_vec("hpcgym/Backfill-v0", num_envs=N, **env_kwargs)`` builds it.
    """

    env_class = BackfillEnv


class ScheduleVectorEnv(TaskVectorEnv):
    """``num_envs`` job-ordering envs (:class:`~hpcgym.envs.schedule_env.ScheduleEnv`)
    stepped in one process with batched arrays: the semantics of
    :class:`TaskVectorEnv` (spaces, autoreset modes, seeding, trace mix, infos), with
    ``(N, K)`` masks (no STOP column) and ``MultiDiscrete([K] * N)`` actions.

    ``gymnasium.make_vec("hpcgym/Schedule-v0", num_envs=N, **env_kwargs)`` builds it.
    """

    env_class = ScheduleEnv
