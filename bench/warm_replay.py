"""What the shared replay of the accounting log saves (``hpcgym/sim/warmcache.py``).

A warm-started estimator (``warm=log``) replays the trace's recorded schedule before each
window at every bind. A search binds every window once per candidate; an evaluation once
per method. This binds ``--candidates`` rounds of the same ``--windows`` train-split
windows (drawn with ``--seed``, in the draw's order, as the envs of a search reset), with
each window's own replay and with the replay shared by the process, and prints the
seconds per bind of each, the memory of a bound window's estimator state (its own arrays, not
the tables it shares with the trace's replay) and whether the replayed E-Loss outputs of
every past job agree::

    HPCGYM_TRACE_DIR=../shared/traces python bench/warm_replay.py --trace SDSC-SP2
    HPCGYM_TRACE_DIR=../shared/traces python bench/warm_replay.py --trace SDSC-SP2 \
        --candidates 1 --order starts
    HPCGYM_TRACE_DIR=../shared/traces python bench/warm_replay.py --trace HPC2N \
        --spec eloss:warm=log
    # the same with every job's features kept (E-Loss's X, for analysis)
    HPCGYM_TRACE_DIR=../shared/traces python bench/warm_replay.py --trace HPC2N \
        --spec eloss:keep_features=true,warm=log

Exit status 1 if any state differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.warm_replay`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.warm_replay", *sys.argv[1:]])

from hpcgym.evaluation.windows import select_windows  # noqa: E402
from hpcgym.sim import warmcache  # noqa: E402
from hpcgym.sim.estimators import make_estimator  # noqa: E402
from hpcgym.workload import load  # noqa: E402


def state_bytes(est: object) -> int:
    """Bytes of the numpy arrays a bound estimator owns (views of another array, such as
    the per-job tables shared with the replay, are not counted)."""
    return sum(v.nbytes for v in vars(est).values() if isinstance(v, np.ndarray) and v.base is None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", default="SDSC-SP2")
    ap.add_argument("--spec", default="log-ridge:lam=10,warm=log", help="a warm estimator spec")
    ap.add_argument("--windows", type=int, default=64)
    ap.add_argument("--candidates", type=int, default=3, help="rounds of binds of the windows")
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--split", default="train")
    ap.add_argument(
        "--order",
        choices=("draw", "starts"),
        default="draw",
        help="bind the windows in the draw's order (default) or in the order of their "
        "starts, as play_windows resets its envs",
    )
    ns = ap.parse_args(argv)
    full = load(ns.trace)
    starts = select_windows(len(full), ns.length, ns.windows, split=ns.split, seed=ns.seed).starts
    if ns.order == "starts":
        starts = np.sort(starts)
    rng = np.random.default_rng(0)
    outputs: dict[bool, list[np.ndarray]] = {}
    seconds: dict[bool, float] = {}
    owned: list[int] = []
    for shared in (False, True):
        warmcache.clear()
        warmcache.set_enabled(shared)
        t = time.perf_counter()
        outs: list[np.ndarray] = []
        for _ in range(ns.candidates):
            for s in starts:
                est = make_estimator(ns.spec)
                est.bind(full.window(int(s), ns.length), rng)
                outs.append(np.asarray(est.inner.__dict__["predictions"][: int(s)]))
                if shared:
                    owned.append(state_bytes(est.inner))
        seconds[shared] = time.perf_counter() - t
        outputs[shared] = outs
    warmcache.set_enabled(True)
    binds = ns.candidates * len(starts)
    same = all(
        np.array_equal(a, b, equal_nan=True)
        for a, b in zip(outputs[False], outputs[True], strict=True)
    )
    mean_start = float(np.mean(starts))
    print(
        f"{ns.trace} ({len(full)} jobs), {ns.spec}: {len(starts)} {ns.split} windows of "
        f"{ns.length} jobs (mean start {mean_start:,.0f}), {ns.candidates} rounds, {binds} binds "
        f"in the order of the {'draw' if ns.order == 'draw' else 'starts'}"
    )
    for shared, label in ((False, "own replay per window"), (True, "replay shared")):
        sec = seconds[shared]
        print(f"  {label:<22} {sec:8.2f} s  ({sec / binds:.3f} s a bind)")
    print(f"  speed-up {seconds[False] / seconds[True]:.1f}x; replayed outputs identical: {same}")
    print(
        f"  a bound window's own arrays: {np.mean(owned) / 2**20:.2f} MB on average "
        f"(largest {max(owned) / 2**20:.2f} MB)"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
