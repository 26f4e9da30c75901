"""Standard Workload Format (SWF) reader and writer.

An SWF file (Parallel Workloads Archive) is plain text, optionally gzip-compressed.
Lines starting with ``;`` are header comments, many of them ``Key: value`` pairs
(``MaxProcs``, ``MaxNodes``, ``UnixStartTime`` ...). Every other non-blank line is one
job record of 18 whitespace-separated numbers; ``-1`` means unknown.

:func:`read_swf` parses the records in bulk with numpy (a per-line pass runs only to
locate a malformed line, or to skip malformed lines with ``lenient=True``) and applies
the cleaning rules below, in this order. Every dropped or patched record is counted in
the :class:`~hpcgym.workload.core.CleaningReport` under the rule's name:

1. ``procs`` = field 5 (allocated) if > 0, else field 8 (requested)
   (patched: ``"procs from requested"``); the job is dropped if ``procs <= 0``
   (dropped: ``"procs <= 0"``).
2. ``runtime`` = field 4; dropped if ``runtime <= 0`` (``"runtime <= 0"``), then dropped
   if the submit time (field 2) is negative (``"submit < 0"``).
3. ``request`` = field 9 if > 0, else ``runtime`` (patched: ``"request from runtime"``);
   a request below the runtime is raised to it (``"request raised to runtime"``).
4. ``procs`` above the machine size is clipped to it (``"procs clipped to machine size"``).
5. Jobs are ordered by submit time, stable on file order (``"out of submit order"``
   counts the records submitted earlier than some record before them in the file).

Drop counts are sequential (a record is counted under the first rule that drops it);
patch counts refer to kept jobs only. ``records == kept + sum(dropped.values())``.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
import tempfile
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from hpcgym.workload.core import CleaningReport, Workload

__all__ = [
    "SWFFormatError",
    "read_swf",
    "read_swf_fields",
    "workload_fields",
    "write_swf",
    "parse_header",
    "N_FIELDS",
    "FIELD_NAMES",
    "DROP_RULES",
    "PATCH_RULES",
]

#: Number of fields of a job record.
N_FIELDS = 18

#: SWF field names, in file order (field 1 is index 0).
FIELD_NAMES: tuple[str, ...] = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
)

# 0-based column indices of the fields the reader uses
_F_JOB, _F_SUBMIT, _F_WAIT, _F_RUNTIME, _F_ALLOC = 0, 1, 2, 3, 4
_F_REQPROCS, _F_REQTIME, _F_REQMEM = 7, 8, 9
_F_USER, _F_GROUP, _F_EXE, _F_QUEUE = 11, 12, 13, 14
#: fields that must hold integers (ids and processor counts)
_INT_FIELDS = (_F_JOB, _F_ALLOC, _F_REQPROCS, _F_USER, _F_GROUP, _F_EXE, _F_QUEUE)

#: Drop rules, in the order they are applied (stable names used as report keys).
DROP_RULES: tuple[str, ...] = ("procs <= 0", "runtime <= 0", "submit < 0")
#: Patch rules, in the order they are applied (stable names used as report keys).
PATCH_RULES: tuple[str, ...] = (
    "procs from requested",
    "request from runtime",
    "request raised to runtime",
    "procs clipped to machine size",
    "out of submit order",
)

_GZIP_MAGIC = b"\x1f\x8b"
_KEY_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")
_LEADING_INT_RE = re.compile(r"^\s*([+-]?\d+)")


class SWFFormatError(ValueError):
    """A malformed SWF file or record.

    :param message: what is wrong
    :param path: the file
    :param line: 1-based line number of the bad record (``None`` for file-level errors)
    """

    def __init__(self, message: str, path: str | os.PathLike[str], line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


# ---------------------------------------------------------------------- input
def _read_bytes(path: Path) -> bytes:
    """The (decompressed) bytes of ``path``; gzip is detected by its magic number."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as gz:
                data = gz.read()
        except EOFError as exc:
            raise SWFFormatError(f"truncated gzip file ({exc}); download it again", path) from exc
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise SWFFormatError(f"corrupt gzip file: {exc}", path) from exc
    else:
        data = path.read_bytes()
    if not data.strip():
        raise SWFFormatError("empty file (no header and no job lines)", path)
    return data


def _header_lines(data: bytes) -> list[str]:
    """Text after the ``;`` of every comment line (lines whose first non-blank is ``;``)."""
    out: list[str] = []
    n = len(data)
    pos = data.find(b";")
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        if end == -1:
            end = n
        if not data[start:pos].strip():
            out.append(data[pos + 1 : end].decode("latin-1").rstrip("\r"))
        pos = data.find(b";", end)
    return out


def parse_header(lines: list[str]) -> dict[str, str]:
    """``Key: value`` pairs of SWF header lines (text after the ``;``).

    A key that occurs several times (``Queue:``, ``Note:`` ...) keeps all its values,
    joined by newlines, in file order.
    """
    meta: dict[str, str] = {}
    for text in lines:
        m = _KEY_RE.match(text)
        if not m:
            continue
        key, value = m.group(1), m.group(2)
        meta[key] = f"{meta[key]}\n{value}" if key in meta else value
    return meta


def _header_int(meta: dict[str, str], key: str) -> int | None:
    """Leading integer of a header value (``"338 (batch partition; 512 total)"`` -> 338)."""
    value = meta.get(key)
    if value is None:
        return None
    m = _LEADING_INT_RE.match(value.split("\n", 1)[0])
    return int(m.group(1)) if m else None


def _bulk_parse(data: bytes) -> np.ndarray | None:
    """All job records as an ``(n, 18)`` float array, or ``None`` if any line is bad."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            arr = np.loadtxt(
                io.BytesIO(data), comments=";", dtype=np.float64, ndmin=2, encoding="latin-1"
            )
    except ValueError:
        return None
    if arr.shape[0] == 0:
        return arr.reshape(0, N_FIELDS)
    if arr.shape[1] != N_FIELDS or not np.isfinite(arr).all():
        return None
    ints = arr[:, _INT_FIELDS]
    if not np.array_equal(ints, np.floor(ints)):
        return None
    return arr


def _check_line(fields: list[bytes]) -> tuple[list[float] | None, str]:
    """Parse one record; return ``(values, "")`` or ``(None, reason)``."""
    if len(fields) != N_FIELDS:
        return None, f"expected {N_FIELDS} fields, found {len(fields)}"
    values: list[float] = []
    for i, tok in enumerate(fields):
        try:
            if b"_" in tok:
                raise ValueError
            v = float(tok)
        except ValueError:
            return None, (
                f"field {i + 1} ({FIELD_NAMES[i]}) is not a number: {tok.decode('latin-1')!r}"
            )
        if not math.isfinite(v):
            return None, f"field {i + 1} ({FIELD_NAMES[i]}) is not finite: {v}"
        if i in _INT_FIELDS and v != math.floor(v):
            return None, f"field {i + 1} ({FIELD_NAMES[i]}) must be an integer, got {v}"
        values.append(v)
    return values, ""


_NUM = rb"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
#: a job record: 18 plain decimal numbers (no nan/inf, hex or underscores)
_RECORD_RE = re.compile(_NUM + (rb"\s+" + _NUM) * (N_FIELDS - 1))


def _bad_line(path: Path, lineno: int, raw: bytes, reason: str) -> SWFFormatError:
    shown = raw.decode("latin-1").strip()
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return SWFFormatError(
        f"malformed job record: {reason} (line: {shown!r}); "
        "pass lenient=True (CLI: --lenient) to skip and count such lines",
        path,
        lineno,
    )


def _line_parse(data: bytes, path: Path, lenient: bool) -> tuple[np.ndarray, int]:
    """Slow path: check line by line; raise on the first bad line unless ``lenient``.

    Each record is matched against a regular expression (in C); only bad lines are
    parsed in Python, to say what is wrong with them. The good lines are then parsed
    in bulk again.
    """
    good: list[bytes] = []
    linenos: list[int] = []
    raws: list[bytes] = []
    skipped = 0
    first_bad: tuple[int, bytes, bytes] | None = None  # (lineno, raw line, record)
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.split(b";", 1)[0].strip()  # a trailing ';' comment is a comment
        if not line:
            continue
        if _RECORD_RE.fullmatch(line) is None:
            if not lenient:
                first_bad = (lineno, raw, line)
                break
            skipped += 1
            continue
        good.append(line)
        linenos.append(lineno)
        raws.append(raw)
    arr = np.empty((0, N_FIELDS))
    if good:
        arr = np.loadtxt(
            io.BytesIO(b"\n".join(good)), dtype=np.float64, ndmin=2, encoding="latin-1"
        )
        ints = arr[:, _INT_FIELDS]
        bad = ~(np.isfinite(arr).all(axis=1) & (ints == np.floor(ints)).all(axis=1))
        if bad.any():
            rows = np.flatnonzero(bad)
            if not lenient:  # these lines come before first_bad
                r = int(rows[0])
                first_bad = (linenos[r], raws[r], good[r])
            else:
                skipped += int(rows.size)
                arr = arr[~bad]
    if first_bad is not None:
        lineno, raw, line = first_bad
        _, reason = _check_line(line.split())
        raise _bad_line(path, lineno, raw, reason or "not 18 plain decimal numbers")
    return arr, skipped


# ------------------------------------------------------------------- cleaning
def _clean(
    arr: np.ndarray, machine_size: int, report: CleaningReport
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Apply the cleaning rules (module docstring) to raw records; fill ``report``.

    :return: the cleaned columns and, for each kept job in their order, its record's row
        in ``arr``
    """
    dropped = dict.fromkeys(DROP_RULES, 0)
    patched = dict.fromkeys(PATCH_RULES, 0)
    report.records = int(arr.shape[0])

    # rule 1: processors
    alloc = arr[:, _F_ALLOC]
    use_req = ~(alloc > 0)
    procs = np.where(use_req, arr[:, _F_REQPROCS], alloc)
    keep = procs > 0
    dropped["procs <= 0"] = int(np.count_nonzero(~keep))
    # rule 2: runtime, then submit time
    runtime = arr[:, _F_RUNTIME]
    ok = keep & (runtime > 0)
    dropped["runtime <= 0"] = int(np.count_nonzero(keep & ~ok))
    keep = ok
    submit = arr[:, _F_SUBMIT]
    ok = keep & (submit >= 0)
    dropped["submit < 0"] = int(np.count_nonzero(keep & ~ok))
    keep = ok

    idx = np.flatnonzero(keep)
    patched["procs from requested"] = int(np.count_nonzero(use_req[idx]))
    procs = procs[idx].astype(np.int64)
    runtime = runtime[idx]
    submit = submit[idx]
    # rule 3: requested time
    request = arr[idx, _F_REQTIME]
    no_req = ~(request > 0)
    patched["request from runtime"] = int(np.count_nonzero(no_req))
    request = np.where(no_req, runtime, request)
    low = request < runtime
    patched["request raised to runtime"] = int(np.count_nonzero(low))
    request = np.where(low, runtime, request)
    # rule 4: clip to the machine
    big = procs > machine_size
    patched["procs clipped to machine size"] = int(np.count_nonzero(big))
    procs = np.minimum(procs, machine_size)

    cols: dict[str, np.ndarray] = {
        "job_id": arr[idx, _F_JOB].astype(np.int64),
        "submit": submit,
        "runtime": runtime,
        "procs": procs,
        "request": request,
        "user": arr[idx, _F_USER].astype(np.int64),
        "group": arr[idx, _F_GROUP].astype(np.int64),
        "executable": arr[idx, _F_EXE].astype(np.int64),
        "queue": arr[idx, _F_QUEUE].astype(np.int64),
        # the real system's schedule, never read by the simulator (Workload.recorded_wait)
        "recorded_wait": np.where(arr[idx, _F_WAIT] >= 0, arr[idx, _F_WAIT], np.nan),
    }
    # rule 5: submit order (stable)
    if submit.size > 1 and not bool(np.all(submit[1:] >= submit[:-1])):
        earlier = submit[1:] < np.maximum.accumulate(submit)[:-1]
        patched["out of submit order"] = int(np.count_nonzero(earlier))
        order = np.argsort(submit, kind="stable")
        cols = {k: v[order] for k, v in cols.items()}
        idx = idx[order]

    report.kept = int(idx.size)
    report.dropped = dropped
    report.patched = patched
    return cols, idx


# ---------------------------------------------------------------------- API
def _records(p: Path, lenient: bool) -> tuple[np.ndarray, list[str], int]:
    """The raw job records of ``p`` (one row of :data:`N_FIELDS` numbers each), its header
    lines and the number of malformed lines skipped (``lenient`` only)."""
    data = _read_bytes(p)
    header = _header_lines(data)
    skipped = 0
    arr = _bulk_parse(data)
    if arr is None:
        arr, skipped = _line_parse(data, p, lenient)
    del data
    if arr.shape[0] == 0:
        extra = f" ({skipped} malformed lines skipped)" if skipped else ""
        raise SWFFormatError(f"no job lines{extra}; found {len(header)} header line(s) only", p)
    return arr, header, skipped


def _default_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".swf"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def read_swf(
    path: str | os.PathLike[str],
    machine_size: int | None = None,
    lenient: bool = False,
    *,
    name: str | None = None,
) -> Workload:
    """Read and clean an SWF file (plain or gzip-compressed).

    :param path: the ``.swf`` or ``.swf.gz`` file (gzip is detected from the content)
    :param machine_size: number of processors; default: the leading integer of the
        header's ``MaxProcs``, else ``MaxNodes``. Given, it overrides the header (and
        rule 4 clips job sizes to it).
    :param lenient: skip (and count in ``report.skipped_malformed``) malformed job
        lines instead of raising :class:`SWFFormatError`
    :param name: workload name (default: the file name without ``.swf``/``.gz``)
    :return: the cleaned, submit-ordered :class:`~hpcgym.workload.core.Workload`; its
        ``report`` counts every dropped and patched record per rule and ``meta`` holds
        the header's ``Key: value`` pairs
    :raises SWFFormatError: malformed record (with file and line), empty file, truncated
        or corrupt gzip, no job lines, no machine size
    :raises FileNotFoundError: ``path`` does not exist
    """
    p = Path(path)
    arr, header, skipped = _records(p, lenient)
    meta = parse_header(header)

    if machine_size is None:
        for key in ("MaxProcs", "MaxNodes"):
            size = _header_int(meta, key)
            if size is not None and size > 0:
                machine_size = size
                break
        else:
            raise SWFFormatError(
                "no machine size: the header has no positive MaxProcs or MaxNodes; "
                "pass machine_size=N (CLI: --machine-size N)",
                p,
            )
    elif int(machine_size) <= 0:
        raise ValueError(f"machine_size must be a positive integer, got {machine_size}")
    machine_size = int(machine_size)

    report = CleaningReport(header_lines=len(header), skipped_malformed=skipped)
    cols, _ = _clean(arr, machine_size, report)
    del arr
    if report.kept == 0:
        raise SWFFormatError("no job left after cleaning: " + "; ".join(report.lines()), p)
    return Workload(
        name=name or _default_name(p),
        machine_size=machine_size,
        **cast("dict[str, Any]", cols),  # the columns, by keyword
        report=report,
        source=str(p),
        meta=meta,
    )


def _field_indices(fields: Sequence[str]) -> list[int]:
    out = []
    for f in fields:
        if f not in FIELD_NAMES:
            raise ValueError(f"unknown SWF field {f!r}; valid: {', '.join(FIELD_NAMES)}")
        out.append(FIELD_NAMES.index(f))
    return out


def read_swf_fields(
    path: str | os.PathLike[str], fields: Sequence[str], lenient: bool = False
) -> dict[str, np.ndarray]:
    """Raw SWF fields of the jobs :func:`read_swf` keeps, in its order.

    The cleaned :class:`~hpcgym.workload.core.Workload` holds the fields the simulator
    and the predictors use; the others (``"requested memory"``, ``"used memory"``,
    ``"status"``, ``"think time"`` ...) are read here, as the file records them (``-1``:
    unknown), row ``i`` being job ``i`` of ``read_swf(path, lenient=lenient)``: the same
    records are dropped and ordered by the same rules (which drop nothing by the machine
    size, so any ``machine_size`` gives the same jobs).

    :param path: the ``.swf`` or ``.swf.gz`` file
    :param fields: names from :data:`FIELD_NAMES`
    :param lenient: as for :func:`read_swf` (pass the same value)
    :return: one float64 array per field name
    :raises ValueError: an unknown field name (the valid ones listed)
    :raises SWFFormatError: as :func:`read_swf`
    """
    cols = _field_indices(fields)
    arr, _, _ = _records(Path(path), lenient)
    _, rows = _clean(arr, np.iinfo(np.int64).max, CleaningReport())
    return {f: np.ascontiguousarray(arr[rows, c]) for f, c in zip(fields, cols, strict=True)}


def workload_fields(workload: Workload, fields: Sequence[str]) -> dict[str, np.ndarray]:
    """:func:`read_swf_fields` for the jobs of ``workload``: a workload read from an SWF
    file, or a window cut from one (its ``offset`` locates its jobs in the file's).

    :param workload: a workload whose ``source`` is the SWF file it was read from
    :param fields: names from :data:`FIELD_NAMES`
    :return: one float64 array per field, aligned with the workload's jobs
    :raises ValueError: an unknown field; a workload not read from an SWF file (a
        generated one); a file whose jobs no longer match the workload's job numbers
    """
    _field_indices(fields)
    src = Path(workload.source) if workload.source else None
    if src is None or not src.is_file():
        raise ValueError(
            f"workload {workload.name!r} was not read from an SWF file (source "
            f"{workload.source!r}): its raw SWF fields are unknown"
        )
    from hpcgym.workload.sacct import detect_format  # sacct imports this module

    fmt = detect_format(src)
    if fmt != "swf":
        raise ValueError(
            f"workload {workload.name!r} was read from Slurm accounting ({fmt}: {src}), not "
            "SWF: its memory, GPUs and status are in workload.extra"
        )
    lo, hi = workload.offset, workload.offset + len(workload)
    raw = read_swf_fields(src, list(dict.fromkeys([*fields, "job number"])))
    ids = raw["job number"]
    if hi > len(ids) or not np.array_equal(ids[lo:hi], workload.job_id):
        raise ValueError(
            f"the jobs of {src} no longer match workload {workload.name!r} (jobs "
            f"{lo}..{hi - 1}); was it read with lenient=True, or has the file changed?"
        )
    return {f: raw[f][lo:hi] for f in fields}


# --------------------------------------------------------------------- writer
_FLOAT_FMT = "%.15g"


def write_swf(workload: Workload, path: str | os.PathLike[str]) -> Path:
    """Write a workload as an SWF file (gzip-compressed if the name ends in ``.gz``).

    The header has ``MaxJobs``, ``MaxRecords``, ``MaxNodes`` and ``MaxProcs`` (both the
    machine size) and the workload's other ``meta`` entries. Each job gets 18 fields:
    job number, submit, wait (the workload's ``recorded_wait``, else ``-1``), runtime,
    allocated processors, ``-1`` x 3, requested time, requested memory (KB per processor,
    from ``extra["memory_mb"]`` where the workload has it, else ``-1``), status
    (``extra["status"]`` where the workload has it, else ``1``: the runtime is a completed
    run), user, group, executable, queue, ``-1`` x 3. Reading the file back gives the same
    columns. The file is written to a temporary name and renamed, so a
    reader never sees a partial file; gzip output
    is deterministic (no timestamp).

    :param workload: the jobs to write
    :param path: destination file
    :return: ``path`` as a :class:`~pathlib.Path`
    """
    from hpcgym._version import __version__

    p = Path(path)
    n = len(workload)
    m = int(workload.machine_size)
    lines = [
        "Version: 2.2",
        f"Note: written by hpcgym {__version__} from {workload.name!s}",
        f"MaxJobs: {n}",
        f"MaxRecords: {n}",
        f"MaxNodes: {m}",
        f"MaxProcs: {m}",
    ]
    # the header's own keys, and the options a Slurm accounting file was read with
    own = {"Version", "MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "ReaderOptions"}
    for key, value in workload.meta.items():
        if key in own:
            continue
        for v in str(value).split("\n"):
            lines.append(f"{key}: {v}")
    header = "".join(f"; {line}\n" for line in lines)

    table = np.full((n, N_FIELDS), -1.0)
    table[:, _F_JOB] = workload.job_id
    table[:, _F_SUBMIT] = workload.submit
    table[:, _F_RUNTIME] = workload.runtime
    if workload.recorded_wait is not None:
        table[:, _F_WAIT] = np.where(np.isnan(workload.recorded_wait), -1.0, workload.recorded_wait)
    table[:, _F_ALLOC] = workload.procs
    table[:, _F_REQTIME] = workload.request
    table[:, 10] = 1.0
    status = workload.extra.get("status")
    if status is not None:
        table[:, 10] = status
    memory = workload.extra.get("memory_mb")
    if memory is not None:  # SWF field 10: requested memory, KB per processor
        per_proc = np.asarray(memory, dtype=np.float64) * 1024.0 / np.maximum(workload.procs, 1)
        table[:, _F_REQMEM] = np.where(np.isfinite(per_proc), np.round(per_proc), -1.0)
    table[:, _F_USER] = workload.user
    table[:, _F_GROUP] = workload.group
    table[:, _F_EXE] = workload.executable
    table[:, _F_QUEUE] = workload.queue
    floats = (_F_SUBMIT, _F_WAIT, _F_RUNTIME, _F_REQTIME)
    fmt = [_FLOAT_FMT if i in floats else "%d" for i in range(18)]

    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            if p.name.lower().endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                    _write_text(gz, header, table, fmt)
            else:
                _write_text(raw, header, table, fmt)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def _write_text(
    fh: gzip.GzipFile | io.BufferedWriter, header: str, table: np.ndarray, fmt: list[str]
) -> None:
    text = io.TextIOWrapper(fh, encoding="latin-1", errors="replace", newline="\n")
    text.write(header)
    np.savetxt(text, table, fmt=fmt, delimiter=" ")
    text.flush()
    text.detach()
