"""``hpcgym slurm prioritize``: hpcgym's policies ordering a live Slurm's queue.

The first part feeds the bridge recorded ``squeue`` / ``sinfo`` / ``scontrol`` output
through a fake runner (no Slurm needed): parsing, the order and priorities it sets, what
it never does, faults. The live part (at the end) runs a real Slurm through the test
harness and skips with the reason where none can run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

import numpy as np
import pytest

from hpcgym.cli import main
from hpcgym.envs.queue_observation import QueueFeatures, build_queue
from hpcgym.sim import Event, Simulation
from hpcgym.sim.engine import POLICIES
from hpcgym.sim.ordering import policy_keys, policy_order
from hpcgym.slurm.bridge import (
    DEFAULT_TOP_PRIORITY,
    SQUEUE_FORMAT,
    Bridge,
    CommandResult,
    Machine,
    QueuePolicyOrderer,
    SlurmJob,
    Snapshot,
    parse_duration,
    parse_sinfo,
    parse_squeue,
    parse_time,
    priorities_for,
)
from hpcgym.slurm.bridge_agents import AgentOrderer, make_orderer
from hpcgym.workload import load

QUEUE_POLICIES = [p for p in POLICIES if p not in ("SPF", "LPF")]


# ------------------------------------------------------------------ fake Slurm
def line(jid, state, submit, limit, cpus, prio, user="alice", start="N/A", end="N/A", used="0:00"):
    reason = "Priority" if state == "PENDING" else "None"
    return (
        f"{jid}|{state}|{user}|{submit}|{start}|{end}|{limit}|{cpus}|{prio}|{used}|{reason}|debug"
    )


class FakeSlurm:
    """A recorded Slurm: ``squeue`` prints ``queue`` (or fails with ``down``), ``sinfo``
    prints ``cpus``; ``scontrol update`` answers from ``update`` (job id -> result) and
    records every call."""

    def __init__(self, queue: list[str], cpus: str = "n1|0/16/0/16") -> None:
        self.queue = queue
        self.cpus = cpus
        self.down = False
        self.update: dict[str, CommandResult] = {}
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        self.calls.append(argv)
        if self.down:
            return CommandResult(1, "", "slurm_load_jobs error: Unable to contact slurm controller")
        if argv[0] == "squeue":
            return CommandResult(0, "\n".join(self.queue) + "\n")
        if argv[0] == "sinfo":
            return CommandResult(0, self.cpus + "\n")
        if argv[:2] == ["scontrol", "update"]:
            jid = argv[2].split("=", 1)[1]
            return self.update.get(jid, CommandResult(0))
        raise AssertionError(f"unexpected command {argv}")

    def updates(self) -> dict[str, int]:
        return {
            c[2].split("=")[1]: int(c[3].split("=")[1])
            for c in self.calls
            if c[:2] == ["scontrol", "update"]
        }


T0 = 1_800_000_000


def small_queue() -> list[str]:
    return [
        line(10, "RUNNING", T0 - 50, "10:00", 8, 5, start=T0 - 40, used="0:40"),
        line(11, "PENDING", T0 - 30, "1:00:00", 4, 4294901750),
        line(12, "PENDING", T0 - 20, "5:00", 8, 4294901749),
        line(13, "PENDING", T0 - 10, "20:00", 1, 4294901748, user="bob"),
        line(14, "PENDING", T0 - 5, "1-00:00:00", 2, 0),  # held: never touched
    ]


# ------------------------------------------------------------------- parsing
def test_parse_times_and_durations():
    assert parse_time("1800000000") == 1_800_000_000.0
    assert parse_time("N/A") is None and parse_time("Unknown") is None
    assert parse_time("2026-01-02T03:04:05") == pytest.approx(
        __import__("datetime").datetime(2026, 1, 2, 3, 4, 5).timestamp()
    )
    assert parse_duration("5:00") == 300.0
    assert parse_duration("1:00:00") == 3600.0
    assert parse_duration("2-03:04:05") == ((2 * 24 + 3) * 60 + 4) * 60 + 5
    assert parse_duration("UNLIMITED") is None
    assert parse_duration("30") == 1800.0  # minutes alone
    with pytest.raises(ValueError):
        parse_duration("1:2:3:4")


def test_parse_squeue_reports_bad_lines_with_their_number():
    text = "\n".join([small_queue()[1], "garbage", line(20, "PENDING", "soon", "5:00", 1, 3)])
    jobs, bad = parse_squeue(text, "rec")
    assert [j.job_id for j in jobs] == ["11"]
    assert bad[0].startswith("rec:2: 1 fields") and bad[1].startswith("rec:3:")
    assert SQUEUE_FORMAT.count("|") == 11


def test_parse_sinfo():
    assert parse_sinfo("n1|4/12/0/16\n") == Machine(4, 12, 0, 16)
    # n1 is in two partitions: counted once
    assert parse_sinfo("n1|1/1/0/2\nn2|3/3/2/8\nn1|1/1/0/2") == Machine(4, 4, 2, 10)
    assert parse_sinfo("1/1/0/2\n3/3/2/8") == Machine(4, 4, 2, 10)
    with pytest.raises(RuntimeError):
        parse_sinfo("idle")


# ------------------------------------------------------------ the ordering
def _queue_state(wl, policy):
    """The simulation of ``wl`` at its queue decisions (at least 3 waiting jobs)."""
    sim = Simulation(wl, "external", "easy", rest_order=policy)
    while (ev := sim.advance()) != Event.DONE:
        if ev == Event.QUEUE:
            yield sim
            sim.choose(int(sim.policy_order(policy)[0]))


@pytest.mark.parametrize("policy", QUEUE_POLICIES)
def test_public_policy_order_is_the_engines(policy):
    """:func:`policy_order` on plain arrays gives the engine's own order, at every queue
    decision of a simulation: the bridge orders a live queue with the engine's keys."""
    wl = load("synthetic", n_jobs=120, seed=5)
    checked = 0
    for sim in _queue_state(wl, policy):
        v = sim.view
        w = v.waiting()
        mine = w[policy_order(policy, v.submit[w], v.procs[w], v.estimate[w], v.now)]
        np.testing.assert_array_equal(mine, sim.policy_order(policy))
        checked += 1
    assert checked > 5


def test_policy_order_starvation_and_errors():
    submit = np.array([0.0, 10.0, 20.0])
    keys = policy_keys("SAF", submit, np.array([4, 1, 2]), np.array([10.0, 10.0, 10.0]), 30.0)
    np.testing.assert_array_equal(keys, [40.0, 10.0, 20.0])
    order = policy_order("SAF", submit, np.array([4, 1, 2]), np.ones(3) * 10, 30.0)
    np.testing.assert_array_equal(order, [1, 2, 0])
    starving = policy_order("SAF", submit, np.array([4, 1, 2]), np.ones(3) * 10, 30.0, 15.0)
    np.testing.assert_array_equal(starving, [0, 1, 2])  # jobs 0, 1 waited > 15 s: FCFS first
    with pytest.raises(ValueError, match="valid choices"):
        policy_order("nope", submit, np.ones(3), np.ones(3), 0.0)
    with pytest.raises(ValueError, match="one length"):
        policy_order("SAF", submit, np.ones(2), np.ones(3), 0.0)


def _decreasing_in_range(prio: dict[str, int], order: list[str], top: int, span: int) -> None:
    values = [prio[j] for j in order]
    assert all(a > b for a, b in zip(values, values[1:], strict=False)), values
    assert all(top - span + 1 < v <= top for v in values), values


def test_priorities_descend_and_stay_positive():
    assert priorities_for(["a", "b", "c"], 10, span=10) == {"a": 9, "b": 6, "c": 4}
    with pytest.raises(ValueError, match=">= 1"):
        priorities_for(["a", "b"], 1, span=1)
    with pytest.raises(ValueError, match="largest"):
        priorities_for(["a"], 2**32)


def test_priorities_change_as_little_as_the_order_does():
    top, span = 1000, 100
    first = priorities_for(list("abcde"), top, None, span)
    _decreasing_in_range(first, list("abcde"), top, span)
    # the head started: nothing changes
    assert priorities_for(list("bcde"), top, first, span) == {j: first[j] for j in "bcde"}
    # a new job at the front, and one in the middle: one new value each
    for order in (list("xbcde"), list("bcxde"), list("bcdex")):
        new = priorities_for(order, top, first, span)
        _decreasing_in_range(new, order, top, span)
        assert {j for j in order if new[j] != first.get(j)} == {"x"}
    # two jobs swap: one of them moves
    swapped = priorities_for(list("bacde"), top, first, span)
    _decreasing_in_range(swapped, list("bacde"), top, span)
    assert sum(swapped[j] != first[j] for j in "abcde") == 1
    # no room between two neighbours: every job is spread again
    tight = {"a": 950, "b": 949}
    again = priorities_for(["a", "x", "b"], top, tight, span)
    _decreasing_in_range(again, ["a", "x", "b"], top, span)
    rng = np.random.default_rng(0)
    for _ in range(200):  # any order, any current priorities: valid, and kept ones kept
        jobs = [str(i) for i in range(int(rng.integers(1, 30)))]
        cur = {j: int(rng.integers(850, 1100)) for j in jobs if rng.random() < 0.7}
        order = list(rng.permutation(jobs))
        got = priorities_for(order, top, cur, span)
        _decreasing_in_range(got, order, top, span)


# --------------------------------------------------------------- the bridge
def test_saf_pass_sets_priorities_in_policy_order_and_skips_held_jobs(tmp_path):
    slurm = FakeSlurm(small_queue())
    log = tmp_path / "log.jsonl"
    with Bridge(QueuePolicyOrderer("SAF"), slurm, log=log, clock=lambda: T0) as b:
        rec = b.pass_once()
    # SAF = limit x CPUs: 13 (1200 s x 1), 12 (300 s x 8), 11 (3600 s x 4); 14 is held
    assert rec["order"] == ["13", "12", "11"]
    assert rec["held"] == ["14"]
    assert list(slurm.updates()) == ["13", "12", "11"]
    _decreasing_in_range(slurm.updates(), ["13", "12", "11"], DEFAULT_TOP_PRIORITY, 65000)
    assert rec["priorities"] == slurm.updates() and rec["set"] == ["13", "12", "11"]
    for c in slurm.calls:  # only reads, and priority updates of pending, unheld jobs
        assert c[0] in ("squeue", "sinfo") or (
            c[:2] == ["scontrol", "update"] and c[3].startswith("priority=") and len(c) == 4
        )
    logged = [json.loads(x) for x in log.read_text().splitlines()]
    assert logged == [rec]
    assert logged[0]["pending"] == ["11", "12", "13", "14"] and logged[0]["running"] == 1


def test_unchanged_priorities_are_not_set_again():
    slurm = FakeSlurm(small_queue())
    b = Bridge(QueuePolicyOrderer("SAF"), slurm, clock=lambda: T0)
    first = b.pass_once()["priorities"]
    slurm.queue = [
        q.replace("|4294901748|", f"|{first['13']}|")
        .replace("|4294901749|", f"|{first['12']}|")
        .replace("|4294901750|", f"|{first['11']}|")
        for q in small_queue()
    ]
    slurm.calls.clear()
    rec = b.pass_once()
    assert rec["set"] == [] and slurm.updates() == {}


def test_beyond_max_jobs_a_job_ranked_before_goes_last():
    slurm = FakeSlurm(small_queue())
    b = Bridge(QueuePolicyOrderer("SAF"), slurm, max_jobs=2, clock=lambda: T0)
    top = DEFAULT_TOP_PRIORITY
    slurm.queue = [q.replace("|4294901750|", f"|{top - 5}|") for q in small_queue()]
    rec = b.pass_once()  # 11 (ranked by an earlier pass) falls beyond the first two
    assert rec["order"] == ["13", "12"]
    assert (
        rec["priorities"]["11"]
        == top - 65000 + 1
        < min(rec["priorities"][j] for j in "13 12".split())
    )
    assert set(rec["set"]) == {"13", "12", "11"}


def test_dry_run_prints_and_sets_nothing():
    slurm = FakeSlurm(small_queue())
    out = io.StringIO()
    rec = Bridge(
        QueuePolicyOrderer("SAF"), slurm, dry_run=True, out=out, clock=lambda: T0
    ).pass_once()
    assert slurm.updates() == {}
    assert rec["set"] == ["13", "12", "11"]
    p = rec["priorities"]
    assert f"13={p['13']}, 12={p['12']}, 11={p['11']}" in out.getvalue()


def test_a_job_gone_during_the_pass_is_not_an_error():
    slurm = FakeSlurm(small_queue())
    slurm.update["12"] = CommandResult(1, "", "slurm_update error: Invalid job id specified")
    rec = Bridge(QueuePolicyOrderer("SAF"), slurm, clock=lambda: T0).pass_once()
    assert rec["gone"] == ["12"] and rec["set"] == ["13", "11"] and rec["errors"] == []


def test_controller_away_is_logged_and_retried_at_the_next_pass():
    slurm = FakeSlurm(small_queue())
    warned: list[str] = []
    b = Bridge(QueuePolicyOrderer("SAF"), slurm, clock=lambda: T0, warn=warned.append)
    slurm.down = True
    rec = b.pass_once()
    assert "Unable to contact slurm controller" in rec["errors"][0] and "order" not in rec
    assert warned and "retrying" in warned[0]
    # the controller fails in the middle of a pass: the rest of the pass is left
    slurm.down = False
    slurm.update["13"] = CommandResult(
        1, "", "Unable to contact slurm controller (connect failure)"
    )
    rec = b.pass_once()
    assert rec["set"] == [] and len(rec["errors"]) == 1 and list(slurm.updates()) == ["13"]
    slurm.update.clear()
    rec = b.pass_once()
    assert rec["set"] == ["13", "12", "11"] and rec["errors"] == []


def test_f2_reads_submit_times_from_the_origin():
    q = QueuePolicyOrderer("F2")
    snap = Snapshot(T0, *_jobs(), Machine(0, 16, 0, 16))
    q.order(snap)
    assert q.origin == T0 - 50  # the earliest submit time listed at the first pass
    pinned = QueuePolicyOrderer("F2", origin=0.0)
    pinned.order(snap)
    assert pinned.origin == 0.0


def _jobs():
    jobs, bad = parse_squeue("\n".join(small_queue()))
    assert not bad
    pending = [j for j in jobs if j.state == "PENDING"]
    running = [j for j in jobs if j.state == "RUNNING"]
    return pending, running, []


# ------------------------------------------------------------------ agents
class RowZero:
    """A Schedule-v0 agent that picks row 0 and keeps the observations it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []

    def predict(self, obs, action_masks=None, deterministic=True, **_):
        self.seen.append((obs.copy(), action_masks.copy()))
        return np.array(0), None


def _snapshot_of(sim: Simulation) -> Snapshot:
    """The simulation's state as a live Slurm would show it."""
    v, wl = sim.view, sim.workload

    def job(j: int, state: str, **kw) -> SlurmJob:
        base = dict(
            job_id=str(j),
            state=state,
            user=str(wl.user[j]),
            submit=float(wl.submit[j]),
            start=None,
            end=None,
            limit=float(wl.request[j]),
            cpus=int(wl.procs[j]),
            priority=1,
            used=0.0,
            reason="None",
            partition="p",
        )
        return SlurmJob(**{**base, **kw})

    pending = [job(int(j), "PENDING") for j in v.waiting()]
    running = [
        job(int(j), "RUNNING", start=float(v.start[j])) for j in v.running_buffer[: v.n_running]
    ]
    finished = [
        job(
            int(j),
            "COMPLETED",
            start=float(v.start[j]),
            end=float(v.start[j] + wl.runtime[j]),
            used=float(wl.runtime[j]),
        )
        for j in v.finished()
    ]
    return Snapshot(v.now, pending, running, finished, Machine(0, v.free, 0, v.machine_size))


@pytest.mark.parametrize("time_scale", ["linear", "log"])
def test_agent_sees_the_rows_of_schedule_v0(time_scale):
    """The rows an agent is shown for a live queue are the env's rows for the same state."""
    wl = load("synthetic", n_jobs=150, seed=9)
    tau = 10.0 if time_scale == "log" else 0.0
    scale = float(wl.request.max())
    compared = 0
    for sim in _queue_state(wl, "SAF"):
        if sim.view.n_waiting < 3:
            continue
        qf = QueueFeatures(wl.user, wl.runtime, wl.request)
        order = sim.policy_order("SAF")
        want, mask, rows, _ = build_queue(
            sim.view, order, len(order), qf, scale, scale, 16, None, tau
        )
        agent = RowZero()
        orderer = AgentOrderer(agent, "row0", "SAF", scale, scale, time_scale, 16)
        got_order = orderer.order(_snapshot_of(sim))
        got, got_mask = agent.seen[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got_mask, mask)
        # always row 0: the SAF order itself
        assert got_order == [str(int(j)) for j in order]
        assert orderer.last_choices[0] == {
            "job": str(int(order[0])),
            "row": 0,
            "candidates": len(order),
        }
        compared += 1
        if compared == 6:
            break
    assert compared == 6


def test_agent_choices_order_the_queue_and_are_logged():
    class LastRow:
        def predict(self, obs, action_masks=None, deterministic=True):
            return np.array(int(np.flatnonzero(action_masks)[-1])), None

    slurm = FakeSlurm(small_queue(), cpus="n1|8/8/0/16")
    b = Bridge(AgentOrderer(LastRow(), "last", "SAF"), slurm, clock=lambda: T0)
    rec = b.pass_once()
    # rows in SAF order 13, 12, 11; the last row (11: 4 CPUs) fits in 8 idle and starts,
    # then 12 (8 CPUs) is chosen, does not fit in the 4 left: 13 follows in SAF order
    assert rec["order"] == ["11", "12", "13"]
    assert [c["job"] for c in rec["choices"]] == ["11", "12"]
    assert rec["choices"][0] == {"job": "11", "row": 2, "candidates": 3}


def test_a_schedule_v0_model_card_orders_a_live_queue(tmp_path):
    """A real Schedule-v0 model (MaskablePPO, through its card and the installed agent
    loader): the rank prior always picks row 0, so it orders the queue as its card's row
    policy does."""
    from train.card import card_from_run
    from train.ppo import main as train

    train(["--task", "schedule", "--seq-len", "48", "--n-envs", "1", "--eval-windows", "1",
           "--eval-length", "64", "--no-progress", "--logdir", str(tmp_path), "--total-steps",
           "0", "--row-prior", "rank=-5", "--run-name", "prior"])  # fmt: skip
    card = card_from_run(tmp_path / "prior", model="final")
    path = tmp_path / "prior.json"
    path.write_text(json.dumps({**card.to_dict(), "model": str(card.model)}))
    orderer = make_orderer(str(path))
    assert isinstance(orderer, AgentOrderer) and orderer.rows.policy == card.data["policy"]
    queue = small_queue() + [
        line(20 + k, "PENDING", T0 - 4 + k, f"{k + 1}:00", k % 3 + 1, 9) for k in range(4)
    ]
    rec = Bridge(orderer, FakeSlurm(queue, cpus="n1|8/8/0/16"), clock=lambda: T0).pass_once()
    want = QueuePolicyOrderer(card.data["policy"]).order(
        Snapshot(T0, *_jobs_of(queue), Machine(8, 8, 0, 16))
    )
    assert rec["order"] == want and rec["errors"] == []
    assert rec["choices"] and all(c["row"] == 0 for c in rec["choices"])


def _jobs_of(queue: list[str]):
    jobs, _ = parse_squeue("\n".join(queue))
    pending = sorted((j for j in jobs if j.state == "PENDING"), key=lambda j: j.sort_key)
    return pending, [j for j in jobs if j.state == "RUNNING"], []


def test_a_starving_job_is_the_head_without_asking_the_agent():
    class LastRow:
        def predict(self, obs, action_masks=None, deterministic=True):
            return np.array(int(np.flatnonzero(action_masks)[-1])), None

    slurm = FakeSlurm(small_queue(), cpus="n1|8/8/0/16")
    orderer = AgentOrderer(LastRow(), "last", "SAF", starvation=25.0)
    rec = Bridge(orderer, slurm, clock=lambda: T0).pass_once()
    # 11 waited 30 s > 25 s: the head, no question; it fits (4 of 8 CPUs) and starts; the
    # agent then picks the last row of [13, 12]: 12 (8 CPUs) does not fit, 13 follows
    assert rec["order"] == ["11", "12", "13"]
    assert rec["choices"] == [
        {"job": "11", "forced": "starvation"},
        {"job": "12", "row": 1, "candidates": 2},
    ]


def test_make_orderer_kinds(tmp_path, monkeypatch):
    assert isinstance(make_orderer("saf"), QueuePolicyOrderer)
    notes: list[str] = []
    zoo = make_orderer("lublin1-sjf", notice=notes.append)
    assert isinstance(zoo, QueuePolicyOrderer) and zoo.policy == "SJF"
    assert "Backfill-v0 agent" in notes[0] and "SJF" in zoo.name
    agent = make_orderer("first", order="SAF")
    assert isinstance(agent, AgentOrderer) and agent.rows.policy == "SAF"
    with pytest.raises(ValueError, match="valid|queue policy"):
        make_orderer("no-such-agent")
    with pytest.raises(ValueError, match="an agent's option"):
        make_orderer("SAF", order="FCFS")
    assert make_orderer("random", starvation=60.0).starvation == 60.0
    model = tmp_path / "x.zip"
    model.touch()
    backfill_model = _Spaces((16, 13), 17)  # Backfill-v0: K rows + STOP
    with pytest.raises(ValueError, match="not a Schedule-v0 agent"):
        make_orderer(str(model), loader=lambda s: backfill_model)
    schedule = make_orderer(str(model), loader=lambda s: _Spaces((32, 16), 32))
    assert isinstance(schedule, AgentOrderer) and schedule.max_queue == 32


class _Spaces:
    def __init__(self, shape, n):
        self.observation_space = type("B", (), {"shape": shape})()
        self.action_space = type("D", (), {"n": n})()


def test_cli_runs_the_slurm_commands_on_path(tmp_path, monkeypatch, capsys):
    """``hpcgym slurm prioritize`` end to end through the real command runner, with
    recorded ``squeue``/``sinfo`` and a ``scontrol`` that records its arguments on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "queue.txt").write_text("\n".join(small_queue()) + "\n")
    calls = tmp_path / "calls.txt"
    scripts = {
        "squeue": f'[ "$SLURM_TIME_FORMAT" = "%s" ] || exit 3\ncat {tmp_path / "queue.txt"}',
        "sinfo": "echo 'n1|8/8/0/16'",
        "scontrol": f'echo "$@" >> {calls}',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "log.jsonl"
    argv = ["slurm", "prioritize", "--policy", "SAF", "--passes", "1", "--log", str(log)]
    assert main([*argv, "--dry-run"]) == 0
    assert not calls.exists() and "13=" in capsys.readouterr().out
    assert main(argv) == 0
    updates = [c.split() for c in calls.read_text().splitlines()]
    assert [u[1] for u in updates] == ["jobid=13", "jobid=12", "jobid=11"]
    assert all(u[0] == "update" and u[2].startswith("priority=") for u in updates)
    assert [r["dry_run"] for r in _records(log)] == [True, False]


def test_cli_errors_are_one_line(capsys):
    assert main(["slurm", "prioritize", "--policy", "nope", "--passes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SAF" in err[0]
    assert main(["slurm", "prioritize", "--policy", "SAF", "--order", "xx"]) == 2


# ================================================================ live Slurm
# A real Slurm on this host through the test harness (hpcgym.slurm.harness.LocalSlurm);
# the bridge runs as `python -m hpcgym slurm prioritize` beside it, as a site runs it.
def _why_no_slurm() -> str | None:
    try:
        from hpcgym.slurm.harness import slurm_unavailable
    except ImportError:
        return "the Slurm test harness hpcgym.slurm.harness is not installed"
    return slurm_unavailable()


WHY_NO_SLURM = _why_no_slurm()
needs_slurm = pytest.mark.skipif(WHY_NO_SLURM is not None, reason=f"no live Slurm: {WHY_NO_SLURM}")


def _records(log) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]


def _wait(ok, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def bridge_process(slurm, log, *args: str):
    """``hpcgym slurm prioritize`` beside ``slurm`` (interval 1 s), stopped by its PID."""
    err = open(log.with_suffix(".err"), "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hpcgym",
            "slurm",
            "prioritize",
            "--interval",
            "1",
            "--log",
            str(log),
            *args,
        ],
        env=slurm.env,
        stdout=err,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: _records(log) or proc.poll() is not None, "the bridge's first pass", 120)
        assert proc.poll() is None, log.with_suffix(".err").read_text()
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        err.close()


def _workload(n: int, seed: int, cpus: int, wide: bool = False):
    """``n`` jobs that all queue at time 0: a few seconds of sleep, 1-4 minute limits, on
    up to half the CPUs (``wide``: on more than half, so that they run one at a time)."""
    from hpcgym.workload.core import Workload

    rng = np.random.default_rng(seed)
    runtime = rng.integers(2, 5 if wide else 9, n).astype(np.float64)
    request = rng.integers(1, 5, n) * 60.0
    procs = rng.integers(cpus // 2 + 1, cpus + 1, n) if wide else rng.integers(1, cpus // 2 + 1, n)
    minus = -np.ones(n, dtype=np.int64)
    return Workload(
        "bridge-live",
        cpus,
        np.arange(1, n + 1),
        np.zeros(n),
        runtime,
        procs,
        request,
        rng.integers(1, 4, n),
        minus,
        minus,
        minus,
    )


@needs_slurm
def test_live_saf_schedule_is_hpcgyms(tmp_path):
    """With SAF, the live Slurm starts a small workload in the order hpcgym's engine does
    under the conformance configuration (the same jobs, Slurm's own limits and run times),
    which is not the order Slurm starts them in by itself."""
    import inspect

    from hpcgym.slurm import conformance
    from hpcgym.slurm.harness import EASY_SCHEDULER_PARAMETERS, LocalSlurm

    backfill = inspect.signature(conformance.compare).parameters["scheduler"].default
    # jobs on more than half the node run one at a time: Slurm's start order is then its
    # priority order, with no start decided by a second's difference in a run time (with
    # narrower jobs, a backfill start can hinge on which of two jobs ended a second first),
    # and one node behaves as the conformance setup's one node per processor
    wl = _workload(12, seed=4, cpus=16, wide=True)
    log = tmp_path / "saf.jsonl"
    conf = LocalSlurm(cpus=16, scheduler_parameters=EASY_SCHEDULER_PARAMETERS)
    with conf as slurm, bridge_process(slurm, log, "--policy", "SAF"):
        res = slurm.replay(wl, time_scale=1.0, lead=8.0)
    assert res.complete and set(res.state) == {"COMPLETED"}
    cmp = conformance.compare(res, f"SAF+{backfill}")
    # the check can fail: Slurm's own (FIFO) order would start these jobs differently
    fifo = conformance.replay_scheduler(backfill, res).simulate(conformance.engine_workload(res))
    fifo = fifo.start
    assert not np.array_equal(
        np.argsort(fifo, kind="stable"), np.argsort(cmp.engine_start, kind="stable")
    )
    # the start order is the robust check (the engine's starts drift by the scheduling
    # latency it adds to every job; the order does not)
    assert cmp.in_order.all(), (cmp.summary(), res.start, cmp.engine_start)
    recs = _records(log)
    ids = [str(int(i)) for i in res.slurm_ids]
    ordered = [r for r in recs if sorted(r.get("order", [])) == sorted(ids)]
    assert ordered and not any(r["errors"] for r in recs)
    # SAF's order of the 12 jobs = the engine's SAF keys on Slurm's limits
    want = policy_order("SAF", np.zeros(12), wl.procs, res.workload.request, 0.0)
    assert ordered[0]["order"] == [ids[i] for i in want]


@needs_slurm
def test_live_agents_run_and_log_their_choices(tmp_path):
    """A Schedule-v0 agent (through the agent loader) and a zoo agent order a live queue;
    the log shows the agent's choices; every job completes."""
    from hpcgym.slurm.harness import LocalSlurm

    with LocalSlurm(cpus=8) as slurm:
        log = tmp_path / "random.jsonl"
        with bridge_process(slurm, log, "--policy", "random"):
            res = slurm.replay(_workload(8, seed=1, cpus=8), time_scale=1.0, lead=8.0)
        assert res.complete and set(res.state) == {"COMPLETED"}
        recs = _records(log)
        assert recs and not any(r["errors"] for r in recs)
        chose = [c for r in recs for c in r.get("choices", [])]
        assert chose and all({"job", "row", "candidates"} <= set(c) for c in chose)
        assert all(c["job"] in r["pending"] for r in recs for c in r.get("choices", []))

        zlog = tmp_path / "zoo.jsonl"
        with bridge_process(slurm, zlog, "--policy", "lublin1-sjf"):
            res = slurm.replay(_workload(6, seed=2, cpus=8), time_scale=1.0, lead=8.0)
        assert res.complete and set(res.state) == {"COMPLETED"}
        zrecs = _records(zlog)
        assert zrecs[0]["policy"] == "SJF (queue policy of the Backfill-v0 agent lublin1-sjf)"
        assert not any(r["errors"] for r in zrecs) and any(r.get("set") for r in zrecs)
        assert "Backfill-v0 agent" in zlog.with_suffix(".err").read_text()


@needs_slurm
def test_live_faults_lose_no_job(tmp_path):
    """slurmctld is stopped and restarted under the bridge, a job is cancelled during its
    passes, then the bridge itself is killed: every other job completes, none is lost."""
    from hpcgym.slurm.harness import LocalSlurm

    log = tmp_path / "faults.jsonl"
    with LocalSlurm(cpus=8) as slurm:
        ids: list[int] = []
        with bridge_process(slurm, log, "--policy", "SAF") as bridge:
            rng = np.random.default_rng(3)
            for _ in range(10):
                ids.append(
                    slurm.sbatch(
                        float(rng.integers(3, 7)),
                        int(rng.integers(2, 6)),
                        time_limit_min=int(rng.integers(1, 4)),
                    )
                )
            _wait(lambda: any(len(r.get("order", [])) >= 3 for r in _records(log)), "an order")
            # the last job of the bridge's order: still pending (10 jobs of 2-5 CPUs, 8 CPUs)
            cancelled = int(
                [r for r in _records(log) if len(r.get("order", [])) >= 3][-1]["order"][-1]
            )
            slurm.run(["scancel", str(cancelled)])
            # slurmctld goes away (stopped by its PID) while the bridge runs...
            pid = slurm.pids["slurmctld"]
            os.kill(pid, signal.SIGTERM)
            _wait(lambda: "slurmctld" not in slurm.pids, "slurmctld to stop")
            n = len(_records(log))
            _wait(lambda: any(r["errors"] for r in _records(log)[n:]), "a failed pass", 90)
            ids.append(-1)  # placeholder: a job submitted after the restart
            # ...and comes back (the harness's own command line; it waits for the controller)
            slurm.restart("slurmctld")
            assert slurm.run(["scontrol", "ping"], check=False).returncode == 0
            ids[-1] = slurm.sbatch(4.0, 3, time_limit_min=1)
            n = len(_records(log))
            _wait(
                lambda: any(not r["errors"] and "order" in r for r in _records(log)[n:]),
                "a pass after the restart",
                90,
            )
            # the bridge is killed (no clean exit)
            os.kill(bridge.pid, signal.SIGKILL)
            bridge.wait(timeout=10)
        ids.append(slurm.sbatch(2.0, 8, time_limit_min=1))  # Slurm's own order from here
        want = set(ids)
        _wait(lambda: want <= {r.job_id for r in slurm.jobcomp()}, "every job to end", 180)
        state = {r.job_id: r.state for r in slurm.jobcomp()}
    assert state[cancelled] == "CANCELLED"
    assert all(state[i] == "COMPLETED" for i in want - {cancelled}), state
    recs = _records(log)
    assert any(r["errors"] for r in recs) and any(r.get("set") for r in recs)
