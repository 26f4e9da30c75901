"""Replay a workload through a :class:`~hpcgym.slurm.harness.LocalSlurm`: each job a
time-scaled ``sleep`` job submitted ahead of its ``--begin`` time, then the accounting
read back per workload row (:class:`ReplayResult`)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hpcgym.slurm.harness import SlurmError
from hpcgym.slurm.records import JobRecord
from hpcgym.workload.core import Workload

if TYPE_CHECKING:
    from hpcgym.slurm.harness import LocalSlurm

__all__ = ["ReplayResult", "replay"]


@dataclass
class ReplayResult:
    """One workload replayed through a :class:`LocalSlurm`.

    All times are real seconds since :attr:`t0` (the replay's time origin: trace time 0
    of the scaled workload). Arrays are aligned with the rows of :attr:`workload`.

    :param workload: the workload *as Slurm ran it*, in real seconds: submit = the job's
        ``--begin`` time, runtime = its ``sleep``, request = its time limit (whole minutes),
        procs = its ``-n``. Simulate this to compare an engine with Slurm.
    :param t0: the Unix time of the origin
    :param time_scale: trace seconds per real second
    :param slurm_ids: Slurm's job id of each row
    :param submit: when Slurm recorded the job eligible (its begin time), ``nan`` if unknown
    :param start: Slurm's start time, ``nan`` for a job that never started
    :param end: Slurm's end time, ``nan`` if unknown
    :param state: Slurm's final state (``COMPLETED``, ``TIMEOUT``, ``CANCELLED`` ...), or
        ``""`` for a job without a record
    :param records: the accounting records of the replayed jobs
    :param log: the jobcomp log path (or ``None``)
    """

    workload: Workload
    t0: float
    time_scale: float
    slurm_ids: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: list[str]
    records: list[JobRecord] = field(default_factory=list)
    log: Path | None = None

    @property
    def complete(self) -> bool:
        """Every job has a start and an end."""
        return bool(np.all(np.isfinite(self.start)) and np.all(np.isfinite(self.end)))


def replay(
    slurm: LocalSlurm,
    workload: Workload,
    *,
    time_scale: float = 1.0,
    lead: float = 20.0,
    margin: float = 5.0,
    timeout: float | None = None,
    until: str = "end",
    progress: Callable[[str], None] | None = None,
) -> ReplayResult:
    """Run ``workload`` as ``sleep`` jobs at their (scaled) submit times; wait; collect.

    Job ``i`` becomes eligible at ``t0 + round((submit[i] - submit[0]) / time_scale)``
    (``--begin``, whole seconds), sleeps ``runtime[i] / time_scale`` seconds on
    ``procs[i]`` cores, with the limit ``ceil(request[i] / time_scale / 60)`` minutes.
    Jobs are submitted in row order, ``lead`` seconds before they become eligible, so
    Slurm's job ids (its FIFO priority under ``priority/basic``) follow the rows.

    :param slurm: a started :class:`~hpcgym.slurm.harness.LocalSlurm`
    :param workload: the jobs (``procs`` at most the instance's cores)
    :param time_scale: trace seconds per real second
    :param lead: submit each job this many seconds before its begin time
    :param margin: seconds between the call and ``t0`` beyond ``lead``
    :param timeout: give up waiting this many seconds after the last begin time plus
        the sum of run times (default: that span plus 120 s)
    :param until: ``"end"``: wait until every job has ended; ``"started"``: once every
        job has started, cancel the ones still running (their start is what a
        comparison of schedules needs; their state is then ``CANCELLED`` and their end
        the time of the cancel, after every start)
    :param progress: called with a status line now and then
    :return: the replay; a job without an accounting record when the wait timed out has
        ``nan`` times and state ``""`` (:attr:`ReplayResult.complete` is then false)
    """
    n = len(workload)
    if n == 0:
        raise ValueError("empty workload")
    if until not in ("end", "started"):
        raise ValueError(f'until must be "end" or "started", not {until!r}')
    if time_scale <= 0:
        raise ValueError(f"time_scale must be > 0, not {time_scale}")
    too_big = np.flatnonzero(workload.procs > slurm.cpus)
    if len(too_big):
        i = int(too_big[0])
        raise ValueError(
            f"{len(too_big)} job(s) need more than the instance's {slurm.cpus} cores "
            f"(first: row {i}, job {int(workload.job_id[i])}, {int(workload.procs[i])} procs)"
        )
    sub = np.round((workload.submit - workload.submit[0]) / time_scale)
    run = np.maximum(np.round(workload.runtime / time_scale, 3), 0.001)
    limit_min = np.maximum(1, np.ceil(np.round(workload.request / time_scale / 60.0, 6))).astype(
        np.int64
    )
    run = np.minimum(run, limit_min * 60.0)
    procs = workload.procs.astype(np.int64)
    t0 = float(math.ceil(time.time() + lead + margin))
    ids = np.full(n, -1, dtype=np.int64)
    errors: list[BaseException] = []

    def submitter() -> None:
        try:
            for i in range(n):
                wait = t0 + sub[i] - lead - time.time()
                if wait > 0:
                    time.sleep(wait)
                ids[i] = slurm.sbatch(
                    float(run[i]),
                    int(procs[i]),
                    time_limit_min=int(limit_min[i]),
                    begin=t0 + float(sub[i]),
                    name=f"r{i}",
                )
        except BaseException as e:  # noqa: BLE001 (re-raised in the caller)
            errors.append(e)

    th = threading.Thread(target=submitter, name="hpcgym-slurm-submit", daemon=True)
    th.start()
    if timeout is None:
        timeout = float(sub[-1] + run.sum() + 120.0)
    deadline = t0 + float(sub[-1]) + timeout
    last_note = 0.0
    done: dict[int, JobRecord] = {}
    while True:
        if errors:
            raise SlurmError(f"submitting failed: {errors[0]}") from errors[0]
        slurm._check_alive()
        recs = slurm.jobcomp()
        done = {r.job_id: r for r in recs}
        submitted = ids[ids >= 0]
        if not th.is_alive() and len(submitted) == n and all(int(j) in done for j in submitted):
            break
        if (
            until == "started"
            and not th.is_alive()
            and len(submitted) == n
            and time.time() > t0 + float(sub[-1]) + 1
            and not slurm.pending_ids()
        ):
            slurm.run(["scancel", *[str(j) for j in submitted if int(j) not in done]], check=False)
            until = "end"  # now wait for the cancelled jobs' records
            continue
        if time.time() > deadline:
            break
        if progress is not None and time.time() - last_note > 30:
            last_note = time.time()
            progress(
                f"t={time.time() - t0:.0f}s submitted={len(submitted)}/{n} finished={len(done)}"
            )
        time.sleep(1.0)
    th.join(timeout=1)
    submit = np.full(n, np.nan)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    state = [""] * n
    records = []
    for i, j in enumerate(ids):
        r = done.get(int(j))
        if r is None:
            continue
        records.append(r)
        submit[i] = r.eligible - t0 if r.eligible is not None else np.nan
        start[i] = r.start - t0 if r.start is not None else np.nan
        end[i] = r.end - t0 if r.end is not None else np.nan
        state[i] = r.state
    ran = Workload(
        name=f"{workload.name}@slurm/{time_scale:g}",
        machine_size=slurm.cpus,
        job_id=workload.job_id.copy(),
        submit=sub.astype(np.float64),
        runtime=run.astype(np.float64),
        procs=procs,
        request=(limit_min * 60).astype(np.float64),
        user=workload.user.copy(),
        group=workload.group.copy(),
        executable=workload.executable.copy(),
        queue=workload.queue.copy(),
        source=workload.source,
        meta={**workload.meta, "slurm_time_scale": f"{time_scale:g}"},
    )
    return ReplayResult(
        workload=ran,
        t0=t0,
        time_scale=time_scale,
        slurm_ids=ids,
        submit=submit,
        start=start,
        end=end,
        state=state,
        records=records,
        log=slurm.jobcomp_log,
    )
