"""The model zoo's pages (agents/pretrained/README.md and <name>.md) are what
``python eval/zoo.py`` renders from the cards: none is edited by hand or left stale."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

from eval.zoo import _train_command, main, zoo_pages  # noqa: E402
from hpcgym_agents import pretrained_agents, pretrained_dir  # noqa: E402


def test_the_zoo_pages_are_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0, capsys.readouterr().err


def test_the_readme_lists_every_agent_with_its_commands() -> None:
    pages = zoo_pages(pretrained_dir())
    readme = pages[pretrained_dir() / "README.md"]
    for name in pretrained_agents():
        assert f"| [{name}]({name}.md) |" in readme
        assert f"`python eval/heldout.py agents/pretrained/{name}.json --check`" in readme
        assert pretrained_dir() / f"{name}.md" in pages
    assert "| 0.603 [0.553, 0.658], better |" in readme  # lublin1-fcfs's recorded test


def test_a_stale_page_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    for f in pretrained_dir().glob("lublin1-fcfs.*"):
        shutil.copy(f, tmp_path / f.name)
    assert main(["--agents-dir", str(tmp_path), "--check"]) == 1
    assert "stale:" in capsys.readouterr().err
    assert main(["--agents-dir", str(tmp_path)]) == 0
    assert main(["--agents-dir", str(tmp_path), "--check"]) == 0
    assert main(["--agents-dir", str(tmp_path / "none")]) == 2


def test_output_options_leave_the_training_command() -> None:
    command = "python train/ppo.py --trace X --logdir /r --run-name s --no-progress --seed 3"
    card = {"training_command": command}
    assert _train_command(card) == "python train/ppo.py --trace X --seed 3"
    card = {"search": {"command": "python train/search.py --out=runs/a --ship --windows 8"}}
    assert _train_command(card) == "python train/search.py --windows 8"
