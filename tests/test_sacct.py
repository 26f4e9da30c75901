"""Slurm accounting as a workload: sacct exports and jobcomp logs, hand-made edge cases,
file:line errors, the round trip to SWF, the loader's detection and ``traces convert``;
and the accounting of a real Slurm 22.05 (tests/data/slurm/, captured by capture.sh)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from hpcgym.cli import main as hpcgym_main
from hpcgym.workload import clear_cache, load, read_swf, read_swf_fields, write_swf
from hpcgym.workload.sacct import (
    DROP_NEVER_STARTED,
    DROP_NO_LIMIT,
    DROP_REQUEUED,
    DROP_RULES,
    DROP_STEP,
    DROP_UNFINISHED,
    PATCH_PARTITION,
    PATCH_RUNTIME,
    SACCT_COMMAND,
    SACCT_FIELDS,
    AccountingFormatError,
    detect_format,
    parse_duration,
    parse_memory_mb,
    read_accounting,
)
from hpcgym.workload.swf import SWFFormatError

DATA = Path(__file__).resolve().parent / "data" / "slurm"
HEAD = (
    "JobIDRaw|JobID|JobName|User|Account|Partition|Submit|Eligible|Start|End|Timelimit|"
    "NCPUS|NNodes|ReqCPUS|ReqMem|ReqTRES|AllocTRES|State|ExitCode|Elapsed"
)


def row(
    raw: str,
    start: str,
    end: str,
    limit: str = "00:10:00",
    *,
    jobid: str | None = None,
    user: str = "alice",
    account: str = "phys",
    part: str = "debug",
    submit: str = "2026-03-01T10:00:00",
    eligible: str | None = None,
    ncpus: int = 4,
    nnodes: int = 1,
    reqcpus: int | None = None,
    reqmem: str = "",
    reqtres: str = "",
    alloctres: str = "",
    state: str = "COMPLETED",
    elapsed: str = "",
    name: str = "job",
) -> str:
    """One sacct --parsable2 line (times on 2026-03-01 unless a full time is given)."""

    def t(x: str) -> str:
        return x if ("T" in x or x in ("None", "Unknown", "")) else f"2026-03-01T{x}"

    f = [raw, jobid or raw, name, user, account, part, t(submit), t(eligible or submit),
         t(start), t(end), limit, str(ncpus), str(nnodes), str(ncpus if reqcpus is None else
         reqcpus), reqmem, reqtres, alloctres, state, "0:0", elapsed]  # fmt: skip
    return "|".join(f)


def write(tmp_path: Path, lines: list[str], name: str = "acct.txt", header: bool = True) -> Path:
    p = tmp_path / name
    text = "\n".join(([HEAD] if header else []) + lines) + "\n"
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


EDGE = [
    row("100", "10:00:10", "10:01:10", "00:05:00", reqtres="cpu=4,mem=4000M,node=1",
        alloctres="cpu=4,mem=4000M,node=1", elapsed="00:01:00"),  # plain, steps below
    row("100.batch", "10:00:10", "10:01:10", "", jobid="100.batch", name="batch"),
    row("100.extern", "10:00:10", "10:01:10", "", jobid="100.extern", name="extern"),
    row("100.0", "10:00:12", "10:01:00", "", jobid="100.0", name="sleep"),
    # hit its limit: 30 min limit, 30:04 elapsed (KillWait): kept, request raised
    row("101", "10:00:20", "10:30:24", "30", user="bob", account="chem", part="gpu",
        submit="10:00:05", ncpus=8, nnodes=2, alloctres="cpu=8,gres/gpu=2,mem=2G,node=2",
        reqtres="cpu=8,gres/gpu=2,mem=2G,node=2", state="TIMEOUT", elapsed="00:30:04"),
    # an array: two tasks and a pending range cancelled
    row("103", "10:01:00", "10:02:00", "1-00", jobid="102_1", submit="10:00:30"),
    row("104", "10:01:00", "10:03:00", "1-00:30", jobid="102_2", submit="10:00:30"),
    row("102", "None", "10:05:00", "1-00:30:15", jobid="102_[3-9]", submit="10:00:30",
        ncpus=0, state="CANCELLED by 1000"),
    # requeued: the first run (REQUEUED), then the final one
    row("105", "10:01:00", "10:02:00", "10:00", submit="10:00:40", state="REQUEUED",
        elapsed="00:01:00"),
    row("105", "10:03:00", "10:05:00", "10:00", submit="10:00:40", elapsed="00:02:00"),
    row("106", "None", "10:10:00", "5", submit="10:00:50", ncpus=0, state="CANCELLED by 0"),
    row("107", "10:02:00", "10:04:00", "UNLIMITED", part="long", submit="10:00:55"),
    row("108", "10:02:00", "10:06:00", "Partition_Limit", part="long", submit="10:00:56"),
    row("109", "10:03:00", "Unknown", "5", submit="10:00:57", state="RUNNING"),
    row("110", "Unknown", "Unknown", "5", submit="10:00:58", ncpus=0, state="PENDING"),
    row("111", "10:03:00", "10:03:30", "5", submit="10:01:00", state="FAILED"),
    row("112", "10:03:00", "10:04:30", "5", submit="10:01:01", state="NODE_FAIL"),
    row("113", "10:03:00", "10:03:40", "5", submit="10:01:02", ncpus=2, reqmem="100Mc",
        state="OUT_OF_MEMORY"),
    row("114", "10:03:00", "10:04:00", "2:30", submit="10:01:03", nnodes=2, reqmem="2Gn"),
    row("115", "10:03:00", "10:04:00", "5", submit="09:59:00"),  # out of submit order
    row("116", "10:03:00", "10:04:00", "5", submit="10:01:05", ncpus=0, reqcpus=2),
    row("117", "10:04:00", "10:04:00", "5", submit="10:01:06", state="CANCELLED by 0"),
]  # fmt: skip


def test_edge_cases_each_rule(tmp_path):
    w = read_accounting(write(tmp_path, EDGE), machine_size=16)
    r = w.report
    assert r.records == len(EDGE) == r.kept + sum(r.dropped.values())
    assert list(r.dropped) == list(DROP_RULES)
    assert r.dropped == {
        DROP_STEP: 3,
        DROP_REQUEUED: 1,
        DROP_UNFINISHED: 2,
        DROP_NEVER_STARTED: 2,
        "runtime <= 0": 1,
        "procs <= 0": 0,
        DROP_NO_LIMIT: 0,
    }
    assert r.patched[PATCH_RUNTIME] == 2 and r.patched[PATCH_PARTITION] == 0
    assert r.patched["procs from requested"] == 1
    assert r.patched["request raised to runtime"] == 1  # the TIMEOUT job's 4 s over
    assert r.patched["out of submit order"] == 1
    assert r.counted["TIMEOUT (hit its time limit; run time = elapsed)"] == 1
    for state in ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY"):
        assert r.counted[state] == 1
    assert r.counted["array tasks"] == 2
    assert r.counted["requeued jobs (final run kept)"] == 1
    assert r.counted["with GPUs"] == 1
    # submit order: 115 (09:59) first; submit times relative to it
    ids = list(w.job_id)
    assert ids[0] == 115 and set(ids) == {100, 101, 103, 104, 105, 107, 108, 111, 112, 113,
                                          114, 115, 116}  # fmt: skip
    j = {int(i): k for k, i in enumerate(w.job_id)}
    assert w.submit[j[115]] == 0 and w.submit[j[100]] == 60
    assert int(w.meta["UnixStartTime"]) == 1772359140  # 2026-03-01T09:59:00Z
    assert w.runtime[j[101]] == 1804 and w.request[j[101]] == 1804
    assert w.runtime[j[100]] == 60 and w.request[j[100]] == 300 and w.procs[j[100]] == 4
    assert w.recorded_wait[j[100]] == 10 and w.recorded_wait[j[101]] == 15
    assert w.request[j[103]] == 86400 and w.request[j[104]] == 86400 + 1800
    assert w.runtime[j[105]] == 120  # the final run, from its own start
    assert w.request[j[107]] == w.runtime[j[107]] == 120  # UNLIMITED: request = runtime
    assert w.request[j[114]] == 150  # MM:SS
    assert w.procs[j[116]] == 2  # NCPUS 0: ReqCPUS
    # memory (MiB of the whole job) and GPUs kept as extra columns
    mem, gpus = w.extra["memory_mb"], w.extra["gpus"]
    assert mem[j[100]] == 4000 and mem[j[101]] == 2048 and gpus[j[101]] == 2
    assert mem[j[113]] == 200 and mem[j[114]] == 4096 and np.isnan(mem[j[115]])
    assert list(w.extra["status"][[j[100], j[101], j[111]]]) == [1, 0, 0]
    # ids by first appearance in submit order; partitions named in meta
    assert w.user[j[115]] == 1 and w.user[j[101]] == 2 and w.group[j[101]] == 2
    assert w.meta["Partitions"] == "1=debug 2=gpu 3=long"
    assert w.queue[j[107]] == 3 and w.machine_size == 16


def test_partition_limits_and_drop_policy(tmp_path):
    p = write(tmp_path, EDGE)
    w = read_accounting(p, partition_limits={"long": "1-00:00:00"})
    j = {int(i): k for k, i in enumerate(w.job_id)}
    assert w.request[j[107]] == w.request[j[108]] == 86400
    assert w.report.patched[PATCH_PARTITION] == 2 and w.report.patched[PATCH_RUNTIME] == 0
    w = read_accounting(p, partition_limits={"*": 3600})
    assert w.request[list(w.job_id).index(107)] == 3600
    w = read_accounting(p, unlimited="drop")
    assert w.report.dropped[DROP_NO_LIMIT] == 2 and 107 not in w.job_id
    with pytest.raises(ValueError, match="valid: runtime, drop"):
        read_accounting(p, unlimited="zero")
    with pytest.raises(ValueError, match="partition_limits"):
        read_accounting(p, partition_limits={"long": 0})
    with pytest.raises(ValueError, match="arrival='start': valid: submit, eligible"):
        read_accounting(p, arrival="start")
    with pytest.raises(ValueError, match="format='csv': valid: swf, sacct, jobcomp"):
        load(p, format="csv")
    with pytest.raises(TypeError, match="valid for files and traces: lenient, download, url"):
        load(p, timezone="UTC")


def test_machine_size_inferred_from_peak(tmp_path):
    lines = [
        row("1", "10:00:00", "10:10:00", ncpus=4),
        row("2", "10:05:00", "10:15:00", ncpus=6),
        row("3", "10:10:00", "10:20:00", ncpus=8),  # starts as job 1 ends: peak 14, not 18
    ]
    w = read_accounting(write(tmp_path, lines))
    assert w.machine_size == 14 and "peak" in w.meta["MachineSizeSource"]
    w = read_accounting(write(tmp_path, lines), machine_size=6)
    assert w.report.patched["procs clipped to machine size"] == 1 and w.procs.max() == 6


def test_arrival_eligible(tmp_path):
    lines = [
        row("1", "10:00:30", "10:01:00", submit="10:00:00"),
        row("2", "11:00:00", "11:01:00", submit="10:00:10", eligible="10:59:00"),
    ]
    p = write(tmp_path, lines)
    w = read_accounting(p)
    assert list(w.submit) == [0, 10] and w.recorded_wait[1] == 3590
    assert w.report.counted["eligible later than submitted (--begin, dependency, hold)"] == 1
    w = read_accounting(p, arrival="eligible")
    assert list(w.submit) == [0, 3540] and w.recorded_wait[1] == 60


def test_time_zones(tmp_path):
    # Berlin switches to summer time at 02:00 on 2026-03-29: 01:30 -> 03:30 is one hour
    lines = [row("1", "2026-03-29T03:30:00", "2026-03-29T03:40:00",
                 submit="2026-03-29T01:30:00")]  # fmt: skip
    p = write(tmp_path, lines)
    utc = read_accounting(p)
    berlin = read_accounting(p, tz="Europe/Berlin")
    assert utc.recorded_wait[0] == 7200 and berlin.recorded_wait[0] == 3600
    assert int(utc.meta["UnixStartTime"]) - int(berlin.meta["UnixStartTime"]) == 3600
    assert berlin.meta["TimeZoneString"] == "Europe/Berlin"
    plus = read_accounting(p, tz="+01:00")
    assert plus.meta["UnixStartTime"] == berlin.meta["UnixStartTime"]
    assert read_accounting(p, tz="-0500").meta["UnixStartTime"] == str(
        int(utc.meta["UnixStartTime"]) + 5 * 3600
    )
    with pytest.raises(ValueError, match="unknown time zone; valid: UTC, local"):
        read_accounting(p, tz="Mars/Olympus")


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("5", 300),
        ("5:30", 330),
        ("01:02:03", 3723),
        ("2-03", 2 * 86400 + 3 * 3600),
        ("2-03:04", 2 * 86400 + 3 * 3600 + 240),
        ("2-03:04:05", 2 * 86400 + 3 * 3600 + 245),
        ("0-00:00:30", 30),
    ],
)
def test_duration_formats(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1:2:3:4", "x", "1-", "-5", "1.5"])
def test_duration_rejects(text):
    with pytest.raises(ValueError, match="valid: MM, MM:SS, HH:MM:SS, D-HH"):
        parse_duration(text)


def test_memory_sizes():
    assert parse_memory_mb("4000M") == 4000 and parse_memory_mb("2G") == 2048
    assert parse_memory_mb("512K") == 0.5 and parse_memory_mb("1T") == 1024**2
    assert parse_memory_mb("100") == 100
    assert parse_memory_mb("100Mc", cpus=4) == 400 and parse_memory_mb("2Gn", nodes=3) == 6144
    assert np.isnan(parse_memory_mb("100Mc")) and np.isnan(parse_memory_mb(""))
    with pytest.raises(ValueError, match="not a memory size"):
        parse_memory_mb("lots")


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "bad, match",
    [
        (row("7", "10:00:00", "10:01:00").rsplit("|", 2)[0], "expected 20 '|'-separated"),
        (row("7", "yesterday", "10:01:00"), "not a time: '2026-03-01Tyesterday'"),
        (row("7", "10:00:00", "10:01:00", "forever"), "not a Slurm duration: 'forever'"),
        (row("x7", "10:00:00", "10:01:00"), "JobIDRaw is not a job id"),
        (row("7", "10:00:00", "10:01:00", reqmem="lots"), "not a memory size"),
        (row("7", "10:00:00", "10:01:00").replace("|4|1|4|", "|four|1|4|"), "NCPUS is not"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, bad, match):
    p = write(tmp_path, [row("1", "10:00:00", "10:01:00"), bad, row("8", "10:00", "10:01")])
    with pytest.raises(AccountingFormatError, match=match) as exc:
        read_accounting(p)
    assert exc.value.line == 3 and str(exc.value).startswith(f"{p}:3: malformed sacct line")
    assert isinstance(exc.value, SWFFormatError)
    w = read_accounting(p, lenient=True)
    assert w.report.skipped_malformed == 1 and list(w.job_id) == [1, 8]


def test_header_errors(tmp_path):
    p = tmp_path / "noheader.txt"
    p.write_text(row("1", "10:00:00", "10:01:00") + "\n")
    assert detect_format(p) == "sacct"
    with pytest.raises(AccountingFormatError, match="header lacks .*export with: sacct"):
        read_accounting(p)
    p.write_text("JobIDRaw|State|Start\n1|COMPLETED|2026-03-01T10:00:00\n")
    with pytest.raises(AccountingFormatError, match=r":1: the sacct header lacks Submit, End"):
        read_accounting(p)
    p = write(tmp_path, [row("1", "None", "10:01:00", state="CANCELLED")])
    with pytest.raises(AccountingFormatError, match="no job left after cleaning"):
        read_accounting(p)


def test_job_name_with_bars(tmp_path):
    p = write(
        tmp_path, [row("1", "10:00:00", "10:01:00", name="a|b|c"), row("2", "10:00", "10:02")]
    )
    w = read_accounting(p)
    assert list(w.job_id) == [1, 2] and w.executable[0] != w.executable[1]


def test_several_clusters_refused(tmp_path):
    p = tmp_path / "two.txt"
    lines = [row("1", "10:00:00", "10:01:00") + "|alpha", row("1", "10:00", "10:02") + "|beta"]
    p.write_text(HEAD + "|Cluster\n" + "\n".join(lines) + "\n")
    with pytest.raises(AccountingFormatError, match=r"2 clusters \(alpha, beta\); export one"):
        read_accounting(p)
    p.write_text(HEAD + "|Cluster\n" + lines[0] + "\n")
    assert len(read_accounting(p)) == 1


def test_parsable_trailing_bar_and_repeated_header(tmp_path):
    lines = [row("1", "10:00:00", "10:01:00") + "|", HEAD + "|", row("2", "10:00", "10:02") + "|"]
    p = tmp_path / "p.txt"
    p.write_text(HEAD + "|\n" + "\n".join(lines) + "\n")
    assert list(read_accounting(p).job_id) == [1, 2]


# ------------------------------------------------------------------ jobcomp
def jc(job, state, start, end, *, limit="10", cpus=4, nodes=1, submit=None, extra="", name="w"):
    return (
        f"JobId={job} UserId=alice(1000) GroupId=users(100) Name={name} JobState={state} "
        f"Partition=debug TimeLimit={limit} StartTime=2026-03-01T{start} "
        f"EndTime=2026-03-01T{end} NodeList=n1 NodeCnt={nodes} ProcCnt={cpus} WorkDir=/home/a b "
        f"ReservationName= Tres=cpu={cpus},mem=1G,node=1,billing={cpus},gres/gpu=1 "
        f"Account=phys QOS=normal WcKey= Cluster=c SubmitTime=2026-03-01T{submit or start} "
        f"EligibleTime=2026-03-01T{submit or start}{extra} DerivedExitCode=0:0 ExitCode=0:0 "
    )


def test_jobcomp_log(tmp_path):
    lines = [
        jc(1, "COMPLETED", "10:00:10", "10:01:10", submit="10:00:00", name="my job"),
        jc(2, "TIMEOUT", "10:00:10", "10:11:40", submit="10:00:01"),
        jc(3, "CANCELLED", "10:02:00", "10:02:00", nodes=0, submit="10:00:02"),  # pending
        jc(4, "NODE_FAIL", "10:01:00", "10:02:00", submit="10:00:03"),  # then requeued:
        jc(4, "COMPLETED", "10:03:00", "10:05:00", submit="10:00:03"),
        jc(5, "COMPLETED", "10:03:00", "10:04:00", limit="UNLIMITED", submit="10:00:04",
           extra=" ArrayJobId=5 ArrayTaskId=0"),
        # a log of an older Slurm: nothing after WorkDir (no submit time)
        "JobId=6 UserId=bob(1001) GroupId=users(100) Name=x JobState=COMPLETED Partition=debug "
        "TimeLimit=2 StartTime=2026-03-01T10:04:00 EndTime=2026-03-01T10:05:00 NodeList=n1 "
        "NodeCnt=1 ProcCnt=2 WorkDir=/tmp",
    ]  # fmt: skip
    p = tmp_path / "jobcomp.log"
    p.write_text("\n".join(lines) + "\n")
    assert detect_format(p) == "jobcomp"
    w = read_accounting(p, machine_size=8)
    r = w.report
    assert r.records == 7 and r.kept == 5
    assert r.dropped[DROP_NEVER_STARTED] == 1 and r.dropped[DROP_REQUEUED] == 1
    assert r.patched["submit from start (no submit time)"] == 1 and r.patched[PATCH_RUNTIME] == 1
    assert r.counted["array tasks"] == 1 and r.counted["requeued jobs (final run kept)"] == 1
    assert list(w.job_id) == [1, 2, 4, 5, 6]
    assert list(w.runtime) == [60, 690, 120, 60, 60]
    assert list(w.request) == [600, 690, 600, 60, 120]  # TIMEOUT: raised to the elapsed
    assert w.extra["gpus"][0] == 1 and w.extra["memory_mb"][0] == 1024
    assert list(w.user) == [1, 1, 1, 1, 2]
    bad = tmp_path / "bad.log"
    bad.write_text(lines[0] + "\nJobID 7 is not a record\n")
    with pytest.raises(AccountingFormatError, match=r"bad.log:2: malformed jobcomp line"):
        read_accounting(bad, format="jobcomp")
    bad.write_text(lines[0] + "\n" + lines[1].replace("ProcCnt=4", "ProcCnt=many") + "\n")
    with pytest.raises(AccountingFormatError, match=r":2: .*ProcCnt is not an integer"):
        read_accounting(bad)
    w = read_accounting(bad, lenient=True)
    assert w.report.skipped_malformed == 1 and list(w.job_id) == [1]


# ------------------------------------------------------------------ loading and SWF
def test_load_detects_and_round_trips_to_swf(tmp_path):
    clear_cache()
    p = write(tmp_path, EDGE, name="site.sacct.gz")
    assert detect_format(p) == "sacct"
    w = load(p, machine_size=16)
    direct = read_accounting(p, machine_size=16)
    np.testing.assert_array_equal(w.job_id, direct.job_id)
    assert w.name == "site" and not w.extra["gpus"].flags.writeable
    assert load(p, tz="Europe/Berlin").meta["TimeZoneString"] == "Europe/Berlin"
    win = w.window(2, 3)
    np.testing.assert_array_equal(win.extra["gpus"], w.extra["gpus"][2:5])
    out = tmp_path / "site.swf"
    assert hpcgym_main(["traces", "convert", str(p), str(out), "--machine-size", "16"]) == 0
    back = read_swf(out)
    for col in ("job_id", "submit", "runtime", "procs", "request", "user", "group", "queue"):
        np.testing.assert_array_equal(getattr(back, col), getattr(w, col), err_msg=col)
    np.testing.assert_array_equal(back.recorded_wait, w.recorded_wait)
    raw = read_swf_fields(out, ["requested memory", "status"])
    kb = w.extra["memory_mb"] * 1024 / w.procs
    np.testing.assert_array_equal(raw["requested memory"], np.where(np.isnan(kb), -1, kb))
    np.testing.assert_array_equal(raw["status"], w.extra["status"])
    head = out.read_text().split("\n1")[0]
    assert "converted from Slurm accounting (sacct)" in head and "cleaning report:" in head
    assert f"dropped  {DROP_STEP}: 3" in head and "TimeZoneString: UTC" in head


def test_swf_options_refused_and_swf_still_loads(tmp_path):
    clear_cache()
    p = tmp_path / "t.swf"
    p.write_text("; Note: a|b\n; MaxProcs: 8\n1 0 -1 100 4 -1 -1 4 200 -1 1 3 1 1 0 -1 -1 -1\n")
    assert detect_format(p) == "swf" and len(load(p)) == 1
    with pytest.raises(ValueError, match="tz apply to Slurm accounting"):
        load(p, tz="Europe/Berlin")
    with pytest.raises(AccountingFormatError, match="not Slurm accounting"):
        read_accounting(p)


def test_convert_cli_errors_exit_2(tmp_path, capsys):
    p = write(tmp_path, [row("1", "10:00:00", "10:01:00"), "2|2|oops"])
    out = tmp_path / "o.swf"
    assert hpcgym_main(["traces", "convert", str(p), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{p}:3: malformed sacct line" in err[0] and not out.exists()
    assert hpcgym_main(["traces", "convert", str(p), str(out), "--lenient"]) == 0
    capsys.readouterr()
    for argv, msg in (
        (["--tz", "Nowhere/City"], "unknown time zone"),
        (["--partition-limit", "long"], "--partition-limit long: expected PART=LIMIT"),
        (["--partition-limit", "long=soon"], "not a Slurm duration"),
    ):
        assert hpcgym_main(["traces", "convert", str(p), str(out), "--lenient", *argv]) == 2
        assert msg in capsys.readouterr().err
    assert hpcgym_main(["traces", "info", str(p)]) == 2
    assert f"{p}:3:" in capsys.readouterr().err


def test_documented_command_names_the_fields():
    assert all(f in SACCT_COMMAND for f in SACCT_FIELDS) and "--parsable2" in SACCT_COMMAND


# ------------------------------------------------------------------ a real Slurm 22.05
def test_real_sacct_export():
    """tests/data/slurm/sacct.txt: `sacct -P -D` of the jobs of capture.sh on Slurm 22.05."""
    w = load(DATA / "sacct.txt")
    r = w.report
    assert (r.records, r.kept, w.machine_size) == (40, 18, 16)  # the node's 16 CPUs
    assert r.dropped[DROP_STEP] == 21 and r.dropped[DROP_REQUEUED] == 1
    assert r.patched[PATCH_RUNTIME] == 1  # `-p long` without --time: 365-00:00:00
    assert r.counted["TIMEOUT (hit its time limit; run time = elapsed)"] == 1
    assert r.counted["FAILED"] == 1 and r.counted["CANCELLED after it started"] == 2
    assert r.counted["array tasks"] == 7 and r.counted["requeued jobs (final run kept)"] == 1
    j = {int(i): k for k, i in enumerate(w.job_id)}
    assert w.runtime[j[4]] == w.request[j[4]] == 89  # 1-minute limit, killed at 89 s
    assert w.extra["gpus"][j[6]] == 2 and w.extra["memory_mb"][j[3]] == 300  # 3 x 100M
    assert w.submit[j[13]] == 32  # the requeued job's final run arrives at the requeue
    assert w.user[j[8]] != w.user[j[1]] and w.group[j[8]] != w.group[j[1]]  # nobody, chem
    # the same export printed in Berlin time reads to the same workload with tz=
    b = read_accounting(DATA / "sacct-berlin.txt", tz="Europe/Berlin")
    assert b.meta["UnixStartTime"] == w.meta["UnixStartTime"]
    assert read_accounting(DATA / "sacct-berlin.txt").meta["UnixStartTime"] == str(
        int(w.meta["UnixStartTime"]) + 3600
    )
    for col in ("job_id", "submit", "runtime", "procs", "request", "recorded_wait"):
        np.testing.assert_array_equal(getattr(b, col), getattr(w, col))


def test_real_jobcomp_log_matches_sacct():
    """The jobcomp/filetxt log of the same run gives the same jobs as the sacct export."""
    s = load(DATA / "sacct.txt")
    c = load(DATA / "jobcomp.log")
    assert c.report.dropped[DROP_NEVER_STARTED] == 2  # --begin job, pending array range
    assert c.report.dropped[DROP_REQUEUED] == 1  # the first run, logged as PENDING
    a, b = np.argsort(s.job_id), np.argsort(c.job_id)
    for col in ("job_id", "submit", "runtime", "procs", "request", "recorded_wait"):
        np.testing.assert_array_equal(getattr(s, col)[a], getattr(c, col)[b], err_msg=col)
    for col in ("memory_mb", "gpus", "status"):
        np.testing.assert_array_equal(s.extra[col][a], c.extra[col][b], err_msg=col)


def test_real_export_converts_and_simulates(tmp_path, capsys):
    out = tmp_path / "real.swf"
    assert hpcgym_main(["traces", "convert", str(DATA / "jobcomp.log"), str(out)]) == 0
    assert "wrote 18 jobs on 16 processors" in capsys.readouterr().out
    back, w = read_swf(out), load(DATA / "jobcomp.log")
    np.testing.assert_array_equal(back.job_id, w.job_id)
    np.testing.assert_array_equal(back.runtime, w.runtime)
    assert hpcgym_main(["traces", "info", str(DATA / "sacct.txt")]) == 0
    info = capsys.readouterr().out
    assert "counted  TIMEOUT (hit its time limit; run time = elapsed)" in info
    assert f"dropped  {DROP_STEP}" in info and "submit < 0" not in info
    assert "16 processors (peak of CPUs in use at once" in info


def test_env_on_accounting_and_raw_fields_refused():
    import gymnasium as gym

    import hpcgym  # noqa: F401 - registers the envs
    from hpcgym.workload import workload_fields

    env = gym.make(
        "hpcgym/Schedule-v0",
        trace=str(DATA / "sacct-berlin.txt"),
        window_length=5,
        trace_kwargs={"tz": "Europe/Berlin"},
    )
    env.reset(seed=0)
    env.close()
    with pytest.raises(ValueError, match="read from Slurm accounting .* workload.extra"):
        workload_fields(load(DATA / "sacct.txt"), ["status"])


def test_pickled_window_finds_its_past_with_the_same_options(tmp_path):
    import pickle

    from hpcgym.workload import trace_past

    clear_cache()
    lines = [row(str(i), f"10:{i:02d}:00", f"10:{i:02d}:30", "UNLIMITED" if i % 3 else "5",
                 submit=f"10:{i:02d}:00") for i in range(20)]  # fmt: skip
    p = write(tmp_path, lines)
    w = load(p, unlimited="drop", partition_limits={"other": 60}, tz="+02:00")
    assert len(w) == 7  # jobs 0, 3, ..., 18: the others have no limit and are dropped
    win = pickle.loads(pickle.dumps(w.window(3, 2)))
    assert win.parent is None
    past = trace_past(win)
    np.testing.assert_array_equal(past.job_id, w.job_id[:3])
    write_path = tmp_path / "w.swf"
    write_swf(w, write_path)
    assert "ReaderOptions" not in write_path.read_text()
