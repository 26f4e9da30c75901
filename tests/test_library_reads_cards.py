"""The library reads a training run through the card its trainer writes (``card.json``,
:data:`hpcgym.evaluation.cards.RUN_CARD_FILE`), never through the trainer's own files: no
code of ``hpcgym/`` names them (docstrings may say where they come from)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: the files a training run writes for itself (train/rundir.py, train/seeds.py, a search)
TRAINING_FILES = (
    "config.json",
    "summary.json",
    "best_model.json",
    "evaluations.jsonl",
    "seeds.json",
    "search.json",
)


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module's code (docstrings left out), with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                docs.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


@pytest.mark.parametrize("path", sorted((REPO / "hpcgym").rglob("*.py")), ids=str)
def test_no_training_file_in_library_code(path: Path) -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for line, text in _code_strings(path)
        for name in TRAINING_FILES
        if name in text
    ]
    assert not found, "the library reads the run's card, not: " + "; ".join(found)


def test_the_check_finds_a_training_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""Reads seeds.json (a docstring may say so)."""\nX = "run/seeds.json"\n')
    assert _code_strings(bad) == [(2, "run/seeds.json")]
