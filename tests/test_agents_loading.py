"""Loading agents by name or file (``hpcgym_agents.load_agent``), and the shipped agents.

The shipped ``.zip`` files were saved when the agent package was importable as
``agents``: they pickle the policy class as ``agents.kernel_policy.KernelPolicy``. They
must load under the package's installed name, ``hpcgym_agents``, in a process where no
module called ``agents`` exists.
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


def test_shipped_agents_exist_and_pickle_the_old_module_path() -> None:
    assert {p.stem for p in SHIPPED} >= {"sdsc-sp2-fcfs-guarded", "lublin1-fcfs-guarded"}
    legacy = pretrained_dir() / "sdsc-sp2-fcfs-guarded-paper.zip"
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
        f"for name in {[p.stem for p in SHIPPED]!r}:\n"
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
    assert [r[0] for r in rows] == [p.stem for p in SHIPPED]
    for name, module, action, k in rows:
        assert module == "hpcgym_agents.kernel_policy", name
        assert action in (0, k), name  # the only valid actions: row 0 and STOP


def test_load_agent_by_path_and_by_name_agree() -> None:
    by_name = load_agent("sdsc-sp2-fcfs-guarded")
    by_path = load_agent(pretrained_dir() / "sdsc-sp2-fcfs-guarded.zip")
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
    assert "easy" in msg and "sdsc-sp2-fcfs-guarded" in msg
    assert set(pretrained_agents()) >= {"sdsc-sp2-fcfs-guarded", "lublin1-fcfs-guarded"}


def test_entry_point_names_the_loader() -> None:
    from importlib.metadata import entry_points

    eps = entry_points(group="hpcgym.agent_loaders")
    assert [ep.value for ep in eps if ep.name == "default"] == ["hpcgym_agents.loading:load_agent"]
    assert next(ep for ep in eps if ep.name == "default").load() is load_agent
