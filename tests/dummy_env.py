"""A small masked toy env with the spaces of the hpcgym backfilling env (for agent tests).

Spaces (same contract as the real env):

- observation ``Box(0, 1, (K, F), float32)``: one row per candidate; column 0 = validity flag
  (1 = real candidate, 0 = padding), columns ``1 .. F-2`` uniform job features in [0, 1),
  column ``F-1`` = the machine availability ``a`` (the same in every valid row);
- action ``Discrete(K + 1)``: ``i < K`` picks row ``i``, ``K`` is STOP;
- ``action_masks()``: bool ``(K + 1,)``; row ``i`` is valid iff it is a real row and it
  "fits" (``row[fit_column] <= a``); STOP is always valid.

Task (learnable, with a known optimum): at every step the best action is the fitting row with
the largest ``row[target_column]`` (STOP when no row fits). A step scores 1 for the best action
and 0 otherwise. Episodes last ``episode_length`` steps; the reward is 0 until the last step,
which returns ``2 * (hits / episode_length) - 1`` in [-1, 1] (``terminal_reward_only=False``:
the per-step ``2 * hit - 1) / episode_length`` instead, same return). A perfect agent gets 1;
a uniformly random one about -0.4 with the defaults.

Import it from a test as ``from dummy_env import DummyBackfillEnv`` (pytest puts ``tests/`` on
``sys.path``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["DummyBackfillEnv", "run_episodes"]


class DummyBackfillEnv(gym.Env):
    """Masked toy backfilling env (see the module docstring).

    :param max_queue: K, number of candidate rows (padded)
    :param n_features: F, row width (>= 4: flag, target, fit, availability)
    :param episode_length: decisions per episode
    :param target_column: column whose largest value (among fitting rows) is the best pick
    :param fit_column: column compared with the availability to decide whether a row fits
    :param scatter_rows: put the real rows at random positions (default: rows ``0..n-1``)
    :param padding_value: value of the non-flag columns of padding rows
    :param terminal_reward_only: reward only at the last step (the real env's convention)
    :param strict: raise on a masked action; ``False`` treats it as STOP (for env checkers
        that step with unmasked random actions)
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        max_queue: int = 16,
        n_features: int = 10,
        episode_length: int = 4,
        target_column: int = 1,
        fit_column: int = 2,
        scatter_rows: bool = False,
        padding_value: float = 0.0,
        terminal_reward_only: bool = True,
        strict: bool = True,
    ) -> None:
        super().__init__()
        if max_queue < 1 or n_features < 4 or episode_length < 1:
            raise ValueError(
                f"need max_queue >= 1, n_features >= 4, episode_length >= 1; got {max_queue}, "
                f"{n_features}, {episode_length}"
            )
        for name, col in (("target_column", target_column), ("fit_column", fit_column)):
            if not 1 <= col <= n_features - 2:
                raise ValueError(f"{name} must be in [1, {n_features - 2}], got {col}")
        self.max_queue = max_queue
        self.n_features = n_features
        self.episode_length = episode_length
        self.target_column = target_column
        self.fit_column = fit_column
        self.scatter_rows = scatter_rows
        self.padding_value = float(padding_value)
        self.terminal_reward_only = terminal_reward_only
        self.strict = strict
        self.observation_space = spaces.Box(0.0, 1.0, (max_queue, n_features), np.float32)
        self.action_space = spaces.Discrete(max_queue + 1)
        self._obs = np.zeros((max_queue, n_features), np.float32)
        self._mask = np.zeros(max_queue + 1, bool)
        self._t = 0
        self._hits = 0

    def _new_state(self) -> None:
        rng = self.np_random
        k, f = self.max_queue, self.n_features
        n = int(rng.integers(0, k, endpoint=True))
        rows = np.flatnonzero(rng.permutation(k) < n) if self.scatter_rows else np.arange(n)
        obs = np.full((k, f), self.padding_value, np.float32)
        obs[:, 0] = 0.0
        avail = np.float32(rng.random())
        obs[rows, 1 : f - 1] = rng.random((n, f - 2), dtype=np.float32)
        obs[rows, 0] = 1.0
        obs[rows, f - 1] = avail
        mask = np.zeros(k + 1, bool)
        mask[rows] = obs[rows, self.fit_column] <= avail
        mask[k] = True
        self._obs, self._mask = obs, mask

    def best_action(self) -> int:
        """The optimal action in the current state."""
        fit = np.flatnonzero(self._mask[: self.max_queue])
        if fit.size == 0:
            return self.max_queue
        return int(fit[np.argmax(self._obs[fit, self.target_column])])

    def action_masks(self) -> np.ndarray:
        """Bool ``(K + 1,)``: valid actions (sb3-contrib convention)."""
        return self._mask.copy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        self._hits = 0
        self._new_state()
        return self._obs.copy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a <= self.max_queue:
            raise ValueError(f"action {a} outside Discrete({self.max_queue + 1})")
        if not self._mask[a]:
            if self.strict:
                raise ValueError(
                    f"masked action {a} (valid: {np.flatnonzero(self._mask).tolist()})"
                )
            a = self.max_queue
        hit = int(a == self.best_action())
        self._hits += hit
        self._t += 1
        done = self._t >= self.episode_length
        if self.terminal_reward_only:
            reward = 2.0 * self._hits / self.episode_length - 1.0 if done else 0.0
        else:
            reward = (2.0 * hit - 1.0) / self.episode_length
        info: dict[str, Any] = {"hit": hit}
        if done:
            info["hit_rate"] = self._hits / self.episode_length
        self._new_state()
        return self._obs.copy(), float(reward), done, False, info


def run_episodes(
    agent: Any, env: DummyBackfillEnv, n_episodes: int, seed: int, deterministic: bool = True
) -> np.ndarray:
    """Episode returns of ``agent`` (anything with the SB3 ``predict`` interface taking
    ``action_masks``: a ``MaskablePPO`` model or a heuristic agent) on ``env``.

    Episode ``i`` is reset with seed ``seed + i``, so two agents see the same states as long as
    their actions do not change the state sequence (true in this env).
    """
    returns = np.zeros(n_episodes)
    for i in range(n_episodes):
        obs, _ = env.reset(seed=seed + i)
        done = False
        while not done:
            action, _ = agent.predict(
                obs, deterministic=deterministic, action_masks=env.action_masks()
            )
            obs, reward, terminated, truncated, _ = env.step(action)
            returns[i] += reward
            done = terminated or truncated
    return returns
