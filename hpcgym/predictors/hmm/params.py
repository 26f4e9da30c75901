"""HMM parameters ``theta = (pi, A, B[, load])`` and their initialisation (§3.1-3.2).

:class:`HMMParams` (with the §3.3 termination distances), the load models and
termination criteria, Static-IV initial values (Algorithm 3, :func:`static_iv`) and
the thesis' repair of submit bins no state can emit (:func:`repair_impossible_bins`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CRITERIA",
    "LOAD_MODELS",
    "HMMParams",
    "repair_impossible_bins",
    "static_iv",
]

#: load models of §3.1 (``None``: runtimes only, the thesis' choice for scheduling)
LOAD_MODELS: tuple[str | None, ...] = (None, "geometric", "poisson")
#: Baum-Welch termination criteria of §3.3
CRITERIA: tuple[str, ...] = ("l1", "linf", "fixed")


@dataclass
class HMMParams:
    """HMM parameters ``theta = (pi, A, B[, load])``.

    :param startprob: ``pi``, shape ``(M,)``
    :param transmat: ``A``, shape ``(M, M)``, rows sum to 1
    :param emission: ``B``, shape ``(M, N)``, rows sum to 1 (runtime-bin distributions)
    :param load: per-state load parameter: geometric ``p_i`` or Poisson ``lambda_i``
        (``None`` without load modelling)
    :param load_model: ``None``, ``"geometric"`` or ``"poisson"``
    """

    startprob: np.ndarray
    transmat: np.ndarray
    emission: np.ndarray
    load: np.ndarray | None = None
    load_model: str | None = None

    def __post_init__(self) -> None:
        if self.load_model not in LOAD_MODELS:
            raise ValueError(
                f"unknown load model {self.load_model!r}; valid: None, 'geometric', 'poisson'"
            )
        self.startprob = np.ascontiguousarray(self.startprob, dtype=np.float64)
        self.transmat = np.ascontiguousarray(self.transmat, dtype=np.float64)
        self.emission = np.ascontiguousarray(self.emission, dtype=np.float64)
        M = self.startprob.shape[0]
        if self.transmat.shape != (M, M) or self.emission.ndim != 2 or len(self.emission) != M:
            raise ValueError(
                f"inconsistent shapes: startprob {self.startprob.shape}, transmat "
                f"{self.transmat.shape}, emission {self.emission.shape}"
            )
        if self.load_model is None:
            self.load = None
        else:
            if self.load is None:
                raise ValueError(f"load model {self.load_model!r} needs a load parameter")
            self.load = np.ascontiguousarray(self.load, dtype=np.float64)
            if self.load.shape != (M,):
                raise ValueError(f"load parameter must have shape ({M},)")

    @property
    def n_states(self) -> int:
        return int(self.startprob.shape[0])

    @property
    def n_bins(self) -> int:
        return int(self.emission.shape[1])

    def copy(self) -> HMMParams:
        return HMMParams(
            self.startprob.copy(),
            self.transmat.copy(),
            self.emission.copy(),
            None if self.load is None else self.load.copy(),
            self.load_model,
        )

    def vector(self) -> np.ndarray:
        """All parameters in one vector (for the termination distances of §3.3)."""
        parts = [self.startprob, self.transmat.ravel(), self.emission.ravel()]
        if self.load is not None:
            parts.append(self.load)
        return np.concatenate(parts)

    def distance(self, other: HMMParams, kind: str = "l1") -> float:
        """``L1`` (sum) or ``Linf`` (max) distance between all parameters (§3.3)."""
        d = np.abs(self.vector() - other.vector())
        if kind == "l1":
            return float(d.sum())
        if kind == "linf":
            return float(d.max())
        raise ValueError(f"unknown distance {kind!r}; valid: 'l1', 'linf'")


def static_iv(
    n_states: int = 16, n_bins: int = 25, load_model: str | None = None, mean_load: float = 1.0
) -> HMMParams:
    """Static initial values, Algorithm 3 (§3.2), with uniform ``A`` and ``pi``.

    State ``i`` doubles the weight of the runtime bins
    ``X_i = [floor(i*N/M), floor((i+1)*N/M))``: ``B_ix = 2/(|X_i|+N)`` for ``x`` in
    ``X_i`` and ``1/(|X_i|+N)`` elsewhere. (The listing writes ``i*M/N`` in Rabiner's
    notation, ``M`` = symbols, ``N`` = states; the text's normaliser ``|X_i| + N``
    uses ``N`` = runtime bins, so the bins are partitioned among the states.)

    :param mean_load: initial expected load of every state when load is modelled
        (geometric ``p = 1/(1+mean_load)``, Poisson ``lambda = mean_load``); the thesis
        gives no initial values for the load parameters
    """
    M, N = int(n_states), int(n_bins)
    if M < 1 or N < 1:
        raise ValueError(f"need n_states >= 1 and n_bins >= 1, got {M}, {N}")
    B = np.empty((M, N))
    for i in range(M):
        a, b = i * N // M, (i + 1) * N // M
        B[i, :] = 1.0 / (b - a + N)
        B[i, a:b] *= 2.0
    load = None
    if load_model == "geometric":
        load = np.full(M, 1.0 / (1.0 + float(mean_load)))
    elif load_model == "poisson":
        load = np.full(M, float(mean_load))
    return HMMParams(np.full(M, 1.0 / M), np.full((M, M), 1.0 / M), B, load, load_model)


def repair_impossible_bins(emission: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, int]:
    """The thesis' adjustment for submit bins no state can emit (§3.2).

    For each bin ``t`` whose jobs have probability 0 under every state,
    ``B_ij <- (1 - lambda(t)) B_ij + lambda(t) p(j|t)`` with ``lambda(t)`` the fraction
    of all jobs of ``X`` that are in bin ``t`` and ``p(j|t)`` the runtime-bin fractions of
    bin ``t``. With log-space arithmetic this only happens when ``B`` has exact zeros
    (warm starts on data with a runtime bin never seen before), never from underflow.

    :return: the repaired emission matrix and the number of bins repaired
    """
    B = np.array(emission, dtype=np.float64)
    Xp = (X > 0).astype(np.float64)
    total = float(X.sum())
    repairs = 0
    for _ in range(B.shape[1] + 1):
        imp = (Xp @ (B <= 0).T.astype(np.float64)) > 0  # (T, M): state i cannot emit bin t
        bad = np.flatnonzero(imp.all(axis=1))
        if len(bad) == 0:
            break
        t = int(bad[0])
        lam = float(X[t].sum()) / total
        B = (1.0 - lam) * B + lam * (X[t] / X[t].sum())[None, :]
        repairs += 1
    return B, repairs
