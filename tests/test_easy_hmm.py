"""EASY-HMM: Nissimov's probabilistic backfilling as a decider of the one engine.

The rule (thesis ch. 5, Algorithm 6): at a decision point, start the first candidate
in backfill order whose probability of postponing the head is ``< tau``; the statistic
is ``sum_j Pr(cand in bin j) max_{instants before its end} (M[c0] - M[c])``. Derived
properties tested here:

* with no distributions every ``M`` is 0/1, so the statistic is 0 or 1 and, for any
  ``tau`` in ``(0, 1]``, the decision is EASY's (``docs/hmm.md``): whole runs equal
  EASY exactly, and with the real HMM the runs agree until the first prediction;
* the statistic is ``>= 0``, so ``tau = 0`` backfills nothing: the run equals
  ``backfill="none"`` exactly;
* for a fixed state the allowed set grows with ``tau``, and the early exits never
  change the decision.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.predictors.hmm import RuntimeBins
from hpcgym.sim import Simulation, get_scheduler, simulate
from hpcgym.sim.deciders import (
    DistributionTable,
    EasyDecider,
    ProbabilisticBackfiller,
    make_decider,
)
from hpcgym.sim.probabilistic import (
    ReleaseModel,
    candidate_events,
    running_events,
    scan_candidates,
)
from hpcgym.workload import load
from hpcgym.workload.core import Workload

EDGES = RuntimeBins(1.8, 20).edges


def _synthetic(n: int = 1500, start: int = 0) -> Workload:
    return load().window(start, n)


def _tied(seed: int, n: int = 400, m: int = 64) -> Workload:
    """Round requests/runtimes and bursty submits: many simultaneous ends and ties."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 40, n)).astype(np.float64) * 60.0
    req = rng.choice([60.0, 120.0, 600.0, 1200.0, 3600.0], n)
    run = np.minimum(req, rng.choice([30.0, 60.0, 120.0, 600.0, 3600.0], n))
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64], n)
    neg = -np.ones(n)
    return Workload("tied", m, np.arange(n), submit, run, procs, req, neg, neg, neg, neg)


def _hmm_run(wl: Workload, source=None, **kw) -> Simulation:
    dec = ProbabilisticBackfiller(source=source, **kw)
    est = "request" if source is not None else "hmm"
    sim = Simulation(wl, backfill="external", candidates="fit", estimate=est, decider=dec)
    sim.run()
    return sim


# -------------------------------------------------- no prediction == EASY exactly
@pytest.mark.parametrize("policy", ["FCFS", "SJF"])
@pytest.mark.parametrize("tau", [1e-9, 0.05, 1.0])
@pytest.mark.parametrize("rescan", [True, False])
def test_no_distribution_source_is_easy(policy, tau, rescan):
    for wl in (_synthetic(1500, 3000), _tied(1), _tied(2)):
        easy = simulate(wl, policy=policy, backfill="easy")
        src = DistributionTable.empty(len(wl), EDGES)
        dec = ProbabilisticBackfiller(tau=tau, source=src, rescan=rescan)
        sim = Simulation(wl, policy=policy, backfill="external", candidates="fit", decider=dec)
        res = sim.run()
        np.testing.assert_array_equal(res.start, easy.start)
        np.testing.assert_array_equal(res.backfilled, easy.backfilled)
        assert res.counters["violations"] == 0
        assert res.counters["hmm_stops_with_easy_candidate"] == 0
        assert res.counters["hmm_starts"] == easy.metrics["backfilled"]


def test_tau_zero_backfills_nothing():
    wl = _synthetic(1500, 3000)
    none = simulate(wl, backfill="none")
    pts = DistributionTable.point_masses(wl.runtime, EDGES)  # even with perfect knowledge
    for src in (DistributionTable.empty(len(wl), EDGES), pts):
        res = _hmm_run(wl, source=src, tau=0.0).result()
        np.testing.assert_array_equal(res.start, none.start)
        assert res.metrics["backfilled"] == 0


def _real_window() -> tuple[str, Workload]:
    from hpcgym.workload.traces import TraceNotFoundError, resolve_trace

    try:
        resolve_trace("SDSC-SP2", download=False)
        return "SDSC-SP2", load("SDSC-SP2").window(0, 3000)
    except TraceNotFoundError:
        return "synthetic", _synthetic(4000)


def test_until_the_first_prediction_easy_hmm_is_easy():
    """The real HMM gives no distribution in its first week: until the first job with
    a distribution arrives, every decision is EASY's, so the starts agree."""
    name, wl = _real_window()
    easy = get_scheduler("EASY").simulate(wl)
    sim = get_scheduler("EASY-HMM").make_simulation(wl)
    res = sim.run()
    has = sim.estimator.has_dist
    assert has.any() and not has.all(), f"{name}: need both periods in the window"
    t_first = float(wl.submit[np.argmax(has)])
    assert t_first - wl.submit[0] >= 7 * 86400  # the warm-up week
    before_e = easy.start < t_first
    before_h = res.start < t_first
    np.testing.assert_array_equal(before_e, before_h)
    np.testing.assert_array_equal(easy.start[before_e], res.start[before_h])
    assert before_e.sum() > 500 and easy.backfilled[before_e].sum() > 50
    # afterwards the distributions are used (the test would be vacuous otherwise)
    assert not np.array_equal(easy.start, res.start)
    assert res.counters["hmm_starts_not_easy"] == res.counters["violations"] > 0


# --------------------------------------------------- named scheduler everywhere
def test_named_scheduler_and_spec_strings():
    spec = get_scheduler("easy-hmm")
    assert spec.name == "EASY-HMM" and spec.decider == "probabilistic"
    assert spec.to_dict()["decider_kwargs"] == {"tau": 0.05}
    wl = _synthetic(300)
    res = spec.simulate(wl)
    assert res.config["scheduler"] == "EASY-HMM" and res.config["decider"] == "probabilistic"
    assert res.counters["hmm_decisions"] == res.counters["decisions"] > 0
    sjf = get_scheduler("SJF+EASY-HMM")
    assert sjf.policy == "SJF" and sjf.decider == "probabilistic"
    np.testing.assert_array_equal(
        sjf.simulate(wl).start, simulate(wl, policy="SJF").start
    )  # 300 jobs: all in the HMM's first week, so SJF+EASY
    kv = get_scheduler("policy=FCFS,backfill=easy,decider=easy")
    np.testing.assert_array_equal(kv.simulate(wl).start, simulate(wl).start)
    with pytest.raises(ValueError, match="valid choices: probabilistic, easy"):
        get_scheduler("decider=nope")
    with pytest.raises(ValueError, match="valid choices"):
        make_decider("nope")


def test_easy_hmm_is_an_env_normalizer():
    from hpcgym.envs.backfill_env import BackfillEnv, clear_normalizer_cache

    clear_normalizer_cache()
    env = BackfillEnv(trace=None, sequence_length=64, normalizer="EASY-HMM")
    assert env.normalizer is not None and env.normalizer.decider == "probabilistic"
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, r, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
    ref = get_scheduler("EASY-HMM").simulate(env.simulation.workload).metrics
    ref.pop("sim_seconds")
    assert info["normalizer"] == ref


def test_needs_a_distribution_source():
    wl = _synthetic(200)
    sim = Simulation(wl, backfill="external", candidates="fit", decider=ProbabilisticBackfiller())
    with pytest.raises(ValueError, match="estimate='hmm'"):
        sim.run()
    with pytest.raises(ValueError, match="tau"):
        ProbabilisticBackfiller(tau=1.5)


def test_python_easy_decider_is_easy():
    wl = _tied(3)
    sim = Simulation(wl, backfill="external", decider=EasyDecider())
    np.testing.assert_array_equal(sim.run().start, simulate(wl).start)


# ------------------------------------------------------------------ determinism
def test_deterministic():
    wl = _synthetic(3500)  # predictions start after about 2,700 jobs
    a = get_scheduler("EASY-HMM").make_simulation(wl, seed=0)
    b = get_scheduler("EASY-HMM").make_simulation(wl, seed=123)
    ra, rb = a.run(), b.run()
    assert a.estimator.has_dist.any()
    np.testing.assert_array_equal(ra.start, rb.start)
    assert ra.counters == rb.counters
    np.testing.assert_array_equal(a.estimator.dists, b.estimator.dists)


# ------------------------------------------------------- the decision kernel
def _random_state(rng: np.random.Generator):
    n = int(rng.integers(1, 12))
    N = len(EDGES) - 1
    g = 8 if rng.random() < 0.3 else 1
    procs = rng.choice([1, 2, 3, 4, 8], n) * g
    free = int(rng.integers(1, 20))
    head = free + int(rng.integers(1, procs.sum() + 1))
    req = rng.choice([10.0, 100.0, 1000.0, 3600.0, 20000.0], n)
    start = np.round(-rng.uniform(0, 0.9, n) * req, -1)  # rounded: simultaneous events
    nc = int(rng.integers(1, 8))
    return dict(
        now=0.0,
        free=free,
        head_procs=head,
        run_procs=procs,
        run_start=start,
        run_request=req,
        run_dists=rng.dirichlet(np.full(N, 0.4), n),
        run_has=rng.random(n) < 0.7,
        cand_procs=rng.integers(1, free + 3, nc),
        cand_request=rng.choice([5.0, 50.0, 500.0, 5000.0, 30000.0], nc),
        cand_dists=rng.dirichlet(np.full(N, 0.4), nc),
        cand_has=rng.random(nc) < 0.7,
        edges=EDGES,
    )


def test_kernel_statistic_is_release_model_and_tau_monotone():
    rng = np.random.default_rng(7)
    taus = (0.0, 0.01, 0.05, 0.2, 0.5, 1.0)
    for _ in range(200):
        s = _random_state(rng)
        _, stat = scan_candidates(**s, first_only=False, early_exit=False)
        ej, et, ep = running_events(
            s["run_dists"], EDGES, s["run_start"], 0.0, s["run_request"], s["run_has"]
        )
        model = ReleaseModel(s["free"], s["head_procs"], s["run_procs"], ej, et, ep)
        fits = s["cand_procs"] <= s["free"]
        for k in np.flatnonzero(fits):
            d = s["cand_dists"][k] if s["cand_has"][k] else None
            ct, cp = candidate_events(d, EDGES, 0.0, s["cand_request"][k])
            assert stat[k] == pytest.approx(model.postpone_probability(s["cand_procs"][k], ct, cp))
        assert np.all(np.isnan(stat[~fits]))
        prev = np.zeros(len(stat), dtype=bool)
        for tau in taus:
            allowed = fits & (np.nan_to_num(stat, nan=2.0) < tau)
            assert np.all(allowed >= prev)  # the allowed set only grows with tau
            prev = allowed
            first = int(np.argmax(allowed)) if allowed.any() else -1
            k, _ = scan_candidates(**s, tau=tau)  # early exits, first only
            assert k == first


def test_thesis_example_refuses_and_accepts_unlike_easy():
    """A running job (2 procs, request 2000 s) that may end at 10.5 s makes a candidate
    ending at 500 s risky (EASY would accept it: it ends before the shadow); a
    candidate requesting 5000 s but surely done in under 6 s is harmless (EASY would
    refuse it: it ends after the shadow and needs more than the extra processors)."""
    N = len(EDGES) - 1
    b_short, b_long = 3, 11  # bins [5.8, 10.5) s and [643, 1157) s
    run_d = np.zeros((1, N))
    run_d[0, b_short], run_d[0, b_long] = 0.2, 0.8
    cand_d = np.zeros((2, N))
    cand_d[0, 10] = 1.0  # [357, 643) s, truncated at 500 s: ends after 10.5 s
    cand_d[1, 2] = 1.0  # [3.2, 5.8) s
    common = dict(
        now=0.0,
        free=2,
        head_procs=4,
        run_procs=np.array([2]),
        run_start=np.array([0.0]),
        run_request=np.array([2000.0]),
        run_dists=run_d,
        run_has=np.array([True]),
        cand_procs=np.array([2, 2]),
        cand_request=np.array([500.0, 5000.0]),
        cand_dists=cand_d,
        cand_has=np.array([True, True]),
        edges=EDGES,
    )
    k, stat = scan_candidates(**common, first_only=False, early_exit=False)
    # c0 = 2: the head could start at 10.5 s with probability 0.2, but not with both
    assert stat[0] == pytest.approx(0.2) and stat[1] == 0.0 and k == 1
    assert scan_candidates(**common, tau=0.25)[0] == 0  # a laxer threshold takes it
    # in an engine run: the same state, EASY starts job 1 and EASY-HMM job 2
    neg = -np.ones(4)
    wl = Workload(
        "example",
        4,
        np.arange(4),
        np.zeros(4),
        np.array([600.0, 1200.0, 400.0, 5.0]),
        np.array([2, 4, 2, 2]),
        np.array([2000.0, 2000.0, 500.0, 5000.0]),
        neg,
        neg,
        neg,
        neg,
    )
    dists = np.zeros((4, N))
    dists[0], dists[2:] = run_d[0], cand_d
    src = DistributionTable(EDGES, dists, np.array([True, False, True, True]))
    easy = simulate(wl)
    res = _hmm_run(wl, source=src).result()
    assert easy.start[2] == 0.0 and easy.start[3] > 0.0
    assert res.start[2] > 0.0 and res.start[3] == 0.0
    assert res.counters["violations"] == res.counters["hmm_starts_not_easy"] == 1
