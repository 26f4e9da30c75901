"""Columnar in-memory workload: the one data structure every layer reads.

A :class:`Workload` holds one numpy array per job attribute (structure of arrays),
ordered by submit time (stable on file order). The simulator, the predictors and the
Gymnasium env index these arrays directly, millions of times, so there are no per-job
Python objects anywhere on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CleaningReport", "Workload", "COLUMNS"]

#: Job columns of a :class:`Workload` and their dtypes.
COLUMNS: dict[str, type] = {
    "job_id": np.int64,  # SWF field 1: original job number
    "submit": np.float64,  # field 2: submit time, trace seconds
    "runtime": np.float64,  # field 4: actual run time (> 0 after cleaning)
    "procs": np.int64,  # field 5 (allocated) or field 8 (requested); 1..machine_size
    "request": np.float64,  # field 9 (requested time) or runtime; >= runtime
    "user": np.int64,  # field 12
    "group": np.int64,  # field 13
    "executable": np.int64,  # field 14
    "queue": np.int64,  # field 15
}


@dataclass
class CleaningReport:
    """What the reader did to the raw records, rule by rule.

    ``dropped`` and ``patched`` map a rule name to a count; nothing is removed or
    changed without being counted here. ``counted`` notes kept jobs of a kind worth
    knowing about that were kept as they are (Slurm accounting: jobs that hit their time
    limit, failed jobs, array tasks ...); SWF files leave it empty.
    """

    records: int = 0  # job lines read
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    patched: dict[str, int] = field(default_factory=dict)
    skipped_malformed: int = 0  # only with lenient parsing
    header_lines: int = 0
    counted: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "kept": self.kept,
            "dropped": dict(self.dropped),
            "patched": dict(self.patched),
            "skipped_malformed": self.skipped_malformed,
            "header_lines": self.header_lines,
            "counted": dict(self.counted),
        }

    def lines(self) -> list[str]:
        """Human-readable report, one line per rule."""
        out = [f"records read: {self.records}", f"jobs kept: {self.kept}"]
        for k, v in self.dropped.items():
            out.append(f"dropped  {k}: {v}")
        for k, v in self.patched.items():
            out.append(f"patched  {k}: {v}")
        for k, v in self.counted.items():
            out.append(f"counted  {k}: {v}")
        if self.skipped_malformed:
            out.append(f"skipped malformed lines (lenient): {self.skipped_malformed}")
        return out


@dataclass
class Workload:
    """A cleaned, submit-ordered job list as numpy columns.

    :param name: short name (registry name, file stem or generator description)
    :param machine_size: number of identical processors ``m``
    :param job_id, submit, runtime, procs, request, user, group, executable, queue:
        one array per column, all of the same length (see :data:`COLUMNS`)
    :param report: the cleaning report of the reader (empty for generated workloads)
    :param source: file path or generator spec the workload came from
    :param meta: free-form header metadata (``UnixStartTime``, ``MaxJobs``...)
    :param offset: index of this workload's first job in the workload it was cut from
    :param recorded_wait: the wait time the trace's own system recorded for each job (SWF
        field 3, seconds; ``nan`` where the log has none), or ``None`` when the workload
        carries no such record (generated workloads). The simulator never reads it: it is
        the site's accounting log, from which the env's ``features="extended-log"``
        learns which jobs had completed before a window starts
        (:mod:`hpcgym.envs.features`).
    :param extra: further per-job columns that the simulator does not read, each an array
        aligned with the jobs (cut by :meth:`window` like the others). The Slurm accounting
        reader (:mod:`hpcgym.workload.sacct`) keeps ``"memory_mb"`` (requested memory of
        the whole job in MiB, ``nan`` unknown), ``"gpus"`` (GPUs of the job) and
        ``"status"`` (SWF status: 1 completed, 0 failed, 5 cancelled);
        :func:`~hpcgym.workload.swf.write_swf` writes the memory and the status into the
        SWF fields for them.
    :param parent: the whole workload this one was cut from by :meth:`window` (kept so
        that the jobs before a window can be found, :func:`hpcgym.workload.trace_past`);
        ``None`` for a whole workload. Not pickled: an unpickled window finds its past
        through :attr:`source`.
    """

    name: str
    machine_size: int
    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    procs: np.ndarray
    request: np.ndarray
    user: np.ndarray
    group: np.ndarray
    executable: np.ndarray
    queue: np.ndarray
    report: CleaningReport = field(default_factory=CleaningReport)
    source: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    #: index of this workload's first job in the workload it was cut from (0 if whole)
    offset: int = 0
    recorded_wait: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    parent: Workload | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.submit)
        for col, dt in COLUMNS.items():
            arr: np.ndarray = np.ascontiguousarray(getattr(self, col), dtype=dt)
            if arr.shape != (n,):
                raise ValueError(f"column {col!r} has shape {arr.shape}, expected ({n},)")
            setattr(self, col, arr)
        if self.recorded_wait is not None:
            rw = np.ascontiguousarray(self.recorded_wait, dtype=np.float64)
            if rw.shape != (n,):
                raise ValueError(f"recorded_wait has shape {rw.shape}, expected ({n},)")
            self.recorded_wait = rw
        extra = {k: np.ascontiguousarray(v) for k, v in self.extra.items()}
        for key, arr in extra.items():
            if arr.shape != (n,):
                raise ValueError(f"extra column {key!r} has shape {arr.shape}, expected ({n},)")
        self.extra = extra
        if self.machine_size <= 0:
            raise ValueError(f"machine_size must be positive, got {self.machine_size}")

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["parent"] = None  # the whole trace: never shipped along with a window
        return state

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return int(self.submit.shape[0])

    @property
    def n_jobs(self) -> int:
        return len(self)

    def column(self, name: str) -> np.ndarray:
        if name not in COLUMNS:
            raise KeyError(f"unknown column {name!r}; valid: {', '.join(COLUMNS)}")
        return getattr(self, name)

    def window(self, start: int, length: int | None = None) -> Workload:
        """Jobs ``start .. start+length-1`` (views, no copy).

        ``start`` is the index in this cleaned, submit-ordered job list.
        """
        n = len(self)
        if length is None:
            length = n - start
        if start < 0 or length <= 0 or start + length > n:
            raise IndexError(
                f"window start={start} length={length} is outside the workload "
                f"{self.name!r} of {n} jobs (valid starts 0..{n - 1}, start+length <= {n})"
            )
        sl = slice(start, start + length)
        return Workload(
            name=self.name,
            machine_size=self.machine_size,
            **{c: getattr(self, c)[sl] for c in COLUMNS},
            report=self.report,
            source=self.source,
            meta=self.meta,
            offset=self.offset + start,
            recorded_wait=None if self.recorded_wait is None else self.recorded_wait[sl],
            extra={k: v[sl] for k, v in self.extra.items()},
            parent=self.parent if self.parent is not None else self if not self.offset else None,
        )

    def with_machine_size(self, machine_size: int) -> Workload:
        """Same jobs on another machine size (jobs larger than it are an error)."""
        if len(self) and int(self.procs.max()) > machine_size:
            raise ValueError(
                f"workload {self.name!r} has jobs of {int(self.procs.max())} processors, "
                f"more than machine_size={machine_size}"
            )
        return Workload(
            name=self.name,
            machine_size=machine_size,
            **{c: getattr(self, c) for c in COLUMNS},
            report=self.report,
            source=self.source,
            meta=self.meta,
            offset=self.offset,
            recorded_wait=self.recorded_wait,
            extra=dict(self.extra),
            parent=self.parent,
        )

    # ------------------------------------------------------------ statistics
    def recorded_completions(self) -> tuple[np.ndarray, np.ndarray, int] | None:
        """The jobs' completions in the trace's own recorded schedule (submit + recorded
        wait + run time), in the order of their end (ties by trace index): ``(index, end,
        unknown)``, ``unknown`` counting the jobs without a recorded wait (left out);
        ``None`` when the workload has no recorded wait at all (a generated workload).
        What a site's accounting log shows finished, and when."""
        wait = self.recorded_wait
        if wait is None or not np.isfinite(wait).any():
            return None
        known = np.isfinite(wait)
        idx = np.flatnonzero(known)
        end = np.asarray(self.submit, dtype=np.float64)[idx] + wait[idx]
        end = end + np.asarray(self.runtime, dtype=np.float64)[idx]
        order = np.lexsort((idx, end))  # by recorded end, ties by trace index
        return idx[order], end[order], int(np.count_nonzero(~known))

    @property
    def span(self) -> float:
        """Seconds between the first and the last submission."""
        if len(self) == 0:
            return 0.0
        return float(self.submit[-1] - self.submit[0])

    @property
    def offered_load(self) -> float:
        """Total work (runtime x procs) over the machine's capacity during the submit span."""
        if len(self) < 2 or self.span <= 0:
            return float("nan")
        work = float(np.dot(self.runtime, self.procs.astype(np.float64)))
        return work / (self.machine_size * self.span)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "machine_size": int(self.machine_size),
            "jobs": len(self),
            "span_seconds": self.span,
            "offered_load": self.offered_load,
            "mean_runtime": float(self.runtime.mean()) if len(self) else float("nan"),
            "median_runtime": float(np.median(self.runtime)) if len(self) else float("nan"),
            "mean_procs": float(self.procs.mean()) if len(self) else float("nan"),
            "dropped": dict(self.report.dropped),
            "patched": dict(self.report.patched),
        }
