"""The RLBackfilling kernel policy as an sb3-contrib ``MaskablePPO`` policy.

RLBackfilling (paper 004, section 3.3) scores every backfill candidate with one small MLP
shared across the job rows (the *kernel*), turns the scores into a distribution with a
softmax over the rows, and trains a separate value network on the flattened observation.
:class:`KernelPolicy` implements that network as a
:class:`~sb3_contrib.common.maskable.policies.MaskableActorCriticPolicy`, so that::

    from sb3_contrib import MaskablePPO
    from hpcgym_agents import KernelPolicy

    model = MaskablePPO(KernelPolicy, env, policy_kwargs=dict(value_head="pooled"))
    model.learn(100_000)
    model.save("kernel.zip")
    model = MaskablePPO.load("kernel.zip")  # no custom_objects needed
    action, _ = model.predict(obs, action_masks=info["action_mask"], deterministic=True)

Observation / action contract (the hpcgym backfilling env):

- observation ``Box(0, 1, (K, F), float32)``: one row per candidate job; column 0 of every
  row is a validity flag (1 = real candidate, 0 = padding);
- action ``Discrete(K + 1)``: ``i < K`` starts row ``i``'s job, ``K`` is STOP;
- ``info["action_mask"]`` (or ``env.get_wrapper_attr("action_masks")()``) gives a bool
  ``(K + 1,)`` array.

The action logits are ``[score(row_0), ..., score(row_{K-1}), stop_score]``. Masked logits are
replaced by sb3-contrib's :class:`~sb3_contrib.common.maskable.distributions.MaskableCategorical`
with ``-1e8``, which makes their probability exactly 0 in float32 (``exp`` underflows), so they
are never sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn

from hpcgym_agents.kernel_network import (
    DEFAULT_KERNEL_ARCH,
    DEFAULT_VALUE_ARCH,
    GATHER_RATIO,
    ROW_CONTEXTS,
    STOP_SCORES,
    VALUE_HEADS,
    JobRowsExtractor,
    KernelNetwork,
    as_arch,
    as_prior,
    check_obs_space,
)
from hpcgym_agents.kernel_ops import (
    PADDING_LOGIT,
    FastMaskableCategorical,
    FastMaskableCategoricalDistribution,
    ScaledLrHooks,
    make_optimizer,
)

__all__ = [
    "GATHER_RATIO",
    "PADDING_LOGIT",
    "FastMaskableCategorical",
    "FastMaskableCategoricalDistribution",
    "STOP_SCORES",
    "VALUE_HEADS",
    "JobRowsExtractor",
    "KernelNetwork",
    "KernelPolicy",
]

#: Paper's (reference code's) policy / value learning rates: pi_lr=3e-4, vf_lr=1e-3.
DEFAULT_VALUE_LR_RATIO: float = 1e-3 / 3e-4


class KernelPolicy(MaskableActorCriticPolicy):
    """RLBackfilling's kernel actor-critic (paper 004, section 3.3) for ``MaskablePPO``.

    **Actor.** One MLP ``F -> kernel_arch -> 1`` (paper / reference code: 32-16-8, ReLU; about
    1k parameters for F = 10) is applied to every row and gives that row's score; rows whose
    validity flag (column 0) is 0 get the score :data:`PADDING_LOGIT`, so padding rows have
    probability exactly 0 and cannot change the probabilities of the other actions, even
    when no action mask is passed. The logits are ``[row scores..., STOP score]``, the
    distribution is sb3-contrib's masked categorical (masked softmax). Because the kernel is
    shared, permuting the rows permutes the row logits; the STOP logit is unchanged.

    With ``Discrete(K)`` actions (``hpcgym/Schedule-v0``: one action per row, no STOP)
    the logits are the row scores alone and ``stop_score`` is ignored.

    STOP score (``stop_score``), the one action that is not a row:

    - ``"learned"`` (default): a learned scalar, independent of the state. Softmax is
      shift-invariant, so this is exactly as expressive as ``"fixed"`` (the kernel's output
      bias can move all row scores against a constant); it only makes the STOP preference
      an explicit parameter (initialised to 0: a uniform initial policy).
    - ``"fixed"``: the constant 0 (no parameter); rows are scored relative to STOP.
    - ``"pooled"``: a small MLP (``stop_arch``) over the mean and max of the kernel's last
      hidden layer over the valid rows, so the STOP preference can depend on the whole queue
      (not only through the row scores). Permutation-invariant.

    Row context (``row_context``):

    - ``"none"`` (default, the paper's): a row's score depends on that row only; the rows
      meet only in the softmax.
    - ``"pooled"``: the kernel's last hidden layer ``e_i`` of every row is concatenated
      with the mean and max of ``e`` over the valid rows, and a small MLP
      (``context_arch``) and ``Linear(., 1)`` give the row's score (a DeepSets-style
      context: a job can be scored against the other candidates, e.g. as the shortest of
      them). Still permutation-equivariant.

    Score prior (``row_prior``, off by default): ``(column, weight)`` pairs add a known
    heuristic to every row's score, ``score_i = kernel(row_i) + prior(row_i)`` with
    ``prior`` the sum of ``w * x - min(w, 0)`` over the pairs, ``x`` the row's value in
    the column and ``w`` a learned weight that starts at ``weight``
    (:meth:`KernelNetwork.prior`). With a prior the kernel's output layer starts at
    exactly 0, so the initial policy is the heuristic, its ties included (equal values:
    the lowest row, FCFS), and the kernel learns a residual on it (the gradient reaches
    the hidden layers once the output layer moves).
    E.g. the ``estimate`` column (2) with ``weight = -50``: the argmax starts at
    shortest-estimate-first, the order of EASY-SJBF's backfilling, and the prior is never
    negative, so with ``stop_init < 0`` it starts by backfilling whenever a job fits (as
    EASY-SJBF does).

    **Critic** (``value_head``), with no parameter shared with the actor:

    - ``"flat"`` (default, the paper's): an MLP over the flattened ``(K*F)`` observation, hidden
      layers ``value_arch`` (default ``(32, 16, 8)``, the RLBackfilling code's critic), then
      ``Linear(., 1)``. Padding rows are zeroed first. Tied to the queue size K.
    - ``"pooled"``: a per-row encoder (``value_row_arch``, default ``(32, 16)``), mean and max
      pooled over the valid rows, then an MLP (``value_arch``, default ``(64, 32)``) and
      ``Linear(., 1)``. Permutation-invariant and its weights do not depend on K.

    **Learning rates.** The RLBackfilling code trains the policy with 3e-4 and the value
    network with 1e-3 (two Adam optimizers). SB3 has one optimizer and, before every update,
    sets *all* its parameter groups to ``lr_schedule(progress)``. Here the optimizer has two
    parameter groups (``"policy"``: kernel + STOP head, ``lr_scale`` 1; ``"value"``: value
    network, ``lr_scale = value_lr_ratio``), and optimizer step hooks multiply each group's
    scheduled lr by its ``lr_scale`` for the duration of ``step()`` only. So with
    ``MaskablePPO(..., learning_rate=3e-4)`` and the default ``value_lr_ratio = 1e-3/3e-4``
    the policy steps with 3e-4 and the value net with 1e-3; a schedule (e.g. linear decay)
    scales both, keeping the ratio. ``train/learning_rate`` in the SB3 logs is the policy lr.
    Set ``value_lr_ratio=1.0`` for SB3's single learning rate. Remaining differences from the
    paper's training (kept as SB3 does it): one combined loss ``pg + vf_coef * vf - ent``,
    minibatch epochs instead of 80 full-batch iterations, a global gradient-norm clip. As
    actor and critic share no parameter and Adam is invariant to loss scale, ``vf_coef``
    barely matters.

    **Speed**. The kernel, the pooled heads and the first layer of the flat critic
    run only on the rows up to the last valid row of the batch (the env lists candidates
    first, so typically a few of the 128 rows); the masked distribution is
    :class:`FastMaskableCategorical` (``log_softmax``, no argument validation) and Adam is
    fused. Logits, values, probabilities and gradients equal the dense computation
    (:meth:`KernelNetwork.row_scores_dense`, :meth:`KernelNetwork.forward_critic_dense`,
    sb3-contrib's ``MaskableCategorical``) to float rounding (``tests/test_train_speed.py``).

    :param observation_space: ``Box`` of shape ``(K, F)``; column 0 = validity flag
    :param action_space: ``Discrete(K + 1)``; action ``K`` is STOP
    :param lr_schedule: learning rate schedule (given by the algorithm); the policy lr
    :param kernel_arch: hidden widths of the shared per-row kernel (default ``(32, 16, 8)``)
    :param activation_fn: activation after every hidden layer (the paper does not name it;
        the RLBackfilling code uses ReLU, the default here)
    :param stop_score: ``"learned"`` (default), ``"fixed"`` or ``"pooled"`` (see above)
    :param stop_arch: hidden widths of the ``"pooled"`` STOP MLP (default ``(16,)``)
    :param value_head: ``"flat"`` (default) or ``"pooled"`` (see above)
    :param value_arch: hidden widths of the value MLP (default: ``(32, 16, 8)`` for
        ``"flat"``, ``(64, 32)`` for ``"pooled"``)
    :param value_row_arch: per-row encoder of the ``"pooled"`` value head (default
        ``(32, 16)``; must not be empty)
    :param row_context: ``"none"`` (default) or ``"pooled"`` (see above)
    :param context_arch: hidden widths of the ``"pooled"`` row-context scorer (default
        ``(16,)``)
    :param row_prior: ``(column, weight)`` pairs of the score prior (see above; ``column``
        an observation column other than the validity flag, each once, ``weight`` its
        learned weight's initial value; one pair may be given bare), or ``None``
        (default, the paper's: no prior)
    :param stop_init: initial STOP logit (the learned bias starts there; the fixed score and
        the pooled head's offset are this constant). Default 0; a negative value encodes the
        prior that backfilling is usually better than waiting, which keeps the argmax of an
        untrained or barely trained policy from choosing STOP while the row scores are flat
    :param value_lr_ratio: value lr / policy lr (default ``1e-3 / 3e-4``, the paper's)
    :param ortho_init: orthogonal init as in SB3 (hidden layers gain sqrt(2), row-score and
        STOP output layers 0.01, value output 1); ``False`` keeps PyTorch's default init
    :param features_extractor_class: must output ``(N, K, D)`` rows with the validity flag in
        column 0 and ``features_dim = D`` (default :class:`JobRowsExtractor`, the identity)
    :param features_extractor_kwargs: keyword arguments for the features extractor
    :param normalize_images: unused (no image observations), kept for SB3 compatibility
    :param optimizer_class: optimizer (default Adam, eps=1e-5 as in SB3)
    :param optimizer_kwargs: optimizer keyword arguments, excluding the learning rate
    :param net_arch: not used; must be ``None`` (use ``kernel_arch`` / ``value_arch``)
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        kernel_arch: Sequence[int] = DEFAULT_KERNEL_ARCH,
        activation_fn: type[nn.Module] = nn.ReLU,
        stop_score: str = "learned",
        stop_arch: Sequence[int] = (16,),
        value_head: str = "flat",
        value_arch: Sequence[int] | None = None,
        value_row_arch: Sequence[int] = (32, 16),
        value_lr_ratio: float = DEFAULT_VALUE_LR_RATIO,
        stop_init: float = 0.0,
        row_context: str = "none",
        context_arch: Sequence[int] = (16,),
        row_prior: Sequence[Any] | None = None,
        ortho_init: bool = True,
        features_extractor_class: type[BaseFeaturesExtractor] = JobRowsExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        net_arch: None = None,
    ) -> None:
        if net_arch is not None:
            raise ValueError(
                "KernelPolicy does not use net_arch; set kernel_arch (the per-row kernel), "
                f"value_arch and value_row_arch instead (got net_arch={net_arch!r})"
            )
        check_obs_space(observation_space)
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                f"KernelPolicy needs a Discrete(K + 1) action space, got {action_space!r}"
            )
        n_rows = int(observation_space.shape[0])
        if int(action_space.n) not in (n_rows, n_rows + 1):
            raise ValueError(
                f"action space Discrete({int(action_space.n)}) does not match {n_rows} "
                f"observation rows: expected Discrete({n_rows + 1}) (one action per row + STOP, "
                f"Backfill-v0) or Discrete({n_rows}) (one action per row, Schedule-v0)"
            )
        if int(action_space.n) == n_rows:
            stop_score = "none"  # no STOP action: the logits are the row scores
        elif stop_score not in STOP_SCORES:
            raise ValueError(f"stop_score must be one of {STOP_SCORES}, got {stop_score!r}")
        if value_head not in VALUE_HEADS:
            raise ValueError(f"value_head must be one of {VALUE_HEADS}, got {value_head!r}")
        if row_context not in ROW_CONTEXTS:
            raise ValueError(f"row_context must be one of {ROW_CONTEXTS}, got {row_context!r}")
        self.row_prior = as_prior(row_prior, int(observation_space.shape[1]))
        if not (np.isfinite(value_lr_ratio) and value_lr_ratio > 0):
            raise ValueError(f"value_lr_ratio must be a positive number, got {value_lr_ratio!r}")
        # Plain attributes may be set before nn.Module.__init__ (runs inside super().__init__,
        # which also calls self._build and so needs them).
        self.n_rows = n_rows
        self.kernel_arch = as_arch(kernel_arch, "kernel_arch")
        self.stop_score = stop_score
        self.stop_arch = as_arch(stop_arch, "stop_arch")
        self.value_head = value_head
        self.value_arch = as_arch(
            DEFAULT_VALUE_ARCH[value_head] if value_arch is None else value_arch, "value_arch"
        )
        self.value_row_arch = as_arch(value_row_arch, "value_row_arch", allow_empty=False)
        self.value_lr_ratio = float(value_lr_ratio)
        self.stop_init = float(stop_init)
        self.row_context = row_context
        self.context_arch = as_arch(context_arch, "context_arch")
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch=[],
            activation_fn=activation_fn,
            ortho_init=ortho_init,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            share_features_extractor=True,
            normalize_images=normalize_images,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
        )

        # same distribution as sb3-contrib's, computed faster (see FastMaskableCategorical)
        self.action_dist = FastMaskableCategoricalDistribution(int(action_space.n))

    # ------------------------------------------------------------------ construction
    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = KernelNetwork(
            n_rows=self.n_rows,
            row_dim=self.features_dim,
            kernel_arch=self.kernel_arch,
            activation_fn=self.activation_fn,
            stop_score=self.stop_score,
            stop_arch=self.stop_arch,
            value_head=self.value_head,
            value_arch=self.value_arch,
            value_row_arch=self.value_row_arch,
            stop_init=self.stop_init,
            row_context=self.row_context,
            context_arch=self.context_arch,
            row_prior=self.row_prior,
        ).to(self.device)

    def _build(self, lr_schedule: Schedule) -> None:
        self._build_mlp_extractor()
        net: KernelNetwork = self.mlp_extractor
        # The kernel network already outputs the logits [row scores..., STOP score].
        self.action_net = nn.Identity()
        self.value_net = nn.Linear(net.latent_dim_vf, 1)
        if self.ortho_init:
            gain = float(np.sqrt(2))
            for module in (net.kernel, net.value_trunk, self.features_extractor):
                module.apply(lambda m, g=gain: self.init_weights(m, gain=g))
            if net.value_rows is not None:
                net.value_rows.apply(lambda m, g=gain: self.init_weights(m, gain=g))
            if net.context_net is not None:
                net.context_net.apply(lambda m, g=gain: self.init_weights(m, gain=g))
            self.init_weights(net.kernel_out, gain=0.01)
            if net.stop_net is not None:
                net.stop_net.apply(lambda m, g=gain: self.init_weights(m, gain=g))
                self.init_weights(net.stop_net[-1], gain=0.01)
            self.init_weights(self.value_net, gain=1.0)
        if net.prior_weight is not None:
            # with a prior the kernel's output starts at exactly 0: the initial policy is
            # the prior's heuristic, ties included (a near-0 output would break its ties,
            # e.g. between equal requests, in another order than FCFS)
            nn.init.zeros_(net.kernel_out.weight)
            nn.init.zeros_(net.kernel_out.bias)

        policy_params = [p for m in net.policy_modules() for p in m.parameters()]
        if net.stop_bias is not None:
            policy_params.append(net.stop_bias)
        if net.prior_weight is not None:
            policy_params.append(net.prior_weight)
        value_params = [p for m in net.value_modules() for p in m.parameters()]
        value_params += list(self.value_net.parameters())
        grouped = {id(p) for p in policy_params + value_params}
        extra = [p for p in self.parameters() if id(p) not in grouped]
        # A trainable features extractor (none by default) learns with the policy.
        policy_params += extra
        assert len(grouped) + len(extra) == len(list(self.parameters()))
        self.optimizer = make_optimizer(
            self.optimizer_class,
            [
                {"params": policy_params, "name": "policy", "lr_scale": 1.0},
                {"params": value_params, "name": "value", "lr_scale": self.value_lr_ratio},
            ],
            lr_schedule(1),  # type: ignore[call-arg]
            self.optimizer_kwargs,
        )
        self.optimizer.register_step_pre_hook(ScaledLrHooks.pre)
        self.optimizer.register_step_post_hook(ScaledLrHooks.post)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.pop("net_arch", None)
        data.update(
            dict(
                kernel_arch=self.kernel_arch,
                stop_score=self.stop_score,
                stop_arch=self.stop_arch,
                value_head=self.value_head,
                value_arch=self.value_arch,
                value_row_arch=self.value_row_arch,
                value_lr_ratio=self.value_lr_ratio,
                stop_init=self.stop_init,
                row_context=self.row_context,
                context_arch=self.context_arch,
                row_prior=self.row_prior,
            )
        )
        return data

    # ------------------------------------------------------------------ helpers
    def action_logits(self, obs: th.Tensor) -> th.Tensor:
        """Unmasked logits ``(N, K + 1)`` = ``[row scores..., STOP score]`` for ``obs``."""
        features = self.extract_features(obs, self.pi_features_extractor)
        return self.action_net(self.mlp_extractor.forward_actor(features))

    def action_probabilities(
        self, observation: np.ndarray, action_masks: np.ndarray | None = None
    ) -> np.ndarray:
        """Masked action probabilities, ``(K + 1,)`` for one observation or ``(N, K + 1)``.

        :param observation: ``(K, F)`` or ``(N, K, F)``
        :param action_masks: bool ``(K + 1,)`` or ``(N, K + 1)``, or ``None``
        """
        self.set_training_mode(False)
        obs_tensor, vectorized = self.obs_to_tensor(observation)
        with th.no_grad():
            dist = self.get_distribution(obs_tensor, action_masks=action_masks)
            probs = dist.distribution.probs.cpu().numpy()
        return probs if vectorized else probs[0]

    def parameter_counts(self) -> dict[str, int]:
        """Number of trainable parameters: ``kernel`` (row scorer incl. its output layer and
        the prior's weights), ``stop``, ``policy`` (kernel + stop), ``value`` and
        ``total``."""
        net: KernelNetwork = self.mlp_extractor

        def count(mods: Sequence[nn.Module]) -> int:
            return sum(p.numel() for m in mods for p in m.parameters())

        kernel = count([net.kernel, net.kernel_out])
        kernel += count([net.context_net]) if net.context_net is not None else 0
        kernel += net.prior_weight.numel() if net.prior_weight is not None else 0
        stop = count([net.stop_net]) if net.stop_net is not None else 0
        stop += 1 if net.stop_bias is not None else 0
        value = count([*net.value_modules(), self.value_net])
        total = sum(p.numel() for p in self.parameters())
        return {
            "kernel": kernel,
            "stop": stop,
            "policy": kernel + stop,
            "value": value,
            "total": total,
        }
