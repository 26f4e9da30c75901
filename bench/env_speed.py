"""Env speed: steps/s of ``hpcgym/Backfill-v0`` with a random valid agent, resets included.

    HPCGYM_TRACE_DIR=../shared/traces python bench/env_speed.py [--steps N] [--repeat R]

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
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import numpy as np

from hpcgym.envs.backfill_env import BackfillEnv, clear_normalizer_cache
from hpcgym.sim.engine import warmup

REFERENCE_STEPS_PER_S = 1729.0
REFERENCE_RESET_MS = 18.5


def run(env: BackfillEnv, rng: np.random.Generator, steps: int) -> tuple[float, float, int]:
    """All-in run of ``steps`` steps; returns (seconds, seconds in reset, episodes)."""
    t_reset = 0.0
    episodes = 1
    t0 = time.perf_counter()
    _, info = env.reset(seed=int(rng.integers(2**31)))
    t_reset += time.perf_counter() - t0
    mask = info["action_mask"]
    for _ in range(steps):
        valid = np.flatnonzero(mask)
        action = valid[rng.integers(valid.shape[0])]
        _, _, done, _, info = env.step(action)
        mask = info["action_mask"]
        if done:
            t1 = time.perf_counter()
            _, info = env.reset()
            t_reset += time.perf_counter() - t1
            mask = info["action_mask"]
            episodes += 1
    return time.perf_counter() - t0, t_reset, episodes


def bench(trace: str, mode: str, normalizer: str | None, steps: int, repeat: int) -> dict:
    rates, resets, eps = [], [], []
    for r in range(repeat):
        clear_normalizer_cache()
        env = BackfillEnv(trace=trace, mode=mode, normalizer=normalizer, sequence_length=256)
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


def normalizer_ms(trace: str, n: int = 200) -> float:
    env = BackfillEnv(trace=trace, sequence_length=256)
    lo, last = env.valid_starts
    starts = np.linspace(lo, last, n).astype(int)
    w = env.workload
    spec = env.normalizer
    assert spec is not None
    spec.simulate(w.window(int(starts[0]), 256))
    t0 = time.perf_counter()
    for s in starts:
        spec.simulate(w.window(int(s), 256))
    return 1e3 * (time.perf_counter() - t0) / n


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
    args = ap.parse_args()
    warmup()
    print(
        "| trace | mode | normalizer | steps/s (all-in) | vs reference | reset ms | steps/episode |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for trace in args.traces:
        for mode in args.modes:
            for norm in ("EASY-SJBF", None):
                r = bench(trace, mode, norm, args.steps, args.repeat)
                print(
                    f"| {trace} | {mode} | {norm or 'none'} | {r['steps_per_s']:,.0f} | "
                    f"{r['steps_per_s'] / REFERENCE_STEPS_PER_S:.1f}x | {r['reset_ms']:.3f} | "
                    f"{r['steps_per_episode']:.0f} |",
                    flush=True,
                )
    print()
    for trace in args.traces:
        print(f"normalizer EASY-SJBF, one uncached 256-job window of {trace}: "
              f"{normalizer_ms(trace):.3f} ms")  # fmt: skip
    if args.profile:
        print(profile(args.traces[0], args.modes[0], args.steps))


if __name__ == "__main__":
    main()
