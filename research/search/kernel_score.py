"""A non-linear score for ``research/search/search.py --hidden H``: the linear score plus one hidden
layer of the same columns, played by the very network that ships.

Every candidate job ``i`` (a valid row of the observation) gets

    ``s_i = sum_c w_c x_ic - sum_c min(w_c, 0) + sum_h v_h max(0, sum_c W_hc x_ic + a_h)``

over the searched observation columns ``c``, STOP gets the constant ``b``, and the policy
takes the highest. That is :class:`~hpcgym_agents.kernel_policy.KernelPolicy` with
``kernel_arch = (H,)`` (its activation, ReLU), ``row_prior = zip(columns, w)``,
``stop_init = b``, its kernel's first layer ``W`` on the searched columns (0 on every other
column), bias ``a``, and its output layer ``v`` (bias 0). A :class:`KernelScore` plays
through such a KernelPolicy's own ``predict``, so what the search scores is what the shipped
model (``train/ppo.py --kernel-arch H --init-from <out>/search_policy.zip --total-steps 0``)
plays, rounding and ties included.

The searched vector is ``x = (w_1..w_n, b, v_1..v_H, W_11..W_1n, ..., W_H1..W_Hn,
a_1..a_H)``. The argmax does not change when the *output* part ``(w, b, v)`` is multiplied
by a positive factor, but it does change with ``W`` and ``a``; so only the output part is
scaled to the start's norm (:func:`normalized`), the hidden part is played as drawn. With
``v = 0`` the score is the linear one exactly: a search starts at its linear start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcgym_agents.heuristic import valid_and_stop

__all__ = [
    "POLICY_FILE",
    "KernelScore",
    "apply_vector",
    "hidden_start",
    "normalized",
    "split_vector",
    "vector_size",
]

#: The shipped policy of a ``--hidden`` search, in its folder (``--init-from`` of the ship).
POLICY_FILE = "search_policy.zip"


def vector_size(n: int, hidden: int) -> int:
    """Numbers searched for ``n`` columns and ``hidden`` units (``n + 1`` when linear)."""
    return n + 1 + (hidden * (n + 2) if hidden else 0)


def output_size(n: int, hidden: int) -> int:
    """The output part ``(w, b, v)`` of the vector: what :func:`normalized` scales."""
    return n + 1 + hidden


def split_vector(
    x: Sequence[float], n: int, hidden: int
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]:
    """``x`` as ``(w (n,), b, v (H,), W (H, n), a (H,))`` (see the module's layout).

    :raises ValueError: ``x`` does not have :func:`vector_size` numbers
    """
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (vector_size(n, hidden),):
        raise ValueError(
            f"a vector of {vector_size(n, hidden)} numbers for {n} columns and {hidden} hidden "
            f"units, got shape {x.shape}"
        )
    w, b = x[:n], float(x[n])
    v = x[n + 1 : n + 1 + hidden]
    big_w = x[n + 1 + hidden : n + 1 + hidden + hidden * n].reshape(hidden, n)
    a = x[n + 1 + hidden + hidden * n :]
    return w, b, v, big_w, a


def normalized(
    x: Sequence[float], n: int, hidden: int, radius: float, short: Callable[[float], float]
) -> np.ndarray:
    """``x`` with its output part ``(w, b, v)`` scaled to norm ``radius`` (the argmax does
    not depend on that scale) and every number rounded by ``short`` (the 6 digits of the
    command line), so a candidate is played with exactly the numbers the search writes."""
    y = np.asarray(x, dtype=np.float64).copy()
    m = output_size(n, hidden)
    norm = float(np.linalg.norm(y[:m]))
    if norm > 0:
        y[:m] *= radius / norm
    return np.array([short(v) for v in y])


def hidden_start(n: int, hidden: int, seed: int) -> np.ndarray:
    """The hidden part ``(v, W, a)`` of a search's start: ``v = 0`` (the start plays the
    linear start), ``W`` standard normal from a generator seeded with ``[seed, 1]`` (the
    columns lie in ``[0, 1]``: each unit is active on a random half of the rows' space
    through the origin), ``a = 0``."""
    rng = np.random.default_rng([seed, 1])
    return np.concatenate([np.zeros(hidden), rng.standard_normal(hidden * n), np.zeros(hidden)])


def apply_vector(policy: Any, columns: Sequence[int], x: Sequence[float], hidden: int) -> None:
    """Set a KernelPolicy's actor (``kernel_arch = (hidden,)``, a ``row_prior`` on
    ``columns``) to the score of the vector ``x``.

    :param policy: a :class:`~hpcgym_agents.kernel_policy.KernelPolicy`
    :raises ValueError: the policy's network does not have that shape
    """
    import torch as th

    net = policy.mlp_extractor
    n = len(columns)
    w, b, v, big_w, a = split_vector(x, n, hidden)
    first = net.kernel[0] if len(net.kernel) else None
    if (
        first is None
        or len(net.kernel) != 2
        or first.out_features != hidden
        or list(net.prior_columns) != [int(c) for c in columns]
        or net.context_net is not None
        or net.stop_net is not None
    ):
        raise ValueError(
            f"the policy is not a one-hidden-layer kernel of {hidden} units with a row prior "
            f"on columns {list(columns)} (its kernel: {net.kernel}, prior columns: "
            f"{net.prior_columns}, row context: {net.row_context}, STOP: {net.stop_score})"
        )
    with th.no_grad():
        net.prior_weight.copy_(th.tensor(w, dtype=th.float32))
        if net.stop_bias is not None:
            net.stop_bias.fill_(b)
        else:  # "fixed": STOP's logit is the constant stop_init
            net.stop_init = float(np.float32(b))
        weight = th.zeros_like(first.weight)
        weight[:, [int(c) for c in columns]] = th.tensor(big_w, dtype=th.float32)
        first.weight.copy_(weight)
        first.bias.copy_(th.tensor(a, dtype=th.float32))
        net.kernel_out.weight.copy_(th.tensor(v, dtype=th.float32).reshape(1, hidden))
        net.kernel_out.bias.zero_()


#: KernelPolicies of this process, one per network shape (built once, reloaded per score).
_POLICIES: dict[tuple[Any, ...], Any] = {}


@dataclass
class KernelScore:
    """The one-hidden-layer score of the vector ``x`` (SB3's ``predict`` for
    :func:`~hpcgym.evaluation.play.play_windows`): a KernelPolicy of the shipped shape with
    ``x``'s weights (:func:`apply_vector`) chooses. Picklable (for the search's worker
    processes); the network is built once per process and shape.

    :param columns: observation columns of the score (not 0, the validity flag)
    :param vector: ``x`` (:func:`split_vector`'s layout), as played
    :param hidden: hidden units ``H`` (at least 1)
    :param rows: ``K``, candidate rows of an observation
    :param features: ``F``, columns of an observation
    :param stop_score: the run's ``--stop-score`` (``learned`` or ``fixed``)
    """

    columns: Sequence[int]
    vector: np.ndarray
    hidden: int
    rows: int
    features: int
    stop_score: str = "learned"
    _loaded: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.columns = [int(c) for c in self.columns]
        self.vector = np.asarray(self.vector, dtype=np.float64)
        split_vector(self.vector, len(self.columns), self.hidden)  # the shape, or an error
        if self.hidden < 1:
            raise ValueError(f"a kernel score needs at least 1 hidden unit, got {self.hidden}")
        if self.stop_score not in ("learned", "fixed"):
            raise ValueError(
                f"--hidden plays a constant STOP score: --stop-score learned or fixed, "
                f"not {self.stop_score!r}"
            )

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loaded": False}

    @property
    def weights(self) -> np.ndarray:
        """The linear part ``w``."""
        return split_vector(self.vector, len(self.columns), self.hidden)[0]

    @property
    def stop(self) -> float:
        """STOP's score ``b``."""
        return split_vector(self.vector, len(self.columns), self.hidden)[1]

    def policy(self) -> Any:
        """This process's KernelPolicy of this shape, holding this score's weights."""
        key = (tuple(self.columns), self.hidden, self.rows, self.features, self.stop_score)
        policy = _POLICIES.get(key)
        if policy is None:
            policy = _POLICIES[key] = build_policy(
                self.columns, self.hidden, self.rows, self.features, self.stop_score
            )
        if not self._loaded or getattr(policy, "_hpcgym_score", None) is not self:
            apply_vector(policy, self.columns, self.vector, self.hidden)
            policy._hpcgym_score = self
            self._loaded = True
        return policy

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, None]:
        """The highest-scoring allowed action, by the KernelPolicy's own ``predict``.

        :param observation: ``(K, F)`` or ``(N, K, F)``
        :param action_masks: ``(K + 1,)`` or ``(N, K + 1)`` bool (``None``: the valid rows
            and STOP)
        :param deterministic: ignored (the policy is deterministic)
        :return: ``(actions, None)``
        """
        obs = np.asarray(observation)
        if action_masks is None:
            action_masks = valid_and_stop(obs)
        actions, _ = self.policy().predict(obs, deterministic=True, action_masks=action_masks)
        return actions, None


def build_policy(
    columns: Sequence[int], hidden: int, rows: int, features: int, stop_score: str = "learned"
) -> Any:
    """A KernelPolicy of the shipped shape for ``rows x features`` observations: kernel
    ``(hidden,)`` with ReLU, a row prior on ``columns``, a constant STOP score (its weights
    are set by :func:`apply_vector`)."""
    from gymnasium import spaces

    from hpcgym_agents.kernel_policy import KernelPolicy

    return KernelPolicy(
        spaces.Box(0.0, 1.0, (rows, features), np.float32),
        spaces.Discrete(rows + 1),
        lambda _: 0.0,
        kernel_arch=[hidden],
        stop_score=stop_score,
        row_prior=[(int(c), 1.0) for c in columns],
    )
