"""SWF reader and writer: cleaning rules, header parsing, bad input, real-trace counts."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import require_trace

from hpcgym.workload import (
    DROP_RULES,
    PATCH_RULES,
    SWFFormatError,
    Workload,
    load,
    read_swf,
    read_swf_fields,
    workload_fields,
    write_swf,
)


def rec(job, submit, runtime, alloc, req_procs=-1, req_time=-1, user=-1, group=-1, exe=-1, q=-1):
    """One SWF record line with the fields the reader uses."""
    f = [job, submit, -1, runtime, alloc, -1, -1, req_procs, req_time, -1, 1, user, group, exe, q]
    return " ".join(str(x) for x in f + [-1, -1, -1])


HEADER = "; Version: 2.2\n; Computer: test\n; MaxNodes: 8\n; MaxProcs: 16\n"


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


# ------------------------------------------------------------------ cleaning rules
def test_each_rule_counted_and_applied(tmp_path):
    lines = [
        rec(1, 0, 100, 4, 4, 200, user=7, group=2, exe=9, q=1),  # clean
        rec(2, 5, 100, -1, 3, 200),  # procs from requested
        rec(3, 6, 100, 0, 0, 200),  # dropped: procs <= 0
        rec(4, 7, -1, -1, -1, 200),  # dropped: procs <= 0 (first rule wins)
        rec(5, 8, 0, 2, 2, 200),  # dropped: runtime <= 0
        rec(6, -3, 50, 2, 2, 200),  # dropped: submit < 0
        rec(7, 20, 300, 2, 2, -1),  # request from runtime
        rec(8, 30, 300, 2, 2, 100),  # request raised to runtime
        rec(9, 40, 10, 64, 64, 20),  # procs clipped to 16
        rec(10, 35, 10, 1, 1, 20),  # out of order (35 < 40)
        rec(11, 35, 10, 1, 1, 20),  # out of order, same submit: stays after job 10
    ]
    p = write(tmp_path, HEADER + "\n".join(lines) + "\n")
    w = read_swf(p)
    r = w.report
    assert w.machine_size == 16
    assert r.records == 11 and r.kept == 7 and r.header_lines == 4
    assert r.dropped == {"procs <= 0": 2, "runtime <= 0": 1, "submit < 0": 1}
    assert list(r.dropped) == list(DROP_RULES)
    assert r.patched == {
        "procs from requested": 1,
        "request from runtime": 1,
        "request raised to runtime": 1,
        "procs clipped to machine size": 1,
        "out of submit order": 2,
    }
    assert list(r.patched) == list(PATCH_RULES)
    assert r.records == r.kept + sum(r.dropped.values())
    np.testing.assert_array_equal(w.job_id, [1, 2, 7, 8, 10, 11, 9])
    np.testing.assert_array_equal(w.submit, [0, 5, 20, 30, 35, 35, 40])
    np.testing.assert_array_equal(w.procs, [4, 3, 2, 2, 1, 1, 16])
    np.testing.assert_array_equal(w.runtime, [100, 100, 300, 300, 10, 10, 10])
    np.testing.assert_array_equal(w.request, [200, 200, 300, 300, 20, 20, 20])
    assert (w.user[0], w.group[0], w.executable[0], w.queue[0]) == (7, 2, 9, 1)
    assert w.name == "t" and w.source == str(p)
    assert w.meta["Computer"] == "test"


def _with_memory(line: str, mem: int, status: int) -> str:
    """``line`` with its requested memory (field 10) and status (field 11) set."""
    f = line.split()
    f[9], f[10] = str(mem), str(status)
    return " ".join(f)


def test_raw_fields_follow_the_cleaned_jobs(tmp_path):
    """Dropped records have no row and reordered ones move with their job."""
    lines = [
        _with_memory(rec(1, 0, 100, 4, 4, 200), 1000, 1),
        _with_memory(rec(2, 5, 0, 4, 4, 200), 2000, 0),  # dropped: runtime <= 0
        _with_memory(rec(3, 40, 10, 64, 64, 20), 3000, 1),  # clipped, not dropped
        _with_memory(rec(4, 35, 10, 1, 1, 20), 4000, 5),  # out of submit order
    ]
    p = write(tmp_path, HEADER + "\n".join(lines) + "\n", "t.swf.gz")
    w = read_swf(p)
    raw = read_swf_fields(p, ["requested memory", "status", "job number"])
    np.testing.assert_array_equal(raw["job number"], w.job_id)
    np.testing.assert_array_equal(w.job_id, [1, 4, 3])
    np.testing.assert_array_equal(raw["requested memory"], [1000, 4000, 3000])
    np.testing.assert_array_equal(raw["status"], [1, 5, 1])
    win = w.window(1, 2)
    np.testing.assert_array_equal(workload_fields(win, ["status"])["status"], [5, 1])
    np.testing.assert_array_equal(
        workload_fields(win.window(1, 1), ["requested memory"])["requested memory"], [3000]
    )


def test_raw_fields_errors(tmp_path):
    p = write(tmp_path, HEADER + rec(1, 0, 10, 2, 2, 20) + "\n")
    with pytest.raises(ValueError, match="unknown SWF field 'memory'; valid: job number"):
        read_swf_fields(p, ["memory"])
    with pytest.raises(ValueError, match="was not read from an SWF file"):
        workload_fields(load("synthetic"), ["status"])
    w = read_swf(p)
    p.write_text(HEADER + rec(2, 0, 10, 2, 2, 20) + "\n")  # the file changed since
    with pytest.raises(ValueError, match="no longer match"):
        workload_fields(w, ["status"])


def test_allocated_preferred_over_requested(tmp_path):
    p = write(tmp_path, HEADER + rec(1, 0, 10, 2, 8, 20) + "\n")
    w = read_swf(p)
    assert w.procs.tolist() == [2]
    assert w.report.patched["procs from requested"] == 0


def test_fractional_times_kept(tmp_path):
    line = rec(1, 0, 10, 2, 2, 20).split()
    line[1], line[3], line[5] = "1.5", "2.25", "142.00"
    p = write(tmp_path, HEADER + " ".join(line) + "\n")
    w = read_swf(p)
    assert w.submit.tolist() == [1.5] and w.runtime.tolist() == [2.25]


# ------------------------------------------------------------------ header / size
def test_machine_size_leading_integer_and_meta(tmp_path):
    head = (
        "; MaxJobs: 2\n; MaxNodes: 338 (batch partition; 512 total)\n"
        "; Queue:  1 DSI\n; Queue:  2 astro\n;   free text without key\n"
    )
    p = write(tmp_path, head + rec(1, 0, 10, 400) + "\n")
    w = read_swf(p)
    assert w.machine_size == 338
    assert w.procs.tolist() == [338]
    assert w.meta["MaxNodes"] == "338 (batch partition; 512 total)"
    assert w.meta["Queue"] == "1 DSI\n2 astro"
    assert w.meta["MaxJobs"] == "2"


def test_maxprocs_preferred_then_maxnodes(tmp_path):
    p = write(tmp_path, "; MaxNodes: 8\n;MaxProcs: 32\n" + rec(1, 0, 10, 4) + "\n")
    assert read_swf(p).machine_size == 32
    p = write(tmp_path, "; MaxProcs: -1\n; MaxNodes: 8\n" + rec(1, 0, 10, 4) + "\n")
    assert read_swf(p).machine_size == 8


def test_machine_size_override(tmp_path):
    p = write(tmp_path, HEADER + rec(1, 0, 10, 12) + "\n")
    w = read_swf(p, machine_size=10)
    assert w.machine_size == 10 and w.procs.tolist() == [10]
    assert w.report.patched["procs clipped to machine size"] == 1
    with pytest.raises(ValueError, match="positive"):
        read_swf(p, machine_size=0)


def test_no_machine_size_is_an_error(tmp_path):
    p = write(tmp_path, "; Version: 2\n" + rec(1, 0, 10, 4) + "\n")
    with pytest.raises(SWFFormatError, match="MaxProcs or MaxNodes") as ei:
        read_swf(p)
    assert ei.value.path == str(p) and ei.value.line is None
    assert read_swf(p, machine_size=4).machine_size == 4


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("1 2 3", "expected 18 fields, found 3"),
        (rec(2, 0, 10, 4) + " 7", "expected 18 fields, found 19"),
        (rec(2, 0, 10, 4).replace(" 10 ", " ten ", 1), r"field 4 \(run time\) is not a number"),
        (rec(2, 0, 10, 4).replace(" 10 ", " nan ", 1), "not finite"),
        (rec(2, 0, 10, 4).replace(" 4 ", " 2.5 ", 1), "must be an integer"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, bad, match):
    text = HEADER + rec(1, 0, 10, 4) + "\n\n" + bad + "\n" + rec(3, 5, 10, 4) + "\n"
    p = write(tmp_path, text)
    with pytest.raises(SWFFormatError, match=match) as ei:
        read_swf(p)
    assert ei.value.line == 7  # 4 header lines, 1 record, 1 blank line
    assert ei.value.path == str(p)
    assert f"{p}:7:" in str(ei.value)
    assert isinstance(ei.value, ValueError)

    w = read_swf(p, lenient=True)
    assert w.report.skipped_malformed == 1
    assert w.job_id.tolist() == [1, 3]
    assert w.report.records == 2


def test_first_bad_line_is_reported(tmp_path):
    frac = rec(2, 0, 10, 4).replace(" 4 ", " 2.5 ", 1)
    text = HEADER + rec(1, 0, 10, 4) + "\n" + frac + "\n" + "1 2 3\n"
    with pytest.raises(SWFFormatError, match="must be an integer") as ei:
        read_swf(write(tmp_path, text))
    assert ei.value.line == 6
    w = read_swf(write(tmp_path, text), lenient=True)
    assert w.report.skipped_malformed == 2 and w.job_id.tolist() == [1]


@pytest.mark.parametrize("lenient_path", [False, True])
def test_number_spellings(tmp_path, lenient_path):
    line = rec(1, 0, 10, 4, 4, 20).split()
    line[1], line[3], line[8], line[5] = "+5.", ".5", "1e2", "-3.0E-1"
    text = HEADER + " ".join(line) + "\n"
    if lenient_path:  # force the line-by-line path with a bad line
        text += "x\n"
    w = read_swf(write(tmp_path, text), lenient=lenient_path)
    assert (w.submit[0], w.runtime[0], w.request[0]) == (5.0, 0.5, 100.0)
    bad = text.replace("1e2", "1e400")
    with pytest.raises(SWFFormatError, match="not finite"):
        read_swf(write(tmp_path, bad))


def test_malformed_line_in_gzip_names_line(tmp_path):
    p = write(tmp_path, HEADER + rec(1, 0, 10, 4) + "\n1 2\n", name="t.swf.gz")
    with pytest.raises(SWFFormatError) as ei:
        read_swf(p)
    assert ei.value.line == 6


def test_truncated_gzip(tmp_path):
    data = gzip.compress((HEADER + (rec(1, 0, 10, 4) + "\n") * 2000).encode())
    p = tmp_path / "cut.swf.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(SWFFormatError, match="truncated gzip"):
        read_swf(p)


def test_corrupt_gzip(tmp_path):
    p = tmp_path / "bad.swf.gz"
    p.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(SWFFormatError, match="gzip"):
        read_swf(p)


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_empty_file(tmp_path, content):
    p = tmp_path / "empty.swf"
    p.write_bytes(content)
    with pytest.raises(SWFFormatError, match="empty file"):
        read_swf(p)


def test_header_only_file(tmp_path):
    p = write(tmp_path, HEADER)
    with pytest.raises(SWFFormatError, match="no job lines"):
        read_swf(p)


def test_all_lines_malformed_lenient(tmp_path):
    p = write(tmp_path, HEADER + "1 2 3\n")
    with pytest.raises(SWFFormatError, match=r"no job lines \(1 malformed"):
        read_swf(p, lenient=True)


def test_nothing_left_after_cleaning(tmp_path):
    p = write(tmp_path, HEADER + rec(1, 0, 0, 4) + "\n")
    with pytest.raises(SWFFormatError, match="no job left after cleaning"):
        read_swf(p)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_swf(tmp_path / "nope.swf")


def test_crlf_and_trailing_comment(tmp_path):
    text = HEADER.replace("\n", "\r\n") + rec(1, 0, 10, 4) + " ; note\r\n"
    w = read_swf(write(tmp_path, text))
    assert w.machine_size == 16 and len(w) == 1


def test_plain_and_gzip_identical(tmp_path):
    text = HEADER + "\n".join(rec(i, i * 10, 5 + i, 1 + i % 4, -1, 60) for i in range(50))
    a = read_swf(write(tmp_path, text, "x.swf"))
    b = read_swf(write(tmp_path, text, "x.swf.gz"))
    for col in ("job_id", "submit", "runtime", "procs", "request"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))
    assert b.name == "x"


# ------------------------------------------------------------------------- writer
def _workload() -> Workload:
    rng = np.random.default_rng(3)
    n = 200
    runtime = rng.integers(1, 5000, n).astype(float)
    runtime[:5] += 0.5
    return Workload(
        name="w",
        machine_size=64,
        job_id=np.arange(1, n + 1),
        submit=np.cumsum(rng.integers(0, 100, n)).astype(float),
        runtime=runtime,
        procs=rng.integers(1, 65, n),
        request=runtime * 2,
        user=rng.integers(0, 5, n),
        group=np.full(n, -1),
        executable=rng.integers(0, 9, n),
        queue=rng.integers(0, 2, n),
        meta={"UnixStartTime": "835823160", "Note": "a\nb"},
    )


@pytest.mark.parametrize("name", ["out.swf", "out.swf.gz"])
def test_write_read_roundtrip(tmp_path, name):
    w = _workload()
    p = write_swf(w, tmp_path / name)
    assert p == tmp_path / name
    r = read_swf(p)
    assert r.machine_size == 64 and len(r) == len(w)
    for col in ("job_id", "submit", "runtime", "procs", "request", "user", "group"):
        np.testing.assert_array_equal(getattr(r, col), getattr(w, col), err_msg=col)
    np.testing.assert_array_equal(r.executable, w.executable)
    np.testing.assert_array_equal(r.queue, w.queue)
    assert all(v == 0 for v in r.report.patched.values())
    assert all(v == 0 for v in r.report.dropped.values())
    assert r.meta["MaxProcs"] == "64" and r.meta["MaxNodes"] == "64"
    assert r.meta["MaxJobs"] == str(len(w))
    assert r.meta["UnixStartTime"] == "835823160" and r.meta["Note"].endswith("a\nb")
    assert not list(tmp_path.glob(".*"))  # no temporary file left


def test_write_format_and_deterministic_gzip(tmp_path):
    w = _workload()
    a = write_swf(w, tmp_path / "a.swf.gz").read_bytes()
    b = write_swf(w, tmp_path / "b.swf.gz").read_bytes()
    assert a == b and a[:2] == b"\x1f\x8b"
    lines = gzip.decompress(a).decode().splitlines()
    job = [ln for ln in lines if not ln.startswith(";")]
    assert len(job) == len(w)
    fields = job[0].split()
    assert len(fields) == 18
    assert (
        fields[2] == "-1"
        and fields[7] == "-1"
        and fields[10] == "1"
        and fields[15:]
        == [
            "-1",
            "-1",
            "-1",
        ]
    )


# ---------------------------------------------------------------- real traces
# (name, kept jobs, machine size) as stated in the specification (docs/workloads.md)
REAL = [
    ("SDSC-SP2", 54_034, 128),
    ("HPC2N", 202_871, 240),
    ("CTC-SP2", 77_205, 338),
    ("KTH-SP2", 28_467, 100),
    ("SDSC-BLUE", 232_536, 1_152),
    ("LANL-CM5", 122_055, 1_024),
    ("CEA-Curie", 295_540, 93_312),
    ("Lublin-1", 10_000, 256),
    ("Lublin-2", 10_000, 256),
]


@pytest.mark.traces
@pytest.mark.parametrize(("name", "jobs", "size"), REAL, ids=[r[0] for r in REAL])
def test_real_trace_counts(name, jobs, size):
    w = read_swf(require_trace(name))
    assert w.machine_size == size
    assert len(w) == jobs
    r = w.report
    assert r.kept == jobs and r.records == jobs + sum(r.dropped.values())
    assert r.skipped_malformed == 0
    assert np.all(np.diff(w.submit) >= 0)
    assert w.procs.min() >= 1 and w.procs.max() <= size
    assert w.runtime.min() > 0 and np.all(w.request >= w.runtime)


@pytest.mark.traces
def test_hpc2n_requested_memory_aligned():
    w = read_swf(require_trace("HPC2N"))
    win = w.window(100_000, 500)
    raw = workload_fields(win, ["requested memory", "job number"])
    np.testing.assert_array_equal(raw["job number"], win.job_id)
    assert (raw["requested memory"] > 0).mean() > 0.5


@pytest.mark.traces
def test_sdsc_sp2_report_per_rule():
    w = read_swf(require_trace("SDSC-SP2"))
    assert w.report.records == 59_715
    assert w.report.dropped == {"procs <= 0": 0, "runtime <= 0": 5_681, "submit < 0": 0}
    assert w.report.patched == {
        "procs from requested": 0,
        "request from runtime": 35,
        "request raised to runtime": 4_134,
        "procs clipped to machine size": 0,
        "out of submit order": 0,
    }
    assert w.meta["UnixStartTime"] == "893466664"
