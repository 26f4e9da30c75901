"""Inspection: the engine's accept/reject decision (hpcgym.sim.inspection) and the
``hpcgym/Inspect-v0`` task built on it.

Engine: always accepting reproduces every queue policy exactly; a reject ends the pass
and waits for the next event (hand-worked cases below); the guard (no verdict without an
event to wait for, a cap on rejections per job); snapshots carry the state. Task: both
checkers on defaults, the spec's spaces and mask, always-accept equals the base policy,
determinism with seeds, the vector env.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.sim import Simulation, simulate
from hpcgym.sim.engine import POLICIES, Event
from hpcgym.workload import load
from hpcgym.workload.core import Workload


def _wl(jobs: list[tuple[float, float, int, float]], m: int) -> Workload:
    """A workload from ``(submit, runtime, procs, request)`` tuples."""
    s, r, p, q = (np.array(c) for c in zip(*jobs, strict=True))
    neg = -np.ones(len(jobs))
    return Workload(
        "case", m, np.arange(len(jobs)), s.astype(float), r.astype(float), p.astype(np.int64),
        q.astype(float), neg, neg, neg, neg,
    )  # fmt: skip


def _drive(sim: Simulation, verdicts: list[bool]) -> list[tuple[float, int]]:
    """Answer the inspection decisions with ``verdicts`` (True = reject), then accept;
    returns ``(time, job)`` of every decision."""
    seen = []
    while (ev := sim.advance()) != Event.DONE:
        assert ev == Event.INSPECT
        seen.append((sim.now, sim.inspected))
        sim.reject() if verdicts and verdicts.pop(0) else sim.accept()
    return seen


# ------------------------------------------------------------------ the engine
@pytest.fixture(scope="module")
def window() -> Workload:
    return load(None).window(0, 192)


@pytest.mark.parametrize("backfill", ["easy", "sjbf", "none"])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_always_accept_is_the_policy(window: Workload, policy: str, backfill: str) -> None:
    base = simulate(window, policy=policy, backfill=backfill, starvation="auto")
    sim = Simulation(window, policy=policy, backfill=backfill, starvation="auto")
    sim.enable_inspection()
    res = sim.run(reject=lambda s: False)
    np.testing.assert_array_equal(res.start, base.start)
    np.testing.assert_array_equal(res.backfilled, base.backfilled)
    assert res.metrics["avg_bsld"] == base.metrics["avg_bsld"]
    # one decision per start of the pick (the backfilled jobs are not inspected), less
    # the forced ones (nothing running, no job left to arrive)
    starts = len(window) - int(base.backfilled.sum())
    assert 0 < res.counters["inspections"] <= starts
    assert res.counters["rejections"] == 0


def test_reject_waits_for_the_next_event() -> None:
    # m=4, FCFS, no backfilling. J0 (4p, 10 s) at 0; J1 (2p) at 5; J2 (2p) at 40.
    # t=0: pick J0 fits, J1 will arrive: asked -> reject: nothing starts, wait.
    # t=5 (J1 arrives): pick J0 again -> accept: J0 starts at 5; J1 does not fit.
    # t=15 (J0 ends): pick J1 fits, J2 will arrive: asked -> accept: starts at 15.
    # t=40: J2 fits, nothing runs, nothing left to arrive: no verdict asked (guard).
    wl = _wl([(0, 10, 4, 10), (5, 10, 2, 10), (40, 10, 2, 10)], 4)
    sim = Simulation(wl, policy="FCFS", backfill="none")
    sim.enable_inspection()
    seen = _drive(sim, [True, False, False])
    assert seen == [(0.0, 0), (5.0, 0), (15.0, 1)]
    res = sim.result()
    np.testing.assert_array_equal(res.start, [5, 15, 40])
    assert res.counters["inspections"] == 3 and res.counters["rejections"] == 1
    np.testing.assert_array_equal(sim.rejections, [1, 0, 0])
    # always accepting: the policy's own schedule, J2 forced again
    sim = Simulation(wl, policy="FCFS", backfill="none")
    sim.enable_inspection()
    assert _drive(sim, []) == [(0.0, 0), (10.0, 1)]
    np.testing.assert_array_equal(sim.result().start, simulate(wl, backfill="none").start)


def test_reject_stops_backfilling_too() -> None:
    # m=4, FCFS + EASY. J0 (3p, 100 s) and J1 (1p, 10 s) at 0, J2 (4p) at 50.
    # t=0: pick J0 -> reject: J1 fits but nothing starts (no backfilling on a reject).
    # t=50 (J2 arrives, the last): J0 starts without a verdict (nothing runs, nothing
    # left to arrive: the guard); J1 fits, J0 runs -> asked, accept (starts 50); J2 does
    # not fit: reserved at 150 (J0's end), nothing to backfill; at 150 J2 starts.
    wl = _wl([(0, 100, 3, 100), (0, 10, 1, 10), (50, 10, 4, 10)], 4)
    sim = Simulation(wl, policy="FCFS", backfill="easy")
    sim.enable_inspection()
    seen = _drive(sim, [True, False])
    assert seen == [(0.0, 0), (50.0, 1)]
    np.testing.assert_array_equal(sim.result().start, [50, 50, 150])
    # accepted, the same jobs: J0 and J1 at 0 (J1 inspected in the same pass)
    sim = Simulation(wl, policy="FCFS", backfill="easy")
    sim.enable_inspection()
    assert _drive(sim, []) == [(0.0, 0), (0.0, 1)]
    np.testing.assert_array_equal(sim.result().start, [0, 0, 100])


def test_rejection_cap() -> None:
    wl = _wl([(0, 10, 4, 10), (5, 10, 2, 10), (40, 10, 2, 10)], 4)
    sim = Simulation(wl, policy="FCFS", backfill="none")
    sim.enable_inspection(max_rejections=1)
    assert sim.max_rejections == 1
    # J0 rejected once at 0: at 5 it starts without a verdict; J1 rejected at 15 waits
    # for J2's arrival (40) and starts then, without a verdict; J2 fits beside it, J1
    # runs: asked, accepted (starts 40)
    seen = _drive(sim, [True, True])
    assert seen == [(0.0, 0), (15.0, 1), (40.0, 2)]
    np.testing.assert_array_equal(sim.result().start, [5, 40, 40])


def test_rejecting_forever_terminates(window: Workload) -> None:
    sim = Simulation(window, policy="SJF", backfill="sjbf")
    sim.enable_inspection(max_rejections=3)
    res = sim.run(reject=lambda s: True)
    assert not np.isnan(res.start).any()
    assert int(sim.rejections.max()) <= 3
    assert res.counters["rejections"] == res.counters["inspections"]


def test_inspection_errors(window: Workload) -> None:
    sim = Simulation(window, policy="FCFS")
    with pytest.raises(RuntimeError, match="inspection decision"):
        sim.accept()
    with pytest.raises(ValueError, match="max_rejections"):
        sim.enable_inspection(max_rejections=0)
    with pytest.raises(ValueError, match="conservative"):
        Simulation(window, backfill="conservative").enable_inspection()
    with pytest.raises(ValueError, match="built-in queue policy"):
        Simulation(window, policy="external").enable_inspection()
    sim.enable_inspection()
    with pytest.raises(RuntimeError, match="reject"):
        sim.run()
    assert sim.inspecting and sim.config["inspect"] == sim.max_rejections


def test_snapshot_and_disable(window: Workload) -> None:
    sim = Simulation(window, policy="WFP3", backfill="easy")
    sim.enable_inspection()
    assert sim.advance() == Event.INSPECT
    snap = sim.snapshot()
    job = sim.inspected
    sim.reject()
    a = sim.run(reject=lambda s: False).start
    sim.restore(snap)
    assert sim.inspected == job
    sim.reject()
    np.testing.assert_array_equal(sim.run(reject=lambda s: False).start, a)
    # disabling after a verdict: the verdict stands, then every pick is accepted
    sim.restore(snap)
    sim.reject()
    sim.disable_inspection()
    np.testing.assert_array_equal(sim.run().start, a)
    # disabling at a pending decision accepts it: the policy's schedule
    sim.restore(snap)
    sim.disable_inspection()
    assert not sim.inspecting
    np.testing.assert_array_equal(
        sim.run().start, simulate(window, policy="WFP3", backfill="easy").start
    )
