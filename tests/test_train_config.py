"""Tests of ``train/ppo.py``'s configuration (``TrainConfig``, presets, the CLI's
options), its run folder (checkpoint names, ``--resume``), the split it reads (never
test) and the one-after-the-other ``--seeds`` path (parallel seeds:
tests/test_train_seeds.py). Tiny runs on the embedded synthetic workload."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

REPO = Path(__file__).resolve().parents[1]

from train_small import SMALL  # noqa: E402
from train_small import run_small as _run  # noqa: E402

from train.cli import build_parser, parse_args  # noqa: E402
from train.config import DEFAULT_EPOCHS, PRESETS, ConfigError, TrainConfig  # noqa: E402
from train.ppo import main  # noqa: E402
from train.rundir import (  # noqa: E402
    RunDir,
    RunDirError,
    checkpoint_name,
    checkpoint_steps,
    resolve_resume,
)


# --------------------------------------------------------------------------- TrainConfig
def test_config_presets_and_defaults() -> None:
    plain = TrainConfig.create()
    assert (plain.epochs, plain.total_steps, plain.n_epochs) == (DEFAULT_EPOCHS, None, 80)
    fast = TrainConfig.create(preset="fast")
    for key, value in PRESETS["fast"].items():
        assert getattr(fast, key) == value, key
    assert fast.epochs is None
    # explicit options win over the preset; --epochs replaces the preset's total_steps
    mine = TrainConfig.create(preset="fast", n_envs=1, epochs=3)
    assert (mine.n_envs, mine.epochs, mine.total_steps, mine.n_epochs) == (1, 3, None, 4)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"gamma": 1.5}, "--gamma: expected a number in [0, 1], got '1.5'"),
        ({"time_limit": -1.0}, "--time-limit: expected a positive number, got '-1.0'"),
        ({"length": 0}, "--length: expected a positive integer, got '0'"),
        ({"length": 32.0}, "--length: expected a positive integer, got '32.0'"),
        ({"n_envs": None}, "--n-envs: expected a positive integer, got 'None'"),
        ({"learning_rate": "0.1"}, "--learning-rate: expected a value like 0.1, got '0.1'"),
        ({"seed": "x"}, "--seed: invalid value 'x'"),
        ({"mode": "bogus"}, "--mode: expected one of free, guarded, penalized"),
        ({"policy": "XYZ"}, "--policy: expected one of"),
        ({"total_steps": 10, "epochs": 2}, "--total-steps and --epochs exclude each other"),
        ({"batch_size": 1}, "--batch-size must be > 1"),
        ({"n_steps": "many"}, "--n-steps: expected a positive integer, got 'many'"),
        ({"train_fraction": 1.0}, "--train-fraction: expected a number in (0, 1), got '1.0'"),
        ({"run_name": "a/b"}, "--run-name must be a plain folder name"),
        ({"kernel_arch": (32, 0)}, "--kernel-arch: expected positive layer widths"),
        ({"eval_split": "later"}, "eval_split: expected one of"),
        ({"lr_schedule": "cosine"}, "--lr-schedule: expected one of constant, linear"),
        (
            {"lr_schedule": "linear", "total_steps": 10**9},
            "--lr-schedule linear falls to 0 at the run's target: give --total-steps",
        ),
        ({"no_such_option": 1}, "unknown options: no_such_option"),
    ],
)
def test_config_validation_errors(options: dict, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        TrainConfig.create(**options)
    assert message in str(exc.value)


def test_config_unknown_preset() -> None:
    with pytest.raises(ConfigError, match="--preset: expected one of paper, fast"):
        TrainConfig.create(preset="slow")


def test_config_json_round_trip(tmp_path: Path) -> None:
    cfg = TrainConfig.create(
        preset="fast", trace="Lublin-1", kernel_arch=(8, 4), baselines=("EASY",), run_name="x"
    )
    path = tmp_path / "config.json"
    cfg.to_json(path, extra={"n_steps_resolved": 64, "calibration": None})
    data = json.loads(path.read_text())
    assert data["kernel_arch"] == [8, 4] and data["n_steps_resolved"] == 64
    assert TrainConfig.from_json(path) == cfg
    # a config.json of an older run: seq_len / normalizer / resume keys
    old = {**cfg.to_dict(), "resume": None}
    old["seq_len"] = old.pop("length")
    old["normalizer"] = old.pop("reference")
    assert TrainConfig.from_dict(old) == cfg
    with pytest.raises(ConfigError, match="unknown keys in the run's config: bogus"):
        TrainConfig.from_dict({**cfg.to_dict(), "bogus": 1})


def test_config_for_resume() -> None:
    saved = TrainConfig.create(total_steps=256, run_name="r")
    longer = saved.for_resume({"epochs": 9, "progress": False, "seed": 0})
    assert (longer.epochs, longer.total_steps, longer.progress) == (9, None, False)
    assert saved.for_resume({"kernel_arch": (32, 16, 8)}) == saved  # same value: fine
    with pytest.raises(ConfigError, match=r"--seed \(3; the run has 0\)"):
        saved.for_resume({"seed": 3})


@pytest.mark.parametrize("algo", ["sb3", "lean"])
def test_lr_schedule_linear_falls_to_zero_at_the_target(tmp_path: Path, algo: str) -> None:
    """--lr-schedule linear: the rate SB3 applies before each update is 3e-4 x the share
    of the target still to go (4 updates of 128 steps to 512), 0 at the end; the value
    network's group gets its fixed multiple of it; constant (default) stays 3e-4."""
    import csv

    from sb3_contrib import MaskablePPO

    def rates(name: str) -> list[float]:
        with open(tmp_path / name / "progress.csv", encoding="utf-8") as fh:
            rows = csv.DictReader(fh)
            return [float(r["train/learning_rate"]) for r in rows if r["train/learning_rate"]]

    _run(tmp_path, "--lr-schedule", "linear", "--total-steps", "512", "--algo", algo, name="lin")
    assert np.allclose(rates("lin"), [2.25e-4, 1.5e-4, 7.5e-5, 0.0])
    groups = MaskablePPO.load(tmp_path / "lin" / "final_model.zip").policy.optimizer.param_groups
    assert [g["lr"] for g in groups] == [0.0, 0.0]
    assert groups[1]["lr_scale"] == pytest.approx(1e-3 / 3e-4)
    _run(tmp_path, "--total-steps", "256", "--algo", algo, name="const")
    assert np.allclose(rates("const"), [3e-4, 3e-4])


def test_cli_hidden_aliases_and_explicit_options() -> None:
    parser = build_parser()
    with pytest.warns(FutureWarning, match="--set length=32"):
        args = parse_args(["--seq-len", "32", "--normalizer", "EASY", "--no-progress"], parser)
    assert args.options == {"length": 32, "reference": "EASY", "progress": False}
    assert args.resume is None
    with pytest.warns(FutureWarning, match="--length is no longer listed"):
        assert parse_args(["--length", "32"], parser).options == {"length": 32}
    text = parser.format_help()
    assert "--reference" in text and "--set" in text and "--config" in text
    assert "--length" not in text  # set by name: --set length=32
    assert "--seq-len" not in text and "--normalizer" not in text


def test_mix_traces_keeps_the_commas_of_generated_workloads() -> None:
    gen = "synthetic:load=1.06,seed=3,n_jobs=500"
    args = parse_args(["--mix-traces", f"{gen},Lublin-2,{gen.replace('seed=3', 'seed=4')}"])
    assert args.options["mix_traces"] == (gen, "Lublin-2", gen.replace("seed=3", "seed=4"))
    assert parse_args(["--mix-traces", "a.swf,Lublin-2,"]).options["mix_traces"] == (
        "a.swf",
        "Lublin-2",
    )
    cfg = TrainConfig.create(preset="fast", mix_traces=[gen, "Lublin-2"])
    assert cfg.mix_traces == (gen, "Lublin-2") and not cfg.problems()


def test_cli_rejects_bad_time_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*SMALL, "--logdir", str(tmp_path), "--time-limit", "-1"])
    assert exc.value.code == 2
    assert "--time-limit: expected a positive number" in capsys.readouterr().err


# --------------------------------------------------------------------------- run folder
def test_rundir_checkpoint_naming_and_lookup(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r")
    assert run.checkpoint(384) == tmp_path / "r" / "checkpoints" / "model_384_steps.zip"
    assert checkpoint_name(384) == "model_384_steps.zip"
    assert checkpoint_steps(run.checkpoint(384)) == 384
    assert checkpoint_steps("best_model.zip") is None
    assert run.latest_checkpoint() is None and run.checkpoints() == []
    run.checkpoint_dir.mkdir(parents=True)
    for steps in (999, 1000, 64):
        run.checkpoint(steps).write_bytes(b"")
    (run.checkpoint_dir / "notes.zip").write_bytes(b"")
    assert [checkpoint_steps(p) for p in run.checkpoints()] == [64, 999, 1000]
    assert run.latest_checkpoint() == run.checkpoint(1000)  # by steps, not by name
    assert run.prune_checkpoints(keep=2) == [run.checkpoint(64)]
    assert [checkpoint_steps(p) for p in run.checkpoints()] == [999, 1000]
    assert run.progress_csv(0).name == "progress.csv"
    assert run.progress_csv(256).name == "progress_from_256.csv"


def test_rundir_prune_checkpoints_spread(tmp_path: Path) -> None:
    """--keep-spread: pruned after every save, the kept checkpoints stay spread over the
    whole run (oldest and newest always; no gap wider than twice the even spacing), and
    later checkpoints than ``upto`` are left alone."""
    run = RunDir(tmp_path / "r")
    run.checkpoint_dir.mkdir(parents=True)
    for k in range(1, 301):
        run.checkpoint(100 * k).write_bytes(b"")
        run.prune_checkpoints(5, upto=100 * k, spread=True)
        steps = [checkpoint_steps(p) for p in run.checkpoints()]
        if k <= 5:
            assert steps == [100 * i for i in range(1, k + 1)]
            continue
        assert len(steps) == 5 and steps[0] == 100 and steps[-1] == 100 * k
        even = (steps[-1] - steps[0]) / 4
        gaps = np.diff(steps[:-1])  # the newest gap is short right after a save
        assert gaps.max() <= 2 * even, (k, steps)
    # the newest N (the default) would have kept 29,600-30,000 only
    assert checkpoint_steps(run.checkpoints()[1]) < 15_000
    run.checkpoint(40_000).write_bytes(b"")  # a lost session's later checkpoint
    run.prune_checkpoints(2, upto=30_000, spread=True)
    assert [checkpoint_steps(p) for p in run.checkpoints()] == [100, 30_000, 40_000]
    assert run.prune_checkpoints(1, spread=True) == [run.checkpoint(100), run.checkpoint(30_000)]


def test_rundir_resolve_resume(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r")
    run.checkpoint_dir.mkdir(parents=True)
    run.checkpoint(64).write_bytes(b"")
    with pytest.raises(RunDirError, match="config.json not found"):
        resolve_resume(run.path)
    run.checkpoint(64).unlink()
    run.config.write_text("{}")
    with pytest.raises(RunDirError, match="no checkpoint in"):
        resolve_resume(run.path)
    run.checkpoint(128).write_bytes(b"")
    run.checkpoint(256).write_bytes(b"")
    assert resolve_resume(run.path) == (run, run.checkpoint(256))
    assert resolve_resume(run.checkpoint(128)) == (run, run.checkpoint(128))
    run.final_model.write_bytes(b"")
    assert resolve_resume(run.final_model) == (run, run.final_model)
    with pytest.raises(RunDirError, match="not a run folder or a checkpoint"):
        resolve_resume(tmp_path / "nothing")


def test_rundir_evaluations_until_drops_the_lost_part(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    for steps in (0, 128, 256, 384):
        run.append_evaluation({"timesteps": steps, "avg_bsld": np.float64(1.5)})
    kept = run.evaluations_until(256)
    assert [r["timesteps"] for r in kept] == [0, 128, 256]
    assert len(run.evaluations.read_text().splitlines()) == 3


def test_a_record_cut_short_by_a_killed_write(tmp_path: Path) -> None:
    """A run stopped while writing its last evaluation (killed, disk full) leaves a cut
    line: readers leave it out with a warning; a broken line before the last is an error
    naming the file and line."""
    from hpcgym.evaluation.cards import read_evaluations, validation_curve

    run = RunDir(tmp_path)
    for steps in (0, 128):
        run.append_evaluation({"timesteps": steps, "avg_bsld": 1.5})
    with open(run.evaluations, "a", encoding="utf-8") as fh:
        fh.write('{"timesteps": 256, "avg_bsld": 1.')  # the cut write
    with pytest.warns(UserWarning, match=r"evaluations.jsonl:3: left out a record cut short"):
        assert [r["timesteps"] for r in read_evaluations(run.evaluations)] == [0, 128]
    with pytest.warns(UserWarning):
        assert [r["timesteps"] for r in validation_curve(tmp_path)] == [0, 128]
    with pytest.warns(UserWarning):
        assert [r["timesteps"] for r in run.evaluations_until(10**9)] == [0, 128]
    assert len(run.evaluations.read_text().splitlines()) == 2  # the cut line is gone
    text = run.evaluations.read_text()
    run.evaluations.write_text('{"timesteps": 0\n' + text)
    with pytest.raises(ValueError, match=r"evaluations.jsonl:1: not a JSON record"):
        read_evaluations(run.evaluations)


def test_training_never_reads_the_test_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13: training episodes use the train split, evaluation, best model and the
    summary the validation split; any request of the test split fails the run."""
    import hpcgym.workload as workload
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.workload import sequences

    def refuse(split: str) -> None:
        if split == "test":
            raise AssertionError("training read the test split")

    real_range = sequences.split_range

    def split_range(n_jobs: int, split: str = "train", *args: object, **kw: object) -> object:
        refuse(split)
        return real_range(n_jobs, split, *args, **kw)

    real_sampler = sequences.WindowSampler.__init__

    def sampler_init(self: object, n_jobs: int, length: int, split: str = "train", *a, **kw):  # type: ignore[no-untyped-def]
        refuse(split)
        real_sampler(self, n_jobs, length, split, *a, **kw)

    real_env = BackfillEnv.__init__

    def env_init(self: object, *args: object, **kw: object) -> None:
        refuse(str(kw.get("split", "train")))
        real_env(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(sequences, "split_range", split_range)
    monkeypatch.setattr(workload, "split_range", split_range)
    monkeypatch.setattr(sequences.WindowSampler, "__init__", sampler_init)
    monkeypatch.setattr(BackfillEnv, "__init__", env_init)
    out = _run(tmp_path, "--total-steps", "256", "--eval-every", "1")
    assert out["eval"]["split"] == "validation" and out["timesteps"] == 256
    lo, hi = real_range(out["jobs"], "validation", 0.7)
    assert all(lo <= s and s + 64 <= hi for s in out["eval"]["starts"])
    with pytest.raises(ConfigError, match="never evaluates on the test split"):
        TrainConfig.create(eval_split="test")


# --------------------------------------------------------------------------- --seeds
def test_seeds_trains_one_run_per_seed_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--seeds 1 2``: one normal run per seed in <run>/seed-<s>, seeds.json with the
    mean and spread across seeds; ``--resume <run>`` continues unfinished seeds only
    (and every seed when a new length is given)."""
    import shutil

    from train.seeds import SEEDS_FILE, spread

    res = _run(tmp_path, "--total-steps", "128", "--seeds", "1", "2", name="multi")
    root = tmp_path / "multi"
    for s in (1, 2):
        cfg = json.loads((root / f"seed-{s}" / "config.json").read_text())
        assert cfg["seed"] == s and cfg["run_name"] == f"seed-{s}"
        assert (root / f"seed-{s}" / "final_model.zip").is_file()
    assert json.loads((root / SEEDS_FILE).read_text()) == json.loads(json.dumps(res))
    assert [r["status"] for r in res["runs"]] == ["finished", "finished"]
    assert res["reference"] == "EASY-SJBF"
    ratios = [r["paired"]["geo_ratio"] for r in res["runs"]]
    assert res["across"]["geo_ratio"] == spread(ratios)
    assert res["across"]["geo_ratio"]["n"] == 2
    assert res["across"]["avg_bsld"]["mean"] == pytest.approx(
        np.mean([r["avg_bsld"] for r in res["runs"]])
    )
    out = capsys.readouterr().out
    assert "geo-mean ratio vs EASY-SJBF: mean" in out and "std" in out

    # seed 2 lost: resuming trains it and leaves the finished seed 1 alone
    shutil.rmtree(root / "seed-2")
    again = main(["--resume", str(root), "--no-progress"])
    s1 = json.loads((root / "seed-1" / "summary.json").read_text())
    assert len(s1["sessions"]) == 1
    assert [r["timesteps"] for r in again["runs"]] == [128, 128]
    # a new length continues every seed
    longer = main(["--resume", str(root), "--total-steps", "256", "--no-progress"])
    assert [r["timesteps"] for r in longer["runs"]] == [256, 256]
    # nothing to do: resuming says how to continue
    capsys.readouterr()
    main(["--resume", str(root), "--no-progress"])
    assert "every seed of" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:  # the folder holds a run
        _run(tmp_path, "--total-steps", "128", "--seeds", "1", "2", name="multi")
    assert exc.value.code == 2
    # a seed killed before its first checkpoint: resuming says what to do
    shutil.rmtree(root / "seed-2" / "checkpoints")
    (root / "seed-2" / "final_model.zip").unlink()
    with pytest.raises(SystemExit) as exc:
        main(["--resume", str(root), "--no-progress"])
    assert exc.value.code == 2
    assert f"delete {root / 'seed-2'} to train it anew" in capsys.readouterr().err


def test_seeds_stopped_on_their_time_limit_continue_with_a_new_time_limit(
    tmp_path: Path,
) -> None:
    """A seeds run whose seeds stopped on ``--time-limit`` continues when ``--resume`` gives
    a new ``--time-limit`` (like one run), and only then."""
    from train.seeds import seed_status

    root = tmp_path / "multi"
    _run(tmp_path, "--total-steps", "100000", "--time-limit", "0.02", "--seeds", "1", "2",
         name="multi")  # fmt: skip
    steps = []
    for s in (1, 2):
        run = RunDir(root / f"seed-{s}")
        summary = json.loads(run.summary.read_text())
        assert summary["sessions"][-1]["stop_reason"] == "time limit"
        assert seed_status(run) == "finished"
        steps.append(summary["timesteps"])
    same = main(["--resume", str(root), "--no-progress"])
    assert [r["timesteps"] for r in same["runs"]] == steps
    more = main(["--resume", str(root), "--time-limit", "0.02", "--no-progress"])
    for s, r in zip((1, 2), more["runs"], strict=True):
        sessions = json.loads((root / f"seed-{s}" / "summary.json").read_text())["sessions"]
        assert len(sessions) == 2 and r["timesteps"] > steps[s - 1]


def test_seed_status_and_spread(tmp_path: Path) -> None:
    from train.seeds import seed_status, spread

    run = RunDir(tmp_path / "seed-0")
    assert seed_status(run) == "not started"
    run.path.mkdir()
    run.config.write_text("{}")
    assert seed_status(run) == "unfinished"  # killed before any summary
    run.summary.write_text(json.dumps({"sessions": [{"stop_reason": "SIGTERM"}]}))
    assert seed_status(run) == "unfinished"
    run.summary.write_text(json.dumps({"sessions": [{"stop_reason": "time limit"}]}))
    run.final_model.write_bytes(b"")
    assert seed_status(run) == "finished"
    assert spread([]) is None and spread([None, math.nan]) is None
    assert spread([2.0]) == {"mean": 2.0, "std": 0.0, "min": 2.0, "max": 2.0, "n": 1}
    s = spread([1.0, 3.0, None])
    assert s == {"mean": 2.0, "std": pytest.approx(math.sqrt(2)), "min": 1.0, "max": 3.0, "n": 2}


def test_interrupted_seed_says_to_resume_the_seeds_run(tmp_path: Path) -> None:
    from train.session import Interrupted

    exc = Interrupted(RunDir(tmp_path / "seed-1"), 128, "SIGTERM").continue_with(tmp_path)
    assert str(exc).endswith(f"continue with --resume {tmp_path}")
    assert exc.exit_status == 143
