"""The documentation site builds with ``mkdocs build --strict``: no broken link, no missing
page, no docstring MkDocs cannot parse (the writing rules: docs/_ext/README.md).

Also the site's own build code: the docstring markup rewriting (docs/_ext/griffe_roles.py)
and the links of the pages that live outside docs/ (docs/_ext/hooks.py).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "docs" / "_ext"
SITE_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "griffe")


def _missing() -> list[str]:
    missing = []
    for name in SITE_PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


needs_mkdocs = pytest.mark.skipif(
    bool(_missing()),
    reason="the docs extra is not installed (pip install -e '.[docs]'): " + ", ".join(_missing()),
)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_site_{name}", EXT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_mkdocs
def test_site_builds_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    problems = [line for line in proc.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0 and not problems, "mkdocs build --strict failed:\n" + "\n".join(
        problems or proc.stderr.splitlines()[-30:]
    )
    for page in ("index.html", "api/sim/index.html", "zoo/index.html", "changelog/index.html"):
        assert (tmp_path / page).is_file(), f"the site has no {page}"
    api = (tmp_path / "api" / "sim" / "index.html").read_text(encoding="utf-8")
    assert "get_scheduler" in api and ":func:" not in api


@needs_mkdocs
def test_docstring_roles_become_crossrefs() -> None:
    roles = _load("griffe_roles")
    out = roles.convert("See :func:`hpcgym.sim.simulate` and :class:`~hpcgym.sim.Simulation`.")
    assert '<autoref identifier="hpcgym.sim.simulate" optional><code>' in out
    assert "<code>hpcgym.sim.simulate</code>" in out
    assert '<autoref identifier="hpcgym.sim.Simulation" optional><code>Simulation</code>' in out
    # not an object of the API and nothing to resolve it against: inline code, no link
    assert roles.convert(":data:`FOO`") == "<code>FOO</code>"
    assert roles.convert("as :math:`x^2`") == "as `x^2`"


@needs_mkdocs
def test_docstring_param_groups_and_tables() -> None:
    roles = _load("griffe_roles")
    out = roles.convert(":param a, b: two sizes\n    on two lines\n:param c: one")
    assert out.splitlines() == [
        ":param a: two sizes",
        "    on two lines",
        ":param b: two sizes",
        "    on two lines",
        ":param c: one",
    ]
    table = "\n".join(
        [
            "Intro:",
            "",
            "=====  =========",
            "name   rule",
            "=====  =========",
            "``a``  first part",
            "       continued",
            "``b``  second",
            "=====  =========",
            "",
            "After::",
        ]
    )
    assert roles.convert(table).splitlines() == [
        "Intro:",
        "",
        "| name | rule |",
        "|---|---|",
        "| ``a`` | first part continued |",
        "| ``b`` | second |",
        "",
        "After:",
    ]
    math = roles.convert(".. math:: a = b\n          + c\n\nnext")
    assert math.splitlines() == ["```text", "a = b", "+ c", "```", "", "next"]


@needs_mkdocs
def test_outside_pages_links() -> None:
    hooks = _load("hooks")
    zoo = "agents/pretrained/README.md"
    assert hooks._site_target(zoo, "zoo/index.md", "sdsc-sp2-fcfs.md") == "sdsc-sp2-fcfs.md"
    assert hooks._site_target(zoo, "zoo/index.md", "../../docs/env.md#modes") == "../env.md#modes"
    assert hooks._site_target(zoo, "zoo/index.md", "https://x.org/a") == "https://x.org/a"
    # a repository file outside the site stays as it is, so MkDocs reports it
    assert hooks._site_target(zoo, "zoo/index.md", "../../bench/a.py") == "../../bench/a.py"
    log = "CHANGELOG.md"
    assert hooks._site_target(log, "changelog.md", "docs/results.md") == "results.md"
    assert hooks._site_target(log, "changelog.md", "agents/pretrained/README.md") == (
        "zoo/index.md"
    )
