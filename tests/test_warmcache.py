"""Tests of the replay of the accounting log shared by warm-started windows
(:mod:`hpcgym.sim.warmcache`).

Every state a window gets from the shared replay is compared, attribute by attribute, with
the state its own replay gives (:class:`~hpcgym.sim.warmstart.LogWarmStart` with the
sharing off): the per-user tables up to the numbering of the users (bound to the whole
trace, an estimator numbers the users of the whole trace), everything else exactly. The
windows start in random order, at instants shared with the jobs before them, and the log
holds zero-length jobs and unknown waits. Played through the env, the two give the same
schedule; the fallbacks (``warm=N``, estimators that do not declare their static tables,
sharing turned off, a window that is not a plain cut of its trace) replay on their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from test_features import handmade
from test_features_log import with_log

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.evaluation.play import play_windows
from hpcgym.sim import warmcache
from hpcgym.sim.estimators import make_estimator
from hpcgym.sim.warmstart import LogWarmStart
from hpcgym.workload.core import Workload

# the log's zero-length jobs give E-Loss's Table 3 weight log(0) (clamped to 0)
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero encountered in log")

#: per-user tables of E-Loss (and of the ridge predictor, its subclass)
USER_LISTS = ("_l1", "_l2", "_l3", "_cnt", "_sum_rt", "_sum_q", "_last_end")
#: E-Loss's static per-job lists (whole in the shared states)
STATIC_LISTS = ("_uid", "_req", "_procs", "_runtime", "_gamma", "_clock")
#: per-user dictionaries of the ridge predictor, keyed by (user, ...)
USER_DICTS = ("_same_req", "_same_rq")
SPECS = ("eloss:warm=log", "log-ridge:lam=10,warm=log", "log-ridge:lam=3,templates=no,warm=log")


def trace(n: int = 900, seed: int = 3) -> Workload:
    """A logged trace with 40 users (so that a window's past misses some), submissions
    shared by several jobs, zero-length jobs and jobs with no recorded wait."""
    w = with_log(handmade(n=n, seed=seed), seed=seed)
    rng = np.random.default_rng(seed)
    submit = w.submit.copy()
    for k in rng.choice(np.arange(1, n), 60, replace=False):
        submit[k] = submit[k - 1]
    submit = np.maximum.accumulate(submit)
    runtime = w.runtime.copy()
    runtime[rng.random(n) < 0.03] = 0.0
    wait = w.recorded_wait.copy()
    wait[rng.random(n) < 0.1] = 0.0
    user = rng.integers(0, 40, n) * 3 + 1
    user[rng.random(n) < 0.05] = -1
    cols = {c: getattr(w, c) for c in ("job_id", "procs", "request", "group", "executable")}
    return Workload(
        name="logged",
        machine_size=w.machine_size,
        submit=submit,
        runtime=runtime,
        user=user,
        queue=w.queue,
        recorded_wait=wait,
        meta=w.meta,
        **cols,
    )


@pytest.fixture(autouse=True)
def fresh_replays() -> Iterator[None]:
    """Each test starts with no shared replay and the sharing on."""
    warmcache.set_enabled(True)
    yield
    warmcache.set_enabled(True)
    warmcache.clear()


def _same(a: Any, b: Any, path: str) -> None:
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape, path
        assert a.dtype == b.dtype, path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), path
        for k in a:
            _same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), path
    elif type(a).__module__.startswith("hpcgym") and hasattr(a, "__dict__"):
        assert type(a) is type(b), path
        _same(a.__dict__, b.__dict__, path + ".")
    else:
        assert a == b, (path, a, b)


def same_state(own: LogWarmStart, shared: LogWarmStart) -> None:
    """``shared``'s estimator state is ``own``'s, the users renumbered."""
    assert (own.replayed, own.log_unknown, own._shift) == (
        shared.replayed,
        shared.log_unknown,
        shared._shift,
    )
    a, b = dict(own.inner.__dict__), dict(shared.inner.__dict__)
    assert a.pop("workload") is own.inner.workload and len(b.pop("workload")) == len(
        own.inner.workload
    )
    assert a.pop("rng").bit_generator.state == b.pop("rng").bit_generator.state
    rows = len(own.inner.workload)
    for name in STATIC_LISTS:  # the shared state's static lists are the whole trace's
        assert len(b[name]) >= rows
        b[name] = b[name][:rows]
    ua, ub = a.pop("_uid_arr"), b.pop("_uid_arr")
    assert a.pop("_uid") == ua.tolist() and b.pop("_uid") == ub.tolist()
    assert np.array_equal(ua < 0, ub < 0)
    pairs = sorted(set(zip(ua[ua >= 0].tolist(), ub[ub >= 0].tolist(), strict=True)))
    ia, ib = [p[0] for p in pairs], [p[1] for p in pairs]
    assert len(set(ia)) == len(set(ib)) == len(pairs)  # a renumbering, one to one
    for name in USER_LISTS:
        la, lb = a.pop(name), b.pop(name)
        assert len(la) == max(ia, default=-1) + 1
        _same([la[i] for i in ia], [lb[i] for i in ib], name)
    to_b = dict(zip(ia, ib, strict=True))
    for name in USER_DICTS:
        if name in a:
            da = {(to_b[k[0]], *k[1:]): v for k, v in a.pop(name).items()}
            _same(da, b.pop(name), name)
    _same(a, b, "state")


def bound(spec: str, window: Workload, seed: int = 0) -> LogWarmStart:
    est = make_estimator(spec)
    assert isinstance(est, LogWarmStart)
    rng = np.random.default_rng(seed)
    est.bind(window, rng)
    assert est.inner.rng is rng  # the bind's generator, shared or not
    return est


@pytest.mark.parametrize("spec", SPECS)
def test_shared_states_equal_the_windows_own_replays(spec: str) -> None:
    w = trace()
    shared_t0 = [s for s in range(100, 800) if w.submit[s] == w.submit[s - 1]][:3]
    assert shared_t0, "the trace has submissions shared by several jobs"
    starts = [430, 120, 777, 431, 5, *shared_t0, 610, 120]
    warmcache.set_enabled(False)
    own = {s: bound(spec, w.window(s, 80)) for s in set(starts)}
    assert not warmcache._REPLAYS
    warmcache.set_enabled(True)
    for s in starts:
        shared = bound(spec, w.window(s, 80))
        assert warmcache._REPLAYS, "the window was bound from the shared replay"
        same_state(own[s], shared)
    assert sum(own[s].log_unknown for s in own) > 0  # the log's unknown waits are counted


def test_checkpoints_bound_the_walk() -> None:
    w = trace()
    est = make_estimator("eloss")
    rep = warmcache.LogReplay(w, est, checkpoint=100)
    assert len(rep.checkpoints) == 1
    for s in (850, 840, 200, 199):
        rep.window_state(s, w.window(0, s + 10))
    first = rep.replayed_events
    assert rep.every == 300  # events: three per job
    # one walk to 850, then three from the checkpoints just before 840, 200 and 199
    assert first <= len(rep.times) + 3 * rep.every
    assert len(rep.checkpoints) >= 6
    rep.window_state(850, w.window(0, 860))
    assert rep.replayed_events == first  # a kept state walks nothing
    rep.window_state(505, w.window(0, 515))
    assert rep.replayed_events - first <= rep.every


@pytest.mark.parametrize("spec", SPECS)
def test_windows_in_the_order_of_their_starts_cost_one_walk(spec: str) -> None:
    w = trace()
    starts = [60, 130, 131, 260, 420, 421, 655, 790]
    warmcache.set_enabled(False)
    own = {s: bound(spec, w.window(s, 80)) for s in starts}
    warmcache.set_enabled(True)
    for s in starts:
        same_state(own[s], bound(spec, w.window(s, 80)))
    (rep,) = warmcache._REPLAYS.values()
    # the walk went once to the last window's first submission, never back
    last = int(np.searchsorted(rep.times, w.submit[starts[-1]], side="left"))
    assert rep.replayed_events == last
    # a window before the last walk's end starts from a checkpoint, one after it from the
    # walk; both have the state of their own replay
    for s in (300, 800):
        warmcache.set_enabled(False)
        mine = bound(spec, w.window(s, 80))
        warmcache.set_enabled(True)
        same_state(mine, bound(spec, w.window(s, 80)))


def _env_kw(w: Workload, length: int, **extra: Any) -> dict[str, Any]:
    """The env options of these tests: windows of ``length`` jobs anywhere in ``w``, a
    warm ``log-ridge`` column, no reference."""
    kw: dict[str, Any] = dict(
        trace=w,
        split="all",
        reference=None,
        window_length=length,
        feature_predictor="log-ridge:lam=10,warm=log",
    )
    return kw | extra


def test_play_windows_resets_in_the_order_of_the_starts() -> None:
    w = trace()
    starts = [655, 130, 420, 60]
    kw = _env_kw(w, 80, features="extended")
    rows = play_windows([BackfillEnv(**kw) for _ in starts], _Last(), starts, job_start=True)
    (rep,) = warmcache._REPLAYS.values()
    assert rep.replayed_events == int(np.searchsorted(rep.times, w.submit[655], side="left"))
    warmcache.clear()
    alone = [play_windows([BackfillEnv(**kw)], _Last(), [s], job_start=True)[0] for s in starts]
    assert [r["start"] for r in rows] == starts
    for a, b in zip(rows, alone, strict=True):
        assert a["avg_bsld"] == b["avg_bsld"]
        assert np.array_equal(a["job_start"], b["job_start"])


def test_prepare_makes_the_states_bind_would() -> None:
    w = trace()
    rep = warmcache.LogReplay(w, make_estimator("eloss"), checkpoint=100)
    rep.prepare([700, 300, 500], [780, 380, 580])
    assert sorted(rep.states) == [(300, 380), (500, 580), (700, 780)]
    est, unknown = rep.window_state(500, w.window(0, 580))
    warmcache.set_enabled(False)
    own = bound("eloss:warm=log", w.window(500, 80))
    assert unknown == own.log_unknown
    for name in STATIC_LISTS:
        est.__dict__[name] = est.__dict__[name][:580]
    _same(
        {k: v for k, v in est.__dict__.items() if k not in ("workload", "rng")},
        {k: v for k, v in own.inner.__dict__.items() if k not in ("workload", "rng")},
        "prepared",
    )  # the same users numbered alike: the whole trace and 580 jobs of it know the same 40


@pytest.mark.parametrize(
    "spec",
    ["eloss:warm=300", "ave2:warm=log", "tang-selective:warm=log"],
)
def test_estimators_that_do_not_qualify_replay_on_their_own(spec: str) -> None:
    w = trace()
    bound(spec, w.window(500, 80))
    assert not warmcache._REPLAYS


def test_a_window_that_is_not_a_cut_of_its_trace_replays_on_its_own() -> None:
    w = trace()
    cut = w.window(500, 80)
    runtime = cut.runtime.copy()
    runtime[3] += 1.0  # no longer the trace's job 503
    win = dataclasses.replace(cut, runtime=runtime)
    assert win.parent is w and win.offset == 500
    est = bound("eloss:warm=log", win)
    assert not warmcache._REPLAYS and est.replayed == 500


def test_the_env_plays_the_same_schedule_with_the_shared_replay() -> None:
    w = trace()
    kw = _env_kw(
        w,
        120,
        policy="SJF",
        features="extended-log",
        estimator="eloss:warm=log",
        correction="incremental-offset",
    )
    starts = [610, 150, 402, 777]
    rows = {}
    for on in (False, True):
        warmcache.set_enabled(on)
        envs = [BackfillEnv(**kw) for _ in starts]
        rows[on] = [play_windows(envs, _Last(), starts, seed=0, job_start=True) for _ in range(2)]
        assert bool(warmcache._REPLAYS) is on
    for a, b in zip(rows[False][0] + rows[False][1], rows[True][0] + rows[True][1], strict=True):
        assert a["avg_bsld"] == b["avg_bsld"]
        assert np.array_equal(a["job_start"], b["job_start"])


class _Last:
    """The last valid action (a deterministic policy that backfills)."""

    def predict(
        self,
        obs: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: Any = None,
    ) -> tuple[np.ndarray, None]:
        m = np.atleast_2d(np.asarray(action_masks))
        return np.array([int(np.flatnonzero(r)[-1]) for r in m]), None


def test_sharing_can_be_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    monkeypatch.setenv("HPCGYM_WARM_CACHE", "0")
    mod = importlib.reload(warmcache)
    try:
        assert not mod.enabled()
    finally:
        monkeypatch.delenv("HPCGYM_WARM_CACHE")
        importlib.reload(warmcache)
    assert warmcache.enabled()


def test_kept_states_stay_within_their_budget() -> None:
    w = trace()
    one = 880 * 8 / 2**20  # a state of 880 rows: its predictions (X is not kept)
    rep = warmcache.LogReplay(w, make_estimator("eloss"), checkpoint=100, keep_mb=2.5 * one)
    for s in (300, 500, 700, 800):
        rep.window_state(s, w.window(0, s + 80))
    assert list(rep.states) == [(700, 780), (800, 880)]  # 380 + 580 rows went first
    assert rep.kept_bytes == sum(k[2] for k in rep.states.values()) <= rep.keep_bytes
    walked = rep.replayed_events
    rep.window_state(300, w.window(0, 380))  # dropped: made again
    assert rep.replayed_events > walked


def test_windows_at_one_start_with_other_lengths_get_their_own_states() -> None:
    w = trace()
    warmcache.set_enabled(False)
    own = {n: bound("log-ridge:lam=10,warm=log", w.window(400, n)) for n in (60, 200)}
    warmcache.set_enabled(True)
    for n in (60, 200, 60):
        shared = bound("log-ridge:lam=10,warm=log", w.window(400, n))
        same_state(own[n], shared)
        assert shared.inner.predictions.shape[0] == 400 + n


@pytest.mark.parametrize("spec", ["eloss:warm=log", "eloss:keep_features=true,warm=log"])
def test_a_trace_as_long_as_a_fixed_table_is_cut_by_its_per_job_arrays(spec: str) -> None:
    # E-Loss's pair index tables have 190 entries: on a trace of 190 jobs they have the
    # trace's length, and only the per-job arrays may be cut to a window's rows
    w = trace(n=190)
    warmcache.set_enabled(False)
    own = bound(spec, w.window(100, 60))
    warmcache.set_enabled(True)
    shared = bound(spec, w.window(100, 60))
    same_state(own, shared)
    rep = next(iter(warmcache._REPLAYS.values()))
    expected = {"predictions", "_uid_arr", "_procs_arr"} | ({"X"} if "keep" in spec else set())
    assert rep.per_job == expected
    assert shared.inner._iu.shape == (190,)


def test_a_window_on_another_machine_replays_on_its_own() -> None:
    w = trace()
    win = dataclasses.replace(w.window(500, 80), machine_size=w.machine_size * 2)
    bound("eloss:warm=log", win)
    assert not warmcache._REPLAYS
