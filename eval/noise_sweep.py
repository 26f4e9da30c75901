"""RLBackfilling Fig. 1: AVEbsld against the noise of runtime predictions.

    HPCGYM_TRACE_DIR=../shared/traces python eval/noise_sweep.py --trace SDSC-SP2 \\
        --out docs/figures [--seeds 0 1 2] [--jobs N]

For every queue policy (FCFS, WFP3, SJF, F1) with EASY backfilling, the estimate is the
actual runtime inflated by a seeded noise of level L: ``est = actual x (1 + e)``,
``e ~ U[0, L)``, capped at the request (``hpcgym.predictors`` ``noisy``); L = 0 is the
clairvoyant EASY-AR and "request" is plain EASY with user estimates. Whole trace (or its
first ``--first-jobs`` jobs); the mean over the seeds is reported. Writes
``noise_sweep.md``, ``noise_sweep.json`` and ``noise_sweep.png`` into ``--out``.

A thin CLI over :func:`hpcgym.evaluation.noise_sweep` (process pool over the
(policy, level, seed) simulations, same results whatever ``--jobs``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.noise_sweep`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.noise_sweep", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.argtypes import nonneg_float, positive_int  # noqa: E402
from hpcgym.cli.errors import UsageError, check_choice, check_trace_name  # noqa: E402
from hpcgym.evaluation import (  # noqa: E402
    NOISE_LEVELS,
    NOISE_POLICIES,
    default_jobs,
    noise_markdown,
    noise_sweep,
    write_noise_sweep,
)

LEVELS = list(NOISE_LEVELS)
POLICIES = list(NOISE_POLICIES)

__all__ = ["LEVELS", "POLICIES", "main", "sweep"]


def sweep(
    trace: str | None,
    policies: list[str],
    levels: list[float],
    seeds: list[int],
    jobs: int | None = None,
    n_jobs: int | None = 1,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """``{policy: {level: AVEbsld, ..., "request": AVEbsld}}`` (``jobs``: only the first
    ``jobs`` jobs of the trace; ``n_jobs``: worker processes)."""
    return noise_sweep(trace, policies, levels, seeds, jobs, jobs=n_jobs, progress=progress)


def main(argv: list[str] | None = None) -> int:
    """Run the noise sweep; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    ap = C.make_parser("python eval/noise_sweep.py", (__doc__ or "").splitlines()[0])
    ap.add_argument("--trace", default="SDSC-SP2", help="registered name, SWF path or synthetic")
    C.add_lenient_arg(ap)
    ap.add_argument("--policies", nargs="+", default=POLICIES, help=" ".join(POLICIES))
    ap.add_argument(
        "--levels", nargs="+", type=nonneg_float, default=LEVELS, help="noise levels L >= 0"
    )
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds (0 1 2)")
    ap.add_argument(
        "--first-jobs",
        type=positive_int,
        default=None,
        help="only the first N jobs of the trace",
    )
    ap.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help=f"worker processes (default: all cores = {default_jobs()}); 1 = no pool",
    )
    ap.add_argument("--no-progress", dest="progress", action="store_false")
    ap.add_argument("--out", default="docs/figures", help="output folder (docs/figures)")
    args = ap.parse_args(argv)
    return C.run(ap, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """The sweep itself (user errors raise, :func:`main` reports them).

    :param args: the parsed arguments
    """
    from hpcgym.sim.engine import POLICIES as ALL_POLICIES
    from hpcgym.workload import load

    check_trace_name(args.trace)
    policies = [
        check_choice(p, list(ALL_POLICIES), "--policies", "queue policy") for p in args.policies
    ]
    C.check_outputs(out=args.out)
    wl = load(args.trace, lenient=args.lenient)
    if args.first_jobs is not None and args.first_jobs > len(wl):
        raise UsageError(
            f"--first-jobs {args.first_jobs}: the trace {wl.name} has only {len(wl)} jobs "
            f"after cleaning (valid: 1..{len(wl)})"
        )
    res = noise_sweep(
        wl,
        policies,
        args.levels,
        args.seeds,
        args.first_jobs,
        jobs=args.jobs,
        progress=args.progress,
    )
    print(noise_markdown(res, args.trace, args.levels, args.seeds))
    paths = write_noise_sweep(res, args.trace, args.levels, args.seeds, args.out)
    print(f"wrote {paths['noise_sweep.png']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
