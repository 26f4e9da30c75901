"""The estimator interface: how runtime estimates and predictors plug into the engine.

An estimator gives the runtime the scheduler *believes* for each job, ``est(j)``.
The engine (:mod:`hpcgym.sim.engine`) uses it for queue keys, for the shadow time
and for backfill eligibility. Jobs always run for their actual runtime.

Two kinds:

* **static** estimators (``online = False``) know every estimate up front from the
  job's own fields (user request, clairvoyant actual runtime, seeded noisy actual).
  :meth:`Estimator.static_estimates` returns the whole array; the engine then never
  calls back into Python, which keeps whole-trace runs fast.
* **online** estimators (``online = True``) are asked at each submission
  (:meth:`Estimator.predict`) and are told, before that, about every job that has
  finished since the previous call (:meth:`Estimator.observe_finished`) and, when
  they want it, about starts. They may use only the job's own fields (not its
  runtime), the history of finished jobs and the current system state
  (:class:`SystemView`).

All estimates are capped at the user request by the engine.

When a running job reaches its estimated end without finishing, the engine applies
a **correction** (see :mod:`hpcgym.sim.engine`, ``correction=``); corrections are part
of the engine, not of the estimator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcgym.workload.core import Workload

__all__ = ["Estimator", "SystemView"]


@dataclass
class SystemView:
    """Read-only view of the engine at a submission (valid only during the call).

    :param now: current simulated time (trace seconds)
    :param running: indices (into the simulated workload) of the running jobs
    :param start: start time of every job of the workload (``nan`` if not started)
    :param free: free processors now
    :param machine_size: processors of the machine
    """

    now: float
    running: np.ndarray
    start: np.ndarray
    free: int
    machine_size: int


class Estimator:
    """Base class of runtime estimators.

    Subclasses set :attr:`name` and :attr:`online` and implement either
    :meth:`static_estimates` (static) or :meth:`predict` (online).

    The same estimator object can be reused for many simulations: the engine calls
    :meth:`bind` at the start of each one.
    """

    #: short name used in scheduler specs (``--estimate NAME``)
    name: str = "base"
    #: True if :meth:`predict` must be called at each submission
    online: bool = False
    #: if not None, estimate used for *running* jobs' ends (shadow time) instead of
    #: the prediction (Tang et al.'s *selective* adjusting uses the user request)
    running_estimate: str | None = None

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        """Start a new simulation of ``workload`` (reset any online state)."""
        self.workload = workload
        self.rng = rng

    # -- static estimators -------------------------------------------------------
    def static_estimates(self) -> np.ndarray | None:
        """All estimates at once (float64, len = jobs), or ``None`` for online ones."""
        return None

    # -- online estimators -------------------------------------------------------
    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        """Jobs (indices) that finished since the last call, in completion order."""

    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        """Jobs (indices) that started since the last call (optional)."""

    def predict(self, job: int, view: SystemView) -> float:
        """Estimate for ``job`` submitted now (uses no information from the future)."""
        raise NotImplementedError
