"""The count-emission HMM (§3.1) and its Baum-Welch training with the §3.3 stopping rule.

:class:`CountHMM` fits, scores, filters and samples; :class:`FitResult` records one
Baum-Welch run (iterations, log-likelihoods, termination distances).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from hpcgym.predictors.hmm.inference import (
    Posterior,
    forward_backward,
    forward_filter,
    log_emissions,
    m_step,
)
from hpcgym.predictors.hmm.params import CRITERIA, HMMParams, repair_impossible_bins, static_iv

__all__ = ["CountHMM", "FitResult"]


@dataclass
class FitResult:
    """What one Baum-Welch run did.

    :param logliks: ``log Pr(O | theta_k)`` for the parameters *entering* iteration
        ``k`` (EM guarantees this sequence never decreases)
    :param distances: termination distance between ``theta_k`` and ``theta_k+1``
    :param converged: the termination criterion was met (always True for ``fixed``)
    :param n_jobs: ``n_t``, the number of jobs of the training sequence
    :param repaired: submit bins repaired by :func:`repair_impossible_bins` first
    """

    iterations: int = 0
    logliks: list[float] = field(default_factory=list)
    distances: list[float] = field(default_factory=list)
    converged: bool = False
    n_jobs: int = 0
    repaired: int = 0
    seconds: float = 0.0

    @property
    def last_distance(self) -> float:
        return self.distances[-1] if self.distances else float("inf")


class CountHMM:
    """An HMM whose observation per step is a count vector over runtime bins (§3.1).

    :param params: the parameters (default: :func:`static_iv` with 16 states, 25 bins)
    """

    def __init__(self, params: HMMParams | None = None) -> None:
        self.params = params if params is not None else static_iv()

    @classmethod
    def static(
        cls,
        n_states: int = 16,
        n_bins: int = 25,
        load_model: str | None = None,
        mean_load: float = 1.0,
    ) -> CountHMM:
        """A model with Static-IV initial values (Algorithm 3)."""
        return cls(static_iv(n_states, n_bins, load_model, mean_load))

    @property
    def n_states(self) -> int:
        return self.params.n_states

    @property
    def n_bins(self) -> int:
        return self.params.n_bins

    def log_emissions(self, X: np.ndarray, loads: np.ndarray | None = None) -> np.ndarray:
        return log_emissions(self.params, X, loads)

    def posterior(self, X: np.ndarray, loads: np.ndarray | None = None) -> Posterior | None:
        """Forward-backward over ``X``; ``None`` if ``X`` is impossible under the model."""
        return forward_backward(self.params, self.log_emissions(X, loads))

    def score(self, X: np.ndarray, loads: np.ndarray | None = None) -> float:
        """``log Pr(X | theta)`` (``-inf`` if impossible)."""
        res = forward_filter(
            self.params.startprob, self.params.transmat, self.log_emissions(X, loads)
        )
        return -math.inf if res is None else float(res[1].sum())

    def filter(self, X: np.ndarray, loads: np.ndarray | None = None) -> np.ndarray | None:
        """Filtered state distributions ``Pr(q_t | x_1..t)``, shape ``(T, M)``."""
        res = forward_filter(
            self.params.startprob, self.params.transmat, self.log_emissions(X, loads)
        )
        return None if res is None else res[0]

    def predictive(self, state_dist: np.ndarray) -> np.ndarray:
        """Runtime-bin distribution of a job in a bin with state distribution ``state_dist``."""
        p = np.asarray(state_dist, dtype=np.float64) @ self.params.emission
        return p / p.sum()

    def fit(
        self,
        X: np.ndarray,
        loads: np.ndarray | None = None,
        *,
        criterion: str = "l1",
        eps: float = 200.0,
        max_iter: int = 1000,
    ) -> FitResult:
        """Baum-Welch from the current parameters until the termination criterion (§3.3).

        :param X: ``(T, N)`` counts of one observation sequence
        :param criterion: ``"l1"``: stop when ``sqrt(n_t) * sum|theta - theta'| < eps``
            (``n_t`` = jobs in ``X``; thesis default ``eps = 200``); ``"linf"``: when
            ``max|theta - theta'| < eps``; ``"fixed"``: after ``int(eps)`` rounds
        :param max_iter: hard cap on the iterations of this call
        :raises ValueError: bad option, or ``X`` impossible under the model even after
            the §3.2 repair (only possible with zero transition probabilities)
        """
        if criterion not in CRITERIA:
            raise ValueError(f"unknown criterion {criterion!r}; valid: {', '.join(CRITERIA)}")
        X = np.ascontiguousarray(X, dtype=np.float64)
        t0 = time.perf_counter()
        res = FitResult(n_jobs=int(round(X.sum())))
        B, res.repaired = repair_impossible_bins(self.params.emission, X)
        if res.repaired:
            p = self.params.copy()
            p.emission = B
            self.params = p
        rounds = int(eps) if criterion == "fixed" else int(max_iter)
        limit = min(rounds, int(max_iter))
        threshold = eps / math.sqrt(max(res.n_jobs, 1)) if criterion == "l1" else eps
        kind = "linf" if criterion == "linf" else "l1"
        rows = np.flatnonzero(X.any(axis=1))
        while res.iterations < limit:
            post = forward_backward(self.params, log_emissions(self.params, X, loads, rows))
            if post is None:
                raise ValueError(
                    "the observation sequence is impossible under the current parameters "
                    "(zero transition probabilities); re-initialise with static_iv()"
                )
            new = m_step(self.params, X, post, loads, rows)
            d = self.params.distance(new, kind)
            self.params = new
            res.iterations += 1
            res.logliks.append(post.loglik)
            res.distances.append(d)
            if criterion != "fixed" and d < threshold:
                res.converged = True
                break
        if criterion == "fixed":
            res.converged = res.iterations >= rounds
        res.seconds = time.perf_counter() - t0
        return res

    def sample(
        self, n_steps: int, rng: np.random.Generator, loads: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw a state path and count matrix from the model.

        :param loads: jobs per step; required without load modelling, otherwise drawn
            from the state's load distribution when not given
        :return: ``(states (T,), X (T, N))``
        """
        p = self.params
        M, N = p.n_states, p.n_bins
        states = np.empty(n_steps, dtype=np.int64)
        s = int(rng.choice(M, p=p.startprob))
        for t in range(n_steps):
            states[t] = s
            s = int(rng.choice(M, p=p.transmat[s]))
        if loads is None:
            if p.load_model is None:
                raise ValueError("without load modelling, sample() needs loads (jobs per step)")
            assert p.load is not None
            par = p.load[states]
            if p.load_model == "geometric":
                loads = rng.geometric(par) - 1  # numpy's geometric counts trials (>= 1)
            else:
                loads = rng.poisson(par)
        loads = np.asarray(loads, dtype=np.int64)
        if loads.shape != (n_steps,):
            raise ValueError(f"loads must have shape ({n_steps},)")
        X = np.zeros((n_steps, N))
        for i in range(M):
            rows = np.flatnonzero(states == i)
            if len(rows):
                X[rows] = rng.multinomial(loads[rows], p.emission[i])
        return states, X
