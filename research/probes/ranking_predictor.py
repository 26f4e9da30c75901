"""Can a runtime model fitted for *ranking* order ELOSS's candidates better than E-Loss?

Under ELOSS's own reservations, starting the candidate with the shortest actual runtime
would give 0.85 x ELOSS on SDSC-SP2 and 0.81 on HPC2N, while every online predictor of
the package ranks no better than E-Loss itself (``research/probes/ordering_headroom.py
--guard ELOSS``, docs/research/findings.md). E-Loss is fitted for reservations (it is built to
under-predict), not for ranking. This probe fits a plain ridge regression of
``log(runtime)`` on E-Loss's 20 submission-time features (log-scaled, with three
has-history flags and the squares of the first eight) on the jobs of the **train**
split only, and orders ELOSS's candidates by its prediction (capped at the request) on
windows of the **validation** split, paired against ELOSS::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/ranking_predictor.py \\
        --trace SDSC-SP2

The features are those E-Loss computes at each job's submission in one ELOSS run over
the whole trace (a user's finished jobs, running jobs and break time depend a little on
the schedule, so inside a window they can differ slightly from the run's); nothing of a
job's own runtime enters them. A probe of the lead: the fit is offline and the same for
every window. The library's online form of it is the ``log-ridge`` predictor
(:mod:`hpcgym.predictors.ridge`, same inputs, fitted within each window on the jobs
finished so far), which ``research/probes/ordering_headroom.py --guard ELOSS --predictors
log-ridge:lam=10`` measures the same way.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.ranking_predictor`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.ranking_predictor", *sys.argv[1:]]
    )

from hpcgym.evaluation.statistics import paired_comparison  # noqa: E402
from hpcgym.predictors import make_estimator  # noqa: E402
from hpcgym.predictors.ridge import design  # noqa: E402
from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.sim.engine import Simulation  # noqa: E402
from hpcgym.workload import WindowSampler, load  # noqa: E402
from hpcgym.workload.core import Workload  # noqa: E402
from hpcgym.workload.sequences import split_range  # noqa: E402
from research.probes.ordering_headroom import guard_simulation, play_in_order  # noqa: E402


def submission_features(wl: Workload) -> np.ndarray:
    """E-Loss's features of every job, as computed at its submission in an ELOSS run over
    the whole workload (``(n_jobs, 20)``, columns in E-Loss's ``FEATURES`` order).

    :param wl: the workload
    """
    est = make_estimator("eloss", keep_features=True)
    Simulation(wl, backfill="sjbf", estimate=est, correction="incremental-offset").run()
    return np.asarray(est.X, dtype=np.float64)


def fit_log_runtime(d: np.ndarray, runtime: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """Ridge weights of ``log(max(runtime, 1 s))`` on the rows of ``d``.

    :param d: inputs (:func:`hpcgym.predictors.ridge.design`)
    :param runtime: the jobs' actual runtimes (s)
    :param lam: ridge coefficient
    """
    y = np.log(np.maximum(runtime.astype(np.float64), 1.0))
    a = d.T @ d + lam * np.eye(d.shape[1])
    return np.linalg.solve(a, d.T @ y)


def rank_corr(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (ties broken by position)."""
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def ordered_by(wl: Workload, start: int, length: int, key: np.ndarray) -> float:
    """AVEbsld of ELOSS's reservations with its candidates started in order of ``key``
    (lowest first; ``key`` indexed by the workload's jobs).

    :param wl: the workload
    :param start: the window's first job
    :param length: jobs in the window
    :param key: one value per job of ``wl``
    """
    k = key[start : start + length]
    sim = guard_simulation(wl.window(start, length), "ELOSS")
    return play_in_order(sim, lambda jobs: k[jobs])


def main(argv: list[str] | None = None) -> int:
    """Fit on the train split, play the validation windows, print the comparison.

    :param argv: the arguments (default: the process's)
    """
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--trace", default="SDSC-SP2")
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--seed", type=int, default=7, help="window seed (validation)")
    p.add_argument("--lam", type=float, default=1.0, help="ridge coefficient")
    args = p.parse_args(argv)
    wl = load(args.trace)
    x = submission_features(wl)
    d = design(x)
    train_lo, train_hi = split_range(len(wl), "train")
    val_lo, val_hi = split_range(len(wl), "validation")
    w = fit_log_runtime(d[train_lo:train_hi], wl.runtime[train_lo:train_hi], args.lam)
    pred = np.minimum(np.exp(d @ w), wl.request.astype(np.float64))
    rt = wl.runtime[val_lo:val_hi].astype(np.float64)
    print(
        f"{args.trace}: rank correlation with the actual runtime on the validation jobs: "
        f"ridge {rank_corr(pred[val_lo:val_hi], rt):.3f}, "
        f"request {rank_corr(wl.request[val_lo:val_hi].astype(np.float64), rt):.3f}"
    )
    starts = WindowSampler(wl, args.length, "validation", seed=args.seed).sample_many(args.windows)
    eloss, ridge, actual = [], [], []
    for s in (int(v) for v in starts):
        eloss.append(get_scheduler("ELOSS").simulate(wl.window(s, args.length)).metrics["avg_bsld"])
        ridge.append(ordered_by(wl, s, args.length, pred))
        actual.append(ordered_by(wl, s, args.length, wl.runtime.astype(np.float64)))
    print(
        f"{args.windows} validation windows of {args.length} jobs (seed {args.seed}); "
        "ELOSS's reservations; paired geo-mean ratio of AVEbsld vs ELOSS, 95% bootstrap"
    )
    print("| order | mean AVEbsld | ratio vs ELOSS [95% CI] | wins |")
    print("|---|---|---|---|")
    for name, v in (("ELOSS", eloss), ("ridge log-runtime", ridge), ("actual", actual)):
        c = paired_comparison(v, eloss)
        print(
            f"| {name} | {np.mean(v):.1f} | {c.geo_ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"
            f" | {c.wins}/{len(v)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
