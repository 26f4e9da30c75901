"""RLBackfilling Table 5 (generality): agents trained on trace X applied to trace Y.

    python eval/table5.py --agents-dir agents/pretrained --out results/table5

One section per base policy (FCFS, SJF); rows: the evaluated traces Y; columns: EASY and
EASY-AR with that base policy, then RL-X for every shipped agent trained on trace X with
that policy (model cards), each applied to Y on Y's windows (30 x 1024 jobs of the test
split, seed 1, by default; --windows 10 is the paper's protocol). The paper's numbers are
printed beside ours. Writes table5.md / .csv / .json / .png and one folder per (trace,
policy) with the full comparison. See docs/evaluation.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.table5`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.table5", *sys.argv[1:]])

from eval.table4 import run_table  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    return run_table("table5", argv, description=(__doc__ or "").split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
