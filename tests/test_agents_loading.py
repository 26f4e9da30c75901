"""Loading agents by name or file (``hpcgym_agents.load_agent``), and the shipped agents.

Agents saved when the agent package was importable as ``agents`` (the retired agents of
``research/agents``) pickle the policy class as ``agents.kernel_policy.KernelPolicy``. They
and the zoo's agents must load under the package's installed name, ``hpcgym_agents``, in a
process where no module called ``agents`` exists.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from hpcgym_agents import HEURISTICS, RandomValid, load_agent, pretrained_dir
from hpcgym_agents.loading import pretrained_agents

pytest.importorskip("sb3_contrib")

SHIPPED = sorted(pretrained_dir().glob("*.zip"))
REPO = Path(__file__).resolve().parents[1]
LEGACY = REPO / "research" / "agents" / "sdsc-sp2-fcfs-guarded-paper.zip"
ZOO = {
    f"{trace}-{policy}{est}"
    for trace in ("sdsc-sp2", "hpc2n", "lublin1", "lublin2")
    for policy in ("fcfs", "sjf")
    for est in ("", "-eloss")
    if est == "" or trace in ("sdsc-sp2", "hpc2n")
} - {"hpc2n-sjf-eloss"}


def test_the_zoo_is_one_agent_per_trace_policy_and_estimator() -> None:
    assert {p.stem for p in SHIPPED} == ZOO
    assert set(pretrained_agents()) == ZOO
    size = sum(p.stat().st_size for p in pretrained_dir().iterdir())
    assert size < 15e6, size  # the zoo's budget in the wheel
    for name in ZOO:
        card = json.loads((pretrained_dir() / f"{name}.json").read_text())
        assert card["name"] == name and card["model"] == f"{name}.zip"
        assert "test" in card, name  # every zoo agent was tested once on held-out windows


def test_legacy_agents_pickle_the_old_module_path() -> None:
    legacy = LEGACY
    data = json.loads(zipfile.ZipFile(legacy).read("data"))
    # what makes the loading test meaningful: the legacy files pickle the old module path
    import base64

    pickled = base64.b64decode(data["policy_class"][":serialized:"])
    assert b"agents.kernel_policy" in pickled and b"hpcgym_agents" not in pickled


def test_shipped_agents_load_in_a_fresh_process_without_an_agents_module(
    tmp_path: Path,
) -> None:
    code = (
        "import json, sys\n"
        "import numpy as np\n"
        "from hpcgym_agents import load_agent\n"
        "out = []\n"
        f"for name in {[p.stem for p in SHIPPED] + [str(LEGACY)]!r}:\n"
        "    m = load_agent(name)\n"
        "    k, f = m.observation_space.shape\n"
        "    obs = np.zeros((k, f), np.float32); obs[0, 0] = 1.0\n"
        "    mask = np.zeros(k + 1, bool); mask[0] = mask[k] = True\n"
        "    a, _ = m.predict(obs, action_masks=mask, deterministic=True)\n"
        "    out.append([name, type(m.policy).__module__, int(a), k])\n"
        "assert 'agents' not in sys.modules, 'a top-level agents module was imported'\n"
        "print(json.dumps(out))\n"
    )
    # run outside the repository, so that the folder agents/ is not importable as `agents`
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert [r[0] for r in rows] == [p.stem for p in SHIPPED] + [str(LEGACY)]
    for name, module, action, k in rows:
        assert module == "hpcgym_agents.kernel_policy", name
        assert action in (0, k), name  # the only valid actions: row 0 and STOP


def test_load_agent_by_path_and_by_name_agree() -> None:
    by_name = load_agent("sdsc-sp2")
    by_path = load_agent(pretrained_dir() / "sdsc-sp2-fcfs.zip")
    rng = np.random.default_rng(0)
    k, f = by_name.observation_space.shape
    obs = rng.random((8, k, f), dtype=np.float32)
    masks = rng.random((8, k + 1)) < 0.5
    masks[:, k] = True
    a, _ = by_name.predict(obs, action_masks=masks, deterministic=True)
    b, _ = by_path.predict(obs, action_masks=masks, deterministic=True)
    np.testing.assert_array_equal(a, b)


def test_heuristics_by_name() -> None:
    for name, cls in HEURISTICS.items():
        assert isinstance(load_agent(name), cls)
        assert isinstance(load_agent(name.upper()), cls)
    r1, r2 = load_agent("random", seed=3), load_agent("random", seed=3)
    assert isinstance(r1, RandomValid) and r1.seed == r2.seed == 3


def test_unknown_agent_lists_the_choices() -> None:
    with pytest.raises(FileNotFoundError) as exc:
        load_agent("no-such-agent")
    msg = str(exc.value)
    assert "easy" in msg and "sdsc-sp2-fcfs" in msg and "hpc2n" in msg


def test_aliases_and_trained_as_names_load_the_zoo_agent() -> None:
    from hpcgym_agents.loading import ALIASES, resolve_name

    for alias, name in ALIASES.items():
        assert resolve_name(alias) == name and name in ZOO
    for name in ZOO:
        card = json.loads((pretrained_dir() / f"{name}.json").read_text())
        assert resolve_name(card["trained_as"]) == name
        assert resolve_name(name.upper()) == name
    assert resolve_name("no-such-agent") is None


def test_a_retired_name_fails_naming_its_replacement() -> None:
    from hpcgym_agents.loading import retired_agents

    retired = retired_agents()
    assert len(retired) >= 70 and set(retired.values()) <= ZOO
    assert not set(retired) & ZOO
    with pytest.raises(FileNotFoundError, match="use 'hpc2n-fcfs'") as exc:
        load_agent("hpc2n-fcfs-guarded-cmaes")
    assert "research/agents/hpc2n-fcfs-guarded-cmaes.json" in str(exc.value)
    # every retired agent's card is kept in the repository
    for name in retired:
        assert (REPO / "research" / "agents" / f"{name}.json").is_file(), name


def test_entry_point_names_the_loader() -> None:
    from importlib.metadata import entry_points

    eps = entry_points(group="hpcgym.agent_loaders")
    assert [ep.value for ep in eps if ep.name == "default"] == ["hpcgym_agents.loading:load_agent"]
    assert next(ep for ep in eps if ep.name == "default").load() is load_agent
