"""An SB3 ``VecEnv`` over the native batched env :class:`~hpcgym.envs.vector.BackfillVectorEnv`.

:class:`NativeVecEnv` makes ``N`` backfilling simulations (one process, batched
``(N, K, F)`` observations and ``(N, K + 1)`` masks) look like SB3's ``DummyVecEnv`` of
``Monitor``-wrapped :class:`~hpcgym.envs.backfill_env.BackfillEnv` to ``MaskablePPO``:

* one ``step_wait`` = one batched env step; no per-env Python except at episode ends;
* SB3's auto-reset semantics: when sub-env ``i`` ends its episode, the returned
  observation is the first one of its next episode, ``infos[i]`` holds the episode-end
  entries of the single env (``agent``, ``reference``, ``objective``, ``episode_steps``,
  ...), ``violations``, ``terminal_observation`` and the ``Monitor``-style ``episode``
  record (``r``, ``l``, ``t``; SB3's ``rollout/ep_rew_mean``);
* ``env_method("action_masks")`` returns the ``(N, K + 1)`` mask array itself
  (sb3-contrib's ``get_action_masks`` stacks it: no per-env call);
* seeding as ``make_vec_env(seed=s)``: sub-env ``i`` is reset with ``s + i`` at the
  first reset after :meth:`seed`.

Rollouts through it equal those of ``DummyVecEnv([BackfillEnv] * N)`` for the same seeds
and actions (``tests/test_train_speed.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

__all__ = ["NativeVecEnv"]


def _unbatch(value: Any, i: int) -> Any:
    """Entry ``i`` of a Gymnasium batched info value (nested dicts of arrays)."""
    if isinstance(value, dict):
        return {k: _unbatch(v, i) for k, v in value.items() if not k.startswith("_")}
    item = value[i]
    return item.item() if isinstance(item, np.generic) else item


class NativeVecEnv(VecEnv):
    """SB3 ``VecEnv`` of ``num_envs`` backfilling envs stepped as one batch.

    :param num_envs: ``N``, the number of simulations
    :param task: ``backfill`` or ``schedule`` (:data:`train.tasks.TASKS`)
    :param compiled: the vector env's ``compiled`` (``None``: its compiled batch step where
        the configuration allows; ``False``: one Python step per sub-env)
    :param env_kwargs: keywords of the task's env (``trace``, ``window_length``,
        ``reference``, ``max_queue``...)
    """

    def __init__(
        self,
        num_envs: int,
        task: str = "backfill",
        compiled: bool | None = None,
        **env_kwargs: Any,
    ) -> None:
        from train.tasks import vector_class

        self.venv = vector_class(task)(
            int(num_envs), autoreset_mode="Disabled", compiled=compiled, **env_kwargs
        )
        super().__init__(
            int(num_envs),
            self.venv.single_observation_space,
            self.venv.single_action_space,
        )
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(self.num_envs, dtype=np.float64)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._t0 = time.perf_counter()

    # ------------------------------------------------------------------ reset / step
    def reset(self) -> VecEnvObs:
        """Reset every sub-env (seeded by the last :meth:`seed`, once)."""
        seeds = list(self._seeds)
        obs, _info = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        self._returns.fill(0.0)
        self._lengths.fill(0)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Store the actions of the next :meth:`step_wait`.

        :param actions: ``(N,)`` integer actions
        """
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """One batched step; finished sub-envs are reset (SB3's auto-reset)."""
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        self._returns += rewards
        self._lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            done_idx = np.flatnonzero(dones).tolist()
            keys = [k for k in info if not k.startswith("_") and k != "action_mask"]
            for i in done_idx:
                entry = {k: _unbatch(info[k], i) for k in keys if info[f"_{k}"][i]}
                entry["violations"] = int(self.venv.envs[i].simulation.view.violations)
                entry["terminal_observation"] = obs[i].copy()
                entry["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                entry["episode"] = {
                    "r": float(self._returns[i]),
                    "l": int(self._lengths[i]),
                    "t": round(time.perf_counter() - self._t0, 6),
                }
                infos[i] = entry
            self._returns[dones] = 0.0
            self._lengths[dones] = 0
            obs, _ = self.venv.reset(options={"reset_mask": dones})
        return obs, rewards.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """Valid actions of every sub-env: bool ``(N, K + 1)``."""
        return self.venv.action_masks()

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    # ------------------------------------------------------------------ SB3 plumbing
    def _targets(self, indices: VecEnvIndices) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the selected sub-envs.

        :param attr_name: attribute of :class:`~hpcgym.envs.backfill_env.BackfillEnv`
        :param indices: sub-envs (``None``: all)
        """
        self.venv._sync()  # the counters the compiled batch step keeps
        return [getattr(self.venv.envs[i], attr_name) for i in self._targets(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Not supported: the sub-envs share their configuration.

        :param attr_name: attribute name
        :param value: value
        :param indices: sub-envs
        """
        raise AttributeError(f"NativeVecEnv does not set sub-env attributes ({attr_name!r})")

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> Any:
        """Call a method of the selected sub-envs; ``action_masks`` of all sub-envs is the
        batched ``(N, K + 1)`` array (what ``np.stack`` of the per-env masks gives).

        :param method_name: method of :class:`~hpcgym.envs.backfill_env.BackfillEnv`
        :param method_args: positional arguments
        :param indices: sub-envs (``None``: all)
        :param method_kwargs: keyword arguments
        """
        if method_name == "action_masks" and indices is None and not method_args:
            return self.venv.action_masks()
        self.venv._sync()
        return [
            getattr(self.venv.envs[i], method_name)(*method_args, **method_kwargs)
            for i in self._targets(indices)
        ]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """No sub-env is wrapped.

        :param wrapper_class: a wrapper class
        :param indices: sub-envs
        """
        return [False for _ in self._targets(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No images (the env renders ANSI text)."""
        return [None] * self.num_envs
