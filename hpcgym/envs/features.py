"""The extended observation features of the backfilling env (``features="extended"``).

:class:`~hpcgym.envs.backfill_env.BackfillEnv` appends :data:`N_EXTENDED` columns to the
paper's columns (and to ``prediction`` with a feature predictor). Every value is in
``[0, 1]``, padding rows stay all zero, and every value is **online**: computed only from
the trace's submissions up to now (submit times, requests, processors, users), the
engine's estimates and state, and the actual runtimes of jobs that have *completed* in
the episode (in completion order; see :class:`EpisodeFeatures`). Never from a job's own
runtime before it ends, nor from a later arrival.

Scalings are trace-independent (an agent keeps its meaning on another trace):
``sat(x, tau) = x / (x + tau)`` for a non-negative duration or load (0.5 at ``tau``),
``ssat(x, tau) = (1 + x / (|x| + tau)) / 2`` for a signed duration (0.5 at 0), and
``cnt(x) = min(log2(1 + x) / 10, 1)`` for a count (0.1 for one job, 1 from 1,023).

==  =============  ============================================================  =======
 #  name           value                                                         rows
==  =============  ============================================================  =======
 0  tod_sin        ``(1 + sin(2 pi tod / 1 day)) / 2``, tod = local time of day  same
                   of ``now``
 1  tod_cos        ``(1 + cos(2 pi tod / 1 day)) / 2``                           same
 2  weekday        ``((local now - Monday 00:00) mod 1 week) / 1 week``          same
 3  load_hour      ``sat(r, 1)``, ``r = sum(procs * request) / (m * 1 h)`` over  same
                   the jobs submitted in the last hour
 4  load_day       the same over the last 24 h                                   same
 5  queue_jobs     ``cnt(waiting jobs)`` (the head included)                     same
 6  queue_work     ``sat(sum(procs * est) / m, 1 day)`` over the waiting jobs    same
 7  shadow_free    ``(extra + head procs) / m``: processors free at the shadow   same
                   time (running jobs' estimates)
 8  slack          ``ssat(shadow - now - est, 1 h)``: > 0.5 iff the job ends by  per job
                   the shadow time (by its estimate)
 9  extra_left     ``(1 + (extra - procs * [now + est > shadow]) / m) / 2``:     per job
                   extra processors left at the shadow time after starting
                   the job; < 0.5 iff the start delays the reservation
10  size_rank      rows with a smaller ``est`` / ``max(rows - 1, 1)``            per job
11  user_accuracy  mean ``actual / request`` of the user's last                  per job
                   ``USER_HISTORY`` (4) completed jobs; without any: the mean
                   over every job completed in the episode so far (1 before
                   the first completion; unknown users always get it)
12  user_running   ``cnt(the user's running jobs)``                              per job
13  user_waiting   ``cnt(the user's other waiting jobs)``                        per job
==  =============  ============================================================  =======

Clock (columns 0-2): the absolute time is ``now + UnixStartTime`` of the trace header
in the site's local wall-clock time (``TimeZoneString``, else the fixed ``TimeZone``
offset), the convention of E-Loss's features
(:func:`hpcgym.predictors.eloss.submit_clock`); without ``UnixStartTime`` (e.g. the
Lublin traces) the trace seconds are the clock (trace second 0 = Thursday 00:00, the
Unix epoch). The local offset is tabulated per UTC hour over the trace's span.

Arrivals (3-4) count every job of the loaded trace submitted in the interval up to now
that the episode has seen: the jobs before the window (the trace's past, known at its
start) and the window's submitted jobs; never jobs after the window. Users (11-13) are
the SWF user ids; unknown users (negative ids, e.g. the Lublin traces) have no history
and no "own" jobs (columns 12-13 are 0). With ``features="extended"`` user history
starts empty at each episode (the jobs before the window were not simulated, so the
simulation does not know when they completed).

``features="extended-log"`` has the same columns, but ``user_accuracy`` starts from the
trace's **accounting log**: the schedule the trace's own system recorded (SWF field 3,
the wait time; :attr:`~hpcgym.workload.core.Workload.recorded_wait`). A job of the trace
counts as completed before the episode when its recorded end, ``submit + recorded wait
+ runtime``, is at or before the submission of the window's first job ``t0`` (so always a
job before the window); each user's ring of the last :data:`USER_HISTORY` ratios and the
population prior are seeded with those jobs in the order of their recorded end (ties by
trace index), and the episode's own completions follow as with ``"extended"``. This is
what a site knows when it starts the agent at ``t0``: its accounting log up to then.
Jobs the log shows running or waiting at ``t0`` are not in the window's simulation and
never enter the history; jobs without a recorded wait (SWF ``-1``) are left out and
counted (:attr:`TraceContext.log_unknown`). A workload without a recorded schedule
(generated workloads) cannot use ``"extended-log"``: the env says so when it is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpcgym.envs.observation import DAY, HOUR, USER_HISTORY
from hpcgym.predictors.ave import dense_ids
from hpcgym.predictors.eloss import submit_clock
from hpcgym.sim.engine import Simulation
from hpcgym.workload.core import Workload

__all__ = [
    "EXTENDED_COLUMNS",
    "FEATURE_SETS",
    "N_EXTENDED",
    "USER_HISTORY",
    "EpisodeFeatures",
    "TraceContext",
    "has_extended",
]

#: feature set name -> what it is
FEATURE_SETS: dict[str, str] = {
    "paper": "the 12 columns of RLBackfilling (+ prediction): what the shipped agents use",
    "extended": "the paper's columns plus the 14 online columns of EXTENDED_COLUMNS",
    "extended-log": "the extended columns, user history seeded from the trace's accounting "
    "log (the jobs its recorded schedule shows completed before the window)",
}


def has_extended(features: str) -> bool:
    """Whether a feature set (a key of :data:`FEATURE_SETS`) has the extended columns."""
    return features != "paper"


#: the trace's clock is tabulated up to this long after its last submission
_CLOCK_MARGIN = 400 * DAY

#: column name -> description (the table of the module docstring), in column order
EXTENDED_COLUMNS: dict[str, str] = {
    "tod_sin": "(1 + sin(2 pi time-of-day / 1 day)) / 2, local time of now",
    "tod_cos": "(1 + cos(2 pi time-of-day / 1 day)) / 2, local time of now",
    "weekday": "((now - Monday 00:00) mod 1 week) / 1 week, local time",
    "load_hour": "r / (1 + r), r = requested proc-seconds submitted in the last hour / (m * 1 h)",
    "load_day": "r / (1 + r), r = requested proc-seconds submitted in the last day / (m * 1 day)",
    "queue_jobs": "min(log2(1 + waiting jobs) / 10, 1)",
    "queue_work": "B / (B + 1 day), B = sum over waiting jobs of procs * est / m",
    "shadow_free": "(extra + head procs) / m: processors free at the shadow time",
    "slack": "(1 + s / (|s| + 1 h)) / 2, s = shadow - now - est (> 0.5: ends by the shadow)",
    "extra_left": "(1 + (extra - procs if the job runs past the shadow else extra) / m) / 2",
    "size_rank": "rows with a smaller estimate / max(rows - 1, 1) (0 = shortest candidate)",
    "user_accuracy": "mean actual/request of the user's last 4 completed jobs (prior: all jobs)",
    "user_running": "min(log2(1 + the user's running jobs) / 10, 1)",
    "user_waiting": "min(log2(1 + the user's other waiting jobs) / 10, 1)",
}
N_EXTENDED = len(EXTENDED_COLUMNS)


class TraceContext:
    """Per-trace, read-only tables of the extended features (shared by vector twins).

    :param workload: the whole loaded trace (all splits)
    :param log: seed each episode's user history from the trace's accounting log
        (``features="extended-log"``); needs ``workload.recorded_wait``
    :raises ValueError: ``log`` for a workload without a recorded schedule
    """

    def __init__(self, workload: Workload, log: bool = False) -> None:
        n = len(workload)
        self.n_jobs = n
        area = workload.procs.astype(np.float64) * workload.request
        base, offsets, self.clock_reference = _clock_table(workload)
        self.clock_base = base
        #: one array (a single kernel argument): submit times (``n``), requested
        #: processor-seconds of the jobs before index ``i`` (``n + 1``), local clock
        #: offsets per UTC hour from ``clock_base``
        self.table = np.concatenate(
            (np.asarray(workload.submit, dtype=np.float64), [0.0], np.cumsum(area), offsets)
        )
        #: dense user ids (``-1``: unknown user)
        self.user, self.n_users = dense_ids(workload.user)
        self.log = bool(log)
        #: jobs of the trace without a recorded wait (left out of the log's history)
        self.log_unknown = 0
        if self.log:
            self._log_tables(workload)

    def _log_tables(self, workload: Workload) -> None:
        """The accounting log's completions, in the order of their recorded end: all of
        them (ends and the cumulative sum of ``actual / request``, for the population
        prior) and per known user (``log_ptr`` into ``log_user_end`` / ``log_user_ratio``)."""
        log = workload.recorded_completions()
        if log is None:
            raise ValueError(
                f"features='extended-log' needs the trace's recorded schedule (SWF field 3, "
                f"the wait time), and workload {workload.name!r} has none (generated "
                f"workloads have none, and SWF files whose waits are all -1); use "
                f"features='extended' (history from the episode only) or an SWF trace "
                f"with recorded waits"
            )
        idx, end, self.log_unknown = log
        ratio = np.clip(workload.runtime[idx] / workload.request[idx], 0.0, 1.0)
        self.log_end = np.ascontiguousarray(end)
        self.log_cum = np.concatenate(([0.0], np.cumsum(ratio)))
        users = self.user[idx]
        mine = users >= 0
        by_user = np.argsort(users[mine], kind="stable")  # keeps the end order per user
        self.log_user_end = np.ascontiguousarray(end[mine][by_user])
        self.log_user_ratio = np.ascontiguousarray(ratio[mine][by_user])
        counts = np.bincount(users[mine], minlength=self.n_users)
        self.log_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def _clock_table(workload: Workload) -> tuple[float, np.ndarray, str]:
    """The local clock of the trace: ``local(t) = t + offset[k]`` with
    ``k = clamp(floor((t - base) / 1 h))``, ``offset`` including ``UnixStartTime``.

    :return: ``base`` (trace seconds, on a whole UTC hour), the offsets per hour and the
        description of the reference (as :func:`~hpcgym.predictors.eloss.submit_clock`)
    """
    meta = workload.meta or {}
    unix0 = float(meta["UnixStartTime"]) if meta.get("UnixStartTime") is not None else 0.0
    if len(workload) == 0:
        return 0.0, np.zeros(1), "trace seconds (empty workload)"
    first = float(workload.submit[0]) + unix0
    base = np.floor(first / HOUR) * HOUR - unix0  # a whole UTC hour, in trace seconds
    span = float(workload.submit[-1]) - base + _CLOCK_MARGIN
    grid = base + HOUR * np.arange(int(np.ceil(span / HOUR)) + 1, dtype=np.float64)
    n = grid.shape[0]
    probe = Workload(
        name=workload.name,
        machine_size=1,
        job_id=np.zeros(n),
        submit=grid,
        runtime=np.ones(n),
        procs=np.ones(n),
        request=np.ones(n),
        user=np.zeros(n),
        group=np.zeros(n),
        executable=np.zeros(n),
        queue=np.zeros(n),
        meta=dict(meta),
    )
    clock, reference = submit_clock(probe, local_time=True)
    return float(base), np.ascontiguousarray(clock - grid), reference


class EpisodeFeatures:
    """The extended features' state of one episode: the per-user history, updated
    incrementally from the jobs that started and completed since the previous decision
    point (in the compiled builder, :func:`hpcgym.envs.observation._sync`).

    Completions are detected as ``start + runtime <= now``: the engine completes a job
    at exactly that time and handles every completion of a time before any decision at
    it, so this is the engine's completion log (tested against the engine's
    :class:`~hpcgym.sim.engine.EstimatorFeed`), and a running job's runtime only tells
    that it has not ended yet. (The engine's view exposes no completion log; the
    ``EstimatorFeed`` route costs ~5.7 us of Python per decision point with a new
    completion and start, about 60 % more than this whole feature set.)

    State in two arrays (few kernel arguments): ``ints`` = the window's dense user ids
    (``n``); per user: completed jobs, running jobs, waiting jobs (scratch); per job:
    phase (0 not started, 1 running, 2 completed); the running jobs (a list); a scratch
    list; the first job not started yet and the number of running jobs. ``floats`` = per
    user the last :data:`USER_HISTORY` ``actual / request`` (a ring), the population's
    sum and count, a scratch of ``K`` rows.

    :param ctx: the trace's tables
    :param sim: the episode's simulation (before its first ``advance``)
    :param start: index of the window's first job in the trace
    :param max_rows: ``K``, rows of the observation
    """

    def __init__(self, ctx: TraceContext, sim: Simulation, start: int, max_rows: int) -> None:
        n = len(sim.workload)
        u = max(ctx.n_users, 1)
        self.ctx: TraceContext | None = ctx
        self.sim = sim
        self.start = int(start)
        self.n = n
        self.n_users = u
        self.ints = np.zeros(4 * n + 3 * u + 2, dtype=np.int64)
        self.ints[:n] = ctx.user[start : start + n]
        self.floats = np.zeros(u * USER_HISTORY + 2 + int(max_rows), dtype=np.float64)
        self.runtime = sim.workload.runtime
        if ctx.log and n:
            self._seed_from_log(ctx, float(sim.workload.submit[0]))

    def _seed_from_log(self, ctx: TraceContext, t0: float) -> None:
        """User history and population prior from the jobs the accounting log shows
        completed by ``t0`` (``features="extended-log"``; module docstring)."""
        n, u, nh = self.n, self.n_users, USER_HISTORY
        count = self.ints[n : n + u]
        k = int(np.searchsorted(ctx.log_end, t0, side="right"))
        self.floats[u * nh] = ctx.log_cum[k]
        self.floats[u * nh + 1] = float(k)
        window_users = np.unique(self.ints[:n])
        for user in window_users[window_users >= 0].tolist():
            lo, hi = int(ctx.log_ptr[user]), int(ctx.log_ptr[user + 1])
            c = int(np.searchsorted(ctx.log_user_end[lo:hi], t0, side="right"))
            count[user] = c
            for q in range(max(c - nh, 0), c):
                self.floats[user * nh + q % nh] = ctx.log_user_ratio[lo + q]

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state["ctx"] = None  # the trace's tables: re-attached by the env on unpickling
        return state

    def kernel_args(self) -> tuple[Any, ...]:
        """The arguments of the compiled builder after the view's
        (:func:`hpcgym.envs.observation.build`): trace jobs submitted so far, the trace's
        tables, the state, the jobs' start times (the view's), the window's first trace
        index, the jobs' runtimes (read for started jobs only: ``start + runtime <= now``)
        and requests."""
        ctx = self.ctx
        assert ctx is not None
        view = self.sim.view
        return (
            self.start + view.submitted,
            ctx.table,
            ctx.n_jobs,
            ctx.clock_base,
            self.ints,
            self.floats,
            self.n,
            self.n_users,
            view.start,
            self.start,
            self.runtime,
            view.request,
        )
