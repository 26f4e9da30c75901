"""The headroom ladder's pieces: graded oracles, the like-job estimator, ranking on a
separate estimate, the clairvoyant search and the certified lower bound."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.evaluation.ranking import RankChooser, simulate_ranked
from hpcgym.evaluation.search import improve_priorities
from hpcgym.predictors import make_estimator
from hpcgym.predictors.oracles import (
    EndsWithinEstimator,
    LikeJobEstimator,
    classifier_bits,
    classifier_quality,
)
from hpcgym.sim import simulate
from hpcgym.sim.estimators import SystemView
from hpcgym.workload import load
from hpcgym.workload.core import Workload


@pytest.fixture(scope="module")
def window() -> Workload:
    return load("synthetic", n_jobs=300, seed=5)


def _workload(submit, runtime, procs, request, user, m=4) -> Workload:
    n = len(submit)
    return Workload(
        name="tiny",
        machine_size=m,
        job_id=np.arange(1, n + 1),
        submit=np.asarray(submit, float),
        runtime=np.asarray(runtime, float),
        procs=np.asarray(procs),
        request=np.asarray(request, float),
        user=np.asarray(user),
        group=np.zeros(n, int),
        executable=np.zeros(n, int),
        queue=np.zeros(n, int),
    )


# ------------------------------------------------------------------------- oracles
@pytest.mark.parametrize(("precision", "recall"), [(1.0, 1.0), (0.8, 0.6), (0.5, 0.9), (1.0, 0.25)])
def test_classifier_has_the_asked_precision_and_recall(precision, recall):
    rng = np.random.default_rng(0)
    truth = rng.random(5000) < 0.3
    bits = classifier_bits(truth, precision, recall, np.random.default_rng(1))
    p, r = classifier_quality(bits, truth)
    assert p == pytest.approx(precision, abs=0.01)
    assert r == pytest.approx(recall, abs=0.01)
    again = classifier_bits(truth, precision, recall, np.random.default_rng(1))
    assert np.array_equal(bits, again)
    other = classifier_bits(truth, precision, recall, np.random.default_rng(2))
    assert precision == recall == 1.0 or not np.array_equal(bits, other)


def test_classifier_rejects_bad_quality():
    with pytest.raises(ValueError, match="precision"):
        classifier_bits(np.ones(3, bool), 0.0, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="recall"):
        classifier_bits(np.ones(3, bool), 1.0, 1.5, np.random.default_rng(0))


def test_clairvoyant_bit_is_the_truth(window):
    est = EndsWithinEstimator(threshold=60)
    est.bind(window, np.random.default_rng(0))
    flags = est.flags()
    assert np.array_equal(flags, (window.runtime <= 60) | (window.request <= 60))
    e = est.static_estimates()
    assert np.all(e[flags] <= 60) and np.array_equal(e[~flags], window.request[~flags])


def test_graded_bit_is_seeded_per_window():
    wl = load("synthetic", n_jobs=3000, seed=2)
    a, b = wl.window(0, 1500), wl.window(1500, 1500)
    spec = "ends-within:threshold=60,precision=0.7,recall=0.6,seed=4"

    def flags(w):
        e = make_estimator(spec)
        e.bind(w, np.random.default_rng(0))
        return e.flags()

    fa = flags(a)
    assert np.array_equal(fa, flags(a))
    hard = a.request > 60
    p, r = classifier_quality(fa[hard], a.runtime[hard] <= 60)
    assert p == pytest.approx(0.7, abs=0.03) and r == pytest.approx(0.6, abs=0.03)
    assert not np.array_equal(fa[:1500], flags(b)[:1500])


def test_blur_is_lognormal_and_capped(window):
    e = make_estimator("blurred:sigma=0.5,seed=1")
    e.bind(window, np.random.default_rng(0))
    est = e.static_estimates()
    assert np.all(est <= window.request)
    free = est < window.request  # not capped
    lr = np.log(est[free] / window.runtime[free])
    assert 0.3 < np.std(lr) < 0.6
    zero = make_estimator("blurred:0")
    zero.bind(window, np.random.default_rng(0))
    assert np.allclose(zero.static_estimates(), np.minimum(window.runtime, window.request))
    with pytest.raises(ValueError, match="sigma"):
        make_estimator("blurred:sigma=-1")


def test_like_job_reads_only_finished_jobs():
    wl = _workload(
        submit=[0, 10, 20, 30],
        runtime=[30, 500, 40, 100],
        procs=[1, 1, 1, 1],
        request=[600, 600, 600, 900],
        user=[1, 1, 1, 1],
    )
    est = LikeJobEstimator()
    est.bind(wl, np.random.default_rng(0))
    view = SystemView(0.0, np.zeros(0, np.int64), np.full(4, np.nan), 4, 4)
    assert est.predict(1, view) == 600  # job 0 has not finished: nothing known
    est.observe_finished(np.array([0]), np.array([30.0]))
    assert est.predict(1, view) == 30
    est.observe_finished(np.array([1]), np.array([510.0]))
    assert est.predict(2, view) == 500  # the most recent like job
    assert est.predict(3, view) == 900  # another request: no like job


# ------------------------------------------------------------------------- ranking
def test_rank_chooser_reproduces_the_engine(window):
    for starvation in (None, "auto"):
        ref = simulate(window, policy="SAF", backfill="sjbf", starvation=starvation)
        res, _ = simulate_ranked(
            window, np.asarray(window.request, float), "SAF", starvation=starvation
        )
        assert np.array_equal(ref.start, res.start)
    ar = simulate(window, policy="SAF", backfill="sjbf", estimate="actual")
    area = np.asarray(window.runtime * window.procs, float)
    for route in ("engine", "chooser"):
        res, _ = simulate_ranked(window, area, "SJF", estimate="actual", route=route)
        assert np.array_equal(ar.start, res.start)


@pytest.mark.parametrize(
    ("rank", "estimate"),
    [
        ("blurred:sigma=1,seed=2", "request"),
        ("like-job", "request"),
        ("ends-within:threshold=60,precision=0.8,recall=0.7,seed=1", "actual"),
    ],
)
def test_rank_chooser_matches_the_engine_rank_estimate(window, rank, estimate):
    a, va = simulate_ranked(window, rank, "SAF", estimate=estimate, route="engine")
    b, vb = simulate_ranked(window, rank, "SAF", estimate=estimate, route="chooser")
    assert np.array_equal(va, vb)
    assert np.array_equal(a.start, b.start)


def test_rank_first_mode_and_online_rank(window):
    res, values = simulate_ranked(window, "like-job", "SAF", mode="first", threshold=60)
    assert np.all(values <= window.request)
    assert res.metrics["jobs"] == len(window)
    with pytest.raises(ValueError, match="rank mode"):
        RankChooser("request", mode="nope")


# ------------------------------------------------------------------------- search
def test_search_never_worse_than_its_seed_and_deterministic(window):
    area = np.asarray(window.runtime * window.procs, float)
    ar = simulate(window, policy="SAF", backfill="sjbf", estimate="actual")
    a = improve_priorities(window, area, budget=25, rng=3)
    assert a.seed_value == pytest.approx(ar.metrics["avg_bsld"])
    assert a.value <= a.seed_value
    assert all(x >= y for x, y in zip(a.trace, a.trace[1:], strict=False))
    b = improve_priorities(window, area, budget=25, rng=3)
    assert a.value == b.value and np.array_equal(a.priorities, b.priorities)
    res, _ = simulate_ranked(window, a.priorities, "SJF", estimate="actual")
    assert res.metrics["avg_bsld"] == pytest.approx(a.value)


# ------------------------------------------------------------------------- bound
def test_bound_below_brute_force_optimum_on_tiny_instances():
    pytest.importorskip("ortools")
    from hpcgym.evaluation.bound import SCALE, block_bound, serial_optimum

    rng = np.random.default_rng(7)
    for _ in range(6):
        n = int(rng.integers(3, 6))
        r = np.sort(rng.integers(0, 40, n)).astype(float)
        p = rng.integers(1, 60, n).astype(float)
        q = rng.integers(1, 4, n)
        opt = serial_optimum(r, p, q, 4)
        res = block_bound(r, p, q, 4, time_limit=5)
        assert res.lower <= opt + 1e-9
        assert res.status == "OPTIMAL"  # tiny: proven, so the bound is tight up to the scale
        assert res.lower >= opt - n / SCALE - 1e-9
        assert res.incumbent == pytest.approx(opt)


def test_fluid_bound_below_brute_force_optimum():
    from hpcgym.evaluation.bound import fluid_bound, serial_optimum

    rng = np.random.default_rng(11)
    above_n = 0
    for _ in range(30):
        n = int(rng.integers(2, 6))
        r = np.sort(rng.integers(0, 30, n)).astype(float)
        p = rng.integers(1, 80, n).astype(float)
        q = rng.integers(1, 5, n)
        lb = fluid_bound(r, p, q, 4)
        assert n <= lb <= serial_optimum(r, p, q, 4) + 1e-9
        above_n += lb > n + 1e-9
    assert above_n > 0  # it does more than the trivial bsld >= 1


def test_window_bound_below_every_heuristic(window):
    pytest.importorskip("ortools")
    from hpcgym.evaluation.bound import window_bound

    w = window.window(0, 120)
    ref = simulate(w, policy="SAF", backfill="sjbf", estimate="actual")
    b = window_bound(w, ref.start, size=24, count=2, time_limit=2)
    assert b["block_jobs"] == 48 and 1.0 <= b["lower"]
    assert b["lower"] == max(b["blocks_lower"], b["fluid_lower"])
    for pol in ("FCFS", "SJF", "SAF", "F1", "WFP3"):
        for est in ("request", "actual"):
            v = simulate(w, policy=pol, backfill="sjbf", estimate=est).metrics["avg_bsld"]
            assert b["lower"] <= v + 1e-9


# ------------------------------------------------------------------------- bench
def test_ladder_writes_tables_between_markers(tmp_path):
    from bench import ladder

    doc = tmp_path / "doc.md"
    doc.write_text("# x\n\ntext\n")
    ladder.write_between(doc, "ladder:schedule", "| a |\n")
    ladder.write_between(doc, "ladder:schedule", "| b |\n")
    body = doc.read_text()
    assert "| b |" in body and "| a |" not in body and body.startswith("# x")
    assert ladder.guard_seconds("54h", "x") == 54 * 3600.0
    assert ladder.guard_seconds("7200", "x") == 7200.0
    assert ladder.guard_seconds(None, "x") is None and ladder.guard_seconds("none", "x") is None
    assert ladder.guard_seconds("deployable", "SDSC-SP2") == 54 * 3600.0
    rungs = ladder.schedule_rungs("SAF", "auto", 60.0, 0)
    keys = [r.key for r in rungs]
    assert len(keys) == len(set(keys))
    assert {r.group for r in rungs} == set(ladder.GROUPS)
