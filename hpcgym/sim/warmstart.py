"""Warm-starting an online estimator from the trace's accounting log.

An online predictor (E-Loss, AVE2, the ridge predictors, Tang's adjusting...) learns from
the jobs that finish. Played on a window cut from a trace, it starts with no history at
all, unlike the same predictor at a site, which has been learning since the system went
into service. ``bench/burn_in.py`` measures what that costs: on SDSC-SP2, ELOSS's ratio
to EASY++ falls from 0.86 with no burn-in to 0.63 after 16,384 simulated jobs.

The SWF trace records how its own system ran every job (field 3, the wait time,
:attr:`~hpcgym.workload.core.Workload.recorded_wait`), so the history a site's
predictor had learned by the window's first submission ``t0`` can be replayed without
simulating anything: :func:`replay_log` feeds the estimator the jobs before the window
in the order the site's scheduler would have told it about them,

* each job's **submission** (``predict``) at its submit time, with a
  :class:`~hpcgym.sim.estimators.SystemView` of the *recorded* system: the jobs whose
  recorded start is before that instant and whose recorded end is after it are running
  (with their recorded starts), the free processors are what they leave;
* its **start** (``observe_started``) at ``submit + wait`` and its **end**
  (``observe_finished``, in the order of the ends) at ``submit + wait + runtime``, for
  the ends at or before ``t0`` -- a job still running at ``t0`` is never reported, as
  its run time is not known then;

with the estimator protocol of the engine (:class:`~hpcgym.sim.engine.EstimatorFeed`):
ends and starts since the previous submission are reported before it, ends first. At one
instant ends come before submissions, and a job's own submission before its start and
end. Jobs the log has no wait for (``nan``) are left out and counted
(:attr:`LogWarmStart.log_unknown`).

:class:`LogWarmStart` wraps any online estimator: at :meth:`~LogWarmStart.bind` it
finds the jobs before the window in the trace it was cut from
(:func:`~hpcgym.workload.traces.window_trace`), binds the wrapped estimator to those
jobs followed by the window's, replays the log, and then
passes the engine's calls on with the window's job indices shifted. Spelled
``warm=log`` (every job before the window) or ``warm=N`` (the last ``N``) as an option
of any online estimator (``make_estimator("eloss:warm=log")``, the env's
``estimator="eloss:warm=log"`` or ``feature_predictor="log-ridge:lam=10,warm=log"``) or
as a scheduler key (``ELOSS,warm=log``, ``SJF+EASY++,warm=log``). On a whole trace or a
generated workload there is nothing before the window and it changes nothing.

With ``warm=log``, E-Loss and ``log-ridge`` bind from a replay of the whole trace shared
by the process (:mod:`hpcgym.sim.warmcache`), to the same state, many times faster when
the same trace's windows are bound again and again (searches, evaluations).

What it does not do: the window itself is still simulated from an empty machine (the
jobs the log shows running at ``t0`` are not in it), and only the estimator is warmed
(the engine's corrections keep no history).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from hpcgym.sim import warmcache
from hpcgym.sim.estimators import Estimator, SystemView
from hpcgym.workload.core import COLUMNS, Workload

__all__ = ["WARM_CHOICES", "LogWarmStart", "parse_warm", "replay_log", "split_warm", "warm_label"]

#: what ``warm=`` accepts (for error messages)
WARM_CHOICES = "'log' (every job of the trace before the window), a number of jobs N > 0 "
WARM_CHOICES += "(the last N), or 'none'/0 (cold: no warm start)"

_ALL = -1  # parse_warm's value for "log": every job before the window


def parse_warm(value: Any) -> int | None:
    """``warm=`` as a number of jobs: ``None`` for a cold start, ``-1`` for the whole log.

    :param value: ``"log"``/``"all"``, a number of jobs, or ``None``/``"none"``/``0``/``False``
    :raises ValueError: for anything else, with the valid choices
    """
    if value is None or value is False:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("log", "all"):
            return _ALL
        if text in ("none", "cold", "no", "false", "0", ""):
            return None
        try:
            value = int(text)
        except ValueError:
            msg = f"warm={value!r} is not valid; valid choices: {WARM_CHOICES}"
            raise ValueError(msg) from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"warm={value!r} is not valid; valid choices: {WARM_CHOICES}")
    return None if value == 0 else int(value)


def warm_label(value: Any) -> str | None:
    """``warm=`` spelled as the records spell it: ``"log"``, the number of jobs as text,
    or ``None`` for a cold start (:func:`parse_warm` checks the value)."""
    jobs = parse_warm(value)
    return None if jobs is None else ("log" if jobs < 0 else str(jobs))


def split_warm(spec: str) -> tuple[str, str | None]:
    """An estimator spec without its ``warm`` option, and that option (:func:`warm_label`):
    ``split_warm("log-ridge:lam=10,warm=log") == ("log-ridge:lam=10", "log")``."""
    name, _, opts = str(spec).partition(":")
    kept: list[str] = []
    warm = None
    for part in (p.strip() for p in opts.split(",")):
        key, eq, value = part.partition("=")
        if eq and key.strip().lower() == "warm":
            warm = warm_label(value)
        elif part:
            kept.append(part)
    return name + (":" + ",".join(kept) if kept else ""), warm


def _joined(full: Workload, lo: int, window: Workload, plain: bool) -> Workload:
    """The trace's jobs ``lo`` to the window's first followed by the window's, on the
    window's machine, with the recorded waits of the past only (the window's are not known
    at its start). Its columns are views of the trace's when the window is a ``plain``
    cut of it (:func:`~hpcgym.sim.warmcache.is_plain_cut`), else concatenations."""
    off, n = int(window.offset), len(window)
    if plain:
        cols = {c: getattr(full, c)[lo : off + n] for c in COLUMNS}
    else:
        cols = {c: np.concatenate((getattr(full, c)[lo:off], getattr(window, c))) for c in COLUMNS}
    assert full.recorded_wait is not None
    return Workload(
        name=window.name,
        machine_size=window.machine_size,
        **cols,
        report=window.report,
        source=window.source,
        meta=window.meta,
        offset=lo,
        recorded_wait=np.concatenate((full.recorded_wait[lo:off], np.full(n, np.nan))),
    )


def replay_log(estimator: Estimator, workload: Workload, jobs: int, t0: float) -> int:
    """Tell ``estimator`` (bound to ``workload``) about its first ``jobs`` jobs as the
    trace's recorded schedule shows them until ``t0`` (the module docstring says how).

    :param estimator: an online estimator, already bound to ``workload``
    :param workload: the jobs; its first ``jobs`` need ``recorded_wait``
    :param jobs: how many of the first jobs to replay (all submitted at or before ``t0``)
    :param t0: replay until this instant (the window's first submission)
    :return: how many jobs were left out for want of a recorded wait
    """
    wait = workload.recorded_wait
    if jobs <= 0:
        return 0
    if wait is None:
        raise ValueError(f"workload {workload.name!r} has no recorded schedule (SWF field 3)")
    idx = np.flatnonzero(np.isfinite(wait[:jobs]))
    _, times, kinds, who = warmcache.log_events(workload, idx)
    cur = warmcache.LogCursor(estimator, workload)
    for t, kind, j in zip(times, kinds, who, strict=True):
        if t > t0:  # the starts and ends after t0 are not known at t0
            break
        cur.event(t, kind, j)
    cur.flush()
    return jobs - int(idx.shape[0])


class LogWarmStart(Estimator):
    """An online estimator warm-started from the trace's accounting log at each bind.

    :param estimator: the online estimator to warm (its state is replaced at each bind)
    :param warm: ``"log"``, a number of jobs, ... (:func:`parse_warm`; not cold)

    After :meth:`bind`: :attr:`replayed` jobs were replayed (submitted before the
    window), :attr:`log_unknown` of them had no recorded wait and were left out.
    """

    online = True

    def __init__(self, estimator: Estimator, warm: Any = "log") -> None:
        jobs = parse_warm(warm)
        if jobs is None:
            raise ValueError(f"LogWarmStart needs a warm start, got warm={warm!r}")
        if not estimator.online:
            raise ValueError(
                f"estimator {estimator.name!r} is static (it learns nothing from finished "
                f"jobs), so warm={warm!r} would change nothing; warm starts apply to the "
                f"online estimators (eloss, ave2, tang-*, log-ridge)"
            )
        if estimator.no_warm_start:
            raise ValueError(
                f"estimator {estimator.name!r} cannot be warm-started (warm={warm!r}): "
                f"{estimator.no_warm_start}; use it cold"
            )
        self.inner = estimator
        self.jobs = None if jobs == _ALL else jobs
        label = "log" if self.jobs is None else str(self.jobs)
        self.name = f"{estimator.name}+warm={label}"
        self.running_estimate = estimator.running_estimate
        self.replayed = 0
        self.log_unknown = 0
        self._shift = 0
        # the configuration, for the replay shared by the windows (hpcgym.sim.warmcache)
        self._key = warmcache.fingerprint(estimator) if self.jobs is None else None
        self._proto = copy.deepcopy(estimator) if self._key is not None else None

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        from hpcgym.workload.traces import window_trace

        full = window_trace(workload) if len(workload) else None
        off = int(workload.offset)
        lo = 0 if self.jobs is None else max(0, off - self.jobs)
        if full is None or off <= lo:  # nothing before the window: the cold estimator
            self._shift = 0
            self.replayed = self.log_unknown = 0
            self.inner.bind(workload, rng)
            return
        wait = full.recorded_wait
        if wait is None or not np.isfinite(wait[lo:off]).any():
            raise ValueError(
                f"warm start of {self.inner.name!r}: the trace {workload.source or workload.name!r}"
                f" has no recorded schedule before the window (SWF field 3, the wait time, is "
                f"-1 throughout; generated traces such as Lublin's have none); use the cold "
                f"estimator, or a burn-in (bench/burn_in.py)"
            )
        plain = warmcache.is_plain_cut(full, workload)
        joined = _joined(full, lo, workload, plain)
        h = off - lo
        if plain and self._proto is not None and self._key is not None and warmcache.enabled():
            # the state from the process's replay of the whole trace (hpcgym.sim.warmcache)
            replay = warmcache.replay_for(full, self._key, self._proto)
            state, self.log_unknown = replay.window_state(off, joined)
            state.rng = rng
            self.inner.__dict__.clear()
            self.inner.__dict__.update(state.__dict__)
        else:
            self.inner.bind(joined, rng)
            self.log_unknown = replay_log(self.inner, joined, h, float(workload.submit[0]))
        self._shift = self.replayed = h
        self._start = np.full(len(joined), np.nan)
        self._src: SystemView | None = None  # the engine's view last translated
        self._view: SystemView | None = None

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        self.inner.observe_finished(np.asarray(jobs, dtype=np.int64) + self._shift, end_times)

    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        self.inner.observe_started(np.asarray(jobs, dtype=np.int64) + self._shift, start_times)

    def predict(self, job: int, view: SystemView) -> float:
        h = self._shift
        if not h:
            return self.inner.predict(job, view)
        if view is not self._src or self._view is None:
            self._start[h:] = view.start
            self._view = SystemView(
                now=view.now,
                running=np.asarray(view.running, dtype=np.int64) + h,
                start=self._start,
                free=view.free,
                machine_size=view.machine_size,
            )
            self._src = view
        return self.inner.predict(job + h, self._view)

    def __deepcopy__(self, memo: dict[int, Any]) -> LogWarmStart:
        # the joined workload is immutable: shared by the copies (engine snapshots)
        joined = self.inner.__dict__.get("workload")
        if joined is not None:
            memo.setdefault(id(joined), joined)
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = copy.deepcopy(value, memo)
        return new

    def __getattr__(self, name: str) -> Any:
        """The wrapped estimator's attributes (``trained``, ``edges``...); a per-job table
        of the joined workload (an array or list with a row per past and window job, e.g.
        E-Loss's ``predictions``) comes back with the window's rows
        only, so that it is indexed as the engine indexes jobs."""
        if name == "inner":
            raise AttributeError(name)
        value = getattr(self.inner, name)
        h = self.__dict__.get("_shift", 0)
        if h:
            rows = h + len(self.__dict__["workload"])
            if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == rows:
                return value[h:]
            if isinstance(value, list) and len(value) == rows:
                return value[h:]
        return value
