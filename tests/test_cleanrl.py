"""examples/cleanrl_ppo.py: the single-file masked PPO runs, logs the shared tags, never
picks an invalid action and evaluates on validation windows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from examples import cleanrl_ppo as C

REPO = Path(__file__).resolve().parents[1]


def test_help() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "cleanrl_ppo.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--total-timesteps" in out.stdout and "--num-envs" in out.stdout


def test_bad_value_is_one_line_exit_2() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "cleanrl_ppo.py"), "--num-envs", "0"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--num-envs 0 is out of range" in out.stderr


def test_masked_actions_are_never_chosen() -> None:
    agent = C.KernelAgent(12)
    rng = np.random.default_rng(0)
    obs = rng.random((64, 16, 12), dtype=np.float32)
    mask = rng.random((64, 17)) < 0.3
    mask[:, 16] = True
    for det in (True, False):
        a, _ = agent.predict(obs, action_masks=mask, deterministic=det)
        assert mask[np.arange(64), a].all()
    logits, value = agent(torch.as_tensor(obs), torch.as_tensor(mask))
    assert logits.shape == (64, 17) and value.shape == (64,)
    assert (logits[torch.as_tensor(~mask)] == C.MASKED).all()


def test_short_real_run(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter  # noqa: F401 - needs tensorboard

    summary = C.main(
        [
            "--trace", "synthetic", "--num-envs", "4", "--num-steps", "64",
            "--total-timesteps", "512", "--eval-windows", "3", "--eval-length", "96",
            "--eval-every", "1", "--max-queue", "16", "--run-dir", str(tmp_path),
            "--run-name", "r",
        ]
    )  # fmt: skip
    run = tmp_path / "r"
    assert summary["steps"] == 512 and (run / "agent.pt").exists()
    saved = json.loads((run / "summary.json").read_text())
    assert set(saved["baselines"]) == {"EASY", "EASY-SJBF"}
    v = saved["validation"]
    assert v["ci_low"] <= v["geo_ratio"] <= v["ci_high"] and 0 <= v["wins"] <= 3
    from hpcgym.evaluation.plots import read_scalars

    tags = set(read_scalars(run))
    assert {"eval/avg_bsld", "eval/ratio_vs_EASY-SJBF", "eval/ratio_vs_EASY-SJBF_ci_low"} <= tags
    (folder,) = (tmp_path / "baselines").iterdir()  # the heuristics: runs of their own
    assert "eval/avg_bsld" in read_scalars(folder / "EASY-SJBF")
    assert "rollout/avg_bsld" in tags
