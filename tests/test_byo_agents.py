"""Bring your own agent: stock SB3 / sb3-contrib models of any policy class, agent objects
and callables are evaluated in the env of their task, on the heuristics' windows.

The models are trained here, on the synthetic workload, with the stock ``MlpPolicy`` (a
few hundred steps: what is tested is that they load and play, not that they learned).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import hpcgym  # noqa: F401 - registers the envs
from hpcgym import evaluation as E
from hpcgym.cli import main as hpcgym_main
from hpcgym.envs import BackfillEnv, ScheduleEnv
from hpcgym.evaluation.loaders import read_sb3_zip, task_of_spaces
from hpcgym.workload import load

pytestmark = pytest.mark.usefixtures("one_torch_thread")

sb3_contrib = pytest.importorskip("sb3_contrib")
torch = pytest.importorskip("torch")

LENGTH = 96  # jobs per evaluation window


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Stock ``MaskablePPO("MlpPolicy")`` on Schedule-v0 and Backfill-v0, and a stock
    ``PPO("MlpPolicy")`` (no action masks) on Schedule-v0, saved as a user would."""
    from stable_baselines3 import PPO

    out = tmp_path_factory.mktemp("models")
    paths: dict[str, Path] = {}
    for task in ("Schedule", "Backfill"):
        env = gym.make(f"hpcgym/{task}-v0", trace="synthetic", window_length=64)
        model = sb3_contrib.MaskablePPO(
            "MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu"
        )
        model.learn(256)
        paths[task.lower()] = out / f"{task.lower()}_mppo.zip"
        model.save(paths[task.lower()])
    env = gym.make("hpcgym/Schedule-v0", trace="synthetic", window_length=64)
    ppo = PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    ppo.learn(64)
    paths["ppo"] = out / "schedule_ppo.zip"
    ppo.save(paths["ppo"])
    return paths


@pytest.fixture(scope="module")
def setting() -> tuple[Any, E.WindowSet]:
    wl = load("synthetic")
    return wl, E.select_windows(len(wl), length=LENGTH, count=3, split="test", seed=1)


def _direct(env_cls: Any, wl: Any, agent: Any, windows: E.WindowSet, **kw: Any) -> list[float]:
    """The agent played by hand, in the env the user trained it in (no runner)."""
    env = env_cls(trace=wl, window_length=windows.length, split="all", reference=None, **kw)
    return [r["avg_bsld"] for r in E.play_windows(env, agent, windows.starts)]


def test_zip_says_its_task(models: dict[str, Path]) -> None:
    sched, back = read_sb3_zip(models["schedule"]), read_sb3_zip(models["backfill"])
    assert sched.policy_name == "MaskableActorCriticPolicy"
    assert sched.policy_module == "sb3_contrib.common.maskable.policies"
    assert read_sb3_zip(models["ppo"]).policy_name == "ActorCriticPolicy"
    assert task_of_spaces(sched, None) == "schedule"
    assert task_of_spaces(back, None) == "backfill"
    with pytest.raises(ValueError, match=r"Box\(128, 16\) -> Discrete\(128\).*schedule task"):
        task_of_spaces(sched, None, task="backfill")
    with pytest.raises(ValueError, match="not a Stable-Baselines3 model"):
        read_sb3_zip(Path(__file__))


def test_loader_uses_the_zips_algorithm(models: dict[str, Path]) -> None:
    from stable_baselines3 import PPO

    from hpcgym_agents import load_agent

    assert type(load_agent(str(models["schedule"]))) is sb3_contrib.MaskablePPO
    assert type(load_agent(str(models["backfill"]))) is sb3_contrib.MaskablePPO
    assert type(load_agent(str(models["ppo"]))) is PPO


@pytest.mark.parametrize("task", ["schedule", "backfill"])
def test_python_recipe_stock_maskable_ppo(
    models: dict[str, Path], setting: tuple[Any, E.WindowSet], task: str
) -> None:
    wl, windows = setting
    model = sb3_contrib.MaskablePPO.load(models[task], device="cpu")
    methods = [E.scheduler_method("EASY-SJBF"), E.agent_method(model, label="mine")]
    res = E.evaluate(wl, methods, windows, jobs=1, progress=False, ratio_reference="EASY-SJBF")
    assert methods[1].task == task
    env_cls = ScheduleEnv if task == "schedule" else BackfillEnv
    assert res.per_window("avg_bsld")["mine"] == _direct(env_cls, wl, model, windows)
    mine = next(r for r in res.summary() if r["method"] == "mine")
    assert mine["geo_ratio"] > 0 and mine["ci_low"] <= mine["geo_ratio"] <= mine["ci_high"]
    # the same model by path, through the agent loader, in worker processes
    by_path = E.agent_method(str(models[task]))
    res2 = E.evaluate(wl, [by_path], windows, jobs=2, progress=False)
    assert res2.per_window("avg_bsld")[by_path.label] == res.per_window("avg_bsld")["mine"]


def test_cli_compare_stock_model(
    models: dict[str, Path], setting: tuple[Any, E.WindowSet], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    wl, windows = setting
    argv = ["compare", "--starts", *map(str, windows.starts), "--length", str(LENGTH)]
    argv += ["--schedulers", "EASY-SJBF", "--json"]
    assert hpcgym_main([*argv, "--agents", f"mine={models['schedule']}", "--task", "schedule"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    got = [r["avg_bsld"] for r in rows if r["scheduler"] == "mine"]
    model = sb3_contrib.MaskablePPO.load(models["schedule"], device="cpu")
    assert got == _direct(ScheduleEnv, wl, model, windows)
    # the task read from the spaces; a stated task that the spaces contradict
    assert hpcgym_main([*argv, "--agents", str(models["backfill"]), str(models["ppo"])]) == 0
    capsys.readouterr()
    assert hpcgym_main([*argv, "--agents", str(models["backfill"]), "--task", "schedule"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "Box(128, 12) -> Discrete(129)" in err and "backfill task" in err


def test_callable_rules(setting: tuple[Any, E.WindowSet]) -> None:
    wl, windows = setting

    def row_zero(obs: np.ndarray, info: dict[str, Any]) -> int:
        return 0

    def stop(obs: np.ndarray, info: dict[str, Any]) -> int:
        return len(info["action_mask"]) - 1

    order = ScheduleEnv(trace=wl, window_length=LENGTH).order
    methods = [
        E.scheduler_method(f"{order}+EASY-SJBF"),
        E.agent_method(row_zero, task="schedule"),
        E.agent_method("stop"),
        E.agent_method(stop, task="backfill"),
    ]
    res = E.evaluate(wl, methods, windows, jobs=1, progress=False)
    pw = res.per_window("avg_bsld")
    # row 0 of Schedule-v0 is the env's queue order: the engine's scheduler exactly
    assert pw["row_zero"] == pw[methods[0].label]
    assert pw["stop"] == pw["StopAlways"]
    with pytest.raises(E.MethodUnavailable, match="task='schedule'"):
        E.agent_method(row_zero)
    with pytest.raises(E.MethodUnavailable, match="did you mean 'schedule'"):
        E.agent_method(row_zero, task="schedul")


class CleanRLAgent(torch.nn.Module):
    """A CleanRL-style actor-critic over the queue rows (a score per row, masked)."""

    def __init__(self, n_features: int) -> None:
        super().__init__()
        self.actor = torch.nn.Sequential(
            torch.nn.Linear(n_features, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)
        )
        self.critic = torch.nn.Linear(n_features, 1)

    def get_action(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = self.actor(obs).squeeze(-1).masked_fill(~mask, -1e8)
        return logits.argmax(-1)


def test_cleanrl_module_as_callable(setting: tuple[Any, E.WindowSet]) -> None:
    wl, windows = setting
    torch.manual_seed(0)
    net = CleanRLAgent(16)

    def cleanrl_agent(obs: np.ndarray, info: dict[str, Any]) -> int:
        with torch.no_grad():
            o = torch.as_tensor(obs, dtype=torch.float32)[None]
            m = torch.as_tensor(info["action_mask"], dtype=torch.bool)[None]
            return int(net.get_action(o, m)[0])

    method = E.agent_method(cleanrl_agent, task="schedule")
    res = E.evaluate(wl, [method], windows, jobs=1, progress=False)
    assert res.per_window("avg_bsld")["cleanrl_agent"] == _direct(
        ScheduleEnv, wl, cleanrl_agent, windows
    )
    assert method.to_dict()["spec"] == "python:cleanrl_agent"


def test_unknown_agent_did_you_mean() -> None:
    with pytest.raises(E.MethodUnavailable, match="did you mean 'sdsc-sp2-fcfs'"):
        E.agent_method("sdsc-sp2-fcf")
    with pytest.raises(E.MethodUnavailable, match="did you mean 'easy'"):
        E.agent_method("eassy")


def test_script_without_main_guard_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "evaluate.py"
    script.write_text(
        "from hpcgym import evaluation as E\n"
        "from hpcgym.workload import load\n"
        "wl = load()\n"
        "ws = E.select_windows(len(wl), length=32, count=2, split='test', seed=1)\n"
        "E.evaluate(wl, [E.scheduler_method('EASY')], ws, jobs=2, progress=False)\n",
        encoding="utf-8",
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert "line 5" in last and 'if __name__ == "__main__":' in last
    assert "BrokenPipeError" not in run.stderr


def test_eval_compare_task(
    models: dict[str, Path],
    setting: tuple[Any, E.WindowSet],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from eval import compare as eval_compare

    wl, windows = setting
    argv = ["--schedulers", "EASY-SJBF", "--starts", *map(str, windows.starts)]
    argv += ["--length", str(LENGTH), "--out", str(tmp_path), "--no-plots", "--json"]
    agents = ["--agents", f"ppo={models['ppo']}", "first", "--task", "schedule"]
    assert eval_compare.main([*argv, *agents]) == 0
    out = json.loads(capsys.readouterr().out)
    envs = {m["label"]: m["env"] for m in out["methods"] if m["kind"] == "agent"}
    assert envs["ppo"]["task"] == "schedule" and envs["schedule-FirstValid"]["task"] == "schedule"
    assert "--task schedule" in out["replay"]
    bad = [*argv, "--agents", str(models["schedule"]), "--task", "backfill"]
    assert eval_compare.main(bad) == 2
    assert "Box(128, 16) -> Discrete(128)" in capsys.readouterr().err
