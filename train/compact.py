"""Compact rollouts for the kernel policy: only the valid rows of each observation.

An observation of the backfilling env is ``(K, F)`` rows of which only the first few are
real candidates (column 0 = validity flag; on SDSC-SP2 ~1-2 of K = 128); its action mask is
the valid rows plus STOP. :class:`CompactRolloutBuffer` stores, per sample, only its valid
rows (concatenated, with per-sample offsets and counts) and the mask restricted to them, so
an update evaluates the kernel network on ``sum(counts)`` rows instead of ``B * K``.

:class:`CompactBatch` is a set of samples in that form; :func:`evaluate_compact` runs a
:class:`~hpcgym_agents.kernel_policy.KernelPolicy` on it: the kernel on the rows, the logits
as a small dense ``(B, 1 + kmax)`` block (column 0 = STOP, column ``1 + j`` = the sample's
``j``-th valid row; ``kmax`` = most rows of a sample in the batch; unused cells get the
padding logit), ``log_softmax``, and the value head on the same rows. Probabilities,
log-probabilities, entropies, values and their gradients equal the policy's own
``evaluate_actions`` on the padded observations (``tests/test_train_lean.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from torch import nn

__all__ = [
    "BLOCK_RATIO",
    "MASKED_LOGIT",
    "CompactBatch",
    "CompactRolloutBuffer",
    "StepRows",
    "actor_logits",
    "batch_of",
    "check_policy",
    "compact_from_dense",
    "compact_step",
    "critic_values",
    "evaluate_compact",
    "evaluate_compact_logp",
    "kl_to",
    "make_batch",
    "segment_positions",
]

#: The logit of cells that are not an allowed action (sb3-contrib's mask value).
MASKED_LOGIT: float = -1e8
#: The flat value head multiplies the leading ``width`` rows of every sample as one block
#: (one matmul; the env lists the candidates first, so ``width`` is small) unless that
#: block is this many times larger than the valid rows; then it works row by row
#: (measured: a 15,500-sample full batch with 17x more block cells than rows, forward and
#: backward, 32 ms as a block, 209 ms row by row).
BLOCK_RATIO: float = 64.0


@dataclass
class CompactBatch:
    """``n`` samples as their valid rows, with the index bookkeeping (done in numpy).

    :param rows: ``(M, F)`` the valid rows of all samples, sample after sample
    :param seg: ``(M,)`` int64, the sample of each row (``0 .. n - 1``)
    :param row_index: ``(M,)`` int64, each row's index ``0 .. K - 1`` in the observation
    :param cell: ``(M,)`` int64, ``seg * kw + rank`` (``rank``: the row's rank among its
        sample's valid rows): the row's cell in a flat ``(n, kw)`` grid
    :param allowed: ``(n, 1 + kw)`` bool, the allowed actions (column 0 = STOP)
    :param block_cell: ``(M,)`` int64, ``seg * width + row_index`` (the flat value head's
        block), or ``None`` when the block would be too sparse (:data:`BLOCK_RATIO`)
    :param n: number of samples
    :param kw: ``max(1, most valid rows of one sample)``
    :param width: largest ``row_index`` + 1
    :param masked: whether the mask excludes a valid row or STOP somewhere
    """

    rows: th.Tensor
    seg: th.Tensor
    row_index: th.Tensor
    cell: th.Tensor
    allowed: th.Tensor
    block_cell: th.Tensor | None
    n: int
    kw: int
    width: int
    masked: bool


def make_batch(
    rows: th.Tensor,
    seg: np.ndarray,
    pos: np.ndarray,
    row_index: np.ndarray,
    row_ok: np.ndarray,
    stop_ok: np.ndarray,
    device: th.device | str = "cpu",
) -> CompactBatch:
    """A :class:`CompactBatch` from its rows and numpy bookkeeping.

    :param rows: ``(M, F)`` rows (already on ``device``)
    :param seg: ``(M,)`` sample of each row
    :param pos: ``(M,)`` rank of each row within its sample
    :param row_index: ``(M,)`` index of each row in its observation
    :param row_ok: ``(M,)`` the mask allows the row
    :param stop_ok: ``(n,)`` the mask allows STOP
    :param device: torch device
    """
    n, m = len(stop_ok), len(seg)
    kw = max(int(pos.max()) + 1 if m else 0, 1)
    width = int(row_index.max()) + 1 if m else 1
    cell = seg * kw + pos
    allowed = np.zeros((n, 1 + kw), dtype=bool)
    allowed[:, 0] = stop_ok
    allowed.reshape(-1)[seg * (1 + kw) + pos + 1] = row_ok
    block = seg * width + row_index if n * width <= BLOCK_RATIO * max(m, 1) else None

    def t(x: np.ndarray) -> th.Tensor:
        return th.as_tensor(x, device=device)

    return CompactBatch(
        rows=rows,
        seg=t(seg),
        row_index=t(row_index),
        cell=t(cell),
        allowed=t(allowed),
        block_cell=None if block is None else t(block),
        n=n,
        kw=kw,
        width=width,
        masked=not (bool(row_ok.all()) and bool(stop_ok.all())),
    )


def segment_positions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments of ``counts`` elements laid end to end: the segment of every element
    and its position within it (both ``(sum(counts),)`` int64)."""
    counts = np.asarray(counts, dtype=np.int64)
    seg = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    return seg, np.arange(len(seg), dtype=np.int64) - starts[seg]


@dataclass
class StepRows:
    """The valid rows of one env step (numpy), as the buffer stores them.

    :param rows: ``(M, F)`` the valid rows, observation after observation
    :param seg: ``(M,)`` the observation of each row
    :param pos: ``(M,)`` the rank of each row among its observation's valid rows
    :param counts: ``(N,)`` valid rows of each observation
    :param row_index: ``(M,)`` each row's index in its observation
    :param row_ok: ``(M,)`` the mask allows the row
    :param stop_ok: ``(N,)`` the mask allows STOP
    """

    rows: np.ndarray
    seg: np.ndarray
    pos: np.ndarray
    counts: np.ndarray
    row_index: np.ndarray
    row_ok: np.ndarray
    stop_ok: np.ndarray


def compact_step(obs: np.ndarray, masks: np.ndarray | None = None) -> StepRows:
    """The valid rows of ``obs`` ``(N, K, F)`` and the masks restricted to them.

    :param obs: observations; a row is valid when its column 0 is > 0.5 (as the policy)
    :param masks: bool ``(N, K + 1)`` action masks (``None``: every valid row and STOP), or
        ``(N, K)`` for an env without STOP (Schedule-v0): column 0 is then the "pass"
        column of a sample without valid rows (an episode's end), and never allowed else
    :raises ValueError: a mask allows a padding row (the policy gives padding rows the
        masked logit whatever the mask says, so such a mask cannot be followed here)
    """
    valid = obs[..., 0] > 0.5
    n, k = valid.shape
    env_i, row_i = np.nonzero(valid)
    counts = valid.sum(axis=1)
    if masks is None:
        row_ok = np.ones(len(row_i), dtype=bool)
        stop_ok = np.ones(n, dtype=bool)
    elif np.asarray(masks).size == n * k:  # no STOP action
        masks = np.asarray(masks, dtype=bool).reshape(n, k)
        row_ok = masks[env_i, row_i]
        stop_ok = counts == 0
    else:
        masks = np.asarray(masks, dtype=bool).reshape(n, k + 1)
        if (masks[:, :k] & ~valid).any():
            raise ValueError(
                "an action mask allows a padding row (validity flag 0): the kernel policy "
                "gives padding rows probability 0, so the lean PPO cannot follow this mask; "
                "train with --algo sb3"
            )
        row_ok = masks[env_i, row_i]
        stop_ok = masks[:, k].copy()
    _seg, pos = segment_positions(counts)
    return StepRows(
        obs[env_i, row_i], env_i.astype(np.int64), pos, counts, row_i.astype(np.int64),
        row_ok, stop_ok,
    )  # fmt: skip


def batch_of(step: StepRows, device: th.device | str = "cpu") -> CompactBatch:
    """``step`` as a :class:`CompactBatch` on ``device``.

    :param step: the rows of one env step
    :param device: torch device
    """
    rows = th.as_tensor(step.rows, device=device)
    return make_batch(rows, step.seg, step.pos, step.row_index, step.row_ok, step.stop_ok, device)


def compact_from_dense(
    obs: np.ndarray, masks: np.ndarray | None = None
) -> tuple[CompactBatch, StepRows]:
    """:func:`compact_step` and :func:`batch_of` in one go.

    :param obs: observations ``(N, K, F)``
    :param masks: bool ``(N, K + 1)`` action masks (``None``: every valid row and STOP)
    """
    step = compact_step(obs, masks)
    return batch_of(step), step


def check_policy(policy: Any) -> None:
    """Refuse policies :func:`evaluate_compact` cannot reproduce exactly.

    :param policy: the model's policy
    :raises ValueError: not a :class:`~hpcgym_agents.kernel_policy.KernelPolicy` with the
        identity features extractor, or an unknown STOP score / value head
    """
    from hpcgym_agents.kernel_policy import JobRowsExtractor, KernelNetwork, KernelPolicy

    if not isinstance(policy, KernelPolicy):
        raise ValueError(
            f"the lean PPO trains hpcgym_agents.KernelPolicy only, got {type(policy).__name__}"
        )
    if type(policy.features_extractor) is not JobRowsExtractor:
        raise ValueError(
            "the lean PPO needs the identity JobRowsExtractor (it evaluates the kernel on "
            f"raw rows), got {type(policy.features_extractor).__name__}"
        )
    net = policy.mlp_extractor
    if not isinstance(net, KernelNetwork):
        raise ValueError(f"unexpected kernel network {type(net).__name__}")
    if net.stop_score not in ("learned", "fixed", "pooled", "none"):
        raise ValueError(f"the lean PPO does not know stop_score={net.stop_score!r}")
    if net.row_context not in ("none", "pooled"):
        raise ValueError(f"the lean PPO does not know row_context={net.row_context!r}")
    if net.value_head not in ("flat", "pooled"):
        raise ValueError(f"the lean PPO does not know value_head={net.value_head!r}")
    if net.value_head == "flat":
        first = net.value_trunk[0] if len(net.value_trunk) else policy.value_net
        if not isinstance(first, nn.Linear):
            raise ValueError("the flat value head must start with a Linear layer")


def _grid(x: th.Tensor, b: CompactBatch, fill: float) -> th.Tensor:
    """``x`` ``(M, ...)`` placed into its cells of an ``(n, kw, ...)`` grid of ``fill``."""
    out = x.new_full((b.n * b.kw, *x.shape[1:]), fill).index_put((b.cell,), x)
    return out.view(b.n, b.kw, *x.shape[1:])


def _mean_max(emb: th.Tensor, b: CompactBatch) -> th.Tensor:
    """Mean and max of ``emb`` ``(M, D)`` per sample -> ``(n, 2D)``; zeros for a sample
    without rows (``_masked_mean_max`` of the kernel policy)."""
    count = th.bincount(b.seg, minlength=b.n).clamp(min=1).to(emb.dtype).unsqueeze(-1)
    mean = emb.new_zeros((b.n, emb.shape[1])).index_add(0, b.seg, emb) / count
    mx = _grid(emb, b, th.finfo(emb.dtype).min).amax(dim=1)
    has = b.allowed.new_zeros(b.n).index_fill(0, b.seg, True)
    mx = th.where(has.unsqueeze(-1), mx, th.zeros_like(mx))
    return th.cat([mean, mx], dim=-1)


def _mlp(layers: Iterable[nn.Module], x: th.Tensor) -> th.Tensor:
    """The ``layers`` applied in turn, without the module-call overhead for Linear and ReLU."""
    for layer in layers:
        if type(layer) is nn.Linear:
            x = nn.functional.linear(x, layer.weight, layer.bias)
        elif type(layer) is nn.ReLU:
            x = th.relu(x)
        else:
            x = layer(x)
    return x


def actor_logits(policy: Any, b: CompactBatch) -> th.Tensor:
    """Masked logits ``(n, 1 + kw)``: column 0 = STOP, ``1 + j`` = the sample's valid row
    ``j``, :data:`MASKED_LOGIT` where ``b.allowed`` is False.

    :param policy: a :class:`~hpcgym_agents.kernel_policy.KernelPolicy`
    :param b: the samples
    """
    net = policy.mlp_extractor
    emb = _mlp(net.kernel, b.rows)
    # the sample's mean|max of the embeddings: the pooled STOP head's and the row context's
    pooled = _mean_max(emb, b) if net.stop_net is not None or net.context_net is not None else None
    h = emb
    if net.context_net is not None and pooled is not None:  # each row sees its sample's pool
        h = _mlp(net.context_net, th.cat([emb, pooled[b.seg]], dim=-1))
    out = net.kernel_out
    scores = nn.functional.linear(h, out.weight, out.bias).view(-1)
    prior = net.prior(b.rows)  # the score prior of every row (row_prior), or None
    if prior is not None:
        scores = scores + prior
    if net.stop_score == "none":  # the "pass" column, allowed only without rows
        stop = scores.new_zeros((b.n,))
    elif net.stop_bias is not None:
        stop = net.stop_bias.expand(b.n)
    elif net.stop_net is not None and pooled is not None:
        stop = _mlp(net.stop_net, pooled).squeeze(-1) + net.stop_init
    else:
        stop = scores.new_full((b.n,), net.stop_init)
    logits = th.cat([stop.unsqueeze(-1), _grid(scores, b, MASKED_LOGIT)], dim=1)
    return logits.masked_fill(~b.allowed, MASKED_LOGIT) if b.masked else logits


def critic_values(policy: Any, b: CompactBatch) -> th.Tensor:
    """The values ``(n,)`` of the samples.

    :param policy: a :class:`~hpcgym_agents.kernel_policy.KernelPolicy`
    :param b: the samples
    """
    net = policy.mlp_extractor
    if net.value_rows is None:  # flat: first layer over the flattened, padding-zeroed rows
        trunk = [*net.value_trunk, policy.value_net]
        first = trunk[0]
        assert isinstance(first, nn.Linear)
        m, f = b.rows.shape
        if b.block_cell is not None:  # one matmul over the leading `width` rows
            block = b.rows.new_zeros((b.n * b.width, f)).index_put((b.block_cell,), b.rows)
            h = nn.functional.linear(
                block.view(b.n, b.width * f), first.weight[:, : b.width * f], first.bias
            )
        else:  # row by row: each row times its columns of the first layer
            w = first.weight.view(first.out_features, -1, f)[:, b.row_index]  # (O, M, F)
            per_row = th.einsum("mf,omf->mo", b.rows, w)
            h = per_row.new_zeros((b.n, first.out_features)).index_add(0, b.seg, per_row)
            if first.bias is not None:
                h = h + first.bias
        return _mlp(trunk[1:], h).squeeze(-1)
    latent = _mlp(net.value_trunk, _mean_max(_mlp(net.value_rows, b.rows), b))
    return policy.value_net(latent).squeeze(-1)


def evaluate_compact(
    policy: Any, b: CompactBatch, action_col: th.Tensor, entropy_grad: bool = True
) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
    """Values, log-probabilities of ``action_col`` and entropies, each ``(n,)``: what
    ``policy.evaluate_actions`` gives on the padded observations and masks.

    :param policy: a :class:`~hpcgym_agents.kernel_policy.KernelPolicy`
    :param b: the samples
    :param action_col: ``(n,)`` int64, 0 = STOP, ``1 + j`` = valid row ``j``
    :param entropy_grad: track the entropy's gradient (``False``: the entropy is only
        logged, as with ``ent_coef = 0``; saves its backward pass)
    """
    values, log_prob, entropy, _ = evaluate_compact_logp(policy, b, action_col, entropy_grad)
    return values, log_prob, entropy


def evaluate_compact_logp(
    policy: Any, b: CompactBatch, action_col: th.Tensor, entropy_grad: bool = True
) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor]:
    """:func:`evaluate_compact`'s values, log-probabilities and entropies, and the
    log-probabilities of every column ``(n, 1 + kw)`` (very negative where ``b.allowed`` is
    False): what a KL penalty to another policy needs (``LeanMaskablePPO``'s ``anchor_kl``).

    :param policy: a :class:`~hpcgym_agents.kernel_policy.KernelPolicy`
    :param b: the samples
    :param action_col: ``(n,)`` int64, 0 = STOP, ``1 + j`` = valid row ``j``
    :param entropy_grad: track the entropy's gradient
    """
    logp = th.log_softmax(actor_logits(policy, b), dim=1)
    with th.set_grad_enabled(entropy_grad and th.is_grad_enabled()):
        p_log_p = th.where(b.allowed, logp.exp() * logp, th.zeros_like(logp))
        entropy = -p_log_p.sum(dim=1)
    log_prob = logp.gather(1, action_col.unsqueeze(1)).squeeze(1)
    return critic_values(policy, b), log_prob, entropy, logp


def kl_to(logp: th.Tensor, anchor_logp: th.Tensor, b: CompactBatch) -> th.Tensor:
    """``KL(p || anchor)`` per sample ``(n,)``, summed over the allowed columns, from the
    two policies' log-probabilities ``(n, 1 + kw)`` (the gradient flows through ``logp``).

    :param logp: the trained policy's log-probabilities
    :param anchor_logp: the anchor's, on the same samples
    :param b: the samples (``b.allowed``)
    """
    terms = logp.exp() * (logp - anchor_logp)
    return th.where(b.allowed, terms, th.zeros_like(terms)).sum(dim=1)


class CompactRolloutBuffer:
    """A rollout of ``n_steps x n_envs`` samples stored as their valid rows.

    Filled by :meth:`add` (one call per env step; the observation and mask, the chosen
    column, value, log-probability, reward and episode start of every env), then
    :meth:`compute_returns_and_advantage` (GAE, as SB3's ``RolloutBuffer``, in float32:
    the same numbers), then :meth:`finalize`. :meth:`minibatches` yields the samples of
    an update in SB3's order (``np.random.permutation`` of the env-major flattening), and
    stops once ``stop`` is due (after at least one minibatch per update: the
    ``--time-limit`` semantics of :mod:`train.stopping`).

    :param buffer_size: ``n_steps``
    :param n_envs: number of envs
    :param gamma: discount
    :param gae_lambda: GAE lambda
    :param device: torch device of the minibatches
    """

    def __init__(
        self,
        buffer_size: int,
        n_envs: int,
        gamma: float,
        gae_lambda: float,
        device: th.device | str = "cpu",
    ) -> None:
        self.buffer_size = int(buffer_size)
        self.n_envs = int(n_envs)
        self.gamma = float(gamma)
        self.gae_lambda = float(gae_lambda)
        self.device = th.device(device)
        #: the generator of the minibatch order (the model sets its seeded one)
        self.rng: Any = np.random.default_rng(0)
        shape = (self.buffer_size, self.n_envs)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.values = np.zeros(shape, dtype=np.float32)
        self.log_probs = np.zeros(shape, dtype=np.float32)
        self.episode_starts = np.zeros(shape, dtype=np.float32)
        self.action_cols = np.zeros(shape, dtype=np.int64)
        self.counts = np.zeros(shape, dtype=np.int64)
        self.stop_ok = np.zeros(shape, dtype=bool)
        self.advantages = np.zeros(shape, dtype=np.float32)
        self.returns = np.zeros(shape, dtype=np.float32)
        self.stop: Any = None  # a train.stopping.StopControl (set by StopCallback)
        self.batches = 0
        self.cut = False
        self.previous: tuple[int, bool] = (0, False)
        self.reset()

    def reset(self) -> None:
        """Empty the buffer (and keep the minibatch count of the previous update)."""
        self.pos = 0
        self.full = False
        self._rows: list[np.ndarray] = []
        self._row_index: list[np.ndarray] = []
        self._row_ok: list[np.ndarray] = []
        self._data: dict[str, th.Tensor] = {}
        self.previous = (self.batches, self.cut)
        self.batches = 0
        self.cut = False

    def size(self) -> int:
        """Steps stored (``n_steps`` when full)."""
        return self.buffer_size if self.full else self.pos

    def add(
        self,
        step: StepRows,
        action_col: np.ndarray,
        reward: np.ndarray,
        episode_start: np.ndarray,
        value: th.Tensor | np.ndarray,
        log_prob: th.Tensor | np.ndarray,
    ) -> None:
        """One env step of all envs.

        :param step: the observations' valid rows (:func:`compact_step`)
        :param action_col: ``(n_envs,)`` chosen column (0 = STOP, ``1 + j`` = valid row j)
        :param reward: ``(n_envs,)``
        :param episode_start: ``(n_envs,)``
        :param value: ``(n_envs,)`` values of the observations
        :param log_prob: ``(n_envs,)`` log-probabilities of the actions
        """
        t = self.pos
        self._rows.append(step.rows)
        self._row_index.append(step.row_index)
        self._row_ok.append(step.row_ok)
        self.counts[t] = step.counts
        self.stop_ok[t] = step.stop_ok
        self.action_cols[t] = action_col
        self.rewards[t] = np.asarray(reward, dtype=np.float32)
        self.episode_starts[t] = np.asarray(episode_start, dtype=np.float32)
        self.values[t] = _numpy(value).reshape(-1)
        self.log_probs[t] = _numpy(log_prob).reshape(-1)
        self.pos += 1
        self.full = self.pos == self.buffer_size

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: np.ndarray) -> None:
        """GAE(lambda) advantages and TD(lambda) returns, as SB3's ``RolloutBuffer``.

        :param last_values: ``(n_envs,)`` values of the observations after the last step
        :param dones: ``(n_envs,)`` whether the last step ended an episode
        """
        last = last_values.detach().cpu().numpy().flatten()
        last_gae_lam: Any = 0
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                next_non_terminal = 1.0 - dones.astype(np.float32)
                next_values = last
            else:
                next_non_terminal = 1.0 - self.episode_starts[step + 1]
                next_values = self.values[step + 1]
            delta = (
                self.rewards[step]
                + self.gamma * next_values * next_non_terminal
                - self.values[step]
            )
            last_gae_lam = delta + self.gamma * self.gae_lambda * next_non_terminal * last_gae_lam
            self.advantages[step] = last_gae_lam
        self.returns = self.advantages + self.values
        self.finalize()

    def finalize(self) -> None:
        """Concatenate the stored steps into tensors (samples step-major: ``t * n_envs + e``)."""
        dev = self.device
        counts = self.counts.reshape(-1)
        _seg, pos = segment_positions(counts)
        offsets = np.cumsum(counts) - counts
        self._counts_flat = counts
        self._pos = pos
        self._row_index_np = np.concatenate(self._row_index)
        self._row_ok = np.concatenate(self._row_ok)
        self._stop_ok_flat = self.stop_ok.reshape(-1)
        self._offsets = offsets
        self._data = {
            "rows": th.as_tensor(np.concatenate(self._rows), device=dev),
            "action_col": th.as_tensor(self.action_cols.reshape(-1), device=dev),
            "old_log_prob": th.as_tensor(self.log_probs.reshape(-1), device=dev),
            "old_values": th.as_tensor(self.values.reshape(-1), device=dev),
            "advantages": th.as_tensor(self.advantages.reshape(-1), device=dev),
            "returns": th.as_tensor(self.returns.reshape(-1), device=dev),
        }

    def samples(self, order: np.ndarray) -> tuple[CompactBatch, dict[str, th.Tensor]]:
        """The samples ``order`` (step-major indices) as one batch, in that order.

        :param order: ``(n,)`` int sample indices
        """
        return next(self._batches(np.asarray(order, dtype=np.int64), len(order)))

    def _batches(
        self, order: np.ndarray, batch_size: int
    ) -> Iterator[tuple[CompactBatch, dict[str, th.Tensor]]]:
        """The samples ``order`` laid out once (one gather per array), then cut into
        minibatches of ``batch_size`` samples (slices: no copy)."""
        dev = self.device
        counts = self._counts_flat[order]
        seg, within = segment_positions(counts)
        src_np = self._offsets[order][seg] + within
        rows = self._data["rows"][th.as_tensor(src_np, device=dev)]
        pos, row_index, row_ok = self._pos[src_np], self._row_index_np[src_np], self._row_ok[src_np]
        idx = th.as_tensor(order, device=dev)
        keys = ("action_col", "old_log_prob", "old_values", "advantages", "returns")
        per = {k: self._data[k][idx] for k in keys}
        stop_ok = self._stop_ok_flat[order]
        cum = np.concatenate([[0], np.cumsum(counts)])
        for s0 in range(0, len(order), batch_size):
            s1 = min(s0 + batch_size, len(order))
            r0, r1 = int(cum[s0]), int(cum[s1])
            batch = make_batch(
                rows[r0:r1],
                seg[r0:r1] - s0,
                pos[r0:r1],
                row_index[r0:r1],
                row_ok[r0:r1],
                stop_ok[s0:s1],
                dev,
            )
            yield batch, {k: v[s0:s1] for k, v in per.items()}

    def sb3_order(self) -> np.ndarray:
        """A random order of the samples as SB3's ``RolloutBuffer.get`` draws it (a
        permutation of the env-major flattening), as step-major indices; drawn from
        :attr:`rng` (the model's seeded generator; a test sets SB3's global one to compare
        minibatch for minibatch)."""
        total = self.buffer_size * self.n_envs
        perm = self.rng.permutation(total)
        env, step = np.divmod(perm, self.buffer_size)
        return step * self.n_envs + env

    def minibatches(self, batch_size: int) -> Iterator[tuple[CompactBatch, dict[str, th.Tensor]]]:
        """Yield ``(CompactBatch, data)`` minibatches over a new random order of all
        samples; stops once ``stop`` is due (after the first minibatch of the update).

        :param batch_size: samples per minibatch (the last one may be smaller)
        """
        for item in self._batches(self.sb3_order(), batch_size):
            if self.batches and self.stop is not None and self.stop.due():
                self.cut = True
                return
            self.batches += 1
            yield item


def _numpy(x: th.Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, th.Tensor) else np.asarray(x)
