"""Moved: shipping a trained agent with its model card is ``python -m train.card`` now.

``python eval/card.py RUN ...`` still runs it, with a ``FutureWarning``, for one minor
version; then this file goes.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":
    warnings.warn(
        "eval/card.py has moved: run `python -m train.card` (the same options); "
        "eval/card.py will be removed in a future version",
        FutureWarning,
        stacklevel=1,
    )
    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "train.card", *sys.argv[1:]])
