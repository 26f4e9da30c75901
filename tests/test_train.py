"""Tests of the PPO training script ``train/ppo.py`` (tiny runs on the embedded synthetic
workload: 32-job episodes, 2 evaluation windows of 64 jobs, a few hundred steps)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("tensorboard")

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from train import callbacks as train_callbacks  # noqa: E402
from train.ppo import eval_window_starts, main  # noqa: E402

SMALL = [
    "--seq-len",
    "32",
    "--n-envs",
    "1",
    "--eval-windows",
    "2",
    "--eval-length",
    "64",
    "--n-steps",
    "128",
    "--n-epochs",
    "4",
    "--baselines",
    "EASY,EASY-SJBF",
    "--no-progress",
]


def _run(tmp_path: Path, *extra: str, name: str = "r") -> dict:
    return main([*SMALL, "--logdir", str(tmp_path), "--run-name", name, *extra])


def _scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


# --------------------------------------------------------------------------- true CLI
def test_cli_smoke_subprocess(tmp_path: Path) -> None:
    """`python train/ppo.py` as a user runs it: SubprocVecEnv with 2 envs, default
    ``runs/`` log folder, TensorBoard events, checkpoints, best model, summary, table."""
    cmd = [
        sys.executable,
        str(REPO / "train" / "ppo.py"),
        *SMALL,
        "--n-envs",
        "2",
        "--n-steps",
        "64",
        "--total-steps",
        "384",
        "--checkpoint-every",
        "2",
        "--eval-every",
        "2",
        "--run-name",
        "cli",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "runs" / "cli"
    assert list(run.glob("events.out.tfevents.*"))
    assert (run / "best_model.zip").is_file()
    assert (run / "final_model.zip").is_file()
    ckpts = sorted(p.name for p in (run / "checkpoints").glob("*.zip"))
    assert ckpts == ["model_256_steps.zip", "model_384_steps.zip"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["timesteps"] == 384
    assert summary["n_envs"] == 2 and summary["rollout_size"] == 128
    assert set(summary["baselines"]) == {"EASY", "EASY-SJBF"}
    assert summary["paths"]["best_model"] == str(Path("runs") / "cli" / "best_model.zip")
    # the final table: one row per window and the mean
    assert "mean" in proc.stdout and "EASY-SJBF" in proc.stdout
    assert "[7000:7064]" in proc.stdout


# --------------------------------------------------------------------------- main(argv)
def test_smoke_outputs_and_tensorboard(tmp_path: Path) -> None:
    summary = _run(tmp_path, "--total-steps", "384", "--eval-every", "1", "--checkpoint-every", "2")
    run = tmp_path / "r"
    assert summary["timesteps"] == 384 and summary["updates"] == 3
    for f in ("config.json", "summary.json", "best_model.zip", "best_model.json", "progress.csv"):
        assert (run / f).is_file(), f
    assert (run / "checkpoints" / "model_256_steps.zip").is_file()
    assert (run / "checkpoints" / "model_384_steps.zip").is_file()  # final checkpoint
    # evaluations: before training and after each update
    hist = summary["eval"]["history"]
    assert [h["timesteps"] for h in hist] == [0, 128, 256, 384]
    assert summary["eval"]["starts"] == [7000, 9936]
    assert summary["eval"]["best"]["avg_bsld"] == min(h["avg_bsld"] for h in hist)
    sc = _scalars(run)
    for tag in (
        "eval/avg_bsld/agent",
        "eval/avg_bsld/EASY",
        "eval/avg_bsld/EASY-SJBF",
        "rollout/avg_bsld",
        "rollout/avg_bsld_normalizer",
        "rollout/reward",
        "train/approx_kl",
        "time/rollout_steps_per_s",
        "train/epochs_run",
    ):
        assert tag in sc, tag
    assert [s for s, _ in sc["eval/avg_bsld/agent"]] == [0, 128, 256, 384]
    easy = summary["baselines"]["EASY"]["mean"]
    assert all(math.isclose(v, easy, rel_tol=1e-6) for _, v in sc["eval/avg_bsld/EASY"])
    # one train/* point per update, at the step of its rollout
    assert [s for s, _ in sc["train/approx_kl"]] == [128, 256, 384]
    assert all(1 <= v <= 4 for _, v in sc["train/epochs_run"])  # --n-epochs 4
    # custom-scalars layout and hparams are in the events
    raw = b"".join(p.read_bytes() for p in run.glob("events.out.tfevents.*"))
    assert b"custom_scalars__config__" in raw
    assert b"_hparams_/session_start_info" in raw


def test_resume_continues_step_counter(tmp_path: Path) -> None:
    first = _run(tmp_path, "--total-steps", "256", "--checkpoint-every", "1")
    run = tmp_path / "r"
    assert first["timesteps"] == 256
    second = main(["--resume", str(run), "--total-steps", "512", "--no-progress"])
    assert second["timesteps"] == 512
    assert [s["timesteps_start"] for s in second["sessions"]] == [0, 256]
    assert (run / "checkpoints" / "model_512_steps.zip").is_file()
    assert (run / "progress_from_256.csv").is_file()
    steps = [s for s, _ in _scalars(run)["eval/avg_bsld/agent"]]
    assert max(steps) == 512 and 256 in steps
    # the new target is kept for a later resume
    assert json.loads((run / "config.json").read_text())["total_steps"] == 512


def test_resume_after_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run dies after its checkpoint at 256 steps (nothing else written); --resume
    continues from that checkpoint and the step counter goes on."""
    original = train_callbacks.EvalCheckpointCallback.checkpoint

    def dying_checkpoint(self: train_callbacks.EvalCheckpointCallback) -> Path:
        path = original(self)
        if self.model.num_timesteps >= 256:
            raise KeyboardInterrupt
        return path

    monkeypatch.setattr(train_callbacks.EvalCheckpointCallback, "checkpoint", dying_checkpoint)
    with pytest.raises(SystemExit) as exc:
        _run(tmp_path, "--total-steps", "1024", "--checkpoint-every", "1", "--eval-every", "1")
    assert exc.value.code == 130
    run = tmp_path / "r"
    assert not (run / "summary.json").exists()
    monkeypatch.setattr(train_callbacks.EvalCheckpointCallback, "checkpoint", original)
    summary = main(["--resume", str(run), "--total-steps", "512", "--no-progress"])
    assert summary["timesteps"] == 512
    assert summary["sessions"][0]["resumed_from"].endswith("model_256_steps.zip")
    hist = [h["timesteps"] for h in summary["eval"]["history"]]
    assert hist == sorted(hist) and hist[-1] == 512 and len(hist) == len(set(hist))


def test_deterministic_given_seed_and_auto_n_steps(tmp_path: Path) -> None:
    import torch as th
    from sb3_contrib import MaskablePPO

    args = ["--n-steps", "auto", "--trajectories", "6", "--epochs", "2", "--seed", "5"]
    a = _run(tmp_path, *args, name="a")
    b = _run(tmp_path, *args, name="b")
    calib = a["steps_per_trajectory_measured"]
    assert a["n_steps"] == math.ceil(6 * calib["mean"] / 1)
    assert a["timesteps"] == 2 * a["n_steps"]
    assert a["eval"]["history"] == b["eval"]["history"]
    pa = MaskablePPO.load(tmp_path / "a" / "final_model.zip").policy.state_dict()
    pb = MaskablePPO.load(tmp_path / "b" / "final_model.zip").policy.state_dict()
    assert all(th.equal(pa[k], pb[k]) for k in pa)
    _run(tmp_path, *args[:-1], "6", name="c")
    pc = MaskablePPO.load(tmp_path / "c" / "final_model.zip").policy.state_dict()
    assert not all(th.equal(pa[k], pc[k]) for k in pa)


def test_evaluation_matches_engine_baselines() -> None:
    """Played through the env, EASY and SJBF agents reproduce the engine's EASY and
    EASY-SJBF on the evaluation windows (so agent and baseline numbers are comparable)."""
    from agents.easy import EasyAgent, SJBFAgent
    from hpcgym.envs.backfill_env import BackfillEnv

    length = 256
    envs = [BackfillEnv(split="test", sequence_length=length) for _ in range(3)]
    starts = eval_window_starts(len(envs[0].workload), length, 3)
    base, skipped = train_callbacks.compute_baselines(
        envs[0].workload, starts, length, ["EASY", "EASY-SJBF", "no-such-scheduler"]
    )
    assert list(skipped) == ["no-such-scheduler"]
    for agent, name in ((EasyAgent(), "EASY"), (SJBFAgent(), "EASY-SJBF")):
        res = train_callbacks.evaluate_agent(agent, envs, starts)
        assert [r["start"] for r in res] == starts
        np.testing.assert_allclose(
            [r["avg_bsld"] for r in res], base[name]["per_window"], rtol=1e-12
        )
        # the env's normalizer (EASY-SJBF) is the same engine run
        np.testing.assert_allclose(
            [r["normalizer_avg_bsld"] for r in res], base["EASY-SJBF"]["per_window"]
        )


def test_eval_window_starts() -> None:
    even = eval_window_starts(10_000, 1024, 10)
    assert even[0] == 7000 and even[-1] == 10_000 - 1024 and even == sorted(even)
    assert eval_window_starts(10_000, 1024, 10) == even
    r1 = eval_window_starts(10_000, 1024, 10, seed=3)
    assert r1 == eval_window_starts(10_000, 1024, 10, seed=3)
    assert all(7000 <= s <= 10_000 - 1024 for s in r1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mode", "bogus"], "invalid choice: 'bogus'"),
        (["--policy", "XYZ"], "invalid choice: 'XYZ'"),
        (["--seq-len", "0"], "expected a positive integer"),
        (["--total-steps", "10", "--epochs", "2"], "not allowed with argument"),
        (["--n-steps", "many"], "expected a positive integer, got 'many'"),
        (["--gamma", "1.5"], "expected a number in [0, 1]"),
        (["--trace", "NO-SUCH-TRACE"], "--trace 'NO-SUCH-TRACE'"),
        (["--normalizer", "BOGUS"], "unknown scheduler 'BOGUS'"),
        (["--eval-length", "5000"], "evaluation windows"),
        (["--batch-size", "4096"], "exceeds the rollout size 128"),
        (["--resume", "/nonexistent/run"], "not a run folder or a checkpoint"),
    ],
)
def test_argument_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*SMALL, "--logdir", str(tmp_path), "--run-name", "e", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_resume_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path, "--total-steps", "128")
    run = str(tmp_path / "r")
    cases = [
        ([*SMALL, "--logdir", str(tmp_path), "--run-name", "r"], f"--resume {run}"),
        (["--resume", run, "--seed", "3"], "--seed (3; the run has 0)"),
        (["--resume", run], "already at 128 steps"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert message in capsys.readouterr().err


def test_time_limit_stops_training_and_finishes_the_run(tmp_path: Path) -> None:
    """--time-limit ends learn() early; the run still evaluates, saves and summarises."""
    out = _run(tmp_path, "--total-steps", "1000000", "--time-limit", "0.001")
    assert out["timesteps"] < 1000000
    run = tmp_path / "r"
    assert (run / "final_model.zip").is_file() and (run / "summary.json").is_file()


def test_stop_init_sets_the_initial_stop_logit(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    _run(tmp_path, "--total-steps", "128", "--stop-init", "-3")
    model = MaskablePPO.load(tmp_path / "r" / "final_model.zip")
    assert model.policy.stop_init == -3.0
    bias = model.policy.mlp_extractor.stop_bias
    assert bias is not None and abs(float(bias.detach()) + 3.0) < 0.5  # started at -3, few updates


def test_fast_preset_applies_unless_overridden(tmp_path: Path) -> None:
    out = main(
        [
            "--preset",
            "fast",
            "--seq-len",
            "32",
            "--eval-windows",
            "1",
            "--eval-length",
            "64",
            "--n-steps",
            "256",
            "--n-envs",
            "1",
            "--time-limit",
            "0.001",
            "--baselines",
            "EASY",
            "--no-progress",
            "--logdir",
            str(tmp_path),
            "--run-name",
            "p",
        ]
    )
    cfg = json.loads((tmp_path / "p" / "config.json").read_text())
    assert cfg["preset"] == "fast"
    assert (cfg["n_epochs"], cfg["batch_size"], cfg["target_kl"], cfg["stop_init"]) == (
        4,
        256,
        None,
        -3.0,
    )
    assert cfg["n_envs"] == 1 and cfg["time_limit"] == 0.001  # explicit options win
    assert out["timesteps"] < 10**9
