"""The queue decision point (``policy="external"``), the schedule lookahead schedulers and
the job-ordering env ``hpcgym/Schedule-v0`` with its vector env."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from conftest import same_metrics
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import SyncVectorEnv
from test_vector_env import compare_paths, compare_with_sync

import hpcgym  # noqa: F401 - registers the envs
from hpcgym.envs.queue_observation import QUEUE_COLUMNS
from hpcgym.envs.schedule_env import ScheduleEnv
from hpcgym.envs.vector import ScheduleVectorEnv
from hpcgym.sim import Event, Simulation, get_scheduler
from hpcgym.sim.deciders import EasyDecider
from hpcgym.sim.engine import POLICIES
from hpcgym.sim.queue_deciders import PolicyChooser, ScheduleOracle, make_chooser
from hpcgym.sim.references import REFERENCE_POLICY, deployable_reference, reference_policy
from hpcgym.workload import load

QUEUE_POLICIES = [p for p in POLICIES if p not in ("SPF", "LPF")]


@pytest.fixture(scope="module")
def wl():
    return load("synthetic", n_jobs=400, seed=3)


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.backfilled, b.backfilled)
    np.testing.assert_array_equal(a.head_since, b.head_since)


# ------------------------------------------------------------ the engine
@pytest.mark.parametrize("policy", QUEUE_POLICIES)
def test_external_choices_of_a_policy_reproduce_it_exactly(wl, policy):
    """Choosing the first job of a policy's order at every queue decision is that policy:
    the same starts, backfills and reservations, for every backfiller and with the
    starvation rule."""
    for backfill in ("easy", "sjbf", "none"):
        for starvation in (None, 5 * 3600.0):
            for est in ("request", "actual"):
                ref = Simulation(wl, policy, backfill, est, starvation=starvation).run()
                sim = Simulation(
                    wl, "external", backfill, est, starvation=starvation, rest_order=policy
                )
                res = sim.run(choose=PolicyChooser(policy))
                _same(ref, res)
                assert res.counters["queue_decisions"] > 0


def test_both_decisions_external_reproduce_the_builtin_pass(wl):
    ref = Simulation(wl, "SAF", "easy").run()
    sim = Simulation(wl, "external", "external", rest_order="SAF", decider=EasyDecider(),
                     chooser=PolicyChooser("SAF"))  # fmt: skip
    _same(ref, sim.run())


def test_queue_decision_api_errors(wl):
    sim = Simulation(wl, "external", "sjbf")
    with pytest.raises(RuntimeError, match="queue decision"):
        sim.choose(0)
    assert sim.advance() == Event.QUEUE
    waiting = sim.waiting()
    assert len(waiting) >= 2
    running = int(np.flatnonzero(sim.status == 2)[0])
    with pytest.raises(ValueError, match="not waiting"):
        sim.choose(running)
    with pytest.raises(RuntimeError, match="choose"):
        Simulation(wl, "external", "sjbf").run()
    with pytest.raises(ValueError, match="conservative"):
        Simulation(wl, "external", "conservative")
    with pytest.raises(ValueError, match="valid choices"):
        Simulation(wl, "bogus", "sjbf")
    sim.choose(int(waiting[-1]))
    assert sim.advance() in (Event.QUEUE, Event.DONE)


def test_a_choice_is_the_head_and_commit_keeps_it(wl):
    """The chosen job starts at once when it fits, else it holds the reservation; with
    ``commit_head`` no decision is asked until it has started."""
    for commit in (False, True):
        sim = Simulation(wl, "external", "sjbf", commit_head=commit)
        last = -1
        decisions = 0
        while (ev := sim.advance()) == Event.QUEUE:
            decisions += 1
            if commit and last >= 0:
                assert sim.status[last] != 1, "asked again while the committed head waits"
            last = int(sim.waiting()[-1])  # the newest job: an order no policy has
            fits = sim.workload.procs[last] <= sim.free
            sim.choose(last)
            if fits:
                snap = sim.snapshot()
                sim.advance()
                assert sim.status[last] >= 2 and sim.start_times[last] == snap.arrays[2][0]
                sim.restore(snap)
        assert ev == Event.DONE and decisions > 10
        assert np.isfinite(sim.result().start).all()


def test_snapshot_at_a_queue_decision_is_exact(wl):
    chooser = PolicyChooser("F2")
    ref = Simulation(wl, "external", "sjbf", rest_order="F2").run(choose=chooser)
    sim = Simulation(wl, "external", "sjbf", rest_order="F2")
    for _ in range(50):
        assert sim.advance() == Event.QUEUE
        sim.choose(chooser(sim))
    assert sim.advance() == Event.QUEUE
    snap = sim.snapshot()
    clone = sim.clone()
    np.testing.assert_array_equal(sim.run(choose=chooser).start, ref.start)
    np.testing.assert_array_equal(clone.run(choose=chooser).start, ref.start)
    sim.restore(snap)
    np.testing.assert_array_equal(sim.run(choose=chooser).start, ref.start)


def test_switch_to_a_builtin_policy_at_a_queue_decision(wl):
    """A rollout's switch: at a pending queue decision the built-in policy takes over."""
    ref = Simulation(wl, "SJF", "sjbf").run()
    sim = Simulation(wl, "external", "sjbf", rest_order="SJF")
    chooser = PolicyChooser("SJF")
    for _ in range(30):
        sim.advance()
        sim.choose(chooser(sim))
    assert sim.advance() == Event.QUEUE
    sim.switch(policy="SJF")
    assert sim.chooser is None and sim.config["policy"] == "SJF"
    assert sim.advance() == Event.DONE
    np.testing.assert_array_equal(sim.result().start, ref.start)
    with pytest.raises(ValueError, match="built-in"):
        Simulation(wl, "external", "sjbf").switch(policy="external")


# ----------------------------------------------------- lookahead choosers
def test_schedule_oracle_is_never_worse_than_its_reference():
    """The rollout guarantee: with the whole window as horizon, the oracle's AVEbsld is
    never above the reference's; with k=1 it is the reference."""
    for seed in (1, 2, 3):
        w = load("synthetic", n_jobs=200, seed=seed)
        ref = get_scheduler("SAF+EASY-SJBF").simulate(w)
        one = get_scheduler("SAF+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT,k=1").simulate(w)
        np.testing.assert_array_equal(one.start, ref.start)
        orc = get_scheduler("SAF+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT,k=4").simulate(w)
        assert orc.metrics["avg_bsld"] <= ref.metrics["avg_bsld"] + 1e-9
        assert orc.counters["schedule_decisions"] == orc.counters["queue_decisions"]
        assert orc.config["chooser"] == "schedule-lookahead1-clairvoyant"


def test_schedule_oracle_finds_room_on_a_loaded_window():
    w = load("synthetic", n_jobs=300, seed=5)
    ref = get_scheduler("F2+EASY-SJBF").simulate(w).metrics["avg_bsld"]
    orc = get_scheduler("F2+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT,k=4").simulate(w)
    assert orc.metrics["avg_bsld"] < 0.95 * ref
    assert orc.counters["schedule_not_reference"] > 0


def test_schedule_lookahead_runs_online_and_is_seeded():
    w = load("synthetic", n_jobs=150, seed=2)
    a = get_scheduler("SAF+SCHEDULE-LOOKAHEAD1-ONLINE,k=3,samples=2,seed=4").simulate(w)
    b = get_scheduler("SAF+SCHEDULE-LOOKAHEAD1-ONLINE,k=3,samples=2,seed=4").simulate(w)
    np.testing.assert_array_equal(a.start, b.start)
    assert a.counters["schedule_decisions"] > 0
    with pytest.raises(ValueError, match="valid choices"):
        make_chooser("nope")


def test_horizon_limited_oracle_and_reference_table():
    w = load("synthetic", n_jobs=150, seed=2)
    res = get_scheduler("SAF+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT,k=3,horizon=20").simulate(w)
    assert np.isfinite(res.start).all()
    assert isinstance(ScheduleOracle(horizon="2h").horizon, tuple)
    assert reference_policy("sdsc-sp2") == REFERENCE_POLICY["SDSC-SP2"] == "SAF"
    assert reference_policy(None) == REFERENCE_POLICY["synthetic"]
    assert reference_policy("some/other.swf") == "SAF"
    assert all(p in POLICIES for p in REFERENCE_POLICY.values())


# ------------------------------------------------------------------ env
def test_env_passes_both_checkers_on_defaults():
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make("hpcgym/Schedule-v0")
    check_env(env.unwrapped)
    sb3_check(ScheduleEnv(), warn=False)
    assert env.unwrapped.reference.name == deployable_reference(None)
    assert env.observation_space.shape == (128, len(QUEUE_COLUMNS))
    assert env.action_space.n == 128


def play(env: ScheduleEnv, pick, seed: int = 0, **reset):
    obs, info = env.reset(seed=seed, **reset)
    steps, total, done = 0, 0.0, False
    while not done:
        obs, r, done, trunc, info = env.step(pick(obs, info))
        total += r
        steps += 1
        assert env.observation_space.contains(obs)
    return steps, total, info


def test_row_zero_plays_the_reference_exactly():
    env = ScheduleEnv(window_length=200, starvation=4 * 3600.0)
    assert "starvation" in env.reference.to_dict() and env.reference.starvation == 4 * 3600.0
    steps, total, info = play(env, lambda o, i: 0)
    assert steps > 5 and total == 0.0
    assert same_metrics(info["agent"], info["reference"])
    assert {"max_wait", "p99_bsld"} <= set(info["agent"])
    ref = get_scheduler(env.reference).simulate(env.simulation.workload)
    np.testing.assert_array_equal(env.simulation.result().start, ref.start)


def test_rows_masks_and_features():
    env = ScheduleEnv(window_length=300, max_queue=16)
    obs, info = env.reset(seed=3)
    for _ in range(60):
        sim = env.simulation
        n = min(len(sim.waiting()), 16)
        assert info["action_mask"].sum() == n and info["candidates"] == len(sim.waiting())
        rows = env.candidate_jobs()
        np.testing.assert_array_equal(rows[:n], sim.policy_order(env.order)[:n])
        assert (obs[:n, 0] == 1).all() and not obs[n:].any()
        procs = sim.workload.procs[rows[:n]]
        np.testing.assert_array_equal(obs[:n, 5] == 1, procs <= sim.free)
        assert (obs[:n, 6][procs <= sim.free] == 0).all()
        assert (obs[:n, 6][procs > sim.free] > 0).all()
        assert np.allclose(obs[:n, 12], sim.free / sim.workload.machine_size)
        assert ((obs >= 0) & (obs <= 1)).all()
        obs, r, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        if done:
            break


def test_invalid_actions():
    env = ScheduleEnv(window_length=120, max_queue=8)
    obs, info = env.reset(seed=1)
    while info["action_mask"].all():  # a decision with padding rows
        obs, r, done, _, info = env.step(0)
        assert not done
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    snap = env.simulation.snapshot()
    first = int(env.candidate_jobs()[0])
    obs, r, done, _, info = env.step(bad)
    assert info["invalid_action"] and r == 0.0
    after_invalid = env.simulation.JF.copy()
    env.simulation.restore(snap)  # row 0 from the same state: the same next state
    env.simulation.choose(first)
    env.simulation.advance()
    np.testing.assert_array_equal(env.simulation.JF, after_invalid)
    env = ScheduleEnv(window_length=120, max_queue=8, invalid_action="raise")
    obs, info = env.reset(seed=1)
    with pytest.raises(ValueError, match="valid actions"):
        env.step(8)
    with pytest.raises(ValueError, match="valid choices"):
        ScheduleEnv(backfill="conservative")


def test_starvation_applies_to_the_envs_own_queue_reference():
    """``ENV+NAME`` (and the default reference) play the env's order and starvation rule;
    a plain name is exactly that scheduler (EASY-SJBF is FCFS + EASY-SJBF, no guard)."""
    env = ScheduleEnv(window_length=64, reference="ENV+EASY-SJBF", starvation=7200.0)
    assert env.reference.policy == env.order and env.reference.starvation == 7200.0
    assert env.reference.name == f"{env.order}+EASY-SJBF,starvation=2h"
    auto = ScheduleEnv(window_length=64, starvation="auto").reference
    assert auto.starvation == "auto" and auto.name.endswith(",starvation=auto")
    plain = ScheduleEnv(window_length=64, reference="EASY-SJBF", starvation=7200.0).reference
    assert plain.policy == "FCFS" and plain.starvation is None and plain.name == "EASY-SJBF"


def test_options_commit_head_reference_and_pickle():
    env = ScheduleEnv(window_length=150, commit_head=True, reference="SJF+EASY", backfill="easy")
    assert env.reference.name == "SJF+EASY" and env.commit_head
    steps, total, info = play(env, lambda o, i: int(np.flatnonzero(i["action_mask"])[-1]))
    assert info["episode_steps"] == steps
    raw = ScheduleEnv(window_length=150, reference=None, time_scale="log")
    s2, t2, i2 = play(raw, lambda o, i: 0)
    assert t2 == pytest.approx(-i2["agent"]["avg_bsld"])
    clone = pickle.loads(pickle.dumps(raw))
    a = play(clone, lambda o, i: 0, seed=4)
    b = play(raw, lambda o, i: 0, seed=4)
    assert a[0] == b[0] and a[1] == b[1]


def test_vector_env_matches_sync_step_for_step():
    kw = {"window_length": 60, "max_queue": 32}
    vec = ScheduleVectorEnv(4, **kw)
    ref = SyncVectorEnv([lambda: ScheduleEnv(**kw) for _ in range(4)])
    assert compare_with_sync(vec, ref, steps=200, seed=3) >= 4
    assert vec.compiled  # one compiled call steps the batch
    for mode in ("NextStep", "SameStep"):  # the compiled step against the Python one
        cfg = {**kw, "autoreset_mode": mode, "max_episode_steps": 25, "starvation": "auto"}
        assert compare_paths(ScheduleVectorEnv, 120, 5, **cfg) > 8
    # objective awrt in the compiled step: the same rewards and infos as the Python step
    assert compare_paths(ScheduleVectorEnv, 120, 6, **kw, objective="awrt") >= 4
    venv = gym.make_vec("hpcgym/Schedule-v0", num_envs=2, window_length=40)
    assert isinstance(venv.unwrapped, ScheduleVectorEnv)
    obs, info = venv.reset(seed=0)
    assert obs.shape == (2, 128, len(QUEUE_COLUMNS)) and info["action_mask"].shape == (2, 128)


# ------------------------------------------------------------ training
def test_lean_compact_path_without_stop_equals_the_policy():
    """The lean trainer's compact evaluation of a Discrete(K) kernel policy (no STOP) equals
    the policy's own, padding rows and the finished-episode pass included."""
    import torch as th
    from gymnasium import spaces

    from hpcgym_agents.kernel_policy import KernelPolicy
    from train.compact import compact_from_dense, evaluate_compact

    k, f, n = 12, len(QUEUE_COLUMNS), 40
    rng = np.random.default_rng(5)
    obs = rng.random((n, k, f)).astype(np.float32)
    counts = rng.integers(0, k + 1, n)
    counts[:3] = 0  # samples without rows: only the pass (row 0) is allowed
    for i, c in enumerate(counts):
        obs[i, :, 0] = 0.0
        obs[i, :c, 0] = 1.0
        obs[i, c:, 1:] = 0.0
    masks = obs[..., 0] > 0.5
    masks[counts == 0, 0] = True
    actions = np.array([rng.integers(0, max(c, 1)) for c in counts])
    policy = KernelPolicy(spaces.Box(0, 1, (k, f), np.float32), spaces.Discrete(k), lambda _: 1e-3)
    v0, lp0, ent0 = policy.evaluate_actions(
        th.as_tensor(obs), th.as_tensor(actions), action_masks=masks
    )
    batch, _ = compact_from_dense(obs, masks)
    cols = th.as_tensor(np.where(counts == 0, 0, actions + 1))
    v1, lp1, ent1 = evaluate_compact(policy, batch, cols)
    rows = counts > 0
    th.testing.assert_close(v1, v0.flatten(), rtol=1e-4, atol=1e-5)
    th.testing.assert_close(lp1[rows], lp0[rows], rtol=1e-5, atol=1e-5)
    th.testing.assert_close(ent1[rows], ent0[rows], rtol=1e-5, atol=1e-5)
    assert th.allclose(lp1[~rows], th.zeros(int((~rows).sum())))  # the forced pass


@pytest.mark.parametrize("algo", ["lean", "sb3"])
def test_schedule_runs_train_evaluate_and_make_cards(tmp_path, algo):
    """``--task schedule`` trains with both trainers; its card plays Schedule-v0 in the
    evaluation, and a rank prior without training is exactly the reference heuristic."""
    from hpcgym.evaluation.methods import card_method, scheduler_method
    from hpcgym.evaluation.runner import evaluate
    from hpcgym.evaluation.windows import select_windows
    from hpcgym_agents import load_agent
    from train.card import card_from_run
    from train.ppo import main

    small = [
        "--task", "schedule", "--seq-len", "48", "--n-envs", "2", "--eval-windows", "2",
        "--eval-length", "64", "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1",
        "--no-progress", "--algo", algo, "--logdir", str(tmp_path),
    ]  # fmt: skip
    trained = main([*small, "--total-steps", "128", "--run-name", "trained"])
    assert trained["timesteps"] >= 128
    prior = main([*small, "--total-steps", "0", "--row-prior", "rank=-5", "--run-name", "prior"])
    card = card_from_run(tmp_path / "prior", model="final")
    order = reference_policy(None)
    assert card.data["task"] == "schedule" and card.env == {
        **{k: v for k, v in card.env.items() if k not in ("task", "order")},
        "task": "schedule",
        "order": order,
    }
    assert set(prior["baselines"]) >= {"FCFS+EASY-SJBF", f"{order}+EASY-SJBF"}
    wl = load("synthetic")
    ws = select_windows(len(wl), 128, count=3, split="validation", seed=3)
    res = evaluate(
        wl,
        [scheduler_method(f"{order}+EASY-SJBF"), card_method(card, label="prior"),
         card_method(card_from_run(tmp_path / "trained", model="final"), label="trained")],
        ws, jobs=1, progress=False, agent_loader=load_agent,
    )  # fmt: skip
    per = res.per_window("avg_bsld")
    assert per["prior"] == per[f"{order}+EASY-SJBF"]
    assert len(per["trained"]) == 3


def test_heldout_test_of_a_schedule_card(tmp_path):
    """A Schedule-v0 card is tested against the queue heuristics with the fairness columns:
    the rank prior is the reference heuristic, so its ratio and tails are exactly 1."""
    from hpcgym.zoo.heldout import (
        heldout_markdown,
        heldout_test,
        schedule_heldout_references,
        schedule_heldout_schedulers,
    )
    from hpcgym_agents import load_agent
    from train.card import card_from_run
    from train.ppo import main

    main(["--task", "schedule", "--seq-len", "48", "--n-envs", "2", "--eval-windows", "2",
          "--eval-length", "64", "--no-progress", "--logdir", str(tmp_path), "--total-steps",
          "0", "--row-prior", "rank=-5", "--run-name", "prior"])  # fmt: skip
    card = card_from_run(tmp_path / "prior", model="final")
    order = reference_policy(None)  # the unguarded reference, also the deployable order here
    ref = deployable_reference(None)  # the deployable reference: the same order, guarded
    assert ref == f"{order}+EASY-SJBF,starvation=144h"
    refs = [ref, f"{order}+EASY-SJBF", "EASY-SJBF"]
    assert schedule_heldout_references(card, "synthetic") == refs
    assert len(schedule_heldout_schedulers(card)) == 13
    sec = heldout_test(card, agent_loader=load_agent, windows=3, length=128, seed=9, jobs=1)
    assert sec["fairness_reference"] == ref and set(sec["paired"]) == set(refs)
    assert sec["methods"][card.name]["per_window"] == sec["methods"][ref]["per_window"]
    main_ref = sec["paired"][ref]
    assert main_ref["geo_ratio"] == pytest.approx(1.0)
    assert main_ref["tail_max_wait"] == pytest.approx(1.0)
    assert main_ref["tail"] == "not worse" and main_ref["verdict"] != "better"
    agent, heuristic = sec["methods"][card.name], sec["methods"][ref]
    assert agent["mean_p99_bsld"] == heuristic["mean_p99_bsld"] > 0
    text = "\n".join(heldout_markdown(sec, card.name))
    assert "p99 bsld" in text and f"Tail against {ref}" in text
    assert f"--reference {ref}" in sec["command"] and "F4+EASY-SJBF" in sec["command"]


def test_fairness_columns():
    from hpcgym.evaluation.fairness import TAIL_TOLERANCE, fairness
    from hpcgym.evaluation.methods import scheduler_method
    from hpcgym.evaluation.runner import evaluate
    from hpcgym.evaluation.windows import select_windows

    wl = load("synthetic")
    ws = select_windows(len(wl), 256, count=4, split="validation", seed=1)
    names = ["F2+EASY-SJBF", "LJF+EASY-SJBF", "SJF+EASY-SJBF"]
    res = evaluate(wl, [scheduler_method(s) for s in names], ws, jobs=1, progress=False,
                   ratio_reference="F2+EASY-SJBF")  # fmt: skip
    for name in names:
        f = fairness(res, name)
        waits = res.job_wait(name).max(axis=1)
        assert f["mean_max_wait"] == pytest.approx(waits.mean())
        p99 = np.percentile(res.job_bsld(name), 99, axis=1)
        assert f["mean_p99_bsld"] == pytest.approx(p99.mean())
        hi = max(f["tail_max_wait"], f["tail_p99_bsld"])
        assert f["tail"] == ("not worse" if hi <= TAIL_TOLERANCE else "worse")
    assert fairness(res, "F2+EASY-SJBF")["tail_max_wait"] == pytest.approx(1.0)
    summary = {s["method"]: s for s in res.summary()}
    assert summary["SJF+EASY-SJBF"]["tail"] == "worse"  # SJF starves the long jobs


def test_fair_verdict_needs_the_tail():
    """'better' survives only with a tail that is not worse; the table shows the same word."""
    from hpcgym.evaluation.fairness import fair_verdict

    better = {"verdict": "better", "tail": "not worse"}
    assert fair_verdict(better) == "better"
    assert fair_verdict({**better, "tail": "worse"}) == "inconclusive (longer tail)"
    assert fair_verdict({**better, "tail": None}) == "better"  # no reference tail to test
    assert fair_verdict({"verdict": "worse", "tail": "worse"}) == "worse"
    assert fair_verdict({"verdict": "on par", "tail": "worse"}) == "on par"


def test_awrt_objective_of_schedule_v0():
    """objective='awrt': row 0 plays the reference (reward exactly 0); the last row of
    every decision pays (AWRT_ref - AWRT_agent) / AWRT_ref, with its sign."""
    env = ScheduleEnv(window_length=120, objective="awrt")
    steps, total, info = play(env, lambda o, i: 0)
    assert total == 0.0 and info["agent"]["awrt"] == info["reference"]["awrt"] > 0
    signs = set()
    for seed in range(3):
        steps, total, info = play(env, lambda o, i: int(np.flatnonzero(i["action_mask"])[-1]),
                                  seed=seed)  # fmt: skip
        a, b = info["agent"]["awrt"], info["reference"]["awrt"]
        assert total == pytest.approx((b - a) / b, rel=1e-12, abs=1e-12)
        assert np.sign(total) == np.sign(b - a)
        signs.add(float(np.sign(total)))
    assert -1.0 in signs  # the last rows (no order at all) lose to the reference somewhere
    raw = ScheduleEnv(window_length=120, objective="awrt", reference=None)
    steps, total, info = play(raw, lambda o, i: 0)
    assert total == pytest.approx(-info["agent"]["awrt"], rel=1e-12)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("LOOKAHEAD-ORACLE", "LOOKAHEAD1-CLAIRVOYANT"),
        ("LOOKAHEAD", "LOOKAHEAD1-ONLINE"),
        ("SCHEDULE-ORACLE", "SCHEDULE-LOOKAHEAD1-CLAIRVOYANT"),
        ("SCHEDULE-LOOKAHEAD", "SCHEDULE-LOOKAHEAD1-ONLINE"),
    ],
)
def test_old_lookahead_names_resolve_with_a_warning_naming_the_new(old, new):
    """The one-step lookaheads were renamed (they are reference points, not bounds); the
    old names still work for one minor version and say which name replaces them."""
    with pytest.warns(FutureWarning, match=f"'{new}'"):
        assert get_scheduler(old).name == new
    with pytest.warns(FutureWarning, match=f"'{new}'"):
        assert get_scheduler(f"SAF+{old},k=2").name == f"SAF+{new},k=2"
    with pytest.warns(FutureWarning, match=f"'{new.lower()}'"):
        spec = get_scheduler(f"decider={old.lower()},backfill=sjbf,k=2")
    assert spec.decider == new.lower() and spec.make_decider().name == new.lower()
    assert get_scheduler(new).description  # the new name is a plain named scheduler
