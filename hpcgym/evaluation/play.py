"""THE loop that plays an agent through windows of an env of either task
(:class:`~hpcgym.envs.backfill_env.BackfillEnv`, :class:`~hpcgym.envs.schedule_env.ScheduleEnv`).

Every caller that plays an agent (``hpcgym.evaluation.runner``, the training-time evaluation
of ``train/``) goes through :func:`play_window` or :func:`play_windows`, so an agent's
score is computed one way everywhere:

* reset with ``seed`` and ``options={"start": start}``;
* at each step the agent's action (:func:`act`): ``policy.predict(obs,
  action_masks=env.action_masks(), deterministic=deterministic)`` for SB3-style agents
  (``MaskablePPO``, the heuristic agents), ``policy.predict(obs,
  deterministic=deterministic)`` for a stock SB3 model without masks (``PPO``, ``A2C``,
  ``DQN``: an invalid action is then the env's to handle), ``policy(obs, info)`` for any
  Python callable (a hand-written rule, a torch module wrapped in a function);
* the window's row from the env's terminal ``info`` (:func:`window_row`).

:func:`play_windows` given several envs plays them in lockstep: the observations of the
unfinished windows are stacked and the policy chooses all their actions with one
``predict`` call (one forward pass of a network per step).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from hpcgym.sim.metrics import COMPARISON_METRICS

__all__ = [
    "AGENT_COUNTERS",
    "HEAD_DELAY_METRICS",
    "WINDOW_METRICS",
    "AgentFn",
    "Policy",
    "act",
    "check_agent",
    "play_window",
    "play_windows",
    "window_row",
]

#: Schedule metrics of one window (the env's ``info["agent"]``, the engine's ``metrics``).
WINDOW_METRICS: tuple[str, ...] = (
    "avg_bsld",
    "avg_wait",
    "avg_pp_bsld",
    "max_wait",
    "p99_bsld",
    "avg_turnaround",
    "utilization",
    "makespan",
    "backfilled",
    *COMPARISON_METRICS,
)
#: Starts beyond the request-based reservation
#: (:func:`hpcgym.sim.metrics.request_reservation_delays`, any queue policy):
#: ``head_delayed`` jobs, ``head_delay`` their mean delay (s).
HEAD_DELAY_METRICS: tuple[str, ...] = ("head_delayed", "head_delay")
#: Counters of an agent's episode (empty for engine schedulers).
AGENT_COUNTERS: tuple[str, ...] = ("decisions", "violations", "overflow_decisions", "steps")


class Policy(Protocol):
    """SB3's ``predict``: ``MaskablePPO`` models and the heuristic agents satisfy it."""

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]: ...


#: A hand-written agent: ``fn(observation, info) -> action`` for ONE env (``info`` is the
#: env's latest info dict, with ``info["action_mask"]``).
AgentFn = Callable[[np.ndarray, dict[str, Any]], Any]


_TAKES_MASKS: dict[Any, bool] = {}  # by predict function: read once, not at every step


def _takes_masks(policy: Any) -> bool:
    """Whether ``policy.predict`` accepts ``action_masks`` (sb3-contrib's maskable models,
    the heuristic agents) or any keyword."""
    predict = policy.predict
    key = getattr(predict, "__func__", predict)  # a method: its class's function
    found = _TAKES_MASKS.get(key)
    if found is None:
        try:
            params = inspect.signature(predict).parameters.values()
            found = any(p.name == "action_masks" or p.kind is p.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):  # no signature (a C function...): assume SB3's
            found = True
        _TAKES_MASKS[key] = found
    return found


def check_agent(agent: Any) -> Any:
    """``agent`` itself if it can be played (an object with SB3's ``predict``, or a callable
    ``fn(obs, info) -> action``).

    :raises TypeError: anything else (the message says what is accepted)
    """
    if callable(getattr(agent, "predict", None)) or callable(agent):
        return agent
    raise TypeError(
        f"cannot play {type(agent).__name__!r} as an agent: give an object with SB3's "
        "predict(obs, ..., action_masks=..., deterministic=...) (a MaskablePPO / PPO / DQN "
        "model, a heuristic agent) or a callable fn(obs, info) -> action"
    )


def act(
    policy: Any,
    obs: np.ndarray,
    infos: Sequence[dict[str, Any]],
    masks: np.ndarray,
    *,
    deterministic: bool = True,
    batched: bool = False,
) -> np.ndarray:
    """The agent's action(s): the one dispatch of :func:`play_window` and
    :func:`play_windows`.

    :param policy: an object with SB3's ``predict`` (with or without ``action_masks``) or
        a callable ``fn(obs, info) -> action`` (:data:`AgentFn`)
    :param obs: one observation, or a batch (``batched``)
    :param infos: the env's latest info, one per observation
    :param masks: the action mask(s), shaped like the observations' leading axis
    :param deterministic: passed to ``predict``
    :param batched: ``obs`` stacks several envs' observations
    :return: the action(s) as an integer array (shape ``()`` or ``(n,)``)
    """
    predict = getattr(policy, "predict", None)
    if callable(predict):
        if _takes_masks(policy):
            action, _ = predict(obs, action_masks=masks, deterministic=deterministic)
        else:  # a stock SB3 model (PPO, A2C, DQN): it never sees the mask
            action, _ = predict(obs, deterministic=deterministic)
        return np.asarray(action, dtype=np.int64)
    if batched:
        return np.asarray([int(policy(o, i)) for o, i in zip(obs, infos, strict=True)])
    return np.asarray(int(policy(obs, infos[0])), dtype=np.int64)


def window_row(
    start: int, info: dict[str, Any], reward: float = 0.0, job_start: np.ndarray | None = None
) -> dict[str, Any]:
    """The result of one played window from the env's terminal ``info``.

    :param start: the window's first job
    :param info: the terminal ``info`` of the episode (needs ``info["agent"]``)
    :param reward: the episode's return
    :param job_start: start time of every job of the window (kept as ``job_start``)
    :return: ``start``, :data:`WINDOW_METRICS` (as the env gives them),
        ``reference_avg_bsld`` (the env's reference scheduler on the window, ``nan``
        without one; also as ``normalizer_avg_bsld``, its old name), ``reward``,
        :data:`AGENT_COUNTERS` and, if given, ``job_start``
    :raises RuntimeError: the episode did not end in the env (no ``info["agent"]``)
    """
    if "agent" not in info:
        raise RuntimeError(
            "the env's terminal info has no 'agent' metrics (was the episode truncated by a "
            "wrapper?): cannot evaluate the window"
        )
    agent = info["agent"]
    ref = info.get("reference", info.get("normalizer"))
    row: dict[str, Any] = {"start": int(start)}
    for k in WINDOW_METRICS:
        row[k] = agent[k]
    row["reference_avg_bsld"] = float(ref["avg_bsld"]) if ref else math.nan
    row["normalizer_avg_bsld"] = row["reference_avg_bsld"]  # old name
    row["reward"] = float(reward)
    row["decisions"] = int(info.get("decisions", 0))
    row["violations"] = int(info.get("violations", 0))
    row["overflow_decisions"] = int(info.get("overflow_decisions", 0))
    row["steps"] = int(info.get("episode_steps", 0))
    if job_start is not None:
        row["job_start"] = job_start
    return row


def _job_start(env: Any) -> np.ndarray:
    return np.asarray(env.simulation.result().start, dtype=np.float64)


def play_window(
    env: Any,
    policy: Policy,
    start: int,
    *,
    seed: int | None = 0,
    deterministic: bool = True,
    job_start: bool = False,
) -> dict[str, Any]:
    """Play ``policy`` through the window of ``env`` that begins at job ``start``.

    :param env: a :class:`~hpcgym.envs.backfill_env.BackfillEnv` or
        :class:`~hpcgym.envs.schedule_env.ScheduleEnv` (unwrapped)
    :param policy: anything with SB3's ``predict`` (:class:`Policy`) or a callable
        ``fn(obs, info) -> action`` (:data:`AgentFn`)
    :param start: the window's first job (index in the env's trace)
    :param seed: ``reset`` seed (only stochastic estimators use it)
    :param deterministic: passed to ``predict``
    :param job_start: also return every job's start time (``row["job_start"]``)
    :return: the window's row (:func:`window_row`)
    """
    check_agent(policy)
    obs, info = env.reset(seed=seed, options={"start": int(start)})
    ret = 0.0
    while True:
        action = act(policy, obs, [info], env.action_masks(), deterministic=deterministic)
        obs, r, terminated, truncated, info = env.step(int(action.reshape(())))
        ret += float(r)
        if terminated or truncated:
            break
    return window_row(start, info, ret, _job_start(env) if job_start else None)


def play_windows(
    env: Any | Sequence[Any],
    policy: Policy,
    starts: Sequence[int],
    *,
    seed: int | None = 0,
    deterministic: bool = True,
    job_start: bool = False,
) -> list[dict[str, Any]]:
    """Play ``policy`` through several windows; one row per start, in order.

    :param env: one env (the windows are played one after the other), or one env per
        start (played in lockstep: one batched ``predict`` per step for all unfinished
        windows)
    :param policy: anything with SB3's ``predict`` (:class:`Policy`) or a callable
        ``fn(obs, info) -> action`` (:data:`AgentFn`, called once per env)
    :param starts: the windows' first jobs
    :param seed: ``reset`` seed of every window
    :param deterministic: passed to ``predict``
    :param job_start: also return every job's start time per row
    :return: :func:`window_row` per window
    """
    if not isinstance(env, Sequence):
        return [
            play_window(env, policy, s, seed=seed, deterministic=deterministic, job_start=job_start)
            for s in starts
        ]
    check_agent(policy)
    envs = list(env)
    if len(envs) != len(starts):
        raise ValueError(f"{len(envs)} envs for {len(starts)} window starts")
    n = len(envs)
    obs: list[np.ndarray] = [np.empty(0)] * n
    infos: list[dict[str, Any]] = [{}] * n
    # reset in the order of the starts: warm-started estimators then bind their windows'
    # states in one walk of the trace's log (hpcgym.sim.warmcache); each env's reset
    # depends only on its own seed and start
    for i in sorted(range(n), key=lambda i: int(starts[i])):
        obs[i], infos[i] = envs[i].reset(seed=seed, options={"start": int(starts[i])})
    returns = [0.0] * n
    rows: list[dict[str, Any] | None] = [None] * n
    active = list(range(n))
    while active:
        batch = np.stack([obs[i] for i in active])
        masks = np.stack([envs[i].action_masks() for i in active])
        actions = act(
            policy,
            batch,
            [infos[i] for i in active],
            masks,
            deterministic=deterministic,
            batched=True,
        ).reshape(len(active))
        still: list[int] = []
        for i, a in zip(active, actions, strict=True):
            o, r, terminated, truncated, info = envs[i].step(int(a))
            obs[i], infos[i] = o, info
            returns[i] += float(r)
            if terminated or truncated:
                js = _job_start(envs[i]) if job_start else None
                rows[i] = window_row(int(starts[i]), info, returns[i], js)
            else:
                still.append(i)
        active = still
    return [r for r in rows if r is not None]
