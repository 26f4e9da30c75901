"""Env speed: steps/s of ``hpcgym/Backfill-v0`` with a random valid agent, resets included.

    HPCGYM_TRACE_DIR=../shared/traces python bench/env_speed.py [--steps N] [--repeat R]
    HPCGYM_TRACE_DIR=../shared/traces python bench/env_speed.py --tables vector [--profile]

Setting of the reference measurement (the RLBackfilling code's env: 1,729 steps/s on
this 2-core machine, reset 18.5 ms): 256-job episodes, uniformly random *valid* actions
(STOP included), the time of ``reset()`` and of the agent's choice included ("all-in").
Every configuration starts with an empty normalizer cache, so the normalizer's
simulation of each new window is included too (random windows rarely repeat).

Reported per (trace, mode, normalizer): all-in steps/s (median of ``--repeat`` runs of
``--steps`` steps), the speed-up over the reference, mean ``reset()`` time and the mean
steps per episode. Separately: the uncached normalizer simulation of one window and the
profile share of each part of a step (``--profile``). Results are recorded in
``docs/env.md``.

The ``vector`` table compares, per task (``--tasks backfill schedule``), trace and mode,
the single env with four vector envs at ``N`` = ``--vector-sizes`` (default 1, 16, 64),
in one run, configurations interleaved: Gymnasium's ``SyncVectorEnv`` of single envs,
the native vector env stepped sub-env by sub-env in Python (``compiled=False``), and its
compiled batch step on one thread and on two (``compiled=True, threads=1|2``). Reported:
env-steps/s (autoreset steps, which ignore the action, are not counted), all-in
(uniformly random valid actions drawn for the whole batch, autoresets, the reference
scheduler simulated for every new window), and each as a ratio to the single env.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import statistics
import time
from typing import Any

import numpy as np
from gymnasium.vector import SyncVectorEnv

from hpcgym.envs.backfill_env import BackfillEnv, clear_normalizer_cache
from hpcgym.envs.schedule_env import ScheduleEnv
from hpcgym.envs.vector import BackfillVectorEnv, ScheduleVectorEnv
from hpcgym.sim.engine import warmup

REFERENCE_STEPS_PER_S = 1729.0
#: task -> (single env, native vector env)
TASK_ENVS: dict[str, tuple[Any, Any]] = {
    "backfill": (BackfillEnv, BackfillVectorEnv),
    "schedule": (ScheduleEnv, ScheduleVectorEnv),
}
#: the clock of every measurement: wall time (default) or, with ``--clock cpu``, this
#: process's CPU time (robust on a machine shared with other jobs)
CLOCK = time.perf_counter
REFERENCE_RESET_MS = 18.5


def run(env: BackfillEnv, rng: np.random.Generator, steps: int) -> tuple[float, float, int]:
    """All-in run of ``steps`` steps; returns (seconds, seconds in reset, episodes)."""
    t_reset = 0.0
    episodes = 1
    t0 = CLOCK()
    _, info = env.reset(seed=int(rng.integers(2**31)))
    t_reset += CLOCK() - t0
    mask = info["action_mask"]
    for _ in range(steps):
        valid = np.flatnonzero(mask)
        action = valid[rng.integers(valid.shape[0])]
        _, _, done, _, info = env.step(action)
        mask = info["action_mask"]
        if done:
            t1 = CLOCK()
            _, info = env.reset()
            t_reset += CLOCK() - t1
            mask = info["action_mask"]
            episodes += 1
    return CLOCK() - t0, t_reset, episodes


def bench(
    trace: str,
    mode: str,
    normalizer: str | None,
    steps: int,
    repeat: int,
    reward_mode: str = "terminal",
    features: str = "paper",
) -> dict:
    rates, resets, eps = [], [], []
    for r in range(repeat):
        clear_normalizer_cache()
        env = BackfillEnv(
            trace=trace,
            mode=mode,
            normalizer=normalizer,
            sequence_length=256,
            reward_mode=reward_mode,
            features=features,
        )
        rng = np.random.default_rng(r)
        run(env, rng, 500)  # warm-up (numba cache load, trace load)
        clear_normalizer_cache()
        secs, t_reset, episodes = run(env, rng, steps)
        rates.append(steps / secs)
        resets.append(t_reset / episodes)
        eps.append(steps / episodes)
    return {
        "steps_per_s": statistics.median(rates),
        "reset_ms": 1e3 * statistics.median(resets),
        "steps_per_episode": statistics.median(eps),
    }


def run_vector(venv: Any, rng: np.random.Generator, steps: int) -> tuple[float, int]:
    """All-in run of ``steps`` batched steps; returns (seconds, env-steps taken)."""
    n = venv.num_envs
    t0 = CLOCK()
    _, info = venv.reset(seed=int(rng.integers(2**31)))
    mask = info["action_mask"]
    resetting = np.zeros(n, dtype=bool)
    taken = 0
    for _ in range(steps):
        u = rng.random(mask.shape)  # uniform among the valid actions of every row
        actions = np.where(mask, u, -1.0).argmax(axis=1)
        _, _, term, trunc, info = venv.step(actions)
        taken += n - int(resetting.sum())
        resetting = term | trunc
        mask = info["action_mask"]
    return CLOCK() - t0, taken


#: the vector envs of the ``vector`` table: label -> (kind, native vector env keywords)
VECTOR_KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "sync": ("sync", {}),  # gymnasium.vector.SyncVectorEnv of single envs
    "python": ("native", {"compiled": False}),  # the native env, one Python step per env
    "compiled": ("native", {"compiled": True, "threads": 1}),  # one compiled call
    "compiled-2": ("native", {"compiled": True, "threads": 2}),  # ... on two threads
}


def make_vector(task: str, kind: str, n: int, copy: bool, **kw: Any) -> Any:
    """A vector env of ``task`` (``backfill``/``schedule``): label ``kind`` of
    :data:`VECTOR_KINDS` with ``n`` sub-envs."""
    single, native = TASK_ENVS[task]
    how, extra = VECTOR_KINDS[kind]
    if how == "sync":
        return SyncVectorEnv([lambda: single(**kw) for _ in range(n)], copy=copy)
    return native(n, copy=copy, **extra, **kw)


def vector_rate(
    trace: str,
    mode: str,
    n: int | None,
    steps: int,
    seed: int,
    copy: bool,
    features: str = "paper",
    task: str = "backfill",
    kind: str = "compiled",
    max_queue: int = 128,
) -> float:
    """One all-in run of about ``steps`` env-steps: the single env (``n=None``) or a vector
    env (``kind``) with ``n`` sub-envs; returns env-steps/s (empty normalizer cache, after a
    warm-up)."""
    clear_normalizer_cache()
    rng = np.random.default_rng(seed)
    kw: dict[str, Any] = {"trace": trace, "window_length": 256, "max_queue": max_queue}
    if task == "backfill":
        kw.update(mode=mode, features=features)
    if n is None:
        env = TASK_ENVS[task][0](**kw)
        run(env, rng, 500)  # warm-up
        clear_normalizer_cache()
        secs, _, _ = run(env, rng, steps)
        return steps / secs
    venv = make_vector(task, kind, n, copy, **kw)
    run_vector(venv, rng, max(500 // n, 2))  # warm-up
    clear_normalizer_cache()
    secs, taken = run_vector(venv, rng, max(steps // n, 1))
    return taken / secs


def vector_table(args: argparse.Namespace) -> None:
    """The single env against every vector env of :data:`VECTOR_KINDS` at each ``N``: the
    configurations interleaved within each repeat, the best of the repeats (the least
    disturbed run on a shared machine) reported, with its ratio to the single env."""
    kinds = args.vector_kinds
    print(f"| task | trace | mode | copy | N | single env | {' | '.join(kinds)} | "
          f"{' | '.join(f'{k} vs single' for k in kinds)} |")  # fmt: skip
    print("|---|---|---|---|---:|---:|" + "---:|" * (2 * len(kinds)))
    for task in args.tasks:
        modes = args.modes if task == "backfill" else ["-"]
        for trace, mode, copy in itertools.product(args.traces, modes, args.copies):
            configs: list[tuple[int | None, str]] = [(None, "single")]
            configs += [(n, k) for n in args.vector_sizes for k in kinds]
            best: dict[tuple[int | None, str], float] = {}
            for r in range(args.repeat):
                for n, k in configs:
                    rate = vector_rate(trace, mode, n, args.steps, r, copy, args.features,
                                       task, k)  # fmt: skip
                    best[n, k] = max(best.get((n, k), 0.0), rate)
            single = best[None, "single"]
            for n in args.vector_sizes:
                rates = [best[n, k] for k in kinds]
                cells = " | ".join(f"{x:,.0f}" for x in rates)
                ratios = " | ".join(f"{x / single:.2f}x" for x in rates)
                print(f"| {task} | {trace} | {mode} | {copy} | {n} | {single:,.0f} | {cells} | "
                      f"{ratios} |", flush=True)  # fmt: skip


def profile_vector(trace: str, mode: str, n: int, steps: int) -> str:
    venv = BackfillVectorEnv(n, trace=trace, mode=mode, window_length=256)
    rng = np.random.default_rng(0)
    run_vector(venv, rng, 50)
    prof = cProfile.Profile()
    prof.enable()
    run_vector(venv, rng, max(steps // n, 1))
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(14)
    return out.getvalue()


def normalizer_ms(trace: str, n: int = 200) -> float:
    env = BackfillEnv(trace=trace, sequence_length=256)
    lo, last = env.valid_starts
    starts = np.linspace(lo, last, n).astype(int)
    w = env.workload
    spec = env.normalizer
    assert spec is not None
    spec.simulate(w.window(int(starts[0]), 256))
    t0 = CLOCK()
    for s in starts:
        spec.simulate(w.window(int(s), 256))
    return 1e3 * (CLOCK() - t0) / n


def profile(trace: str, mode: str, steps: int) -> str:
    env = BackfillEnv(trace=trace, mode=mode, sequence_length=256)
    rng = np.random.default_rng(0)
    run(env, rng, 500)
    prof = cProfile.Profile()
    prof.enable()
    run(env, rng, steps)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--traces", nargs="*", default=["Lublin-1", "SDSC-SP2"])
    ap.add_argument("--modes", nargs="*", default=["guarded", "free"])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one config")
    ap.add_argument(
        "--tables",
        nargs="*",
        choices=["single", "vector"],
        default=["single", "vector"],
        help="which tables to print (default both)",
    )
    ap.add_argument("--vector-sizes", nargs="*", type=int, default=[1, 16, 64])
    ap.add_argument(
        "--vector-kinds",
        nargs="*",
        choices=list(VECTOR_KINDS),
        default=list(VECTOR_KINDS),
        help="vector envs of the vector table: SyncVectorEnv, the native env stepped in "
        "Python, compiled on one thread, on two (default all)",
    )
    ap.add_argument(
        "--tasks", nargs="*", choices=list(TASK_ENVS), default=["backfill"],
        help="tasks of the vector table (default backfill)",
    )  # fmt: skip
    ap.add_argument(
        "--copies", nargs="*", type=lambda x: x.lower() == "true", default=[False],
        metavar="BOOL", help="copy= of the vector envs (default False: the rollout "
        "buffer copies anyway)",
    )  # fmt: skip
    ap.add_argument(
        "--reward-modes",
        nargs="*",
        choices=["terminal", "dense"],
        default=["terminal"],
        help="reward modes of the single-env table (default terminal)",
    )
    ap.add_argument(
        "--features",
        choices=["paper", "extended"],
        default="paper",
        help="observation columns (docs/env.md; default paper)",
    )
    ap.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall time, or this process's CPU time (for a machine shared with other jobs)",
    )
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    warmup()
    if "single" in args.tables:
        single_table(args)
    if "vector" in args.tables:
        print()
        vector_table(args)
    if args.profile:
        print(profile(args.traces[0], args.modes[0], args.steps))
        print(profile_vector(args.traces[0], args.modes[0], args.vector_sizes[-1], args.steps))


def single_table(args: argparse.Namespace) -> None:
    print(
        "| trace | mode | normalizer | reward | steps/s (all-in) | vs reference | reset ms "
        "| steps/episode |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|")
    for trace in args.traces:
        for mode in args.modes:
            for norm, reward in itertools.product(("EASY-SJBF", None), args.reward_modes):
                r = bench(trace, mode, norm, args.steps, args.repeat, reward, args.features)
                print(
                    f"| {trace} | {mode} | {norm or 'none'} | {reward} | {r['steps_per_s']:,.0f} | "
                    f"{r['steps_per_s'] / REFERENCE_STEPS_PER_S:.1f}x | {r['reset_ms']:.3f} | "
                    f"{r['steps_per_episode']:.0f} |",
                    flush=True,
                )
    print()
    for trace in args.traces:
        print(f"normalizer EASY-SJBF, one uncached 256-job window of {trace}: "
              f"{normalizer_ms(trace):.3f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
