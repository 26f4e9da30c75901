"""Ray beyond one machine: eval/compare.py --backend ray, train/sweep.py, examples/rllib_ppo.py.

How the test command exercises Ray (docs/scaling.md, "Testing"):

* ``ray[tune]`` is in the ``dev`` extra (it pins no gymnasium), so the Ray backend of
  compare and a real two-trial sweep (with ``--resume``) run on an embedded local Ray in
  every test run, each in a subprocess as a user runs them;
* RLlib (``ray[rllib]`` pins gymnasium 1.2.2, the venv may have a newer one) runs from a
  cached overlay: the packages RLlib adds to this venv, installed once with ``pip install
  --no-deps --target`` (about 30 s, no torch, reused afterwards; folder
  ``$HPCGYM_RLLIB_OVERLAY`` or ``~/.cache/hpcgym/``) and put first on ``PYTHONPATH`` of a
  subprocess, so hpcgym is also tested on RLlib's gymnasium. The test skips, saying why,
  when the package index is unreachable;
* every script's ``--help`` and its one-line error are checked with Ray hidden.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
RAY_VERSION = "2.60.0"
RLLIB_GYMNASIUM = "1.2.2"
SCRIPTS = ("train/sweep.py", "examples/rllib_ppo.py", "eval/compare.py")


def _run(
    args: list[str], *, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _has_ray() -> bool:
    try:
        import ray  # noqa: F401
        import ray.tune  # noqa: F401
    except ImportError:
        return False
    return True


needs_ray = pytest.mark.skipif(
    not _has_ray(), reason='Ray Tune not installed (pip install -e ".[ray]")'
)


# --------------------------------------------------------------------------- without Ray
@pytest.fixture(scope="module")
def no_ray(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An env whose ``import ray`` fails (a stub package first on PYTHONPATH)."""
    stub = tmp_path_factory.mktemp("noray")
    (stub / "ray").mkdir()
    (stub / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    return {"PYTHONPATH": os.pathsep.join([str(stub), str(REPO)])}


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_without_ray(script: str, no_ray: dict[str, str]) -> None:
    proc = _run([script, "--help"], env=no_ray, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--address" in proc.stdout
    assert "embedded local Ray" in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["train/sweep.py", "--split", "test"],
        ["examples/rllib_ppo.py"],
        ["eval/compare.py", "--schedulers", "EASY", "--windows", "1", "--length", "64"]
        + ["--backend", "ray", "--no-plots"],
    ],
    ids=["sweep", "rllib", "compare"],
)
def test_missing_ray_is_one_line_error(args: list[str], no_ray: dict[str, str]) -> None:
    proc = _run(args, env=no_ray, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install -e ".[ray]"' in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_address_needs_ray_backend() -> None:
    proc = _run(["eval/compare.py", "--schedulers", "EASY", "--address", "auto"], timeout=120)
    assert proc.returncode == 2 and "--address needs --backend ray" in proc.stderr


# --------------------------------------------------------------------------- compare
def _compare(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    model = REPO / "agents" / "pretrained" / "lublin1-fcfs.zip"
    args = ["eval/compare.py", "--schedulers", "EASY", "EASY-SJBF", "--agents", "easy"]
    args += ["random", f"model={model}", "--windows", "3", "--length", "128", "--split"]
    args += ["all", "--jobs", "2", "--no-plots", "--no-progress", "--out", str(out), *extra]
    return _run(args)


@needs_ray
def test_compare_ray_backend_equals_local(tmp_path: Path) -> None:
    """Schedulers, heuristic agents and a trained model (the agent loader reaches the Ray
    workers) give byte-identical results on both backends."""
    local = _compare(tmp_path / "local")
    assert local.returncode == 0, local.stderr
    ray = _compare(tmp_path / "ray", "--backend", "ray")
    assert ray.returncode == 0, ray.stderr
    for name in ("results.json", "summary.csv", "windows.csv"):
        a = (tmp_path / "local" / name).read_text()
        b = (tmp_path / "ray" / name).read_text()
        assert a == b, name
    result = json.loads((tmp_path / "ray" / "results.json").read_text())
    methods = {m["label"] for m in result["methods"]}
    assert {"EASY", "EASY-SJBF", "model"} <= methods


def test_parallel_map_rejects_unknown_backend() -> None:
    from hpcgym.evaluation.runner import parallel_map

    with pytest.raises(ValueError, match="unknown backend"):
        parallel_map(abs, [1], backend="dask", progress=False)


# --------------------------------------------------------------------------- sweep
def _split() -> str:
    from hpcgym.workload import SPLITS

    return "validation" if "validation" in SPLITS else "test"


TINY_TRAIN = [
    "--seq-len", "32", "--eval-windows", "2", "--eval-length", "64", "--n-steps", "128",
    "--total-steps", "256", "--n-epochs", "2", "--baselines", "EASY-SJBF",
    "--calib-windows", "2",
]  # fmt: skip


@needs_ray
def test_sweep_two_trials_and_resume(tmp_path: Path) -> None:
    """A real sweep on an embedded local Ray: 2 seeds x 1 learning rate of the synthetic
    trace, a few hundred steps each; results table with the paired ratio; TensorBoard
    events of Tune and of the trainer; --resume of the finished sweep keeps the results."""
    args = ["train/sweep.py", "--seeds", "0", "1", "--grid", "learning-rate=1e-3"]
    args += ["--split", _split(), "--val-windows", "2", "--val-length", "64"]
    args += ["--storage", str(tmp_path), "--name", "s", "--num-cpus", "2"]
    proc = _run([*args, "--", *TINY_TRAIN])
    assert proc.returncode == 0, proc.stderr[-3000:]
    exp = tmp_path / "s"
    rows = list(csv.DictReader((exp / "results.csv").open()))
    assert sorted(r["seed"] for r in rows) == ["0", "1"]
    for r in rows:
        assert r["status"] == "ok" and r["params"] == "learning_rate=0.001"
        assert int(r["timesteps"]) >= 256 and r["windows"] == "2"
        assert float(r["ci_low"]) <= float(r["geo_ratio"]) <= float(r["ci_high"])
        trial = Path(r["trial_dir"])
        assert list(trial.glob("events.out.tfevents.*")), "Tune's TensorBoard events"
        run = trial / "train"
        assert list(run.glob("events.out.tfevents.*")), "the trainer's TensorBoard events"
        summary = json.loads((run / "summary.json").read_text())
        assert summary["args"]["learning_rate"] == 1e-3
    assert "geo ratio" in (exp / "results.md").read_text()
    again = _run(["train/sweep.py", "--resume", "--storage", str(tmp_path), "--name", "s"])
    assert again.returncode == 0, again.stderr[-3000:]
    assert list(csv.DictReader((exp / "results.csv").open())) == rows


def _documented_sweep() -> list[str]:
    """The first sweep command of docs/scaling.md (one line), as arguments."""
    lines = (REPO / "docs" / "scaling.md").read_text(encoding="utf-8").splitlines()
    (line,) = [x for x in lines if x.startswith("python train/sweep.py --traces synthetic --")]
    return line.split()[1:]


@needs_ray
def test_documented_sweep_on_the_default_workload(tmp_path: Path) -> None:
    """The documented first sweep, verbatim, on the embedded default workload with all its
    default splits and windows (4 trials of 20,000 steps, about 35 s on 2 cores): every
    trial finishes and is compared."""
    args = _documented_sweep()
    cut = args.index("--")
    args[cut:cut] = ["--storage", str(tmp_path), "--name", "doc"]
    proc = _run(args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = list(csv.DictReader((tmp_path / "doc" / "results.csv").open()))
    got = sorted((r["seed"], r["params"]) for r in rows)
    lrs = ("learning_rate=0.0001", "learning_rate=0.0003")
    assert got == sorted((s, p) for s in ("0", "1") for p in lrs)
    for r in rows:
        assert r["status"] == "ok" and not r["error"], r
        assert int(r["timesteps"]) >= 20000 and r["windows"] == "10"
        assert float(r["ci_low"]) <= float(r["geo_ratio"]) <= float(r["ci_high"])
        summary = json.loads((Path(r["trial_dir"]) / "train" / "summary.json").read_text())
        # the fast preset's evaluation: 30 non-overlapping validation windows of 256 jobs
        evaluation = summary["eval"]
        assert evaluation["split"] == "validation" and evaluation["length"] == 256
        starts = sorted(evaluation["starts"])
        assert len(starts) == 30 and all(
            b - a >= 256 for a, b in zip(starts, starts[1:], strict=False)
        )


@needs_ray
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--grid", "nope=1,2"], "not an option of train/ppo.py"),
        (["--grid", "seed=1,2"], "the sweep sets seed itself"),
        (["--grid", "learning-rate=-1"], "bad value"),
        (["--resume", "--name", "missing"], "no sweep to continue"),
        (["--", "--seed", "3"], "the sweep sets seed itself"),
        (["--resume"], "give --name"),
        (["--resume", "--name", "x", "--grid", "n-epochs=2"], "no --grid"),
    ],
)
def test_sweep_bad_input_is_one_line_error(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before Ray starts: exit status 2, one line."""
    sweep = _import("train.sweep")
    with pytest.raises(SystemExit) as exc:
        sweep.main(["--split", "test", "--storage", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def _import(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


def test_sweep_parse_grid() -> None:
    parse_grid = _import("train.sweep").parse_grid

    assert parse_grid("learning-rate=1e-4,3e-4") == ("learning_rate", [1e-4, 3e-4])
    assert parse_grid("kernel_arch=32,16;64") == ("kernel_arch", [[32, 16], [64]])
    with pytest.raises(ValueError, match="NAME="):
        parse_grid("learning-rate")


@pytest.mark.parametrize(
    "after, n_envs",
    [
        ([], 3),  # the paper's defaults: one env per CPU of the trial
        (["--preset", "fast"], None),  # the preset's 64 native envs, not 3
        (["--preset", "fast", "--n-envs", "4"], 4),
        (["--n-envs", "5"], 5),
    ],
)
def test_sweep_cpus_per_trial_is_n_envs_unless_set(after: list[str], n_envs: int | None) -> None:
    """--cpus-per-trial gives the trial's --n-envs only where neither the options after --
    nor their preset set one, and the trial's config then has the preset's value."""
    sweep = _import("train.sweep")
    config = _import("train.config")
    args = sweep.build_parser().parse_args(["--cpus-per-trial", "3"])
    options = sweep._base_options(args, after)
    assert options.get("n_envs") == n_envs
    cfg = config.TrainConfig.create(**options, trace="synthetic")
    assert cfg.n_envs == (config.PRESETS["fast"]["n_envs"] if n_envs is None else n_envs)


# --------------------------------------------------------------------------- RLlib
def _overlay() -> Path:
    """The cached folder of the packages ``ray[rllib]`` adds to this venv (pinned to
    RLlib's gymnasium); built on first use, or skip if the index is unreachable."""
    root = os.environ.get("HPCGYM_RLLIB_OVERLAY")
    base = Path(root) if root else Path.home() / ".cache" / "hpcgym"
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    tag = f"rllib-{RAY_VERSION}-gymnasium-{RLLIB_GYMNASIUM}-{py}"
    overlay = base / tag
    if (overlay / ".complete").is_file():
        return overlay
    import ray

    if ray.__version__ != RAY_VERSION:
        pytest.skip(
            f"the RLlib overlay is pinned to ray {RAY_VERSION}, the venv has {ray.__version__}"
        )
    report = base / f"{tag}.report.json"
    base.mkdir(parents=True, exist_ok=True)
    wanted = [f"ray[rllib]=={RAY_VERSION}", f"gymnasium=={RLLIB_GYMNASIUM}"]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    dry = subprocess.run(
        [*pip, "install", "--dry-run", "--quiet", "--report", str(report), *wanted],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if dry.returncode != 0:
        pytest.skip(
            f"cannot resolve ray[rllib] (package index unreachable?): {_last_line(dry.stderr)}"
        )
    pins = [
        f"{p['metadata']['name']}=={p['metadata']['version']}"
        for p in json.loads(report.read_text())["install"]
    ]
    if any(p.split("==")[0].lower() in ("torch", "ray") for p in pins):
        pytest.skip(
            f"the overlay would install {pins}: ray {RAY_VERSION} and torch belong in the venv"
        )
    tmp = overlay.with_suffix(".partial")
    inst = subprocess.run(
        [*pip, "install", "--quiet", "--no-deps", "--target", str(tmp), *pins],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if inst.returncode != 0:
        pytest.skip(
            "cannot install the RLlib overlay (package index unreachable?): "
            + _last_line(inst.stderr)
        )
    (tmp / ".complete").write_text("\n".join(pins) + "\n")
    if overlay.exists():
        import shutil

        shutil.rmtree(overlay)
    tmp.rename(overlay)
    return overlay


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


@needs_ray
def test_rllib_ppo_tiny_run_on_rllib_gymnasium(tmp_path: Path) -> None:
    """examples/rllib_ppo.py --help and a tiny real run (2 iterations, one remote env runner)
    with RLlib's own gymnasium, then the greedy agent on 2 validation windows."""
    overlay = _overlay()
    env = {"PYTHONPATH": os.pathsep.join([str(overlay), str(REPO)])}
    helped = _run(["examples/rllib_ppo.py", "--help"], env=env, timeout=120)
    assert helped.returncode == 0 and "--address" in helped.stdout
    args = ["examples/rllib_ppo.py", "--iterations", "2", "--train-batch-size", "256"]
    args += ["--minibatch-size", "64", "--num-epochs", "2", "--length", "64"]
    args += ["--max-queue", "16", "--hidden", "32,32", "--eval-windows", "2"]
    args += ["--eval-length", "128", "--num-cpus", "2", "--env-runners", "1"]
    proc = _run([*args, "--out", str(tmp_path)], env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["versions"]["gymnasium"] == RLLIB_GYMNASIUM
    assert [h["iteration"] for h in res["history"]] == [1, 2]
    assert res["history"][-1]["steps"] >= 512
    ev = res["evaluation"]
    assert len(ev["agent"]) == 2 and ev["ci"][0] <= ev["geo_ratio"] <= ev["ci"][1]
    assert (tmp_path / "checkpoint").is_dir()


CHECK_ENV = """
import gymnasium as gym
from gymnasium.utils.env_checker import check_env
import hpcgym  # noqa: F401
env = gym.make("hpcgym/Backfill-v0", window_length=64, max_queue=16)
check_env(env.unwrapped)
check_env(env)
mask = env.get_wrapper_attr("action_masks")()
print(gym.__version__, mask.shape)
"""


@needs_ray
def test_env_checker_on_rllib_gymnasium() -> None:
    """The default env passes Gymnasium's checker on RLlib's (older) gymnasium too."""
    overlay = _overlay()
    env = {"PYTHONPATH": os.pathsep.join([str(overlay), str(REPO)])}
    proc = _run(["-c", CHECK_ENV], env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == RLLIB_GYMNASIUM
