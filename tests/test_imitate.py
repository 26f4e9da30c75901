"""python -m research.imitation: teacher labels of LOOKAHEAD1-CLAIRVOYANT, the BC student,
determinism.

Fast: the 10,000-job synthetic workload (``synthetic:n_jobs=10000``), short windows, a few
episodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from hpcgym.envs.backfill_env import BackfillEnv  # noqa: E402
from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.sim.lookahead import LookaheadOracle  # noqa: E402
from hpcgym_agents.heuristic import FirstValid  # noqa: E402
from research.imitation.data import Dataset, PredictionOrder, collect  # noqa: E402
from research.imitation.imitate import main  # noqa: E402

LENGTH = 128
SMALL = "synthetic:n_jobs=10000"
#: windows of the synthetic workload with many decision points (it is bursty: most
#: 128-job windows have none)
BUSY = (0, 388, 2619, 2716, 5529)


def _env(**kw: object) -> BackfillEnv:
    return BackfillEnv(SMALL, window_length=LENGTH, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def teacher_data() -> tuple[Dataset, object]:
    return collect(_env(), 3, np.random.default_rng(0), starts=BUSY)


def test_labels_are_valid_actions(teacher_data: tuple[Dataset, object]) -> None:
    data, stats = teacher_data
    assert len(data) > 50
    assert stats.decisions == len(data) + stats.outside  # type: ignore[attr-defined]
    obs, mask, labels = data.batch(np.arange(len(data)))
    kq = data.max_queue
    assert obs.shape == (len(data), kq, data.n_features)
    assert ((labels >= 0) & (labels <= kq)).all()
    assert mask[np.arange(len(data)), labels].all()
    # padding rows are zero and unmasked, shown rows are candidates (validity flag 1)
    assert (obs[:, :, 0] == mask[:, :kq]).all()
    # the teacher sometimes departs from EASY-SJBF, and its SJBF row is a valid action
    s = data.summary()
    assert 0.0 < s["sjbf_agreement"] < 1.0
    ok = data.sjbf >= 0
    assert mask[np.arange(len(data))[ok], data.sjbf[ok]].all()


def _play(env: BackfillEnv, start: int, ask: bool) -> tuple[list[np.ndarray], np.ndarray]:
    agent = FirstValid()
    obs, info = env.reset(seed=0, options={"start": start})
    seen = [obs.copy()]
    oracle = LookaheadOracle()
    done = False
    while not done:
        if ask and info["decision"]:
            sim = env.simulation
            before = [a.copy() for a in (sim.JF, sim.JI, sim.S, sim.C)]
            oracle(sim)
            for a, b in zip(before, (sim.JF, sim.JI, sim.S, sim.C), strict=True):
                np.testing.assert_array_equal(a, b)
        a, _ = agent.predict(obs, action_masks=info["action_mask"])
        obs, _, done, _, info = env.step(int(a))
        seen.append(obs.copy())
    return seen, env.simulation.result().start


def test_asking_the_teacher_leaves_the_episode_unchanged() -> None:
    env = _env()
    quiet, start_q = _play(env, BUSY[1], ask=False)
    asked, start_a = _play(env, BUSY[1], ask=True)
    assert len(quiet) == len(asked) > 10
    for a, b in zip(quiet, asked, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(start_q, start_a)


def test_teacher_driven_env_is_the_oracle_scheduler() -> None:
    """Labels mapped to rows and executed give exactly LOOKAHEAD1-CLAIRVOYANT's schedule."""
    env = _env()
    rng = np.random.default_rng(3)
    _, stats = collect(env, 2, rng, starts=BUSY)
    for i in range(2):
        env.reset(seed=0, options={"start": BUSY[i]})
        window = env.simulation.workload
        want = get_scheduler("LOOKAHEAD1-CLAIRVOYANT").simulate(window).metrics["avg_bsld"]
        assert stats.episode_avg_bsld[i] == pytest.approx(want, rel=1e-12)
        assert stats.episode_avg_bsld[i] <= stats.episode_reference_avg_bsld[i] + 1e-9


def test_dagger_labels_are_exact_on_student_states() -> None:
    """With the student acting (beta=0), every label equals a fresh oracle's answer (no
    stale reuse of the teacher's own rollout)."""
    env = _env()
    student = FirstValid()
    rng = np.random.default_rng(11)
    data, stats = collect(env, 1, rng, student=student, beta=0.0, starts=BUSY[2:])
    assert stats.disagreements > 0 and stats.teacher_actions == 0
    obs, info = env.reset(seed=0, options={"start": BUSY[2]})
    labels, done = [], False
    while not done:
        if info["decision"]:
            job = LookaheadOracle(reuse=False)(env.simulation)
            rows = env.candidate_jobs()
            labels.append(env.max_queue if job is None else int(np.flatnonzero(rows == job)[0]))
        a, _ = student.predict(obs, action_masks=info["action_mask"])
        obs, _, done, _, info = env.step(int(a))
    assert labels == data.labels.tolist()


def test_collect_is_deterministic() -> None:
    a, _ = collect(_env(), 2, np.random.default_rng(4), starts=BUSY)
    b, _ = collect(_env(), 2, np.random.default_rng(4), starts=BUSY)
    student = FirstValid()
    c, _ = collect(_env(), 2, np.random.default_rng(4), starts=BUSY, student=student, beta=0.5)
    for f in ("rows", "counts", "labels", "sjbf", "episode", "returns"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    d, _ = collect(_env(), 2, np.random.default_rng(4), starts=BUSY, student=student, beta=0.5)
    np.testing.assert_array_equal(c.rows, d.rows)
    np.testing.assert_array_equal(c.labels, d.labels)
    assert len(a) != len(c) or not np.array_equal(a.rows, c.rows)


def test_dataset_round_trip(tmp_path: Path, teacher_data: tuple[Dataset, object]) -> None:
    data, _ = teacher_data
    data.save(tmp_path / "d.npz")
    back = Dataset.load(tmp_path / "d.npz")
    np.testing.assert_array_equal(back.rows, data.rows)
    np.testing.assert_array_equal(back.labels, data.labels)
    half = data.subset(data.episode == data.episode[0])
    both = Dataset.concat([half, half])
    assert len(both) == 2 * len(half)
    np.testing.assert_array_equal(both.batch([0])[0], both.batch([len(half)])[0])


def _argv(out: Path, seed: int = 0) -> list[str]:
    return [
        "--trace", SMALL, "--length", "256", "--episodes", "6",
        "--dagger-iters", "1", "--dagger-episodes", "2", "--epochs", "8", "--lr", "0.01",
        "--no-eval", "--seed", str(seed), "--out", str(out),
    ]  # fmt: skip


def test_bc_learns_saves_a_loadable_model_and_is_deterministic(tmp_path: Path) -> None:
    import torch as th
    from sb3_contrib import MaskablePPO

    rep = main(_argv(tmp_path / "a"))
    first = rep["iterations"][0]
    hist = first["fit"]["history"]
    assert hist[-1]["train_loss"] < 0.97 * first["fit"]["initial_loss"]
    assert first["train"]["accuracy"] > 0.5
    assert rep["iterations"][1]["dataset"]["samples"] > first["dataset"]["samples"]
    saved = json.loads((tmp_path / "a" / "imitate.json").read_text())
    assert saved["iterations"][1]["beta"] == 0.5

    model = MaskablePPO.load(tmp_path / "a" / "bc_model.zip", device="cpu")
    env = _env()
    obs, info = env.reset(seed=1)
    for _ in range(20):
        mask = info["action_mask"]
        a, _ = model.predict(obs, action_masks=mask, deterministic=True)
        assert mask[int(a)]
        obs, _, done, _, info = env.step(int(a))
        if done:
            break

    # PPO can continue from the BC model ("imitation, then RL")
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(BackfillEnv, n_envs=1, seed=0, env_kwargs={"window_length": 256})
    ppo = MaskablePPO.load(tmp_path / "a" / "bc_model.zip", env=vec, device="cpu", n_steps=64)
    before = [p.detach().clone() for p in ppo.policy.parameters()]
    ppo.learn(64)
    assert ppo.num_timesteps >= 64
    after = list(ppo.policy.parameters())
    assert any(not th.equal(a, p.detach()) for a, p in zip(before, after, strict=True))

    rep2 = main(_argv(tmp_path / "b"))
    for x, y in zip(rep["iterations"], rep2["iterations"], strict=True):
        assert x["train"] == y["train"] and x["held_out"] == y["held_out"]
    m2 = MaskablePPO.load(tmp_path / "b" / "bc_model.zip", device="cpu")
    for p, q in zip(model.policy.parameters(), m2.policy.parameters(), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_bad_arguments_exit() -> None:
    with pytest.raises(SystemExit):
        main(["--episodes", "0"])
    with pytest.raises(SystemExit):
        main(["--env-kwargs", "[1]"])


def test_env_kwargs_reach_the_student(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    argv = _argv(tmp_path)
    argv[argv.index("--dagger-iters") + 1] = "0"
    main([*argv, "--env-kwargs", '{"feature_predictor": "request"}'])
    model = MaskablePPO.load(tmp_path / "bc_model.zip", device="cpu")
    assert model.observation_space.shape == (128, 13)
    env = _env(feature_predictor="request")
    obs, info = env.reset(seed=0, options={"start": BUSY[0]})
    a, _ = model.predict(obs, action_masks=info["action_mask"], deterministic=True)
    assert info["action_mask"][int(a)]


def test_prediction_order_teacher_labels_the_shortest_prediction() -> None:
    env = _env(feature_predictor="log-ridge")
    data, stats = collect(
        env, 2, np.random.default_rng(0), starts=BUSY[:2], kind="prediction-order"
    )
    assert len(data) > 20 and stats.outside == 0
    assert stats.rollouts == 0 and data.summary()["stop_share"] == 0.0
    # replay the same two windows with the teacher's actions and check every label
    teacher = PredictionOrder(env)
    n = 0
    for s in BUSY[:2]:
        obs, info = env.reset(seed=0, options={"start": s})
        done = False
        while not done:
            action = env.max_queue
            if info["decision"]:
                rows = env.candidate_jobs()
                shown = rows[rows >= 0]
                pred = env.feature_predictions()[shown]
                job = teacher(env.simulation)
                assert job in shown and pred[list(shown).index(job)] == pred.min()
                action = int(np.flatnonzero(rows == job)[0])
                assert action == data.labels[n]
                n += 1
            obs, _, done, _, info = env.step(action)
    assert n == len(data)


def test_prediction_order_teacher_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs an env with a feature predictor"):
        collect(_env(), 1, np.random.default_rng(0), starts=BUSY[:1], kind="prediction-order")
    with pytest.raises(
        ValueError, match="valid choices: lookahead-oracle, lookahead, prediction-order"
    ):
        collect(_env(), 1, np.random.default_rng(0), starts=BUSY[:1], kind="oracle")
    with pytest.raises(SystemExit):
        main(["--teacher", "sjbf"])


def test_imitate_prediction_order_end_to_end(tmp_path: Path) -> None:
    argv = _argv(tmp_path)
    argv[argv.index("--dagger-iters") + 1] = "0"
    rep = main(
        [
            *argv,
            "--teacher",
            "prediction-order",
            "--env-kwargs",
            '{"feature_predictor": "actual"}',
        ]
    )
    assert rep["teacher"] == {"kind": "prediction-order"}
    it = rep["iterations"][0]
    assert it["collect"]["rollouts"] == 0 and it["new_data"]["stop_share"] == 0.0
    # the greedy order is a simple function of one column: BC copies it closely
    assert it["held_out"]["accuracy"] > 0.8, it["held_out"]


def test_online_lookahead_teacher_driven_env_is_the_lookahead_scheduler() -> None:
    """Teacher ``lookahead`` (online, non-clairvoyant): its labels, executed, give exactly
    the LOOKAHEAD1-ONLINE scheduler's schedule with the same options and seed."""
    env = _env()
    opts = {"seed": 5, "samples": 2, "k": 4}
    data, stats = collect(env, 2, np.random.default_rng(3), starts=BUSY, kind="lookahead",
                          teacher=opts)  # fmt: skip
    assert len(data) > 20 and stats.outside == 0 and stats.rollouts > 0
    spec = get_scheduler("LOOKAHEAD1-ONLINE," + ",".join(f"{k}={v}" for k, v in opts.items()))
    for i in range(2):
        env.reset(seed=0, options={"start": BUSY[i]})
        want = spec.simulate(env.simulation.workload).metrics["avg_bsld"]
        assert stats.episode_avg_bsld[i] == pytest.approx(want, rel=1e-12)
    # without a seed, each episode's teacher draws one from the collection's generator
    a, _ = collect(_env(), 2, np.random.default_rng(8), starts=BUSY, kind="lookahead",
                   teacher={"samples": 2, "k": 4})  # fmt: skip
    b, _ = collect(_env(), 2, np.random.default_rng(8), starts=BUSY, kind="lookahead",
                   teacher={"samples": 2, "k": 4})  # fmt: skip
    np.testing.assert_array_equal(a.labels, b.labels)


def test_teacher_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["--teacher", "lookahead", "--teacher-options", "bogus=1"], "bogus"),
        (
            ["--teacher", "lookahead", "--teacher-options", "estimate=eloss"],
            "give its estimator and corrections in --env-kwargs",
        ),  # fmt: skip
        (
            ["--teacher", "prediction-order", "--teacher-options", "samples=2"],
            "--teacher-options are options of --teacher lookahead",
        ),  # fmt: skip
    ]:
        with pytest.raises(SystemExit):
            main([*argv, "--out", str(tmp_path / "x")])
        assert message in capsys.readouterr().err
