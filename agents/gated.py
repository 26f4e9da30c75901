"""A trained policy that departs from a heuristic only where it is confident.

:class:`GatedAgent` plays a heuristic agent (the *fallback*, e.g. :class:`SJBFAgent` =
EASY-SJBF's choice) at every decision point, except where the trained model's most
probable action is another one and the model gives it a probability of at least ``tau``:
there the model's action is played. ``tau = 0`` is the model's own deterministic choice
everywhere; ``tau > 1`` is the fallback everywhere. In between, the agent keeps the
heuristic's choices where the model is unsure -- e.g. under a load or on a trace the model
was not trained on -- and takes the model's where it is sure.

The threshold is a choice like a checkpoint's, made on validation windows
(``eval/gate.py``); a model card with a ``gate`` section (``{"tau": ..., "fallback":
...}``, docs/evaluation.md *Gated agents*) is loaded as a :class:`GatedAgent` by
:func:`hpcgym_agents.load_agent`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GatedAgent", "action_probabilities"]


def action_probabilities(model: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The masked action probabilities of an SB3 ``MaskablePPO`` model, ``(N, K + 1)``.

    :param model: a ``MaskablePPO`` model (its policy's ``action_probabilities`` when it has
        one, as :class:`~hpcgym_agents.kernel_policy.KernelPolicy` does; else SB3's
        ``get_distribution``)
    :param observations: ``(N, K, F)``
    :param masks: bool ``(N, K + 1)``
    """
    policy = model.policy
    fn = getattr(policy, "action_probabilities", None)
    if callable(fn):
        return np.asarray(fn(observations, action_masks=masks), dtype=np.float64)
    import torch as th

    policy.set_training_mode(False)
    obs_tensor, _ = policy.obs_to_tensor(observations)
    with th.no_grad():
        dist = policy.get_distribution(obs_tensor, action_masks=masks)
        return np.asarray(dist.distribution.probs.cpu().numpy(), dtype=np.float64)


class GatedAgent:
    """The fallback's action unless the model is at least ``tau`` sure of another one.

    SB3's ``predict`` signature (one observation or a batch), so it runs wherever a model
    or a heuristic agent runs (``hpcgym.evaluation``, the env directly).

    :param model: the trained ``MaskablePPO`` model
    :param fallback: the heuristic agent whose choice is kept (``predict`` with masks)
    :param tau: the probability the model's most probable action needs to replace the
        fallback's (``0``: always the model's; above ``1``: never)
    :raises ValueError: ``tau`` is negative or not a finite number
    """

    def __init__(self, model: Any, fallback: Any, tau: float) -> None:
        tau = float(tau)
        if not np.isfinite(tau) or tau < 0:
            raise ValueError(f"tau must be a finite number >= 0, got {tau}")
        self.model = model
        self.fallback = fallback
        self.tau = tau
        #: decision points seen and those where the model's action replaced the fallback's
        self.decisions = 0
        self.departures = 0

    @property
    def observation_space(self) -> Any:
        """The model's observation space (what the evaluation builds the env for)."""
        return self.model.observation_space

    @property
    def action_space(self) -> Any:
        """The model's action space."""
        return self.model.action_space

    def reset_counts(self) -> None:
        """Set :attr:`decisions` and :attr:`departures` to 0."""
        self.decisions = 0
        self.departures = 0

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """Choose actions (SB3-compatible signature; always deterministic).

        :param observation: ``(K, F)`` or ``(N, K, F)``
        :param state: returned unchanged
        :param episode_start: unused (SB3 compatibility)
        :param deterministic: unused: the gate compares the model's most probable action
        :param action_masks: bool ``(K + 1,)`` / ``(N, K + 1)`` (the env's
            ``action_masks()``); ``None``: the valid rows and STOP
        :return: ``(actions, state)``: a 0-d array for one observation, ``(N,)`` for a batch
        """
        obs = np.asarray(observation)
        if obs.ndim not in (2, 3):
            raise ValueError(
                f"observation must be (K, F) or a batch (N, K, F), got shape {obs.shape}"
            )
        single = obs.ndim == 2
        batch = obs[None] if single else obs
        n, k = batch.shape[0], batch.shape[1]
        if action_masks is None:
            masks = np.ones((n, k + 1), dtype=bool)
            masks[:, :k] = batch[:, :, 0] > 0.5
        else:
            masks = np.asarray(action_masks, dtype=bool).reshape(n, k + 1)
        base, _ = self.fallback.predict(batch, action_masks=masks)
        base = np.asarray(base, dtype=np.int64).reshape(n)
        if self.tau > 1.0:
            actions = base
        else:
            probs = action_probabilities(self.model, batch, masks)
            best = probs.argmax(axis=1)
            sure = probs[np.arange(n), best] >= self.tau
            depart = sure & (best != base)
            actions = np.where(depart, best, base).astype(np.int64)
            self.departures += int(depart.sum())
        self.decisions += n
        return (actions[0] if single else actions), state
