"""How far are the online predictors' run times from the truth, in the units of
``LOOKAHEAD1-ONLINE,runtimes=noisy,noise=s``?

``runtimes=noisy`` (docs/research/findings.md: how well a planner must know the run
times) gives the online one-step lookahead a predictive distribution of every
submitted job's run time whose centre is wrong by ``exp(s * e)``, ``e ~ N(0, 1)``: a
point prediction with a log error of standard deviation ``s``. This script puts the
package's online predictors on the same scale. On each window (the windows
``eval/compare.py`` draws with the same trace, split, seed, count and length) it runs
the guard's scheduler, lets each predictor predict every job at its submission from
what is known then (:func:`research.probes.ordering_headroom.predictions`), and pools the log errors
``ln(prediction) - ln(run time)`` (both at least 1 s, the run time capped at the
request as the engine does) of all the windows' jobs::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/prediction_error.py \\
        --trace HPC2N --split train --predictors request ave2 eloss log-ridge:lam=10

Printed per predictor: the mean and standard deviation of the log error, its median
absolute value, the share of jobs predicted within a factor of two, and the share of the
jobs that end within ``--short`` seconds which it predicts to end within them (the one bit
in which most of HPC2N's room for the online lookahead lies, docs/research/findings.md),
with that flag's precision, and the *user share*: the part of the error variance that lies
between the users of a window (:func:`user_share`; how much a user's jobs are wrong
together), and how much the predictions tell about the run times whatever their bias: the
correlation of the log prediction with the log run time over all jobs (:func:`log_corr`)
and within a user in a window (:func:`within_user_corr`: can it tell one of a user's jobs
from another?). A ``noisy-<s>`` row per ``--noise`` level (and ``--shared`` share) gives
the same statistics for the diagnostic's own fixed predictions (drawn here with the same
law), so that each predictor can be read off against the lookahead's results at those
levels.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.prediction_error`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.prediction_error", *sys.argv[1:]]
    )

from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.sim.estimators import make_estimator  # noqa: E402
from hpcgym.workload import WindowSampler, load  # noqa: E402
from hpcgym.workload.core import Workload  # noqa: E402
from research.probes.ordering_headroom import GUARDS, predictions  # noqa: E402


@dataclass(frozen=True)
class ErrorStats:
    """Pooled log errors of one predictor (``ln(prediction / run time)``)."""

    jobs: int
    mean: float
    sd: float
    median_abs: float
    within_2x: float
    short_recall: float
    short_precision: float
    user_share: float = float("nan")
    corr: float = float("nan")
    user_corr: float = float("nan")


def log_errors(pred: np.ndarray, runtime: np.ndarray) -> np.ndarray:
    """``ln(prediction) - ln(run time)``, both floored at 1 s."""
    return np.log(np.maximum(pred, 1.0)) - np.log(np.maximum(runtime, 1.0))


def _in_groups(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The jobs of groups of at least two jobs (a lone job's group would explain its
    whole error) and their group numbers ``0..G-1``."""
    _, g, n = np.unique(np.asarray(groups), return_inverse=True, return_counts=True)
    keep = n[g] >= 2
    return keep, np.unique(g[keep], return_inverse=True)[1].ravel()


def _within(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``x`` less the mean of its group."""
    return x - (np.bincount(g, weights=x) / np.bincount(g))[g]


def user_share(e: np.ndarray, groups: np.ndarray) -> float:
    """The share of the variance of the errors ``e`` that lies between groups (a user in
    a window): ``sum n_g (mean_g - mean)^2 / sum (e - mean)^2`` over the jobs of groups
    of at least two jobs. 0: errors independent of the user; 1: one error per user."""
    keep, g = _in_groups(groups)
    if keep.sum() < 2:
        return float("nan")
    e = np.asarray(e, dtype=float)[keep]
    total = float(np.sum((e - e.mean()) ** 2))
    if total == 0.0:
        return float("nan")
    return 1.0 - float(np.sum(_within(e, g) ** 2)) / total


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    sxy, sxx, syy = float(np.sum(x * y)), float(np.sum(x * x)), float(np.sum(y * y))
    return sxy / np.sqrt(sxx * syy) if sxx > 0.0 and syy > 0.0 else float("nan")


def log_corr(pred: np.ndarray, runtime: np.ndarray) -> float:
    """The correlation of ``ln prediction`` with ``ln run time`` (both at least 1 s): how
    much a prediction *tells* about the run time, whatever its bias and scale."""
    x, y = np.log(np.maximum(pred, 1.0)), np.log(np.maximum(runtime, 1.0))
    return _corr(x - x.mean(), y - y.mean())


def within_user_corr(pred: np.ndarray, runtime: np.ndarray, groups: np.ndarray) -> float:
    """:func:`log_corr` within groups (a user in a window; the pooled within-group
    correlation of the deviations from each group's means, over groups of at least two
    jobs): how well the predictions tell one job of a user from another. A prediction
    that is one value per user reads 0 (``nan`` when it varies in no group)."""
    keep, g = _in_groups(groups)
    if keep.sum() < 2:
        return float("nan")
    x = np.log(np.maximum(np.asarray(pred, dtype=float)[keep], 1.0))
    y = np.log(np.maximum(np.asarray(runtime, dtype=float)[keep], 1.0))
    return _corr(_within(x, g), _within(y, g))


def error_stats(
    pred: np.ndarray, runtime: np.ndarray, short: float, groups: np.ndarray | None = None
) -> ErrorStats:
    """The statistics printed per predictor (see the module docstring).

    :param pred: predicted run times, one per job
    :param runtime: the jobs' run times (capped at their requests)
    :param short: seconds under which a job counts as short
    :param groups: a group per job (a user in a window) for :func:`user_share` and
        :func:`within_user_corr`
    """
    pred, runtime = np.asarray(pred, dtype=float), np.asarray(runtime, dtype=float)
    if pred.shape != runtime.shape or not len(pred):
        raise ValueError("pred and runtime must be non-empty and of one length")
    e = log_errors(pred, runtime)
    is_short, said_short = runtime <= short, pred <= short
    return ErrorStats(
        jobs=len(e),
        mean=float(e.mean()),
        sd=float(e.std()),
        median_abs=float(np.median(np.abs(e))),
        within_2x=float(np.mean(np.abs(e) <= np.log(2.0))),
        short_recall=float(said_short[is_short].mean()) if is_short.any() else float("nan"),
        short_precision=float(is_short[said_short].mean()) if said_short.any() else float("nan"),
        user_share=float("nan") if groups is None else user_share(e, groups),
        corr=log_corr(pred, runtime),
        user_corr=float("nan") if groups is None else within_user_corr(pred, runtime, groups),
    )


def window_predictions(window: Workload, predictor: str, guard: str) -> np.ndarray:
    """Every job's prediction by ``predictor`` at its submission, in a run of the
    scheduler ``guard`` on ``window`` (its own schedule decides what is known when)."""
    if guard not in GUARDS:
        raise ValueError(f"unknown guard {guard!r}; valid: {', '.join(GUARDS)}")
    sim = get_scheduler(guard).make_simulation(window)
    pred = predictions(sim, predictor)
    sim.run()
    return pred.copy()


def noisy_predictions(
    runtime: np.ndarray,
    s: float,
    rng: np.random.Generator,
    shared: float = 0.0,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """The fixed predictions of ``runtimes=noisy,noise=s[,shared=r]``: ``run time *
    exp(s * e)``, ``e = sqrt(1 - r) e_job + sqrt(r) e_group`` (``groups``: a user in a
    window, required when ``shared > 0``)."""
    e = rng.standard_normal(len(runtime))
    if shared > 0.0:
        if groups is None:
            raise ValueError("shared > 0 needs the jobs' groups")
        _, g = np.unique(np.asarray(groups), return_inverse=True)
        e = np.sqrt(1.0 - shared) * e + np.sqrt(shared) * rng.standard_normal(int(g.max()) + 1)[g]
    return np.maximum(runtime, 1.0) * np.exp(s * e)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", default="synthetic")
    p.add_argument("--split", default="train", choices=["train", "validation"])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--guard", default="ELOSS", choices=GUARDS)
    p.add_argument(
        "--predictors",
        nargs="+",
        default=["request", "ave2", "eloss", "log-ridge:lam=10"],
        help="online predictors (hpcgym.predictors.estimator_names())",
    )
    p.add_argument("--noise", type=float, nargs="*", default=[0.25, 0.5, 1.0])
    p.add_argument(
        "--shared",
        type=float,
        nargs="*",
        default=[0.0],
        help="shares of the noisy rows' error variance a user's jobs have in common "
        "(LOOKAHEAD1-ONLINE's shared=; a row per noise level and share)",
    )
    p.add_argument("--short", type=float, default=60.0, help="seconds (default 60)")
    args = p.parse_args(argv)
    for name in args.predictors:  # an unknown name fails now, with the valid ones
        try:
            make_estimator(name)
        except ValueError as exc:
            p.error(f"--predictors: {exc}")
    if any(not (s > 0.0) for s in args.noise):
        p.error("--noise: each level must be > 0")
    if any(not (0.0 <= r <= 1.0) for r in args.shared):
        p.error("--shared: each share must be in [0, 1]")
    wl = load(args.trace)
    starts = WindowSampler(wl, args.length, args.split, seed=args.seed).sample_many(args.windows)
    windows = [wl.window(int(s), args.length) for s in starts]
    runtime = np.concatenate([np.minimum(w.runtime, w.request).astype(float) for w in windows])
    groups = np.concatenate(
        [np.stack([np.full(len(w), i), np.asarray(w.user)], axis=1) for i, w in enumerate(windows)]
    )
    groups = np.unique(groups, axis=0, return_inverse=True)[1].ravel()  # a user in a window
    rows: dict[str, ErrorStats] = {}
    for name in args.predictors:
        pred = np.concatenate([window_predictions(w, name, args.guard) for w in windows])
        rows[name] = error_stats(pred, runtime, args.short, groups)
    rng = np.random.default_rng(args.seed)
    for s in args.noise:
        for r in args.shared:
            label = f"noisy-{s:g}" + (f",shared={r:g}" if r > 0.0 else "")
            noisy = noisy_predictions(runtime, s, rng, r, groups)
            rows[label] = error_stats(noisy, runtime, args.short, groups)
    print(
        f"{args.trace}: {args.windows} {args.split} windows of {args.length} jobs (seed "
        f"{args.seed}), {len(runtime)} jobs; predictions at submission in runs of "
        f"{args.guard}; log error = ln(prediction / run time)"
    )
    print(
        f"| predictor | mean log error | SD | median abs | within 2x | "
        f"short (<= {args.short:g} s) found | flag precision | user share | corr | "
        f"within-user corr |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(
            f"| {name} | {r.mean:+.2f} | {r.sd:.2f} | {r.median_abs:.2f} | "
            f"{r.within_2x:.2f} | {r.short_recall:.2f} | {r.short_precision:.2f} | "
            f"{r.user_share:.2f} | {r.corr:.2f} | {r.user_corr:.2f} |"
        )


if __name__ == "__main__":
    main()
