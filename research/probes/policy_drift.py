"""How far has a run's policy moved from where it started, and where? (checkpoints of a run)

A run that starts at a heuristic (``--row-prior``) or a clone (``--init-from``) is worth
only the changes PPO makes to that start. This reads one seed folder of ``train/ppo.py``
and measures each given checkpoint (``.zip``) against the run's **starting policy** on
the same decision points of the run's own training envs:

* ``KL``: the mean ``KL(checkpoint || start)`` of the two masked action distributions
  (what ``--anchor-kl`` penalises);
* ``agree``: the share of decisions where the two argmax (deterministic) actions are the
  same;
* ``flips at ties``: of the decisions where they differ, the share where the start's
  best score is *tied* (two or more actions with exactly the best logit: with
  ``--row-prior estimate=-50``, candidates with the same request); ties are broken by
  the argmax in row order (FCFS), so a residual of any size re-decides them;
* the median logit gap by which the checkpoint prefers its own choice to the start's,
  at flipped ties and at the other flips: small gaps say the argmax rests on noise, large
  ones that PPO learned to decide those decisions another way.

The starting policy is rebuilt exactly: the run's ``anchor.pt`` when it has one
(``--anchor-kl`` runs), else a new model built from the run's ``config.json`` with its
seed (``train.build.new_model``: the same weights the run started with, ``--init-from``
included). The decision points are those the start's *sampled* policy meets in
``--steps`` steps of the run's training envs (env seed ``--seed``), keeping the ones with
at least two allowed actions::

    python research/probes/policy_drift.py RUN/seed-34 RUN/seed-34/checkpoints/*.zip \\
        [--steps 300]

A few seconds per checkpoint; docs/research/findings.md has the figures of the runs that
started at a heuristic's row prior or a clone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.policy_drift`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.policy_drift", *sys.argv[1:]])

__all__ = ["Drift", "decision_points", "drift", "main", "starting_policy"]


@dataclass(frozen=True)
class Drift:
    """One checkpoint against the run's start on the same decision points.

    :param checkpoint: the checkpoint's file name
    :param steps: its training steps (from the file name; ``None`` if not there)
    :param decisions: decision points compared
    :param kl: mean ``KL(checkpoint || start)``
    :param agree: share of decisions with the same argmax action
    :param start_ties: share of decisions where the start's best logit is tied
    :param flips_at_ties: of the decisions with another argmax, the share at start ties
    :param gap_ties: median logit gap (checkpoint's choice over the start's) at flipped
        ties (``nan``: none)
    :param gap_other: the same at the other flips
    """

    checkpoint: str
    steps: int | None
    decisions: int
    kl: float
    agree: float
    start_ties: float
    flips_at_ties: float
    gap_ties: float
    gap_other: float


def starting_policy(seed_dir: Path) -> Any:
    """The policy a run started from: its ``anchor.pt`` on a fresh copy of the run's
    network, or the network ``train.build.new_model`` builds from the run's config and
    seed (before any update).

    :param seed_dir: the run's seed folder (with ``config.json``)
    :raises FileNotFoundError: the folder has no ``config.json``
    """
    import torch as th

    from train.build import ANCHOR_FILE, new_model, plan_rollout
    from train.config import TrainConfig

    config = seed_dir / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"{config} not found: give a seed folder of train/ppo.py")
    saved = json.loads(config.read_text(encoding="utf-8"))
    cfg = TrainConfig.from_json(config)
    model = new_model(cfg, plan_rollout(cfg, saved))
    model.get_env().close()
    anchor = seed_dir / ANCHOR_FILE
    if anchor.is_file():
        model.policy.load_state_dict(th.load(anchor, map_location="cpu", weights_only=True))
    model.policy.set_training_mode(False)
    return model.policy


def decision_points(
    seed_dir: Path, policy: Any, steps: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks ``(n, K, F)``, ``(n, K + 1)`` of the decision points with at
    least two allowed actions that ``policy`` (sampled, seeded) meets in ``steps`` steps of
    the run's training envs.

    :param seed_dir: the run's seed folder
    :param policy: the policy that plays
    :param steps: vector-env steps
    :param seed: seed of the envs and of the sampling
    """
    import torch as th

    from train.build import make_training_envs
    from train.config import TrainConfig
    from train.lean_ppo import sample_columns, vec_masks

    cfg = TrainConfig.from_json(seed_dir / "config.json")
    env = make_training_envs(cfg, seed)
    rng = np.random.default_rng(seed)
    obs = env.reset()
    kept_obs: list[np.ndarray] = []
    kept_masks: list[np.ndarray] = []
    try:
        for _ in range(steps):
            masks = np.asarray(vec_masks(env), dtype=bool)
            with th.no_grad():
                dist = policy.get_distribution(th.as_tensor(np.asarray(obs)), action_masks=masks)
                logp = dist.distribution.logits.numpy()
            actions = sample_columns(logp, rng)  # the lean PPO's seeded sampler
            keep = masks.sum(axis=1) > 1
            kept_obs.append(np.asarray(obs)[keep])
            kept_masks.append(masks[keep])
            obs, _, _, _ = env.step(actions)
    finally:
        env.close()
    return np.concatenate(kept_obs), np.concatenate(kept_masks)


def drift(start: Any, policy: Any, obs: np.ndarray, masks: np.ndarray, name: str) -> Drift:
    """:class:`Drift` of ``policy`` against ``start`` on the decision points.

    :param start: the starting policy
    :param policy: a checkpoint's policy
    :param obs: ``(n, K, F)`` observations
    :param masks: ``(n, K + 1)`` masks
    :param name: the checkpoint's file name
    """
    import torch as th

    from train.compact import actor_logits, compact_from_dense, kl_to

    batch, _ = compact_from_dense(obs, masks)
    with th.no_grad():
        l0 = actor_logits(start, batch)
        l1 = actor_logits(policy, batch)
        kl = kl_to(th.log_softmax(l1, dim=1), th.log_softmax(l0, dim=1), batch)
    a0, a1 = l0.argmax(dim=1), l1.argmax(dim=1)
    top0 = l0.max(dim=1).values
    tied = ((l0 == top0[:, None]) & batch.allowed).sum(dim=1) > 1
    flip = a1 != a0
    gap = (l1.gather(1, a1[:, None]) - l1.gather(1, a0[:, None])).squeeze(1)

    def median(x: th.Tensor) -> float:
        return float(np.median(x.numpy())) if len(x) else float("nan")

    flips = int(flip.sum())
    match = re.search(r"_(\d+)_steps", name)
    return Drift(
        checkpoint=name,
        steps=int(match.group(1)) if match else None,
        decisions=len(a0),
        kl=float(kl.mean()),
        agree=float((~flip).float().mean()),
        start_ties=float(tied.float().mean()),
        flips_at_ties=float((flip & tied).sum()) / flips if flips else float("nan"),
        gap_ties=median(gap[flip & tied]),
        gap_other=median(gap[flip & ~tied]),
    )


def _table(rows: list[Drift]) -> str:
    lines = [
        "| checkpoint | steps | KL to start | argmax agrees | flips at start ties | "
        "median gap at flipped ties | at other flips |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        steps = f"{r.steps:,}" if r.steps is not None else "—"
        lines.append(
            f"| {r.checkpoint} | {steps} | {r.kl:.4f} | {100 * r.agree:.1f} % | "
            f"{100 * r.flips_at_ties:.0f} % | {r.gap_ties:.3f} | {r.gap_other:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Drift]:
    """Print the table; returns its rows.

    :param argv: the arguments (default: the process's)
    """
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("run", type=Path, help="a seed folder of train/ppo.py (with config.json)")
    p.add_argument("checkpoints", type=Path, nargs="+", help="model .zip files to compare")
    p.add_argument("--steps", type=int, default=300, help="env steps of decision points")
    p.add_argument("--seed", type=int, default=12345, help="env and sampling seed")
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"--steps must be >= 1, got {args.steps}")
    missing = [str(c) for c in args.checkpoints if not c.is_file()]
    if missing:
        p.error(f"no such checkpoint: {', '.join(missing)}")

    import torch as th
    from sb3_contrib import MaskablePPO

    th.set_num_threads(1)
    start = starting_policy(args.run)
    obs, masks = decision_points(args.run, start, args.steps, args.seed)
    rows = []
    for path in args.checkpoints:
        model = MaskablePPO.load(path, device="cpu")
        rows.append(drift(start, model.policy, obs, masks, path.name))
    print(
        f"{args.run}: {len(obs)} decision points with a choice ({args.steps} steps of the "
        f"run's training envs, seed {args.seed}); the start has a tied best score at "
        f"{100 * rows[0].start_ties:.1f} % of them\n"
    )
    print(_table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
