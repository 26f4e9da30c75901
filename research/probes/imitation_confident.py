"""A cloned student that departs from EASY-SJBF only when it is confident.

The BC/DAgger student of ``research/imitation/imitate.py`` learns the teacher's choice *on average*
and its argmax departs from EASY-SJBF's row more often than the teacher does
(docs/research/findings.md). ``hpcgym_agents.GatedAgent`` keeps EASY-SJBF's row (``SJBFAgent``:
the EASY-allowed row with the smallest estimate column, ties to the first row -- exactly
EASY-SJBF's choice in guarded mode) unless the student gives another action a probability
of at least ``tau``. It is played on the VALIDATION windows of ``research/imitation/imitate.py``
(``select_windows`` seed 7) and compared with EASY-SJBF::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/imitation_confident.py \\
        runs/imitate-sdsc/bc_model.zip --trace SDSC-SP2 --length 512 --tau 0.5 0.7 0.9
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.imitation_confident`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.imitation_confident", *sys.argv[1:]]
    )

from hpcgym_agents import GatedAgent, SJBFAgent, load_model  # noqa: E402
from research.imitation.measure import compare_on_validation, format_table  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("model", help="bc_model.zip of research/imitation/imitate.py")
    p.add_argument("--trace", default="SDSC-SP2")
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tau", type=float, nargs="+", default=[0.5, 0.7, 0.9])
    p.add_argument("--env-kwargs", default="{}", help="env arguments of the student (JSON)")
    args = p.parse_args()
    import json

    extra = json.loads(args.env_kwargs)
    model = load_model(args.model)
    agents: dict[str, tuple[Any, dict[str, Any]]] = {"student (argmax)": (model, extra)}
    agents["copy EASY-SJBF (tau > 1)"] = (GatedAgent(model, SJBFAgent(), 2.0), extra)
    for tau in args.tau:
        agents[f"student if p >= {tau}"] = (GatedAgent(model, SJBFAgent(), tau), extra)
    env = {"trace": args.trace, "mode": "guarded", "reference": "EASY-SJBF"}
    res = compare_on_validation(
        env, agents, windows=args.windows, length=args.length, seed=args.seed, teacher=None
    )
    print(format_table(res))


if __name__ == "__main__":
    main()
