"""End-to-end training throughput: ``train/ppo.py`` presets vs stock sb3-contrib MaskablePPO.

Measured side by side in one process (configurations interleaved, ``--repeat`` rounds,
median reported), on the same env (``hpcgym/Backfill-v0``, 256-job training windows):

* ``stock`` -- sb3-contrib ``MaskablePPO("MlpPolicy")`` on one ``Monitor``-wrapped env in a
  ``DummyVecEnv``, ``n_steps=2048, batch_size=256, n_epochs=4`` (the reference setting);
* ``fast-before`` -- ``--preset fast`` as it was: 2 envs in a ``DummyVecEnv`` and the
  kernel policy's dense path (kernel on all K rows, torch's ``Categorical``, per-tensor
  Adam), restored for the measurement by :func:`legacy_kernel`;
* ``fast-sb3`` -- ``--preset fast --algo sb3``: the fast preset on sb3-contrib's
  ``MaskablePPO`` (the preset's native envs; add ``+n_envs=16`` for the fast preset
  before the lean PPO);
* ``fast`` -- ``--preset fast`` as configured now (:data:`train.config.PRESETS`; ``--algo
  lean``: :class:`train.lean_ppo.LeanMaskablePPO`);
* ``default`` -- the paper preset (``--preset paper``) as configured now, ``default-native``
  the same with ``--vec-env native`` and ``default-lean`` with ``--vec-env native --algo
  lean``.

Each configuration is built exactly as ``train/ppo.py`` builds it (:func:`train.build.plan_rollout`,
:func:`train.build.new_model`) and learns ``--steps`` environment steps (rounded up to whole
updates); evaluations are not included (they are the same for every configuration). Reported:
steps/s of the whole ``learn`` (rollouts + updates), and of the rollouts and updates apart.

``--learning`` runs bench/learning_curve.py instead (learning per wall-clock).

Usage::

    HPCGYM_TRACE_DIR=path/to/traces python bench/train_speed.py --trace SDSC-SP2
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.train_speed`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.train_speed", *sys.argv[1:]])

CONFIGS: tuple[str, ...] = (
    "stock",
    "fast-before",
    "fast-sb3",
    "fast",
    "default",
    "default-native",
    "default-lean",
)


@contextlib.contextmanager
def legacy_kernel() -> Iterator[None]:
    """The kernel policy as it was before the speed work: kernel and critic on all rows
    (``row_scores_dense``, ``forward_critic_dense``), sb3-contrib's ``MaskableCategorical``
    and the per-tensor Adam loop. Same distributions and learning rule; only slower."""
    from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

    import hpcgym_agents.kernel_ops as ko
    import hpcgym_agents.kernel_policy as kp

    def dense_scores(self: Any, rows: Any) -> tuple[Any, Any, Any]:
        scores, emb = self.row_scores_dense(rows)
        return scores, emb, self.valid_rows(rows)

    saved = (
        kp.KernelNetwork._active_scores,
        kp.KernelNetwork.row_scores,
        kp.KernelNetwork.forward_critic,
        ko.FastMaskableCategoricalDistribution.proba_distribution,
        ko.fast_optimizer_kwargs,
    )
    kp.KernelNetwork._active_scores = dense_scores  # type: ignore[method-assign]
    kp.KernelNetwork.row_scores = kp.KernelNetwork.row_scores_dense  # type: ignore[method-assign]
    kp.KernelNetwork.forward_critic = kp.KernelNetwork.forward_critic_dense  # type: ignore[method-assign]
    ko.FastMaskableCategoricalDistribution.proba_distribution = (  # type: ignore[method-assign]
        MaskableCategoricalDistribution.proba_distribution
    )
    ko.fast_optimizer_kwargs = lambda _cls, kwargs: kwargs
    try:
        yield
    finally:
        (
            kp.KernelNetwork._active_scores,
            kp.KernelNetwork.row_scores,
            kp.KernelNetwork.forward_critic,
            ko.FastMaskableCategoricalDistribution.proba_distribution,
            ko.fast_optimizer_kwargs,
        ) = saved


def _phase_callback(rollout_threads: int, update_threads: int) -> Any:
    from train.callbacks import PhaseCallback

    return PhaseCallback(rollout_threads, update_threads)


def build(name: str, trace: str, seed: int) -> tuple[Any, Any]:
    """A model of configuration ``name`` and its phase timer.

    :param name: one of :data:`CONFIGS`
    :param trace: the trace
    :param seed: the seed
    """
    from train.build import new_model, plan_rollout
    from train.config import TrainConfig

    if name == "stock":
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.vec_env import DummyVecEnv

        from hpcgym.envs.backfill_env import BackfillEnv
        from train.build import env_kwargs

        kw = env_kwargs(TrainConfig.create(trace=trace), "train", 256)
        env = DummyVecEnv([lambda: Monitor(BackfillEnv(**kw))])
        model = MaskablePPO(
            "MlpPolicy", env, n_steps=2048, batch_size=256, n_epochs=4, seed=seed, device="cpu"
        )
        return model, _phase_callback(1, 1)
    name, *extra = name.split("+")
    options: dict[str, Any] = {"trace": trace, "seed": seed, "progress": False}
    for item in extra:  # "fast+n_envs=32+batch_size=512": options over the preset
        key, _, value = item.partition("=")
        options[key] = int(value) if value.lstrip("-").isdigit() else value
    if name.startswith("fast"):
        preset = "fast"
        if name == "fast-before":
            options.update(vec_env="dummy", n_envs=2, algo="sb3")
        elif name == "fast-sb3":
            options["algo"] = "sb3"
    else:
        preset = "paper"
        if name in ("default-native", "default-lean"):
            options["vec_env"] = "native"
        if name == "default-lean":
            options["algo"] = "lean"
    cfg = TrainConfig.create(preset=preset, **options)
    model = new_model(cfg, plan_rollout(cfg))
    return model, _phase_callback(cfg.rollout_threads, cfg.update_threads)


def measure(name: str, trace: str, steps: int, seed: int) -> dict[str, float]:
    """Learn ``steps`` environment steps with configuration ``name``.

    :param name: one of :data:`CONFIGS`
    :param trace: the trace
    :param steps: environment steps (rounded up to whole updates)
    :param seed: the seed
    :return: ``steps``, ``seconds``, ``rollout_s``, ``update_s``, ``steps_per_s``,
        ``rollout_steps_per_s``, ``rollout_size``
    """
    import torch as th

    th.set_num_threads(1)
    with legacy_kernel() if name == "fast-before" else contextlib.nullcontext():
        model, phase = build(name, trace, seed)
        rollout = int(model.n_steps * model.n_envs)
        total = max(1, math.ceil(steps / rollout)) * rollout
        t0 = time.perf_counter()
        model.learn(total, callback=[phase])
        seconds = time.perf_counter() - t0
    model.get_env().close()
    done = int(model.num_timesteps)
    update_s = max(seconds - phase.rollout_seconds, 0.0)
    return {
        "steps": done,
        "seconds": seconds,
        "rollout_s": phase.rollout_seconds,
        "update_s": update_s,
        "steps_per_s": done / seconds,
        "rollout_steps_per_s": done / max(phase.rollout_seconds, 1e-9),
        "rollout_size": rollout,
    }


def table(results: dict[str, list[dict[str, float]]]) -> str:
    """The Markdown table of the medians (ratios against ``stock``).

    :param results: configuration -> one result per round
    """
    med: dict[str, dict[str, float]] = {
        name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for name, runs in results.items()
    }
    base = med.get("stock", {}).get("steps_per_s")
    lines = [
        "| configuration | rollout size | steps | end-to-end steps/s | vs stock | rollout steps/s "
        "| rollout s | update s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in med.items():
        ratio = f"{m['steps_per_s'] / base:.1f}x" if base else "-"
        lines.append(
            f"| {name} | {m['rollout_size']:,.0f} | {m['steps']:,.0f} | {m['steps_per_s']:,.0f} "
            f"| {ratio} | {m['rollout_steps_per_s']:,.0f} | {m['rollout_s']:.1f} "
            f"| {m['update_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints the table.

    :param argv: command-line arguments
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="SDSC-SP2")
    parser.add_argument("--steps", type=int, default=40_000, help="env steps per measurement")
    parser.add_argument(
        "--default-steps", type=int, default=None, help="env steps for the paper preset"
    )
    parser.add_argument("--repeat", type=int, default=2, help="interleaved rounds (median)")
    parser.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help="comma-separated configurations; NAME+option=value+... overrides options "
        "(e.g. fast+n_envs=32+batch_size=512)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning", action="store_true", help="run bench/learning_curve.py")
    args, rest = parser.parse_known_args(argv)
    if args.learning:
        from bench.learning_curve import main as learning_main

        return learning_main(["--trace", args.trace, *rest])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    names = [n for n in args.configs.split(",") if n]
    unknown = sorted({n.split("+")[0] for n in names} - set(CONFIGS))
    if unknown:
        parser.error(f"unknown configurations {unknown}; valid: {', '.join(CONFIGS)}")
    results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for rnd in range(args.repeat):
        for name in names:
            steps = args.steps
            if name.startswith("default") and args.default_steps is not None:
                steps = args.default_steps
            r = measure(name, args.trace, steps, args.seed + rnd)
            results[name].append(r)
            print(
                f"round {rnd + 1} {name:>15}: {r['steps_per_s']:8,.0f} steps/s "
                f"(rollouts {r['rollout_s']:.1f} s, updates {r['update_s']:.1f} s, "
                f"{r['steps']} steps)",
                flush=True,
            )
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
