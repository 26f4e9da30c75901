"""A script run from the folder that holds a clone named ``hpcgym`` imports hpcgym.

Python finds the clone's root first (the script's folder is on ``sys.path`` before the
installed package); the clone's root ``__init__.py`` makes that import load the package
inside the clone instead of an empty namespace package.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_script_next_to_a_clone_named_hpcgym(tmp_path: Path) -> None:
    (tmp_path / "hpcgym").symlink_to(REPO, target_is_directory=True)
    script = tmp_path / "run.py"
    script.write_text(
        "import gymnasium\n"
        "import hpcgym\n"
        "from hpcgym.workload import load\n"
        "env = gymnasium.make('hpcgym/Schedule-v0', trace='synthetic')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(hpcgym.__version__, obs.shape, load().name)\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    from hpcgym import __version__

    assert run.stdout.split()[0] == __version__
    assert "(128, 16)" in run.stdout
