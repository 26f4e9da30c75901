"""The release: ``python -m build --wheel`` makes a wheel that installs in a clean virtual
environment, and there, away from the repository, the env, the command line and a zoo
agent work.

The wheel is built without build isolation (the ``dev`` extra holds ``build`` and
``setuptools``, so nothing is fetched); the clean venv gets ``torch==2.13.0`` (the CPU
build) and then the wheel with its ``train`` extra from the package index, with
``--no-compile`` (about 20 s on a warm pip cache). The checks run in a folder outside the
checkout with ``PYTHONPATH`` and ``HPCGYM_TRACE_DIR`` unset, and each one first asserts
that ``hpcgym`` and ``hpcgym_agents`` are imported from the venv, not from the checkout.
The test skips, saying why, when the package index cannot provide the dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"
#: the zoo's budget in the wheel (agents and megabytes of agent files)
MAX_AGENTS = 12
MAX_AGENT_MB = 15.0


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the dev extra's 'build' is needed")
    out = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), "."],
        cwd=REPO,
        env=dict(os.environ),
    )
    (path,) = out.glob("hpcgym-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("clean")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "HPCGYM_TRACE_DIR"}}
    env.pop("VIRTUAL_ENV", None)
    _run([sys.executable, "-m", "venv", str(root / "venv")], cwd=root, env=env)
    bindir = root / "venv" / "bin"
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(root)  # no user cache of traces or agents from this machine
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    pip = [str(bindir / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    for spec in (TORCH, f"{wheel}[train]"):
        proc = subprocess.run(
            [*pip, spec], cwd=root, env=env, capture_output=True, text=True, timeout=900
        )
        if proc.returncode != 0:
            if "No matching distribution" in proc.stderr or "Could not find" in proc.stderr:
                pytest.skip(f"the package index cannot provide {spec}: {proc.stderr[-300:]}")
            raise AssertionError(f"pip install {spec} failed:\n{proc.stderr[-3000:]}")
    work = root / "work"
    work.mkdir()
    return work, env


def _python(venv: tuple[Path, dict[str, str]], code: str) -> str:
    work, env = venv
    python = str(Path(env["PATH"].split(os.pathsep)[0]) / "python")
    header = (
        "import hpcgym, hpcgym_agents, pathlib\n"
        f"repo = pathlib.Path({str(REPO)!r})\n"
        "for m in (hpcgym, hpcgym_agents):\n"
        "    assert repo not in pathlib.Path(m.__file__).resolve().parents, m.__file__\n"
    )
    return _run([python, "-c", header + code], cwd=work, env=env)


def test_wheel_contents(wheel: Path) -> None:
    """The library and the zoo, within the zoo's budget; no scripts, research or tests."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        sizes = {i.filename: i.file_size for i in z.infolist()}
    tops = {n.split("/")[0] for n in names}
    assert tops == {"hpcgym", "hpcgym_agents", wheel.name.split("-py3")[0] + ".dist-info"}
    agents = [n for n in names if n.startswith("hpcgym_agents/pretrained/") and n.endswith(".zip")]
    assert 1 <= len(agents) <= MAX_AGENTS
    agent_mb = sum(s for n, s in sizes.items() if n.startswith("hpcgym_agents/pretrained/")) / 1e6
    assert agent_mb <= MAX_AGENT_MB
    for a in agents:  # every model with its card and its page
        assert a[: -len(".zip")] + ".json" in names and a[: -len(".zip")] + ".md" in names
    assert "hpcgym_agents/pretrained/README.md" in names
    assert "hpcgym/py.typed" in names  # PEP 561: type checkers read the annotations
    assert "hpcgym_agents/pretrained/retired.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(wheel) as z:
        text = z.read(meta).decode()
    assert "License-Expression: MIT" in text and "Version: 1.0.0" in text


def test_installed_env_steps(venv: tuple[Path, dict[str, str]]) -> None:
    """``gymnasium.make("hpcgym/Backfill-v0")`` on the embedded default, through the
    entry point, with both of Gymnasium's checkers; one masked episode to its end."""
    out = _python(
        venv,
        "import gymnasium as gym, numpy as np\n"
        "from gymnasium.utils.env_checker import check_env\n"
        "env = gym.make('hpcgym/Backfill-v0')\n"
        "check_env(env.unwrapped)\n"
        "obs, info = env.reset(seed=0)\n"
        "rng = np.random.default_rng(0); done = False; steps = 0\n"
        "while not done:\n"
        "    action = int(rng.choice(np.flatnonzero(info['action_mask'])))\n"
        "    obs, r, term, trunc, info = env.step(action); done = term or trunc; steps += 1\n"
        "print(steps, info['window'], info['agent']['jobs'], info['agent']['avg_bsld'] >= 1)\n",
    )
    steps, window, jobs, bounded = out.split()
    assert int(steps) >= 1 and window.startswith("synthetic[")
    assert (jobs, bounded) == ("256", "True")


def test_installed_cli_simulate(venv: tuple[Path, dict[str, str]]) -> None:
    work, env = venv
    hpcgym = str(Path(env["PATH"].split(os.pathsep)[0]) / "hpcgym")
    args = ["simulate", "--trace", "synthetic", "--scheduler", "EASY-SJBF"]
    out = _run([hpcgym, *args, "--start", "1000", "--length", "256", "--json"], cwd=work, env=env)
    result = json.loads(out)
    assert result["jobs"] == 256 and result["avg_bsld"] >= 1.0
    bad = subprocess.run(
        [hpcgym, "simulate", "--trace", "synthetic", "--scheduler", "NOPE"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "EASY-SJBF" in bad.stderr


def test_installed_zoo_agent(venv: tuple[Path, dict[str, str]]) -> None:
    """A zoo agent by its trace alias, playing its own env's decisions on the default
    workload; an unknown name lists the zoo."""
    out = _python(
        venv,
        "import numpy as np\n"
        "from hpcgym_agents import load_agent, pretrained_agents\n"
        "from hpcgym.evaluation.cards import load_model_card\n"
        "import gymnasium as gym\n"
        "card = load_model_card(pathlib.Path(hpcgym_agents.__file__).parent / 'pretrained' "
        "/ 'sdsc-sp2-fcfs.json')\n"
        "agent = load_agent('sdsc-sp2')\n"
        "kw = {'policy': card.policy, 'mode': card.mode, **card.env, 'est_scale': card.est_scale,"
        " 'wait_scale': card.wait_scale}\n"
        "env = gym.make('hpcgym/Backfill-v0', trace='synthetic', **kw)\n"
        "obs, info = env.reset(seed=1); done = False; chosen = []\n"
        "while not done:\n"
        "    a, _ = agent.predict(obs, action_masks=info['action_mask'], deterministic=True)\n"
        "    assert info['action_mask'][int(a)], a\n"
        "    chosen.append(int(a))\n"
        "    obs, r, term, trunc, info = env.step(int(a)); done = term or trunc\n"
        "print(len(pretrained_agents()), len(chosen))\n"
        "try:\n"
        "    load_agent('no-such-agent')\n"
        "except FileNotFoundError as exc:\n"
        "    assert 'sdsc-sp2-fcfs' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no error')\n",
    )
    n_agents, n_steps = map(int, out.split())
    assert 1 <= n_agents <= MAX_AGENTS and n_steps >= 1
