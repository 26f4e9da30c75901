"""The maintainer's tools: the unit / integration split of the tests (tests/conftest.py),
the README's test command (what CI runs) and the type checker's place in it.

* every test is marked ``unit`` or ``integration``; a new module is a unit module unless
  its tests say ``@pytest.mark.integration``; the lists of integration modules and tests
  name only modules and test functions that exist (a renamed test cannot silently move
  back into the fast subset);
* the markers are registered and ``--strict-markers`` is on (a typo in a marker fails);
* ``.ci/run`` runs exactly the README's test command, and that command runs the type
  checker (``mypy``, configured in pyproject.toml) before the whole test suite;
* the wheel declares its annotations (``hpcgym/py.typed``, PEP 561).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import INTEGRATION_MODULES, INTEGRATION_TESTS, is_integration

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _test_functions(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    return {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
    }


def test_listed_integration_modules_exist() -> None:
    missing = sorted(m for m in INTEGRATION_MODULES if not (TESTS / m).is_file())
    assert not missing, f"INTEGRATION_MODULES names modules that do not exist: {missing}"


def test_listed_integration_tests_exist() -> None:
    stale = []
    for entry in sorted(INTEGRATION_TESTS):
        module, _, name = entry.partition("::")
        path = TESTS / module
        if not path.is_file() or name not in _test_functions(path):
            stale.append(entry)
    assert not stale, f"INTEGRATION_TESTS names tests that do not exist: {stale}"


def test_no_module_is_listed_whole_and_by_test() -> None:
    both = sorted(t for t in INTEGRATION_TESTS if t.partition("::")[0] in INTEGRATION_MODULES)
    assert not both, f"listed as a whole module already: {both}"


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name


def _item(module: str, name: str, *marks: str) -> SimpleNamespace:
    """A stand-in for a collected test: its file, its function name, its markers."""
    return SimpleNamespace(
        path=TESTS / module,
        name=f"{name}[p0]",
        originalname=name,
        get_closest_marker=lambda m: _Marker(m) if m in marks else None,
    )


def test_a_new_module_is_unit_unless_its_tests_say_integration() -> None:
    assert not is_integration(_item("test_brand_new.py", "test_something"))
    assert is_integration(_item("test_brand_new.py", "test_something", "integration"))
    assert is_integration(_item("test_brand_new.py", "test_whole_trace", "traces"))
    assert is_integration(_item("test_brand_new.py", "test_long", "slow"))


def test_listed_modules_and_tests_are_integration() -> None:
    module = sorted(INTEGRATION_MODULES)[0]
    assert is_integration(_item(module, "test_anything"))
    entry = sorted(INTEGRATION_TESTS)[0]
    mod, _, name = entry.partition("::")
    assert is_integration(_item(mod, name))  # every parameter: the function's name counts
    assert not is_integration(_item(mod, name + "_not_listed"))


def test_each_collected_test_is_exactly_one_of_unit_and_integration(
    request: pytest.FixtureRequest,
) -> None:
    marks = {m.name for m in request.node.iter_markers()}
    assert ("unit" in marks) != ("integration" in marks), marks
    assert "unit" in marks  # this module is a unit module


def test_markers_are_registered_and_strict() -> None:
    opts = _pyproject()["tool"]["pytest"]["ini_options"]
    names = {m.split(":")[0].strip() for m in opts["markers"]}
    assert {"unit", "integration", "slow", "traces"} <= names
    assert "--strict-markers" in opts["addopts"]
    used = set()
    for path in TESTS.glob("test_*.py"):
        used |= set(re.findall(r"pytest\.mark\.([a-z_]+)", path.read_text()))
    builtin = {"parametrize", "skipif", "skip", "xfail", "usefixtures", "filterwarnings"}
    assert used - builtin <= names, f"unregistered markers: {sorted(used - builtin - names)}"


def _readme_test_command() -> str:
    text = (REPO / "README.md").read_text()
    m = re.search(r"Install and run the tests.*?```bash\n(.+?)\n```", text, re.S)
    assert m, "README.md: the test command block is missing"
    return m.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    command = _readme_test_command()
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1].strip() == command


def test_the_test_command_type_checks_then_runs_every_test() -> None:
    command = _readme_test_command()
    steps = [s.strip() for s in command.split("&&")]
    assert "mypy" in steps and steps[-1] == "python -m pytest -q"
    assert steps.index("mypy") < len(steps) - 1
    assert " -m " not in steps[-1].replace("python -m pytest", "")  # no marker selection


def test_mypy_checks_the_library_and_the_wheel_says_so() -> None:
    cfg = _pyproject()
    assert cfg["tool"]["mypy"]["packages"] == ["hpcgym"]
    assert any(d.startswith("mypy") for d in cfg["project"]["optional-dependencies"]["dev"])
    assert (REPO / "hpcgym" / "py.typed").is_file()
    assert "py.typed" in cfg["tool"]["setuptools"]["package-data"]["hpcgym"]
