"""Slurm accounting as a workload: ``sacct --parsable2`` exports and jobcomp text logs.

Two inputs (plain or gzip-compressed, told apart by their content, :func:`detect_format`):

* ``sacct``: the output of ``sacct --parsable2`` (``-P``; ``--parsable``'s trailing ``|``
  is accepted too) with its header line; run :data:`SACCT_COMMAND` at a site. Required
  columns: :data:`SACCT_REQUIRED` and one of ``NCPUS``/``AllocCPUS``/``ReqCPUS``; the
  others of :data:`SACCT_FIELDS` are used when present.
* ``jobcomp``: the log of ``JobCompType=jobcomp/filetxt``, one line per finished job:
  ``JobId=.. UserId=name(uid) GroupId=name(gid) Name=.. JobState=.. Partition=..
  TimeLimit=<minutes>|UNLIMITED StartTime=.. EndTime=.. NodeList=.. NodeCnt=.. ProcCnt=..
  WorkDir=.. ReservationName=.. Tres=.. Account=.. QOS=.. WcKey=.. Cluster=.. SubmitTime=..
  EligibleTime=.. [ArrayJobId=.. ArrayTaskId=..] [HetJobId=.. HetJobOffset=..]
  DerivedExitCode=.. ExitCode=..`` (Slurm 22.05; older logs lack the fields after
  ``WorkDir`` and are read too, the submit time then being the start time).

Slurm prints local times without an offset (``2026-03-01T14:05:09``): ``tz`` says which
zone they are in (default ``"UTC"``; an IANA name such as ``"Europe/Berlin"``, a fixed
offset ``"+02:00"``, or ``"local"``: this machine's zone). A local time that a daylight-
saving change makes ambiguous is read as its first occurrence.

The records are cleaned by the rules below, each counted in the
:class:`~hpcgym.workload.core.CleaningReport` under its name (``records == kept +
sum(dropped)``; every line read is a record, steps included). Dropped, in this order:

1. :data:`DROP_STEP`: job steps (``123.batch``, ``123.extern``, ``123.0``): folded into
   their job, whose own line carries its allocation and times;
2. :data:`DROP_REQUEUED`: a job id seen again (``sacct --duplicates``, or a requeued
   job's completion logged twice): the last line in the file is the job's final run, the
   earlier runs (state ``REQUEUED`` ...) are dropped;
3. :data:`DROP_UNFINISHED`: pending, running, suspended or requeued at the export (no end);
4. :data:`DROP_NEVER_STARTED`: no start time (cancelled while pending, pending array
   ranges ``123_[5-9]``);
5. ``"runtime <= 0"``: started and ended in the same second;
6. ``"procs <= 0"``;
7. :data:`DROP_NO_LIMIT`: no time limit (``UNLIMITED``, ``Partition_Limit``, or a year
   or more: Slurm 22.05 records a job without ``--time`` in a partition of
   ``MaxTime=UNLIMITED`` as ``365-00:00:00``) and ``unlimited="drop"``.

Patched (kept jobs only): ``procs`` from ``ReqCPUS`` when ``NCPUS`` is 0; the request
(time limit) of a job without one from ``partition_limits`` (the partition's limit) or,
by default (``unlimited="runtime"``, as the SWF reader does for an unknown request),
from its run time; a request below the run time raised to it (jobs that ran over their
limit by Slurm's ``OverTimeLimit``/``KillWait``); the submit time from the start time
where a jobcomp log has none; ``procs`` clipped to the machine size; submit order.

Counted (:attr:`~hpcgym.workload.core.CleaningReport.counted`, kept as they are): jobs
that hit their limit (``TIMEOUT``: the run time is the elapsed time), ``FAILED``,
``NODE_FAIL``, ``OUT_OF_MEMORY``, ``CANCELLED`` after starting and every other end
state but ``COMPLETED``; array tasks; jobs whose final run followed a requeue; jobs with
memory or GPUs; jobs eligible later than submitted (``--begin``, dependencies).

Columns: ``job_id`` is ``JobIDRaw`` (jobcomp ``JobId``: unique, array tasks included);
``runtime`` is ``Elapsed`` (else end - start); ``procs`` is ``NCPUS``; ``request`` the
time limit (:func:`parse_duration`: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``,
``D-HH:MM``, ``D-HH:MM:SS``; jobcomp: minutes); ``user``, ``group`` (the account),
``queue`` (the partition) and ``executable`` (the job name, when exported) are integer
ids numbered 1, 2, ... in order of first appearance (``-1``: empty). User and account
names are not kept (as the Parallel Workloads Archive anonymises); partition names are
kept in ``meta["Partitions"]``. ``recorded_wait`` is start - arrival (Slurm's own
schedule). ``extra`` holds ``memory_mb`` (requested memory of the whole job, MiB, from
the ``mem`` TRES, else ``ReqMem`` with its old ``c``/``n`` per-CPU/per-node suffix),
``gpus`` (``gres/gpu`` of ``AllocTRES``, else ``ReqTRES``/``Tres``) and ``status``
(SWF: 1 completed, 5 cancelled, 0 otherwise).

Accounting has no machine size: pass ``machine_size``; otherwise it is the peak number of
CPUs the kept jobs held at once in the recorded schedule (a lower bound of the cluster,
said in ``meta["MachineSizeSource"]``).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.workload.core import CleaningReport, Workload
from hpcgym.workload.sacct_records import (
    SACCT_COMMAND,
    SACCT_FIELDS,
    SACCT_REQUIRED,
    AccountingFormatError,
    AccountingLines,
    AccountingRecord,
    accounting_records,
    read_jobcomp_lines,
    read_sacct_lines,
)
from hpcgym.workload.slurm_text import (
    parse_duration,
    parse_memory_mb,
    time_parser,
)
from hpcgym.workload.swf import _read_bytes, read_swf

__all__ = [
    "AccountingFormatError",
    "AccountingRecord",
    "FORMATS",
    "SACCT_FIELDS",
    "SACCT_REQUIRED",
    "SACCT_COMMAND",
    "DROP_RULES",
    "PATCH_RULES",
    "accounting_records",
    "detect_format",
    "parse_duration",
    "parse_memory_mb",
    "read_accounting",
    "read_trace_file",
]

#: Input formats (``"swf"``: the Standard Workload Format, :func:`~hpcgym.workload.read_swf`).
FORMATS: tuple[str, ...] = ("swf", "sacct", "jobcomp")
DROP_STEP = "job steps (folded into their job)"
DROP_REQUEUED = "requeued (earlier runs of a job)"
DROP_UNFINISHED = "not finished at the export (pending, running)"
DROP_NEVER_STARTED = "never started (cancelled before it started)"
DROP_NO_LIMIT = "no time limit (UNLIMITED, Partition_Limit, 365 days)"
#: Drop rules, in the order they are applied (report keys).
DROP_RULES: tuple[str, ...] = (
    DROP_STEP, DROP_REQUEUED, DROP_UNFINISHED, DROP_NEVER_STARTED,
    "runtime <= 0", "procs <= 0", DROP_NO_LIMIT,
)  # fmt: skip
PATCH_PARTITION = "request from partition_limits (no time limit)"
PATCH_RUNTIME = "request from runtime (no time limit)"
#: Patch rules (report keys).
PATCH_RULES: tuple[str, ...] = (
    "procs from requested", PATCH_PARTITION, PATCH_RUNTIME, "request raised to runtime",
    "submit from start (no submit time)", "procs clipped to machine size",
    "out of submit order",
)  # fmt: skip
UNLIMITED_POLICIES: tuple[str, ...] = ("runtime", "drop")
ARRIVALS: tuple[str, ...] = ("submit", "eligible")

_UNFINISHED = {"PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "RESIZING", "REQUEUE_HOLD",
               "REQUEUE_FED", "REVOKED", "STOPPED", "CONFIGURING", "COMPLETING"}  # fmt: skip
_EXTENSIONS = ("sacct", "jobcomp", "txt", "log", "psv", "csv")
_SWF_STATUS = {"COMPLETED": 1, "CANCELLED": 5}


# ------------------------------------------------------------------ cleaning
def _ids(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Integer ids 1, 2, ... by first appearance (``-1``: empty) and the names in id order."""
    table: dict[str, int] = {}
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if not v:
            out[i] = -1
            continue
        out[i] = table.setdefault(v, len(table) + 1)
    return out, list(table)


def _peak_cpus(start: np.ndarray, end: np.ndarray, procs: np.ndarray) -> int:
    """Most CPUs held at once in the recorded schedule (an end frees before a start)."""
    times = np.concatenate([end, start])
    delta = np.concatenate([-procs, procs])
    order = np.lexsort((delta, times))  # at equal times the ends (negative) first
    return int(np.cumsum(delta[order]).max(initial=0))


def _clean(
    recs: list[AccountingRecord],
    steps: int,
    *,
    machine_size: int | None,
    partition_limits: Mapping[str, float],
    unlimited: str,
    arrival: str,
) -> tuple[dict[str, Any], CleaningReport, int, float, list[str]]:
    """The cleaning rules of the module docstring."""
    rep = CleaningReport(records=len(recs) + steps)
    dropped = dict.fromkeys(DROP_RULES, 0)
    dropped[DROP_STEP] = steps
    patched = dict.fromkeys(PATCH_RULES, 0)
    counted: dict[str, int] = {}

    def count(key: str) -> None:
        counted[key] = counted.get(key, 0) + 1

    last: dict[int, int] = {}  # job id -> index of its last job line
    runs: dict[int, int] = {}
    for i, r in enumerate(recs):
        last[r.job] = i
        runs[r.job] = runs.get(r.job, 0) + 1
    keep: list[
        tuple[AccountingRecord, float, float, float, int]
    ] = []  # rec, arrival, runtime, request, procs
    for i, r in enumerate(recs):
        if last[r.job] != i:
            dropped[DROP_REQUEUED] += 1
            continue
        if r.end is None or r.state in _UNFINISHED:
            dropped[DROP_UNFINISHED] += 1
            continue
        if r.start is None or r.start > r.end:
            dropped[DROP_NEVER_STARTED] += 1
            continue
        run_s = r.elapsed if r.elapsed is not None else r.end - r.start
        if not run_s > 0:
            dropped["runtime <= 0"] += 1
            continue
        cpus = r.ncpus if r.ncpus > 0 else r.reqcpus
        if cpus <= 0:
            dropped["procs <= 0"] += 1
            continue
        request = r.limit
        if request is None:
            part = partition_limits.get(r.partition, partition_limits.get("*"))
            if part is not None:
                request = float(part)
                patched[PATCH_PARTITION] += 1
            elif unlimited == "drop":
                dropped[DROP_NO_LIMIT] += 1
                continue
            else:
                request = run_s
                patched[PATCH_RUNTIME] += 1
        if r.ncpus <= 0:
            patched["procs from requested"] += 1
        if request < run_s:
            patched["request raised to runtime"] += 1
            request = run_s
        submit = r.submit
        if submit is None:
            submit = r.start
            patched["submit from start (no submit time)"] += 1
        if r.eligible is not None and r.eligible > submit:
            count("eligible later than submitted (--begin, dependency, hold)")
            if arrival == "eligible":
                submit = r.eligible
        if r.state != "COMPLETED":
            key = "TIMEOUT (hit its time limit; run time = elapsed)" if r.state == "TIMEOUT" else (
                "CANCELLED after it started" if r.state == "CANCELLED" else r.state
            )  # fmt: skip
            count(key)
        if r.array:
            count("array tasks")
        if runs[r.job] > 1:
            count("requeued jobs (final run kept)")
        if np.isfinite(r.memory_mb):
            count("with requested memory")
        if r.gpus > 0:
            count("with GPUs")
        keep.append((r, submit, run_s, request, cpus))

    n = len(keep)
    rs = [k[0] for k in keep]
    arrive = np.array([k[1] for k in keep], dtype=np.float64)
    order = np.argsort(arrive, kind="stable")
    if n > 1:
        patched["out of submit order"] = int(
            np.count_nonzero(arrive[1:] < np.maximum.accumulate(arrive)[:-1])
        )
    rs = [rs[i] for i in order]
    keep = [keep[i] for i in order]
    arrive = arrive[order]
    start = np.array([r.start for r in rs], dtype=np.float64)
    runtime = np.array([k[2] for k in keep], dtype=np.float64)
    procs = np.array([k[4] for k in keep], dtype=np.int64)
    if machine_size is None:
        machine_size = max(_peak_cpus(start, start + runtime, procs), 1)
    big = procs > machine_size
    patched["procs clipped to machine size"] = int(np.count_nonzero(big))
    t0 = float(arrive[0]) if n else 0.0
    user, _ = _ids([r.user for r in rs])
    account, _ = _ids([r.account for r in rs])
    queue, partitions = _ids([r.partition for r in rs])
    exe, _ = _ids([r.name for r in rs])
    cols: dict[str, Any] = {
        "job_id": np.array([r.job for r in rs], dtype=np.int64),
        "submit": arrive - t0,
        "runtime": runtime,
        "procs": np.minimum(procs, machine_size),
        "request": np.array([k[3] for k in keep], dtype=np.float64),
        "user": user,
        "group": account,
        "executable": exe,
        "queue": queue,
        "recorded_wait": start - arrive,
        "extra": {
            "memory_mb": np.array([r.memory_mb for r in rs], dtype=np.float64),
            "gpus": np.array([r.gpus for r in rs], dtype=np.int64),
            "status": np.array([_SWF_STATUS.get(r.state, 0) for r in rs], dtype=np.int64),
        },
    }
    rep.kept = n
    rep.dropped, rep.patched, rep.counted = dropped, patched, counted
    return cols, rep, int(machine_size), t0, partitions


# ------------------------------------------------------------------ API
def _sniff(data: bytes) -> str:
    """``"sacct"``, ``"jobcomp"`` or ``"swf"`` from the first non-blank line (``|``: sacct)."""
    for raw in data[:65536].split(b"\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(b";"):  # an SWF header comment
            return "swf"
        if line.startswith(b"JobId="):
            return "jobcomp"
        if b"|" in line:  # never in SWF
            return "sacct"
        return "swf"
    return "swf"


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of a workload file, from its first non-blank line: ``"swf"`` (a ``;``
    comment), ``"sacct"`` (``|``-separated fields), ``"jobcomp"`` (``JobId=...``), else
    ``"swf"``. Gzip-compressed
    files are looked into.

    :param path: the file
    """
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(65536)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(p, "rb") as gz:
                head = gz.read(65536)
        except (OSError, EOFError, zlib.error):
            return "swf"  # the SWF reader says what is wrong with the file
    return _sniff(head)


def _limits(partition_limits: Mapping[str, float | str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for part, value in (partition_limits or {}).items():
        sec = parse_duration(value) if isinstance(value, str) else float(value)
        if not sec > 0:
            raise ValueError(
                f"partition_limits[{part!r}] must be a positive duration, got {value!r}"
            )
        out[str(part)] = sec
    return out


def read_accounting(
    path: str | os.PathLike[str],
    format: str | None = None,
    machine_size: int | None = None,
    lenient: bool = False,
    *,
    tz: str = "UTC",
    partition_limits: Mapping[str, float | str] | None = None,
    unlimited: str = "runtime",
    arrival: str = "submit",
    name: str | None = None,
) -> Workload:
    """Read and clean Slurm accounting (module docstring: formats, rules, columns).

    :param path: a ``sacct --parsable2`` export or a jobcomp/filetxt log (gzip ok)
    :param format: ``"sacct"`` or ``"jobcomp"`` (default: :func:`detect_format`)
    :param machine_size: CPUs of the cluster (default: the peak of CPUs in use in the
        recorded schedule); jobs larger are clipped to it (counted)
    :param lenient: skip (and count in ``report.skipped_malformed``) malformed lines instead
        of raising :class:`AccountingFormatError`
    :param tz: zone of Slurm's local times: ``"UTC"`` (default), ``"local"``, an offset
        (``"+02:00"``) or an IANA name (``"Europe/Berlin"``)
    :param partition_limits: partition name (``"*"``: any) -> time limit (seconds, or a
        Slurm duration like ``"7-00:00:00"``), the request of jobs without a limit
        (``UNLIMITED``, ``Partition_Limit``) in that partition
    :param unlimited: the request of other jobs without a limit: ``"runtime"`` (their run
        time, counted as patched) or ``"drop"`` (counted as dropped)
    :param arrival: ``"submit"`` (Slurm's ``Submit``) or ``"eligible"`` (``Eligible``: when
        a held, ``--begin`` or dependent job could first start)
    :param name: workload name (default: the file name without its extension)
    :return: the cleaned, submit-ordered workload; ``meta`` holds ``UnixStartTime`` (the
        first arrival), ``TimeZoneString``, ``Partitions`` and how the machine size was set
    :raises AccountingFormatError: a malformed line (``file:line``), no header, no job left
    :raises ValueError: a bad option (the valid choices listed)
    """
    p = Path(path)
    for value, valid, what in ((unlimited, UNLIMITED_POLICIES, "unlimited"),
                               (arrival, ARRIVALS, "arrival")):  # fmt: skip
        if value not in valid:
            raise ValueError(f"{what}={value!r}: valid: {', '.join(valid)}")
    if machine_size is not None and int(machine_size) <= 0:
        raise ValueError(f"machine_size must be a positive integer, got {machine_size}")
    limits = _limits(partition_limits)
    parse_time = time_parser(tz)
    data = _read_bytes(p)
    fmt = format or _sniff(data)
    if fmt not in ("sacct", "jobcomp"):
        raise AccountingFormatError(
            f"not Slurm accounting (format {fmt!r}): expected a 'sacct --parsable2' export "
            "with its header line, or a jobcomp/filetxt log (lines of JobId=...)",
            p,
        )
    src = AccountingLines(data, p, fmt, lenient)
    del data
    recs, steps = (read_sacct_lines if fmt == "sacct" else read_jobcomp_lines)(src, parse_time)
    clusters = sorted({r.cluster for r in recs} - {"", "unknown"})
    if len(clusters) > 1:  # job ids repeat across clusters, and a workload is one machine
        raise AccountingFormatError(
            f"the accounting holds {len(clusters)} clusters ({', '.join(clusters[:5])}); "
            "export one at a time (sacct --clusters=NAME) or split the log by its Cluster=",
            p,
        )
    cols, rep, size, t0, partitions = _clean(
        recs,
        steps,
        machine_size=None if machine_size is None else int(machine_size),
        partition_limits=limits,
        unlimited=unlimited,
        arrival=arrival,
    )
    rep.skipped_malformed = src.skipped
    rep.header_lines = 1 if fmt == "sacct" else 0
    if rep.kept == 0:
        raise AccountingFormatError("no job left after cleaning: " + "; ".join(rep.lines()), p)
    meta = {
        "Computer": f"Slurm accounting ({fmt})",
        "UnixStartTime": str(int(t0)),
        "TimeZoneString": tz,
        "Partitions": " ".join(f"{i}={n}" for i, n in enumerate(partitions, start=1)),
        # how to read the file again to the same jobs (window_trace of a pickled window)
        READER_OPTIONS: json.dumps(
            {"tz": tz, "partition_limits": limits, "unlimited": unlimited, "arrival": arrival},
            sort_keys=True,
        ),
        "MachineSizeSource": "given"
        if machine_size is not None
        else "peak of CPUs in use at once in the accounting (a lower bound; pass the size)",
    }
    stem = p.name[:-3] if p.name.lower().endswith(".gz") else p.name
    base, dot, ext = stem.rpartition(".")
    return Workload(
        name=name or (base if dot and base and ext.lower() in _EXTENSIONS else stem),
        machine_size=size,
        report=rep,
        source=str(p),
        meta=meta,
        **cols,
    )


#: ``meta`` key of the options a workload was read with (JSON; not written to SWF).
READER_OPTIONS = "ReaderOptions"

#: ``read_trace_file``'s options for Slurm accounting and their defaults.
ACCOUNTING_DEFAULTS: dict[str, Any] = {
    "format": None,
    "tz": "UTC",
    "partition_limits": None,
    "unlimited": "runtime",
    "arrival": "submit",
}


def read_trace_file(
    path: str | os.PathLike[str],
    machine_size: int | None = None,
    lenient: bool = False,
    name: str | None = None,
    **options: Any,
) -> Workload:
    """A workload file of any format (:func:`detect_format`): SWF through
    :func:`~hpcgym.workload.swf.read_swf`, Slurm accounting through
    :func:`read_accounting`. The one reader behind :func:`hpcgym.workload.load`.

    :param options: :func:`read_accounting`'s ``format``, ``tz``, ``partition_limits``,
        ``unlimited``, ``arrival`` (``format="swf"`` forces SWF)
    :raises ValueError: an unknown option, or an accounting option given for an SWF file
    """
    unknown = sorted(set(options) - set(ACCOUNTING_DEFAULTS))
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(unknown)}; valid: {', '.join(ACCOUNTING_DEFAULTS)}"
        )
    fmt = options.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"format={fmt!r}: valid: {', '.join(FORMATS)}")
    if fmt is None:
        fmt = detect_format(path)
    if fmt == "swf":
        given = [k for k, v in options.items() if k != "format" and v != ACCOUNTING_DEFAULTS[k]]
        if given:
            raise ValueError(
                f"{path}: {', '.join(given)} apply to Slurm accounting, and this is an SWF file"
            )
        return read_swf(path, machine_size=machine_size, lenient=lenient, name=name)
    return read_accounting(
        path, machine_size=machine_size, lenient=lenient, name=name, **{**options, "format": fmt}
    )
