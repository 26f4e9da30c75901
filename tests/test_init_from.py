"""train/ppo.py options of issue 14: --correction, --feature-predictor, --features (the
env of a predictor-informed agent, like for like with ELOSS) and --init-from (a
behaviour-cloned start)."""

from __future__ import annotations

import json

import pytest
import torch as th

pytest.importorskip("sb3_contrib")

from train.build import env_kwargs, new_model, plan_rollout  # noqa: E402
from train.config import ConfigError, TrainConfig  # noqa: E402


def _cfg(**kw) -> TrainConfig:
    base = dict(
        trace="synthetic", length=64, max_queue=16, n_envs=1, n_steps=64, batch_size=32,
        n_epochs=1, vec_env="dummy", total_steps=64, eval_windows=1, eval_length=64,
    )  # fmt: skip
    return TrainConfig.create(**{**base, **kw})


def test_env_options_reach_the_env():
    cfg = _cfg(estimator="eloss", correction="incremental-offset", reference="ELOSS")
    kw = env_kwargs(cfg, "train", 64)
    assert kw["estimator"] == "eloss" and kw["correction"] == "incremental-offset"
    assert kw["features"] == "paper" and kw["feature_predictor"] is None
    assert kw["reward_mode"] == "terminal"
    assert env_kwargs(_cfg(reward_mode="dense"), "train", 64)["reward_mode"] == "dense"
    with pytest.raises(ConfigError, match="--reward-mode: expected one of .*dense"):
        _cfg(reward_mode="sparse")
    with pytest.raises(ConfigError, match="--correction: expected one of .*incremental-offset"):
        _cfg(correction="sometimes")


def test_load_weighting_reaches_the_training_env_only(tmp_path):
    from hpcgym.envs.backfill_env import BackfillEnv

    assert "load_weighting" not in env_kwargs(_cfg(), "train", 64)  # default: uniform
    cfg = _cfg(load_weighting=2.0)
    assert env_kwargs(cfg, "train", 64)["load_weighting"] == 2.0
    assert "load_weighting" not in env_kwargs(cfg, "validation", 64)  # fixed windows there
    env = BackfillEnv(**env_kwargs(cfg, "train", 64))
    assert env._sampler.load_weighting == 2.0
    cfg.to_json(tmp_path / "config.json")  # config.json: resume, the card
    assert json.loads((tmp_path / "config.json").read_text())["load_weighting"] == 2.0
    assert TrainConfig.from_json(tmp_path / "config.json").load_weighting == 2.0
    with pytest.raises(ConfigError, match="--load-weighting: expected a number >= 0"):
        _cfg(load_weighting=-1.0)


def _saved_start(path, shift: float):
    """A model of :func:`_cfg` (seed 3) with every policy weight moved by ``shift``, saved
    to ``path`` (a start for --init-from that differs from a fresh model)."""
    cfg = _cfg(seed=3)
    src = new_model(cfg, plan_rollout(cfg))
    with th.no_grad():
        for p in src.policy.parameters():
            p.add_(shift)
    src.save(path)
    return src


def test_init_from_copies_the_policy(tmp_path):
    cfg = _cfg(seed=3)
    src = _saved_start(tmp_path / "start.zip", 0.5)
    model = new_model(_cfg(seed=4, init_from=str(tmp_path / "start.zip")), plan_rollout(cfg))
    for a, b in zip(src.policy.parameters(), model.policy.parameters(), strict=True):
        assert th.equal(a, b)
    fresh = new_model(_cfg(seed=4), plan_rollout(cfg))
    assert not all(
        th.equal(a, b)
        for a, b in zip(src.policy.parameters(), fresh.policy.parameters(), strict=True)
    )
    with pytest.raises(ConfigError, match="--init-from: .* observes .*--max-queue"):
        new_model(_cfg(max_queue=8, init_from=str(tmp_path / "start.zip")), plan_rollout(cfg))
    with pytest.raises(ConfigError, match="--init-from: cannot load"):
        new_model(_cfg(init_from=str(tmp_path / "missing.zip")), plan_rollout(cfg))


@pytest.mark.parametrize("vec_env", ["native", "dummy"])
def test_mix_traces_reach_the_training_envs(tmp_path, vec_env):
    """--mix-traces: sub-env i of the training envs runs on trace i mod k, in --trace's
    units; evaluations stay on --trace; config.json keeps it; bad values are refused."""
    from hpcgym.workload import load, write_swf
    from train.build import make_training_envs

    other = tmp_path / "other.swf"
    write_swf(load("synthetic", n_jobs=800, seed=9, machine_size=64), other)
    cfg = _cfg(n_envs=3, vec_env=vec_env, mix_traces=(str(other),))
    venv = make_training_envs(cfg, seed=0)
    sizes = [e.workload.machine_size for e in venv.get_attr("unwrapped")]
    scales = set(venv.get_attr("est_scale"))
    venv.close()
    assert sizes == [load(None).machine_size, 64, load(None).machine_size]
    assert scales == {float(load(None).request.max())}
    assert (
        "trace" in env_kwargs(cfg, "validation", 64)
        and env_kwargs(cfg, "validation", 64)["trace"] is None
    )  # evaluations: --trace only
    cfg.to_json(tmp_path / "config.json")
    assert TrainConfig.from_json(tmp_path / "config.json").mix_traces == (str(other),)
    with pytest.raises(ConfigError, match="--mix-traces: 3 training traces need --n-envs >= 3"):
        _cfg(n_envs=2, mix_traces=("a", "b"))


def test_mix_traces_unknown_trace_is_a_usage_error(tmp_path, capsys):
    from train.ppo import main

    with pytest.raises(SystemExit) as exc:
        main(["--trace", "synthetic", "--mix-traces", "NOPE", "--n-envs", "2",
              "--logdir", str(tmp_path), "--no-progress"])  # fmt: skip
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--mix-traces 'NOPE': unknown trace 'NOPE'; registered traces: SDSC-SP2" in err


def test_total_steps_zero_ships_the_initial_policy(tmp_path, capsys):
    """--total-steps 0 with --init-from: no update; the run is evaluated and its final
    model (what python -m train.card and eval/select_checkpoint.py read) is the initial policy."""
    from stable_baselines3.common.save_util import load_from_zip_file

    from train.ppo import main

    src = _saved_start(tmp_path / "start.zip", 0.25)
    small = ["--trace", "synthetic", "--length", "64", "--max-queue", "16", "--n-envs", "1",
             "--vec-env", "dummy", "--n-steps", "64", "--batch-size", "32", "--eval-windows",
             "1", "--eval-length", "64", "--baselines", "EASY", "--no-progress",
             "--logdir", str(tmp_path)]  # fmt: skip
    summary = main([*small, "--run-name", "r", "--init-from", str(tmp_path / "start.zip"),
                    "--total-steps", "0"])  # fmt: skip
    assert summary["timesteps"] == 0
    assert "no training steps (the initial policy" in capsys.readouterr().out
    run = tmp_path / "r"
    _, params, _ = load_from_zip_file(run / "final_model.zip")
    for name, value in src.policy.state_dict().items():
        assert th.equal(params["policy"][name], value), name
    assert len(summary["eval"]["history"]) >= 1  # evaluated at 0 steps
    for argv, message in [
        (["--total-steps", "0"], "--total-steps 0 trains nothing: it only makes sense with"),
        (
            [
                "--total-steps",
                "0",
                "--init-from",
                str(tmp_path / "start.zip"),
                "--lr-schedule",
                "linear",
            ],
            "--lr-schedule linear needs a run of at least one update",
        ),  # fmt: skip
        (["--total-steps", "-1"], "--total-steps"),
    ]:
        with pytest.raises(SystemExit) as exc:
            main([*small, "--run-name", "e", *argv])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err
