"""Moved: behaviour cloning is ``python -m research.imitation`` now (the same options).

``python train/imitate.py ...`` still runs it, with a ``FutureWarning``, for one minor
version; then this file goes.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":
    warnings.warn(
        "train/imitate.py has moved: run `python -m research.imitation` (the same options); "
        "train/imitate.py will be removed in a future version",
        FutureWarning,
        stacklevel=1,
    )
    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.imitation", *sys.argv[1:]])
