"""The scripts of the checkout (train/, eval/, bench/, research/, examples/) are packages:
nothing edits ``sys.path``; run by its path a script re-runs itself as its module
(``python train/ppo.py`` is ``python -m train.ppo``), from any folder; the scripts that
moved still run from their old paths, with a ``FutureWarning``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("hpcgym", "agents", "train", "eval", "bench", "research", "examples", "tests")


def test_no_code_edits_sys_path() -> None:
    edit = re.compile(r"sys\.path\.(insert|append|extend)|sys\.path\s*(\+=|=[^=])")
    bad = [
        f"{p.relative_to(REPO)}:{i}"
        for folder in FOLDERS
        for p in sorted((REPO / folder).rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if edit.search(line)
    ]
    assert not bad, bad


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_train_ppo_by_path_from_another_folder(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    by_path = _run(str(REPO / "train" / "ppo.py"), "--help", cwd=tmp_path)
    assert by_path.returncode == 0, by_path.stderr
    assert by_path.stdout.startswith("usage: python train/ppo.py")
    assert len(re.findall(r"^  -", by_path.stdout, flags=re.M)) <= 30
    bad = _run(str(REPO / "train" / "ppo.py"), "--set", "anchr_kl=1", cwd=tmp_path)
    assert bad.returncode == 2 and "did you mean anchor_kl?" in bad.stderr
    assert bad.stderr.count("\n") == 1


def test_moved_scripts_forward_with_a_future_warning(tmp_path: Path) -> None:
    pytest.importorskip("cma")
    old = _run(str(REPO / "train" / "search.py"), "--help", cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    assert "FutureWarning: train/search.py has moved: run `python -m research.search`" in (
        old.stderr
    )
    assert old.stdout.startswith("usage: python -m research.search")


def test_eval_card_forwards_to_train_card(tmp_path: Path) -> None:
    old = _run(str(REPO / "eval" / "card.py"), "--help", cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    assert "FutureWarning: eval/card.py has moved: run `python -m train.card`" in old.stderr
    assert old.stdout.startswith("usage: python -m train.card")
