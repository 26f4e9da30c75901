"""Per-job accounting records of a Slurm run: the ``jobcomp/filetxt`` log and ``sacct -P``.

This is the small reader the harness needs to read back its own replays (job id, state,
submit / eligible / start / end times, limit, cores). Loading a *site's* accounting as an
hpcgym workload, with the cleaning report, is the job of the workload layer's sacct reader
(``docs/workloads.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["SACCT_FIELDS", "JobRecord", "parse_jobcomp", "parse_sacct", "parse_time"]

#: the ``sacct --format`` fields :func:`parse_sacct` reads (others are kept in ``fields``)
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

_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_]*)=")


@dataclass
class JobRecord:
    """One job of a Slurm accounting record (times: Unix seconds, ``None`` if unknown).

    :param job_id: Slurm's job id
    :param name: job name
    :param state: final state (``COMPLETED``, ``TIMEOUT``, ``CANCELLED``, ``FAILED`` ...)
    :param submit: submit time
    :param eligible: eligible time (the ``--begin`` time when one was given)
    :param start: start time
    :param end: end time
    :param time_limit_min: the limit in minutes (``None`` for ``UNLIMITED``)
    :param cpus: allocated cores
    :param fields: every raw field of the record
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
    fields: dict[str, str] = field(default_factory=dict)


def parse_time(text: str) -> float | None:
    """A Slurm time stamp (``2026-12-07T13:05:01``, read as UTC) as Unix seconds;
    ``None`` for ``Unknown``, ``None`` or empty."""
    text = text.strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def parse_limit(text: str) -> int | None:
    """A Slurm time limit (``M``, ``H:M:S``, ``D-H:M:S``, ``UNLIMITED``) in whole minutes."""
    text = text.strip()
    if not text or text.upper() in ("UNLIMITED", "PARTITION_LIMIT", "INFINITE", "NONE"):
        return None
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        secs = parts[0] * 60
    elif len(parts) == 2:
        secs = parts[0] * 60 + parts[1]
    else:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    secs += days * 86400
    return (secs + 59) // 60


def _split_jobcomp(line: str) -> dict[str, str]:
    keys = list(_KEY.finditer(line))
    out = {}
    for i, k in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        out[k.group(1)] = line[k.end() : end].strip()
    return out


def parse_jobcomp(path: str | Path) -> list[JobRecord]:
    """Read a ``jobcomp/filetxt`` log (one ``Key=Value ...`` line per finished job).

    :param path: the ``JobCompLoc`` file
    :raises ValueError: ``path:line`` of a line without a ``JobId``
    """
    path = Path(path)
    recs = []
    with path.open(errors="replace") as fh:
        for no, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            f = _split_jobcomp(line)
            if "JobId" not in f:
                raise ValueError(f"{path}:{no}: not a jobcomp record (no JobId=): {line[:80]!r}")
            try:
                limit = parse_limit(f.get("TimeLimit", ""))
            except ValueError:
                limit = None
            recs.append(
                JobRecord(
                    job_id=int(f["JobId"]),
                    name=f.get("Name", ""),
                    state=f.get("JobState", ""),
                    submit=parse_time(f.get("SubmitTime", "")),
                    eligible=parse_time(f.get("EligibleTime", "")),
                    start=parse_time(f.get("StartTime", "")),
                    end=parse_time(f.get("EndTime", "")),
                    time_limit_min=limit,
                    cpus=int(f.get("ProcCnt", "0") or 0),
                    fields=f,
                )
            )
    return recs


def parse_sacct(text: str, *, source: str = "<sacct>") -> list[JobRecord]:
    """Read ``sacct --parsable2`` output with a header line; job steps (``123.batch``)
    are skipped, only whole jobs are returned.

    :param text: the output
    :param source: a name for error messages
    :raises ValueError: ``source:line`` of a line with the wrong number of fields
    """
    lines = text.splitlines()
    if not lines:
        return []
    head = lines[0].split("|")
    idcol = "JobIDRaw" if "JobIDRaw" in head else "JobID"
    recs = []
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        vals = line.split("|")
        if len(vals) != len(head):
            raise ValueError(f"{source}:{no}: {len(vals)} fields, the header has {len(head)}")
        f = dict(zip(head, vals, strict=True))
        jid = f.get(idcol, "")
        if not jid.isdigit():
            continue  # a step (123.batch, 123.0) or an array element (123_4)
        recs.append(
            JobRecord(
                job_id=int(jid),
                name=f.get("JobName", ""),
                state=f.get("State", "").split(" ")[0],
                submit=parse_time(f.get("Submit", "")),
                eligible=parse_time(f.get("Eligible", "")),
                start=parse_time(f.get("Start", "")),
                end=parse_time(f.get("End", "")),
                time_limit_min=parse_limit(f.get("Timelimit", "")),
                cpus=int(f.get("NCPUS", "0") or 0),
                fields=f,
            )
        )
    return recs
