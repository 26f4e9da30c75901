"""Tests of the extended observation features (``BackfillEnv(features="extended")``).

Every extended column is recomputed here, independently, from the simulation's public
state and the workload's columns (``runtime`` only for jobs that have completed), on a
handmade workload with users and a time zone that changes to daylight saving time
during the window; the *online* property is tested by changing the future of the
trace; the default feature set is checked to be unchanged.
"""

from __future__ import annotations

import pickle
import warnings
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import gymnasium as gym
import numpy as np
import pytest
from conftest import same_metrics
from test_vector_env import compare_with_sync, sync

import hpcgym.envs  # noqa: F401 - registers hpcgym/Backfill-v0
from hpcgym.envs import features as X
from hpcgym.envs import observation as FT
from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.envs.vector import BackfillVectorEnv
from hpcgym.sim.engine import EstimatorFeed
from hpcgym.sim.estimators import Estimator
from hpcgym.workload.core import Workload

#: 2002-04-05 22:40 UTC: the window crosses the US/Pacific switch to daylight saving
#: time (2002-04-07 10:00 UTC)
UNIX0 = 1018046400
TZ = "US/Pacific"
HOUR, DAY, WEEK = 3600.0, 86400.0, 7 * 86400.0
NAMES = list(X.EXTENDED_COLUMNS)


def handmade(n: int = 260, m: int = 32, seed: int = 0, gap: float = 1500.0) -> Workload:
    """A random workload with 6 users (and a few unknown ones) and a time zone header."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(gap, n)).round(0)
    runtime = rng.uniform(30.0, 20000.0, n).round(0)
    request = (runtime * rng.uniform(1.0, 4.0, n)).round(0)
    procs = rng.choice([1, 2, 4, 8, 16, 24, 32], n, p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.05, 0.05])
    user = rng.integers(0, 6, n) * 7 + 3  # sparse SWF ids
    user[rng.random(n) < 0.05] = -1  # unknown users
    zeros = np.zeros(n)
    return Workload(
        name="handmade",
        machine_size=m,
        job_id=np.arange(1, n + 1),
        submit=submit,
        runtime=runtime,
        procs=procs,
        request=request,
        user=user,
        group=zeros,
        executable=zeros,
        queue=zeros,
        meta={"UnixStartTime": str(UNIX0), "TimeZone": "-28800", "TimeZoneString": TZ},
    )


def env_on(w: Workload, **kw: Any) -> BackfillEnv:
    kw.setdefault("window_length", 200)
    kw.setdefault("split", "all")
    kw.setdefault("reference", None)
    return BackfillEnv(trace=w, features="extended", **kw)


def cnt(x: float) -> float:
    return min(np.log2(1.0 + x) / 10.0, 1.0)


def direct(env: BackfillEnv, rows: np.ndarray) -> np.ndarray:
    """The extended columns of the current decision point, recomputed from the public
    simulation state and the workload (``(shown, 14)`` float64)."""
    sim = env.simulation
    view = sim.view
    w = sim.workload  # the window
    trace = env.workload
    start = env._start
    now, shadow, extra, head, m = sim.now, sim.shadow, sim.extra, sim.head, w.machine_size
    est = sim.estimates
    # clock
    local = datetime.fromtimestamp(now + UNIX0, ZoneInfo(TZ))
    tod = local.hour * 3600 + local.minute * 60 + local.second + local.microsecond * 1e-6
    week = (local.weekday() * DAY + tod) / WEEK
    # arrivals: the trace's jobs before the window and the window's submitted jobs
    seen = np.arange(start + view.submitted)
    loads = []
    for span in (HOUR, DAY):
        sel = seen[trace.submit[seen] > now - span]
        r = float(np.sum(trace.procs[sel] * trace.request[sel])) / (m * span)
        loads.append(r / (1 + r))
    waiting = sim.waiting()
    backlog = float(np.sum(w.procs[waiting] * est[waiting])) / m
    # completed jobs: started and ended by now (the workload's runtime is read only for them)
    st = sim.start_times
    started = np.flatnonzero(np.isfinite(st))
    end = st[started] + w.runtime[started]
    done = started[end <= now]
    done = done[np.argsort(st[done] + w.runtime[done], kind="stable")]
    running = started[end > now]
    ratio = w.runtime / w.request
    prior = float(np.mean(ratio[done])) if len(done) else 1.0
    shown_est = est[rows]
    out = []
    for j in rows:
        u = w.user[j]
        if u >= 0:
            mine = done[w.user[done] == u][-X.USER_HISTORY :]
            acc = float(np.mean(ratio[mine])) if len(mine) else prior
            n_run = int(np.sum(w.user[running] == u))
            n_wait = int(np.sum(w.user[waiting] == u)) - 1
        else:
            acc, n_run, n_wait = prior, 0, 0
        s = shadow - now - est[j]
        xl = extra - w.procs[j] if now + est[j] > shadow else extra
        out.append(
            [
                (1 + np.sin(2 * np.pi * tod / DAY)) / 2,
                (1 + np.cos(2 * np.pi * tod / DAY)) / 2,
                week,
                loads[0],
                loads[1],
                cnt(len(waiting)),
                backlog / (backlog + DAY),
                (extra + w.procs[head]) / m,
                (1 + s / (abs(s) + HOUR)) / 2,
                (1 + xl / m) / 2,
                np.sum(shown_est < est[j]) / max(len(rows) - 1, 1),
                acc,
                cnt(n_run),
                cnt(n_wait),
            ]
        )
    return np.array(out, dtype=np.float64)


def random_play(env: BackfillEnv, seed: int, check: Any, start: int | None = None) -> int:
    """One episode with uniformly random valid actions; ``check(env, obs)`` at every
    decision point; returns the number of decision points."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed, options=None if start is None else {"start": start})
    n = 0
    done = False
    while not done:
        if info["decision"]:
            check(env, obs)
            n += 1
        valid = np.flatnonzero(info["action_mask"])
        obs, _, done, _, info = env.step(valid[rng.integers(len(valid))])
    return n


# ------------------------------------------------------------------ the columns
@pytest.mark.parametrize("mode", ["guarded", "free"])
def test_columns_equal_a_direct_computation(mode: str) -> None:
    env = env_on(handmade(), mode=mode)
    p = FT.N_BASE_FEATURES
    seen: dict[str, list[float]] = {k: [] for k in NAMES}

    def check(env: BackfillEnv, obs: np.ndarray) -> None:
        rows = env.candidate_jobs()
        rows = rows[rows >= 0]
        want = direct(env, rows)
        got = obs[: len(rows), p:]
        for c, name in enumerate(NAMES):
            np.testing.assert_allclose(
                got[:, c], want[:, c], rtol=0, atol=2e-6, err_msg=f"{name} at t={env._sim.now}"
            )
            seen[name].extend(want[:, c].tolist())

    n = sum(random_play(env, seed, check, start=s) for seed, s in ((0, 20), (1, 40)))
    assert n > 50
    # the checks were not vacuous: every column took several values
    for name, values in seen.items():
        assert len(set(np.round(values, 6))) > 2, name
    # the user history was used: some accuracies differ from the prior and from 1
    assert min(seen["user_accuracy"]) < 0.9


class _EngineLog(Estimator):
    """The engine's own completion and start notifications (``EstimatorFeed``)."""

    name = "log"
    online = True

    def __init__(self) -> None:
        self.finished: list[int] = []
        self.started: list[int] = []

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        self.finished.extend(jobs.tolist())

    def observe_started(self, jobs: np.ndarray, start_times: np.ndarray) -> None:
        self.started.extend(jobs.tolist())


def test_user_history_follows_the_engine_completion_log() -> None:
    """user_accuracy / user_running equal a computation from the engine's completion and
    start logs (told through its ``EstimatorFeed``, in the engine's completion order)."""
    env = env_on(handmade(gap=900.0), mode="free")
    p = FT.N_BASE_FEATURES + NAMES.index("user_accuracy")
    state: dict[str, Any] = {}

    def check(env: BackfillEnv, obs: np.ndarray) -> None:
        sim = env.simulation
        if state.get("sim") is not sim:
            state.update(sim=sim, log=_EngineLog())
            state["feed"] = EstimatorFeed(state["log"])
        log = state["log"]
        state["feed"].predict(sim, 0, 0, np.zeros(0))
        w = sim.workload
        fin = np.array(log.finished, dtype=np.int64)
        ratio = w.runtime / w.request
        prior = float(np.mean(ratio[fin])) if len(fin) else 1.0
        for row, j in enumerate(env.candidate_jobs()):
            if j < 0:
                break
            u = w.user[j]
            mine = fin[w.user[fin] == u][-X.USER_HISTORY :] if u >= 0 else fin[:0]
            acc = float(np.mean(ratio[mine])) if len(mine) else prior
            run = (np.sum(w.user[log.started] == u) - np.sum(w.user[fin] == u)) if u >= 0 else 0
            assert abs(obs[row, p] - acc) < 2e-6, (sim.now, j)
            assert abs(obs[row, p + 1] - cnt(run)) < 2e-6, (sim.now, j)

    assert random_play(env, 11, check, start=0) > 50


def test_clock_follows_daylight_saving() -> None:
    """The local hour jumps by one at the DST switch: the table follows zoneinfo there."""
    ctx = X.TraceContext(handmade())
    assert ctx.clock_reference == f"local time {TZ} (UnixStartTime)"
    switch = 1018173600 - UNIX0  # 2002-04-07 10:00 UTC, trace seconds
    k0 = int((switch - 1 - ctx.clock_base) // HOUR)
    k1 = int((switch - ctx.clock_base) // HOUR)
    offsets = ctx.table[2 * ctx.n_jobs + 1 :]
    assert offsets[k0] - UNIX0 == -8 * HOUR and offsets[k1] - UNIX0 == -7 * HOUR


def test_no_header_uses_trace_seconds_and_unknown_users() -> None:
    w = handmade()
    w.meta = {}
    w.user[:] = -1
    ctx = X.TraceContext(w)
    assert ctx.n_users == 0 and np.all(ctx.table[2 * ctx.n_jobs + 1 :] == 0.0)
    env = BackfillEnv(trace=w, features="extended", window_length=120, split="all")
    p = FT.N_BASE_FEATURES

    def check(env: BackfillEnv, obs: np.ndarray) -> None:
        now = env.simulation.now
        rows = int(np.sum(obs[:, 0]))
        want = ((now - 4 * DAY) % WEEK) / WEEK  # trace second 0 = Thursday 00:00
        np.testing.assert_allclose(obs[:rows, p + 2], want, atol=1e-6)
        assert np.all(obs[:rows, p + 12 :] == 0.0)  # no "own" jobs of unknown users

    assert random_play(env, 3, check) > 5


# --------------------------------------------------------------------- online
def changed_future(
    w: Workload, now: float, jobs: np.ndarray, ran: np.ndarray, seed: int
) -> Workload:
    """``w`` with another future at time ``now``: other arrivals after ``now`` (times,
    sizes, requests, runtimes, users) and other actual runtimes of ``jobs`` (trace
    indices) that have run for ``ran`` seconds by ``now``: still longer than that (the
    job has not ended yet) and within the request."""
    rng = np.random.default_rng(seed)
    cols = {c: np.array(getattr(w, c)) for c in ("submit", "runtime", "procs", "request", "user")}
    late = cols["submit"] > now
    k = int(late.sum())
    cols["submit"][late] = np.sort(now + 1 + rng.uniform(0, 2 * (w.submit[-1] - now), k)).round()
    cols["request"][late] = rng.uniform(60, 20000, k).round()
    cols["runtime"][late] = np.maximum(1.0, (cols["request"][late] * rng.random(k)).round())
    cols["procs"][late] = rng.integers(1, w.machine_size + 1, k)
    cols["user"][late] = rng.integers(0, 50, k)
    r = cols["runtime"]
    req = cols["request"][jobs]
    r[jobs] = ran + (req - ran) * rng.uniform(0.01, 1.0, len(jobs))
    return Workload(
        name=w.name,
        machine_size=w.machine_size,
        job_id=w.job_id,
        group=w.group,
        executable=w.executable,
        queue=w.queue,
        meta=w.meta,
        **cols,
    )


def replay(w: Workload, actions: list[int], start: int, **kw: Any) -> list[np.ndarray]:
    """Observations of the episode on ``w`` under the given actions (until they run out)."""
    env = env_on(w, **kw)
    obs, _ = env.reset(seed=0, options={"start": start})
    out = [obs]
    for a in actions:
        obs, _, done, _, _ = env.step(a)
        out.append(obs)
        if done:
            break
    return out


@pytest.mark.parametrize("mode", ["guarded", "free"])
def test_observation_is_online(mode: str) -> None:
    """At a decision point at time ``now``, give the trace another future -- other
    arrivals after ``now``, other actual runtimes of every job not completed by ``now``
    -- and replay the same actions: every observation up to that point is the same. And
    the test can fail: other runtimes of jobs completed by ``now`` change them."""
    w = handmade()
    start = 20
    kw = {"mode": mode, "est_scale": float(w.request.max())}  # the paper columns' scale
    env = env_on(w, **kw)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0, options={"start": start})
    observations, actions, times = [obs], [], [env.simulation.now]
    done = False
    while not done:
        valid = np.flatnonzero(info["action_mask"])
        actions.append(int(valid[rng.integers(len(valid))]))
        obs, _, done, _, info = env.step(actions[-1])
        observations.append(obs)
        times.append(env.simulation.now)
    starts = env.simulation.start_times  # every job has started at the end
    ends = starts + env.simulation.workload.runtime
    window = np.arange(start, start + env.window_length)
    picks = np.linspace(5, len(actions) - 5, 8).astype(int)
    for i, k in enumerate(picks):
        now = times[k]
        left = ends > now
        ran = np.maximum(now - starts[left], 0.0)
        w2 = changed_future(w, now, window[left], ran, seed=i)
        got = replay(w2, actions[:k], start, **kw)
        for t in range(k + 1):
            np.testing.assert_array_equal(got[t], observations[t], err_msg=f"step {t} of {k}")
        if i == len(picks) - 1:  # the past does matter
            done_ = ~left
            w3 = changed_future(w, now, window[done_], np.zeros(int(done_.sum())), seed=i)
            got = replay(w3, actions[:k], start, **kw)
            assert any(not np.array_equal(g, o) for g, o in zip(got, observations, strict=False))


# ------------------------------------------------------------- spaces and API
def test_spaces_padding_and_bounds() -> None:
    env = env_on(handmade(), mode="free", max_queue=6)  # overflowing rows too
    assert env.observation_space.shape == (6, FT.N_BASE_FEATURES + X.N_EXTENDED)

    def check(env: BackfillEnv, obs: np.ndarray) -> None:
        assert env.observation_space.contains(obs)
        real = obs[:, 0] == 1.0
        assert np.all(obs[~real] == 0.0)
        assert real.sum() == min(env._ncand, 6)

    assert random_play(env, 5, check, start=10) > 20


def test_env_checkers() -> None:
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env_on(handmade(), window_length=60))
        check_env(
            gym.make(
                "hpcgym/Backfill-v0", trace=handmade(), features="extended", window_length=60
            ).unwrapped
        )


def test_default_features_are_the_paper_columns() -> None:
    """The default is ``paper`` (the shipped agents' 12 columns); the extended set keeps
    the paper's columns (and ``prediction``) unchanged in front."""
    w = handmade()
    assert BackfillEnv(trace=w, window_length=60).features == "paper"
    for fp, p in ((None, 12), ("actual", 13)):
        paper = BackfillEnv(trace=w, window_length=150, split="all", feature_predictor=fp)
        ext = env_on(w, window_length=150, feature_predictor=fp, reference="EASY-SJBF")
        assert paper.n_features == p and paper.feature_names == tuple(FT.COLUMNS)[:p]
        assert ext.feature_names == (*paper.feature_names, *NAMES)
        assert ext.n_features == p + X.N_EXTENDED
        rng = np.random.default_rng(1)
        o1, i1 = paper.reset(seed=2)
        o2, i2 = ext.reset(seed=2)
        done = False
        while not done:
            np.testing.assert_array_equal(o1, o2[:, :p])
            valid = np.flatnonzero(i1["action_mask"])
            a = valid[rng.integers(len(valid))]
            o1, r1, done, _, i1 = paper.step(a)
            o2, r2, _, _, i2 = ext.step(a)
        assert same_metrics(i1["agent"], i2["agent"])
    with pytest.raises(ValueError, match="unknown features 'wide'.*paper, extended"):
        BackfillEnv(trace=w, window_length=60, features="wide")


def test_vector_env_equals_single_envs() -> None:
    kw = {"trace": handmade(), "features": "extended", "window_length": 60, "split": "all"}
    for extra in ({}, {"mode": "free", "feature_predictor": "ave2"}):
        vec = BackfillVectorEnv(3, **kw, **extra)
        assert vec.single_observation_space.shape[1] == vec.envs[0].n_features
        assert compare_with_sync(vec, sync(3, **kw, **extra), steps=400, seed=4) > 3


def test_make_and_make_vec_accept_the_option() -> None:
    w = handmade()
    env = gym.make(
        "hpcgym/Backfill-v0", trace=w, features="extended", max_queue=16, window_length=60
    )
    obs, _ = env.reset(seed=0)
    assert obs.shape == (16, FT.N_BASE_FEATURES + X.N_EXTENDED)
    envs = gym.make_vec(
        "hpcgym/Backfill-v0", num_envs=2, trace=w, features="extended", window_length=60
    )
    assert isinstance(envs.unwrapped, BackfillVectorEnv)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, 128, FT.N_BASE_FEATURES + X.N_EXTENDED)


@pytest.mark.parametrize("by_name", [False, True])
def test_pickling_mid_episode_continues_identically(by_name: bool) -> None:
    if by_name:
        from conftest import require_trace

        require_trace("SDSC-SP2")
    env = BackfillEnv(
        trace="SDSC-SP2" if by_name else handmade(),
        features="extended",
        window_length=120,
        split="all",
    )
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(40):
        valid = np.flatnonzero(info["action_mask"])
        obs, _, done, _, info = env.step(valid[rng.integers(len(valid))])
        assert not done
    twin = pickle.loads(pickle.dumps(env))
    done = False
    while not done:
        valid = np.flatnonzero(info["action_mask"])
        a = valid[rng.integers(len(valid))]
        obs, r, done, _, info = env.step(a)
        obs2, r2, _, _, info2 = twin.step(a)
        np.testing.assert_array_equal(obs, obs2)
        assert r == r2
