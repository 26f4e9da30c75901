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

from hpcgym_agents.heuristic import HeuristicAgent

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


class GatedAgent(HeuristicAgent):
    """The fallback's action unless the model is at least ``tau`` sure of another one.

    SB3's ``predict`` signature (one observation or a batch, always deterministic), so it
    runs wherever a model or a heuristic agent runs (``hpcgym.evaluation``, the env
    directly); a :class:`~hpcgym_agents.heuristic.HeuristicAgent` whose choice needs the
    model.

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

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The fallback's actions, replaced by the model's where it is at least ``tau`` sure
        of another action (:class:`~hpcgym_agents.heuristic.HeuristicAgent` checks the
        shapes and that every action is allowed)."""
        n = observations.shape[0]
        base, _ = self.fallback.predict(observations, action_masks=masks)
        base = np.asarray(base, dtype=np.int64).reshape(n)
        self.decisions += n
        if self.tau > 1.0:
            return base
        probs = action_probabilities(self.model, observations, masks)
        best = probs.argmax(axis=1)
        depart = (probs[np.arange(n), best] >= self.tau) & (best != base)
        self.departures += int(depart.sum())
        return np.where(depart, best, base).astype(np.int64)

    def __repr__(self) -> str:
        return f"GatedAgent(tau={self.tau:g}, fallback={self.fallback!r})"
