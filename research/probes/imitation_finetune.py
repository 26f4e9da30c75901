"""Imitation, then RL: PPO from the cloned student vs PPO from scratch (same budget).

Two PPO runs with the same options (``train.config.TrainConfig``, preset ``fast``), seed
and number of environment steps, built by :func:`train.build.new_model`: one starts from
fresh weights, the other from the weights of a ``bc_model.zip`` of ``research/imitation/imitate.py``
(same network: kernel 32-16-8, learned STOP logit, flat value head -- the value head was
regressed on the teacher episodes' returns). Both final models, and the BC model itself,
are played on the VALIDATION windows of ``research/imitation/imitate.py`` against EASY-SJBF::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/imitation_finetune.py \\
        runs/imitate-sdsc/bc_model.zip --trace SDSC-SP2 --steps 1000000 --out /tmp/ft
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch as th

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.imitation_finetune`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.imitation_finetune", *sys.argv[1:]]
    )

from hpcgym_agents.loading import load_model  # noqa: E402
from research.imitation.measure import compare_on_validation, format_table  # noqa: E402
from train.build import new_model, plan_rollout  # noqa: E402
from train.config import TrainConfig  # noqa: E402


def train_ppo(cfg: TrainConfig, steps: int, init: str | None, path: Path) -> dict[str, Any]:
    """One PPO run of ``steps`` env steps, from the policy weights of the zip ``init`` if
    given (``train/ppo.py --init-from``).

    :param cfg: the options
    :param steps: environment steps
    :param init: a MaskablePPO zip whose policy weights start the run (``None``: fresh)
    :param path: where to save the final model
    """
    if init is not None:
        cfg = dataclasses.replace(cfg, init_from=str(init))
    model = new_model(cfg, plan_rollout(cfg))
    t0 = time.perf_counter()
    model.learn(total_timesteps=int(steps), progress_bar=False)
    seconds = time.perf_counter() - t0
    model.save(path)
    model.get_env().close()
    return {"steps": int(model.num_timesteps), "seconds": seconds, "model": str(path)}


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("bc_model", help="bc_model.zip of research/imitation/imitate.py")
    p.add_argument("--trace", default="SDSC-SP2")
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-envs", type=int, default=16)
    p.add_argument("--eval-windows", type=int, default=30)
    p.add_argument("--eval-length", type=int, default=512)
    p.add_argument("--eval-seed", type=int, default=7)
    p.add_argument("--out", default="/tmp/imitation-finetune")
    p.add_argument("--torch-threads", type=int, default=1)
    args = p.parse_args()
    th.set_num_threads(args.torch_threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = TrainConfig.create("fast", trace=args.trace, seed=args.seed, n_envs=args.n_envs)
    bc = load_model(args.bc_model)
    runs = {
        "PPO from scratch": train_ppo(cfg, args.steps, None, out / "scratch.zip"),
        "PPO from BC": train_ppo(cfg, args.steps, args.bc_model, out / "from_bc.zip"),
    }
    for name, r in runs.items():
        print(f"{name}: {r['steps']} steps in {r['seconds']:.0f} s", flush=True)
    agents = {"BC student": (bc, {})}
    for name, r in runs.items():
        agents[name] = (load_model(r["model"]), {})
    env = {"trace": args.trace, "mode": "guarded", "reference": "EASY-SJBF"}
    res = compare_on_validation(
        env,
        agents,
        windows=args.eval_windows,
        length=args.eval_length,
        seed=args.eval_seed,
        teacher=None,
    )
    print(format_table(res))
    res["runs"] = runs
    (out / "finetune.json").write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    main()
