"""A lean masked PPO for the kernel policy: sb3-contrib's ``MaskablePPO`` on compact rollouts.

:class:`LeanMaskablePPO` is a ``MaskablePPO`` (same ``learn()`` loop, callbacks, logger,
schedules, ``save``/``load``) that overrides only the two hot loops:

* ``collect_rollouts``: one batched forward of the kernel network per env step on the valid
  rows of the ``N`` observations (:func:`train.compact.compact_from_dense`), sampling from
  the masked softmax, into a :class:`train.compact.CompactRolloutBuffer` (valid rows only;
  GAE as SB3's);
* ``train``: the loss of ``MaskablePPO.train`` (clip range schedule, optional
  ``clip_range_vf``, ``ent_coef``, ``vf_coef``, ``max_grad_norm``, ``target_kl`` early stop,
  ``normalize_advantage``, the same ``train/*`` log keys) on minibatches of those rows
  (:func:`train.compact.evaluate_compact`); no padded ``(B, K, F)`` copies, no per-sample
  Python; the gradient-norm pass is skipped when ``max_grad_norm`` is infinite (SB3 would
  multiply the gradients by 1).

Optionally (``anchor_kl > 0``, ``--anchor-kl``) the loss adds ``anchor_kl x KL(policy ||
anchor)``, averaged over the minibatch's samples, where the anchor is a frozen copy of the
policy the training started from (:meth:`LeanMaskablePPO.set_anchor`): it holds PPO near a
start worth keeping (a ``--row-prior`` heuristic, a behaviour-cloned ``--init-from``) and
lets it move only where the advantage pays for the divergence (the KL-regularised
objective of fine-tuning from a prior policy). At the anchor the penalty and its gradient
are 0, so the first gradient step equals PPO's.

The model it trains is a ``MaskablePPO`` with a :class:`~hpcgym_agents.kernel_policy.KernelPolicy`:
its zip loads with plain ``sb3_contrib.MaskablePPO.load`` (``tests/test_train_lean.py``), and
a checkpoint of either algorithm continues with the other. Loss, gradients, advantages
and returns equal ``MaskablePPO``'s on the same data (tested).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import explained_variance
from stable_baselines3.common.vec_env import VecEnv
from torch.nn import functional as F

from train.compact import (
    CompactRolloutBuffer,
    actor_logits,
    batch_of,
    check_policy,
    compact_step,
    critic_values,
    evaluate_compact_logp,
    kl_to,
)
from train.config import ALGOS
from train.vecenv import NativeVecEnv

__all__ = ["ALGOS", "LeanMaskablePPO", "algo_class", "sample_columns", "vec_masks"]


def algo_class(algo: str) -> type[MaskablePPO]:
    """The algorithm class of ``--algo``.

    :param algo: ``lean`` or ``sb3``
    """
    if algo == "lean":
        return LeanMaskablePPO
    if algo == "sb3":
        return MaskablePPO
    raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")


class LeanMaskablePPO(MaskablePPO):
    """``MaskablePPO`` with compact rollouts and a lean update (see the module docstring).

    Takes ``MaskablePPO``'s arguments; the policy must be a
    :class:`~hpcgym_agents.kernel_policy.KernelPolicy` (with its identity features
    extractor), the observation space a ``Box`` ``(K, F)`` and the action space
    ``Discrete(K + 1)``. ``rollout_buffer_class`` is ignored (the compact buffer is used).

    :param anchor_kl: coefficient of the KL penalty to the anchor policy (0: none, plain
        PPO). The anchor is set by :meth:`set_anchor`, or at the first update to the policy
        that collected its rollout (the start of training). It is not saved in the zip
        (which stays a plain ``MaskablePPO`` zip); ``train/ppo.py`` keeps it in the run
        folder (``anchor.pt``) so that a resumed run keeps its anchor.
    """

    rollout_buffer: CompactRolloutBuffer  # type: ignore[assignment]

    def __init__(self, *args: Any, anchor_kl: float = 0.0, **kwargs: Any) -> None:
        if not (math.isfinite(anchor_kl) and anchor_kl >= 0):
            raise ValueError(f"anchor_kl must be a finite number >= 0, got {anchor_kl!r}")
        self.anchor_kl = float(anchor_kl)
        self.anchor_policy: Any = None
        super().__init__(*args, **kwargs)

    def set_anchor(self, state_dict: Mapping[str, Any] | None = None) -> None:
        """Freeze a copy of the policy as the anchor of the KL penalty: the current policy,
        or the policy with the weights ``state_dict`` (e.g. a run's ``anchor.pt``).

        :param state_dict: the anchor's weights (``None``: the current policy's)
        """
        anchor = copy.deepcopy(self.policy)
        if state_dict is not None:
            anchor.load_state_dict(state_dict)
        anchor.set_training_mode(False)
        for param in anchor.parameters():
            param.requires_grad_(False)
        self.anchor_policy = anchor

    def _setup_model(self) -> None:
        self.rollout_buffer_class = None
        self.rollout_buffer_kwargs = {}
        n_steps = self.n_steps
        self.n_steps = 1  # the dense buffer MaskablePPO builds is replaced below
        try:
            super()._setup_model()
        finally:
            self.n_steps = n_steps
        if not isinstance(self.observation_space, spaces.Box) or not isinstance(
            self.action_space, spaces.Discrete
        ):
            raise ValueError(
                "the lean PPO needs a Box (K, F) observation and Discrete(K + 1) or Discrete(K)"
            )
        check_policy(self.policy)
        self.rollout_buffer = CompactRolloutBuffer(
            self.n_steps, self.n_envs, self.gamma, self.gae_lambda, self.device
        )
        self.rollout_buffer.rng = self.np_rng

    def set_random_seed(self, seed: int | None = None) -> None:
        """SB3's seeding (torch, numpy, the action space, the envs), plus :attr:`np_rng`:
        the ``numpy.random.Generator`` of the lean PPO's own draws (sampled actions,
        minibatch order), seeded with ``seed``.

        :param seed: the seed (``None``: fresh entropy)
        """
        super().set_random_seed(seed)
        self.np_rng = np.random.default_rng(seed)
        if isinstance(getattr(self, "rollout_buffer", None), CompactRolloutBuffer):
            self.rollout_buffer.rng = self.np_rng

    def _excluded_save_params(self) -> list[str]:
        # the buffer class is not saved: the zip loads with plain MaskablePPO
        return [
            *super()._excluded_save_params(),
            "rollout_buffer_class",
            "rollout_buffer_kwargs",
            "anchor_policy",
        ]

    # ------------------------------------------------------------------ rollouts
    def _values_of(self, obs: np.ndarray) -> th.Tensor:
        with th.no_grad():
            return critic_values(self.policy, batch_of(compact_step(obs), self.device))

    def collect_rollouts(  # type: ignore[override]
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: CompactRolloutBuffer,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        """Fill ``rollout_buffer`` with ``n_rollout_steps`` steps of every env (SB3's
        ``collect_rollouts``: same callbacks, locals, episode bookkeeping and timeout
        bootstrap), one compact forward of the policy per step.

        :param env: the training envs
        :param callback: the callbacks
        :param rollout_buffer: the compact buffer
        :param n_rollout_steps: steps per env
        :param use_masking: follow the envs' action masks (else: valid rows + STOP)
        """
        assert self._last_obs is not None, "No previous observation was provided"
        self.policy.set_training_mode(False)
        n_steps = 0
        rollout_buffer.reset()
        if use_masking and not is_masking_supported(env):
            raise ValueError("Environment does not support action masking")
        n_act = int(self.action_space.n)  # type: ignore[attr-defined]
        # column 0: STOP (action K) with Discrete(K + 1); without STOP (Schedule-v0,
        # Discrete(K)) the pass of a finished episode, action 0
        k = n_act - 1 if n_act == int(self.observation_space.shape[0]) + 1 else 0
        callback.on_rollout_start()
        dones = np.zeros(env.num_envs, dtype=bool)
        new_obs = self._last_obs
        while n_steps < n_rollout_steps:
            obs = np.asarray(self._last_obs)
            action_masks = vec_masks(env) if use_masking else None
            step = compact_step(obs, action_masks)
            with th.no_grad():
                tb = batch_of(step, self.device)
                logp_all = th.log_softmax(actor_logits(self.policy, tb), dim=1).cpu().numpy()
                values = critic_values(self.policy, tb).cpu().numpy()
            col = sample_columns(logp_all, self.np_rng)
            log_probs = logp_all[np.arange(len(col)), col]
            starts = np.cumsum(step.counts) - step.counts
            row_index = step.row_index
            pick = np.clip(starts + col - 1, 0, max(len(row_index) - 1, 0))
            actions = np.where(col == 0, k, row_index[pick] if len(row_index) else k)
            new_obs, rewards, dones, infos = env.step(actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            for idx in np.flatnonzero(dones):  # timeout bootstrap (SB3 issue #633)
                if infos[idx].get("terminal_observation") is not None and infos[idx].get(
                    "TimeLimit.truncated", False
                ):
                    terminal = np.asarray(infos[idx]["terminal_observation"])[None]
                    rewards[idx] += self.gamma * float(self._values_of(terminal)[0])
            rollout_buffer.add(step, col, rewards, self._last_episode_starts, values, log_probs)
            self._last_obs = new_obs  # type: ignore[assignment]
            self._last_episode_starts = dones
        rollout_buffer.compute_returns_and_advantage(
            last_values=self._values_of(np.asarray(new_obs)), dones=dones
        )
        callback.on_rollout_end()
        return True

    # ------------------------------------------------------------------ update
    def train(self) -> None:
        """One PPO update on the compact rollout (``MaskablePPO.train``'s loss and logs)."""
        if self.anchor_kl > 0 and self.anchor_policy is None:
            self.set_anchor()  # the policy that collected the first rollout
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)  # type: ignore[operator]
        clip_range_vf = None
        if self.clip_range_vf is not None:
            clip_range_vf = self.clip_range_vf(self._current_progress_remaining)  # type: ignore[operator]
        clip_grad = self.max_grad_norm is not None and math.isfinite(self.max_grad_norm)
        params = list(self.policy.parameters())
        losses: list[th.Tensor] = []  # per minibatch: pg, value, entropy loss (detached)
        log_ratios: list[th.Tensor] = []  # per minibatch, detached
        epochs: list[int] = []
        loss = th.zeros(())
        continue_training = True
        for epoch in range(self.n_epochs):
            for batch, data in self.rollout_buffer.minibatches(self.batch_size):
                loss, terms, log_ratio = self._minibatch_loss(
                    batch, data, clip_range, clip_range_vf
                )
                losses.append(terms)
                log_ratios.append(log_ratio)
                epochs.append(epoch)
                if self.target_kl is not None:
                    kl = float(th.mean(th.expm1(log_ratio) - log_ratio))
                    if kl > 1.5 * self.target_kl:
                        continue_training = False
                        if self.verbose >= 1:
                            print(
                                f"Early stopping at step {epoch} due to reaching max kl: {kl:.2f}"
                            )
                        break
                self.policy.optimizer.zero_grad()
                loss.backward()
                if clip_grad:
                    th.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                self.policy.optimizer.step()
            self._n_updates += 1
            if not continue_training:
                break
        explained_var = explained_variance(
            self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()
        )
        # the logged statistics of all minibatches at once (as MaskablePPO.train logs them:
        # means over the minibatches; approx_kl over the last epoch's)
        table = th.stack(losses).numpy() if losses else np.full((1, 4), np.nan)
        clip_fractions, kls = _ratio_stats(log_ratios, clip_range)
        last = np.asarray(epochs) == (epochs[-1] if epochs else -1)
        self.logger.record("train/entropy_loss", float(np.mean(table[:, 2])))
        self.logger.record("train/policy_gradient_loss", float(np.mean(table[:, 0])))
        self.logger.record("train/value_loss", float(np.mean(table[:, 1])))
        if self.anchor_kl > 0:
            self.logger.record("train/anchor_kl", float(np.mean(table[:, 3])))
        self.logger.record("train/approx_kl", np.mean(kls[last]) if len(kls) else np.nan)
        self.logger.record("train/clip_fraction", float(np.mean(clip_fractions)))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_var)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)

    def _minibatch_loss(
        self,
        batch: Any,
        data: dict[str, th.Tensor],
        clip_range: float,
        clip_range_vf: float | None,
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """The PPO loss of one minibatch (as ``MaskablePPO.train``; the entropy term only
        when ``ent_coef != 0``, the anchor's KL only when ``anchor_kl > 0``), its logged
        terms ``[pg loss, value loss, entropy loss, KL to the anchor]`` and the log-ratios
        of the new to the old probabilities (detached).

        :param batch: the minibatch's rows
        :param data: its actions, old log-probabilities and values, advantages, returns
        :param clip_range: the policy clip range
        :param clip_range_vf: the value clip range (``None``: no clipping)
        """
        values, log_prob, entropy, logp = evaluate_compact_logp(
            self.policy, batch, data["action_col"], entropy_grad=self.ent_coef != 0
        )
        advantages = data["advantages"]
        if self.normalize_advantage:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        log_ratio = log_prob - data["old_log_prob"]
        ratio = th.exp(log_ratio)
        policy_loss_1 = advantages * ratio
        policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
        policy_loss = -th.min(policy_loss_1, policy_loss_2).mean()
        if clip_range_vf is None:
            values_pred = values
        else:
            old = data["old_values"]
            values_pred = old + th.clamp(values - old, -clip_range_vf, clip_range_vf)
        value_loss = F.mse_loss(data["returns"], values_pred)
        entropy_loss = -th.mean(entropy)
        loss = policy_loss + self.vf_coef * value_loss
        if self.ent_coef != 0:
            loss = loss + self.ent_coef * entropy_loss
        anchor_kl = th.zeros(())
        if self.anchor_kl > 0:
            with th.no_grad():
                anchor_logp = th.log_softmax(actor_logits(self.anchor_policy, batch), dim=1)
            anchor_kl = kl_to(logp, anchor_logp, batch).mean()
            loss = loss + self.anchor_kl * anchor_kl
        terms = th.stack([policy_loss, value_loss, entropy_loss, anchor_kl]).detach()
        return loss, terms, log_ratio.detach()


def _ratio_stats(log_ratios: list[th.Tensor], clip_range: float) -> tuple[np.ndarray, np.ndarray]:
    """Per minibatch: the fraction of clipped ratios and the approximate KL
    ``mean((r - 1) - log r)`` (SB3's), from the minibatches' log-ratios.

    :param log_ratios: one ``(n_i,)`` tensor per minibatch
    :param clip_range: the clip range
    """
    if not log_ratios:
        return np.array([np.nan]), np.array([])
    sizes = np.array([len(x) for x in log_ratios])
    lr = th.cat(log_ratios).numpy().astype(np.float64)
    ratio = np.exp(lr)
    starts = np.cumsum(sizes) - sizes
    clipped = np.add.reduceat((np.abs(ratio - 1) > clip_range).astype(np.float64), starts)
    kl = np.add.reduceat((ratio - 1) - lr, starts)
    return clipped / sizes, kl / sizes


def vec_masks(env: VecEnv) -> np.ndarray:
    """The envs' action masks ``(N, K + 1)``: :class:`train.vecenv.NativeVecEnv` returns
    the batched array itself (sb3-contrib's ``get_action_masks`` would re-stack it)."""
    if isinstance(env, NativeVecEnv):
        return env.action_masks()
    return get_action_masks(env)


def sample_columns(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column per row of the log-probabilities ``logp`` ``(n, c)`` (inverse CDF with
    the model's seeded generator ``rng``; 11 us vs 19 us for ``torch.multinomial`` on 16
    rows). Columns of probability 0 are never drawn."""
    p = np.exp(logp.astype(np.float64))
    cum = np.cumsum(p, axis=1)
    u = rng.random(len(p)) * cum[:, -1]
    col = (cum <= u[:, None]).sum(axis=1)
    last = p.shape[1] - 1 - np.argmax(p[:, ::-1] > 0, axis=1)  # last possible column
    return np.minimum(col, last).astype(np.int64)
