"""Queue policies written in Python: a priority function played by the one engine loop.

A queue policy registered with :func:`hpcgym.sim.registry.register_policy` is a function
``key(view) -> keys``: one key per waiting job of a :class:`QueueView`, the lowest first.
:class:`PriorityChooser` plays it at the engine's queue decisions
(``Simulation(policy="external", chooser=...)``): it makes the job with the lowest key
the head (ties to the earlier submission) and hands the keys to the engine as the jobs'
ranking values, so that the jobs behind the head are ordered by them too -- the order
EASY backfills in -- exactly as the compiled core orders a built-in policy (its SJF
ordering on these values). A function that returns SJF's keys therefore reproduces SJF
start for start (tested).

:class:`~hpcgym.sim.schedulers.SchedulerSpec` sets this up for every scheduler whose
queue policy is a registered Python one (``LARGEST-AREA+EASY``); the starvation rule and a
separate ranking estimate are not available to a Python policy (a clear error says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcgym.sim import _layout as L
from hpcgym.sim.registry import get_heuristic

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation
    from hpcgym.workload.core import Workload

__all__ = ["PriorityChooser", "QueueView", "REST_ORDER"]

#: the built-in policy whose order, on the keys handed to the engine, is the keys' order
REST_ORDER = "SJF"


@dataclass(frozen=True)
class QueueView:
    """What a Python queue policy sees at a queue decision (read-only copies).

    :param now: the current time (seconds of the trace)
    :param jobs: the waiting jobs (indices into ``workload``), in submission order
    :param submit: their submit times
    :param wait: their waits so far, ``now - submit``
    :param procs: their processors
    :param request: their requested run times
    :param estimate: their run-time estimates (the scheduler's estimator)
    :param running: the running jobs (indices), in order of estimated end
    :param free: free processors now
    :param machine_size: processors of the machine
    :param workload: the simulated window (``workload.user[jobs]``, ``workload.group``...)
    :param start: start time of every job of the window (``nan``: not started yet)
    """

    now: float
    jobs: np.ndarray
    submit: np.ndarray
    wait: np.ndarray
    procs: np.ndarray
    request: np.ndarray
    estimate: np.ndarray
    running: np.ndarray
    free: int
    machine_size: int
    workload: Workload
    start: np.ndarray

    @classmethod
    def of(cls, sim: Simulation) -> QueueView:
        """The view of ``sim`` at its current queue decision."""
        jobs = sim.waiting()
        wl = sim.workload
        submit = np.asarray(wl.submit, dtype=np.float64)[jobs]
        now = sim.now
        start = sim.start_times.copy()
        start.flags.writeable = False
        return cls(
            now=now,
            jobs=jobs,
            submit=submit,
            wait=now - submit,
            procs=np.asarray(wl.procs, dtype=np.int64)[jobs],
            request=np.asarray(wl.request, dtype=np.float64)[jobs],
            estimate=sim.estimates[jobs].copy(),
            running=sim.running(),
            free=sim.free,
            machine_size=int(wl.machine_size),
            workload=wl,
            start=start,
        )


class PriorityChooser:
    """Plays a registered Python queue policy at the engine's queue decisions.

    :param policy: the name of a queue policy registered with a priority function
    :raises ValueError: an unknown name, or a compiled built-in (it needs no chooser)
    """

    decides = "queue"

    def __init__(self, policy: str) -> None:
        entry = get_heuristic("policy", policy)
        if entry.key is None:
            raise ValueError(
                f"queue policy {entry.name!r} is compiled: give it as policy={entry.name!r}"
            )
        self.policy = entry.name
        self.key = entry.key
        self.name = f"priority-{entry.name}"
        self.counters: dict[str, int] = {}
        self._sim: Simulation | None = None

    def _bind(self, sim: Simulation) -> None:
        C = sim.C
        if int(C[L.C_POLICY]) != L.POL_EXTERNAL or int(C[L.C_QREST]) != L.POL_SJF:
            raise ValueError(
                f"queue policy {self.policy!r} runs with policy='external' and "
                f"rest_order={REST_ORDER!r} (its keys order the jobs behind the head)"
            )
        if sim.starvation is not None:
            raise ValueError(
                f"queue policy {self.policy!r} is a Python priority function: the starvation "
                "rule is not available to it (give none)"
            )
        if int(C[L.C_RANKSEP]) == 1 and self._sim is None:
            raise ValueError(
                f"queue policy {self.policy!r} ranks by its own keys: a separate ranking "
                "estimate (rank=...) is not available to it"
            )
        C[L.C_RANKSEP] = 1  # the engine orders the jobs behind the head by the keys
        self._sim = sim

    def __call__(self, sim: Simulation) -> int:
        if sim is not self._sim:
            self._bind(sim)
        view = QueueView.of(sim)
        keys = np.asarray(self.key(view), dtype=np.float64).reshape(-1)
        if keys.shape != view.jobs.shape or not np.isfinite(keys).all():
            raise ValueError(
                f"queue policy {self.policy!r}: the key function must return one finite key "
                f"per waiting job ({len(view.jobs)}), got {_describe(keys)}"
            )
        sim.JF[L.F_RANK, view.jobs] = keys
        return int(view.jobs[int(np.argmin(keys))])  # first minimum: the earliest submitted


def _describe(keys: Any) -> str:
    arr = np.asarray(keys)
    bad = int((~np.isfinite(arr)).sum()) if arr.dtype.kind == "f" else 0
    return f"shape {arr.shape}" + (f" with {bad} non-finite" if bad else "")
