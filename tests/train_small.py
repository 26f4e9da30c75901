"""Small training settings shared by the tests of ``train/ppo.py`` (tiny runs on the
embedded synthetic workload: 32-job episodes, 2 evaluation windows of 64 jobs, a few
hundred steps). Import it from a test as ``from train_small import SMALL, run_small``
(pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

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


def run_small(tmp_path: Path, *extra: str, name: str = "r") -> dict:
    """``train/ppo.py`` with :data:`SMALL` settings, logging into ``tmp_path/name``."""
    from train.ppo import main

    return main([*SMALL, "--logdir", str(tmp_path), "--run-name", name, *extra])
