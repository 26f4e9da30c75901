"""Tests of the estimators' warm start from the accounting log (:mod:`hpcgym.sim.warmstart`).

The replay's event protocol is checked event by event on a hand-made schedule; a warm
AVE2 is recomputed directly from the recorded schedule; a warm E-Loss is shown to use only
jobs the log had completed by the window's first submission (changing any other job of
the past changes nothing); without a past it is the cold estimator; the spellings, errors,
copies and the env's use are covered.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_features import handmade
from test_features_log import with_log

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.sim import get_scheduler
from hpcgym.sim.engine import Simulation
from hpcgym.sim.estimators import Estimator, SystemView, make_estimator
from hpcgym.sim.warmstart import LogWarmStart, parse_warm, replay_log
from hpcgym.workload import load, trace_past
from hpcgym.workload.core import Workload
from hpcgym.workload.swf import write_swf

START = 150  # window start: 150 jobs of the trace's past before it


def _wl(submit: list[float], wait: list[float], runtime: list[float], procs: list[int]) -> Workload:
    n = len(submit)
    zeros = np.zeros(n)
    return Workload(
        name="tiny",
        machine_size=8,
        job_id=np.arange(1, n + 1),
        submit=np.asarray(submit, dtype=float),
        runtime=np.asarray(runtime, dtype=float),
        procs=np.asarray(procs),
        request=np.full(n, 1000.0),
        user=np.zeros(n),
        group=zeros,
        executable=zeros,
        queue=zeros,
        recorded_wait=np.asarray(wait, dtype=float),
    )


class Recorder(Estimator):
    """An online estimator that writes down every call of the protocol."""

    name = "recorder"
    online = True

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self.events: list[tuple[Any, ...]] = []

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        self.events.append(("end", jobs.tolist(), end_times.tolist()))

    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        self.events.append(("start", jobs.tolist(), start_times.tolist()))

    def predict(self, job: int, view: SystemView) -> float:
        self.events.append(("predict", job, view.now, sorted(view.running.tolist()), view.free))
        return 1.0


def test_parse_warm() -> None:
    assert parse_warm("log") == parse_warm("ALL") == -1
    for cold in (None, "none", 0, "0", False, "cold"):
        assert parse_warm(cold) is None
    assert parse_warm(500) == parse_warm("500") == 500
    for bad in ("soon", -3, True, 1.5):
        with pytest.raises(ValueError, match="valid choices"):
            parse_warm(bad)


def test_replay_follows_the_engine_protocol_on_the_recorded_schedule() -> None:
    """Ends, then submissions, then starts at one instant; a zero-runtime job ends after
    its start; unknown waits are left out; nothing after t0 is reported."""
    w = _wl(
        submit=[0, 5, 10, 12, 15, 40],
        wait=[0, 5, 0, np.nan, 100, 0],
        runtime=[10, 0, 20, 50, 100, 10],
        procs=[2, 1, 4, 1, 3, 1],
    )
    rec = Recorder()
    rec.bind(w, np.random.default_rng(0))
    assert replay_log(rec, w, 5, t0=40.0) == 1
    assert rec.events == [
        ("predict", 0, 0.0, [], 8),
        ("start", [0], [0.0]),
        ("predict", 1, 5.0, [0], 6),
        ("end", [0], [10.0]),
        ("predict", 2, 10.0, [], 8),
        ("end", [1], [10.0]),
        ("start", [1, 2], [10.0, 10.0]),
        ("predict", 4, 15.0, [2], 4),
        ("end", [2], [30.0]),
    ]


def _direct_ave2(w: Workload, job: int, t0: float) -> float:
    """AVE2 of ``job`` from the recorded schedule: the mean run time of its user's last two
    jobs completed by ``t0`` (recorded end order, ties by index), else the request."""
    end = w.submit + w.recorded_wait + w.runtime
    mine = [
        i
        for i in range(START)
        if w.user[i] == w.user[job] and w.user[job] >= 0 and np.isfinite(end[i]) and end[i] <= t0
    ]
    mine.sort(key=lambda i: (end[i], i))
    req = float(w.request[job])
    if len(mine) < 2:
        return req
    return min(max(0.5 * (w.runtime[mine[-1]] + w.runtime[mine[-2]]), min(1.0, req)), req)


def test_warm_ave2_equals_a_direct_computation() -> None:
    w = with_log(handmade(n=400, gap=900.0))
    window = w.window(START, 200)
    warm = make_estimator("ave2:warm=log")
    assert isinstance(warm, LogWarmStart)
    warm.bind(window, np.random.default_rng(0))
    assert warm.replayed == START and warm.log_unknown == int(
        np.isnan(w.recorded_wait[:START]).sum()
    )
    t0 = float(window.submit[0])
    empty = SystemView(t0, np.zeros(0, dtype=np.int64), np.full(len(window), np.nan), 32, 32)
    got = [warm.predict(j, empty) for j in range(len(window))]
    want = [_direct_ave2(w, START + j, t0) for j in range(len(window))]
    assert got == pytest.approx(want)
    cold = make_estimator("ave2")
    cold.bind(window, np.random.default_rng(0))
    assert got != [cold.predict(j, empty) for j in range(len(window))]


def _play(w: Workload, spec: str) -> tuple[np.ndarray, np.ndarray]:
    sim = get_scheduler(spec).make_simulation(w.window(START, 200))
    res = sim.run()
    est = sim.estimator
    raw = est.predictions  # the window's rows (LogWarmStart shifts per-job tables)
    if isinstance(est, LogWarmStart):
        np.testing.assert_array_equal(raw, est.inner.predictions[START:])
        assert est.trained == est.inner.trained  # other attributes pass through
    return res.start, raw.copy()  # the model's outputs for the window's jobs


def test_warm_eloss_uses_only_jobs_the_log_completed_by_t0() -> None:
    w = with_log(handmade(n=400, gap=900.0))
    t0 = float(w.submit[START])
    end = w.submit + w.recorded_wait + w.runtime
    base = _play(w, "ELOSS,warm=log")
    cold = _play(w, "ELOSS")
    assert not np.array_equal(base[1], cold[1])

    def changed(i: int, runtime: float | None = None, wait: float | None = None) -> Workload:
        rt, rw = w.runtime.copy(), w.recorded_wait.copy()
        if runtime is not None:
            rt[i] = runtime
        if wait is not None:
            rw[i] = wait
        kw = {c: getattr(w, c) for c in ("job_id", "submit", "procs", "request", "user")}
        kw.update({c: getattr(w, c) for c in ("group", "executable", "queue")})
        return Workload(
            name=w.name,
            machine_size=w.machine_size,
            runtime=rt,
            meta=w.meta,
            recorded_wait=rw,
            **kw,
        )

    late = next(i for i in range(START) if np.isfinite(end[i]) and end[i] > t0)
    unknown = next(i for i in range(START) if np.isnan(w.recorded_wait[i]))
    done = next(i for i in range(START - 1, -1, -1) if np.isfinite(end[i]) and end[i] < t0 - 60)
    for w2 in (changed(late, runtime=w.runtime[late] + 5000.0), changed(unknown, runtime=7.0)):
        got = _play(w2, "ELOSS,warm=log")
        np.testing.assert_array_equal(got[0], base[0])
        np.testing.assert_array_equal(got[1], base[1])
    got = _play(changed(done, runtime=max(1.0, w.runtime[done] * 0.5)), "ELOSS,warm=log")
    assert not np.array_equal(got[1], base[1])


def test_without_a_past_warm_is_cold() -> None:
    w = with_log(handmade(n=300, gap=900.0))
    for wl in (w, w.window(0, 200)):
        a = get_scheduler("ELOSS").simulate(wl)
        b = get_scheduler("ELOSS,warm=log").simulate(wl)
        np.testing.assert_array_equal(a.start, b.start)
    # a workload with no recorded schedule and no past: nothing to replay, no error
    get_scheduler("EASY++,warm=log").simulate(handmade(n=100))


def test_warm_n_replays_the_last_n_jobs() -> None:
    w = with_log(handmade(n=400, gap=900.0))
    est = make_estimator("eloss", warm=40)
    est.bind(w.window(START, 100), np.random.default_rng(0))
    assert est.replayed == 40
    assert est.inner.trained > 0  # some of the 40 completed before t0
    assert est.name == "eloss+warm=40"


def test_errors_say_what_to_do(tmp_path: Path) -> None:
    no_log = handmade(n=300).window(START, 100)
    with pytest.raises(ValueError, match="no recorded schedule"):
        get_scheduler("ELOSS,warm=log").simulate(no_log)
    with pytest.raises(ValueError, match="static"):
        make_estimator("request:warm=log")
    with pytest.raises(ValueError, match="static"):
        get_scheduler("EASY,warm=log").make_simulation(no_log)
    with pytest.raises(ValueError, match="valid choices"):
        get_scheduler("ELOSS,warm=soon")
    with pytest.raises(ValueError, match="warm"):
        make_estimator("eloss:nonsense=1")  # the listed options include warm
    # an unpickled window has no parent and its source cannot be loaded
    lost = pickle.loads(pickle.dumps(with_log(handmade(n=300)).window(START, 100)))
    assert lost.parent is None
    with pytest.raises(ValueError, match="cannot load the trace"):
        get_scheduler("ELOSS,warm=log").simulate(lost)


def test_an_unpickled_window_finds_its_past_through_its_source(tmp_path: Path) -> None:
    path = tmp_path / "logged.swf"
    write_swf(with_log(handmade(n=400, gap=900.0)), path)
    full = load(str(path))
    window = full.window(START, 200)
    again = pickle.loads(pickle.dumps(window))
    assert again.parent is None and window.parent is full
    assert len(trace_past(again)) == START
    a = get_scheduler("ELOSS,warm=log").simulate(window)
    b = get_scheduler("ELOSS,warm=log").simulate(again)
    np.testing.assert_array_equal(a.start, b.start)
    other = load(str(path)).window(0, 300)
    other.submit = other.submit + 1.0  # not the trace's jobs any more
    bad = Workload(**{**other.__dict__, "offset": 5, "parent": None})
    with pytest.raises(ValueError, match="not a window"):
        trace_past(bad)


def test_scheduler_spellings_and_records() -> None:
    s = get_scheduler("SJF+ELOSS,warm=log")
    assert (s.policy, s.warm, s.estimate) == ("SJF", "log", "eloss")
    assert s.to_dict()["warm"] == "log"
    assert "warm" not in get_scheduler("ELOSS").to_dict()
    assert get_scheduler("EASY++,warm=500").warm == "500"
    assert get_scheduler("ELOSS,warm=none").warm is None


def test_copies_share_the_joined_workload_and_agree() -> None:
    w = with_log(handmade(n=400, gap=900.0))
    window = w.window(START, 200)
    sim = Simulation(
        window,
        policy="FCFS",
        backfill="sjbf",
        estimate="eloss:warm=log",
        correction="incremental-offset",
    )
    sim.advance()
    snap = sim.snapshot()
    est = sim.estimator
    twin = copy.deepcopy(est)
    assert twin.inner.workload is est.inner.workload
    assert twin.inner.model is not est.inner.model
    a = sim.run()
    sim.restore(snap)
    b = sim.run()
    np.testing.assert_array_equal(a.start, b.start)


def test_env_with_warm_estimator_and_feature_predictor() -> None:
    w = with_log(handmade(n=600, gap=900.0))
    kw: dict[str, Any] = dict(window_length=100, split="all", reference=None, mode="guarded")
    env = BackfillEnv(
        trace=w,
        estimator="eloss:warm=log",
        correction="incremental-offset",
        feature_predictor="ave2:warm=log",
        **kw,
    )
    cold = BackfillEnv(
        trace=w, estimator="eloss", correction="incremental-offset", feature_predictor="ave2", **kw
    )
    obs, info = env.reset(seed=3)
    obs_cold, _ = cold.reset(seed=3)
    est = env.simulation.estimator
    assert env.simulation.workload.offset > 0
    assert isinstance(est, LogWarmStart) and est.replayed == env.simulation.workload.offset
    assert not np.array_equal(obs, obs_cold)
    for _ in range(5):
        mask = env.action_masks()
        obs, _, done, trunc, _ = env.step(int(np.flatnonzero(mask)[0]))
        if done or trunc:
            break
    again = pickle.loads(pickle.dumps(env))
    assert isinstance(again.simulation.estimator, LogWarmStart)


def test_replay_views_show_no_start_before_it_happens() -> None:
    """The view at each replayed submission holds the recorded starts that have happened
    by then and no later one (as the engine's view: ``nan`` until a job starts)."""
    w = with_log(handmade(n=300, gap=900.0))
    seen: list[bool] = []

    class Peek(Recorder):
        def predict(self, job: int, view: SystemView) -> float:
            known = np.isfinite(view.start)
            seen.append(bool(np.all(view.start[known] <= view.now)))
            seen.append(set(view.running.tolist()) <= set(np.flatnonzero(known).tolist()))
            return 1.0

    est = Peek()
    est.bind(w, np.random.default_rng(0))
    replay_log(est, w, START, float(w.submit[START]))
    assert len(seen) > 2 * 100 and all(seen)


@pytest.mark.parametrize("spec", ["TANG-user,warm=log", "TANG-selective,warm=log"])
def test_tang_estimators_warm_start(spec: str) -> None:
    w = with_log(handmade(n=600, gap=900.0)).window(300, 200)
    warm = get_scheduler(spec).simulate(w)
    cold = get_scheduler(spec.split(",")[0]).simulate(w)
    assert warm.metrics["avg_bsld"] > 0
    assert not np.array_equal(warm.start, cold.start)


def test_the_hmm_refuses_a_warm_start() -> None:
    """The HMM's training waits for every job of a submission bin to finish; the log's
    jobs still running at the window's start never do, so it says it cannot be warmed."""
    with pytest.raises(ValueError, match="cannot be warm-started.*closed submission bins"):
        make_estimator("hmm:warm=log")
    with pytest.raises(ValueError, match="cannot be warm-started"):
        get_scheduler("EASY-HMM,warm=log").make_simulation(handmade(n=50))


def test_split_warm_and_its_label() -> None:
    from hpcgym.sim.warmstart import split_warm, warm_label

    assert split_warm("log-ridge:lam=10,warm=log") == ("log-ridge:lam=10", "log")
    assert split_warm("eloss:warm=500") == ("eloss", "500")
    assert split_warm("eloss") == ("eloss", None)
    assert split_warm("eloss:warm=0,over=linear") == ("eloss:over=linear", None)
    assert warm_label("ALL") == "log" and warm_label(None) is None
