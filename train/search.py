"""Moved: the CMA-ES search of a linear score is ``python -m research.search`` now.

``python train/search.py ...`` still runs it, with a ``FutureWarning``, for one minor
version; then this file goes.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":
    warnings.warn(
        "train/search.py has moved: run `python -m research.search` (the same options); "
        "train/search.py will be removed in a future version",
        FutureWarning,
        stacklevel=1,
    )
    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.search", *sys.argv[1:]])
