"""Snapshots, clones and the lookahead schedulers (LOOKAHEAD-ORACLE, LOOKAHEAD)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import require_trace

from hpcgym.cli import main
from hpcgym.sim import Event, Simulation, get_scheduler
from hpcgym.sim import _core as K
from hpcgym.sim.deciders import EasyDecider
from hpcgym.sim.lookahead import (
    Lookahead,
    LookaheadOracle,
    RuntimeSampler,
    UserHistorySampler,
    bsld,
    parse_horizon,
)
from hpcgym.workload import load
from hpcgym.workload.core import Workload


def synthetic(n: int = 200, seed: int = 1) -> Workload:
    return load("synthetic", n_jobs=n, seed=seed)


def run_to_decision(sim: Simulation, k: int, decide) -> None:
    """Advance ``sim`` to its ``k``-th decision point, answering the earlier ones."""
    seen = 0
    while True:
        ev = sim.advance()
        assert ev == Event.DECISION, "the window has fewer decision points"
        seen += 1
        if seen == k:
            return
        j = decide(sim)
        sim.stop() if j is None else sim.backfill(j)


def finish(sim: Simulation, decide=None) -> np.ndarray:
    return sim.run(decide).start


# ------------------------------------------------------------------ snapshots
@pytest.mark.parametrize(
    "scheduler", ["EASY", "EASY-SJBF", "CONSERVATIVE", "SJF+EASY-AR", "WFP3+EASY", "ELOSS"]
)
def test_pause_snapshot_restore_is_exact(scheduler):
    """Built-in backfillers (and the online E-Loss estimator): pause mid-window, snapshot,
    run on; restoring the snapshot and running again gives bit-identical starts."""
    wl = synthetic(300)
    ref = get_scheduler(scheduler).simulate(wl).start
    sim = get_scheduler(scheduler).make_simulation(wl)
    mid = float(wl.submit[150])
    assert sim.advance(until=mid) == Event.PAUSE
    assert sim.now <= mid and not sim.done
    snap = sim.snapshot()
    clone = sim.clone()
    first = finish(sim)
    assert np.array_equal(first, ref, equal_nan=True)
    sim.restore(snap)
    assert np.array_equal(finish(sim), ref)
    sim.restore(snap)  # a snapshot can be restored again
    assert np.array_equal(finish(sim), ref)
    assert np.array_equal(finish(clone), ref)


@pytest.mark.parametrize("scheduler", ["EASY", "EASY-SJBF", "ELOSS"])
def test_snapshot_at_a_decision_point_mid_pass(scheduler):
    """External backfilling: snapshot at a decision point in the middle of a scheduling
    pass (after a backfill at the same instant), restore, run on: exact."""
    wl = synthetic(300)
    ref = get_scheduler(scheduler).simulate(wl).start
    sim = get_scheduler(scheduler).make_simulation(wl, backfill="external")
    dec = EasyDecider()
    assert np.array_equal(sim.clone().run(dec).start, ref), "external EASY = built-in"
    # find a decision point that follows a backfill at the same instant
    last_t, k = None, 0
    while True:
        assert sim.advance() == Event.DECISION
        k += 1
        if sim.now == last_t and k > 20:
            break
        last_t = sim.now
        sim.backfill(dec(sim))
    snap = sim.snapshot()
    assert np.array_equal(sim.run(dec).start, ref)
    sim.restore(snap)
    assert sim.now == last_t and int(sim.C[K.C_DECISIONS]) == k
    assert np.array_equal(sim.run(dec).start, ref)


def test_snapshot_restores_decider_state():
    """A stateful decider (the seeded online lookahead) is part of the snapshot."""
    wl = synthetic(200, seed=3)
    spec = get_scheduler("LOOKAHEAD,samples=2,k=4,horizon=2h,seed=5")
    ref = spec.simulate(wl).start
    sim = spec.make_simulation(wl)
    run_to_decision(sim, 30, sim.decider)
    snap = sim.snapshot()
    sim.restore(snap)
    assert np.array_equal(sim.run().start, ref)
    sim.restore(snap)
    assert np.array_equal(sim.run().start, ref)


def test_clone_is_independent():
    wl = synthetic(250)
    ref = get_scheduler("EASY-SJBF").simulate(wl).start
    none = get_scheduler("NONE").simulate(wl).start
    sim = get_scheduler("EASY-SJBF").make_simulation(wl, backfill="external")
    dec = EasyDecider()
    run_to_decision(sim, 10, dec)
    c = sim.clone()
    c2 = sim.clone(decider=False)
    # the clone stops backfilling for good: its run differs, the original is untouched
    c.switch(backfill="none")
    other = c.run().start
    assert not np.array_equal(other, ref)
    sim.backfill(dec(sim))
    assert np.array_equal(sim.run(dec).start, ref)
    assert np.array_equal(c2.run(dec).start, ref)
    assert np.all(np.isfinite(other)) and not np.array_equal(other, none)


def test_switch_to_builtin_at_a_decision_point_finishes_the_pass():
    """Handing a decision point to the compiled SJBF equals running SJBF all along."""
    wl = synthetic(250)
    ref = get_scheduler("EASY-SJBF").simulate(wl).start
    sim = get_scheduler("EASY-SJBF").make_simulation(wl, backfill="external")
    dec = EasyDecider()
    run_to_decision(sim, 15, dec)
    sim.backfill(dec(sim))
    if sim.advance() != Event.DECISION:  # pragma: no cover - depends on the workload
        pytest.skip("no decision right after")
    sim.switch(backfill="sjbf")
    assert sim.advance() == Event.DONE
    assert np.array_equal(sim.result().start, ref)
    # and with actual estimates from the start: EASY-SJBF-AR
    sim = get_scheduler("EASY-SJBF").make_simulation(wl)
    sim.switch(estimate="actual")
    assert np.array_equal(sim.run().start, get_scheduler("EASY-SJBF-AR").simulate(wl).start)


# --------------------------------------------------------------------- oracle
def test_parse_horizon():
    assert parse_horizon("window") == ("window", np.inf)
    assert parse_horizon(None) == ("window", np.inf)
    assert parse_horizon(256) == ("jobs", 256.0)
    assert parse_horizon("256") == ("jobs", 256.0)
    assert parse_horizon("12h") == ("seconds", 43200.0)
    assert parse_horizon("90m") == ("seconds", 5400.0)
    assert parse_horizon("3600s") == ("seconds", 3600.0)
    for bad in ("soon", "-3", "1.5", -1):
        with pytest.raises(ValueError):
            parse_horizon(bad)


def _windows(wl: Workload, length: int, count: int) -> list[Workload]:
    step = (len(wl) - length) // max(count - 1, 1)
    return [wl.window(i * step, length) for i in range(count)]


def _oracle_guarantee(windows: list[Workload]) -> None:
    for w in windows:
        sjbf = get_scheduler("EASY-SJBF").simulate(w).metrics["avg_bsld"]
        res = get_scheduler("LOOKAHEAD-ORACLE").simulate(w)
        assert res.counters["violations"] == 0
        assert res.metrics["avg_bsld"] <= sjbf, (w.offset, res.metrics["avg_bsld"], sjbf)


def test_oracle_never_worse_than_easy_sjbf_synthetic():
    _oracle_guarantee(_windows(synthetic(1200, seed=7), 160, 6))


def test_oracle_never_worse_than_easy_sjbf_lublin1():
    require_trace("Lublin-1")
    _oracle_guarantee(_windows(load("Lublin-1"), 192, 8))


class _Recording(LookaheadOracle):
    """Records the window AVEbsld that the chosen option's rollout reaches."""

    def __call__(self, sim):
        job = super().__call__(sim)
        start = self._last[1]  # final starts of the chosen rollout
        self.path.append(float(bsld(start - self._submit, self._runtime).mean()))
        return job


def test_oracle_value_never_increases_and_reuse_is_exact():
    """The rollout property behind the guarantee: the value of the chosen option never
    increases from decision to decision, starts at or below EASY-SJBF's and ends at the
    result; reusing the previous rollout changes nothing."""
    w = synthetic(400, seed=11)
    sjbf = get_scheduler("EASY-SJBF").simulate(w).metrics["avg_bsld"]
    d = _Recording()
    d.path = []
    res = get_scheduler("EASY-SJBF").make_simulation(w, backfill="external").run(d)
    path = np.array(d.path)
    assert len(path) > 10
    assert path[0] <= sjbf * (1 + 1e-12)
    assert np.all(np.diff(path) <= 1e-9 * path[:-1])
    assert path[-1] == pytest.approx(res.metrics["avg_bsld"], rel=1e-12)
    no_reuse = get_scheduler("LOOKAHEAD-ORACLE,reuse=false").simulate(w)
    assert np.array_equal(no_reuse.start, res.start)
    assert d.counters["lookahead_rollouts"] < no_reuse.counters["lookahead_rollouts"]


@pytest.mark.parametrize(
    "spec",
    [
        "LOOKAHEAD-ORACLE,k=2,horizon=40",
        "LOOKAHEAD-ORACLE,horizon=3h",
        "LOOKAHEAD-ORACLE,rollout=actual",
        "LOOKAHEAD,k=4,samples=2,horizon=3h",
        "LOOKAHEAD,k=3,samples=2,horizon=6h,future=none,runtimes=request",
    ],
)
def test_lookaheads_are_guarded(spec):
    w = synthetic(220, seed=5)
    res = get_scheduler(spec).simulate(w)
    assert res.counters["violations"] == 0
    assert res.counters["lookahead_decisions"] == res.counters["decisions"] > 0
    assert np.all(np.isfinite(res.start)) and np.all(res.start >= w.submit)


def test_oracle_options_and_spec():
    spec = get_scheduler("LOOKAHEAD-ORACLE,k=4,horizon=12h")
    d = spec.make_decider()
    assert isinstance(d, LookaheadOracle) and d.k == 4 and d.horizon == ("seconds", 43200.0)
    assert spec.backfill == "sjbf" and spec.decider == "lookahead-oracle"
    assert get_scheduler("LOOKAHEAD-ORACLE").make_decider().k == 16
    for bad in ("LOOKAHEAD-ORACLE,k=0", "LOOKAHEAD-ORACLE,nope=1", "EASY,k=3"):
        with pytest.raises(ValueError):
            get_scheduler(bad)
    with pytest.raises(ValueError):
        get_scheduler("LOOKAHEAD,horizon=100")  # online: time horizons only


# --------------------------------------------------------------------- online
def test_lookahead_is_deterministic_with_a_seed():
    w = synthetic(200, seed=2)
    a = get_scheduler("LOOKAHEAD,samples=3,k=4,horizon=4h,seed=1").simulate(w)
    b = get_scheduler("LOOKAHEAD,samples=3,k=4,horizon=4h,seed=1").simulate(w)
    assert np.array_equal(a.start, b.start)
    assert a.counters == b.counters


class _Values(Lookahead):
    """Records (time, option costs) at every decision."""

    def __call__(self, sim):
        job = super().__call__(sim)
        self.log.append((sim.now, self.last_values.copy()))
        return job


def _decisions_before(w: Workload, T: float, **kw) -> list:
    d = _Values(samples=2, k=4, horizon="6h", seed=3, **kw)
    d.log = []
    get_scheduler("EASY-SJBF").make_simulation(w, backfill="external").run(d)
    return [(t, v) for t, v in d.log if t < T]


def test_lookahead_never_looks_at_the_future():
    """Change every job submitted after time T (run times, sizes): the online
    lookahead's decisions before T -- and the costs it computed for every option --
    cannot change. A variant that peeks at the real arrivals does change."""
    w = load("synthetic", n_jobs=260, seed=4, load=0.85)
    T = float(w.submit[130])
    late = np.flatnonzero(w.submit > T)
    rng = np.random.default_rng(0)
    runtime = w.runtime.copy()
    runtime[late] = np.maximum(1.0, runtime[late] * rng.uniform(0.1, 1.0, len(late)))
    cols = {c: getattr(w, c).copy() for c in ("job_id", "submit", "procs", "request", "user")}
    cols["procs"][late] = np.maximum(1, cols["procs"][late] // 2)
    w2 = Workload(
        name="changed",
        machine_size=w.machine_size,
        runtime=runtime,
        group=w.group,
        executable=w.executable,
        queue=w.queue,
        **cols,
    )
    a, b = _decisions_before(w, T), _decisions_before(w2, T)
    assert len(a) > 20 and len(a) == len(b)
    for (ta, va), (tb, vb) in zip(a, b, strict=True):
        assert ta == tb and np.array_equal(va, vb)
    # sensitivity of this test: the diagnostic clairvoyant variant sees the change
    a, b = _decisions_before(w, T, future="actual"), _decisions_before(w2, T, future="actual")
    assert any(not np.array_equal(va, vb) for (_, va), (_, vb) in zip(a, b, strict=False))


def test_online_machinery_with_the_real_future_is_the_oracle():
    """Cross-check of the two rollout implementations: fed the real future (arrivals
    within the horizon and actual run times, one sample, no noise guard), the online
    lookahead's imagined states are the real ones, so it decides exactly like the
    oracle with the same time horizon."""
    w = synthetic(300, seed=12)
    a = get_scheduler("LOOKAHEAD,future=actual,runtimes=actual,samples=1,z=0,horizon=4h")
    b = get_scheduler("LOOKAHEAD-ORACLE,horizon=4h")
    ra, rb = a.simulate(w), b.simulate(w)
    assert ra.counters["lookahead_not_sjbf"] > 0
    assert np.array_equal(ra.start, rb.start)


def test_user_history_sampler_conditions_on_elapsed():
    w = synthetic(200, seed=6)
    sim = Simulation(w, backfill="easy")
    sim.run()
    s = UserHistorySampler()
    assert isinstance(s, RuntimeSampler)
    s.bind(sim, None)
    s.observe(sim)
    rng = np.random.default_rng(0)
    req = np.array([1000.0, 1000.0, 50.0])
    el = np.array([0.0, 900.0, 49.0])
    x = s.sample(np.array([w.user[0], -5, w.user[1]]), req, el, 200, rng)
    assert x.shape == (200, 3)
    assert np.all(x <= req) and np.all(x > el)
    assert np.all(x[:, 1] > 900.0)


def test_naive_planner_options_and_sampler_choice():
    w = synthetic(150, seed=8)
    for spec in (
        "LOOKAHEAD,samples=1,k=2,horizon=2h,runtimes=request,future=none",
        "LOOKAHEAD,samples=2,k=2,horizon=2h,match=user-request,kind=runtime",
    ):
        res = get_scheduler(spec).simulate(w)
        assert res.counters["violations"] == 0


# ------------------------------------------------------------------------ CLI
def test_cli_simulate_lookahead_oracle(capsys):
    rc = main(
        [
            "simulate",
            "--scheduler",
            "LOOKAHEAD-ORACLE",
            "--trace",
            "synthetic",
            "--start",
            "500",
            "--jobs",
            "120",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scheduler"] == "LOOKAHEAD-ORACLE" and out["jobs"] == 120
    assert out["violations"] == 0 and out["lookahead_decisions"] > 0


def test_clone_and_restore_have_their_own_view_and_no_foreign_observers() -> None:
    """A clone's ``view`` reads the clone's arrays; a restored simulation's view reads the
    restored arrays; arrival observers of the original are not called by a clone."""
    from hpcgym.sim.engine import Event, Simulation
    from hpcgym.workload import load

    calls: list[tuple[int, int]] = []
    for start in range(0, 6000, 300):  # the first window with a decision point
        sim = Simulation(load(None).window(start, 300), backfill="external", candidates="easy")
        calls.clear()
        sim.observe_arrivals(lambda s, lo, hi: calls.append((lo, hi)))
        if sim.advance() == Event.DECISION:
            break
    assert sim.view.head >= 0 and calls
    v0 = sim.view.now
    n_calls = len(calls)
    snap = sim.snapshot()
    twin = sim.clone()
    while twin.advance() == Event.DECISION:
        twin.stop()
    assert len(calls) == n_calls  # the clone fed nobody
    assert twin.view.now > v0 and sim.view.now == v0  # each view reads its own arrays
    sim.stop()
    sim.advance()
    assert sim.view.now > v0
    sim.restore(snap)
    assert sim.view.now == v0 and sim.view.head == sim.head
