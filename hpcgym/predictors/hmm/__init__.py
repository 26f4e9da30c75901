"""Nissimov's hidden-Markov-model runtime distributions (thesis chapters 2-4).

Reference: A. Nissimov (supervisor D. G. Feitelson), *Locality and its usage in
parallel job runtime distribution modeling using HMM*, M.Sc. thesis, Hebrew
University, 2006. Section numbers below are the
thesis'. The full model, every equation and every documented choice are in
``docs/hmm.md``.

The model
=========

* **Discretisation** (§2.2). Submit times are cut into bins of ``t_s`` seconds
  (default 15 min, §5.3); runtimes into bins of constant ratio ``t_r`` in log space
  (default 1.8). Runtimes recorded below 1.5 s (SWF rounds to whole seconds, so 0 s
  and 1 s) share the lowest bin. :class:`RuntimeBins`, :func:`submit_bin_index`.
* **Observation** (§3.1). The signal of submit bin ``t`` is the multiset of runtime
  bins of its jobs, a count vector ``x_t`` over the ``N`` runtime bins.
* **HMM** with ``M`` hidden states (default 16). State ``i`` emits the jobs of a
  bin independently from its runtime distribution ``B_i``:
  ``Pr(x_t | q_t = i) = prod_j B_ij ** x_jt`` -- an empty bin has emission 1, so
  empty bins only let time pass (§3.1 formula). In log space the whole emission
  matrix is ``X @ log(B).T``. Optional load modelling multiplies a geometric or
  Poisson factor ``Pr(l_t | q_t = i)`` of the bin's job count (§3.1, §3.4.4).
* **Baum-Welch** (Rabiner's EM, the thesis' M-step ``B_ij = sum_t g_t(i) x_jt /
  sum_tk g_t(i) x_kt``), numerically stable: scaled forward-backward whose
  emissions are shifted by their per-step maximum in log space, with a per-step
  log-domain fallback and a pure log-domain fallback kernel. Initialisation:
  Static-IV (Algorithm 3) with uniform ``A`` and ``pi`` (§3.2). Termination
  (§3.3): ``L1`` (default, ``sqrt(n_t) * L1(theta, theta') < eps``, ``eps = 200``,
  ``n_t`` the number of jobs in the training set), ``Linf`` or a fixed number of rounds.
* **Online predictor** (chapter 4): :class:`HMMPredictor`.

The recursions over time are compiled with numba (the project already depends on
it for the simulator): a forward-backward pass over 70,000 bins then takes about
30 ms instead of about a second with a per-step numpy loop (see ``docs/hmm.md``).

Modules
=======

* :mod:`~hpcgym.predictors.hmm.bins`: runtime and submit bins, the count matrix,
  :func:`completion_cdf` and :func:`distribution_quantile`;
* :mod:`~hpcgym.predictors.hmm.params`: :class:`HMMParams`, Static-IV, the §3.2 repair;
* :mod:`~hpcgym.predictors.hmm.kernels`: the numba forward-backward recursions;
* :mod:`~hpcgym.predictors.hmm.inference`: log emissions (with the load term),
  forward filter, forward-backward (E-step) and re-estimation (M-step);
* :mod:`~hpcgym.predictors.hmm.model`: :class:`CountHMM` (Baum-Welch with the §3.3
  stopping rule, scoring, sampling) and :class:`FitResult`;
* :mod:`~hpcgym.predictors.hmm.predictor`: the online :class:`HMMPredictor`.

Every name is importable from ``hpcgym.predictors.hmm``.
"""

from __future__ import annotations

from hpcgym.predictors.hmm.bins import (
    RuntimeBins,
    completion_cdf,
    distribution_quantile,
    observation_counts,
    submit_bin_index,
)
from hpcgym.predictors.hmm.inference import (
    Posterior,
    forward_backward,  # noqa: F401 (public, not in __all__)
    forward_backward_log,  # noqa: F401 (public, not in __all__)
    forward_filter,
    log_emissions,  # noqa: F401 (public, not in __all__)
    m_step,  # noqa: F401 (public, not in __all__)
)
from hpcgym.predictors.hmm.model import CountHMM, FitResult
from hpcgym.predictors.hmm.params import (
    CRITERIA,
    LOAD_MODELS,
    HMMParams,
    repair_impossible_bins,
    static_iv,
)
from hpcgym.predictors.hmm.predictor import (
    WEEK,  # noqa: F401 (public, not in __all__)
    HMMPredictor,
)
from hpcgym.sim.probabilistic import truncate_distribution, truncate_distributions

__all__ = [
    "CRITERIA",
    "LOAD_MODELS",
    "CountHMM",
    "FitResult",
    "HMMParams",
    "HMMPredictor",
    "Posterior",
    "RuntimeBins",
    "completion_cdf",
    "distribution_quantile",
    "forward_filter",
    "observation_counts",
    "repair_impossible_bins",
    "static_iv",
    "submit_bin_index",
    "truncate_distribution",
    "truncate_distributions",
]
