"""Snapshots, clones and the lookahead schedulers (LOOKAHEAD1-CLAIRVOYANT, LOOKAHEAD1-ONLINE)."""

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
    Ave2ResidualSampler,
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
    spec = get_scheduler("LOOKAHEAD1-ONLINE,samples=2,k=4,horizon=2h,seed=5")
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
        res = get_scheduler("LOOKAHEAD1-CLAIRVOYANT").simulate(w)
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
    no_reuse = get_scheduler("LOOKAHEAD1-CLAIRVOYANT,reuse=false").simulate(w)
    assert np.array_equal(no_reuse.start, res.start)
    assert d.counters["lookahead_rollouts"] < no_reuse.counters["lookahead_rollouts"]


@pytest.mark.parametrize(
    "spec",
    [
        "LOOKAHEAD1-CLAIRVOYANT,k=2,horizon=40",
        "LOOKAHEAD1-CLAIRVOYANT,horizon=3h",
        "LOOKAHEAD1-CLAIRVOYANT,rollout=actual",
        "LOOKAHEAD1-ONLINE,k=4,samples=2,horizon=3h",
        "LOOKAHEAD1-ONLINE,k=3,samples=2,horizon=6h,future=none,runtimes=request",
    ],
)
def test_lookaheads_are_guarded(spec):
    w = synthetic(220, seed=5)
    res = get_scheduler(spec).simulate(w)
    assert res.counters["violations"] == 0
    assert res.counters["lookahead_decisions"] == res.counters["decisions"] > 0
    assert np.all(np.isfinite(res.start)) and np.all(res.start >= w.submit)


def test_oracle_options_and_spec():
    spec = get_scheduler("LOOKAHEAD1-CLAIRVOYANT,k=4,horizon=12h")
    d = spec.make_decider()
    assert isinstance(d, LookaheadOracle) and d.k == 4 and d.horizon == ("seconds", 43200.0)
    assert spec.backfill == "sjbf" and spec.decider == "lookahead1-clairvoyant"
    assert get_scheduler("LOOKAHEAD1-CLAIRVOYANT").make_decider().k == 16
    for bad in ("LOOKAHEAD1-CLAIRVOYANT,k=0", "LOOKAHEAD1-CLAIRVOYANT,nope=1", "EASY,k=3"):
        with pytest.raises(ValueError):
            get_scheduler(bad)
    with pytest.raises(ValueError):
        get_scheduler("LOOKAHEAD1-ONLINE,horizon=100")  # online: time horizons only
    # a wrong choice names every valid one, the clairvoyant diagnostics included
    every = "'sampled', 'request', 'actual', 'noisy', 'actual-running', 'actual-waiting'"
    with pytest.raises(ValueError, match=every):
        get_scheduler("LOOKAHEAD1-ONLINE,runtimes=oracle").make_decider()
    with pytest.raises(ValueError, match=r"'replay', 'none' or 'actual'"):
        get_scheduler("LOOKAHEAD1-ONLINE,future=real").make_decider()


# --------------------------------------------------------------------- online
def test_lookahead_is_deterministic_with_a_seed():
    w = synthetic(200, seed=2)
    a = get_scheduler("LOOKAHEAD1-ONLINE,samples=3,k=4,horizon=4h,seed=1").simulate(w)
    b = get_scheduler("LOOKAHEAD1-ONLINE,samples=3,k=4,horizon=4h,seed=1").simulate(w)
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


@pytest.mark.parametrize("sampler", [None, "ave2-residual"])
def test_lookahead_never_looks_at_the_future(sampler):
    """Change every job submitted after time T (run times, sizes): the online
    lookahead's decisions before T -- and the costs it computed for every option --
    cannot change, whichever built-in run-time sampler it uses. A variant that peeks at
    the real arrivals does change."""
    kw = {} if sampler is None else {"sampler": sampler}
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
    a, b = _decisions_before(w, T, **kw), _decisions_before(w2, T, **kw)
    assert len(a) > 20 and len(a) == len(b)
    for (ta, va), (tb, vb) in zip(a, b, strict=True):
        assert ta == tb and np.array_equal(va, vb)
    # sensitivity of this test: the diagnostic clairvoyant variant sees the change
    a = _decisions_before(w, T, future="actual", **kw)
    b = _decisions_before(w2, T, future="actual", **kw)
    assert any(not np.array_equal(va, vb) for (_, va), (_, vb) in zip(a, b, strict=False))


def test_online_machinery_with_the_real_future_is_the_oracle():
    """Cross-check of the two rollout implementations: fed the real future (arrivals
    within the horizon and actual run times, one sample, no noise guard), the online
    lookahead's imagined states are the real ones, so it decides exactly like the
    oracle with the same time horizon."""
    w = synthetic(300, seed=12)
    a = get_scheduler("LOOKAHEAD1-ONLINE,future=actual,runtimes=actual,samples=1,z=0,horizon=4h")
    b = get_scheduler("LOOKAHEAD1-CLAIRVOYANT,horizon=4h")
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
        "LOOKAHEAD1-ONLINE,samples=1,k=2,horizon=2h,runtimes=request,future=none",
        "LOOKAHEAD1-ONLINE,samples=2,k=2,horizon=2h,match=user-request,kind=runtime",
    ):
        res = get_scheduler(spec).simulate(w)
        assert res.counters["violations"] == 0


# ------------------------------------------------------------------------ CLI
def test_cli_simulate_lookahead_oracle(capsys):
    rc = main(
        [
            "simulate",
            "--scheduler",
            "LOOKAHEAD1-CLAIRVOYANT",
            "--trace",
            "synthetic:n_jobs=10000",
            "--start",
            "500",
            "--jobs",
            "120",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scheduler"] == "LOOKAHEAD1-CLAIRVOYANT" and out["jobs"] == 120
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


def test_noisy_runtimes_are_a_calibrated_blur_of_the_real_ones():
    """``runtimes=noisy`` (a clairvoyant diagnostic): each job has one fixed prediction
    ``actual * exp(noise * e)`` and its draws scatter log-normally around it with the
    same log-SD; draws respect the time already run and the request; the per-job
    errors do not change from one decision to the next; tiny noise is the truth."""
    w = synthetic(400, seed=9)
    sim = Simulation(w, backfill="easy")
    jobs = np.arange(len(w))
    rt = np.maximum(np.asarray(w.runtime, dtype=float), 1.0)
    keep = np.asarray(w.request) >= 4 * rt  # room above the truth: the cap rarely binds
    noisy = "LOOKAHEAD1-ONLINE,runtimes=noisy,noise=0.5,samples=400,seed=3"
    d = get_scheduler(noisy).make_decider()
    d._bind(sim)
    x = d._blurred(sim, jobs, np.zeros(len(jobs)))
    assert x.shape == (400, len(w)) and np.all(x <= np.asarray(w.request)) and np.all(x > 0)
    log_err = np.log(x[:, keep]) - np.log(rt[keep])
    centre = log_err.mean(axis=0)  # each job's fixed prediction error, about 0.5 * e
    assert 0.35 < centre.std() < 0.65  # across jobs: the predictions' error
    assert 0.45 < (log_err - centre).std() < 0.55  # around each prediction: the spread
    assert np.corrcoef(centre, d._err[keep])[0, 1] > 0.95
    y = d._blurred(sim, jobs, np.zeros(len(jobs)))  # a later decision: same predictions
    assert np.corrcoef(centre, (np.log(y[:, keep]) - np.log(rt[keep])).mean(axis=0))[0, 1] > 0.9
    el = 0.8 * rt  # running jobs: draws above the time already run
    z = d._blurred(sim, jobs, el)
    assert np.all(z > el) and np.all(z <= np.asarray(w.request))
    tiny = get_scheduler("LOOKAHEAD1-ONLINE,runtimes=noisy,noise=1e-9,samples=2").make_decider()
    tiny._bind(sim)
    t = tiny._blurred(sim, jobs, np.zeros(len(jobs)))
    cap = np.minimum(rt, np.asarray(w.request))
    np.testing.assert_allclose(t, np.broadcast_to(cap, t.shape), rtol=1e-6)
    again = get_scheduler(noisy).make_decider()
    again._bind(sim)
    assert np.array_equal(again._blurred(sim, jobs, np.zeros(len(jobs))), x)  # seeded


def test_noisy_runtimes_with_errors_shared_by_a_users_jobs():
    """``shared=r``: each job's fixed error is ``sqrt(1 - r) e_job + sqrt(r) e_user``, of
    the same log-SD; ``shared=0`` is the independent blur to the bit, ``shared=1`` one
    error per user."""
    w = synthetic(3000, seed=4)
    sim = Simulation(w, backfill="easy")
    user = np.asarray(w.user)
    errs = {}
    for r in (0.0, 0.6, 1.0):
        spec = "LOOKAHEAD1-ONLINE,runtimes=noisy,noise=1,seed=5" + (f",shared={r:g}" if r else "")
        d = get_scheduler(spec).make_decider()
        d._bind(sim)
        errs[r] = d._err
    base = get_scheduler("LOOKAHEAD1-ONLINE,runtimes=noisy,noise=1,seed=5,shared=0").make_decider()
    base._bind(sim)
    assert np.array_equal(base._err, errs[0.0])
    for u in np.unique(user)[:20]:  # one error per user at shared=1
        assert np.ptp(errs[1.0][user == u]) == 0.0
    assert 0.9 < errs[0.6].std() < 1.1
    # the share of the variance between users, near 0.6 (many users of many jobs)
    _, g = np.unique(user, return_inverse=True)
    means = np.bincount(g, weights=errs[0.6]) / np.bincount(g)
    within = np.mean((errs[0.6] - means[g]) ** 2)
    assert 0.3 < within / errs[0.6].var() < 0.55
    for bad in ("runtimes=noisy,noise=1,shared=1.5", "runtimes=noisy,noise=1,shared=-0.1"):
        with pytest.raises(ValueError, match="shared must be"):
            get_scheduler(f"LOOKAHEAD1-ONLINE,{bad}").make_decider()
    with pytest.raises(ValueError, match="runtimes=noisy only"):
        get_scheduler("LOOKAHEAD1-ONLINE,runtimes=actual,shared=0.5").make_decider()


def _users_window(request: list[float], user: list[int], runtime: list[float]) -> Workload:
    """A window of one-processor jobs submitted 10 s apart."""
    n = len(request)
    none = np.zeros(n, dtype=np.int64)
    return Workload(
        name="w",
        machine_size=8,
        job_id=np.arange(n) + 1,
        submit=np.arange(n) * 10.0,
        procs=np.ones(n, dtype=np.int64),
        request=np.array(request),
        user=np.array(user),
        runtime=np.array(runtime),
        group=none,
        executable=none,
        queue=none,
    )


def test_user_pool_runtimes_know_the_users_run_times_but_not_which_job_is_which():
    """``runtimes=user-pool``: a job's draws come from the real run times of the other
    jobs of its user in the window (first those with its request under
    ``match=user-request``), then of all other jobs; above the time already run; capped
    at its request; the request when nothing is left."""
    from hpcgym.sim.lookahead import WindowPools

    w = _users_window(
        request=[1000.0, 1000.0, 1000.0, 500.0, 1000.0, 2000.0, 300.0],
        user=[1, 1, 1, 1, 2, 3, 3],
        runtime=[10.0, 20.0, 30.0, 400.0, 50.0, 600.0, 70.0],
    )
    rng = np.random.default_rng(0)
    by_user = WindowPools(w, "user")
    draws = by_user.draw(np.array([0, 3, 4]), np.zeros(3), 400, rng)
    assert set(draws[:, 0]) == {20.0, 30.0, 400.0}  # never its own run time
    assert set(draws[:, 1]) == {10.0, 20.0, 30.0}
    assert set(draws[:, 2]) == {10.0, 20.0, 30.0, 400.0, 600.0, 70.0}  # alone: everyone's
    # conditioned on the time already run; a job that outran every value runs to its request
    cond = by_user.draw(np.array([0, 3]), np.array([25.0, 450.0]), 200, rng)
    assert set(cond[:, 0]) == {30.0, 400.0}
    assert set(cond[:, 1]) == {500.0}
    by_request = WindowPools(w, "user-request")
    d = by_request.draw(np.array([0, 3]), np.zeros(2), 200, rng)
    assert set(d[:, 0]) == {20.0, 30.0}  # same user and request first
    assert set(d[:, 1]) == {10.0, 20.0, 30.0}  # its request is the user's only one: the user's
    assert set(by_user.draw(np.array([6]), np.zeros(1), 100, rng)[:, 0]) == {300.0}  # capped
    # a full window: deterministic with a seed, guarded, and not the real run times
    syn = synthetic(250, seed=13)
    spec = "LOOKAHEAD1-ONLINE,runtimes=user-pool,samples=2,k=4,horizon=4h,seed=2"
    a, b = get_scheduler(spec).simulate(syn), get_scheduler(spec).simulate(syn)
    assert np.array_equal(a.start, b.start)
    assert a.counters["violations"] == 0 and a.counters["lookahead_decisions"] > 0
    with pytest.raises(ValueError, match="user-pool"):
        get_scheduler("LOOKAHEAD1-ONLINE,runtimes=user-pools").make_decider()


def test_predecessor_runtimes_take_the_previous_like_job():
    """``runtimes=predecessor``: the real run time of the user's job with the same
    request submitted just before (finished or not), where it is above the time already
    run; otherwise user-pool's draws by user and request."""
    from hpcgym.sim.lookahead import WindowPools

    w = _users_window(
        request=[1000.0, 500.0, 1000.0, 1000.0, 500.0, 1000.0],
        user=[1, 1, 1, 2, 1, 1],
        runtime=[10.0, 200.0, 30.0, 40.0, 300.0, 60.0],
    )
    pools = WindowPools(w, "user-request")
    np.testing.assert_array_equal(pools.previous, [np.nan, np.nan, 10.0, np.nan, 200.0, 30.0])
    rng = np.random.default_rng(0)
    d = pools.predecessor(np.array([2, 4, 5, 0]), np.zeros(4), 100, rng)
    assert set(d[:, 0]) == {10.0} and set(d[:, 1]) == {200.0} and set(d[:, 2]) == {30.0}
    assert set(d[:, 3]) == {30.0, 60.0}  # no predecessor: the user's other like jobs
    # a job that has outrun its predecessor's run time: user-pool's draws above it
    late = pools.predecessor(np.array([5]), np.array([35.0]), 100, rng)
    assert set(late[:, 0]) == {200.0, 300.0}  # no like job ran longer: the user's others
    syn = synthetic(250, seed=13)
    spec = "LOOKAHEAD1-ONLINE,runtimes=predecessor,samples=2,k=4,horizon=4h,seed=2"
    a, b = get_scheduler(spec).simulate(syn), get_scheduler(spec).simulate(syn)
    assert np.array_equal(a.start, b.start)
    assert a.counters["violations"] == 0 and a.counters["lookahead_decisions"] > 0
    pool = get_scheduler("LOOKAHEAD1-ONLINE,runtimes=user-pool,samples=2,k=4,horizon=4h,seed=2")
    assert not np.array_equal(a.start, pool.simulate(syn).start)


def test_noisy_runtimes_options_and_a_full_window():
    for bad in (
        "runtimes=noisy",
        "runtimes=noisy,noise=0",
        "runtimes=noisy,noise=-1",
        "noise=0.5",
        "runtimes=actual,noise=0.5",
    ):
        with pytest.raises(ValueError, match="noise"):
            get_scheduler(f"LOOKAHEAD1-ONLINE,{bad}").make_decider()
    w = synthetic(250, seed=13)
    spec = "LOOKAHEAD1-ONLINE,runtimes=noisy,noise=0.7,samples=2,k=4,horizon=4h,seed=2"
    a, b = get_scheduler(spec).simulate(w), get_scheduler(spec).simulate(w)
    assert np.array_equal(a.start, b.start)  # deterministic with a seed
    assert a.counters["violations"] == 0 and a.counters["lookahead_decisions"] > 0


def test_ave2_residual_sampler_predicts_and_draws_from_recent_errors():
    """AVE2 (mean of the user's last two finished run times, capped at the request; the
    request without history) times an error drawn from the errors such predictions made
    on finished jobs -- one pool for history-based predictions, one for request-based."""
    cols = {
        "job_id": np.arange(6) + 1,
        "submit": np.array([0.0, 10.0, 20.0, 30.0, 40.0, 50.0]),
        "procs": np.ones(6, dtype=np.int64),
        "request": np.array([1000.0, 1000.0, 1000.0, 400.0, 1000.0, 1000.0]),
        "user": np.array([1, 1, 1, 1, 2, 3]),
        "runtime": np.array([100.0, 300.0, 800.0, 50.0, 500.0, 10.0]),
    }
    none = np.zeros(6, dtype=np.int64)
    past = Workload(name="past", machine_size=8, group=none, executable=none, queue=none, **cols)
    w = synthetic(50, seed=3)  # its first job is submitted after the past's jobs ended
    shifted = Workload(
        name="w",
        machine_size=w.machine_size,
        submit=w.submit + 5000.0,
        **{
            c: getattr(w, c)
            for c in (
                "job_id",
                "procs",
                "request",
                "user",
                "runtime",
                "group",
                "executable",
                "queue",
            )
        },
    )
    s = Ave2ResidualSampler()
    assert isinstance(s, RuntimeSampler)
    s.bind(Simulation(shifted, backfill="easy"), past)
    pred, known = s.predict(np.array([1, 1, 2, 9]), np.array([1000.0, 400.0, 1000.0, 700.0]))
    # in the order the past's jobs ended (jobs 6, 4, 1, 2, 5, 3), user 1's last two are
    # 300 and 800 -> 550 (capped at 400 for the second job); user 9 has no history
    np.testing.assert_allclose(pred, [550.0, 400.0, 500.0, 700.0])
    assert known.tolist() == [True, True, True, False]
    # history-based errors: job 1 (pred 50 -> 100), job 2 (75 -> 300), job 3 (200 ->
    # 800); request-based: jobs 6, 4 and 5 (their ratio to the request)
    np.testing.assert_allclose(np.sort(s._errors(True)), np.log([2.0, 4.0, 4.0]))
    np.testing.assert_allclose(np.sort(s._errors(False)), np.log([0.01, 0.125, 0.5]))
    rng = np.random.default_rng(0)
    x = s.sample(np.array([1, 9]), np.array([5000.0, 700.0]), np.zeros(2), 400, rng)
    assert set(np.round(x[:, 0], 6)) == {1100.0, 2200.0}
    assert set(np.round(x[:, 1], 6)) == {7.0, 87.5, 350.0}
    # running jobs: only errors that put them above the time already run, else the request
    y = s.sample(np.array([1, 1]), np.array([5000.0, 5000.0]), np.array([1500.0, 2500.0]), 50, rng)
    assert np.all(y[:, 0] == 2200.0) and np.all(y[:, 1] == 5000.0)
    # the window's finished jobs join as the simulation runs
    sim = Simulation(shifted, backfill="easy")
    s.bind(sim, past)
    n0 = len(s._errors(True)) + len(s._errors(False))
    sim.run()
    s.observe(sim)
    assert len(s._errors(True)) + len(s._errors(False)) == n0 + len(shifted)


def test_lookahead_sampler_option():
    d = get_scheduler("LOOKAHEAD1-ONLINE,sampler=ave2-residual,recent=3").make_decider()
    assert isinstance(d.sampler, Ave2ResidualSampler) and d.sampler.recent == 3
    assert get_scheduler("LOOKAHEAD1-ONLINE").make_decider().sampler.recent == 4  # user-history
    with pytest.raises(ValueError, match="valid: user-history, ave2-residual"):
        get_scheduler("LOOKAHEAD1-ONLINE,sampler=nope").make_decider()
    with pytest.raises(ValueError, match="kind and match"):
        get_scheduler("LOOKAHEAD1-ONLINE,sampler=ave2-residual,match=user-request").make_decider()
    w = synthetic(250, seed=13)
    spec = "LOOKAHEAD1-ONLINE,sampler=ave2-residual,samples=2,k=4,horizon=4h,seed=2"
    a, b = get_scheduler(spec).simulate(w), get_scheduler(spec).simulate(w)
    assert np.array_equal(a.start, b.start) and a.counters["violations"] == 0


@pytest.mark.parametrize(
    ("runtimes", "real_running", "real_waiting"),
    [
        ("actual", True, True),
        ("actual-running", True, False),
        ("actual-waiting", False, True),
        ("sampled", False, False),
    ],
)
def test_one_group_of_real_run_times(runtimes, real_running, real_waiting):
    """The diagnostics that locate the planner's gap: the imagined futures carry the
    real run times of the running jobs, of the waiting jobs, of both or of neither."""
    w = load("synthetic", n_jobs=300, seed=4, load=0.9)
    sim = get_scheduler("EASY-SJBF").make_simulation(w, backfill="external")
    d = get_scheduler(f"LOOKAHEAD1-ONLINE,runtimes={runtimes},samples=3,k=4").make_decider()
    found = False
    for _ in range(400):  # a decision point with running and waiting jobs
        assert sim.advance() == Event.DECISION
        wait, run = sim.waiting(), sim.running()
        if len(wait) >= 3 and len(run) >= 3:
            found = True
            break
        j = d(sim)
        sim.stop() if j is None else sim.backfill(j)
    assert found
    if sim is not d._sim:
        d._bind(sim)
    real = sim.JF[K.F_RUNTIME]
    for JF, *_ in d._futures(sim):
        assert np.array_equal(JF[K.F_RUNTIME, run], real[run]) == real_running
        assert np.array_equal(JF[K.F_RUNTIME, wait], real[wait]) == real_waiting
