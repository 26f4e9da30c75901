"""The layout of the evaluation: the harness (``hpcgym.evaluation``), the zoo
(``hpcgym.zoo``) and the paper reproduction (``hpcgym.paper``) without an import circle; the
old module paths still answer (with a FutureWarning); and the library reads a training run
through the card its trainer writes (``card.json``,
:data:`hpcgym.evaluation.cards.RUN_CARD_FILE`), never through the trainer's own files: no
code of ``hpcgym/`` names them (docstrings may say where they come from)."""

from __future__ import annotations

import ast
import subprocess
import sys
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


PACKAGES = ("hpcgym.evaluation", "hpcgym.zoo", "hpcgym.paper")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_among_the_evaluation_modules() -> None:
    """Run-time imports (function-level ones included, annotations left out): no circle
    among the modules of the harness, the zoo and the paper reproduction (the same rule as
    the ``evaluation-acyclic`` import contract of pyproject.toml)."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("hpcgym", cache_dir=None, exclude_type_checking_imports=True)
    mods = {m for m in graph.modules if m.startswith(PACKAGES)}
    edges = {m: set(graph.find_modules_directly_imported_by(m)) & mods for m in mods}
    assert _cycles(edges) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_old_module_paths_answer_with_the_new_modules() -> None:
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import hpcgym.evaluation, hpcgym.zoo.heldout, hpcgym.paper.table4\n"
        "for old, new in [('hpcgym.evaluation.heldout', 'hpcgym.zoo.heldout'),\n"
        "                 ('hpcgym.evaluation.paper.table4', 'hpcgym.paper.table4')]:\n"
        "    try:\n"
        "        __import__(old)\n"
        "        raise SystemExit(old + ' did not warn')\n"
        "    except FutureWarning as w:\n"
        "        assert 'moved to hpcgym.' in str(w), w\n"
        "    warnings.simplefilter('ignore')\n"
        "    __import__(old)\n"
        "    assert sys.modules[old] is sys.modules[new], old\n"
        "    warnings.simplefilter('error')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO / "tests")
