"""Tests of the PPO training script ``train/ppo.py`` (tiny runs on the embedded synthetic
workload: 32-job episodes, 2 evaluation windows of 64 jobs, a few hundred steps)."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("tensorboard")

REPO = Path(__file__).resolve().parents[1]

from train_small import SMALL  # noqa: E402
from train_small import run_small as _run  # noqa: E402

from train import callbacks as train_callbacks  # noqa: E402
from train.config import ConfigError, TrainConfig  # noqa: E402
from train.evaluator import Evaluator, eval_length, eval_window_starts  # noqa: E402
from train.ppo import main  # noqa: E402
from train.rundir import RunDir, checkpoint_steps  # noqa: E402


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


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
    assert "validation split, jobs 126000..139999 of 200000" in proc.stdout  # the caption
    # each window is a row, unless every column ties on it (then the caption counts it)
    for row in ("[126000:126064]", "[139936:140000]"):
        assert row in proc.stdout or "windows where every column shows the same" in proc.stdout


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
    assert summary["eval"]["starts"] == [126000, 139936]
    assert summary["eval"]["split"] == "validation"
    assert summary["eval"]["best"]["avg_bsld"] == min(h["avg_bsld"] for h in hist)
    sc = _scalars(run)
    for tag in (
        "eval/avg_bsld",
        "eval/avg_wait",
        "eval/utilization",
        "rollout/avg_bsld",
        "rollout/avg_bsld_reference",
        "eval/ratio_vs_EASY-SJBF",
        "eval/ratio_vs_EASY-SJBF_ci_low",
        "eval/ratio_vs_EASY-SJBF_ci_high",
        "eval/wins_vs_EASY-SJBF",
        "eval/mean_ratio_vs_EASY-SJBF",
        "eval/avg_bsld_reference",
        "run/wall_time_s",
        "rollout/reward",
        "train/approx_kl",
        "time/rollout_steps_per_s",
        "train/epochs_run",
    ):
        assert tag in sc, tag
    assert [s for s, _ in sc["eval/avg_bsld"]] == [0, 128, 256, 384]
    assert not any(t.startswith("eval/avg_bsld/") for t in sc)  # heuristics: runs of their own
    # the heuristics beside the run: flat lines to the last evaluation step
    (folder,) = (tmp_path / "baselines").iterdir()
    assert folder.name == f"synthetic-{summary['eval']['windows_key']}"
    easy = summary["baselines"]["EASY"]["mean"]
    assert _scalars(folder / "EASY")["eval/avg_bsld"] == [
        (0, pytest.approx(easy)),
        (384, pytest.approx(easy)),
    ]
    # one train/* point per update, at the step of its rollout
    assert [s for s, _ in sc["train/approx_kl"]] == [128, 256, 384]
    assert all(1 <= v <= 4 for _, v in sc["train/epochs_run"])  # --n-epochs 4
    # custom-scalars layout and hparams are in the events
    raw = b"".join(p.read_bytes() for p in run.glob("events.out.tfevents.*"))
    assert b"custom_scalars__config__" in raw
    assert b"_hparams_/session_start_info" in raw
    assert b"_hparams_/experiment" not in raw  # the HParams tab lists every run's settings
    assert b"paired geo-mean ratio of AVEbsld vs EASY-SJBF" in raw  # the margin chart


def test_paired_statistics_in_summary_tensorboard_and_card(tmp_path: Path) -> None:
    """The training-time report: the paired ratio vs the reference (EASY-SJBF) on the
    validation windows, logged with the one tag scheme, in summary.json, the final
    table, the hparams metrics and the model card."""
    from hpcgym.evaluation.cards import card_from_run
    from hpcgym.evaluation.statistics import paired_comparison
    from train.logs import hparam_metrics

    summary = _run(tmp_path, "--total-steps", "256", "--baselines", "EASY", "--eval-every", "1")
    run = tmp_path / "r"
    ev = summary["eval"]
    assert ev["reference"] == "EASY-SJBF"
    assert "EASY-SJBF" not in summary["baselines"]  # run for the ratio only
    final = ev["final"]
    ref = [w["reference_avg_bsld"] for w in final["per_window"]]  # the env's reference
    cmp = paired_comparison([w["avg_bsld"] for w in final["per_window"]], ref)
    paired = final["paired"]
    assert paired == {"reference": "EASY-SJBF", **cmp.to_dict(), "verdict": cmp.verdict}
    assert ev["best"]["paired"]["windows"] == 2
    assert [h["geo_ratio"] is not None for h in ev["history"]] == [True] * 3
    sc = _scalars(run)
    ratio = sc["eval/ratio_vs_EASY-SJBF"][-1][1]
    assert math.isclose(ratio, paired["geo_ratio"], rel_tol=1e-6)
    assert sc["eval/wins_vs_EASY-SJBF"][-1][1] == paired["wins"]
    assert sc["run/timesteps"] == [(256, 256.0)]
    raw = b"".join(p.read_bytes() for p in run.glob("events.out.tfevents.*"))
    for metric in hparam_metrics("EASY-SJBF"):
        assert metric.encode() in raw, metric
        assert metric in sc, metric
    from hpcgym.evaluation.cards import card_markdown

    card = card_from_run(run)
    assert card.data["eval"]["paired"] == ev["best"]["paired"]
    assert f"**{ev['best']['paired']['verdict']}**" in card_markdown(card.data)


def test_dense_reward_run_trains_and_records_the_mode(tmp_path: Path) -> None:
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.evaluation.cards import card_from_run, card_markdown
    from train.build import env_kwargs
    from train.config import TrainConfig

    summary = _run(
        tmp_path,
        *("--total-steps", "256", "--reward-mode", "dense", "--reward-scale", "log"),
        *("--seed", "2", "--time-scale", "log"),
    )
    run = tmp_path / "r"
    assert summary["timesteps"] == 256
    config = json.loads((run / "config.json").read_text())
    assert (config["reward_mode"], config["reward_scale"]) == ("dense", "log")
    env = BackfillEnv(**env_kwargs(TrainConfig(reward_scale="log", time_scale="log"), "train", 64))
    assert (env.reward_scale, env.time_scale) == ("log", "log")
    card = card_from_run(run)
    assert card.data["reward_scale"] == "log"
    # the evaluation plays the agent with the observation it was trained on
    assert config["time_scale"] == "log" and card.env["time_scale"] == "log"
    md = card_markdown(card.to_dict())  # the card shows what the agent observes
    assert "| time_scale | `log` |" in md and "| reward_mode | `dense` |" in md
    # the episode returns are the terminal formula (the dense steps sum to it)
    sc = _scalars(run)
    assert sc["rollout/reward"] and all(math.isfinite(v) for _, v in sc["rollout/reward"])
    assert card_from_run(run).data["reward_mode"] == "dense"


def test_resume_continues_step_counter(tmp_path: Path) -> None:
    first = _run(tmp_path, "--total-steps", "256", "--checkpoint-every", "1")
    run = tmp_path / "r"
    assert first["timesteps"] == 256
    second = main(["--resume", str(run), "--total-steps", "512", "--no-progress"])
    assert second["timesteps"] == 512
    assert [s["timesteps_start"] for s in second["sessions"]] == [0, 256]
    assert (run / "checkpoints" / "model_512_steps.zip").is_file()
    assert (run / "progress_from_256.csv").is_file()
    steps = [s for s, _ in _scalars(run)["eval/avg_bsld"]]
    assert max(steps) == 512 and 256 in steps
    # the new target is kept for a later resume
    assert json.loads((run / "config.json").read_text())["total_steps"] == 512


def test_interrupt_checkpoints_and_summary_lists_every_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the checkpoint at 256 steps: exit 130, summary.json written with the
    session (stop reason SIGINT); --resume continues from that checkpoint, and the
    resumed run's summary lists both sessions."""
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
    first = json.loads((run / "summary.json").read_text())
    assert [s["stop_reason"] for s in first["sessions"]] == ["SIGINT"]
    assert first["timesteps"] == 256 and first["paths"]["final_model"] is None
    assert not (run / "final_model.zip").exists()
    monkeypatch.setattr(train_callbacks.EvalCheckpointCallback, "checkpoint", original)
    summary = main(["--resume", str(run), "--total-steps", "512", "--no-progress"])
    assert summary["timesteps"] == 512
    sessions = summary["sessions"]
    assert [s["stop_reason"] for s in sessions] == ["SIGINT", "target reached"]
    assert [(s["timesteps_start"], s["timesteps_end"]) for s in sessions] == [(0, 256), (256, 512)]
    assert sessions[1]["resumed_from"].endswith("model_256_steps.zip")
    for s in sessions:
        assert s["started"] <= s["ended"] and s["wall_time_s"] > 0 and s["steps"] > 0
    assert summary["wall_time_s"] == pytest.approx(sum(s["wall_time_s"] for s in sessions))
    hist = [h["timesteps"] for h in summary["eval"]["history"]]
    assert hist == sorted(hist) and hist[-1] == 512 and len(hist) == len(set(hist))


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() - t0 < timeout, f"{path} did not appear"
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_or_sigterm_checkpoints_writes_summary_and_resumes(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C, or SIGTERM (how clusters stop jobs), mid-training: a checkpoint and
    summary.json are written, exit status 130 / 143; --resume then continues the run."""
    cmd = [
        sys.executable,
        "-X",
        "faulthandler",  # a SIGABRT on a hang below dumps every thread's stack
        str(REPO / "train" / "ppo.py"),
        *SMALL,
        "--total-steps",
        "1000000",
        "--checkpoint-every",
        "1",
        "--logdir",
        str(tmp_path),
        "--run-name",
        "t",
    ]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        run = tmp_path / "t"
        _wait_for(run / "checkpoints" / "model_256_steps.zip", proc)
        proc.send_signal(sig)
        try:
            _out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # say where it hung (an unexplained rare flake)
            proc.send_signal(signal.SIGABRT)
            _out, err = proc.communicate(timeout=30)
            pytest.fail(f"no exit within 60 s of {sig.name}; stacks:\n{err[-6000:]}")
    finally:
        proc.kill()
    assert proc.returncode == 128 + int(sig), err[-3000:]
    assert sig.name in err and f"--resume {run}" in err
    first = json.loads((run / "summary.json").read_text())
    (session,) = first["sessions"]
    assert session["stop_reason"] == sig.name
    steps = first["timesteps"]
    assert steps >= 256 and steps % 128 == 0  # the unfinished rollout is discarded
    assert (run / "checkpoints" / f"model_{steps}_steps.zip").is_file()
    summary = main(["--resume", str(run), "--total-steps", str(steps + 128), "--no-progress"])
    assert summary["timesteps"] == steps + 128
    assert [s["stop_reason"] for s in summary["sessions"]] == [sig.name, "target reached"]


def test_keep_checkpoints_and_step_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the newest --keep-checkpoints checkpoints stay (with --keep-spread: the
    oldest and the newest; the best model is best_model.zip); the progress bar counts
    steps of the target."""
    argv = [a for a in SMALL if a != "--no-progress"]
    main(
        [
            *argv,
            *("--total-steps", "640", "--checkpoint-every", "1", "--keep-checkpoints", "2"),
            *("--logdir", str(tmp_path), "--run-name", "k"),
        ]
    )
    run = RunDir(tmp_path / "k")
    assert [checkpoint_steps(p) for p in run.checkpoints()] == [512, 640]
    assert run.best_model.is_file()
    assert "640/640" in capsys.readouterr().err
    main(
        [
            *SMALL,
            *("--total-steps", "640", "--checkpoint-every", "1", "--keep-checkpoints", "2"),
            *("--keep-spread", "--logdir", str(tmp_path), "--run-name", "spread"),
        ]
    )
    spread = RunDir(tmp_path / "spread")
    assert [checkpoint_steps(p) for p in spread.checkpoints()] == [128, 640]
    assert spread.read_json(spread.config)["keep_spread"] is True


def test_bar_options() -> None:
    steps = train_callbacks.bar_options(1000, 200, None)
    assert (steps["total"], steps["initial"], steps["unit"]) == (1000, 200, "step")
    timed = train_callbacks.bar_options(10**9, 0, 1800.0)
    assert timed["total"] == 1800.0 and timed["unit"] == "s"
    assert "of 30:00" in timed["bar_format"]


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
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents.easy import EasyAgent, SJBFAgent

    cfg = TrainConfig.create(eval_length=256, eval_windows=3, baselines=("EASY", "EASY-SJBF"))
    workload = BackfillEnv(split="train", window_length=256).workload
    evaluator = Evaluator.for_config(cfg, workload)
    base, starts = evaluator.baselines, evaluator.starts
    assert starts == eval_window_starts(len(workload), 256, 3)
    assert evaluator.skipped == {}
    for agent, name in ((EasyAgent(), "EASY"), (SJBFAgent(), "EASY-SJBF")):
        res = evaluator.evaluate(agent)["per_window"]
        assert [r["start"] for r in res] == starts
        np.testing.assert_allclose(
            [r["avg_bsld"] for r in res], base[name]["per_window"], rtol=1e-12
        )
        # the env's reward reference (EASY-SJBF) is the same engine run
        np.testing.assert_allclose(
            [r["reference_avg_bsld"] for r in res], base["EASY-SJBF"]["per_window"]
        )


def test_eval_length_default_fits_a_short_split() -> None:
    """The default evaluation length shrinks (with a warning) to half a split too short
    for 10 windows of 1024 jobs; an explicit length that does not fit is an error naming
    the numbers and the longest length that fits."""
    from hpcgym.workload import split_range

    cfg = TrainConfig.create(train_fraction=0.95)
    lo, hi = split_range(10_000, cfg.eval_split, 0.95)
    size = hi - lo
    assert size - 9 < 1024  # the premise: the split is short
    warned: list[str] = []
    assert eval_length(cfg, 10_000, warned.append) == size // 2
    assert len(warned) == 1 and f"has {size} jobs" in warned[0]
    assert eval_length(cfg.replace(eval_length=64), 10_000) == 64
    with pytest.raises(ConfigError, match=rf"has {size} jobs .*at most {size - 9}\)"):
        eval_length(cfg.replace(eval_length=size), 10_000)


def test_default_evaluations_fit_the_default_workload_side_by_side() -> None:
    """On the default workload neither preset's evaluation is shortened or warned about:
    ``paper`` plays 10 windows of 1,024 validation jobs, ``fast`` 30 of 256 (the training
    length), and their windows do not overlap."""
    from hpcgym.workload import load
    from train.summary import overlap

    n = len(load(None))
    for preset, shape in (("paper", (10, 1024)), ("fast", (30, 256))):
        cfg = TrainConfig.create(preset=preset)
        warned: list[str] = []
        length = eval_length(cfg, n, warned.append)
        starts = eval_window_starts(
            n, length, cfg.eval_windows, cfg.train_fraction, None, cfg.eval_split
        )
        assert (len(starts), length) == shape and warned == [], preset
        assert overlap(starts, length) == "non-overlapping"
    assert overlap([0, 100], 101) == "overlapping" and overlap([100, 0], 100) == "non-overlapping"


def test_fast_preset_eval_length_is_a_default_that_fits_a_short_split() -> None:
    """The fast preset's 256-job windows shrink, with a warning, on a split too short for
    30 of them, as the plain default does; another explicit length is kept."""
    cfg = TrainConfig.create(preset="fast")
    assert (cfg.eval_windows, cfg.eval_length) == (30, 256)
    warned: list[str] = []
    # 4,000 jobs: a validation split of 280 jobs, too short for 30 distinct 256-job windows
    assert eval_length(cfg, 4_000, warned.append) == 140
    assert len(warned) == 1 and "too few for 30 windows of 256 jobs" in warned[0]
    assert eval_length(cfg.replace(eval_length=64), 4_000) == 64
    with pytest.raises(ConfigError, match="at most 251"):
        eval_length(cfg.replace(eval_length=252), 4_000)


def test_eval_window_starts() -> None:
    # the validation split of 100,000 jobs: jobs 63,000..69,999
    even = eval_window_starts(100_000, 1024, 10)
    assert even[0] == 63_000 and even[-1] == 70_000 - 1024 and even == sorted(even)
    assert eval_window_starts(100_000, 1024, 10) == even
    r1 = eval_window_starts(100_000, 1024, 10, seed=3)
    assert r1 == eval_window_starts(100_000, 1024, 10, seed=3)
    assert all(63_000 <= s <= 70_000 - 1024 for s in r1)
    # --validation-fraction 0.3: the last 30 % of the training range, jobs 49,000..69,999
    wide = eval_window_starts(100_000, 1024, 10, validation_fraction=0.3)
    assert wide[0] == 49_000 and wide[-1] == 70_000 - 1024


def test_validation_fraction_reaches_env_evaluation_and_messages() -> None:
    """``--validation-fraction`` is checked, reaches the env's kwargs (its validation
    split) and the evaluation length's message; the test split does not move."""
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.workload import split_range
    from train.build import env_kwargs

    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ConfigError, match="--validation-fraction"):
            TrainConfig.create(validation_fraction=bad)
    cfg = TrainConfig.create(validation_fraction=0.3, trace="synthetic")
    kw = env_kwargs(cfg, "validation", 64)
    assert kw["validation_fraction"] == 0.3
    env = BackfillEnv(**{**kw, "max_queue": 16})
    n = len(env._workload)
    lo, hi = split_range(n, "validation", 0.7, 0.3)
    assert (env._sampler.lo, env._sampler.hi) == (lo, hi)
    assert hi - lo > split_range(n, "validation", 0.7)[1] - split_range(n, "validation", 0.7)[0]
    assert split_range(n, "test", 0.7, 0.3) == split_range(n, "test", 0.7)
    _obs, info = env.reset(seed=1)
    assert lo <= info["start"] and info["start"] + 64 <= hi
    with pytest.raises(ConfigError, match="--validation-fraction 0.3"):
        eval_length(cfg.replace(eval_length=hi - lo), n)


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
        (["--eval-length", "20000"], "evaluation windows"),
        (["--batch-size", "4096"], "exceeds the rollout size 128"),
        (["--resume", "/nonexistent/run"], "not a run folder or a checkpoint"),
        (["--baselines", "EASY,NOPE"], "unknown scheduler 'NOPE'; valid names: EASY, EASY-AR"),
        (["--device", "tpu"], "--device: expected a torch device"),
        pytest.param(
            ["--device", "cuda"],
            "--device cuda: CUDA is not available",
            marks=pytest.mark.skipif(_has_cuda(), reason="CUDA is available"),
        ),
        (["--keep-checkpoints", "-1"], "expected an integer >= 0"),
        (["--time-limit", "0"], "--time-limit: expected a positive number"),
        (["--logdir", "/dev/null/x"], "cannot create the run folder /dev/null/x"),
        (["--seeds", "1", "--seed", "2"], "--seed and --seeds exclude each other"),
        (["--seeds", "1", "1"], "--seeds: each seed once"),
        (["--seeds", "1", "--resume", "x"], "--seeds and --resume exclude each other"),
        (["--seeds", "x"], "argument --seeds: invalid int value: 'x'"),
    ],
)
def test_argument_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*SMALL, "--logdir", str(tmp_path), "--run-name", "e", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err  # one line, no usage block, no traceback


def test_resume_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path, "--total-steps", "128")
    run = str(tmp_path / "r")
    cases = [
        ([*SMALL, "--logdir", str(tmp_path), "--run-name", "r"], f"--resume {run}"),
        (["--resume", run, "--seed", "3"], "--seed (3; the run has 0)"),
        (["--resume", run], "already at 128 steps"),
    ]
    # a damaged run: a checkpoint that is not a zip file, a config.json that is not JSON
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(run, broken)
    (broken / "checkpoints" / "model_128_steps.zip").write_text("garbage")
    cases.append((["--resume", str(broken), "--total-steps", "256"], "cannot load the checkpoint"))
    old = tmp_path / "old"
    shutil.copytree(run, old)
    config = json.loads((old / "config.json").read_text())
    (old / "config.json").write_text(json.dumps({**config, "eval_split": "test"}))
    cases.append((["--resume", str(old)], "it predates the validation split"))
    unreadable = tmp_path / "unreadable"
    shutil.copytree(run, unreadable)
    (unreadable / "config.json").write_text("{bad")
    cases.append((["--resume", str(unreadable)], f"cannot read {unreadable / 'config.json'}"))
    for argv, message in cases:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_time_limit_cuts_the_update_and_finishes_the_run(tmp_path: Path) -> None:
    """--time-limit is honoured within seconds, between minibatches: one update of 512
    steps x 1,000 epochs of 8 minibatches would take minutes; the run stops a few seconds
    after the limit (6 s) and still evaluates, saves and summarises."""
    out = _run(
        tmp_path,
        *("--total-steps", "1000000", "--time-limit", "0.1"),  # 6 s
        *("--n-steps", "512", "--n-epochs", "1000", "--batch-size", "64"),
    )
    (session,) = out["sessions"]
    assert session["stop_reason"] == "time limit"
    assert 6.0 <= session["learn_time_s"] < 6.0 + 4.0, session
    assert out["timesteps"] % 512 == 0 and 512 <= out["timesteps"] < 1000000
    run = tmp_path / "r"
    assert (run / "final_model.zip").is_file() and (run / "summary.json").is_file()
    assert out["eval"]["final"]["timesteps"] == out["timesteps"]
    sc = _scalars(run)  # the update in progress was cut after some of its minibatches
    assert sc["train/update_cut"][-1][1] == 1.0
    assert 1 <= sc["train/minibatches"][-1][1] < 1000 * 8


def test_stop_init_sets_the_initial_stop_logit(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    _run(tmp_path, "--total-steps", "128", "--stop-init", "-3")
    model = MaskablePPO.load(tmp_path / "r" / "final_model.zip")
    assert model.policy.stop_init == -3.0
    bias = model.policy.mlp_extractor.stop_bias
    assert bias is not None and abs(float(bias.detach()) + 3.0) < 0.5  # started at -3, few updates


def test_fast_preset_applies_unless_overridden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
            "--logdir",
            str(tmp_path),
            "--run-name",
            "p",
        ]
    )
    # a time-limited run's progress bar shows the elapsed time of the limit, not 1e9 steps
    err = capsys.readouterr().err
    assert "time " in err and "of 00:00 [" in err and "1000000000" not in err
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


# --------------------------------------------------------------------------- GPU path
@pytest.mark.skipif(not _has_cuda(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("task", ["backfill", "schedule"])
def test_trains_with_the_policy_on_the_gpu(tmp_path: Path, task: str) -> None:
    """``--device cuda``: the policy and its updates on the GPU, the envs batched on the
    CPU (the fast preset: the native vector env and the lean PPO)."""
    import torch
    from stable_baselines3.common.save_util import load_from_zip_file

    out = _run(tmp_path, "--preset", "fast", "--task", task, "--n-envs", "4",
               "--device", "cuda", "--total-steps", "1024", name=task)  # fmt: skip
    assert out["timesteps"] >= 1024
    data, params, _ = load_from_zip_file(tmp_path / task / "final_model.zip", device="cuda")
    assert all(t.device.type == "cuda" for t in params["policy"].values())
    assert torch.cuda.max_memory_allocated() > 0
