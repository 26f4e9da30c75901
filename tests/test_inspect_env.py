"""Inspection: the engine's accept/reject decision (hpcgym.sim.inspection) and the
``hpcgym/Inspect-v0`` task built on it.

Engine: always accepting reproduces every queue policy exactly; a reject ends the pass
and waits for the next event (hand-worked cases below); the guard (no verdict without an
event to wait for, a cap on rejections per job); snapshots carry the state. Task: both
checkers on defaults, the spec's spaces and mask, always-accept equals the base policy,
determinism with seeds, the vector env.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.sim import Simulation, simulate
from hpcgym.sim.engine import POLICIES, Event
from hpcgym.workload import load
from hpcgym.workload.core import Workload


def _wl(jobs: list[tuple[float, float, int, float]], m: int) -> Workload:
    """A workload from ``(submit, runtime, procs, request)`` tuples."""
    s, r, p, q = (np.array(c) for c in zip(*jobs, strict=True))
    neg = -np.ones(len(jobs))
    return Workload(
        "case", m, np.arange(len(jobs)), s.astype(float), r.astype(float), p.astype(np.int64),
        q.astype(float), neg, neg, neg, neg,
    )  # fmt: skip


def _drive(sim: Simulation, verdicts: list[bool]) -> list[tuple[float, int]]:
    """Answer the inspection decisions with ``verdicts`` (True = reject), then accept;
    returns ``(time, job)`` of every decision."""
    seen = []
    while (ev := sim.advance()) != Event.DONE:
        assert ev == Event.INSPECT
        seen.append((sim.now, sim.inspected))
        sim.reject() if verdicts and verdicts.pop(0) else sim.accept()
    return seen


# ------------------------------------------------------------------ the engine
@pytest.fixture(scope="module")
def window() -> Workload:
    return load(None).window(0, 192)


@pytest.mark.parametrize("backfill", ["easy", "sjbf", "none"])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_always_accept_is_the_policy(window: Workload, policy: str, backfill: str) -> None:
    base = simulate(window, policy=policy, backfill=backfill, starvation="auto")
    sim = Simulation(window, policy=policy, backfill=backfill, starvation="auto")
    sim.enable_inspection()
    res = sim.run(reject=lambda s: False)
    np.testing.assert_array_equal(res.start, base.start)
    np.testing.assert_array_equal(res.backfilled, base.backfilled)
    np.testing.assert_array_equal(res.head_since, base.head_since)  # reservations too
    assert res.metrics["avg_bsld"] == base.metrics["avg_bsld"]
    # one decision per start of the pick (the backfilled jobs are not inspected), less
    # the forced ones (nothing running, no job left to arrive)
    starts = len(window) - int(base.backfilled.sum())
    assert 0 < res.counters["inspections"] <= starts
    assert res.counters["rejections"] == 0


def test_reject_waits_for_the_next_event() -> None:
    # m=4, FCFS, no backfilling. J0 (4p, 10 s) at 0; J1 (2p) at 5; J2 (2p) at 40.
    # t=0: pick J0 fits, J1 will arrive: asked -> reject: nothing starts, wait.
    # t=5 (J1 arrives): pick J0 again -> accept: J0 starts at 5; J1 does not fit.
    # t=15 (J0 ends): pick J1 fits, J2 will arrive: asked -> accept: starts at 15.
    # t=40: J2 fits, nothing runs, nothing left to arrive: no verdict asked (guard).
    wl = _wl([(0, 10, 4, 10), (5, 10, 2, 10), (40, 10, 2, 10)], 4)
    sim = Simulation(wl, policy="FCFS", backfill="none")
    sim.enable_inspection()
    seen = _drive(sim, [True, False, False])
    assert seen == [(0.0, 0), (5.0, 0), (15.0, 1)]
    res = sim.result()
    np.testing.assert_array_equal(res.start, [5, 15, 40])
    assert res.counters["inspections"] == 3 and res.counters["rejections"] == 1
    np.testing.assert_array_equal(sim.rejections, [1, 0, 0])
    # always accepting: the policy's own schedule, J2 forced again
    sim = Simulation(wl, policy="FCFS", backfill="none")
    sim.enable_inspection()
    assert _drive(sim, []) == [(0.0, 0), (10.0, 1)]
    np.testing.assert_array_equal(sim.result().start, simulate(wl, backfill="none").start)


def test_reject_stops_backfilling_too() -> None:
    # m=4, FCFS + EASY. J0 (3p, 100 s) and J1 (1p, 10 s) at 0, J2 (4p) at 50.
    # t=0: pick J0 -> reject: J1 fits but nothing starts (no backfilling on a reject).
    # t=50 (J2 arrives, the last): J0 starts without a verdict (nothing runs, nothing
    # left to arrive: the guard); J1 fits, J0 runs -> asked, accept (starts 50); J2 does
    # not fit: reserved at 150 (J0's end), nothing to backfill; at 150 J2 starts.
    wl = _wl([(0, 100, 3, 100), (0, 10, 1, 10), (50, 10, 4, 10)], 4)
    sim = Simulation(wl, policy="FCFS", backfill="easy")
    sim.enable_inspection()
    seen = _drive(sim, [True, False])
    assert seen == [(0.0, 0), (50.0, 1)]
    np.testing.assert_array_equal(sim.result().start, [50, 50, 150])
    # accepted, the same jobs: J0 and J1 at 0 (J1 inspected in the same pass)
    sim = Simulation(wl, policy="FCFS", backfill="easy")
    sim.enable_inspection()
    assert _drive(sim, []) == [(0.0, 0), (0.0, 1)]
    np.testing.assert_array_equal(sim.result().start, [0, 0, 100])


def test_rejection_cap() -> None:
    wl = _wl([(0, 10, 4, 10), (5, 10, 2, 10), (40, 10, 2, 10)], 4)
    sim = Simulation(wl, policy="FCFS", backfill="none")
    sim.enable_inspection(max_rejections=1)
    assert sim.max_rejections == 1
    # J0 rejected once at 0: at 5 it starts without a verdict; J1 rejected at 15 waits
    # for J2's arrival (40) and starts then, without a verdict; J2 fits beside it, J1
    # runs: asked, accepted (starts 40)
    seen = _drive(sim, [True, True])
    assert seen == [(0.0, 0), (15.0, 1), (40.0, 2)]
    np.testing.assert_array_equal(sim.result().start, [5, 40, 40])


def test_rejecting_forever_terminates(window: Workload) -> None:
    sim = Simulation(window, policy="SJF", backfill="sjbf")
    sim.enable_inspection(max_rejections=3)
    res = sim.run(reject=lambda s: True)
    assert not np.isnan(res.start).any()
    assert int(sim.rejections.max()) <= 3
    assert res.counters["rejections"] == res.counters["inspections"]


def test_inspection_errors(window: Workload) -> None:
    sim = Simulation(window, policy="FCFS")
    with pytest.raises(RuntimeError, match="inspection decision"):
        sim.accept()
    with pytest.raises(ValueError, match="max_rejections"):
        sim.enable_inspection(max_rejections=0)
    with pytest.raises(ValueError, match="conservative"):
        Simulation(window, backfill="conservative").enable_inspection()
    with pytest.raises(ValueError, match="built-in queue policy"):
        Simulation(window, policy="external").enable_inspection()
    sim.enable_inspection()
    with pytest.raises(RuntimeError, match="reject"):
        sim.run()
    assert sim.inspecting and sim.config["inspect"] == sim.max_rejections


def test_snapshot_and_disable(window: Workload) -> None:
    sim = Simulation(window, policy="WFP3", backfill="easy")
    sim.enable_inspection()
    assert sim.advance() == Event.INSPECT
    snap = sim.snapshot()
    job = sim.inspected
    sim.reject()
    a = sim.run(reject=lambda s: False).start
    sim.restore(snap)
    assert sim.inspected == job
    sim.reject()
    np.testing.assert_array_equal(sim.run(reject=lambda s: False).start, a)
    # disabling after a verdict: the verdict stands, then every pick is accepted
    sim.restore(snap)
    sim.reject()
    sim.disable_inspection()
    np.testing.assert_array_equal(sim.run().start, a)
    # disabling at a pending decision accepts it: the policy's schedule
    sim.restore(snap)
    sim.disable_inspection()
    assert not sim.inspecting
    np.testing.assert_array_equal(
        sim.run().start, simulate(window, policy="WFP3", backfill="easy").start
    )


# -------------------------------------------------------------------- the task
INSPECT = "hpcgym/Inspect-v0"
SMALL: dict = {"window_length": 48, "max_queue": 16}


def _episode(env, actions) -> tuple[float, dict, list[np.ndarray], int]:
    """Play ``actions(step, obs) -> action`` to the end: return, last info, observations."""
    obs, info = env.reset(seed=3)
    seen, total, k, done = [obs.copy()], 0.0, 0, False
    while not done:
        obs, r, term, trunc, info = env.step(actions(k, obs))
        seen.append(obs.copy())
        total += float(r)
        k += 1
        done = term or trunc
    return total, info, seen, k


def test_checkers_on_defaults() -> None:
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(gym.make(INSPECT).unwrapped)
    sb3_check_env(gym.make(INSPECT).unwrapped)


def test_spaces_mask_and_rows() -> None:
    import gymnasium as gym

    from hpcgym.tasks import get_task
    from hpcgym.tasks.inspect import INSPECT_COLUMNS

    assert get_task("inspect").env_id == INSPECT
    env = gym.make(INSPECT, **SMALL).unwrapped
    assert env.action_space.n == 2
    assert env.observation_space.shape == (16, len(INSPECT_COLUMNS)) == (16, 18)
    assert env.feature_names == INSPECT_COLUMNS
    obs, info = env.reset(seed=1)
    sim = env.simulation
    assert info["decision"] and info["action_mask"].tolist() == [True, True]
    assert env.candidate_jobs()[0] == sim.inspected >= 0  # row 0 is the pick
    assert obs[0, 0] == 1.0 and obs[0, 5] == 1.0  # a real row that fits
    assert env.observation_space.contains(obs)
    obs, _, _, _, info = env.step(1)  # reject: the row's rejections column counts it
    rows = env.candidate_jobs()
    j = int(np.flatnonzero(sim.rejections)[0])
    assert j in rows  # still waiting: the next event came before it could start
    assert obs[list(rows).index(j), 16] == pytest.approx(1 / env.task.max_rejections)
    assert (obs[rows >= 0, 16] > 0).sum() == 1
    # an invalid action accepts; at the end only accept is valid
    _, _, _, _, info = env.step(7)
    assert info["invalid_action"]
    strict = gym.make(INSPECT, invalid_action="raise", render_mode="ansi", **SMALL).unwrapped
    strict.reset(seed=1)
    assert f"pick: job {strict.simulation.inspected} " in strict.render()
    with pytest.raises(ValueError, match="0 accept, 1 reject"):
        strict.step(2)
    done = False
    while not done:
        _, _, done, _, info = env.step(0)
    assert info["action_mask"].tolist() == [True, False]


@pytest.mark.parametrize("base", list(POLICIES))
def test_always_accept_is_the_base_and_every_policy_is_a_reference(base: str) -> None:
    import gymnasium as gym

    from hpcgym.envs.reward import terminal_reward
    from hpcgym.sim.schedulers import get_scheduler

    env = gym.make(INSPECT, base=base, backfill="easy", **SMALL).unwrapped
    total, info, _, steps = _episode(env, lambda k, o: 0)
    assert total == 0.0 and info["agent"] == info["reference"]
    window = env.simulation.workload
    np.testing.assert_array_equal(
        env.simulation.result().start, simulate(window, policy=base, backfill="easy").start
    )
    assert info["decisions"] == steps  # one step per decision
    # another heuristic as the reference: the reward compares with it
    other = "SAF" if base != "SAF" else "FCFS"
    env = gym.make(INSPECT, base=base, reference=f"{other}+EASY", **SMALL).unwrapped
    total, info, _, _ = _episode(env, lambda k, o: 0)
    ref = get_scheduler(f"{other}+EASY").simulate(window).metrics
    assert info["reference"]["avg_bsld"] == pytest.approx(ref["avg_bsld"])
    assert total == pytest.approx(terminal_reward("bsld", info["agent"], info["reference"]))


def test_rejecting_holds_and_ends() -> None:
    import gymnasium as gym

    env = gym.make(INSPECT, base="SJF", max_rejections=2, **SMALL).unwrapped
    total, info, _, steps = _episode(env, lambda k, o: 1)
    sim = env.simulation
    assert not np.isnan(sim.start_times).any()
    assert int(sim.rejections.max()) <= 2
    assert sim.counters["rejections"] == sim.counters["inspections"] == steps
    assert info["agent"]["avg_bsld"] >= info["reference"]["avg_bsld"] and total <= 0.0
    with pytest.raises(ValueError, match="max_rejections"):
        gym.make(INSPECT, max_rejections=0)
    with pytest.raises(ValueError, match="backfill"):
        gym.make(INSPECT, backfill="conservative")
    with pytest.raises(ValueError, match="policy"):
        gym.make(INSPECT, base="SJFF")


def test_determinism_with_seeds() -> None:
    import gymnasium as gym

    def run(seed: int):
        rng = np.random.default_rng(seed)
        env = gym.make(INSPECT, **SMALL).unwrapped
        return _episode(env, lambda k, o: int(rng.random() < 0.3))

    a, b, c = run(0), run(0), run(1)
    assert a[0] == b[0] and a[3] == b[3]
    assert all(np.array_equal(x, y) for x, y in zip(a[2], b[2], strict=True))
    assert (a[0], a[3]) != (c[0], c[3])


def test_vector_env_matches_single_envs() -> None:
    import gymnasium as gym

    n = 2
    venv = gym.make_vec(INSPECT, num_envs=n, **SMALL)
    singles = [gym.make(INSPECT, **SMALL).unwrapped for _ in range(n)]
    obs, info = venv.reset(seed=10)
    for i, e in enumerate(singles):
        o, _ = e.reset(seed=10 + i)
        np.testing.assert_array_equal(obs[i], o)
    rng = np.random.default_rng(0)
    steps = 0
    while True:  # to the first episode's end
        acts = (rng.random(n) < 0.3).astype(np.int64)
        obs, rew, term, trunc, info = venv.step(acts)
        np.testing.assert_array_equal(info["action_mask"][~term], True)
        for i, e in enumerate(singles):
            o, r, t, _, _ = e.step(int(acts[i]))
            np.testing.assert_array_equal(obs[i], o)
            assert rew[i] == pytest.approx(r) and term[i] == t
        steps += 1
        if term.any():
            break
    assert steps > 10
    venv.close()


def test_ladder_lookahead_never_worse_than_the_base(window: Workload) -> None:
    # the one-step lookahead's accept rollout continues its previous choice, so the
    # window's AVEbsld never rises above the base scheduler's (bench/inspect_ladder.py)
    from bench.inspect_ladder import hold_long_wide, lookahead_clairvoyant

    w = window.window(0, 96)
    base = simulate(w, policy="SJF", backfill="sjbf").metrics["avg_bsld"]
    sim = Simulation(w, policy="SJF", backfill="sjbf")
    sim.enable_inspection(max_rejections=2)
    res = sim.run(reject=lookahead_clairvoyant)
    assert res.metrics["avg_bsld"] <= base
    assert res.counters["inspections"] > 0
    sim = Simulation(w, policy="SJF", backfill="sjbf")
    sim.enable_inspection(max_rejections=1)
    res = sim.run(reject=hold_long_wide(0.0, 0.0))  # every pick is long and wide: all held
    assert res.counters["rejections"] == res.counters["inspections"] > 0
