"""Compare a schedule that a real Slurm produced with hpcgym's engine on the same jobs.

:func:`engine_workload` turns a :class:`~hpcgym.slurm.harness.ReplayResult` into the
workload the engine should simulate: Slurm's submit (begin) times, its whole-minute time
limits as the requests, and each job's *occupancy* as its run time: the run time Slurm
recorded (end - start, whole seconds) plus the scheduling latency, because the cores of
a finished job become usable at Slurm's next scheduling pass (``bf_interval=1``: about a
second later). :func:`compare` simulates it with a named scheduler and reports, per job,
the start-time difference and whether the job keeps its place in the order of starts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hpcgym.sim.schedulers import SchedulerSpec, get_scheduler
from hpcgym.slurm.replay import ReplayResult
from hpcgym.workload.core import Workload

__all__ = [
    "KINDS",
    "Conformance",
    "anchored",
    "classify",
    "compare",
    "engine_workload",
    "order_conforming",
    "replay_scheduler",
]


def engine_workload(
    res: ReplayResult, *, latency: float = 0.0, min_occupancy: float = 1.0
) -> Workload:
    """The workload of ``res`` as the engine should see it (real seconds since ``t0``).

    :param res: a replay
    :param latency: seconds added to each job's recorded run time (the time from a job's
        end to the scheduling pass that can reuse its cores)
    :param min_occupancy: the least occupancy, seconds: Slurm's passes are a second apart,
        so a job that ends within the second of its start still holds its cores until
        the next pass (the default 1 s)
    :raises ValueError: when some job has no start or end (the replay did not finish)
    """
    if not res.complete:
        bad = int(np.flatnonzero(~(np.isfinite(res.start) & np.isfinite(res.end)))[0])
        raise ValueError(
            f"row {bad} (Slurm job {int(res.slurm_ids[bad])}) has no start or end: "
            "the replay did not finish"
        )
    wl = res.workload
    ran = np.maximum(res.end - res.start, min_occupancy) + latency
    request = np.maximum(wl.request, ran)  # never shorter than the occupancy
    return Workload(
        name=wl.name,
        machine_size=wl.machine_size,
        job_id=wl.job_id,
        submit=wl.submit,
        runtime=np.maximum(ran, 1e-3),  # the engine needs a positive run time
        procs=wl.procs,
        request=request,
        user=wl.user,
        group=wl.group,
        executable=wl.executable,
        queue=wl.queue,
        source=wl.source,
        meta=dict(wl.meta),
    )


def replay_scheduler(scheduler: str | SchedulerSpec, res: ReplayResult) -> SchedulerSpec:
    """``scheduler`` for the jobs of ``res``: one that plans its reservation in Slurm's
    will-run windows (``SLURM-EASY``) gets them aligned on the replay's clock (``t0``)."""
    spec = get_scheduler(scheduler)
    if spec.shadow_window and not spec.shadow_origin:
        spec = replace(spec, shadow_origin=float(res.t0))
    return spec


def order_conforming(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """Per job: ``False`` where the job changed places in the order of starts.

    Jobs ``j`` and ``k`` are *inverted* when one starts before the other in schedule ``a``
    and after it in schedule ``b``, each by more than ``tol`` seconds. The inversion is the
    doing of the job that moved more (``|a - b|`` larger, both on a tie): a job that starts
    at the same time in both schedules is never out of order because another job moved
    past it.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    da = a[:, None] - a[None, :]  # > 0: j starts after k
    db = b[:, None] - b[None, :]
    inverted = ((da > tol) & (db < -tol)) | ((da < -tol) & (db > tol))
    moved = np.abs(a - b)
    return ~(inverted & (moved[:, None] >= moved[None, :])).any(axis=1)


@dataclass
class Conformance:
    """Slurm's schedule against the engine's, per job (seconds since the replay's ``t0``).

    :param scheduler: the engine's scheduler
    :param tol: the tolerance (the scheduling latency), seconds
    :param slurm_start: Slurm's starts
    :param engine_start: the engine's starts
    :param delta: ``slurm_start - engine_start``
    :param within: ``|delta| <= tol``
    :param in_order: :func:`order_conforming`
    """

    scheduler: str
    tol: float
    slurm_start: np.ndarray
    engine_start: np.ndarray
    delta: np.ndarray
    within: np.ndarray
    in_order: np.ndarray

    @property
    def both(self) -> np.ndarray:
        """Jobs in order and within the tolerance."""
        return self.within & self.in_order

    def summary(self) -> dict[str, Any]:
        """Counts and shares of the per-job comparison."""
        n = len(self.delta)
        ad = np.abs(self.delta)
        return {
            "scheduler": self.scheduler,
            "jobs": n,
            "tol_s": self.tol,
            "within": int(self.within.sum()),
            "in_order": int(self.in_order.sum()),
            "both": int(self.both.sum()),
            "share_both": float(self.both.mean()) if n else float("nan"),
            "mean_abs_delta_s": float(ad.mean()) if n else float("nan"),
            "max_abs_delta_s": float(ad.max()) if n else float("nan"),
            "exact": int((ad == 0).sum()),
        }


def compare(
    res: ReplayResult,
    scheduler: str | SchedulerSpec = "SLURM-EASY",
    *,
    latency: float = 0.0,
    min_occupancy: float = 1.0,
    tol: float = 2.0,
) -> Conformance:
    """Simulate the jobs of ``res`` with ``scheduler`` and compare the starts with Slurm's.

    :param res: a finished replay
    :param scheduler: a named scheduler (:func:`hpcgym.sim.get_scheduler`; its
        will-run windows aligned on the replay's clock, :func:`replay_scheduler`)
    :param latency: see :func:`engine_workload`
    :param min_occupancy: see :func:`engine_workload`
    :param tol: a start counts as the same when it differs by at most ``tol`` seconds
    """
    wl = engine_workload(res, latency=latency, min_occupancy=min_occupancy)
    spec = replay_scheduler(scheduler, res)
    sim = spec.simulate(wl)
    eng = np.asarray(sim.start, dtype=np.float64)
    delta = res.start - eng
    return Conformance(
        scheduler=spec.name,
        tol=tol,
        slurm_start=res.start.copy(),
        engine_start=eng,
        delta=delta,
        within=np.abs(delta) <= tol,
        in_order=order_conforming(res.start, eng, tol),
    )


#: the kinds of :func:`classify`
KINDS = ("same", "later, cores idle", "later, no room", "earlier", "order only")


def classify(res: ReplayResult, c: Conformance) -> list[str]:
    """Name the kind of each job's difference (one of :data:`KINDS`).

    ``same``: in order and within the tolerance. ``later, cores idle``: Slurm started it
    more than ``tol`` after the engine although, at some second in between, Slurm had at
    least the job's cores idle (Slurm held them for a reservation of its own: its backfill
    reserves specific nodes). ``later, no room``: Slurm never had the cores idle in
    between (the jobs running in Slurm differed: a knock-on of an earlier difference).
    ``earlier``: Slurm started it more than ``tol`` before the engine. ``order only``:
    within the tolerance, but another job overtook it in one schedule only.
    """
    w = res.workload
    m = w.machine_size
    out = []
    for j in range(len(w)):
        if c.within[j] and c.in_order[j]:
            out.append("same")
        elif c.delta[j] > c.tol:
            lo, hi = c.engine_start[j], res.start[j] - c.tol
            idle = False
            for t in np.arange(np.floor(lo), hi + 1e-9, 1.0):
                busy = w.procs[(res.start <= t) & (res.end > t)].sum()
                if m - busy >= w.procs[j]:
                    idle = True
                    break
            out.append("later, cores idle" if idle else "later, no room")
        elif c.delta[j] < -c.tol:
            out.append("earlier")
        else:
            out.append("order only")
    return out


def anchored(
    res: ReplayResult, scheduler: str | SchedulerSpec = "SLURM-EASY", *, tol: float = 2.0
) -> Conformance:
    """Slurm's decisions against the engine's *from Slurm's own state*, job by job.

    The free-running comparison (:func:`compare`) lets a difference carry on: a start a
    second late (Slurm's next pass) delays the jobs behind it, and so on. Here the engine
    decides from the state Slurm was in. At every second ``t`` at which something happened
    in Slurm (a job became eligible, started or ended), the engine gets the jobs running in
    Slurm at ``t`` (started before ``t``, at their real start, with their limits) and the
    jobs waiting at ``t`` (eligible, not started before ``t``; in priority order), and
    makes one pass; a job's *engine start* is the first such ``t`` at which that pass starts
    it (``inf`` if none, up to Slurm's start). So each job's difference is the
    difference of one decision, given the same running jobs and the same queue.

    Slurm's record is in whole seconds, so the state of its pass in second ``t`` is one of
    a few: each job recorded as ending in ``t`` ended before the pass or after it (then its
    cores were still busy; every combination of up to four such jobs), and a job that
    started and ended within ``t`` may be done already. The engine makes its pass from
    each, and the one whose starts agree best with Slurm's stands for the second (fewest
    jobs that Slurm started in ``t`` and the engine does not, or that the engine starts and
    Slurm started more than ``tol`` later; ties: all jobs ended before the pass).

    :param res: a finished replay
    :param scheduler: a named scheduler (:func:`hpcgym.sim.get_scheduler`; its will-run
        windows aligned on the replay's clock, :func:`replay_scheduler`)
    :param tol: a start counts as the same when it differs by at most ``tol`` seconds
    """
    if not res.complete:
        engine_workload(res)  # raises the error that names the unfinished job
    w = res.workload
    n = len(w)
    sub, start, end = w.submit, res.start, res.end
    spec = replay_scheduler(scheduler, res)
    events = np.unique(np.concatenate([sub, start, end]))
    eng = np.full(n, np.inf)
    for t in events:
        waiting = np.flatnonzero((sub <= t) & (start >= t))
        if len(waiting) == 0:
            continue
        running_after = np.flatnonzero((start < t) & (end > t))  # still running after t
        states = [(running_after, waiting)]
        for busy in _still_running(np.flatnonzero((start < t) & (end == t))):
            states.append((np.union1d(running_after, busy), waiting))
        quick = waiting[(start[waiting] == t) & (end[waiting] == t)]
        if len(quick):  # jobs that started and ended within the second: done already
            states.append((running_after, np.setdiff1d(waiting, quick)))
        # Slurm was in one of these states at its pass: the engine decides from the one
        # whose starts agree best with Slurm's (ties: the first). A job that started and
        # ended within the second is judged by the states in which it still waits.
        best: np.ndarray | None = None
        miss = n + 1
        for running, queue in states:
            if len(queue) == 0:
                continue
            now = _one_pass(w, spec, running, queue, t, start, end)
            eng[np.intersect1d(now, quick)] = t
            # disagreements: a job Slurm started now that the engine does not, and one the
            # engine starts that Slurm started more than ``tol`` later
            rest = np.setdiff1d(queue, quick)
            k = len(np.setdiff1d(rest[start[rest] == t], now)) + int(np.sum(start[now] > t + tol))
            if k < miss:
                best, miss = np.setdiff1d(now, quick), k
        if best is not None:
            eng[best] = np.minimum(eng[best], t)
    delta = start - eng
    return Conformance(
        scheduler=spec.name,
        tol=tol,
        slurm_start=start.copy(),
        engine_start=eng,
        delta=delta,
        within=np.abs(delta) <= tol,
        in_order=order_conforming(start, np.where(np.isfinite(eng), eng, 1e12), tol),
    )


def _still_running(ending: np.ndarray, most: int = 4) -> list[np.ndarray]:
    """The sets of ``ending`` jobs (recorded as ending in the second of a pass) that may
    still have held their cores at the pass: every non-empty subset of up to ``most``
    jobs, else all of them."""
    if len(ending) > most:
        return [ending]
    return [
        ending[[(m >> i) & 1 == 1 for i in range(len(ending))]] for m in range(1, 1 << len(ending))
    ]


def _one_pass(
    w: Workload,
    spec: Any,
    running: np.ndarray,
    waiting: np.ndarray,
    t: float,
    start: np.ndarray,
    end: np.ndarray,
) -> np.ndarray:
    """The waiting rows that ``spec`` starts at ``t``, with ``running`` running since their
    Slurm starts (their limits as estimates) and ``waiting`` queued at ``t`` in row order.

    A running job recorded as ending at ``t`` (whole seconds) is still running at the pass:
    it ends half a second later in the engine, so that the pass at ``t`` sees its cores
    busy (the state "it ended after Slurm's pass in that second")."""
    rows = np.concatenate([running, waiting])
    is_run = np.arange(len(rows)) < len(running)
    occ = np.where(is_run, end[rows] - start[rows], np.maximum(end[rows] - start[rows], 1.0))
    occ = np.where(is_run & (end[rows] <= t), t + 0.5 - start[rows], occ)
    occ = np.maximum(occ, 1e-3)
    order = np.argsort(np.where(is_run, start[rows], t), kind="stable")
    rows, is_run, occ = rows[order], is_run[order], occ[order]
    wl = Workload(
        name=w.name,
        machine_size=w.machine_size,
        job_id=w.job_id[rows],
        submit=np.where(is_run, start[rows], t),
        runtime=occ,
        procs=w.procs[rows],
        request=np.maximum(w.request[rows], occ),
        user=w.user[rows],
        group=w.group[rows],
        executable=w.executable[rows],
        queue=w.queue[rows],
    )
    st = np.asarray(spec.simulate(wl).start)
    return rows[~is_run & (st <= t)]
