"""How much of a scheduler's ratio is its predictor's cold start? (burn-in before windows)

Every evaluation of hpcgym plays a window of ``--length`` jobs from an empty machine, and an
online predictor starts it with no history: E-Loss learns its 231 weights from the jobs
that finish in the window, AVE2 needs two jobs per user. A site's predictor has the whole
past. This plays each scheduler on ``[s - B, s + length)`` for every window start ``s`` and
burn-in ``B`` (``--burn-in``, 0 = the usual window) and measures the AVEbsld of the last
``length`` jobs only, i.e. of the same jobs for every ``B``::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/burn_in.py --trace SDSC-SP2
    HPCGYM_TRACE_DIR=../shared/traces python research/probes/burn_in.py --trace HPC2N

and prints, per burn-in, each scheduler's paired geometric-mean ratio against
``--reference`` and ``--pair``'s ratio (default ELOSS against EASY++, whose AVE2 predictor
warms up within two jobs of each user) with 95 % bootstrap intervals
(:mod:`hpcgym.evaluation.statistics`).

Read it with its confound in mind: a burn-in also means that the measured jobs meet a
machine already in use (each scheduler's own schedule of the burn-in jobs), not an empty
one; the reference heuristic's row shows how much that alone moves the ratios. Windows
come from :func:`hpcgym.evaluation.windows.select_windows` (``--split``, default
``train``; the test split only when asked), drawn with ``--seed``; a window whose start is
less than ``B`` jobs into the trace gets the burn-in there is (the shortest is printed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if __name__ == "__main__" and not __package__:  # run by path: `python -m research.probes.burn_in`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.burn_in", *sys.argv[1:]])

from hpcgym.evaluation.statistics import paired_comparison  # noqa: E402
from hpcgym.evaluation.windows import select_windows  # noqa: E402
from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.sim.metrics import bounded_slowdown  # noqa: E402
from hpcgym.workload import Workload, load  # noqa: E402


def played(
    workload: Workload, starts: list[int], burn_in: int, length: int, names: list[str]
) -> dict[str, list[float]]:
    """AVEbsld of jobs ``s .. s + length - 1`` when each scheduler of ``names`` schedules
    ``[max(0, s - burn_in), s + length)``, for every start ``s``."""
    out: dict[str, list[float]] = {name: [] for name in names}
    for s in starts:
        lo = max(0, int(s) - int(burn_in))
        w = workload.window(lo, int(s) + length - lo)
        k = int(s) - lo
        for name in names:
            r = get_scheduler(name).simulate(w)
            wait = r.start[k:] - w.submit[k:]
            out[name].append(float(bounded_slowdown(wait, w.runtime[k:]).mean()))
    return out


def _cell(values: list[float], reference: list[float]) -> str:
    c = paired_comparison(values, reference)
    return f"{c.geo_ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="SDSC-SP2")
    ap.add_argument("--split", default="train", help="split of the windows (default train)")
    ap.add_argument("--windows", type=int, default=30, help="windows (default 30)")
    ap.add_argument("--length", type=int, default=1024, help="measured jobs (default 1024)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the window draw (default 7)")
    ap.add_argument(
        "--burn-in", type=int, nargs="+", default=[0, 1024, 4096, 16384], help="jobs before"
    )
    ap.add_argument("--schedulers", nargs="+", default=["ELOSS", "EASY++"])
    ap.add_argument("--reference", default="EASY-SJBF")
    ap.add_argument("--pair", nargs=2, default=["ELOSS", "EASY++"], metavar=("METHOD", "AGAINST"))
    args = ap.parse_args(argv)
    workload = load(args.trace)
    ws = select_windows(len(workload), args.length, args.windows, args.split, args.seed)
    starts = [int(s) for s in ws.starts]
    names = list(dict.fromkeys([*args.schedulers, args.reference, *args.pair]))
    heads = [f"{n} x {args.reference}" for n in args.schedulers]
    heads.append(f"{args.pair[0]} x {args.pair[1]}")
    print(
        f"{args.trace}: {len(starts)} {args.split} windows of {args.length} jobs (seed "
        f"{args.seed}), each played after B jobs of burn-in; AVEbsld of the same "
        f"{args.length} jobs for every B; paired geo-mean ratios [95 % bootstrap]\n"
    )
    print("| burn-in B (shortest used) | " + " | ".join(heads) + f" | mean {args.reference} |")
    print("|---|" + "---|" * (len(heads) + 1))
    for b in args.burn_in:
        v = played(workload, starts, b, args.length, names)
        shortest = min(min(b, s) for s in starts)
        ref = v[args.reference]
        cells = [_cell(v[n], ref) for n in args.schedulers]
        cells.append(_cell(v[args.pair[0]], v[args.pair[1]]))
        print(f"| {b:,} ({shortest:,}) | " + " | ".join(cells) + f" | {np.mean(ref):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
