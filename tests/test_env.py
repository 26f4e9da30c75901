"""Tests of the backfilling env ``hpcgym/Backfill-v0`` and of the EASY / SJBF agents.

Windows come from Lublin-1 when it is available locally (``HPCGYM_TRACE_DIR``), else
from the embedded synthetic workload; they are short so that the file runs in seconds.
"""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import same_metrics
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpcgym.envs  # noqa: F401 - registers hpcgym/Backfill-v0
from hpcgym.envs import observation as FT
from hpcgym.envs.backfill_env import BackfillEnv, clear_normalizer_cache
from hpcgym.sim import _core as K
from hpcgym.sim.schedulers import SchedulerSpec, get_scheduler
from hpcgym_agents.easy import EasyAgent, SJBFAgent
from hpcgym_agents.heuristic import RandomValid, StopAlways


def _trace() -> str | None:
    from hpcgym.workload.traces import TraceNotFoundError, resolve_trace

    try:
        resolve_trace("Lublin-1", download=False)
        return "Lublin-1"
    except TraceNotFoundError:
        return None  # the embedded synthetic workload


TRACE = _trace()
KQ = 128  # default max_queue = STOP action


def make(**kw) -> BackfillEnv:
    kw.setdefault("trace", TRACE)
    if "sequence_length" not in kw:  # the old name stays accepted (tests use both)
        kw.setdefault("window_length", 96)
    return BackfillEnv(**kw)


def play(env: BackfillEnv, agent, seed=None, start=None, check=None):
    """One episode; returns (total reward, last info, list of step rewards)."""
    options = None if start is None else {"start": start}
    obs, info = env.reset(seed=seed, options=options)
    rewards = []
    done = False
    while not done:
        if check is not None:
            check(env, obs, info)
        a, _ = agent.predict(obs, action_masks=info["action_mask"])
        obs, r, done, trunc, info = env.step(a)
        assert not trunc
        rewards.append(r)
    return sum(rewards), info, rewards


def bsld(workload, start) -> float:
    """AVEbsld computed here, independently of hpcgym.sim.metrics (tau = 10 s)."""
    wait = start - workload.submit
    rt = workload.runtime
    return float(np.mean(np.maximum((wait + rt) / np.maximum(rt, 10.0), 1.0)))


# ------------------------------------------------------------------ heuristics
@pytest.mark.parametrize(
    ("scheduler", "agent", "mode"),
    [
        ("EASY", EasyAgent(), "guarded"),
        ("EASY", EasyAgent(), "free"),
        ("EASY-SJBF", SJBFAgent(), "guarded"),
        ("EASY-SJBF", SJBFAgent(), "penalized"),
        ("SJF+EASY", EasyAgent(), "guarded"),
        ("SJF+EASY-SJBF", SJBFAgent(), "free"),
        ("WFP3+EASY", EasyAgent(), "guarded"),
        ("EASY-AR", EasyAgent(), "guarded"),
        ("EASY-SJBF-AR", SJBFAgent(), "free"),
        ("EASY++", SJBFAgent(), "guarded"),  # online predictor + corrections
        ("NONE", StopAlways(), "guarded"),
        ("SJF+NONE", StopAlways(), "free"),
    ],
)
def test_heuristic_agents_reproduce_engine(scheduler, agent, mode):
    spec = get_scheduler(scheduler)
    env = make(
        sequence_length=256,
        split="all",
        mode=mode,
        policy=spec.policy,
        estimator=spec.estimate,
        correction=spec.correction,
    )
    lo, last = env.valid_starts
    starts = np.linspace(lo, last, 5 if spec.estimate == "ave2" else 12).astype(int)
    decisions = 0
    for s in starts:
        _, info, _ = play(env, agent, start=int(s))
        window = env.simulation.workload
        ref = spec.simulate(window)
        np.testing.assert_array_equal(env.simulation.start_times, ref.start)
        assert info["agent"]["avg_bsld"] == ref.metrics["avg_bsld"]
        assert info["violations"] == 0
        decisions += info["decisions"]
    assert decisions > 50  # the windows do exercise backfilling


# ----------------------------------------------------------------------- masks
def _check_state(env: BackfillEnv, obs: np.ndarray, info: dict) -> None:
    """Observation/mask invariants at every step, checked against the engine itself."""
    sim = env.simulation
    mask = info["action_mask"]
    assert obs.dtype == np.float32 and obs.shape == env.observation_space.shape
    assert env.observation_space.contains(obs)
    assert mask.shape == (env.max_queue + 1,) and mask[env.max_queue]
    np.testing.assert_array_equal(mask, env.action_masks())
    n = int(mask[: env.max_queue].sum())
    np.testing.assert_array_equal(obs[:, FT.COL_VALID] == 1.0, mask[: env.max_queue])
    assert not obs[n:].any()  # padding rows: all zeros
    if not info["decision"]:
        assert n == 0
        return
    jobs, easy = sim.candidates()
    assert info["candidates"] == len(jobs) >= 1
    rows = env.candidate_jobs()
    np.testing.assert_array_equal(rows[:n], jobs[: env.max_queue])
    np.testing.assert_array_equal(obs[:n, FT.COL_EASY] == 1.0, easy[: env.max_queue])
    for j in rows[:n]:
        if env.mode == "guarded":
            assert not sim.would_delay(j)
    # rank column follows the engine's backfill order
    order = sim.backfill_order()
    pos = {int(j): k for k, j in enumerate(order)}
    ranks = obs[:n, FT.COL_RANK]
    assert (np.argsort(ranks, kind="stable") == np.argsort([pos[int(j)] for j in rows[:n]])).all()
    # estimate column: exact normalization of the engine's estimates
    np.testing.assert_allclose(
        obs[:n, FT.COL_EST], sim.estimates[rows[:n]] / env.est_scale, rtol=1e-6
    )
    np.testing.assert_allclose(obs[:n, FT.COL_FREE], sim.free / sim.workload.machine_size)


@pytest.mark.parametrize(
    ("mode", "policy"), [("guarded", "FCFS"), ("penalized", "FCFS"), ("free", "SJF")]
)
def test_masks_and_observation_match_engine(mode, policy):
    env = make(mode=mode, policy=policy)
    agent = RandomValid(seed=1)
    for seed in range(4):
        play(env, agent, seed=seed, check=_check_state)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start_frac=st.floats(0.0, 1.0),
    agent_seed=st.integers(0, 2**31 - 1),
    length=st.integers(16, 160),
    include_stop=st.booleans(),
)
def test_random_guarded_agent_never_delays_a_reservation(
    start_frac, agent_seed, length, include_stop
):
    env = _GUARDED.get(length) or _GUARDED.setdefault(length, make(sequence_length=length))
    lo, last = env.valid_starts
    start = lo + int(round(start_frac * (last - lo)))
    agent = RandomValid(seed=agent_seed, include_stop=include_stop)
    _, info, _ = play(env, agent, start=start)
    sim = env.simulation
    # 1) the engine's own counter
    assert info["violations"] == sim.counters["violations"] == 0
    # 2) independently, from the start times: with FCFS and request estimates (upper
    # bounds), every reserved head starts no later than the shadow time it had when
    # any job was backfilled ahead of it.
    start_t = sim.start_times
    heads = sim.JI[K.I_BFHEAD]
    shadows = sim.JF[K.F_BFSHADOW]
    backfilled = np.flatnonzero(sim.JI[K.I_BACKFILLED] == 1)
    assert len(backfilled) == info["backfills"]
    for j in backfilled:
        h = heads[j]
        assert h >= 0 and start_t[h] <= shadows[j]
        assert start_t[j] < start_t[h]  # the head was blocked when j was backfilled


_GUARDED: dict[int, BackfillEnv] = {}


def test_free_mode_counts_violations_independently():
    env = make(mode="free", sequence_length=128)
    agent = RandomValid(seed=7, include_stop=False)
    total = 0
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        done = False
        mine = 0
        while not done:
            a, _ = agent.predict(obs, action_masks=info["action_mask"])
            delays = False
            if a < env.max_queue:
                delays = env.simulation.would_delay(env.candidate_jobs()[a])
            obs, r, done, _, info = env.step(a)
            assert info["violation"] == delays
            mine += delays
        assert info["violations"] == mine == env.simulation.counters["violations"]
        assert info["violations"] == env.simulation.result().counters["violations"]
        total += mine
        if seed >= 5 and total > 0:  # 6 windows at least, more until one delays
            break
    assert total > 0  # free mode does let random picks delay the reservation


def test_penalized_mode_penalty_exactly_on_violation():
    penalty = -0.37
    env = make(mode="penalized", sequence_length=128, violation_penalty=penalty)
    agent = RandomValid(seed=3, include_stop=False)
    seen = 0
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            a, _ = agent.predict(obs, action_masks=info["action_mask"])
            obs, r, done, _, info = env.step(a)
            expected = penalty if info["violation"] else 0.0
            if done:
                expected += env.terminal_reward(info["agent"], info["normalizer"])
            assert r == pytest.approx(expected, abs=1e-12)
            seen += info["violation"]
        if seed >= 5 and seen > 0:  # 6 windows at least, more until one delays
            break
    assert seen > 0
    # guarded and free never penalize
    for mode in ("guarded", "free"):
        env2 = make(mode=mode, sequence_length=128, violation_penalty=penalty)
        _, info, rewards = play(env2, RandomValid(seed=3, include_stop=False), seed=0)
        assert all(r == 0.0 for r in rewards[:-1])


# ---------------------------------------------------------------------- reward
@pytest.mark.parametrize("objective", ["bsld", "wait", "utilization", "awrt"])
@pytest.mark.parametrize("normalizer", ["EASY-SJBF", "EASY", None])
def test_terminal_reward_formula(objective, normalizer):
    env = make(objective=objective, normalizer=normalizer, sequence_length=128)
    for seed in range(3):
        total, info, rewards = play(env, RandomValid(seed=seed), seed=seed)
        assert all(r == 0.0 for r in rewards[:-1])
        window = env.simulation.workload
        agent = info["agent"]
        assert agent["avg_bsld"] == pytest.approx(bsld(window, env.simulation.start_times))
        key = {"bsld": "avg_bsld", "wait": "avg_wait", "utilization": "utilization",
               "awrt": "awrt"}[objective]  # fmt: skip
        a = agent[key]
        if normalizer is None:
            assert info["normalizer"] is None
            expected = a if objective == "utilization" else -a
        else:
            ref = get_scheduler(normalizer).simulate(window)
            assert ref.metrics["avg_bsld"] == info["normalizer"]["avg_bsld"]
            assert ref.metrics["avg_bsld"] == pytest.approx(bsld(window, ref.start))
            b = ref.metrics[key]
            if objective == "utilization":
                expected = (a - b) / b
            elif objective in ("wait", "awrt"):
                expected = (b - a) / max(b, 1.0)  # mean wait may be 0 s
            else:
                expected = (b - a) / b
        assert rewards[-1] == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert info["decisions"] == env.simulation.counters["decisions"]
        assert info["backfills"] == agent["backfilled"]


def lockstep(a_env: BackfillEnv, b_env: BackfillEnv, seed: int):
    """Reset both envs with ``seed`` now; the returned generator plays the episode with
    the same random valid actions in both (their observations must agree), yielding
    ``(reward_a, reward_b, done, info_a, info_b)`` per step."""
    agent = RandomValid(seed=seed)
    o1, i1 = a_env.reset(seed=seed)
    b_env.reset(seed=seed)

    def steps():
        nonlocal o1, i1
        done = False
        while not done:
            a, _ = agent.predict(o1, action_masks=i1["action_mask"])
            o1, r1, done, _, i1 = a_env.step(a)
            o2, r2, done2, _, i2 = b_env.step(a)
            np.testing.assert_array_equal(o1, o2)
            assert done == done2
            yield r1, r2, done, i1, i2

    return steps()


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"objective": "wait"},
        {"objective": "awrt"},
        {"objective": "awrt", "normalizer": None},
        {"normalizer": None},
        {"policy": "SJF", "mode": "penalized"},
        {"mode": "free", "normalizer": "EASY"},
    ],
)
def test_dense_reward_redistributes_the_terminal_reward(kw):
    """reward_mode='dense': the same episode (observations, penalties, metrics); each step
    pays the jobs that started since the previous step (at the first: since the window
    began), each against the same job in the reference's schedule; the episode's sum is
    the terminal reward."""
    dense, term = make(reward_mode="dense", **kw), make(**kw)
    objective = kw.get("objective", "bsld")

    def per_job(window, start):
        wait = start - window.submit
        if objective == "wait":
            return wait
        if objective == "awrt":  # the job's share of the area-weighted response time
            area = window.runtime * window.procs
            return len(window) * area / area.sum() * (wait + window.runtime)
        return np.maximum((wait + window.runtime) / np.maximum(window.runtime, 10.0), 1.0)

    for seed in range(3):
        steps = lockstep(dense, term, seed)
        window = dense.simulation.workload
        n = len(window)
        if dense.reference is None:
            ref_value, scale = np.zeros(n), 1.0 / n
        else:
            ref_value = per_job(window, dense.reference.simulate(window).start)
            mean = ref_value.mean()
            scale = 1.0 / (n * (mean if objective == "bsld" else max(mean, 1.0)))
        paid = np.zeros(n, dtype=bool)
        total_d = total_t = 0.0
        nonzero = 0
        for r1, r2, done, *infos in steps:
            i1, i2 = infos
            start = dense.simulation.start_times
            new = ~np.isnan(start) & ~paid
            paid |= new
            expected = float(((ref_value - per_job(window, start))[new]).sum()) * scale
            penalty = r2 - (term.terminal_reward(i2["agent"], i2["reference"]) if done else 0.0)
            assert r1 == pytest.approx(penalty + expected, rel=1e-9, abs=1e-12)
            total_d, total_t = total_d + r1, total_t + r2
            nonzero += bool(new.any())
        assert paid.all() and same_metrics(i1["agent"], i2["agent"])
        assert total_d == pytest.approx(total_t, rel=1e-9, abs=1e-12)
        if dense.simulation.counters["decisions"] > 1:
            assert nonzero > 1  # jobs paid along the way, not only at the end


def test_dense_reward_validation():
    with pytest.raises(ValueError, match="terminal.*dense|dense.*terminal"):
        make(reward_mode="sparse")
    with pytest.raises(ValueError, match="per-job objective"):
        make(reward_mode="dense", objective="utilization")
    env = make(reward_mode="dense")
    assert pickle.loads(pickle.dumps(env)).reward_mode == "dense"


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"objective": "wait"},
        {"normalizer": None},
        {"reward_mode": "dense"},
        {"reward_mode": "dense", "objective": "wait", "normalizer": "EASY"},
        {"reward_mode": "dense", "normalizer": None},
        {"objective": "awrt"},
        {"reward_mode": "dense", "objective": "awrt", "normalizer": None},
    ],
)
def test_log_reward_scale_pays_minus_the_log_of_the_ratio(kw):
    """reward_scale='log': the same episode as the linear scale; its return is -ln of the
    agent's AVEbsld (mean wait, floored at 1 s) over the reference's (without a reference:
    -ln of the agent's); in dense mode the steps before the last pay the same job shares
    as the linear scale and only the last step differs."""
    busy = "synthetic:load=1.5,n_jobs=2000,seed=3,job_types=false"  # windows with waits
    log_env = make(reward_scale="log", trace=busy, **kw)
    lin_env = make(trace=busy, **kw)
    key = {"wait": "avg_wait", "awrt": "awrt"}.get(kw.get("objective", ""), "avg_bsld")
    floor = 1.0 if key in ("avg_wait", "awrt") else 0.0
    for seed in range(3):
        total = 0.0
        for r1, r2, done, *infos in lockstep(log_env, lin_env, seed):
            i1, i2 = infos
            if not done:
                assert r1 == r2
            total += r1
        a_val = max(i1["agent"][key], floor)
        expected = -np.log(a_val)
        if i1["reference"] is not None:
            expected += np.log(max(i1["reference"][key], floor))
        assert total == pytest.approx(expected, rel=1e-9, abs=1e-9)
        # the log and the linear return agree to first order: -ln r = (1 - r) + O((1 - r)^2)
        lin_total = lin_env.terminal_reward(i2["agent"], i2["reference"])
        if i1["reference"] is not None:
            r = np.exp(-expected)
            assert r != 1.0  # a window where the two scales differ
            assert lin_total == pytest.approx(1 - r, rel=1e-9, abs=1e-9)


def test_log_reward_scale_values_and_validation():
    from hpcgym.envs.reward import terminal_reward

    ref, agent = {"avg_bsld": 4.0, "avg_wait": 0.5}, {"avg_bsld": 2.0, "avg_wait": 8.0}
    assert terminal_reward("bsld", agent, ref, "log") == pytest.approx(np.log(2.0))
    assert terminal_reward("bsld", ref, agent, "log") == pytest.approx(-np.log(2.0))
    assert terminal_reward("bsld", agent, ref) == pytest.approx(0.5)
    assert terminal_reward("wait", agent, ref, "log") == pytest.approx(-np.log(8.0))
    assert terminal_reward("bsld", agent, None, "log") == pytest.approx(-np.log(2.0))
    util = {"utilization": 0.6}
    assert terminal_reward("utilization", util, {"utilization": 0.3}, "log") == pytest.approx(
        np.log(2.0)
    )
    with pytest.raises(ValueError, match="above 0"):
        terminal_reward("utilization", {"utilization": 0.0}, None, "log")
    with pytest.raises(ValueError, match="valid choices: linear, log"):
        terminal_reward("bsld", agent, ref, "sqrt")
    with pytest.raises(ValueError, match="reward_scale 'sqrt'; valid choices: linear, log"):
        make(reward_scale="sqrt")
    env = make(reward_scale="LOG")
    assert env.reward_scale == "log"
    assert pickle.loads(pickle.dumps(env)).reward_scale == "log"


def test_normalizer_follows_base_policy_and_is_cached(monkeypatch):
    assert make(policy="SJF").normalizer.name == "SJF+EASY-SJBF"
    assert make(policy="SJF", normalizer="FCFS+EASY-SJBF").normalizer.policy == "FCFS"
    assert make(policy="SJF", normalizer="SAF").normalizer.policy == "SAF"
    assert make(normalizer="EASY++").normalizer.name == "EASY++"
    with pytest.raises(ValueError, match="valid names"):
        make(normalizer="NOPE")
    clear_normalizer_cache()
    calls = []
    orig = SchedulerSpec.simulate

    def counting(self, workload, seed=0):
        calls.append(self.name)
        return orig(self, workload, seed)

    monkeypatch.setattr(SchedulerSpec, "simulate", counting)
    env = make()
    lo, _ = env.valid_starts
    r1 = play(env, StopAlways(), start=lo + 5)[0]
    r2 = play(env, StopAlways(), start=lo + 5)[0]
    assert r1 == r2 and calls == ["EASY-SJBF"]
    play(make(normalizer="EASY"), StopAlways(), start=lo + 5)
    assert calls == ["EASY-SJBF", "EASY"]


# ------------------------------------------------------------- actions, edges
def test_invalid_action_raises_with_valid_actions():
    env = make(invalid_action="raise")
    obs, info = env.reset(seed=0)
    valid = np.flatnonzero(info["action_mask"]).tolist()
    bad = next(i for i in range(KQ) if not info["action_mask"][i])
    for action in (bad, KQ + 1, -1):
        with pytest.raises(ValueError, match="valid actions now are") as exc:
            env.step(action)
        assert str(valid) in str(exc.value)
    with pytest.raises(ValueError, match="valid actions"):
        env.step(np.array([0.5]))
    env.step(np.int64(KQ))  # numpy scalar actions are fine


def test_invalid_action_acts_as_stop_by_default():
    a, b = make(), make()
    oa, ia = a.reset(seed=4)
    b.reset(seed=4)
    bad = next(i for i in range(KQ) if not ia["action_mask"][i])
    for _ in range(20):
        oa, ra, da, _, ia = a.step(bad if bad < KQ else KQ)
        ob, rb, db, _, ib = b.step(KQ)
        np.testing.assert_array_equal(oa, ob)
        assert ia["invalid_action"] == (bad < KQ) and not ib["invalid_action"]
        assert ra == rb and da == db
        if da:
            break
        bad = next((i for i in range(KQ) if not ia["action_mask"][i]), KQ)


def test_action_mask_through_wrappers_and_before_reset():
    env = gym.make("hpcgym/Backfill-v0", trace=TRACE, window_length=64)
    with pytest.raises(RuntimeError, match="reset"):
        env.get_wrapper_attr("action_masks")()
    obs, info = env.reset(seed=3)
    for _ in range(10):
        mask = env.get_wrapper_attr("action_masks")()
        np.testing.assert_array_equal(mask, info["action_mask"])
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(mask)[0]))
        if term:
            break


def test_invalid_action_penalty_mode_acts_as_stop():
    a = make(invalid_action="penalty", invalid_penalty=-0.5)
    b = make()
    oa, ia = a.reset(seed=4)
    ob, ib = b.reset(seed=4)
    bad = next(i for i in range(KQ) if not ia["action_mask"][i])
    oa, ra, da, _, ia = a.step(bad)
    ob, rb, db, _, ib = b.step(KQ)
    np.testing.assert_array_equal(oa, ob)
    assert ia["invalid"] and not ib["invalid"] and ia["invalid_action"]
    assert ra == pytest.approx(rb - 0.5)


def test_window_without_decision_point():
    env = make(sequence_length=1, invalid_action="raise")
    obs, info = env.reset(seed=0)
    assert not info["decision"] and not obs.any()
    assert info["action_mask"].tolist() == [False] * KQ + [True]
    with pytest.raises(ValueError):
        env.step(0)
    obs, r, term, trunc, info = env.step(KQ)
    assert term and not trunc and info["episode_steps"] == 1 and info["decisions"] == 0
    assert r == pytest.approx(env.terminal_reward(info["agent"], info["normalizer"]))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(KQ)


def test_reset_options():
    env = make()
    lo, last = env.valid_starts
    _, info = env.reset(options={"start": last})
    assert info["start"] == last and info["window"].endswith(f"[{last}:{last + 96}]")
    with pytest.raises(ValueError, match="valid starts"):
        env.reset(options={"start": last + 1})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"begin": 3})
    test_env = make(split="test")
    tlo, tlast = test_env.valid_starts
    assert tlo > last  # time split: test windows come after the training range
    with pytest.raises(ValueError, match="unknown mode"):
        make(mode="strict")


def test_seeded_determinism():
    def trajectory(seed):
        env = make(mode="free", sequence_length=64)
        agent = RandomValid(seed=11)
        out = []
        for ep in range(3):
            obs, info = env.reset(seed=seed if ep == 0 else None)
            out.append(("start", info["start"]))
            done = False
            while not done:
                a, _ = agent.predict(obs, action_masks=info["action_mask"])
                obs, r, done, _, info = env.step(a)
                out.append((obs.tobytes(), r))
        return out

    t1, t2, t3 = trajectory(5), trajectory(5), trajectory(6)
    assert t1 == t2
    assert [x for x in t1 if x[0] == "start"] != [x for x in t3 if x[0] == "start"]


def test_pickle_mid_episode_continues_identically():
    env = make(mode="free", sequence_length=256)
    for seed in range(20):  # a window with more than one decision
        obs, info = env.reset(seed=seed)
        if not env.step(int(np.flatnonzero(info["action_mask"])[0]))[2]:
            break
    blob = pickle.dumps(env)
    assert len(blob) < 200_000  # the trace is reloaded by name, not pickled
    twin = pickle.loads(blob)
    agent = RandomValid(seed=0)
    mask = env.action_masks()
    done = False
    while not done:
        a, _ = agent.predict(env._obs, action_masks=mask)
        o1, r1, done, _, i1 = env.step(a)
        o2, r2, d2, _, i2 = twin.step(a)
        np.testing.assert_array_equal(o1, o2)
        assert r1 == r2 and done == d2
        mask = i1["action_mask"]


def test_feature_predictor_column():
    from hpcgym.predictors.static import ActualEstimator

    for fp in ("actual", ActualEstimator()):
        env = make(feature_predictor=fp)
        assert env.observation_space.shape == (KQ, FT.N_BASE_FEATURES + 1)
        obs, info = env.reset(seed=1)
        n = int(info["action_mask"][:KQ].sum())
        w = env.simulation.workload
        rows = env.candidate_jobs()[:n]
        expected = np.minimum(w.runtime[rows], w.request[rows]) / env.est_scale
        np.testing.assert_allclose(obs[:n, FT.COL_PRED], expected, rtol=1e-6)
    # an online predictor (AVE2) is asked at the first decision point after a submission
    env = make(feature_predictor="ave2", sequence_length=128)
    for seed in range(2):
        play(env, RandomValid(seed=seed), seed=seed, check=_check_prediction_column)


def _check_prediction_column(env: BackfillEnv, obs: np.ndarray, info: dict) -> None:
    n = int(info["action_mask"][:KQ].sum())
    rows = env.candidate_jobs()[:n]
    pred = env._pred[rows]
    w = env.simulation.workload
    assert np.isfinite(pred).all() and (pred <= w.request[rows]).all() and (pred >= 1.0).all()
    np.testing.assert_allclose(obs[:n, FT.COL_PRED], pred / env.est_scale, rtol=1e-6)


# ------------------------------------------------------- checkers, registration
def test_env_checkers():
    from gymnasium.utils.env_checker import check_env as gym_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # render / unconventional-shape notices
        # default arguments (the checkers step with unmasked random actions): the wrapped
        # env of gym.make and the unwrapped env, with both checkers
        gym_check(make(window_length=48))
        env = gym.make("hpcgym/Backfill-v0", trace=TRACE, window_length=48)
        gym_check(env)
        gym_check(env.unwrapped)
        sb3_check(env, warn=False)
        sb3_check(env.unwrapped, warn=False)
        sb3_check(make(window_length=48, invalid_action="penalty"), warn=False)


def test_plain_sb3_ppo_trains_on_the_default_env():
    from stable_baselines3 import PPO

    env = gym.make("hpcgym/Backfill-v0", trace=TRACE, window_length=48, max_queue=16)
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(192)
    assert model.num_timesteps >= 192


def test_gym_make_and_vector_envs():
    env = gym.make("hpcgym/Backfill-v0", trace=TRACE, sequence_length=32)
    obs, info = env.reset(seed=0)
    assert obs.shape == (KQ, FT.N_BASE_FEATURES)
    assert env.get_wrapper_attr("action_masks")().shape == (KQ + 1,)
    venv = gym.make_vec("hpcgym/Backfill-v0", num_envs=2, vectorization_mode="sync", trace=TRACE,
                        sequence_length=32)  # fmt: skip
    obs, info = venv.reset(seed=1)
    assert obs.shape == (2, KQ, FT.N_BASE_FEATURES) and info["action_mask"].shape == (2, KQ + 1)
    venv.step(np.array([KQ, KQ]))
    venv.close()


def test_sb3_subproc_vec_env():
    from stable_baselines3.common.vec_env import SubprocVecEnv

    trace = TRACE

    def factory():
        return gym.make("hpcgym.envs:hpcgym/Backfill-v0", trace=trace, sequence_length=32)

    venv = SubprocVecEnv([factory, factory])
    try:
        venv.seed(3)
        obs = venv.reset()
        assert obs.shape == (2, KQ, FT.N_BASE_FEATURES)
        dones = 0
        for _ in range(40):
            masks = np.stack(venv.env_method("action_masks"))
            rows = masks[:, :KQ]
            first = np.where(rows.any(axis=1), rows.argmax(axis=1), KQ)  # FirstValid
            obs, rewards, done, infos = venv.step(first)
            dones += int(done.sum())
            for i in np.flatnonzero(done):
                assert "agent" in infos[i] and np.isfinite(rewards[i])
        assert dones > 0
    finally:
        venv.close()


def test_render_ansi_and_unsupported_render_modes():
    env = make(render_mode="ansi", mode="free", sequence_length=256)
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        if info["decision"]:
            break
    text = env.render()
    assert isinstance(text, str) and "head: job" in text and f"action {KQ} = STOP" in text
    assert text.count("\n[") == 0 and text.count("  [") == int(info["action_mask"][:KQ].sum())
    with pytest.warns(UserWarning, match="not supported"):
        other = make(render_mode="rgb_array")  # what SB3's make_vec_env asks for
    other.reset(seed=0)
    assert other.render() is None


def test_online_feature_predictor_eloss_predicts_at_submission():
    """feature_predictor='eloss' used to fail at reset ("job finished but was never
    predicted"): online feature predictors now predict each job when it is submitted."""
    env = make(feature_predictor="eloss", window_length=128)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            n = int(info["action_mask"][:KQ].sum())
            rows = env.candidate_jobs()[:n]
            w = env.simulation.workload
            pred = env._pred[rows]
            assert np.isfinite(pred).all() and (pred <= w.request[rows]).all()
            np.testing.assert_allclose(obs[:n, FT.COL_PRED], np.minimum(pred / env.est_scale, 1))
            obs, r, done, _, info = env.step(0 if n else KQ)
        assert np.isfinite(env._pred).all()  # every job of the window was predicted


# ------------------------------------------------------------- window draws
def test_reset_draws_windows_uniformly_or_by_load():
    from gymnasium.utils.seeding import np_random

    from hpcgym.workload import WindowSampler

    env = make(window_length=64)
    lo, last = env.valid_starts
    for seed in range(5):  # the uniform draw: one integers() call of the seeded generator
        assert env.reset(seed=seed)[1]["start"] == int(np_random(seed)[0].integers(lo, last + 1))
    heavy = make(window_length=64, load_weighting=3.0)
    same = WindowSampler(heavy.workload, 64, "train", load_weighting=3.0)
    starts = []
    for seed in range(40):
        start = heavy.reset(seed=seed)[1]["start"]
        assert start == same.draw(np_random(seed)[0])
        starts.append(start)
    assert heavy.reset(options={"start": lo})[1]["start"] == lo  # replay still exact
    from hpcgym.workload.sequences import window_loads

    loads = window_loads(env.workload, 64, lo, last + 64)
    uniform = [env.reset(seed=s)[1]["start"] for s in range(40)]
    assert np.mean(loads[np.array(starts) - lo]) > np.mean(loads[np.array(uniform) - lo])
    with pytest.raises(ValueError, match="load_weighting must be a finite number >= 0"):
        make(load_weighting=-1)


def test_log_time_scale_columns():
    """``time_scale="log"``: the duration columns (wait, estimate, shadow, prediction) are
    ``min(ln(1 + x / 10 s) / ln(1 + scale / 10 s), 1)`` of the seconds the linear columns
    encode, every other column is unchanged, and the same actions play the same episode."""
    from hpcgym.predictors.static import ActualEstimator

    busy = "synthetic:load=1.5,n_jobs=2000,seed=3,job_types=false"  # windows with waits
    kw = {"feature_predictor": ActualEstimator(), "window_length": 128, "trace": busy}
    lin, log = make(**kw), make(time_scale="LOG", **kw)
    assert log.time_scale == "log" and lin.time_scale == "linear"
    agent = RandomValid(seed=4)
    o1, i1 = lin.reset(seed=4)
    o2, _ = log.reset(seed=4)
    durations = {FT.COL_WAIT: lin.wait_scale, FT.COL_EST: lin.est_scale,
                 FT.COL_SHADOW: lin.est_scale, FT.COL_PRED: lin.est_scale}  # fmt: skip
    others = [c for c in range(o1.shape[1]) if c not in durations]
    checked = done = 0
    while not done:
        n = int(i1["action_mask"][:KQ].sum())
        np.testing.assert_array_equal(o1[:, others], o2[:, others])
        for col, scale in durations.items():
            seconds = o1[:n, col].astype(np.float64) * scale
            keep = o1[:n, col] < 1.0  # linear 1 is clipped: the seconds are unknown
            want = np.log1p(seconds / 10.0) / np.log1p(scale / 10.0)
            np.testing.assert_allclose(o2[:n, col][keep], want[keep], rtol=2e-5, atol=1e-6)
            assert np.all(o2[:n, col] >= o1[:n, col] - 1e-6)  # log reads above linear
            checked += int(keep.sum())
        assert not o2[n:].any()  # padding stays zero
        a, _ = agent.predict(o1, action_masks=i1["action_mask"])
        o1, r1, done, _, i1 = lin.step(a)
        o2, r2, done2, _, _ = log.step(a)
        assert r1 == r2 and done == done2
    assert checked > 100
    # short estimates are spread out: 60 s and 600 s differ by < 0.01 linearly here
    wide = (np.log1p(60.0) - np.log1p(6.0)) / np.log1p(lin.est_scale / 10.0)
    assert (600.0 - 60.0) / lin.est_scale < 0.01 < wide
    with pytest.raises(ValueError, match="time_scale 'days'; valid choices: linear, log"):
        make(time_scale="days")


@pytest.mark.parametrize("reference", ["EASY-SJBF", None])
def test_awrt_objective_has_the_right_sign(reference):
    """objective='awrt' for an agent that never backfills (STOP at every decision): the
    reward is (AWRT_ref - AWRT_agent) / AWRT_ref, positive exactly when the agent's
    area-weighted response time is the lower (not backfilling small jobs can help the wide
    ones that AWRT weighs most, so either sign occurs); without a reference, -AWRT."""
    busy = "synthetic:load=1.5,n_jobs=2000,seed=3,job_types=false"  # windows with waits
    env = make(objective="awrt", normalizer=reference, trace=busy, sequence_length=128)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        done, total = False, 0.0
        while not done:  # STOP is the last action: no backfilling at all
            obs, r, done, _, info = env.step(env.action_space.n - 1)
            total += r
        a = info["agent"]["awrt"]
        assert a > 0 and info["objective"] == "awrt" and info["backfills"] == 0
        if reference is None:
            assert total == pytest.approx(-a, rel=1e-12) and total < 0
            continue
        b = info["reference"]["awrt"]
        assert a != b  # a window where the two schedules differ
        assert total == pytest.approx((b - a) / b, rel=1e-12, abs=1e-12)
        assert np.sign(total) == np.sign(b - a)
        # the env recomputes the same reward from the two metric dicts
        assert env.terminal_reward(info["agent"], info["reference"]) == pytest.approx(total)
