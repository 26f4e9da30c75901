"""Tests of the batched vector env :class:`hpcgym.envs.vector.BackfillVectorEnv`.

The reference is Gymnasium's own ``SyncVectorEnv`` over single :class:`BackfillEnv`
instances: with the same seeds and actions, every observation, reward, termination,
truncation and info entry the vector env provides must be identical, step for step,
across autoresets. Windows are short so that the file runs in seconds.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

import hpcgym.envs  # noqa: F401 - registers hpcgym/Backfill-v0
from hpcgym.envs import observation as FT
from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.envs.vector import BackfillVectorEnv


def _trace() -> str | None:
    from hpcgym.workload.traces import TraceNotFoundError, resolve_trace

    try:
        resolve_trace("Lublin-1", download=False)
        return "Lublin-1"
    except TraceNotFoundError:
        return None  # the embedded synthetic workload


TRACE = _trace()
KQ = 128
#: the single env's entries present only at the end of an episode
FINAL_KEYS = (
    "agent",
    "reference",
    "normalizer",
    "objective",
    "overflow_decisions",
    "episode_steps",
)


def kwargs(**kw: Any) -> dict[str, Any]:
    kw.setdefault("trace", TRACE)
    kw.setdefault("window_length", 40)
    return kw


def sync(n: int, time_limit: int | None = None, **kw: Any) -> SyncVectorEnv:
    def factory() -> gym.Env:
        env: gym.Env = BackfillEnv(**kw)
        return env if time_limit is None else TimeLimit(env, time_limit)

    mode = kw.pop("autoreset_mode", AutoresetMode.NEXT_STEP)
    return SyncVectorEnv([factory for _ in range(n)], autoreset_mode=mode)


def assert_same(a: Any, b: Any, where: str = "info") -> None:
    """Deep equality of (batched) info values: dicts, arrays (object arrays too), scalars."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, sorted(a), sorted(b))
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype, where
        if a.dtype == object:
            for x, y in zip(a, b, strict=True):
                assert_same(x, y, where)
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float) and isinstance(b, float) and np.isnan(a):
        assert np.isnan(b), (where, a, b)  # a size class without jobs: nan in both
    else:
        assert a == b, (where, a, b)


def subset(info: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: info[k] for k in info if k in keys or (k[0] == "_" and k[1:] in keys)}


def random_actions(rng: np.random.Generator, mask: np.ndarray, p_invalid: float) -> np.ndarray:
    """Uniformly random valid actions; with probability ``p_invalid`` any action."""
    u = rng.random(mask.shape)
    a = np.where(mask, u, -1.0).argmax(axis=1)
    wild = rng.random(len(a)) < p_invalid
    return np.where(wild, rng.integers(0, mask.shape[1], len(a)), a)


def compare_with_sync(
    vec: BackfillVectorEnv, ref: SyncVectorEnv, steps: int, seed: int, p_invalid: float = 0.2
) -> int:
    """Run both with the same seeds and actions; returns the number of episode ends."""
    full = vec.full_info
    keys = ("action_mask", *FINAL_KEYS)
    rng = np.random.default_rng(seed)
    o1, i1 = vec.reset(seed=seed)
    o2, i2 = ref.reset(seed=seed)
    np.testing.assert_array_equal(o1, o2)
    assert_same(i1, i2 if full else subset(i2, keys), "reset info")
    ends = 0
    for t in range(steps):
        np.testing.assert_array_equal(vec.action_masks(), i2["action_mask"])
        a = random_actions(rng, i1["action_mask"], p_invalid)
        o1, r1, d1, t1, i1 = vec.step(a)
        o2, r2, d2, t2, i2 = ref.step(a)
        assert o1.dtype == np.float32 and o1.shape == ref.observation_space.shape
        np.testing.assert_array_equal(o1, o2, err_msg=f"step {t}")
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_array_equal(t1, t2)
        assert r1.dtype == np.float64 and d1.dtype == t1.dtype == np.bool_
        if full:
            assert_same(i1, i2, f"step {t}")
        else:
            if "final_info" in i2:
                i2 = dict(i2, final_info=subset(i2["final_info"], keys))
                keys2 = (*keys, "final_info", "final_obs")
            else:
                keys2 = keys
            assert_same(i1, subset(i2, keys2), f"step {t}")
        ends += int(d1.sum() + t1.sum())
        if t == steps // 2:  # a second reset mid-run: generators continue (seed None)
            o1, i1 = vec.reset()
            o2, i2 = ref.reset()
            np.testing.assert_array_equal(o1, o2)
    return ends


@pytest.mark.parametrize(
    ("config", "full_info"),
    [
        ({}, False),
        ({}, True),
        ({"mode": "free", "window_length": 64}, False),
        ({"mode": "penalized", "invalid_action": "penalty", "objective": "wait"}, True),
        ({"objective": "awrt", "window_length": 64}, True),
        ({"policy": "SJF", "reference": None, "window_length": 24, "max_queue": 8}, True),
        ({"feature_predictor": "ave2", "window_length": 32}, False),
        ({"reward_mode": "dense", "window_length": 48}, True),
    ],
)
def test_matches_sync_vector_env_step_for_step(config, full_info):
    kw = kwargs(**config)
    vec = BackfillVectorEnv(4, full_info=full_info, **kw)
    ends = compare_with_sync(vec, sync(4, **kw), steps=240, seed=11)
    assert ends >= 4  # autoresets were exercised


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, "NextStep"])
def test_autoreset_modes_and_truncation_match_sync(mode):
    kw = kwargs(window_length=48)
    vec = BackfillVectorEnv(3, autoreset_mode=mode, max_episode_steps=7, **kw)
    ref = sync(3, time_limit=7, autoreset_mode=AutoresetMode(mode), **kw)
    assert vec.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"] == AutoresetMode(mode)
    assert compare_with_sync(vec, ref, steps=60, seed=5) > 10
    vec = BackfillVectorEnv(2, autoreset_mode=mode, full_info=True, max_episode_steps=5, **kw)
    compare_with_sync(vec, sync(2, time_limit=5, autoreset_mode=AutoresetMode(mode), **kw), 30, 6)


def test_next_step_autoreset_semantics():
    vec = BackfillVectorEnv(2, **kwargs(window_length=16, invalid_action="raise"))
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = vec.reset(seed=0)
    for _ in range(500):
        a = np.full(2, KQ)  # STOP is always valid
        obs, r, term, trunc, info = vec.step(a)
        if term.any():
            break
    i = int(np.flatnonzero(term)[0])
    assert not obs[i].any() and info["action_mask"][i].tolist() == [False] * KQ + [True]
    assert info["_agent"][i] and info["episode_steps"][i] >= 1
    a[i] = 0  # ignored (an invalid action would raise if it were applied)
    obs2, r2, term2, trunc2, info2 = vec.step(a)
    assert r2[i] == 0.0 and not term2[i] and not trunc2[i]
    assert "agent" not in info2 or not info2["_agent"][i]
    assert vec.envs[i]._steps == 0  # a fresh episode, no step taken yet
    np.testing.assert_array_equal(obs2[i], vec.envs[i]._obs)


def test_make_vec_uses_the_vector_entry_point():
    venv = gym.make_vec(
        "hpcgym/Backfill-v0", num_envs=3, vectorization_mode="vector_entry_point",
        trace=TRACE, window_length=32,
    )  # fmt: skip
    assert isinstance(venv.unwrapped, BackfillVectorEnv) and venv.num_envs == 3
    assert venv.observation_space.shape == (3, KQ, FT.N_BASE_FEATURES)
    assert venv.single_observation_space.shape == (KQ, FT.N_BASE_FEATURES)
    assert venv.action_space.shape == (3,) and venv.single_action_space.n == KQ + 1
    obs, info = venv.reset(seed=1)
    assert venv.observation_space.contains(obs)
    obs, r, term, trunc, info = venv.step(np.full(3, KQ))
    assert r.shape == term.shape == (3,)
    venv.close()
    # the default vectorization of make_vec is the vector entry point; "sync" stays available
    default = gym.make_vec("hpcgym/Backfill-v0", num_envs=2, trace=TRACE, window_length=32)
    assert isinstance(default.unwrapped, BackfillVectorEnv)
    synced = gym.make_vec("hpcgym/Backfill-v0", 2, vectorization_mode="sync", trace=TRACE,
                          window_length=32)  # fmt: skip
    assert isinstance(synced, SyncVectorEnv)
    o1, _ = default.reset(seed=4)
    o2, _ = synced.reset(seed=4)
    np.testing.assert_array_equal(o1, o2)


def test_masks_shape_equal_info_and_observation():
    vec = BackfillVectorEnv(4, **kwargs(mode="free"))
    with pytest.raises(RuntimeError, match="reset"):
        vec.action_masks()
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(4, dtype=int))
    obs, info = vec.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(100):
        masks = vec.action_masks()
        assert masks.shape == (4, KQ + 1) and masks.dtype == np.bool_ and masks[:, KQ].all()
        np.testing.assert_array_equal(masks, info["action_mask"])
        assert info["_action_mask"].all()
        np.testing.assert_array_equal(obs[:, :, FT.COL_VALID] == 1.0, masks[:, :KQ])
        for i, env in enumerate(vec.envs):
            np.testing.assert_array_equal(masks[i], env.action_masks())
        obs, _, _, _, info = vec.step(random_actions(rng, masks, 0.0))


def test_determinism_and_seeding():
    def run(seed: int | list[int]) -> list[bytes]:
        vec = BackfillVectorEnv(3, **kwargs())
        rng = np.random.default_rng(3)
        obs, info = vec.reset(seed=seed)
        out = [obs.tobytes(), str(vec.get_attr("_start")).encode()]
        for _ in range(80):
            obs, r, term, _, info = vec.step(random_actions(rng, info["action_mask"], 0.1))
            out += [obs.tobytes(), r.tobytes(), term.tobytes()]
        return out

    assert run(5) == run(5) == run([5, 6, 7])
    assert run(5) != run(6)
    vec = BackfillVectorEnv(3, **kwargs())
    vec.reset(seed=9)
    singles = [BackfillEnv(**kwargs()) for _ in range(3)]
    assert vec.get_attr("_start") == tuple(
        e.reset(seed=9 + i)[1]["start"] for i, e in enumerate(singles)
    )


def test_invalid_actions_act_as_stop():
    a, b = BackfillVectorEnv(3, **kwargs()), BackfillVectorEnv(3, **kwargs())
    _, ia = a.reset(seed=4)
    b.reset(seed=4)
    rng = np.random.default_rng(1)
    invalid_seen = 0
    for _ in range(150):
        act = rng.integers(0, KQ + 1, 3)
        valid = ia["action_mask"][np.arange(3), act]
        invalid_seen += int((~valid).sum())
        oa, ra, da, _, ia = a.step(act)
        ob, rb, db, _, _ = b.step(np.where(valid, act, KQ))
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(da, db)
    assert invalid_seen > 50
    strict = BackfillVectorEnv(2, **kwargs(invalid_action="raise"))
    _, info = strict.reset(seed=0)
    bad = np.where(info["action_mask"][:, 0], KQ, 0)
    if info["action_mask"][:, 0].all():
        bad = np.array([KQ - 1, KQ])
    with pytest.raises(ValueError, match="valid actions now are"):
        strict.step(bad)
    with pytest.raises(ValueError, match="expected 2 actions"):
        strict.step(np.zeros(3, dtype=int))


def test_partial_reset_disabled_mode_and_copy():
    vec = BackfillVectorEnv(3, autoreset_mode=AutoresetMode.DISABLED, **kwargs(window_length=16))
    with pytest.raises(RuntimeError, match="first reset"):
        vec.reset(options={"reset_mask": np.array([True, False, False])})
    vec.reset(seed=0)
    term = np.zeros(3, dtype=bool)
    while not term.any():
        _, _, term, _, _ = vec.step(np.full(3, KQ))
    with pytest.raises(RuntimeError, match="DISABLED"):
        vec.step(np.full(3, KQ))
    before = vec.action_masks()
    obs, info = vec.reset(options={"reset_mask": term})
    np.testing.assert_array_equal(info["_action_mask"], term)
    np.testing.assert_array_equal(info["action_mask"][term], vec.action_masks()[term])
    assert not info["action_mask"][~term].any()
    np.testing.assert_array_equal(vec.action_masks()[~term], before[~term])
    vec.step(np.full(3, KQ))  # every sub-env is running again
    # copy=False hands out the buffer itself; copy=True (default) a new array every time
    shared = BackfillVectorEnv(2, copy=False, **kwargs())
    o1, _ = shared.reset(seed=1)
    o2, *_ = shared.step(np.full(2, KQ))
    assert o1 is o2
    o3, _ = vec.reset(seed=1)
    o4, *_ = vec.step(np.full(3, KQ))
    assert o3 is not o4 and not np.shares_memory(o3, o4)


def test_constructor_validation_and_render():
    with pytest.raises(ValueError, match="num_envs"):
        BackfillVectorEnv(0, **kwargs())
    with pytest.raises(ValueError, match="autoreset_mode"):
        BackfillVectorEnv(2, autoreset_mode="sometimes", **kwargs())
    with pytest.raises(ValueError, match="unknown mode"):
        BackfillVectorEnv(2, **kwargs(mode="strict"))
    vec = BackfillVectorEnv(2, **kwargs(render_mode="ansi"))
    vec.reset(seed=0)
    frames = vec.render()
    assert len(frames) == 2 and all(isinstance(f, str) for f in frames)
    assert vec.call("candidate_jobs")[0].shape == (KQ,)
    assert "num_envs=2" in repr(vec)


def _mix_workloads() -> list[Any]:
    """Two different synthetic systems (machine size, jobs, seed, largest request): no traces
    needed."""
    from hpcgym.workload import load

    return [
        load("synthetic", n_jobs=1500, seed=3, machine_size=128),
        load("synthetic", n_jobs=1200, seed=4, machine_size=64, request_model="factor"),
    ]


def test_trace_mix_matches_sync_of_single_envs_per_trace():
    """``trace=[a, b]``: sub-env i is ``BackfillEnv(trace=[a, b][i % 2])`` with the first
    trace's scales, step for step (observations, rewards, ends, infos)."""
    a, b = _mix_workloads()
    assert a.request.max() != b.request.max()
    kw = dict(window_length=40, reward_mode="dense")
    vec = BackfillVectorEnv(4, trace=[a, b], **kw)
    assert vec.traces == (a.name, b.name, a.name, b.name)
    scale = BackfillEnv(trace=a, **kw).est_scale
    assert [e.est_scale for e in vec.envs] == [scale] * 4
    assert [e.wait_scale for e in vec.envs] == [scale] * 4
    assert [e.workload.machine_size for e in vec.envs] == [128, 64, 128, 64]
    assert "traces=" in repr(vec)

    def factory(w: Any) -> Any:
        return lambda: BackfillEnv(trace=w, est_scale=scale, wait_scale=scale, **kw)

    ref = SyncVectorEnv([factory(w) for w in (a, b, a, b)])
    assert compare_with_sync(vec, ref, steps=400, seed=5) > 0


def test_trace_mix_scales_and_clipping():
    """Given scales win over the first trace's; an estimate above ``est_scale`` reads 1,
    so every observation stays in the observation space."""
    a, b = _mix_workloads()
    vec = BackfillVectorEnv(2, trace=[a, b], est_scale=600.0, window_length=40)
    assert [e.est_scale for e in vec.envs] == [600.0, 600.0]
    assert [e.wait_scale for e in vec.envs] == [600.0, 600.0]
    obs, info = vec.reset(seed=0)
    seen_one = False
    rng = np.random.default_rng(0)
    for _ in range(300):
        assert vec.observation_space.contains(obs)
        valid = obs[..., 0] == 1.0
        seen_one |= bool((obs[..., FT.COL_EST][valid] == 1.0).any())
        obs, *_, info = vec.step(random_actions(rng, info["action_mask"], 0.0))
    assert seen_one  # requests above 600 s exist in both workloads
    single = BackfillVectorEnv(2, trace=[a], window_length=40)  # a list of one: no mix
    assert single.traces == (a.name, a.name) and "traces=" not in repr(single)
    with pytest.raises(ValueError, match="empty list"):
        BackfillVectorEnv(2, trace=[], window_length=40)


# ------------------------------------------------------- compiled batch step
@pytest.mark.parametrize(
    ("config", "compiled"),
    [
        ({}, True),
        ({"mode": "penalized", "invalid_action": "penalty", "time_scale": "log"}, True),
        ({"feature_predictor": "ave2"}, False),
        ({"reward_mode": "dense"}, False),
        ({"features": "extended"}, False),
    ],
)
def test_compiled_batch_step_where_the_configuration_allows(config, compiled):
    vec = BackfillVectorEnv(2, **kwargs(**config))
    vec.reset(seed=0)
    assert vec.compiled is compiled
    assert not compiled or vec.batch.reset_on  # resets compiled too
    full = BackfillVectorEnv(2, full_info=True, **kwargs(**config))
    full.reset(seed=0)
    assert not full.compiled
    if not compiled:
        with pytest.raises(ValueError, match="compiled=True: this configuration has"):
            BackfillVectorEnv(2, compiled=True, **kwargs(**config)).reset(seed=0)
    with pytest.raises(ValueError, match="compiled must be"):
        BackfillVectorEnv(2, compiled="yes", **kwargs())  # type: ignore[arg-type]


def compare_paths(cls: type, steps: int, seed: int, **kw: Any) -> int:
    """The compiled batch step against one Python step per sub-env (``compiled=False``),
    same seeds and actions (20 % invalid); returns the number of episode ends."""
    fast, slow = cls(4, compiled=True, **kw), cls(4, compiled=False, **kw)
    o1, i1 = fast.reset(seed=seed)
    o2, i2 = slow.reset(seed=seed)
    assert fast.compiled and not slow.compiled
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(steps):
        a = random_actions(rng, i1["action_mask"], 0.2)
        out1, out2 = fast.step(a), slow.step(a)
        for x, y in zip(out1[:4], out2[:4], strict=True):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
        assert_same(out1[4], out2[4], f"step {t}")
        i1 = out1[4]
        ends += int(out1[2].sum() + out1[3].sum())
        if t == steps // 2:  # a reset with seeds and options, mid-run
            start = int(fast.envs[0].valid_starts[0]) + 3
            o1, i1 = fast.reset(seed=[1, 2, 3, 4], options={"start": start})
            o2, i2 = slow.reset(seed=[1, 2, 3, 4], options={"start": start})
            np.testing.assert_array_equal(o1, o2)
            assert_same(i1, i2, "reset")
    assert fast.get_attr("_steps") == slow.get_attr("_steps")
    assert fast.get_attr("_start") == slow.get_attr("_start")
    assert fast.call("render") == slow.call("render")
    return ends


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_compiled_step_equals_the_python_step(mode):
    traces = [TRACE, None] if TRACE else None  # a trace mix: each sub-env its machine
    kw = kwargs(window_length=48, max_queue=16, autoreset_mode=mode, max_episode_steps=30)
    assert compare_paths(BackfillVectorEnv, 120, 3, **{**kw, "trace": traces}) > 8
    kw = kwargs(mode="penalized", invalid_action="penalty", objective="wait", estimator="actual")
    assert compare_paths(BackfillVectorEnv, 120, 4, **kw) >= 4
    kw = kwargs(window_length=48, max_queue=16, autoreset_mode=mode, objective="awrt")
    assert compare_paths(BackfillVectorEnv, 120, 5, **kw) >= 4  # compiled: the kernel's AWRT


@pytest.mark.parametrize(
    ("reference", "ends_compiled"),
    [("CONSERVATIVE", True), ("SJF+EASY,starvation=auto", True), (None, True), ("ELOSS", False)],
)
def test_compiled_episode_end_and_reference(reference, ends_compiled):
    """The episode's end (metrics, the reference on the same window) is computed in the
    compiled step when the reference is a compiled scheduler, else by the sub-env."""
    kw = kwargs(
        window_length=32, reference=reference, reward_scale="log" if reference else "linear"
    )
    vec = BackfillVectorEnv(2, **kw)
    vec.reset(seed=0)
    assert vec.batch is not None and vec.batch.end_on is ends_compiled
    assert compare_paths(BackfillVectorEnv, 90, 6, **kw) >= 4


def test_compiled_step_cache_follows_the_files_it_calls(tmp_path):
    """numba's disk cache checks only the batch step's own file; the step's cache is
    dropped when a file it calls into changed (here: a stale stamp)."""
    from hpcgym.envs import batch

    class Cache:
        _cache_path = str(tmp_path)
        flushed = 0

        def flush(self) -> None:
            Cache.flushed += 1

    class Dispatcher:
        __name__ = "kernel"
        _cache = Cache()

    (tmp_path / "kernel.deps").write_text("stale", encoding="ascii")
    assert batch.refresh_cache(Dispatcher()) and Cache.flushed == 1
    assert not batch.refresh_cache(Dispatcher()) and Cache.flushed == 1  # stamp renewed
    assert (tmp_path / "kernel.deps").read_text(encoding="ascii") != "stale"
