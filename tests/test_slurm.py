"""The private Slurm harness (hpcgym.slurm): records, configuration, a live replay.

The live tests start a real Slurm (munge, slurmctld, slurmd; MariaDB and slurmdbd for
sacct) and skip with the reason where that cannot run (not root, binaries missing).
Each live test replays a handful of jobs of a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hpcgym.slurm import LocalSlurm, SlurmUnavailable, host, parse_jobcomp, parse_sacct
from hpcgym.slurm import harness as H
from hpcgym.slurm.conformance import anchored, classify, compare, engine_workload, order_conforming
from hpcgym.slurm.records import parse_limit, parse_time
from hpcgym.workload.core import Workload

JOBCOMP = (
    "JobId=7 UserId=root(0) GroupId=root(0) Name=r0 JobState=COMPLETED Partition=batch "
    "TimeLimit=2 StartTime=2026-12-07T13:01:02 EndTime=2026-12-07T13:01:10 NodeList=vm "
    "NodeCnt=1 ProcCnt=4 WorkDir=/tmp/a b ReservationName= Tres=cpu=4,mem=1M,node=1 "
    "Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-12-07T13:00:40 "
    "EligibleTime=2026-12-07T13:01:00 DerivedExitCode=0:0 ExitCode=0:0 \n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _toy(n: int = 12, m: int = 8, seed: int = 1) -> Workload:
    rng = np.random.default_rng(seed)
    z = np.zeros(n, dtype=np.int64)
    return Workload(
        "toy",
        m,
        np.arange(1, n + 1),
        np.sort(rng.integers(0, 16, n)).astype(float),
        rng.integers(2, 8, n).astype(float),
        rng.integers(1, m + 1, n),
        rng.integers(1, 3, n) * 60.0,
        z,
        z,
        z,
        z,
    )


# ---------------------------------------------------------------- without Slurm
def test_jobcomp_record_is_read(tmp_path: Path) -> None:
    log = tmp_path / "jobcomp.txt"
    log.write_text(JOBCOMP)
    (r,) = parse_jobcomp(log)
    assert (r.job_id, r.name, r.state, r.cpus, r.time_limit_min) == (7, "r0", "COMPLETED", 4, 2)
    assert r.end - r.start == 8
    assert r.start - r.eligible == 2 and r.eligible - r.submit == 20
    assert (r.record.partition, r.record.memory_mb, r.record.line) == ("batch", 1.0, 1)
    assert r.start == parse_time("2026-12-07T13:01:02") == 1796648462.0  # read as UTC


def test_bad_jobcomp_line_names_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "jobcomp.txt"
    log.write_text(JOBCOMP + "\nthis is not a record\n")
    with pytest.raises(ValueError, match=r"jobcomp.txt:3: malformed jobcomp line"):
        parse_jobcomp(log)


def test_sacct_output_is_read_without_steps() -> None:
    text = (
        "JobIDRaw|JobName|State|Submit|Eligible|Start|End|Timelimit|NCPUS\n"
        "1|hpcgym|COMPLETED|2026-12-07T13:00:16|2026-12-07T13:00:16|2026-12-07T13:00:16|"
        "2026-12-07T13:00:17|00:01:00|2\n"
        "1.batch|batch|COMPLETED|2026-12-07T13:00:16|2026-12-07T13:00:16|2026-12-07T13:00:16|"
        "2026-12-07T13:00:17||2\n"
        "2|x|CANCELLED by 0|2026-12-07T13:00:16|Unknown|None|2026-12-07T13:00:20|UNLIMITED|4\n"
    )
    a, b = parse_sacct(text)
    assert (a.job_id, a.time_limit_min, a.end - a.start) == (1, 1, 1)
    assert (b.state, b.start, b.eligible, b.time_limit_min) == ("CANCELLED", None, None, None)
    with pytest.raises(ValueError, match=r"<sacct>:2: .*expected 9 .*found 2"):
        parse_sacct(text.splitlines()[0] + "\n1|x\n")
    with pytest.raises(ValueError, match=r"<sacct>:1: the sacct header lacks Submit"):
        parse_sacct("JobIDRaw|State|End|NCPUS|Start\n1|x|Unknown|1|Unknown\n")


def test_limits_round_up_to_whole_minutes() -> None:
    assert parse_limit("00:01:00") == 1
    assert parse_limit("00:01:01") == 2
    assert parse_limit("1-00:00:00") == 1440
    assert parse_limit("5") == 5
    assert parse_limit("UNLIMITED") is None


def test_order_conforming_blames_the_job_that_moved() -> None:
    a = np.array([0.0, 10.0, 10.0, 30.0])
    assert order_conforming(a, a + 1.0, 2.0).all()
    b = np.array([0.0, 12.0, 9.0, 30.0])  # 1 and 2 swap, but by no more than tol
    assert order_conforming(a, b, 2.0).all()
    b = np.array([0.0, 40.0, 10.0, 30.0])  # 1 moves past 3; 3 did not move
    assert order_conforming(a, b, 2.0).tolist() == [True, False, True, True]
    b = np.array([0.0, 20.0, 10.0, 15.0])  # 1 (+10) and 3 (-15) cross: 3 moved more
    assert order_conforming(a, b, 2.0).tolist() == [True, True, True, False]


def test_unavailable_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(H.os, "geteuid", lambda: 1000)
    assert "root" in H.slurm_unavailable()
    monkeypatch.setattr(H.os, "geteuid", lambda: 0)
    # the programs are looked up where slurm_unavailable lives (hpcgym.slurm.host)
    monkeypatch.setattr(host, "which", lambda name: None if name == "slurmd" else "/bin/true")
    why = H.slurm_unavailable()
    assert why is not None and "slurmd" in why and "apt-get install" in why
    with pytest.raises(SlurmUnavailable, match="slurmd"):
        LocalSlurm(cpus=4).start()
    with pytest.raises(ValueError, match="accounting"):
        LocalSlurm(accounting="mysql")


def test_configuration_is_private(tmp_path: Path) -> None:
    s = LocalSlurm(cpus=64, workdir=tmp_path, extra_conf=["DebugFlags=Backfill"])
    s.dir = tmp_path
    (tmp_path / "etc").mkdir()
    s.ports = {"slurmctld": 40001, "slurmd0": 40002}
    s.cluster = "c"
    s._write_conf()
    conf = s.conf.read_text()
    for line in (
        "SlurmdParameters=config_overrides",
        f"NodeName={s.hostname} NodeAddr=127.0.0.1 CPUs=64 State=UNKNOWN",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "PriorityType=priority/basic",
        "SlurmctldPort=40001",
        f"AuthInfo=socket={tmp_path}/munge/munge.socket",
        "DebugFlags=Backfill",
    ):
        assert line in conf.splitlines(), line
    assert "bf_interval=1" in conf and "bf_resolution=1" in conf
    assert str(tmp_path) in s.env["SLURM_CONF"] and s.env["TZ"] == "UTC"
    # one node per core: one slurmd each, on its own port
    s = LocalSlurm(cpus=4, nodes=4)
    s.dir = tmp_path
    s.ports = {"slurmctld": 40001, **{f"slurmd{i}": 40010 + i for i in range(4)}}
    s._write_conf()
    nodes = [ln for ln in s.conf.read_text().splitlines() if ln.startswith("NodeName=")]
    assert s.node_names == ["n1", "n2", "n3", "n4"]
    assert nodes[3] == (
        f"NodeName=n4 NodeHostname={s.hostname} NodeAddr=127.0.0.1 Port=40013 CPUs=1 State=UNKNOWN"
    )
    with pytest.raises(ValueError, match="divide"):
        LocalSlurm(cpus=6, nodes=4)


# ---------------------------------------------------------------- a live Slurm
def _need(accounting: str = "jobcomp") -> None:
    why = H.slurm_unavailable(accounting)
    if why is not None:
        pytest.skip(why)


def test_daemons_are_stopped_by_pid_also_on_error() -> None:
    _need()
    pids: dict[str, int] = {}
    workdir: Path | None = None
    with pytest.raises(RuntimeError, match="boom"), LocalSlurm(cpus=4) as s:
        pids = dict(s.pids)
        workdir = s.dir
        assert set(pids) == {"munged", "slurmctld", "slurmd"}
        assert s.run(["sinfo", "-h", "-o", "%c"]).stdout.strip() == "4"
        raise RuntimeError("boom")
    assert pids and not any(_alive(p) for p in pids.values())
    assert workdir is not None and not workdir.exists()


def test_daemons_stop_when_the_process_that_started_them_is_killed() -> None:
    """A script or test killed outright (SIGKILL, a time-out) never runs the context
    manager's exit; its daemons must stop all the same (they get SIGTERM when it dies)."""
    _need()
    code = (
        "import sys, time\n"
        "from hpcgym.slurm import LocalSlurm\n"
        "s = LocalSlurm(cpus=2).__enter__()\n"
        "print(' '.join(str(p) for p in s.pids.values()), flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 3 and all(_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 30
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_running(p) for p in pids)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit status may wait for a reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _our_processes(workdir: Path) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if str(workdir).encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_a_daemon_behind_a_forking_launcher_is_stopped_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launcher that forks (``faketime``, a shell script) hides the daemon from the child
    process the harness started; the daemon's own PID file finds it."""
    _need()
    real = H.which("slurmd")
    wrapper = tmp_path / "slurmd"
    wrapper.write_text(f'#!/bin/sh\n{real} "$@"\nexit $?\n')  # sh forks, then waits
    wrapper.chmod(0o755)
    which = H.which
    monkeypatch.setattr(H, "which", lambda n: str(wrapper) if n == "slurmd" else which(n))
    with LocalSlurm(cpus=2) as s:
        workdir = s.dir
        assert len(_our_processes(workdir)) >= 4  # munged, slurmctld, sh, slurmd
    assert _our_processes(workdir) == []


def test_slurmctld_restart_keeps_the_jobs() -> None:
    _need()
    with LocalSlurm(cpus=2) as s:
        running = s.sbatch(30.0, 2)
        pending = s.sbatch(5.0, 1)
        deadline = time.monotonic() + 20
        while s.pending_ids() != [pending] and time.monotonic() < deadline:
            time.sleep(0.5)  # until the first one runs
        old = s.pids["slurmctld"]
        s.restart("slurmctld")  # SIGTERM: slurmctld saves its state as it stops
        assert s.pids["slurmctld"] != old and not _alive(old)
        assert set(s.queue_ids()) == {running, pending}
        assert s.pending_ids() == [pending]
        with pytest.raises(H.SlurmError, match="no daemon"):
            s.restart("slurmxyz")


def test_replay_on_one_node_per_core_runs_every_job_in_conservative_order() -> None:
    _need()
    wl = _toy()
    t = time.monotonic()
    with LocalSlurm(cpus=8, nodes=8) as s:  # one node per core, as the conformance bench
        res = s.replay(wl, time_scale=1.0, lead=3.0, margin=1.0)
    assert time.monotonic() - t < 180
    assert res.complete and set(res.state) == {"COMPLETED"}
    assert list(res.slurm_ids) == sorted(res.slurm_ids)  # submitted in row order (FIFO)
    assert np.all(res.start >= res.workload.submit)
    assert np.array_equal(res.workload.request, np.array([60.0, 120.0])[(wl.request > 60) * 1])
    assert np.array_equal(res.submit, res.workload.submit)  # --begin to the second
    # the cores in use never exceed the node
    ev = sorted(
        [(a, p) for a, p in zip(res.start, wl.procs, strict=True)]
        + [(b, -p) for b, p in zip(res.end, wl.procs, strict=True)],
        key=lambda x: (x[0], x[1]),
    )
    assert max(np.cumsum([p for _, p in ev])) <= 8
    # Slurm's sched/backfill under FIFO priority is conservative backfilling
    c = compare(res, "CONSERVATIVE", latency=0.0, tol=2.0)
    assert c.in_order.mean() >= 0.75, c.summary()
    w = engine_workload(res, latency=0.0)
    assert np.all(w.runtime <= w.request)


def test_sacct_through_slurmdbd() -> None:
    _need("slurmdbd")
    with LocalSlurm(cpus=4, accounting="slurmdbd") as s:
        j = s.sbatch(1.0, 2)
        deadline = time.monotonic() + 60
        recs = []
        while time.monotonic() < deadline:
            recs = [r for r in parse_sacct(s.sacct()) if r.job_id == j and r.end is not None]
            if recs and recs[0].state == "COMPLETED":
                break
            time.sleep(1)
        assert recs and recs[0].state == "COMPLETED" and recs[0].cpus == 2
        assert recs[0].time_limit_min == 1
        pids = dict(s.pids)
        assert {"mariadbd", "slurmdbd"} <= set(pids)
    assert not any(_alive(p) for p in pids.values())


def test_recorded_replay_matches_conservative_best() -> None:
    """A replay recorded with the real Slurm (bench/slurm_conformance.py, HPC2N jobs
    150500-150669, two trace minutes per real second, Slurm's own default: a reservation
    for every pending job): on this window conservative backfilling agrees with Slurm far
    more than EASY or none."""
    from bench.slurm_conformance import load_raw, table

    spec, res = load_raw(Path(__file__).parent / "slurm_replays" / "raw-HPC2N.json")
    assert spec == "HPC2N:150500:170:120" and len(res.workload) == 170
    share = {s: compare(res, s).both.mean() for s in ("CONSERVATIVE", "EASY", "NONE")}
    assert share["CONSERVATIVE"] >= 0.9 > 0.6 > max(share["EASY"], share["NONE"])
    kinds = classify(res, compare(res, "CONSERVATIVE"))
    assert kinds.count("same") == round(170 * share["CONSERVATIVE"])
    # decision by decision, from Slurm's own state: the same, more than without backfilling
    same = {s: anchored(res, s).both.mean() for s in ("CONSERVATIVE", "NONE")}
    assert same["CONSERVATIVE"] >= 0.9 > 0.5 > same["NONE"]
    text = table([(spec, res)], 0.0, 2.0, main="CONSERVATIVE")
    assert "CONSERVATIVE, free-running, every job by kind" in text


def test_recorded_easy_replay_matches_slurm_easy() -> None:
    """A replay recorded with the real Slurm configured for EASY (bench/slurm_conformance.py
    --slurm-config easy: bf_job_part_count_reserve=1,bf_busy_nodes; KTH-SP2 jobs
    14000-14159, two trace minutes per real second): SLURM-EASY, whose reservation is
    planned in Slurm's will-run windows aligned on the replay's clock, agrees with Slurm's
    decisions far more than textbook EASY, and the alignment matters."""
    from dataclasses import replace

    from bench.slurm_conformance import load_raw, matching_scheduler, table
    from hpcgym.sim import get_scheduler
    from hpcgym.slurm.harness import EASY_SCHEDULER_PARAMETERS

    spec, res = load_raw(Path(__file__).parent / "slurm_replays" / "raw-KTH-SP2-easy.json")
    assert spec == "KTH-SP2:14000:160:120" and len(res.workload) == 160
    same = {s: anchored(res, s).both.mean() for s in ("SLURM-EASY", "EASY", "NONE")}
    assert same["SLURM-EASY"] >= 0.98 > 0.93 > same["EASY"] > 0.5 > same["NONE"]
    free = {s: compare(res, s).both.mean() for s in ("SLURM-EASY", "EASY")}
    assert free["SLURM-EASY"] >= 0.95 > 0.8 > free["EASY"]
    unaligned = replace(get_scheduler("SLURM-EASY"), shadow_origin=1.0)
    assert anchored(res, unaligned).both.mean() < same["SLURM-EASY"]
    assert matching_scheduler(EASY_SCHEDULER_PARAMETERS) == "SLURM-EASY"
    text = table([(spec, res)], 0.0, 2.0, main=matching_scheduler(EASY_SCHEDULER_PARAMETERS))
    assert "SLURM-EASY, per decision, the jobs whose decision differs" in text
