"""Train a masked PPO agent with RLlib on the hpcgym backfilling env.

Usage (after ``pip install -e ".[train,ray]"``, see docs/scaling.md)::

    python examples/rllib_ppo.py --trace SDSC-SP2 --iterations 50
    python examples/rllib_ppo.py --address auto --env-runners 16   # on a running Ray cluster

RLlib's action-masking pattern: :class:`MaskedObservation` puts the env's action mask
into a Dict observation ``{"observations": (K*F,), "action_mask": (K+1,)}``, and
:class:`MaskedPPOModule` (RLlib's default PPO networks on the observations) gives invalid
actions the logit ``FLOAT_MIN`` in inference, exploration and training alike. After training,
the greedy agent plays evaluation windows through :func:`hpcgym.evaluation.play_windows`
(the project's one agent loop) next to the reference scheduler: AVEbsld and the paired
geometric-mean ratio with its 95% bootstrap interval.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m examples.rllib_ppo`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "examples.rllib_ppo", *sys.argv[1:]])

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from hpcgym.cli.errors import Parser  # noqa: E402

try:  # Ray at the top: its workers import this module's classes by name
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import FLOAT_MIN
except ImportError as _missing:  # no RLlib: --help works, training says what to install
    DefaultPPOTorchRLModule = object
    RAY_MISSING: ImportError | None = _missing
else:
    RAY_MISSING = None

__all__ = [
    "MASK",
    "OBS",
    "MaskedObservation",
    "MaskedPPOModule",
    "RLlibAgent",
    "build_parser",
    "main",
    "make_masked_env",
]

ENV_NAME = "hpcgym-masked"
RLLIB_HINT = 'pip install -e ".[ray]" (docs/scaling.md)'


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``examples/rllib_ppo.py`` (one-line errors, exit status 2)."""
    from hpcgym.argtypes import nonneg_int, positive_float, positive_int

    p = Parser(
        prog="python examples/rllib_ppo.py",
        description=(
            "RLlib PPO with action masking on hpcgym/Backfill-v0. Runs on an embedded local "
            "Ray by default (no cluster needed); --address joins a running Ray cluster "
            "(ray start --head). Needs the ray extra: " + RLLIB_HINT + "."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    g = p.add_argument_group("env")
    g.add_argument("--trace", default="synthetic", help="registered trace, SWF path, synthetic")
    g.add_argument("--length", type=positive_int, default=256, help="jobs per training window")
    g.add_argument("--max-queue", type=positive_int, default=128, help="K, observation rows")
    g.add_argument("--policy", default="FCFS", type=str.upper, help="base queue policy")
    g.add_argument("--mode", default="guarded", help="guarded, penalized or free")
    g.add_argument("--reference", default="EASY-SJBF", help="reward reference scheduler")
    t = p.add_argument_group("PPO")
    t.add_argument("--iterations", type=positive_int, default=20, help="RLlib train() calls")
    t.add_argument("--train-batch-size", type=positive_int, default=4000, help="steps/update")
    t.add_argument("--minibatch-size", type=positive_int, default=256)
    t.add_argument("--num-epochs", type=positive_int, default=10, help="passes per update")
    t.add_argument("--lr", type=positive_float, default=3e-4, help="learning rate")
    t.add_argument("--gamma", type=float, default=1.0)
    t.add_argument("--lambda", dest="lambda_", type=float, default=0.97, help="GAE lambda")
    t.add_argument("--hidden", default="256,256", help="widths of the policy/value MLPs")
    t.add_argument("--seed", type=int, default=0)
    r = p.add_argument_group("Ray")
    r.add_argument(
        "--address",
        default=None,
        help="Ray cluster to join (HOST:PORT of 'ray start --head', or 'auto'); default: an "
        "embedded local Ray on this machine",
    )
    r.add_argument("--num-cpus", type=positive_int, default=None, help="CPUs of embedded Ray")
    r.add_argument(
        "--env-runners",
        type=nonneg_int,
        default=0,
        help="RLlib env runners (remote sampling processes); 0 samples in this process",
    )
    e = p.add_argument_group("evaluation and outputs")
    e.add_argument(
        "--eval-split",
        default="validation",
        choices=("validation", "test"),
        help="split of the evaluation windows (test only for a final report)",
    )
    e.add_argument("--eval-windows", type=positive_int, default=10, help="evaluation windows")
    e.add_argument("--eval-length", type=positive_int, default=1024, help="jobs per window")
    e.add_argument("--out", default="runs/rllib", help="checkpoint and results folder")
    return p


# --------------------------------------------------------------------------- RLlib pieces
OBS = "observations"
MASK = "action_mask"


class MaskedObservation(gym.Wrapper):
    """Observation = ``{"observations": flat observation, "action_mask": mask as 0/1}``.

    :param env: an hpcgym backfilling env (``gym.make("hpcgym/Backfill-v0", ...)``)
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, gym.spaces.Box) and isinstance(env.action_space, gym.spaces.Discrete)
        n = int(env.action_space.n)
        size = int(np.prod(box.shape))
        self.observation_space = gym.spaces.Dict(
            {
                OBS: gym.spaces.Box(0.0, 1.0, (size,), np.float32),
                MASK: gym.spaces.Box(0.0, 1.0, (n,), np.float32),
            }
        )

    def _wrap(self, obs: np.ndarray, info: dict[str, Any]) -> dict[str, np.ndarray]:
        return {
            OBS: np.asarray(obs, dtype=np.float32).reshape(-1),
            MASK: np.asarray(info["action_mask"], dtype=np.float32),
        }

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset the env; the observation carries the mask.

        :param kwargs: ``seed``, ``options`` of the env's ``reset``
        """
        obs, info = self.env.reset(**kwargs)
        return self._wrap(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """One decision; the observation carries the next mask.

        :param action: the action (a job row or STOP)
        """
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._wrap(obs, info), float(reward), terminated, truncated, info


def make_masked_env(env_config: dict[str, Any]) -> gym.Env:
    """RLlib's env creator: ``gym.make("hpcgym/Backfill-v0", **env_config)`` with the
    mask in the observation.

    :param env_config: the env's keyword arguments (RLlib's ``env_config``)
    """
    import hpcgym  # noqa: F401  (registers hpcgym/Backfill-v0)

    kw = {k: v for k, v in dict(env_config).items() if not k.startswith("_")}
    return MaskedObservation(gym.make("hpcgym/Backfill-v0", **kw))


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """RLlib's default torch PPO module on the ``"observations"`` part of a
    :class:`MaskedObservation`; invalid actions get the logit ``FLOAT_MIN``.

    The networks are built for the observations only; the module's
    ``observation_space`` is the ``Dict`` again after :meth:`setup` (RLlib's connectors
    check it against the env's).
    """

    def __init__(self, *, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space) != {
            OBS,
            MASK,
        }:
            raise ValueError(
                f"MaskedPPOModule needs a Dict observation {{{OBS!r}, {MASK!r}}} "
                f"(MaskedObservation), got {observation_space}"
            )
        self._dict_space = observation_space
        super().__init__(observation_space=observation_space[OBS], **kwargs)

    def setup(self) -> None:
        """Build the default PPO networks for the observations, then expose the Dict."""
        super().setup()
        self.observation_space = self._dict_space

    @staticmethod
    def _split(batch: dict[str, Any]) -> Any:
        """Replace the Dict observation of ``batch`` (in place) by its observations; keep
        the mask in ``batch["action_mask"]`` and return it."""
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            batch[Columns.OBS] = obs[OBS]
            batch[MASK] = obs[MASK]
        return batch[MASK]

    @staticmethod
    def _mask(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask <= 0, FLOAT_MIN)
        return out

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = self._split(batch)
        return self._mask(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = self._split(batch)
        return self._mask(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = self._split(batch)  # the learner's value pass may have split it already
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        """Values of the observations (the learner calls this before the train pass).

        :param batch: a batch with the Dict or the split observation
        :param embeddings: precomputed encoder outputs (RLlib's)
        """
        self._split(batch)
        return super().compute_values(batch, embeddings)

    def greedy_actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The most likely valid action of each observation (no gradient).

        :param obs: observations ``(n, K*F)``
        :param mask: action masks ``(n, K+1)``
        """
        batch = {
            Columns.OBS: {
                OBS: torch.as_tensor(obs, dtype=torch.float32),
                MASK: torch.as_tensor(mask, dtype=torch.float32),
            }
        }
        with torch.no_grad():
            out = self.forward_inference(batch)
        return out[Columns.ACTION_DIST_INPUTS].argmax(dim=-1).cpu().numpy()


# --------------------------------------------------------------------------- evaluation
class RLlibAgent:
    """An RLlib module as a :class:`hpcgym.evaluation.play.Policy` (SB3's ``predict``).

    :param module: a :class:`MaskedPPOModule`
    """

    def __init__(self, module: Any) -> None:
        self.module = module

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: Any = None,
    ) -> tuple[Any, Any]:
        """The greedy valid action (one observation or a batch).

        :param observation: ``(K, F)`` or ``(n, K, F)``
        :param action_masks: ``(K+1,)`` or ``(n, K+1)``
        """
        obs = np.asarray(observation, dtype=np.float32)
        single = obs.ndim == 2
        obs = obs.reshape(1 if single else obs.shape[0], -1)
        mask = np.asarray(action_masks, dtype=np.float32).reshape(obs.shape[0], -1)
        actions = self.module.greedy_actions(obs, mask)
        return (actions[0] if single else actions), state


def evaluate(module: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The greedy agent and the reference scheduler on evenly spaced windows of
    ``--eval-split``.

    :param module: the trained module
    :param args: the command line (trace, env, evaluation options)
    """
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.evaluation import paired_comparison, play_windows, run_baselines, select_windows
    from hpcgym.workload import load

    wl = load(args.trace)
    ws = select_windows(len(wl), args.eval_length, args.eval_windows, args.eval_split, None)
    env = BackfillEnv(
        trace=wl,
        window_length=ws.length,
        split="all",
        reference=None,
        max_queue=args.max_queue,
        mode=args.mode,
        policy=args.policy,
    )
    rows = play_windows(env, RLlibAgent(module), list(ws.starts), seed=0)
    agent = [float(r["avg_bsld"]) for r in rows]
    base, skipped = run_baselines(wl, ws.starts, ws.length, [args.reference], args.policy)
    out: dict[str, Any] = {"starts": list(ws.starts), "length": ws.length, "agent": agent}
    if args.reference in base:
        ref = base[args.reference]["per_window"]
        cmp = paired_comparison(agent, ref)
        out.update(reference=ref, geo_ratio=cmp.geo_ratio, ci=[cmp.ci_low, cmp.ci_high])
        out["wins"] = cmp.wins
    else:
        out["skipped"] = skipped
    return out


# --------------------------------------------------------------------------- training
def _importable() -> Any:
    """This file as the module Ray's workers import by name: ``examples.rllib_ppo`` (run
    as a script it is ``__main__``, which a worker cannot import); a copy of this file
    outside the checkout is its own module (Ray then pickles the classes by value)."""
    import importlib

    name = __spec__.name if __spec__ is not None else __name__
    return importlib.import_module(name) if name != "__main__" else sys.modules[__name__]


def _config(args: argparse.Namespace) -> Any:
    """RLlib's PPOConfig of the command line."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    module_class = _importable().MaskedPPOModule

    hidden = [int(w) for w in args.hidden.split(",") if w.strip()]
    env_config = {
        "trace": args.trace,
        "window_length": args.length,
        "max_queue": args.max_queue,
        "policy": args.policy,
        "mode": args.mode,
        "reference": None if args.reference.lower() == "none" else args.reference,
    }
    return (
        PPOConfig()
        .environment(env=ENV_NAME, env_config=env_config)
        .framework("torch")
        .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=1)
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=min(args.minibatch_size, args.train_batch_size),
            num_epochs=args.num_epochs,
            lr=args.lr,
            gamma=args.gamma,
            lambda_=args.lambda_,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=module_class,
                model_config={"fcnet_hiddens": hidden, "head_fcnet_hiddens": hidden},
            )
        )
        .debugging(seed=args.seed)
    )


def _start_ray(args: argparse.Namespace) -> Any:
    """Embedded local Ray, or the cluster of ``--address``; ships the ``examples`` folder to
    the workers (``py_modules``), so the nodes need only hpcgym installed."""
    import ray

    if not ray.is_initialized():
        env = {"py_modules": [str(Path(__file__).resolve().parent)], "excludes": ["__pycache__"]}
        if args.address is None:
            ray.init(num_cpus=args.num_cpus, include_dashboard=False, runtime_env=env)
        else:
            ray.init(address=args.address, runtime_env=env)
    return ray


def _scalar(result: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        node: Any = result
        for part in key.split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, save a checkpoint, evaluate; returns the results (also ``results.json``).

    :param argv: command-line arguments (default ``sys.argv[1:]``)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if RAY_MISSING is not None:
        parser.error(f"RLlib is not installed ({RAY_MISSING}): {RLLIB_HINT}")
    from ray.tune.registry import register_env

    make_masked_env = _importable().make_masked_env
    try:
        _start_ray(args)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        parser.error(f"--address {args.address}: cannot start or join Ray ({exc})")
    register_env(ENV_NAME, make_masked_env)
    try:
        make_masked_env(_config(args).env_config).close()  # bad env options fail here
    except (ValueError, KeyError, FileNotFoundError) as exc:
        parser.error(str(exc))
    algo = _config(args).build_algo()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    history = []
    t0 = time.perf_counter()
    for it in range(1, args.iterations + 1):
        result = algo.train()
        ret = _scalar(result, "env_runners/episode_return_mean")
        steps = _scalar(
            result, "num_env_steps_sampled_lifetime", "env_runners/num_env_steps_sampled_lifetime"
        )
        history.append({"iteration": it, "steps": steps, "episode_return_mean": ret})
        print(f"iteration {it}: {steps} steps, episode return mean {ret}", flush=True)
    checkpoint = algo.save(str((out / "checkpoint").resolve()))
    module = algo.get_module()
    evaluation = evaluate(module, args)
    import gymnasium
    import ray

    summary = {
        "args": vars(args),
        "versions": {"ray": ray.__version__, "gymnasium": gymnasium.__version__},
        "train_time_s": time.perf_counter() - t0,
        "history": history,
        "checkpoint": str(getattr(checkpoint, "checkpoint", checkpoint)),
        "evaluation": evaluation,
    }
    (out / "results.json").write_text(json.dumps(summary, indent=2, default=str))
    agent = sum(evaluation["agent"]) / len(evaluation["agent"])
    n = len(evaluation["agent"])
    line = f"AVEbsld on {n} {args.eval_split} windows: agent {agent:.2f}"
    if "geo_ratio" in evaluation:
        ref = sum(evaluation["reference"]) / len(evaluation["reference"])
        lo, hi = evaluation["ci"]
        line += (
            f", {args.reference} {ref:.2f}; geo ratio {evaluation['geo_ratio']:.3f} "
            f"[{lo:.3f}, {hi:.3f}], wins {evaluation['wins']}"
        )
    print(line)
    print(f"wrote {out / 'results.json'} and the checkpoint {out / 'checkpoint'}")
    algo.stop()
    return summary


if __name__ == "__main__":
    main()
