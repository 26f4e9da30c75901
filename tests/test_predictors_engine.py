"""The estimators driven by the real engine (hpcgym.sim): interface, caps and no leak."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.predictors import make_estimator
from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.workload.core import Workload

SPECS = [
    "request",
    "actual",
    "noisy:0.4",
    "ave2",
    "eloss",
    "tang-user:min_jobs=5",
    "tang-project:min_jobs=5",
    "tang-combined:min_jobs=5",
    "tang-selective:min_jobs=5",
]


class Recorder(Estimator):
    """Wraps an online estimator and records what the engine asked and was told."""

    online = True

    def __init__(self, inner: Estimator) -> None:
        self.inner = inner
        self.name = inner.name
        self.running_estimate = inner.running_estimate

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self.inner.bind(workload, rng)
        self.pred = np.full(len(workload), np.nan)
        self.finished: list[int] = []
        self.times: list[float] = []

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        assert np.all(np.isfinite(end_times))
        self.finished.extend(np.asarray(jobs).tolist())
        self.inner.observe_finished(jobs, end_times)

    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        self.inner.observe_started(jobs, start_times)

    def predict(self, job: int, view: SystemView) -> float:
        assert np.isnan(self.pred[job]), "predicted twice"
        assert view.now == self.workload.submit[job]
        assert np.all(np.isfinite(view.start[view.running]))
        self.times.append(view.now)
        v = self.inner.predict(job, view)
        self.pred[job] = v
        return v


def random_workload(seed: int, n: int = 300, m: int = 32) -> Workload:
    rng = np.random.default_rng(seed)
    rt = np.ceil(rng.lognormal(6.0, 1.5, n))
    return Workload(
        name=f"random{seed}",
        machine_size=m,
        job_id=np.arange(1, n + 1),
        submit=np.cumsum(rng.integers(0, 400, n)).astype(float),
        runtime=rt,
        procs=rng.integers(1, m + 1, n),
        request=np.ceil(rt * rng.uniform(1.0, 6.0, n)),
        user=rng.integers(-1, 8, n),
        group=rng.integers(-1, 3, n),
        executable=-np.ones(n, dtype=np.int64),
        queue=-np.ones(n, dtype=np.int64),
        meta={"UnixStartTime": "893466664", "TimeZoneString": "US/Pacific"},
    )


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("correction", ["requested", "incremental", "doubling"])
def test_engine_runs_every_estimator(spec: str, correction: str) -> None:
    from hpcgym.sim import Simulation

    w = random_workload(1)
    sim = Simulation(w, "FCFS", "sjbf", make_estimator(spec), correction, seed=3)
    res = sim.run()
    est = sim.estimates
    assert np.all(est <= w.request) and np.all(est > 0)
    assert np.all(np.isfinite(res.start)) and np.all(res.start >= w.submit)
    assert np.isfinite(res.metrics["avg_bsld"])


@pytest.mark.parametrize("spec", [s for s in SPECS if s.split(":")[0] not in ("actual", "noisy")])
def test_no_leak_through_the_engine(spec: str) -> None:
    from hpcgym.sim import simulate

    w = random_workload(2)
    k = 150
    rt2 = w.runtime.copy()
    rt2[k] = max(1.0, np.floor(rt2[k] / 3))
    w2 = Workload(**{**w.__dict__, "runtime": rt2})
    recs = []
    starts = []
    for wk in (w, w2):
        rec = Recorder(make_estimator(spec))
        res = simulate(wk, "FCFS", "easy", rec, "incremental", seed=0)
        recs.append(rec)
        starts.append(res.start)
    assert starts[0][k] == starts[1][k]
    # every job submitted before job k could have ended saw the same history and state
    same = w.submit < starts[0][k] + min(w.runtime[k], rt2[k])
    assert same[k] and same.sum() > k
    np.testing.assert_array_equal(recs[0].pred[same], recs[1].pred[same])
    # the engine reports every job finished exactly once, in completion order
    ends = starts[0] + w.runtime
    fin = np.asarray(recs[0].finished)
    assert len(set(fin.tolist())) == len(fin)
    assert np.all(np.diff(ends[fin]) >= 0)


def test_selective_keeps_the_request_for_running_jobs() -> None:
    from hpcgym.sim import simulate

    w = random_workload(3)
    comb = simulate(w, "FCFS", "easy", make_estimator("tang-combined:min_jobs=5"), "incremental")
    sel = simulate(w, "FCFS", "easy", make_estimator("tang-selective:min_jobs=5"), "incremental")
    assert comb.counters["corrections"] > 0
    assert sel.counters["corrections"] == 0  # running ends use the request: never exceeded


def test_arrival_observer_predicts_like_the_engines_own_estimator() -> None:
    """A second online estimator fed through ``observe_arrivals`` predicts every job at its
    submission with the same information as the engine's own (E-Loss needs a prediction
    before the job finishes: the RL env's feature predictor relies on this)."""
    from hpcgym.sim.engine import EstimatorFeed, Simulation
    from hpcgym.sim.estimators import make_estimator
    from hpcgym.workload import load

    window = load(None).window(500, 300)
    sim = Simulation(window, backfill="external", estimate="eloss", candidates="easy")
    engine_at_submission = np.full(len(window), np.nan)
    observed = np.full(len(window), np.nan)
    feed = EstimatorFeed(make_estimator("eloss"))
    feed.estimator.bind(window, np.random.default_rng(0))

    def record(s: Simulation, lo: int, hi: int) -> None:
        engine_at_submission[lo:hi] = s.estimates[lo:hi]  # before any correction
        feed.predict(s, lo, hi, observed)

    sim.observe_arrivals(record)
    res = sim.run(lambda s: int(s.candidates()[0][0]))
    assert np.isfinite(observed).all()
    np.testing.assert_array_equal(observed, engine_at_submission)
    assert res.counters["corrections"] > 0  # estimates did change after submission
    with pytest.raises(RuntimeError, match="before the first advance"):
        sim.observe_arrivals(record)
