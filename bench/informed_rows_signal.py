"""Do Schedule-v0's informed rows carry signal? A one-line rule on their columns.

The rule reads only the observation (``rows="informed"``): among the rows, in the order
of the env's reference, the first whose user's most recently finished like job (same
user, request and processors; from the accounting log before the window and the
window's finished jobs) ran at most ``--threshold`` seconds goes first; without one, row
0 (the reference's choice). Played in the env on ``--windows`` windows of ``--split``
against the env's default (deployable) reference, whose starvation guard applies to the
rule alike. Row 0 is played too, as a check that it is the reference (ratio 1).

Prints, per trace: the paired geometric-mean AVEbsld ratio to the reference with its 95%
bootstrap interval, the ratio of means, and the mean per-window maximum wait of both::

    python bench/informed_rows_signal.py --traces SDSC-SP2 HPC2N --split validation
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from hpcgym.envs.informed_rows import INFORMED_COLUMNS
from hpcgym.envs.queue_observation import QUEUE_COLUMNS
from hpcgym.envs.schedule_env import ScheduleEnv
from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.evaluation.windows import select_windows

COLUMNS = QUEUE_COLUMNS + tuple(INFORMED_COLUMNS)
LIKE_COUNT = COLUMNS.index("like_count")
LIKE_LAST = COLUMNS.index("like_last")


def like_rule(obs: np.ndarray, mask: np.ndarray, cut: float) -> int:
    """The first row whose last like job's scaled run time is at most ``cut``, else 0."""
    hit = mask & (obs[:, LIKE_COUNT] > 0) & (obs[:, LIKE_LAST] <= cut * (1 + 1e-6))  # float32
    rows = np.flatnonzero(hit)
    return int(rows[0]) if rows.size else 0


def play(env: ScheduleEnv, start: int, rule: str, cut: float) -> tuple[dict, dict]:
    """One window: the agent's and the reference's metrics."""
    obs, info = env.reset(seed=0, options={"start": start})
    done = False
    while not done:
        a = 0 if rule == "row0" else like_rule(obs, env.action_masks(), cut)
        obs, _, term, trunc, info = env.step(a)
        done = term or trunc
    return info["agent"], info["reference"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", nargs="+", default=["SDSC-SP2", "HPC2N"])
    ap.add_argument("--split", default="validation")
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=5, help="window seed")
    ap.add_argument("--threshold", type=float, default=60.0, help="seconds")
    args = ap.parse_args(argv)
    for trace in args.traces:
        t = time.time()
        env = ScheduleEnv(
            trace=trace,
            split=args.split,
            window_length=args.length,
            rows="informed",
            row_predictor="request",  # the rule reads the like-job columns only
        )
        cut = math.log1p(args.threshold / 10.0) / math.log1p(env.est_scale / 10.0)
        ws = select_windows(
            len(env.workload), args.length, args.windows, split=args.split, seed=args.seed
        )
        res: dict[str, list[tuple[dict, dict]]] = {"row0": [], "like": []}
        for s in ws.starts:
            for rule in res:
                res[rule].append(play(env, s, rule, cut))
        ref = [r["avg_bsld"] for _, r in res["row0"]]
        print(
            f"{trace} {args.split}: {len(ws.starts)} windows of {args.length} jobs, "
            f"window seed {args.seed}, reference {env.reference.name} ({time.time() - t:.0f} s)"
        )
        for rule, runs in res.items():
            agent = [a["avg_bsld"] for a, _ in runs]
            c = paired_comparison(agent, ref)
            print(
                f"  {rule:5s} ratio {c.geo_ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] "
                f"ratio of means {np.mean(agent) / np.mean(ref):.3f}  max wait "
                f"{np.mean([a['max_wait'] for a, _ in runs]) / 3600:.1f} h (reference "
                f"{np.mean([r['max_wait'] for _, r in runs]) / 3600:.1f} h)"
            )


if __name__ == "__main__":
    main()
