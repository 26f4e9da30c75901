"""The architecture rules of docs/architecture.md, checked on the source tree.

* the import contracts of ``pyproject.toml`` (import-linter): layers point down only, the
  library never imports the agents / train / eval / research code, the agents never
  import the scripts, train and eval never import the research probes, and nothing
  imports the benchmark scripts (``bench``);
* every top-level folder of code is a package the contracts name;
* the library does not name the agents package in strings either (no import by string,
  no knowledge of agent files);
* no Python file over 800 lines (the compiled engine core and probabilistic backfilling
  excepted);
* the engine does not load the predictors' heavy code (the HMM) when imported;
* every package of the library and the agents is in the wheel's package list, and the
  scripts (train, eval, research, bench) are not.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 800
#: files allowed to stay whole: the engine core and probabilistic backfilling
LONG_FILES_ALLOWED = {"hpcgym/sim/_core.py", "hpcgym/sim/probabilistic.py"}


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (REPO / f).rglob("*.py"))


def test_import_contracts_hold() -> None:
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    out = subprocess.run(
        [str(exe), "--no-cache", "--config", str(REPO / "pyproject.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "BROKEN" not in out.stdout


_AGENTS_BY_NAME = re.compile(r"hpcgym_agents|[\"']agents[./\"']|^\s*(import|from) agents\b", re.M)


def test_library_does_not_name_the_agents_package() -> None:
    bad = [
        f"{p.relative_to(REPO)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
        for p in _python_files("hpcgym")
        for text in [p.read_text()]
        for m in _AGENTS_BY_NAME.finditer(text)
    ]
    assert not bad, "hpcgym must not import or name the agents package:\n" + "\n".join(bad)


def test_no_python_file_is_too_long() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in _python_files("hpcgym", "agents", "train", "eval", "research", "bench", "examples")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
        and str(p.relative_to(REPO)) not in LONG_FILES_ALLOWED
    }
    assert not long, f"files over {MAX_LINES} lines: {long}"


def test_engine_import_does_not_load_the_hmm_code() -> None:
    code = (
        "import sys\n"
        "from hpcgym.sim import simulate, get_scheduler\n"
        "import hpcgym.predictors\n"
        "assert 'hpcgym.predictors.hmm' not in sys.modules, sorted(sys.modules)\n"
        "from hpcgym.sim.estimators import make_estimator\n"
        "make_estimator('hmm')\n"
        "assert 'hpcgym.predictors.hmm' in sys.modules\n"
        "assert 'hpcgym_agents' not in sys.modules and 'agents' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO / "tests")


#: the import contracts' root packages: the library, the agents, and the scripts on top
ROOT_PACKAGES = {"hpcgym", "hpcgym_agents", "train", "eval", "research", "bench", "examples"}
#: the folders of the scripts: importable packages for the contracts, outside the wheel
SCRIPT_PACKAGES = (
    "train",
    "eval",
    "research",
    "research.probes",
    "research.search",
    "research.imitation",
    "bench",
    "examples",
)


def test_the_contracts_name_every_package_of_code() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert set(cfg["root_packages"]) == ROOT_PACKAGES
    for name in SCRIPT_PACKAGES:
        assert (REPO / name.replace(".", "/") / "__init__.py").is_file(), name
    forbidden = {c["id"]: c for c in cfg["contracts"] if c["type"] == "forbidden"}
    assert "research" in forbidden["library-not-on-top"]["forbidden_modules"]
    assert "research" in forbidden["agents-not-on-scripts"]["forbidden_modules"]
    assert set(forbidden["scripts-not-on-research"]["source_modules"]) == {"train", "eval"}
    assert forbidden["scripts-not-on-research"]["forbidden_modules"] == ["research"]
    bench = forbidden["bench-imported-by-none"]
    assert set(bench["source_modules"]) == ROOT_PACKAGES - {"bench"}
    assert bench["forbidden_modules"] == ["bench"]


def test_every_package_is_in_the_wheel() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {
        ".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "hpcgym").rglob("__init__.py")
    }
    found |= {
        "hpcgym_agents." + ".".join(p.parent.relative_to(REPO / "agents").parts)
        if p.parent != REPO / "agents"
        else "hpcgym_agents"
        for p in (REPO / "agents").rglob("__init__.py")
    }
    assert found == listed, f"missing from pyproject: {found - listed}; stale: {listed - found}"
    assert cfg["package-dir"] == {"hpcgym_agents": "agents"}
    # the scripts and the research record stay outside the wheel
    assert not {p.split(".")[0] for p in listed} & {p.split(".")[0] for p in SCRIPT_PACKAGES}
