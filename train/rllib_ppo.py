"""Moved: the RLlib PPO example is ``python examples/rllib_ppo.py`` now (the same options).

``python train/rllib_ppo.py ...`` still runs it, with a ``FutureWarning``, for one minor
version; then this file goes.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":
    warnings.warn(
        "train/rllib_ppo.py has moved: run `python examples/rllib_ppo.py` (the same options); "
        "train/rllib_ppo.py will be removed in a future version",
        FutureWarning,
        stacklevel=1,
    )
    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "examples.rllib_ppo", *sys.argv[1:]])
