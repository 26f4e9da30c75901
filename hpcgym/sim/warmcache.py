"""One replay of the accounting log per trace for many warm-started windows.

:class:`~hpcgym.sim.warmstart.LogWarmStart` with ``warm=log`` replays every job of the
trace before the window at each bind: about 50 microseconds a job and an estimator, so
0.9 s for a window in the middle of SDSC-SP2's train range and more on longer traces. A
search that plays ten candidates on 256 windows a generation, or an evaluation that plays
several methods on the same windows, replays the same log again and again. This module
replays it once per process, trace and estimator configuration, and hands each bind the
state it would have reached:

* a :class:`LogReplay` holds the events of the whole trace's recorded schedule (the ones
  :func:`~hpcgym.sim.warmstart.replay_log` builds, for every job) and a cursor that
  walks them with the estimator bound to the whole trace, leaving a checkpoint every
  ``checkpoint`` jobs;
* the state for the window at job ``s`` (first submission ``t0``) is the nearest
  checkpoint before ``t0``, advanced through the events before ``t0``, then the events at
  ``t0`` of the jobs before ``s``, flushed -- the same calls in the same order as the
  window's own replay (``replay_log``'s batching included), so the same state;
* that state is cut to the jobs before the window's end (every per-job array of the
  estimator sliced, its workload the window's joined past; its static lists stay whole
  and shared) and kept (the most recent windows', up to ``HPCGYM_WARM_CACHE_MB``, 2 GB
  by default, per replay); each bind gets a copy.

Only estimators that declare :attr:`~hpcgym.sim.estimators.Estimator.warm_static` take
part: the per-job tables their ``bind`` computes and never writes afterwards, which the
copies share. Declaring it also states that binding to a longer workload (the trace)
leaves the first rows of every per-job table as binding to its prefix would, and that
``bind`` and the replay draw nothing from the generator. ``tests/test_warmcache.py``
checks the states equal the window's own replay, estimator by estimator. Any other
estimator, ``warm=N``, a window that is not a plain cut of its trace, or
:func:`set_enabled` ``(False)`` (or ``HPCGYM_WARM_CACHE=0``) keeps the window's own replay.

A state is made from the last walk's cursor when it stopped between the nearest
checkpoint and the window, so windows bound in the order of their starts (as
:func:`~hpcgym.evaluation.play.play_windows` resets its envs) cost one walk of the log
between the first and the last.

Memory: a checkpoint holds the estimator bound to the whole trace; a kept state and each
window's copy hold the window's past (E-Loss and ``log-ridge``: 8 bytes a job for their
outputs, 0.5 MB a window on average over HPC2N's train range; 168 bytes a job with
``keep_features=true``, which also stores every job's features).
"""

from __future__ import annotations

import copy
import os
import pickle
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import numpy as np

from hpcgym.sim.estimators import Estimator, SystemView
from hpcgym.workload.core import COLUMNS, Workload

__all__ = ["LogCursor", "LogReplay", "clear", "enabled", "log_events", "replay_for", "set_enabled"]

#: jobs between two checkpoints of a replay (at least; a sixteenth of the trace if longer)
CHECKPOINT_JOBS = 2048
#: megabytes of window states a replay keeps (least recently used dropped first;
#: ``HPCGYM_WARM_CACHE_MB`` overrides it)
KEEP_MB = float(os.environ.get("HPCGYM_WARM_CACHE_MB", "2048"))

_ENABLED = os.environ.get("HPCGYM_WARM_CACHE", "1").strip().lower() not in ("0", "no", "false")
_REPLAYS: OrderedDict[tuple[int, bytes], LogReplay] = OrderedDict()
_MAX_REPLAYS = 8


def enabled() -> bool:
    """Whether warm starts share one replay per trace (default; ``HPCGYM_WARM_CACHE=0``
    turns it off)."""
    return _ENABLED


def set_enabled(value: bool) -> None:
    """Turn the shared replays on or off (off: each bind replays its own window's past)."""
    global _ENABLED
    _ENABLED = bool(value)
    if not _ENABLED:
        clear()


def clear() -> None:
    """Forget every replay and kept state of this process."""
    _REPLAYS.clear()


def fingerprint(estimator: Estimator) -> bytes | None:
    """The configuration of an unbound estimator as bytes (``None``: it does not pickle, or
    it does not declare :attr:`~hpcgym.sim.estimators.Estimator.warm_static`)."""
    if getattr(type(estimator), "warm_static", None) is None:
        return None
    try:
        return pickle.dumps((type(estimator), estimator.__dict__), protocol=4)
    except Exception:  # noqa: BLE001 - an unpicklable configuration is simply not shared
        return None


def replay_for(full: Workload, key: bytes, estimator: Estimator) -> LogReplay:
    """The process's replay of ``full``'s log for the configuration ``key`` (made from
    the unbound ``estimator`` on first use)."""
    k = (id(full), key)
    rep = _REPLAYS.get(k)
    if rep is None or rep.full is not full:
        rep = LogReplay(full, estimator)
        _REPLAYS[k] = rep
        while len(_REPLAYS) > _MAX_REPLAYS:
            _REPLAYS.popitem(last=False)
    else:
        _REPLAYS.move_to_end(k)
    return rep


def is_plain_cut(full: Workload, window: Workload) -> bool:
    """Whether ``window``'s jobs are ``full``'s jobs from ``window.offset`` on, column for
    column, on the same machine (so that the whole trace's per-job tables and recorded
    system are the window's)."""
    s, n = int(window.offset), len(window)
    if s < 0 or s + n > len(full) or window.machine_size != full.machine_size:
        return False
    return all(np.array_equal(getattr(window, c), getattr(full, c)[s : s + n]) for c in COLUMNS)


def log_events(
    workload: Workload, jobs: np.ndarray
) -> tuple[np.ndarray, list[float], list[float], list[int]]:
    """The recorded schedule of ``jobs`` (indices with a finite ``recorded_wait``) as
    events in the order the replay reports them: each job's submission (kind 1), start
    (2, at ``submit + wait``) and end (0, at ``start + runtime``; 3 for a job that ends
    when it starts, after its start), by time, then kind, then job.

    :return: the times as an array (for searching) and times, kinds and jobs as lists
    """
    wait = workload.recorded_wait
    assert wait is not None
    submit = np.asarray(workload.submit, dtype=np.float64)
    start = submit[jobs] + np.maximum(wait[jobs], 0.0)
    end = start + np.asarray(workload.runtime, dtype=np.float64)[jobs]
    kinds = np.concatenate(
        (np.ones(jobs.shape[0]), np.full(jobs.shape[0], 2.0), np.where(end > start, 0.0, 3.0))
    )
    times = np.concatenate((submit[jobs], start, end))
    who = np.concatenate((jobs, jobs, jobs))
    order = np.lexsort((who, kinds, times))
    t = times[order]
    return t, t.tolist(), kinds[order].tolist(), who[order].tolist()


class LogCursor:
    """An estimator told about the recorded schedule event by event, as the engine tells
    it about its own (:class:`~hpcgym.sim.engine.EstimatorFeed`): ends and starts since the
    previous submission are reported before it, ends first, and :meth:`flush` reports
    the rest. Holds the recorded system the submissions' views show.

    :param estimator: the estimator, bound to ``workload``
    :param workload: the jobs the events are about
    """

    def __init__(self, estimator: Estimator, workload: Workload) -> None:
        self.est = estimator
        self.pos = 0  # events walked (LogReplay's position in its events)
        self.running: dict[int, None] = {}  # insertion-ordered set of running jobs
        self.busy = 0
        self.rec_start = np.full(len(workload), np.nan)  # the starts that have happened
        self.fin: list[int] = []
        self.fin_t: list[float] = []
        self.st: list[int] = []
        self.st_t: list[float] = []
        self.procs = np.asarray(workload.procs, dtype=np.int64).tolist()
        self.machine = int(workload.machine_size)
        self.wants_starts = type(estimator).observe_started is not Estimator.observe_started

    def copy(self, memo: dict[int, Any]) -> LogCursor:
        """A copy with its own estimator (deep-copied with ``memo``) and system."""
        new = object.__new__(LogCursor)
        new.__dict__.update(self.__dict__)
        new.est = copy.deepcopy(self.est, memo)
        new.running = dict(self.running)
        new.rec_start = self.rec_start.copy()
        new.fin, new.fin_t = list(self.fin), list(self.fin_t)
        new.st, new.st_t = list(self.st), list(self.st_t)
        return new

    def flush(self) -> None:
        """Report the ends, then the starts, not reported yet."""
        est = self.est
        if self.fin:
            est.observe_finished(np.asarray(self.fin, dtype=np.int64), np.asarray(self.fin_t))
            self.fin.clear()
            self.fin_t.clear()
        if self.st and self.wants_starts:
            est.observe_started(np.asarray(self.st, dtype=np.int64), np.asarray(self.st_t))
        self.st.clear()
        self.st_t.clear()

    def event(self, t: float, kind: float, j: int) -> None:
        """One event of :func:`log_events`."""
        if kind == 1.0:
            self.flush()
            view = SystemView(
                now=t,
                running=np.fromiter(self.running, dtype=np.int64, count=len(self.running)),
                start=self.rec_start,
                free=max(self.machine - self.busy, 0),
                machine_size=self.machine,
            )
            self.est.predict(j, view)
        elif kind == 2.0:
            self.running[j] = None
            self.rec_start[j] = t
            self.busy += self.procs[j]
            self.st.append(j)
            self.st_t.append(t)
        else:
            self.running.pop(j, None)
            self.busy -= self.procs[j]
            self.fin.append(j)
            self.fin_t.append(t)


class LogReplay:
    """The accounting log of one trace replayed into one estimator configuration.

    :param full: the whole trace (with its recorded schedule, ``recorded_wait``)
    :param estimator: an unbound estimator of the configuration (copied, never bound)
    :param checkpoint: jobs between checkpoints (default :data:`CHECKPOINT_JOBS`, or a
        sixteenth of the trace if that is more)
    :param keep_mb: megabytes of window states kept (default :data:`KEEP_MB`)
    """

    def __init__(
        self,
        full: Workload,
        estimator: Estimator,
        checkpoint: int | None = None,
        keep_mb: float | None = None,
    ) -> None:
        wait = full.recorded_wait
        if wait is None:
            raise ValueError(f"workload {full.name!r} has no recorded schedule (SWF field 3)")
        self.full = full
        self.keep_bytes = (KEEP_MB if keep_mb is None else float(keep_mb)) * 2**20
        self.kept_bytes = 0
        n = len(full)
        self.size = n
        finite = np.isfinite(wait)
        #: jobs before each job with no recorded wait (``log_unknown`` of a window)
        self.unknown_before = np.concatenate(([0], np.cumsum(~finite)))
        self.times, self._times, self._kinds, self._who = log_events(full, np.flatnonzero(finite))
        est = copy.deepcopy(estimator)
        est.bind(full, np.random.default_rng(0))
        self.static = tuple(type(estimator).warm_static or ())
        self.per_job = per_job_arrays(estimator, full, est)
        every = max(int(checkpoint or CHECKPOINT_JOBS), n // 16 if checkpoint is None else 1)
        self.every = 3 * max(every, 1)  # events (three per job)
        self.checkpoints: list[LogCursor] = [LogCursor(est, full)]
        #: (start, rows) -> the window's state, its log_unknown and its size in bytes
        self.states: OrderedDict[tuple[int, int], tuple[Estimator, int, int]] = OrderedDict()
        self.replayed_events = 0  # events walked (for tests and benchmarks)
        self._walk: LogCursor | None = None  # the last walk's cursor (never flushed early)

    def _memo(self, est: Estimator) -> dict[int, Any]:
        memo: dict[int, Any] = {}
        for name in self.static:
            value = est.__dict__.get(name)
            if value is not None:
                memo[id(value)] = value
        return memo

    def _advance(self, cur: LogCursor, stop: int) -> None:
        """Walk ``cur`` through the events before ``stop``, leaving a checkpoint every
        :attr:`every` events past the last one."""
        times, kinds, who = self._times, self._kinds, self._who
        while cur.pos < stop:
            if cur.pos % self.every == 0 and cur.pos > self.checkpoints[-1].pos:
                self.checkpoints.append(cur.copy(self._memo(cur.est)))
            p = cur.pos
            cur.event(times[p], kinds[p], who[p])
            cur.pos = p + 1
            self.replayed_events += 1

    def _cursor_at(self, stop: int) -> LogCursor:
        """A fresh cursor stopped before event ``stop``: a copy of the last walk's cursor
        advanced to ``stop`` when that walk stopped at or before ``stop`` and after the
        nearest checkpoint (so windows asked for in the order of their starts cost one
        walk of the log), else of that checkpoint's."""
        best = max((c for c in self.checkpoints if c.pos <= stop), key=lambda c: c.pos)
        walk = self._walk
        if walk is None or not best.pos <= walk.pos <= stop:
            walk = best.copy(self._memo(best.est))
        self._advance(walk, stop)
        self._walk = walk
        return walk.copy(self._memo(walk.est))

    def window_state(self, start: int, joined: Workload) -> tuple[Estimator, int]:
        """The estimator's state after the log replay of the window at job ``start``
        (a copy, bound to ``joined``, the jobs before the window followed by the window's)
        and the number of jobs before it with no recorded wait."""
        key = (int(start), len(joined))  # windows of other lengths have other tables
        kept = self.states.get(key)
        if kept is None:
            kept = self._make_state(*key)
            self._keep(key, kept)
        else:
            self.states.move_to_end(key)
        est, unknown, _ = kept
        new = copy.deepcopy(est, self._memo(est))
        new.workload = joined
        return new, unknown

    def _keep(self, key: tuple[int, int], kept: tuple[Estimator, int, int]) -> None:
        self.states[key] = kept
        self.kept_bytes += kept[2]
        while len(self.states) > 1 and self.kept_bytes > self.keep_bytes:
            self.kept_bytes -= self.states.popitem(last=False)[1][2]

    def _make_state(self, start: int, rows: int) -> tuple[Estimator, int, int]:
        t0 = float(self.full.submit[start])
        stop = int(np.searchsorted(self.times, t0, side="left"))
        cur = self._cursor_at(stop)
        # the events at t0 of the jobs before the window, in the log's order
        p = stop
        times, kinds, who = self._times, self._kinds, self._who
        while p < len(times) and times[p] == t0:
            if who[p] < start:
                cur.event(times[p], kinds[p], who[p])
            p += 1
        cur.flush()
        est = _cut(cur.est, self.per_job, rows, self.static)
        size = sum(
            v.nbytes
            for k, v in est.__dict__.items()
            if isinstance(v, np.ndarray) and k not in self.static
        )
        return est, int(self.unknown_before[start]), int(size)

    def prepare(self, starts: Iterable[int], rows: Iterable[int]) -> None:
        """Make the states of several windows in one walk (in the order of their starts;
        those kept already cost nothing)."""
        for key in sorted(zip(starts, rows, strict=True)):
            if key not in self.states:
                self._keep(key, self._make_state(*key))


def per_job_arrays(estimator: Estimator, full: Workload, bound: Estimator) -> frozenset[str]:
    """The attributes of ``bound`` (``estimator`` bound to ``full``) that are per-job
    arrays: those whose first axis follows the workload's length. Found by binding a
    copy to ``full``'s first job as well, so that a fixed-size table that happens to
    have as many rows as the trace has jobs is never taken for one.

    :param estimator: the unbound estimator
    :param full: the whole trace
    :param bound: ``estimator`` bound to ``full``
    """
    n = len(full)
    probe = copy.deepcopy(estimator)
    probe.bind(full.window(0, 1), np.random.default_rng(0))
    out = set()
    for name, value in bound.__dict__.items():
        other = probe.__dict__.get(name)
        if (
            isinstance(value, np.ndarray)
            and value.ndim
            and value.shape[0] == n
            and isinstance(other, np.ndarray)
            and other.ndim
            and (n == 1 or other.shape[0] == 1)
        ):
            out.add(name)
    return frozenset(out)


def _cut(est: Estimator, per_job: frozenset[str], rows: int, static: tuple[str, ...]) -> Estimator:
    """``est`` (bound to the whole trace) with every per-job array (``per_job``:
    :func:`per_job_arrays`) cut to its first ``rows``: a view of it if it is one of the
    ``static`` tables, else a copy. The ``static`` lists stay whole, shared by every
    window's state (the window indexes only their first ``rows`` items)."""
    out = object.__new__(type(est))
    for name, value in est.__dict__.items():
        if name in per_job:
            value = value[:rows] if name in static else value[:rows].copy()
        out.__dict__[name] = value
    return out
