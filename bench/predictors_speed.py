"""Speed (and a rough accuracy check) of the runtime estimators on a whole trace.

Run::

    HPCGYM_TRACE_DIR=path/to/traces PYTHONPATH=. python bench/predictors_speed.py \
        [--trace SDSC-SP2] [--only eloss,ave2]

The driver is NOT the simulator: it replays the trace in submit order as if every job
started at its submission (no queueing) and treats a job as finished once
``submit_i + runtime_i <= current submit``. That exercises every call the engine
makes (``bind``, ``observe_finished`` in completion order, ``observe_started``,
``predict`` with a :class:`SystemView` of the running jobs) with a realistic history,
so it measures the estimators' own cost. The accuracy columns are only indicative:
in a real simulation jobs wait, so histories and running sets differ.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hpcgym.predictors import make_estimator
from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.predictors.eloss import asymmetric_loss
from hpcgym.workload.core import Workload

#: estimators measured by default (name, options)
DEFAULT: list[tuple[str, dict]] = [
    ("request", {}),
    ("actual", {}),
    ("noisy", {"level": 0.2}),
    ("ave2", {}),
    ("tang-user", {}),
    ("tang-project", {}),
    ("tang-combined", {}),
    ("tang-selective", {}),
    ("eloss", {}),
    ("eloss", {"over": "squared", "under": "squared", "weight": "constant"}),
    ("log-ridge", {"lam": 10.0}),
    ("log-ridge", {"lam": 10.0, "templates": True}),
]


def ideal_replay(est: Estimator, w: Workload, rng: np.random.Generator) -> np.ndarray:
    """Estimates of every job of ``w`` with the no-queueing driver described above."""
    est.bind(w, rng)
    if not est.online:
        out = est.static_estimates()
        assert out is not None
        return out
    n = len(w)
    submit = np.asarray(w.submit, dtype=np.float64)
    end = submit + np.asarray(w.runtime, dtype=np.float64)
    by_end = np.argsort(end, kind="stable")
    procs = np.asarray(w.procs, dtype=np.int64)
    start = np.full(n, np.nan)
    running: dict[int, None] = {}  # insertion-ordered set
    used = 0
    fin = 0
    out = np.empty(n)
    sub = submit.tolist()
    end_l = end.tolist()
    for j in range(n):
        now = sub[j]
        lo = fin
        while fin < n and end_l[by_end[fin]] <= now:
            fin += 1
        if fin > lo:
            done = by_end[lo:fin]
            for i in done.tolist():
                del running[i]
                used -= int(procs[i])
            est.observe_finished(done, end[done])
        view = SystemView(
            now=now,
            running=np.fromiter(running, dtype=np.int64, count=len(running)),
            start=start,
            free=max(w.machine_size - used, 0),
            machine_size=w.machine_size,
        )
        out[j] = est.predict(j, view)
        start[j] = now
        running[j] = None
        used += int(procs[j])
        est.observe_started(np.array([j]), np.array([now]))
    return out


def naive_tang_user(w: Workload, percentile: float = 80.0, min_jobs: int = 50) -> np.ndarray:
    """Reference for the Tang user scheme that sorts the user's whole history at every
    submission (used to measure what the incremental sorted lists save)."""
    n = len(w)
    end = w.submit + w.runtime
    by_end = np.argsort(end, kind="stable")
    hist: dict[int, list[float]] = {}
    ratio = (w.runtime / w.request).tolist()
    fin = 0
    out = np.empty(n)
    for j in range(n):
        while fin < n and end[by_end[fin]] <= w.submit[j]:
            i = int(by_end[fin])
            if w.user[i] >= 0:
                hist.setdefault(int(w.user[i]), []).append(ratio[i])
            fin += 1
        h = hist.get(int(w.user[j]), [])
        a = float(np.percentile(h, percentile, method="higher")) if len(h) >= min_jobs else 1.0
        out[j] = w.request[j] * a
    return out


def main() -> None:
    from hpcgym.workload import load

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default="SDSC-SP2")
    ap.add_argument("--only", default="", help="comma-separated estimator names")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    w = load(args.trace)
    print(f"{args.trace}: {len(w)} jobs, machine {w.machine_size}")
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    p, q = w.runtime, w.procs
    print(
        f"{'estimator':58s} {'seconds':>8s} {'us/job':>7s} {'MAE':>8s} "
        f"{'under%':>7s} {'meanE-Loss':>11s}"
    )
    for name, opts in DEFAULT:
        if only and name not in only:
            continue
        est = make_estimator(name, **opts)
        t0 = time.perf_counter()
        pred = ideal_replay(est, w, np.random.default_rng(args.seed))
        dt = time.perf_counter() - t0
        assert np.all(pred <= w.request) and np.all(pred > 0)
        mae = float(np.mean(np.abs(pred - p)))
        under = 100.0 * float(np.mean(pred < p))
        eloss = float(np.mean(asymmetric_loss(pred, p, q)))
        label = est.name if not opts or name == "noisy" else f"{name} {opts}"
        print(
            f"{label:58s} {dt:8.2f} {1e6 * dt / len(w):7.1f} {mae:8.0f} {under:7.1f} {eloss:11.3g}"
        )
        extra = getattr(est, "time_reference", None)
        if extra:
            print(f"    time features: {extra}")

    if not only or "tang-user" in only:
        t0 = time.perf_counter()
        ref = naive_tang_user(w)
        dt = time.perf_counter() - t0
        ours = ideal_replay(make_estimator("tang-user"), w, np.random.default_rng(0))
        same = bool(np.array_equal(np.minimum(np.maximum(ref, 1.0), w.request), ours))
        print(f"naive tang-user (np.percentile per submission): {dt:.2f} s; identical: {same}")


if __name__ == "__main__":
    main()
