"""Moved: the CleanRL-style PPO example is ``python examples/cleanrl_ppo.py`` now.

``python train/cleanrl_ppo.py ...`` still runs it, with a ``FutureWarning``, for one minor
version; then this file goes.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":
    warnings.warn(
        "train/cleanrl_ppo.py has moved: run `python examples/cleanrl_ppo.py` (the same options); "
        "train/cleanrl_ppo.py will be removed in a future version",
        FutureWarning,
        stacklevel=1,
    )
    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "examples.cleanrl_ppo", *sys.argv[1:]])
