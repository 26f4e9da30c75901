"""Per-job accounting records of a Slurm run: the ``jobcomp/filetxt`` log and ``sacct -P``.

The harness reads its own replays back with these (job id, state, submit / eligible /
start / end times, limit, cores). The parsing is the workload layer's Slurm accounting
reader (:func:`hpcgym.workload.sacct_records.accounting_records`, one parser of each line and
time form); loading a *site's* accounting as an hpcgym workload, with the cleaning
report, is :func:`hpcgym.workload.sacct.read_accounting` (``docs/workloads.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from hpcgym.workload import AccountingRecord, accounting_records
from hpcgym.workload.slurm_text import parse_limit as _limit_seconds
from hpcgym.workload.slurm_text import time_parser

__all__ = ["SACCT_FIELDS", "JobRecord", "parse_jobcomp", "parse_limit", "parse_sacct", "parse_time"]

#: the ``sacct --format`` fields :func:`parse_sacct` reads
SACCT_FIELDS = (
    "JobIDRaw",
    "JobName",
    "State",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Timelimit",
    "NCPUS",
)

#: A Slurm time stamp (``2026-12-07T13:05:01``, read as UTC; or epoch seconds) as Unix
#: seconds; ``None`` for ``Unknown``, ``None`` or empty (:func:`~hpcgym.workload.slurm_text.
#: time_parser` of ``"UTC"``).
parse_time = time_parser("UTC")


@dataclass
class JobRecord:
    """One job of a Slurm accounting record (times: Unix seconds, ``None`` if unknown).

    :param job_id: Slurm's job id
    :param name: job name
    :param state: final state (``COMPLETED``, ``TIMEOUT``, ``CANCELLED``, ``FAILED`` ...)
    :param submit: submit time
    :param eligible: eligible time (the ``--begin`` time when one was given)
    :param start: start time (``None``: cancelled before it started)
    :param end: end time
    :param time_limit_min: the limit in minutes (``None`` for ``UNLIMITED``)
    :param cpus: allocated cores
    :param record: everything the accounting reader read of the line (partition, user,
        memory, GPUs, line number ...)
    """

    job_id: int
    name: str
    state: str
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    time_limit_min: int | None
    cpus: int
    record: AccountingRecord

    @classmethod
    def of(cls, r: AccountingRecord) -> JobRecord:
        """The job record of a parsed accounting line."""
        return cls(
            job_id=r.job,
            name=r.name,
            state=r.state,
            submit=r.submit,
            eligible=r.eligible,
            start=r.start,
            end=r.end,
            time_limit_min=None if r.limit is None else math.ceil(r.limit / 60),
            cpus=r.ncpus,
            record=r,
        )


def parse_limit(text: str) -> int | None:
    """A Slurm time limit (``M``, ``M:S``, ``H:M:S``, ``D-H:M:S``, ``UNLIMITED``) in whole
    minutes, rounded up (:func:`~hpcgym.workload.slurm_text.parse_limit` in minutes)."""
    sec = _limit_seconds(text)
    return None if sec is None else math.ceil(sec / 60)


def parse_jobcomp(path: str | Path) -> list[JobRecord]:
    """Read a ``jobcomp/filetxt`` log (one ``Key=Value ...`` line per finished job); a last
    line without its newline is still being written and is left for the next read.

    :param path: the ``JobCompLoc`` file
    :raises ValueError: ``path:line`` of a malformed line
    """
    data = Path(path).read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    return [JobRecord.of(r) for r in accounting_records(data, "jobcomp", source=path)]


def parse_sacct(text: str, *, source: str = "<sacct>") -> list[JobRecord]:
    """Read ``sacct --parsable2`` output with a header line; job steps (``123.batch``)
    are skipped, only whole jobs are returned.

    :param text: the output
    :param source: a name for error messages
    :raises ValueError: ``source:line`` of a malformed line (wrong number of fields ...)
    """
    if not text.strip():
        return []
    return [JobRecord.of(r) for r in accounting_records(text, "sacct", source=source)]
