"""Tests of the Lublin-Feitelson generator and the synthetic request models."""

from __future__ import annotations

import math
import time
from collections import Counter

import numpy as np
import pytest

from hpcgym.workload import lublin as L
from hpcgym.workload.core import COLUMNS, Workload

HOUR = 3600


@pytest.fixture(scope="module")
def big() -> Workload:
    """A large typed sample on 256 processors (native arrivals, no request model)."""
    return L.generate(n_jobs=40_000, machine_size=256, seed=7, request_model="none")


# ----------------------------------------------------------------- special functions
@pytest.mark.parametrize("x", [0.01, 0.5, 1.0, 2.5, 7.0, 30.0])
def test_gamma_cdf_exponential(x: float) -> None:
    assert L.gamma_cdf(x, 1.0, 1.0) == pytest.approx(1 - math.exp(-x), rel=1e-12, abs=1e-15)
    assert L.gamma_cdf(3 * x, 1.0, 3.0) == pytest.approx(1 - math.exp(-x), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("shape", [2, 3, 7])
@pytest.mark.parametrize("x", [0.3, 1.5, 4.0, 9.0, 25.0])
def test_gamma_cdf_erlang(shape: int, x: float) -> None:
    # P(k, x) = 1 - e^-x sum_{j<k} x^j / j!  (covers the series and the fraction branch)
    exact = 1 - math.exp(-x) * sum(x**j / math.factorial(j) for j in range(shape))
    assert L.gamma_cdf(x, float(shape), 1.0) == pytest.approx(exact, rel=1e-10, abs=1e-14)


def test_daily_cycle_weights() -> None:
    for tp in (L.INTERACTIVE_PARAMS, L.BATCH_PARAMS, L.TYPELESS_PARAMS):
        w = L.daily_cycle_weights(tp.anum, tp.bnum)
        assert w.shape == (48,)
        assert w.mean() == pytest.approx(1.0)
        assert np.all(w > 0)
        # the daily peak is in the early afternoon, the trough early in the morning
        assert 24 <= int(w.argmax()) <= 30
        assert 6 <= int(w.argmin()) <= 11
        assert w.max() / w.min() > 5


# ----------------------------------------------------------------- determinism, columns
def _same(a: Workload, b: Workload) -> bool:
    return all(np.array_equal(getattr(a, c), getattr(b, c)) for c in COLUMNS)


def test_determinism() -> None:
    a = L.generate(n_jobs=3000, seed=3)
    b = L.generate(n_jobs=3000, seed=3)
    c = L.generate(n_jobs=3000, seed=4)
    assert _same(a, b)
    assert a.meta == b.meta and a.source == b.source
    assert not np.array_equal(a.submit, c.submit)
    assert not np.array_equal(a.runtime, c.runtime)
    assert not np.array_equal(a.request, c.request)
    assert a.name == "lublin-256-seed3"


def test_request_model_leaves_jobs_unchanged() -> None:
    runs = {m: L.generate(n_jobs=2000, seed=1, request_model=m) for m in L.REQUEST_MODELS}
    ref = runs["none"]
    for w in runs.values():
        for col in ("submit", "runtime", "procs", "queue", "user"):
            assert np.array_equal(getattr(w, col), getattr(ref, col)), col
    assert np.array_equal(ref.request, ref.runtime)
    assert not np.array_equal(runs["tsafrir"].request, runs["factor"].request)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"machine_size": 1},
        {"machine_size": 64, "load": 0.7},
        {"machine_size": 100, "request_model": "factor"},
        {"machine_size": 1024, "job_types": False},
        {"start_hour": 9, "n_users": 0},
    ],
)
def test_columns_valid(kwargs: dict) -> None:
    n = 2500
    w = L.generate(n_jobs=n, seed=11, **kwargs)
    m = kwargs.get("machine_size", 256)
    assert len(w) == n and w.machine_size == m
    assert np.array_equal(w.job_id, np.arange(1, n + 1))
    assert w.submit[0] == 0 and np.all(np.diff(w.submit) >= 0)
    assert np.all(w.submit == np.floor(w.submit))
    assert np.all((w.procs >= 1) & (w.procs <= m))
    assert np.all(w.runtime >= 1) and np.all(w.runtime == np.floor(w.runtime))
    assert np.all(w.runtime <= math.exp(12))
    assert np.all(w.request >= w.runtime)
    assert set(np.unique(w.queue)) <= {L.INTERACTIVE, L.BATCH}
    if kwargs.get("n_users", 100) == 0:
        assert np.all(w.user == -1)
    else:
        assert w.user.min() >= 1 and w.user.max() <= 100
    assert np.all(w.group == -1) and np.all(w.executable == -1)
    assert w.report.records == n and w.report.kept == n and not w.report.dropped
    assert "lublin" in w.source and f"machine_size={m}" in w.source
    assert int(w.meta["UnixStartTime"]) >= kwargs.get("start_hour", 0) * HOUR


@pytest.mark.parametrize("m", [1, 2, 8, 100, 128, 256, 1024, 93_312])
def test_size_pmf_is_a_distribution(m: int) -> None:
    for tp in (L.INTERACTIVE_PARAMS, L.BATCH_PARAMS, L.TYPELESS_PARAMS):
        pmf = L.size_pmf(L.scaled_type_params(tp, m), m)
        assert pmf.shape == (m + 1,) and pmf[0] == 0
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12) and pmf.min() >= -1e-15
        assert pmf[1] >= tp.serial_prob - 1e-12


def test_small_machines_and_sizes() -> None:
    assert np.all(L.generate(n_jobs=500, machine_size=1).procs == 1)
    w = L.generate(n_jobs=20_000, machine_size=100, request_model="none")
    pow2 = (w.procs & (w.procs - 1)) == 0
    assert w.procs[pow2].max() == 64  # power-of-two sizes stay within the machine
    assert 64 < w.procs.max() <= 100
    big = L.generate(n_jobs=20_000, machine_size=1024, request_model="none")
    assert np.mean(big.procs > 256) > 0.01  # sizes scale with the machine


# ----------------------------------------------------------------- model statistics
@pytest.mark.parametrize(("queue", "tp"), [(0, L.INTERACTIVE_PARAMS), (1, L.BATCH_PARAMS)])
def test_size_fractions(big: Workload, queue: int, tp: L.LublinTypeParams) -> None:
    scaled = L.scaled_type_params(tp, 256)
    procs = big.procs[big.queue == queue]
    assert procs.size > 3000
    assert np.mean(procs == 1) == pytest.approx(tp.serial_prob, abs=0.03)
    pow2 = np.mean((procs > 1) & ((procs & (procs - 1)) == 0))
    assert pow2 == pytest.approx(L.expected_pow2_fraction(scaled, 256), abs=0.03)
    # the whole size distribution matches the exact one (Kolmogorov-Smirnov distance)
    pmf = L.size_pmf(scaled, 256)
    assert pmf.sum() == pytest.approx(1.0)
    emp = np.bincount(procs, minlength=257) / procs.size
    assert np.abs(np.cumsum(emp) - np.cumsum(pmf)).max() < 2.0 / math.sqrt(procs.size)
    assert procs.mean() == pytest.approx(float(np.dot(np.arange(257), pmf)), rel=0.05)
    assert procs.max() <= 2**scaled.uhi + 0.5


def test_job_class_mix(big: Workload) -> None:
    # interactive arrivals are far more frequent than batch ones in the model
    assert 0.80 < np.mean(big.queue == L.INTERACTIVE) < 0.92


@pytest.mark.parametrize(("queue", "tp"), [(0, L.INTERACTIVE_PARAMS), (1, L.BATCH_PARAMS)])
def test_runtime_hyper_gamma(big: Workload, queue: int, tp: L.LublinTypeParams) -> None:
    sel = big.queue == queue
    procs, lr = big.procs[sel], np.log(big.runtime[sel] + 0.5)
    p = np.clip(tp.pa * procs + tp.pb, 0, 1)
    expected = np.mean(p * tp.a1 * tp.b1 + (1 - p) * tp.a2 * tp.b2)
    assert lr.mean() == pytest.approx(expected, abs=0.12)
    # correlation with size: big jobs are much longer than serial ones
    assert lr[procs >= 64].mean() - lr[procs == 1].mean() > 0.7


def test_typeless_matches_parameters() -> None:
    w = L.generate(n_jobs=30_000, job_types=False, request_model="none", seed=5)
    tp = L.scaled_type_params(L.TYPELESS_PARAMS, 256)
    assert np.all(w.queue == 0)
    assert np.mean(w.procs == 1) == pytest.approx(tp.serial_prob, abs=0.015)
    pow2 = np.mean((w.procs > 1) & ((w.procs & (w.procs - 1)) == 0))
    assert pow2 == pytest.approx(L.expected_pow2_fraction(tp, 256), abs=0.015)


def test_daily_cycle() -> None:
    w = L.generate(n_jobs=30_000, job_types=False, request_model="none", seed=2)
    tod = (w.submit + int(w.meta["UnixStartTime"])) % 86400
    hist = np.bincount((tod // 1800).astype(int), minlength=48).astype(float)
    weights = L.daily_cycle_weights(L.TYPELESS_PARAMS.anum, L.TYPELESS_PARAMS.bnum)
    assert np.corrcoef(hist, weights)[0, 1] > 0.95
    assert hist[24:32].mean() > 4 * hist[4:10].mean()


@pytest.mark.parametrize("target", [0.5, 0.85, 1.3])
def test_offered_load_hits_target(target: float) -> None:
    w = L.generate(n_jobs=3000, load=target, seed=9, request_model="none")
    assert w.offered_load == pytest.approx(target, rel=0.01)
    assert float(w.meta["OfferedLoad"]) == pytest.approx(w.offered_load, rel=1e-6)
    native = L.generate(n_jobs=3000, seed=9, request_model="none")
    # the arrival-rate multiplier only rescales time: same jobs, same order
    assert np.array_equal(np.sort(w.runtime), np.sort(native.runtime))
    assert 0.1 < native.offered_load < 2.0


# ----------------------------------------------------------------- requests
def test_tsafrir_requests() -> None:
    w = L.generate(n_jobs=10_000, seed=0, request_model="tsafrir")
    req = w.request
    assert np.all(req >= w.runtime)
    assert np.mean(req != w.runtime) > 0.99
    assert np.all(req % 10 == 0)  # round values: minutes, or minutes +-10/20/30 s
    counts = Counter(req.astype(int).tolist())
    assert 80 <= len(counts) <= L._binnum(10_000)
    top = counts.most_common(20)
    assert sum(c for _, c in top) / len(w) == pytest.approx(0.89, abs=0.02)
    # the maximal estimate (48 h) is the most popular value, ~21.7 % of the jobs
    assert top[0][0] == 48 * HOUR
    assert top[0][1] / len(w) == pytest.approx(0.2174, abs=0.01)
    head = set(L._head_times(48 * HOUR))
    assert head <= set(counts)
    assert {5 * 60, 15 * 60, HOUR, 2 * HOUR, 18 * HOUR} <= head
    assert sum(c for t, c in counts.items() if t in head) / len(w) == pytest.approx(0.89, abs=0.02)


@pytest.mark.parametrize("n", [1, 5, 19, 20, 50, 199, 200, 1000, 12_345])
def test_tsafrir_histogram_counts(n: int) -> None:
    times, counts = L.tsafrir_histogram(n, 48 * HOUR, np.random.default_rng(0))
    assert counts.sum() == n and np.all(counts >= 0)
    assert np.all(np.diff(times) > 0) and times[-1] == 48 * HOUR and times[0] > 0


def test_binnum_model() -> None:
    assert [L._binnum(k) for k in (20, 200, 1000, 10_000, 70_000, 250_000, 10**6)] == [
        10,
        20,
        35,
        90,
        340,
        565,
        565,
    ]


def test_tsafrir_repair_when_runtimes_are_long() -> None:
    rt = np.full(300, 40.0 * HOUR)
    rt[:100] = 60.0
    req, info = L._tsafrir(rt, np.random.default_rng(1), 48 * HOUR)
    assert np.all(req >= rt)
    # the model's histogram gives ~22 % of the jobs the maximum: too few to cover the
    # 2/3 of jobs that run 40 h, so the maximum's share is raised until it covers them
    n_max, model = info["TsafrirMaxEstimateJobs"].replace(")", "").split(" (model: ")
    assert int(model) < 0.3 * rt.size and int(n_max) > int(model)
    assert np.mean(req == 48 * HOUR) >= int(n_max) / rt.size - 1e-12
    assert len(np.unique(req[:100])) > 3
    # synthesize_requests is the same model behind a simpler interface
    req2 = L.synthesize_requests(rt, "tsafrir", 1, max_estimate=48 * HOUR)
    assert np.array_equal(req, req2)


def test_factor_and_none_requests() -> None:
    rt = np.array([1.0, 10.0, 100.0, 3600.0] * 500)
    req = L.synthesize_requests(rt, "factor", 3, factor_max=3.0)
    assert np.all(req >= rt) and np.all(req <= np.ceil(3.0 * rt))
    assert np.mean(req > rt) > 0.9
    assert np.array_equal(L.synthesize_requests(rt, "none"), rt)


def test_users_zipf() -> None:
    w = L.generate(n_jobs=20_000, n_users=50, user_zipf=1.0, request_model="none")
    freq = np.bincount(w.user, minlength=51)[1:]
    assert freq.argmax() == 0
    assert freq[0] / freq[9] == pytest.approx(10.0, rel=0.25)  # P(k) ~ 1/k


def test_overrides() -> None:
    w = L.generate(n_jobs=20_000, serial_prob_batch=0.6, pow2_prob_batch=0.3, request_model="none")
    assert np.mean(w.procs[w.queue == L.BATCH] == 1) == pytest.approx(0.6, abs=0.04)
    w2 = L.generate(n_jobs=5000, uhi=5.0, umed=4.0, request_model="none")
    assert w2.procs.max() <= 32


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"request_model": "perfect"}, "tsafrir, factor, none"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": 2.5}, "n_jobs"),
        ({"machine_size": 0}, "machine_size"),
        ({"seed": -1}, "seed"),
        ({"load": -0.5}, "load"),
        ({"load": float("nan")}, "load"),
        ({"load": 0.8, "n_jobs": 1}, "n_jobs >= 2"),
        ({"start_hour": 24}, "start_hour"),
        ({"bogus": 1}, "valid: job_types"),
        ({"job_types": False, "serial_prob_batch": 0.2}, "serial_prob_batch"),
        ({"serial_prob": 1.5}, "serial_prob"),
        ({"a1_batch": "big"}, "a1_batch must be a number"),
        ({"uhi_batch": 9.0}, "uhi"),
        ({"max_estimate": 1800}, "one hour"),
        ({"max_estimate": 10 * HOUR}, "below the longest runtime"),
        ({"request_model": "factor", "factor_max": 0.5}, "factor_max"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"n_jobs": 2000, **kwargs}
    with pytest.raises(ValueError, match=match):
        L.generate(**args)


def test_synthesize_requests_bad_arguments() -> None:
    with pytest.raises(ValueError, match="tsafrir, factor, none"):
        L.synthesize_requests(np.ones(10), "exact")
    with pytest.raises(ValueError, match="positive"):
        L.synthesize_requests(np.array([1.0, 0.0]))


# ----------------------------------------------------------------- default, speed, SWF
def test_default_workload() -> None:
    w = L.default_workload()
    assert w is L.default_workload()
    assert len(w) == 200_000 and w.machine_size == 256 and w.name == "lublin-default"
    assert w.offered_load == pytest.approx(L.DEFAULT_WORKLOAD_KWARGS["load"], rel=0.01)
    assert np.mean(w.request > w.runtime) > 0.99
    with pytest.raises(ValueError):
        w.runtime[0] = 1.0  # the cached arrays are read-only
    assert _same(w, L.generate(**L.DEFAULT_WORKLOAD_KWARGS))


def test_speed() -> None:
    L.generate(n_jobs=1000)  # warm-up
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        L.generate(n_jobs=10_000, load=0.85)
        best = min(best, time.perf_counter() - t0)
    assert best < 0.5


def test_swf_round_trip(tmp_path) -> None:
    swf = pytest.importorskip("hpcgym.workload.swf")
    w = L.generate(n_jobs=1500, seed=4)
    path = swf.write_swf(w, tmp_path / "lublin.swf.gz")
    back = swf.read_swf(path)
    assert back.machine_size == w.machine_size
    for col in ("job_id", "submit", "runtime", "procs", "request", "user", "queue"):
        assert np.array_equal(getattr(back, col), getattr(w, col)), col
