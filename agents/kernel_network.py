"""The network of the kernel policy: the per-row kernel, the STOP score, the value heads.

:class:`KernelNetwork` is the ``mlp_extractor`` of
:class:`~hpcgym_agents.kernel_policy.KernelPolicy` (the sb3-contrib policy around it):
one MLP shared across the job rows scores every row, a STOP score and a value network
complete it. :class:`JobRowsExtractor` hands the rows to it unchanged. The option names
(:data:`STOP_SCORES`, :data:`VALUE_HEADS`, :data:`ROW_CONTEXTS`) and default layer widths
are the policy's options; :mod:`hpcgym_agents.kernel_policy` re-exports every public name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from hpcgym_agents.kernel_ops import PADDING_LOGIT

__all__ = [
    "DEFAULT_KERNEL_ARCH",
    "DEFAULT_VALUE_ARCH",
    "GATHER_RATIO",
    "ROW_CONTEXTS",
    "STOP_SCORES",
    "VALUE_HEADS",
    "JobRowsExtractor",
    "KernelNetwork",
    "Prior",
]

#: Choices of the ``stop_score`` option of :class:`~hpcgym_agents.kernel_policy.KernelPolicy`.
STOP_SCORES: tuple[str, ...] = ("learned", "fixed", "pooled")
#: Choices of the ``value_head`` option of :class:`~hpcgym_agents.kernel_policy.KernelPolicy`.
VALUE_HEADS: tuple[str, ...] = ("flat", "pooled")
#: Choices of the ``row_context`` option of :class:`~hpcgym_agents.kernel_policy.KernelPolicy`.
ROW_CONTEXTS: tuple[str, ...] = ("none", "pooled")
#: Default kernel (shared per-row scorer) hidden layers, from the RLBackfilling code.
DEFAULT_KERNEL_ARCH: tuple[int, ...] = (32, 16, 8)
#: Default hidden layers of the value MLP for each value head (see
#: :class:`~hpcgym_agents.kernel_policy.KernelPolicy`).
DEFAULT_VALUE_ARCH: dict[str, tuple[int, ...]] = {"flat": (32, 16, 8), "pooled": (64, 32)}


def _mlp(in_dim: int, arch: Sequence[int], activation_fn: type[nn.Module]) -> nn.Sequential:
    """Linear + activation for every width in ``arch`` (empty ``arch``: identity)."""
    layers: list[nn.Module] = []
    for width in arch:
        layers += [nn.Linear(in_dim, width), activation_fn()]
        in_dim = width
    return nn.Sequential(*layers)


def as_arch(value: Sequence[int], name: str, allow_empty: bool = True) -> tuple[int, ...]:
    """Validate a layer-width sequence (lists come back from SB3's JSON save format)."""
    if isinstance(value, (int, str)) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a sequence of positive layer widths, got {value!r}")
    arch = tuple(int(w) for w in value)
    if any(w <= 0 for w in arch) or any(int(w) != w for w in value):
        raise ValueError(f"{name} must contain positive integer layer widths, got {value!r}")
    if not arch and not allow_empty:
        raise ValueError(f"{name} must have at least one hidden layer, got {value!r}")
    return arch


def _masked_mean_max(emb: th.Tensor, valid: th.Tensor) -> th.Tensor:
    """Concatenate the mean and the max over the valid rows of ``emb`` (N, K, D) -> (N, 2D).

    Padding rows do not contribute; a state without any valid row gives zeros.
    """
    v = valid.unsqueeze(-1)
    count = v.sum(dim=1).clamp(min=1).to(emb.dtype)
    mean = (emb * v).sum(dim=1) / count
    neg = th.finfo(emb.dtype).min
    mx = th.where(v, emb, th.full_like(emb, neg)).amax(dim=1)
    mx = th.where(valid.any(dim=1, keepdim=True), mx, th.zeros_like(mx))
    return th.cat([mean, mx], dim=-1)


def _active_rows(rows: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """The leading rows of ``rows`` (N, K, F) up to the last valid row of the batch, and
    their validity flags: ``(N, k, F)``, bool ``(N, k)``. Every row from ``k`` on is padding
    in every observation, so the networks can skip them; the env lists the candidates
    first, so ``k`` is the largest candidate count of the batch (often 1-20 of 128)."""
    valid = rows[..., 0] > 0.5
    cols = valid.any(dim=0).nonzero()
    k = int(cols[-1, 0]) + 1 if cols.numel() else 1  # >= 1 row: pooling needs one
    return rows[:, :k], valid[:, :k]


#: Gather the valid rows one by one (instead of taking the leading block of rows up to the
#: last valid one) when the block is this many times larger than the valid rows: large
#: batches where one observation has many candidates (full-batch updates; measured: a
#: 16k-sample full batch 3x faster gathered, 256-sample minibatches 1.4x faster as a block).
GATHER_RATIO: float = 16.0


def _gather_valid(valid: th.Tensor, k: int) -> bool:
    """Whether to gather the valid rows rather than take the leading ``k`` rows."""
    return valid.shape[0] * k > GATHER_RATIO * max(int(valid.sum()), 1)


def _scatter_rows(values: th.Tensor, valid: th.Tensor, fill: float) -> th.Tensor:
    """``values`` (M, ...) of the valid rows placed into (N, K, ...) filled with ``fill``."""
    out = values.new_full((*valid.shape, *values.shape[1:]), fill)
    mask = valid.reshape(*valid.shape, *([1] * (values.dim() - 1)))
    return out.masked_scatter(mask, values)


def _flat_linear_on_valid_rows(linear: nn.Linear, rows: th.Tensor, valid: th.Tensor) -> th.Tensor:
    """``linear`` on the flattened ``rows`` (N, K, F) with padding rows zeroed, from the
    valid rows only: ``bias + sum over valid k of W[:, k] @ rows[n, k]`` -> (N, O)."""
    n, k, f = rows.shape
    nk = valid.nonzero()
    w = linear.weight[:, : k * f].reshape(linear.out_features, k, f).permute(1, 2, 0)
    per_row = th.bmm(rows[nk[:, 0], nk[:, 1]].unsqueeze(1), w[nk[:, 1]]).squeeze(1)
    out = rows.new_zeros((n, linear.out_features)).index_add(0, nk[:, 0], per_row)
    return out + linear.bias if linear.bias is not None else out


def _pad_rows(x: th.Tensor, n_rows: int, value: float) -> th.Tensor:
    """``x`` (N, k, ...) extended with rows of ``value`` to (N, n_rows, ...)."""
    k = x.shape[1]
    if k == n_rows:
        return x
    pad = x.new_full((x.shape[0], n_rows - k, *x.shape[2:]), value)
    return th.cat([x, pad], dim=1)


class JobRowsExtractor(BaseFeaturesExtractor):
    """Identity features extractor that keeps the ``(K, F)`` row structure.

    SB3's default :class:`~stable_baselines3.common.torch_layers.FlattenExtractor` would
    flatten the rows; the kernel needs them. Output: ``(N, K, F)``, ``features_dim = F``
    (the per-row width).

    :param observation_space: a 2-D ``Box`` of shape ``(K, F)``
    """

    def __init__(self, observation_space: spaces.Box) -> None:
        check_obs_space(observation_space)
        super().__init__(observation_space, features_dim=int(observation_space.shape[1]))

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return observations


#: A score prior: ``(column, weight)`` pairs (``row_prior`` of
#: :class:`~hpcgym_agents.kernel_policy.KernelPolicy`).
Prior = tuple[tuple[int, float], ...]


def as_prior(value: Sequence[Any] | None, n_cols: int) -> Prior | None:
    """``row_prior`` as ``((column, weight), ...)``, checked against the row width
    ``n_cols``; one pair may be given bare, ``(column, weight)``."""
    if value is None:
        return None
    pairs = list(value)
    if len(pairs) == 2 and all(isinstance(v, (int, float, np.number)) for v in pairs):
        pairs = [tuple(pairs)]
    out: list[tuple[int, float]] = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"row_prior must be (column, weight) pairs, e.g. [(2, -50.0)], got {value!r}"
            )
        column, weight = pair
        if int(column) != column or not 1 <= int(column) < n_cols:
            raise ValueError(
                f"row_prior column must be an observation column 1..{n_cols - 1} (0 is the "
                f"validity flag), got {column!r}"
            )
        if not np.isfinite(weight):
            raise ValueError(f"row_prior weight must be a finite number, got {weight!r}")
        out.append((int(column), float(weight)))
    if not out or len({c for c, _ in out}) != len(out):
        raise ValueError(f"row_prior needs at least one pair and each column once: {value!r}")
    return tuple(out)


def check_obs_space(observation_space: spaces.Space) -> None:
    if not (isinstance(observation_space, spaces.Box) and len(observation_space.shape) == 2):
        raise ValueError(
            "KernelPolicy needs a 2-D Box observation space of shape (K, F) (one row per "
            f"candidate job, column 0 = validity flag), got {observation_space!r}"
        )
    if observation_space.shape[1] < 2:
        raise ValueError(
            f"observation rows need the validity flag plus >= 1 feature, got shape "
            f"{observation_space.shape}"
        )


class KernelNetwork(nn.Module):
    """The actor and critic bodies of the kernel policy (its ``mlp_extractor``).

    ``forward_actor`` returns the action logits ``(N, K + 1)`` directly (so the policy's
    ``action_net`` is the identity); ``forward_critic`` returns the last hidden layer of the
    value MLP (the policy's ``value_net`` is the final ``Linear(latent_dim_vf, 1)``).

    :param n_rows: K, the number of candidate rows
    :param row_dim: F' , the width of a row as given by the features extractor
    :param kernel_arch: hidden widths of the shared per-row kernel (a final ``Linear(., 1)``
        produces the row score)
    :param activation_fn: activation used after every hidden layer
    :param stop_score: ``"learned"``, ``"fixed"`` or ``"pooled"`` (see
        :class:`~hpcgym_agents.kernel_policy.KernelPolicy`)
    :param stop_arch: hidden widths of the ``"pooled"`` STOP head
    :param value_head: ``"flat"`` or ``"pooled"``
    :param value_arch: hidden widths of the value MLP
    :param value_row_arch: hidden widths of the per-row encoder of the ``"pooled"`` value head
    :param row_context: ``"none"`` (a row's score depends on its row only) or ``"pooled"``
        (on its row and the mean and max of the kernel's last hidden layer over the valid
        rows; see :class:`~hpcgym_agents.kernel_policy.KernelPolicy`)
    :param context_arch: hidden widths of the ``"pooled"`` row-context scorer
    :param row_prior: ``((column, weight), ...)``: add :meth:`prior` of those columns to
        every row's score, with learned weights that start at ``weight`` (``None``: no
        prior)
    """

    def __init__(
        self,
        n_rows: int,
        row_dim: int,
        kernel_arch: tuple[int, ...],
        activation_fn: type[nn.Module],
        stop_score: str,
        stop_arch: tuple[int, ...],
        value_head: str,
        value_arch: tuple[int, ...],
        value_row_arch: tuple[int, ...],
        stop_init: float = 0.0,
        row_context: str = "none",
        context_arch: tuple[int, ...] = (16,),
        row_prior: Prior | None = None,
    ) -> None:
        super().__init__()
        self.n_rows = n_rows
        self.stop_init = float(stop_init)
        self.row_dim = row_dim
        self.stop_score = stop_score
        self.value_head = value_head
        # ---- policy side: the kernel (shared across rows) and the STOP score
        self.kernel = _mlp(row_dim, kernel_arch, activation_fn)
        emb_dim = kernel_arch[-1] if kernel_arch else row_dim
        self.row_context = row_context
        self.context_net: nn.Sequential | None = None
        score_in = emb_dim
        if row_context == "pooled":
            self.context_net = _mlp(3 * emb_dim, context_arch, activation_fn)
            score_in = context_arch[-1] if context_arch else 3 * emb_dim
        self.kernel_out = nn.Linear(score_in, 1)
        self.prior_columns: list[int] = []
        self.prior_weight: nn.Parameter | None = None
        if row_prior:
            self.prior_columns = [int(c) for c, _ in row_prior]
            self.prior_weight = nn.Parameter(th.tensor([float(w) for _, w in row_prior]))
        self.stop_bias: nn.Parameter | None = None
        self.stop_net: nn.Sequential | None = None
        if stop_score == "learned":
            self.stop_bias = nn.Parameter(th.full((1,), float(stop_init)))
        elif stop_score == "pooled":
            hidden = _mlp(2 * emb_dim, stop_arch, activation_fn)
            last = stop_arch[-1] if stop_arch else 2 * emb_dim
            self.stop_net = nn.Sequential(*hidden, nn.Linear(last, 1))
        # ---- value side (no parameter shared with the policy side)
        self.value_rows: nn.Sequential | None = None
        if value_head == "flat":
            value_in = n_rows * row_dim
        else:
            self.value_rows = _mlp(row_dim, value_row_arch, activation_fn)
            value_in = 2 * (value_row_arch[-1] if value_row_arch else row_dim)
        self.value_trunk = _mlp(value_in, value_arch, activation_fn)
        self.latent_dim_pi = n_rows + 1
        self.latent_dim_vf = value_arch[-1] if value_arch else value_in

    def policy_modules(self) -> list[nn.Module]:
        """Modules (and the STOP bias holder) updated with the policy learning rate."""
        mods: list[nn.Module] = [self.kernel, self.kernel_out]
        if self.context_net is not None:
            mods.append(self.context_net)
        if self.stop_net is not None:
            mods.append(self.stop_net)
        return mods

    def value_modules(self) -> list[nn.Module]:
        """Modules updated with the value learning rate."""
        mods: list[nn.Module] = [self.value_trunk]
        if self.value_rows is not None:
            mods.append(self.value_rows)
        return mods

    def prior(self, rows: th.Tensor) -> th.Tensor | None:
        """The score prior ``(...)`` of rows ``(..., F)`` (``None`` without ``row_prior``):
        the sum over the prior columns ``x`` (in ``[0, 1]``) of ``w * x - min(w, 0)``, with
        each column's learned weight ``w``. A term is ``w * x`` for ``w >= 0`` (larger
        ``x`` preferred) and ``|w| * (1 - x)`` for ``w < 0`` (smaller ``x`` preferred):
        never negative, so the prior makes no row less likely against STOP, and
        continuous in ``w``."""
        if self.prior_weight is None:
            return None
        w = self.prior_weight
        x = rows[..., self.prior_columns]
        return (x * w).sum(dim=-1) - w.clamp(max=0.0).sum()

    def _with_prior(self, scores: th.Tensor, rows: th.Tensor, valid: th.Tensor) -> th.Tensor:
        """``scores`` ``(N, k)`` plus the prior of the ``valid`` rows of ``rows``."""
        prior = self.prior(rows)
        return scores if prior is None else th.where(valid, scores + prior, scores)

    @staticmethod
    def valid_rows(rows: th.Tensor) -> th.Tensor:
        """Bool ``(N, K)``: validity flag (column 0) of every row."""
        return rows[..., 0] > 0.5

    def row_scores(self, rows: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Kernel scores ``(N, K)`` (padding rows -> :data:`PADDING_LOGIT`) and embeddings
        ``(N, K, D)`` (zeros on the skipped padding rows; only pooled over valid rows).

        The kernel runs only on the rows up to the last valid row of the batch
        (:func:`_active_rows`); the rows after it are padding in every observation and get
        :data:`PADDING_LOGIT` directly, so the forward and backward passes cost in
        proportion to the candidates, not to ``N * K``. The same scores as
        :meth:`row_scores_dense` (to float rounding; ``tests/test_train_speed.py``).
        """
        scores, emb, _valid = self._active_scores(rows)
        return scores, _pad_rows(emb, rows.shape[1], 0.0)

    def _active_scores(self, rows: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Scores ``(N, K)`` and the embeddings and validity of the active rows only."""
        rows_a, valid_a = _active_rows(rows)
        if _gather_valid(valid_a, rows_a.shape[1]):
            emb_v = self.kernel(rows_a[valid_a])
            emb = _scatter_rows(emb_v, valid_a, 0.0)
            ctx = self._row_context(emb, valid_a)
            scores_v = self._score(emb_v, None if ctx is None else ctx[valid_a])
            scores = _scatter_rows(scores_v, valid_a, PADDING_LOGIT)
        else:
            emb = self.kernel(rows_a)
            scores = self._scores(emb, valid_a)
        scores = self._with_prior(scores, rows_a, valid_a)
        return _pad_rows(scores, rows.shape[1], PADDING_LOGIT), emb, valid_a

    def _row_context(self, emb: th.Tensor, valid: th.Tensor) -> th.Tensor | None:
        """Each row's context ``(N, k, 2D)``: the mean and max of the embeddings ``(N, k, D)``
        over the valid rows of its observation (``None`` without the row context)."""
        if self.context_net is None:
            return None
        return _masked_mean_max(emb, valid).unsqueeze(1).expand(-1, emb.shape[1], -1)

    def _score(self, emb: th.Tensor, ctx: th.Tensor | None) -> th.Tensor:
        """The scores of rows from their embeddings ``(..., D)`` and contexts ``(..., 2D)``."""
        if ctx is not None and self.context_net is not None:
            emb = self.context_net(th.cat([emb, ctx], dim=-1))
        return self.kernel_out(emb).squeeze(-1)

    def _scores(self, emb: th.Tensor, valid: th.Tensor) -> th.Tensor:
        """Row scores ``(N, k)`` of the kernel embeddings ``(N, k, D)``;
        :data:`PADDING_LOGIT` on the rows not ``valid``."""
        scores = self._score(emb, self._row_context(emb, valid))
        return th.where(valid, scores, th.full_like(scores, PADDING_LOGIT))

    def row_scores_dense(self, rows: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The kernel on all ``N * K`` rows, padding included (the reference for
        :meth:`row_scores`): scores ``(N, K)`` and embeddings ``(N, K, D)``."""
        emb = self.kernel(rows)
        valid = self.valid_rows(rows)
        return self._with_prior(self._scores(emb, valid), rows, valid), emb

    def forward_actor(self, rows: th.Tensor) -> th.Tensor:
        scores, emb, valid = self._active_scores(rows)
        if self.stop_score == "none":  # Schedule-v0: one action per row, no STOP
            return scores
        if self.stop_bias is not None:
            stop = self.stop_bias.expand(scores.shape[0])
        elif self.stop_net is not None:
            pooled = _masked_mean_max(emb, valid)  # the skipped rows are padding
            stop = self.stop_net(pooled).squeeze(-1) + self.stop_init
        else:  # "fixed"
            stop = th.full(
                (scores.shape[0],), self.stop_init, dtype=scores.dtype, device=scores.device
            )
        return th.cat([scores, stop.unsqueeze(-1)], dim=-1)

    def forward_critic(self, rows: th.Tensor) -> th.Tensor:
        """The critic's last hidden layer, computed on the rows up to the last valid row of
        the batch only (:func:`_active_rows`): the same values as
        :meth:`forward_critic_dense` (to float rounding)."""
        rows_a, valid_a = _active_rows(rows)
        if self.value_rows is None:
            first = self.value_trunk[0] if len(self.value_trunk) else None
            if not isinstance(first, nn.Linear):
                return self.forward_critic_dense(rows)
            # The paper's MLP over the flattened, padding-zeroed observation: the skipped
            # rows are zeros, so the first layer needs only its first k * F input columns
            # (or, for a sparse batch, the columns of each valid row).
            if _gather_valid(valid_a, rows_a.shape[1]):
                h = _flat_linear_on_valid_rows(first, rows_a, valid_a)
            else:
                x = (rows_a * valid_a.unsqueeze(-1).to(rows.dtype)).flatten(start_dim=1)
                h = nn.functional.linear(x, first.weight[:, : x.shape[1]], first.bias)
            return self.value_trunk[1:](h)
        if _gather_valid(valid_a, rows_a.shape[1]):
            emb = _scatter_rows(self.value_rows(rows_a[valid_a]), valid_a, 0.0)
        else:
            emb = self.value_rows(rows_a)
        return self.value_trunk(_masked_mean_max(emb, valid_a))

    def forward_critic_dense(self, rows: th.Tensor) -> th.Tensor:
        """The critic on the whole (padding-zeroed) observation (the reference for
        :meth:`forward_critic`)."""
        valid = self.valid_rows(rows)
        if self.value_rows is None:
            # Flattened observation (the paper's value network); padding rows are zeroed so
            # their content cannot change the value.
            x = (rows * valid.unsqueeze(-1).to(rows.dtype)).flatten(start_dim=1)
        else:
            x = _masked_mean_max(self.value_rows(rows), valid)
        return self.value_trunk(x)

    def forward(self, rows: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(rows), self.forward_critic(rows)
