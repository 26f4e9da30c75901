"""Slurm accounting, line by line: the records of a ``sacct --parsable2`` export or of a
jobcomp/filetxt log, parsed but not cleaned (:func:`accounting_records`).

:mod:`hpcgym.workload.sacct` cleans these records into a workload (its docstring states the
rules) and re-exports every public name of this module.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hpcgym.workload.slurm_text import (
    NO_LIMIT,
    cached_duration,
    cached_memory_mb,
    time_parser,
    tres_gpus,
    tres_value,
)
from hpcgym.workload.swf import SWFFormatError

__all__ = [
    "SACCT_COMMAND",
    "SACCT_FIELDS",
    "SACCT_REQUIRED",
    "AccountingFormatError",
    "AccountingRecord",
    "accounting_records",
]

#: The ``sacct`` columns the reader uses (``--format=`` of :data:`SACCT_COMMAND`).
SACCT_FIELDS: tuple[str, ...] = (
    "JobIDRaw", "JobID", "JobName", "User", "Account", "Partition", "Submit", "Eligible",
    "Start", "End", "Timelimit", "NCPUS", "NNodes", "ReqCPUS", "ReqMem", "ReqTRES",
    "AllocTRES", "State", "Elapsed",
)  # fmt: skip
#: Columns without which a ``sacct`` export cannot be read.
SACCT_REQUIRED: tuple[str, ...] = ("JobIDRaw", "Submit", "Start", "End", "State")
#: The command to run at a site (one line; choose the period).
SACCT_COMMAND = (
    "sacct --parsable2 --allusers --duplicates --starttime=2026-01-01 --endtime=2026-02-01 "
    "--format=" + ",".join(SACCT_FIELDS)
)

_ID_RE = re.compile(r"(\d+)(?:\+\d+)?(?:\.(\S+))?")
_JOBCOMP_KEYS = (
    "JobId", "UserId", "GroupId", "Name", "JobState", "Partition", "TimeLimit", "StartTime",
    "EndTime", "NodeList", "NodeCnt", "ProcCnt", "WorkDir", "ReservationName", "Tres",
    "Account", "QOS", "WcKey", "Cluster", "SubmitTime", "EligibleTime", "ArrayJobId",
    "ArrayTaskId", "HetJobId", "HetJobOffset", "DerivedExitCode", "ExitCode",
)  # fmt: skip
_JOBCOMP_RE = re.compile(r"(?:^|\s)(" + "|".join(_JOBCOMP_KEYS) + r")=")


class AccountingFormatError(SWFFormatError):
    """A malformed Slurm accounting file or line (``path:line: message``, as SWF's)."""


# ------------------------------------------------------------------ records
@dataclass(slots=True)
class AccountingRecord:
    """One job line of Slurm accounting as read, before cleaning (times: epoch seconds,
    ``None``: unknown). :func:`accounting_records` returns them.

    :param line: 1-based line number in the file
    :param job: Slurm's job id (``JobIDRaw``; jobcomp ``JobId``)
    :param state: end state, upper case, without ``by <uid>`` or ``+`` (``COMPLETED`` ...)
    :param submit: submit time
    :param eligible: eligible time (the ``--begin`` time when one was given)
    :param start: start time (``None``: never started)
    :param end: end time
    :param elapsed: ``Elapsed`` in seconds (sacct only)
    :param limit: time limit in seconds (``None``: none, or a year or more)
    :param ncpus: allocated CPUs (``NCPUS``, ``AllocCPUS``; jobcomp ``ProcCnt``)
    :param reqcpus: requested CPUs (sacct ``ReqCPUS``)
    :param memory_mb: requested memory of the whole job, MiB (``nan``: unknown)
    :param gpus: GPUs (``gres/gpu`` of the TRES)
    :param user: user name
    :param account: account
    :param partition: partition
    :param cluster: cluster
    :param name: job name
    :param array: an array task
    """

    line: int
    job: int
    state: str
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    elapsed: float | None
    limit: float | None  # seconds, None: no limit (UNLIMITED, Partition_Limit, empty)
    ncpus: int
    reqcpus: int
    memory_mb: float
    gpus: int
    user: str
    account: str
    partition: str
    cluster: str
    name: str
    array: bool


def _int(text: str, what: str) -> int:
    t = text.strip()
    if not t:
        return 0
    try:
        return int(t)
    except ValueError:
        raise ValueError(f"{what} is not an integer: {text!r}") from None


#: Slurm 22.05 gives a job without a limit in a partition without one a year (YEAR_MINUTES)
_YEAR = 365 * 86400


def _limit(text: str) -> float | None:
    t = text.strip()
    if t.upper() in NO_LIMIT:
        return None
    sec = cached_duration(t)
    return None if sec >= _YEAR else sec


def _state(text: str) -> str:
    return text.strip().split(" ", 1)[0].rstrip("+").upper()


class AccountingLines:
    """Decoded non-blank lines with their 1-based numbers, and the bad-line error."""

    def __init__(self, data: bytes, path: Path, fmt: str, lenient: bool, hint: bool = True):
        self.path, self.fmt, self.lenient, self.skipped = path, fmt, lenient, 0
        self.data, self.hint = data, hint

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """``(line number, line)`` of the non-blank lines, one at a time (a big export is
        never held as a list of lines)."""
        for i, line in enumerate(io.BytesIO(self.data), start=1):  # shares the bytes
            if line.strip():
                yield i, line.rstrip(b"\r\n").decode("utf-8", errors="replace")

    def bad(self, lineno: int, raw: str, reason: str) -> None:
        """Raise the file:line error, or count the line (lenient)."""
        if self.lenient:
            self.skipped += 1
            return
        shown = raw.strip()
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        hint = "; pass lenient=True (CLI: --lenient) to skip and count such lines"
        raise AccountingFormatError(
            f"malformed {self.fmt} line: {reason} (line: {shown!r}){hint if self.hint else ''}",
            self.path,
            lineno,
        )


def read_sacct_lines(
    src: AccountingLines, parse_time: Callable[[str], float | None]
) -> tuple[list[AccountingRecord], int]:
    """The job lines of a sacct export and the number of step lines."""
    lines = iter(src)
    first = next(lines, None)
    if first is None:
        raise AccountingFormatError("no lines", src.path)
    hline, header = first
    names = header.split("|")
    if names and names[-1] == "":  # --parsable: a trailing '|'
        names.pop()
    col = {n.strip().lower(): i for i, n in enumerate(names)}
    col.setdefault("ncpus", col.get("alloccpus", -1))
    missing = [f for f in SACCT_REQUIRED if f.lower() not in col]
    if "jobidraw" in missing and "jobid" in col:
        missing.remove("jobidraw")
        col["jobidraw"] = col["jobid"]
    if col["ncpus"] < 0 and "reqcpus" not in col:
        missing.append("NCPUS (or AllocCPUS or ReqCPUS)")
    if missing:
        raise AccountingFormatError(
            f"the sacct header lacks {', '.join(missing)} (header: {header.strip()[:200]!r}); "
            f"export with: {SACCT_COMMAND}",
            src.path,
            hline,
        )
    n = len(names)
    # column indices; a missing column reads the empty field appended to every row
    ix = {k: col.get(k, n) for k in ("jobidraw", "jobid", "jobname", "user", "account",
          "partition", "cluster", "submit", "eligible", "start", "end", "timelimit",
          "ncpus", "nnodes", "reqcpus", "reqmem", "reqtres", "alloctres", "state",
          "elapsed")}  # fmt: skip
    ix = {k: (v if v >= 0 else n) for k, v in ix.items()}
    i_id, i_state, i_name = ix["jobidraw"], ix["state"], ix["jobname"]
    out: list[AccountingRecord] = []
    steps = 0
    for lineno, raw in lines:
        f = raw.split("|")
        if len(f) == n + 1 and f[-1] == "":
            f.pop()
        if f == names:
            continue  # a repeated header (several exports joined)
        if len(f) > n and i_name < n:  # a job name holding '|': the extra fields are its
            k = len(f) - n
            f[i_name : i_name + k + 1] = ["|".join(f[i_name : i_name + k + 1])]
        if len(f) != n:
            src.bad(lineno, raw, f"expected {n} '|'-separated fields (header line {hline}), "
                    f"found {len(f)}")  # fmt: skip
            continue
        f.append("")
        try:
            m = _ID_RE.fullmatch(f[i_id].strip())
            if m is None:
                raise ValueError(f"JobIDRaw is not a job id: {f[i_id]!r}")
            if m.group(2) is not None:  # a step: folded into its job (counted)
                steps += 1
                continue
            ncpus = _int(f[ix["ncpus"]], "NCPUS")
            nnodes = _int(f[ix["nnodes"]], "NNodes")
            reqcpus = _int(f[ix["reqcpus"]], "ReqCPUS")
            req, alloc = f[ix["reqtres"]], f[ix["alloctres"]]
            mem = tres_value(req, "mem") or tres_value(alloc, "mem")
            memory = (
                cached_memory_mb(mem, 0, 0)
                if mem
                else cached_memory_mb(f[ix["reqmem"]], ncpus or reqcpus, nnodes)
            )
            gpus = tres_gpus(alloc)
            elapsed = f[ix["elapsed"]].strip()
            out.append(
                AccountingRecord(
                    line=lineno,
                    job=int(m.group(1)),
                    state=_state(f[i_state]),
                    submit=parse_time(f[ix["submit"]]),
                    eligible=parse_time(f[ix["eligible"]]),
                    start=parse_time(f[ix["start"]]),
                    end=parse_time(f[ix["end"]]),
                    elapsed=cached_duration(elapsed) if elapsed else None,
                    limit=_limit(f[ix["timelimit"]]),
                    ncpus=ncpus,
                    reqcpus=reqcpus,
                    memory_mb=memory,
                    gpus=gpus if gpus is not None else tres_gpus(req) or 0,
                    user=f[ix["user"]].strip(),
                    account=f[ix["account"]].strip(),
                    partition=f[ix["partition"]].strip(),
                    cluster=f[ix["cluster"]].strip(),
                    name=f[ix["jobname"]].strip(),
                    array="_" in f[ix["jobid"]],
                )
            )
        except ValueError as exc:
            src.bad(lineno, raw, str(exc))
    return out, steps


def read_jobcomp_lines(
    src: AccountingLines, parse_time: Callable[[str], float | None]
) -> tuple[list[AccountingRecord], int]:
    """The lines of a jobcomp log (it has no steps)."""
    out: list[AccountingRecord] = []
    for lineno, raw in src:
        marks = list(_JOBCOMP_RE.finditer(raw))
        if not marks or marks[0].start() != 0 or raw[: marks[0].end()].strip() != "JobId=":
            src.bad(lineno, raw, "a jobcomp line starts with JobId=")
            continue
        kv: dict[str, str] = {}
        for k, mk in enumerate(marks):
            stop = marks[k + 1].start() if k + 1 < len(marks) else len(raw)
            kv.setdefault(mk.group(1), raw[mk.end() : stop].strip())
        try:
            lacking = [k for k in ("JobState", "StartTime", "EndTime", "ProcCnt") if k not in kv]
            if lacking:
                raise ValueError(f"no {', '.join(lacking)}")
            m = _ID_RE.fullmatch(kv["JobId"])
            if m is None or m.group(2) is not None:
                raise ValueError(f"JobId is not a job id: {kv['JobId']!r}")
            tres = kv.get("Tres", "")
            cpus, nodes = _int(kv["ProcCnt"], "ProcCnt"), _int(kv.get("NodeCnt", ""), "NodeCnt")
            mem = tres_value(tres, "mem")
            out.append(
                AccountingRecord(
                    line=lineno,
                    job=int(m.group(1)),
                    state=_state(kv["JobState"]),
                    submit=parse_time(kv.get("SubmitTime", "")),
                    eligible=parse_time(kv.get("EligibleTime", "")),
                    # a job cancelled while pending: StartTime=EndTime, no node
                    start=None if nodes == 0 and "NodeCnt" in kv else parse_time(kv["StartTime"]),
                    end=parse_time(kv["EndTime"]),
                    elapsed=None,
                    limit=_limit(kv.get("TimeLimit", "")),
                    ncpus=cpus,
                    reqcpus=0,
                    memory_mb=cached_memory_mb(mem, cpus, nodes),
                    gpus=tres_gpus(tres) or 0,
                    user=kv.get("UserId", "").split("(", 1)[0].strip(),
                    account=kv.get("Account", ""),
                    partition=kv.get("Partition", ""),
                    cluster=kv.get("Cluster", ""),
                    name=kv.get("Name", ""),
                    array="ArrayJobId" in kv,
                )
            )
        except ValueError as exc:
            src.bad(lineno, raw, str(exc))
    return out, 0


def accounting_records(
    text: str | bytes,
    format: str,
    *,
    source: str | os.PathLike[str] = "<accounting>",
    tz: str = "UTC",
) -> list[AccountingRecord]:
    """The job lines of Slurm accounting, parsed but not cleaned: the records
    :func:`read_accounting` cleans into a workload, for a reader that needs Slurm's own
    jobs (the harness of :mod:`hpcgym.slurm` reads its replays back with it). Job steps
    (``123.batch``) are left out; a requeued job's runs are all kept, in file order.

    :param text: a ``sacct --parsable2`` export with its header line, or jobcomp/filetxt
        log lines
    :param format: ``"sacct"`` or ``"jobcomp"``
    :param source: the name of the text in error messages
    :param tz: the zone of Slurm's local times (:func:`read_accounting`'s ``tz``)
    :raises AccountingFormatError: a malformed line (``source:line: why``)
    :raises ValueError: an unknown format or zone
    """
    if format not in ("sacct", "jobcomp"):
        raise ValueError(f"format={format!r}: valid: sacct, jobcomp")
    data = text.encode() if isinstance(text, str) else text
    src = AccountingLines(data, Path(source), format, lenient=False, hint=False)
    read = read_sacct_lines if format == "sacct" else read_jobcomp_lines
    return read(src, time_parser(tz))[0]
