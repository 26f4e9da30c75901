"""Every package of the library is in the layers contract (pyproject.toml's
``[tool.importlinter]``, checked by ``lint-imports`` in tests/test_architecture.py).

import-linter checks only the packages a contract names: a new sub-package of ``hpcgym``
missing from the ``layers`` contract could import anything. Here every sub-package must
be a layer (or a part of one: ``"a | b"`` and ``"a : b"`` are layers of several
packages), and every layer must name a package that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _layers() -> list[str]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in cfg["contracts"] if c["id"] == "layers"]
    assert layers["type"] == "layers"
    names: list[str] = []
    for layer in layers["layers"]:
        names += [n.strip().strip("()") for n in re.split(r"[|:]", layer) if n.strip()]
    return names


def _subpackages() -> set[str]:
    return {f"hpcgym.{p.parent.name}" for p in (REPO / "hpcgym").glob("*/__init__.py")}


def test_every_subpackage_of_the_library_is_a_layer() -> None:
    named = set(_layers())
    missing = sorted(_subpackages() - named)
    assert not missing, (
        f"hpcgym packages outside the layers contract (pyproject.toml): {missing}; "
        "add each to the layer it belongs to (docs/architecture.md)"
    )


def test_every_layer_names_a_package_that_exists() -> None:
    stale = [
        n
        for n in _layers()
        if not (REPO / n.replace(".", "/") / "__init__.py").is_file()
        and not (REPO / (n.replace(".", "/") + ".py")).is_file()
    ]
    assert not stale, f"the layers contract names packages that do not exist: {stale}"


def test_no_package_is_two_layers() -> None:
    names = _layers()
    assert len(names) == len(set(names)), names
