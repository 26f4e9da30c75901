"""Which information known at submission tells one of a user's jobs from another?

The online one-step lookahead (``LOOKAHEAD1-ONLINE``) gains on ELOSS only when its run-time model
tells a user's jobs apart: perfect per-user pools of the real run times are on par, the
real run times are not, and the predictors' within-user correlation with the run time
(0.15-0.34) is no better than the request's (docs/research/findings.md). This probe asks
the question of the inputs rather than the predictors: for each piece of information a job
carries at its submission, how much of a user's run-time variation within a window does it
explain?

On each window (the windows ``eval/compare.py`` draws with the same trace, split, seed,
count and length) every job gets the signals below, and the log run time (capped at the
request, at least 1 s) is regressed on them *within* a group, the deviations from the
group's means pooled over all windows' groups of at least two jobs with the signal
known. Printed per signal: the jobs that have it, and the multiple correlation ``R``
(the square root of the share of the within-group variance explained, 0 to 1) within a
user in a window and within a user *and request* in a window (the jobs a request cannot
tell apart: where the lookahead's gain from the real run times lies)::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/user_signal.py --trace HPC2N

Signals (``--signals``):

* ``request``, ``procs``: log requested time, log processors;
* ``memory``: log requested memory (SWF field 10; jobs where the log records it);
* ``memory-given``: 1 if the job's requested memory is recorded, else 0 (on a trace
  that records it for some jobs);
* ``time-of-day``: cos and sin of the submission's hour (two inputs);
* ``gap``: log(1 + seconds since the user's previous submission in the window);
* ``request-change``: log of the request over the user's previous request in the window;
* ``same-request``, ``same-queue``, ``same-executable``: categorical signals, out of
  sample (:func:`category_r`): each job's log run time is predicted by the mean of the
  user's *other* jobs in the window with the same value, against the mean of the user's
  other jobs (a value unique to one job tells nothing). This reads the other jobs' run
  times, so it measures what the category could tell a model that had learned it, like
  ``LOOKAHEAD1-ONLINE,runtimes=user-pool,match=user-request`` does for the request; ``R`` is
  ``sqrt(1 - SSE / SSE without the category)``, 0 where the category does worse;
* ``all``: every numeric signal the trace records, at once (the jobs that have them
  all; a job without a recorded memory counts with memory 0 and ``memory-given`` 0);
* ``last-finished``: the log run time of the user's job with the same request that
  finished last before the submission, in the trace's own schedule (the run-time
  history a predictor or the lookahead's ``user-history`` sampler reads); and
  ``last-submitted``: that of the one submitted last, finished or not (not known online:
  how much a user's consecutive like jobs resemble each other).

A ``blur-<s>`` row per ``--noise`` level gives the same statistics for the run time
blurred by ``exp(s e)``, ``e ~ N(0, 1)`` (``LOOKAHEAD1-ONLINE,runtimes=noisy,noise=s``), the
scale on which the lookahead was measured: at ``s = 2`` the lookahead's gain is already within
its seed noise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.user_signal`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.user_signal", *sys.argv[1:]])

from hpcgym.workload import WindowSampler, load, workload_fields  # noqa: E402
from hpcgym.workload.core import Workload  # noqa: E402

#: Numeric signals (:func:`numeric_inputs`).
NUMERIC = ("request", "procs", "memory", "memory-given", "time-of-day", "gap", "request-change")
#: Categorical signals: name -> the workload column whose equal values form a category.
CATEGORICAL = {"same-request": "request", "same-queue": "queue", "same-executable": "executable"}
#: Run-time history signals (:func:`history_inputs`).
HISTORY = ("last-finished", "last-submitted")
SIGNALS = (*NUMERIC, *CATEGORICAL, "all", *HISTORY)


def _previous(user: np.ndarray) -> np.ndarray:
    """Index of each job's user's previous job in the array (-1: none)."""
    prev = np.full(len(user), -1, dtype=np.int64)
    last: dict[int, int] = {}
    for i, u in enumerate(user.tolist()):
        prev[i] = last.get(u, -1)
        last[u] = i
    return prev


def numeric_inputs(w: Workload, name: str, memory: np.ndarray | None) -> np.ndarray:
    """The ``(n, k)`` inputs of numeric signal ``name`` for the jobs of window ``w``
    (``nan`` where a job's signal is unknown).

    :param memory: the window's requested memory (SWF field 10), or ``None``
    """
    n = len(w)
    if name == "request":
        return np.log(np.maximum(w.request, 1.0))[:, None]
    if name == "procs":
        return np.log(np.maximum(w.procs, 1).astype(float))[:, None]
    if name == "memory":
        if memory is None:
            return np.full((n, 1), np.nan)
        return np.where(memory > 0, np.log(np.maximum(memory, 1.0)), np.nan)[:, None]
    if name == "memory-given":
        if memory is None or not np.any(memory > 0):
            return np.full((n, 1), np.nan)
        return (memory > 0).astype(float)[:, None]
    if name == "time-of-day":
        a = 2.0 * np.pi * (np.asarray(w.submit) % 86_400.0) / 86_400.0
        return np.stack([np.cos(a), np.sin(a)], axis=1)
    prev = _previous(np.asarray(w.user))
    has = prev >= 0
    out = np.full(n, np.nan)
    if name == "gap":
        out[has] = np.log1p(w.submit[has] - w.submit[prev[has]])
    elif name == "request-change":
        out[has] = np.log(w.request[has] / w.request[prev[has]])
    else:
        raise ValueError(f"unknown numeric signal {name!r}; valid: {', '.join(NUMERIC)}")
    return out[:, None]


def history_inputs(w: Workload, name: str) -> np.ndarray:
    """The ``(n, 1)`` log run time (capped at the request, at least 1 s) of the user's
    job with the same request that finished last before each job's submission
    (``last-finished``; finish times from the trace's own schedule, submit + recorded
    wait + run time), or that was submitted last before it, finished or not
    (``last-submitted``: not known online, a reference); ``nan`` where there is none
    (every job of a window without a recorded schedule, for ``last-finished``)."""
    if name not in HISTORY:
        raise ValueError(f"unknown history signal {name!r}; valid: {', '.join(HISTORY)}")
    n = len(w)
    y = np.log(np.maximum(np.minimum(w.runtime, w.request), 1.0))
    out = np.full(n, np.nan)
    if name == "last-finished" and w.recorded_wait is None:
        return out[:, None]
    wait = np.zeros(n) if w.recorded_wait is None else np.nan_to_num(w.recorded_wait)
    finish = np.asarray(w.submit) + wait + np.asarray(w.runtime)
    seen: dict[tuple[int, float], list[int]] = {}
    for i, key in enumerate(zip(w.user.tolist(), w.request.tolist(), strict=True)):
        before = seen.setdefault(key, [])
        if before and name == "last-submitted":
            out[i] = y[before[-1]]
        elif before:
            idx = np.array(before)
            done = idx[finish[idx] <= w.submit[i]]
            if done.size:
                out[i] = y[done[np.argmax(finish[done])]]
        before.append(i)
    return out[:, None]


def loo_mean(y: np.ndarray, key: np.ndarray) -> np.ndarray:
    """For each job, the mean of ``y`` over the *other* jobs with its ``key`` (``nan``
    where there is none)."""
    k = np.unique(np.asarray(key), axis=0, return_inverse=True)[1]
    k = np.asarray(k).ravel()
    total = np.bincount(k, weights=y)[k]
    count = np.bincount(k)[k]
    out = np.full(len(y), np.nan)
    more = count > 1
    out[more] = (total[more] - y[more]) / (count[more] - 1)
    return out


def category_r(y: np.ndarray, groups: np.ndarray, category: np.ndarray) -> tuple[float, int]:
    """How much a category tells within groups, out of sample: each job's ``y`` is
    predicted by the mean of the other jobs of its group *with its category*, against
    the mean of the other jobs of its group, over the jobs that have a category-mate in
    their group.

    :return: ``R = sqrt(max(0, 1 - SSE_category / SSE_group))`` (0: the category tells
        nothing the group's other jobs do not; ``nan`` without category-mates) and the
        jobs used
    """
    groups = np.asarray(groups)
    by_cat = loo_mean(y, np.stack([groups, np.asarray(category)], axis=1))
    by_group = loo_mean(y, groups)
    ok = ~np.isnan(by_cat)
    if not ok.any():
        return float("nan"), 0
    sse_group = float(np.sum((y[ok] - by_group[ok]) ** 2))
    if sse_group == 0.0:
        return float("nan"), int(ok.sum())
    r2 = 1.0 - float(np.sum((y[ok] - by_cat[ok]) ** 2)) / sse_group
    return float(np.sqrt(max(0.0, r2))), int(ok.sum())


def within_r(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, int]:
    """The multiple correlation of ``y`` with the columns of ``x`` within groups.

    Jobs with any input unknown (``nan``) are left out, then groups of fewer than two
    jobs; the inputs and ``y`` are taken as deviations from their group's means and
    ``y``'s are regressed on the inputs' by least squares.

    :return: ``R`` (``nan`` when nothing varies within a group) and the jobs used
    """
    x = np.asarray(x, dtype=float).reshape(len(y), -1)
    ok = ~np.isnan(x).any(axis=1)
    g = np.unique(np.asarray(groups)[ok], return_inverse=True)[1].ravel()
    sizes = np.bincount(g)
    keep = sizes[g] >= 2
    if keep.sum() < 3:
        return float("nan"), 0
    g = np.unique(g[keep], return_inverse=True)[1].ravel()
    counts = np.bincount(g)

    def dev(a: np.ndarray) -> np.ndarray:
        return a - (np.bincount(g, weights=a) / counts)[g]

    xk = x[ok][keep]
    xs = np.stack([dev(c) for c in xk.T], axis=1)
    ys = dev(np.asarray(y, dtype=float)[ok][keep])
    sst = float(ys @ ys)
    if sst == 0.0 or not np.any(np.abs(xs) > 1e-9 * (1.0 + np.abs(xk).max())):
        return float("nan"), int(keep.sum())
    beta = np.linalg.lstsq(xs, ys, rcond=None)[0]
    res = ys - xs @ beta
    r2 = max(0.0, 1.0 - float(res @ res) / sst)
    return float(np.sqrt(r2)), int(keep.sum())


def signal_table(
    windows: list[Workload],
    signals: list[str],
    noise: list[float],
    rng: np.random.Generator,
    memory: list[np.ndarray | None] | None = None,
) -> list[tuple[str, int, float, float]]:
    """Rows ``(signal, jobs, R within user, R within user and request)`` (module
    docstring) over the jobs of ``windows``.

    :param memory: each window's requested memory (SWF field 10), or ``None``
    """
    mem = memory if memory is not None else [None] * len(windows)
    y = np.concatenate([np.log(np.maximum(np.minimum(w.runtime, w.request), 1.0)) for w in windows])
    win = np.concatenate([np.full(len(w), i) for i, w in enumerate(windows)])
    user = np.concatenate([np.asarray(w.user) for w in windows])
    request = np.concatenate([np.asarray(w.request) for w in windows])
    by_user = np.unique(np.stack([win, user], axis=1), axis=0, return_inverse=True)[1].ravel()
    by_req = np.unique(np.stack([by_user, request], axis=1), axis=0, return_inverse=True)[1]
    by_req = np.asarray(by_req).ravel()

    def numeric(name: str) -> np.ndarray:
        parts = [numeric_inputs(w, name, m) for w, m in zip(windows, mem, strict=True)]
        return np.concatenate(parts)

    def every() -> np.ndarray:
        x = np.concatenate([numeric(s) for s in NUMERIC], axis=1)
        given = x[:, NUMERIC.index("memory-given")]
        if not np.isnan(given).all():  # unknown memory: 0, told apart by memory-given
            col = NUMERIC.index("memory")
            x[:, col] = np.where(given == 0.0, 0.0, x[:, col])
        return x[:, ~np.isnan(x).all(axis=0)]  # a signal the trace never records

    rows = []
    for s in signals:
        if s in CATEGORICAL:
            cat = np.concatenate([np.asarray(w.column(CATEGORICAL[s])) for w in windows])
            r_user, n = category_r(y, by_user, cat)
            # the request's category is the group itself: nothing to tell there
            r_req = float("nan") if s == "same-request" else category_r(y, by_req, cat)[0]
        else:
            if s in HISTORY:
                x = np.concatenate([history_inputs(w, s) for w in windows])
            else:
                x = every() if s == "all" else numeric(s)
            r_user, n = within_r(x, y, by_user)
            r_req, _ = within_r(x, y, by_req)
        rows.append((s, n, r_user, r_req))
    for s in noise:
        blur = (y + s * rng.standard_normal(len(y)))[:, None]
        r_user, n = within_r(blur, y, by_user)
        r_req, _ = within_r(blur, y, by_req)
        rows.append((f"blur-{s:g}", n, r_user, r_req))
    return rows


def _fmt(r: float) -> str:
    return "—" if np.isnan(r) else f"{r:.2f}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", default="synthetic")
    p.add_argument("--split", default="train", choices=["train", "validation"])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--signals", nargs="+", default=list(SIGNALS), choices=SIGNALS)
    p.add_argument("--noise", type=float, nargs="*", default=[1.0, 2.0])
    args = p.parse_args(argv)
    if any(not (s > 0.0) for s in args.noise):
        p.error("--noise: each level must be > 0")
    wl = load(args.trace)
    starts = WindowSampler(wl, args.length, args.split, seed=args.seed).sample_many(args.windows)
    windows = [wl.window(int(s), args.length) for s in starts]
    memory: list[np.ndarray | None] = [None] * len(windows)
    try:  # the trace's file is read once; each window takes its slice
        mem = workload_fields(wl, ["requested memory"])["requested memory"]
        memory = [mem[int(s) : int(s) + args.length] for s in starts]
    except ValueError:  # a generated workload: no raw SWF fields
        pass
    rows = signal_table(windows, args.signals, args.noise, np.random.default_rng(args.seed), memory)
    print(
        f"{args.trace}: {args.windows} {args.split} windows of {args.length} jobs (seed "
        f"{args.seed}); R = multiple correlation with the log run time within the group"
    )
    print("| signal | jobs | R within user | R within user and request |")
    print("|---|---:|---:|---:|")
    for name, n, r_user, r_req in rows:
        print(f"| {name} | {n} | {_fmt(r_user)} | {_fmt(r_req)} |")


if __name__ == "__main__":
    main()
