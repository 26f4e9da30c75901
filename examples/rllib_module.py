"""RLlib pieces of ``examples/rllib_ppo.py``: the masked-observation wrapper and a PPO
RLModule that masks the logits of invalid actions (RLlib's action-masking pattern). A
module of its own: it imports Ray at the top, and Ray's workers import it by name.

This module imports Ray (``pip install -e ".[ray]"`` plus RLlib's own dependencies, see
docs/scaling.md); ``examples/rllib_ppo.py`` imports it only when it trains, so its ``--help``
works without Ray.

* :class:`MaskedObservation`: the env's observation ``(K, F)`` and its action mask as one
  ``Dict`` observation ``{"observations": (K*F,) float32, "action_mask": (K+1,) float32}``
  (the mask is the env's ``info["action_mask"]``);
* :class:`MaskedPPOModule`: RLlib's default torch PPO module on ``"observations"``, whose
  action logits get ``-inf`` (RLlib's ``FLOAT_MIN``) where the mask is 0, in inference,
  exploration and training alike.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
    DefaultPPOTorchRLModule,
)
from ray.rllib.core.columns import Columns
from ray.rllib.utils.torch_utils import FLOAT_MIN

__all__ = ["MASK", "OBS", "MaskedObservation", "MaskedPPOModule", "make_masked_env"]

OBS = "observations"
MASK = "action_mask"


class MaskedObservation(gym.Wrapper):
    """Observation = ``{"observations": flat observation, "action_mask": mask as 0/1}``.

    :param env: an hpcgym backfilling env (``gym.make("hpcgym/Backfill-v0", ...)``)
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, gym.spaces.Box) and isinstance(env.action_space, gym.spaces.Discrete)
        n = int(env.action_space.n)
        size = int(np.prod(box.shape))
        self.observation_space = gym.spaces.Dict(
            {
                OBS: gym.spaces.Box(0.0, 1.0, (size,), np.float32),
                MASK: gym.spaces.Box(0.0, 1.0, (n,), np.float32),
            }
        )

    def _wrap(self, obs: np.ndarray, info: dict[str, Any]) -> dict[str, np.ndarray]:
        return {
            OBS: np.asarray(obs, dtype=np.float32).reshape(-1),
            MASK: np.asarray(info["action_mask"], dtype=np.float32),
        }

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the env; the observation carries the mask.

        :param kwargs: ``seed``, ``options`` of the env's ``reset``
        """
        obs, info = self.env.reset(**kwargs)
        return self._wrap(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """One decision; the observation carries the next mask.

        :param action: the action (a job row or STOP)
        """
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._wrap(obs, info), float(reward), terminated, truncated, info


def make_masked_env(env_config: dict[str, Any]) -> gym.Env:
    """RLlib's env creator: ``gym.make("hpcgym/Backfill-v0", **env_config)`` with the
    mask in the observation.

    :param env_config: the env's keyword arguments (RLlib's ``env_config``)
    """
    import hpcgym  # noqa: F401  (registers hpcgym/Backfill-v0)

    kw = {k: v for k, v in dict(env_config).items() if not k.startswith("_")}
    return MaskedObservation(gym.make("hpcgym/Backfill-v0", **kw))


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """RLlib's default torch PPO module on the ``"observations"`` part of a
    :class:`MaskedObservation`; invalid actions get the logit ``FLOAT_MIN``.

    The networks are built for the observations only; the module's
    ``observation_space`` is the ``Dict`` again after :meth:`setup` (RLlib's connectors
    check it against the env's).
    """

    def __init__(self, *, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space) != {
            OBS,
            MASK,
        }:
            raise ValueError(
                f"MaskedPPOModule needs a Dict observation {{{OBS!r}, {MASK!r}}} "
                f"(MaskedObservation), got {observation_space}"
            )
        self._dict_space = observation_space
        super().__init__(observation_space=observation_space[OBS], **kwargs)

    def setup(self) -> None:
        """Build the default PPO networks for the observations, then expose the Dict."""
        super().setup()
        self.observation_space = self._dict_space

    @staticmethod
    def _split(batch: dict[str, Any]) -> Any:
        """Replace the Dict observation of ``batch`` (in place) by its observations; keep
        the mask in ``batch["action_mask"]`` and return it."""
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            batch[Columns.OBS] = obs[OBS]
            batch[MASK] = obs[MASK]
        return batch[MASK]

    @staticmethod
    def _mask(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask <= 0, FLOAT_MIN)
        return out

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = self._split(batch)
        return self._mask(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = self._split(batch)
        return self._mask(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = self._split(batch)  # the learner's value pass may have split it already
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        """Values of the observations (the learner calls this before the train pass).

        :param batch: a batch with the Dict or the split observation
        :param embeddings: precomputed encoder outputs (RLlib's)
        """
        self._split(batch)
        return super().compute_values(batch, embeddings)

    def greedy_actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The most likely valid action of each observation (no gradient).

        :param obs: observations ``(n, K*F)``
        :param mask: action masks ``(n, K+1)``
        """
        batch = {
            Columns.OBS: {
                OBS: torch.as_tensor(obs, dtype=torch.float32),
                MASK: torch.as_tensor(mask, dtype=torch.float32),
            }
        }
        with torch.no_grad():
            out = self.forward_inference(batch)
        return out[Columns.ACTION_DIST_INPUTS].argmax(dim=-1).cpu().numpy()
