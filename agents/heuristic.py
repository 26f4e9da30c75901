"""Heuristic backfilling agents with the SB3 ``predict`` interface.

Every agent here answers ``predict(observation, state=None, episode_start=None,
deterministic=True, action_masks=None) -> (actions, state)`` exactly like an SB3 / sb3-contrib
model, so evaluation code can run a trained ``MaskablePPO`` and a heuristic the same way.

Observation / action contract (the hpcgym backfilling env): an observation is ``(K, F)`` (one
row per candidate job, column 0 = validity flag) or a batch ``(N, K, F)``; the action space is
``Discrete(K + 1)`` with ``K`` = STOP; masks are bool ``(K + 1,)`` or ``(N, K + 1)``.

This module holds the env-independent agents (:class:`StopAlways`, :class:`RandomValid`,
:class:`FirstValid`) and the base class :class:`HeuristicAgent`; agents that need the env's
internals (EASY, SJBF, ...) subclass it next to the env.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

__all__ = ["FirstValid", "HeuristicAgent", "RandomValid", "StopAlways", "valid_and_stop"]


def valid_and_stop(observation: np.ndarray) -> np.ndarray:
    """The default action mask of observations ``(K, F)`` or ``(N, K, F)``: the valid rows
    (column 0) and STOP, ``(K + 1,)`` or ``(N, K + 1)`` bool."""
    valid = np.asarray(observation)[..., 0] > 0.5
    return np.concatenate([valid, np.ones((*valid.shape[:-1], 1), dtype=bool)], axis=-1)


class HeuristicAgent(ABC):
    """Base class of the heuristic agents: shape handling and mask validation.

    Subclasses implement :meth:`select`, which sees a batch: observations ``(N, K, F)`` and
    bool masks ``(N, K + 1)`` (always given, at least STOP is set) and returns ``N`` actions.
    :meth:`predict` accepts one observation or a batch and returns actions shaped like SB3's
    (a 0-d array for one observation, ``(N,)`` for a batch).

    When ``action_masks`` is ``None`` the mask is derived from the observation: the rows whose
    validity flag (column 0) is set, plus STOP. This is what the env would allow for padding
    only; an env that masks more (e.g. jobs that do not fit) must pass its masks.
    """

    def predict(
        self,
        observation: np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Choose actions (SB3-compatible signature).

        :param observation: ``(K, F)`` or ``(N, K, F)``
        :param state: recurrent state; unused, returned unchanged
        :param episode_start: unused (SB3 compatibility)
        :param deterministic: unused by the deterministic heuristics; see :class:`RandomValid`
        :param action_masks: bool ``(K + 1,)`` / ``(N, K + 1)``, or ``(K,)`` / ``(N, K)`` for
            an env without STOP (Schedule-v0); ``None``: derived from the validity flags
            (see the class docstring)
        :return: ``(actions, state)``
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
            masks = valid_and_stop(batch)
        else:
            masks = np.asarray(action_masks)
            if masks.dtype != np.bool_:
                if not np.isin(masks, (0, 1)).all():
                    raise ValueError("action_masks must be boolean (or 0/1)")
                masks = masks.astype(bool)
            if single and masks.shape in ((k + 1,), (k,)):
                masks = masks[None]
            if masks.shape not in ((n, k + 1), (n, k)):
                raise ValueError(
                    f"action_masks shape {masks.shape} does not match the observation "
                    f"{obs.shape}: expected {(k + 1,) if single else (n, k + 1)} (K rows + "
                    f"STOP, Backfill-v0) or {(k,) if single else (n, k)} (K rows, Schedule-v0)"
                )
        actions = np.asarray(self.select(batch, masks), dtype=np.int64)
        if actions.shape != (n,):
            raise RuntimeError(
                f"{type(self).__name__}.select returned shape {actions.shape}, expected ({n},)"
            )
        chosen_ok = masks[np.arange(n), actions]
        if not chosen_ok.all():
            raise RuntimeError(
                f"{type(self).__name__} chose masked action(s) {actions[~chosen_ok].tolist()}"
            )
        return (actions[0] if single else actions), state

    @abstractmethod
    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Actions ``(N,)`` for observations ``(N, K, F)`` and bool masks ``(N, K + 1)``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class StopAlways(HeuristicAgent):
    """Always STOP (action ``K``): never backfills (plain queue order without backfilling)."""

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        n, k = observations.shape[0], observations.shape[1]
        if not masks[:, k].all():
            raise ValueError("StopAlways needs STOP (action K) to be valid in every mask")
        return np.full(n, k, dtype=np.int64)


class FirstValid(HeuristicAgent):
    """The lowest-index valid row (the first in the env's row order), STOP if none."""

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        k = observations.shape[1]
        rows = masks[:, :k]
        none = k if masks.shape[1] > k else 0  # STOP, or row 0 without a STOP action
        return np.where(rows.any(axis=1), rows.argmax(axis=1), none).astype(np.int64)


class RandomValid(HeuristicAgent):
    """Uniformly random among the valid actions, drawn from a seeded ``numpy`` Generator.

    Random whatever ``deterministic`` says (it is the random baseline).

    :param seed: seed of the agent's own ``numpy.random.Generator`` (``None``: fresh entropy)
    :param include_stop: ``True``: uniform over all valid actions, STOP included;
        ``False``: uniform over the valid rows, STOP only when no row is valid
    """

    def __init__(self, seed: int | None = None, include_stop: bool = True) -> None:
        self.seed = seed
        self.include_stop = include_stop
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Restart the random stream (from ``seed``, or from the constructor's seed)."""
        self.rng = np.random.default_rng(self.seed if seed is None else seed)

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        k = observations.shape[1]
        allowed = masks.copy()
        if not self.include_stop and masks.shape[1] > k:
            has_row = allowed[:, :k].any(axis=1)
            allowed[has_row, k] = False
        counts = allowed.sum(axis=1)
        if (counts == 0).any():
            raise ValueError("RandomValid got a mask without any valid action")
        # The j-th allowed action, j uniform in [0, count): one draw per observation.
        pick = self.rng.integers(0, counts)
        cum = np.cumsum(allowed, axis=1)
        return (cum > pick[:, None]).argmax(axis=1).astype(np.int64)

    def __repr__(self) -> str:
        return f"RandomValid(seed={self.seed!r}, include_stop={self.include_stop!r})"
