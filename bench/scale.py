"""How the cost of an env-step and of a training step grows with the queue length ``K``,
the machine size and the number of envs ``N``.

Three axes, one at a time, the others at their defaults (``K`` = 128 rows, Lublin-1, N =
64 envs for the env and the fast preset's ``n_envs`` for training):

* ``queue``: ``K`` in ``--queue`` (default 16 64 128 256 512) on Lublin-1;
* ``machine``: the traces of ``--traces`` (default Lublin-1 (256 processors), SDSC-SP2
  (128), HPC2N (240), SDSC-BLUE (1,152), CEA-Curie (93,312));
* ``envs``: ``N`` in ``--envs`` (default 1 4 16 64 256) on Lublin-1.

Each point reports the compiled vector env's env-steps/s (``bench/env_speed.py``'s all-in
loop: random valid actions, autoresets, the reference simulated for every new window;
one thread) and the end-to-end training steps/s of ``--preset fast`` (rollouts and
updates, ``bench/train_speed.py``'s measurement) with the same ``K`` / trace / ``N`` and
the same update size at every point (``--rollout`` steps, 3,072 by default: the fast
preset's on SDSC-SP2; the preset's own size follows the decisions per window, which differ
by trace), each also as microseconds per step. ``--task schedule`` measures ``Schedule-v0``.

Usage::

    HPCGYM_TRACE_DIR=path/to/traces python bench/scale.py [--axes queue machine envs]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.scale`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.scale", *sys.argv[1:]])

from bench.env_speed import vector_rate  # noqa: E402
from bench.train_speed import measure  # noqa: E402
from hpcgym.envs.backfill_env import BackfillEnv  # noqa: E402
from train.config import PRESETS  # noqa: E402

#: the default of each axis: (trace, K, N of the env, N of training: the fast preset's)
DEFAULTS: dict[str, Any] = {
    "trace": "Lublin-1",
    "K": 128,
    "env_n": 64,
    "train_n": PRESETS["fast"]["n_envs"],
}


def point(args: argparse.Namespace, trace: str, k: int, env_n: int, train_n: int | None) -> str:
    """One row's cells: processors, env-steps/s, µs per env-step, training steps/s, µs."""
    procs = BackfillEnv(trace=trace, window_length=256).workload.machine_size
    env = max(
        vector_rate(
            trace,
            "guarded",
            env_n,
            args.steps,
            r,
            False,
            task=args.task,
            kind="compiled",
            max_queue=k,
        )  # fmt: skip
        for r in range(args.repeat)
    )
    cells = [f"{procs:,}", f"{env:,.0f}", f"{1e6 / env:.2f}"]
    if train_n is None or args.train_steps <= 0:
        return " | ".join([*cells, "-", "-"])
    n_steps = max(1, math.ceil(args.rollout / train_n))  # the same update size everywhere
    name = f"fast+max_queue={k}+n_envs={train_n}+task={args.task}+n_steps={n_steps}"
    train = max(
        measure(name, trace, args.train_steps, r)["steps_per_s"] for r in range(args.repeat)
    )
    return " | ".join([*cells, f"{train:,.0f}", f"{1e6 / train:.1f}"])


def main(argv: list[str] | None = None) -> int:
    """Print the table of the chosen axes.

    :param argv: command-line arguments
    """
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--axes", nargs="*", choices=["queue", "machine", "envs"],
                   default=["queue", "machine", "envs"])  # fmt: skip
    p.add_argument("--queue", nargs="*", type=int, default=[16, 64, 128, 256, 512])
    p.add_argument("--traces", nargs="*",
                   default=["Lublin-1", "SDSC-SP2", "HPC2N", "SDSC-BLUE", "CEA-Curie"])  # fmt: skip
    p.add_argument("--envs", nargs="*", type=int, default=[1, 4, 16, 64, 256])
    p.add_argument("--task", choices=["backfill", "schedule"], default="backfill")
    p.add_argument("--steps", type=int, default=20_000, help="env-steps per env point")
    p.add_argument("--train-steps", type=int, default=20_000,
                   help="training steps per point (0: the env only)")  # fmt: skip
    p.add_argument("--repeat", type=int, default=1, help="runs per point (the best kept)")
    p.add_argument(
        "--rollout", type=int, default=3072, help="training steps per update (n_steps = rollout/N)"
    )
    args = p.parse_args(argv)
    d = DEFAULTS
    print("| axis | value | processors | env-steps/s | µs per env-step | training steps/s "
          "| µs per training step |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    for axis in args.axes:
        if axis == "queue":
            rows = [(f"K = {k}", d["trace"], k, d["env_n"], d["train_n"]) for k in args.queue]
        elif axis == "machine":
            rows = [(t, t, d["K"], d["env_n"], d["train_n"]) for t in args.traces]
        else:
            rows = [(f"N = {n}", d["trace"], d["K"], n, n) for n in args.envs]
        for label, trace, k, env_n, train_n in rows:
            print(f"| {axis} | {label} | {point(args, trace, k, env_n, train_n)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
