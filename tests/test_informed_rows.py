"""Schedule-v0's informed rows (``rows="informed"``): hand-checked values on a tiny
workload, the default columns unchanged, and no row reads the future."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import hpcgym  # noqa: F401 - registers the envs
from hpcgym.envs.informed_rows import INFORMED_COLUMNS, parse_history
from hpcgym.envs.queue_observation import QUEUE_COLUMNS
from hpcgym.envs.schedule_env import ScheduleEnv
from hpcgym.workload.core import Workload

EST_SCALE = 10_000.0


def _workload(submit, runtime, request, procs, user, wait, m=4, name="tiny") -> Workload:
    n = len(submit)
    return Workload(
        name=name,
        machine_size=m,
        job_id=np.arange(1, n + 1),
        submit=np.asarray(submit, dtype=np.float64),
        runtime=np.asarray(runtime, dtype=np.float64),
        procs=np.asarray(procs),
        request=np.asarray(request, dtype=np.float64),
        user=np.asarray(user),
        group=np.zeros(n),
        executable=np.zeros(n),
        queue=np.zeros(n),
        recorded_wait=np.asarray(wait, dtype=np.float64),
    )


def _lg(x: float) -> float:
    return min(math.log1p(x / 10.0) / math.log1p(EST_SCALE / 10.0), 1.0)


def _cnt(x: float) -> float:
    return min(math.log2(1 + x) / 10.0, 1.0)


#: the log (jobs 0-5, before the window) and the window (jobs 6-11, from t0 = 1000)
TINY = _workload(
    #      0    1    2     3    4    5     6     7     8     9    10    11
    submit=[0, 10, 20, 30, 40, 50, 1000, 1001, 1002, 1003, 1500, 1500],
    runtime=[100, 300, 50, 5000, 200, 900, 400, 60, 30, 10, 20, 20],
    request=[1000, 1000, 500, 9000, 1000, 1000, 1000, 1000, 500, 9000, 1000, 100],
    procs=[1, 1, 2, 1, 1, 1, 4, 1, 2, 1, 4, 1],
    user=[1, 1, 1, 2, 1, 4, 3, 1, 1, 2, 3, 5],
    # job 3 still runs at t0 (ends 5030), job 4 has no recorded wait: neither is known
    wait=[0, 0, 0, 0, np.nan, 0, 0, 0, 0, 0, 0, 0],
)


def _env(workload: Workload = TINY, **kw) -> ScheduleEnv:
    base = dict(
        trace=workload,
        window_length=6,
        split="all",
        est_scale=EST_SCALE,
        rows="informed",
        row_predictor="request",
        rank_estimator="actual",
        reference=None,
        starvation=None,
    )
    base.update(kw)
    return ScheduleEnv(**base)


def _jobs(env: ScheduleEnv) -> set[int]:
    """The trace index of every row's job (rows hold window indices)."""
    return {int(j) + env._start for j in env.candidate_jobs() if j >= 0}


def _row(env: ScheduleEnv, obs: np.ndarray, job: int) -> dict[str, float]:
    """The row of the trace's job ``job``, by column name."""
    r = int(np.flatnonzero(env.candidate_jobs() == job - env._start)[0])
    return dict(zip(env.feature_names, obs[r].tolist(), strict=True))


def test_hand_checked_values():
    env = _env()
    assert env.feature_names == QUEUE_COLUMNS + tuple(INFORMED_COLUMNS)
    assert env.observation_space.shape == (128, 24)
    obs, info = env.reset(options={"start": 6})
    assert env._eh.log_jobs == 4  # jobs 0, 1, 2, 5 (3 runs past t0, 4 has no wait)
    view = env.simulation.view
    # job 6 fills the machine at 1000; jobs 7 and 8 wait: the first choice is at 1002
    assert view.now == 1002.0 and _jobs(env) == {7, 8}
    a = _row(env, obs, 7)  # like jobs: 0 (100 s, ends 100), 1 (300 s, ends 310)
    assert a["rank_estimate"] == pytest.approx(_lg(60), abs=1e-6)  # rank_estimator="actual"
    assert a["prediction"] == pytest.approx(_lg(1000), abs=1e-6)  # row_predictor="request"
    assert a["like_count"] == pytest.approx(_cnt(2), abs=1e-6)
    assert a["like_last"] == pytest.approx(_lg(300), abs=1e-6)
    assert a["like_mean"] == pytest.approx(_lg(200), abs=1e-6)
    assert a["like_ago"] == pytest.approx(692 / (692 + 3600), abs=1e-6)
    # user 1's finished jobs: 2 (0.1), 0 (0.1), 1 (0.3)
    assert a["user_accuracy_long"] == pytest.approx(0.5 / 3, abs=1e-6)
    assert a["user_finished"] == pytest.approx(_cnt(3), abs=1e-6)
    b = _row(env, obs, 8)  # like job: 2 (50 s, ends 70)
    assert b["like_count"] == pytest.approx(_cnt(1), abs=1e-6)
    assert b["like_last"] == b["like_mean"] == pytest.approx(_lg(50), abs=1e-6)
    assert b["like_ago"] == pytest.approx(932 / (932 + 3600), abs=1e-6)
    # the next arrival: user 2's job 9 has no finished job (3 still runs at t0): the
    # population's mean over jobs 0, 1, 2, 5 and no like job
    done = False
    while not done and 9 not in _jobs(env):
        obs, _, term, trunc, _ = env.step(0)
        done = term or trunc
    c = _row(env, obs, 9)
    assert c["user_accuracy_long"] == pytest.approx((0.1 + 0.3 + 0.1 + 0.9) / 4, abs=1e-6)
    assert (c["like_count"], c["like_last"], c["like_mean"], c["like_ago"]) == (0, 0, 0, 1)
    assert c["user_finished"] == 0
    # job 10 (user 3, 1000 s on 4 processors) arrives with 11 at 1500: its like job is the
    # window's job 6, finished at 1400
    while not done and 10 not in _jobs(env):
        obs, _, term, trunc, _ = env.step(0)
        done = term or trunc
    assert not done
    view = env.simulation.view
    assert view.start[0] == 1000.0  # trace job 6
    d = _row(env, obs, 10)
    assert d["like_count"] == pytest.approx(_cnt(1), abs=1e-6)
    assert d["like_last"] == pytest.approx(_lg(400), abs=1e-6)
    ago = view.now - 1400.0
    assert d["like_ago"] == pytest.approx(ago / (ago + 3600), abs=1e-6)
    assert d["user_accuracy_long"] == pytest.approx(0.4, abs=1e-6)


def test_row_history_limits_the_log():
    env = _env(row_history=2)  # jobs 4 and 5: only 5 is known
    obs, _ = env.reset(options={"start": 6})
    assert env._eh.log_jobs == 1
    assert _row(env, obs, 7)["like_count"] == 0
    env = _env(row_history=0)
    obs, _ = env.reset(options={"start": 6})
    assert env._eh.log_jobs == 0
    assert _row(env, obs, 7)["user_accuracy_long"] == 1.0  # nothing finished yet
    # the default row predictor is warmed on the same log
    assert _env(row_predictor=None)._fpred.name == "log-ridge+warm=log"
    assert _env(row_predictor=None, row_history=2)._fpred.name == "log-ridge+warm=2"
    assert _env(row_predictor=None, row_history=0)._fpred.name == "log-ridge"


def test_options_checked():
    with pytest.raises(ValueError, match="rows='informed' only"):
        ScheduleEnv(trace=TINY, split="all", window_length=5, row_history="log")
    with pytest.raises(ValueError, match="valid choices: default, informed"):
        ScheduleEnv(trace=TINY, split="all", window_length=5, rows="inform")
    with pytest.raises(ValueError, match="row_history"):
        parse_history("yesterday")
    assert parse_history("log") == -1 and parse_history(12) == 12
    no_log = _workload([0, 1], [5, 5], [9, 9], [1, 1], [1, 1], [0, 0])
    no_log.recorded_wait = None
    with pytest.raises(ValueError, match="row_history=0"):
        _env(no_log, window_length=1)
    _env(no_log, window_length=1, row_history=0)


def _random_trace(n: int = 360, seed: int = 3) -> Workload:
    rng = np.random.default_rng(seed)
    user = rng.integers(0, 6, n)
    request = rng.choice([600.0, 3600.0, 14400.0], n)
    procs = rng.choice([1, 2, 4, 8], n)
    runtime = np.maximum(np.round(request * rng.uniform(0.02, 1.0, n)), 1.0)
    submit = np.cumsum(rng.exponential(400.0, n))
    wait = rng.exponential(900.0, n)
    wait[rng.random(n) < 0.05] = np.nan
    return _workload(submit, runtime, request, procs, user, wait, m=16, name="random")


def _play(env: ScheduleEnv, start: int, steps: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    obs, _ = env.reset(seed=7, options={"start": start})
    out = []
    for k in range(steps):
        out.append((obs.copy(), env.candidate_jobs(), env.simulation.view.now))
        ncand = int(env.action_masks().sum())
        obs, _, term, trunc, _ = env.step((3 * k) % ncand)
        if term or trunc:
            break
    return out


def _changed_future(wl: Workload, start: int, n: int, env: ScheduleEnv) -> Workload:
    """``wl`` with a new run time for every job not finished at the env's time ``t``:
    the log's jobs still running at ``t0`` (or without a recorded end), the window's
    unfinished jobs and every later arrival (a job's new run time keeps it unfinished)."""
    view = env.simulation.view
    t, t0 = view.now, float(wl.submit[start])
    finished = set(view.finished().tolist())
    rng = np.random.default_rng(11)
    rt = wl.runtime.copy()
    for i in range(len(wl)):
        if i < start:
            end = wl.submit[i] + wl.recorded_wait[i] + wl.runtime[i]
            if end <= t0:
                continue
            lower = 0.0 if np.isnan(end) else t0 - wl.submit[i] - wl.recorded_wait[i]
        elif i < start + n:
            j = i - start
            if j in finished:
                continue
            lower = t - view.start[j] if np.isfinite(view.start[j]) else 0.0
        else:
            lower = 0.0
        lower = max(lower, 0.0)
        rt[i] = lower + (wl.request[i] - lower) * rng.uniform(0.1, 1.0)
        assert lower < rt[i] <= wl.request[i]
    assert np.count_nonzero(rt != wl.runtime) > 100
    cols = {c: getattr(wl, c) for c in ("job_id", "submit", "procs", "request", "user")}
    return Workload(
        name=wl.name,
        machine_size=wl.machine_size,
        runtime=rt,
        group=wl.group,
        executable=wl.executable,
        queue=wl.queue,
        recorded_wait=wl.recorded_wait,
        **cols,
    )


@pytest.mark.parametrize("clairvoyant", [False, True])
def test_no_row_reads_the_future(clairvoyant):
    """Rows up to a decision point stay the same when every job not finished then gets
    another run time; a clairvoyant row predictor (the control) sees the change."""
    wl, start, n, steps = _random_trace(), 200, 120, 60
    kw = dict(
        window_length=n,
        row_predictor="actual" if clairvoyant else "log-ridge:warm=log",
        rank_estimator="eloss:warm=log",
        estimator="ave2",
        est_scale=None,
    )
    env = _env(wl, **kw)
    first = _play(env, start, steps)
    assert len(first) == steps and env.simulation.view.n_finished > 10
    assert env._eh.log_jobs > 150
    again = _play(_env(_changed_future(wl, start, n, env), **kw), start, steps)
    same = [
        np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]
        for a, b in zip(first, again, strict=False)
    ]
    if clairvoyant:
        assert not all(same)
    else:
        assert all(same) and len(again) == steps


def test_default_columns_unchanged_and_vector_env():
    wl = _random_trace()
    kw = dict(trace=wl, window_length=80, split="all", rank_estimator="ave2")
    plain = ScheduleEnv(**kw)
    assert plain.observation_space.shape == (128, 16)
    informed = ScheduleEnv(**kw, rows="informed")
    o1, _ = plain.reset(seed=1, options={"start": 150})
    o2, _ = informed.reset(seed=1, options={"start": 150})
    for k in range(40):
        np.testing.assert_array_equal(o1, o2[:, :16])
        a = k % int(plain.action_masks().sum())
        o1, *_ = plain.step(a)
        o2, *_ = informed.step(a)
    vec = gym.make_vec("hpcgym/Schedule-v0", num_envs=2, compiled=True, **kw, rows="informed")
    with pytest.raises(ValueError, match="rows='informed'.*compiled=False"):
        vec.reset(seed=0)  # the compiled step is set up at the first reset
    vec = gym.make_vec("hpcgym/Schedule-v0", num_envs=2, **kw, rows="informed")
    ov, _ = vec.reset(seed=[5, 6], options={"start": 150})
    single = ScheduleEnv(**kw, rows="informed")
    os_, _ = single.reset(seed=5, options={"start": 150})
    assert not vec.unwrapped.compiled
    for k in range(30):
        np.testing.assert_array_equal(ov[0], os_)
        a = k % int(single.action_masks().sum())
        ov, *_ = vec.step(np.array([a, 0]))
        os_, *_ = single.step(a)
    vec.close()


def test_pickled_env_continues_the_same():
    import pickle

    env = _env(_random_trace(), window_length=60, row_predictor="log-ridge:warm=log")
    obs, _ = env.reset(seed=2, options={"start": 100})
    for _ in range(10):
        obs, *_ = env.step(1 % int(env.action_masks().sum()))
    twin = pickle.loads(pickle.dumps(env))
    for k in range(20):
        a = k % int(env.action_masks().sum())
        o1, _, t1, _, _ = env.step(a)
        o2, _, t2, _, _ = twin.step(a)
        np.testing.assert_array_equal(o1, o2)
        if t1:
            break


def _oracle_rows(env: ScheduleEnv, wl: Workload, start: int) -> np.ndarray:
    """The informed columns of every row, from scratch: the log's jobs finished by ``t0``
    (by recorded end, then index) and the window's finished jobs (completion order)."""
    view = env.simulation.view
    t0 = float(wl.submit[start])
    end = wl.submit + wl.recorded_wait + wl.runtime
    log = [i for i in range(start) if np.isfinite(end[i]) and end[i] <= t0]
    log.sort(key=lambda i: (end[i], i))
    known = [(i, float(end[i])) for i in log]
    known += [
        (start + int(j), float(view.start[j] + wl.runtime[start + j])) for j in view.finished()
    ]
    lg = lambda x: min(math.log1p(x / 10.0) / math.log1p(env.est_scale / 10.0), 1.0)  # noqa: E731
    ratio = lambda i: min(wl.runtime[i] / wl.request[i], 1.0)  # noqa: E731
    out = []
    for j in env.candidate_jobs():
        if j < 0:
            break
        i = start + int(j)
        key = (wl.user[i], wl.request[i], wl.procs[i])
        like = [(k, e) for k, e in known if (wl.user[k], wl.request[k], wl.procs[k]) == key]
        mine = [k for k, _ in known if wl.user[k] == wl.user[i]]
        row = [lg(view.rank_estimate[j]), lg(env.feature_predictions()[j])]
        if like:
            last = [wl.runtime[k] for k, _ in like[-4:]]
            ago = view.now - like[-1][1]
            row += [_cnt(len(like)), lg(last[-1]), lg(np.mean(last)), ago / (ago + 3600)]
        else:
            row += [0.0, 0.0, 0.0, 1.0]
        pop = np.mean([ratio(k) for k, _ in known]) if known else 1.0
        row += [np.mean([ratio(k) for k in mine[-32:]]) if mine else pop, _cnt(len(mine))]
        out.append(row)
    return np.array(out, dtype=np.float32)


def test_rows_equal_a_from_scratch_computation():
    wl, start = _random_trace(), 220
    env = _env(wl, window_length=100, rank_estimator="ave2", est_scale=None)
    obs, _ = env.reset(seed=4, options={"start": start})
    checked = 0
    for k in range(80):
        want = _oracle_rows(env, wl, start)
        np.testing.assert_allclose(obs[: len(want), 16:], want, rtol=0, atol=2e-6)
        checked += int((want[:, 2] > 0).sum())
        obs, _, term, trunc, _ = env.step((5 * k) % int(env.action_masks().sum()))
        if term or trunc:
            break
    assert checked > 100  # rows with like jobs were compared
