"""Masked PPO for hpcgym in one file, plain torch, CleanRL style.

A single readable script to copy and modify: the batched vector env
(``hpcgym.envs.BackfillVectorEnv``, N simulations in one process), a per-job kernel network
that scores every candidate row (RLBackfilling's architecture: a shared MLP over the rows
plus a learned STOP logit, a value head over the pooled rows), invalid actions masked out
of the softmax, GAE, clipped PPO updates, and TensorBoard logging with the tags
``train/ppo.py`` uses (``rollout/avg_bsld``, ``eval/avg_bsld``, ``eval/ratio_vs_<reference>``
with its interval; the baselines as runs of their own in ``<run-dir>/baselines/``,
:mod:`hpcgym.evaluation.tensorboard`), so runs of both trainers share TensorBoard charts.
Training episodes come from the ``train`` split; evaluation uses ``validation`` windows
(never ``test``).

Usage::

    python examples/cleanrl_ppo.py --trace synthetic --total-timesteps 200000
    python examples/cleanrl_ppo.py --trace SDSC-SP2 --num-envs 16 --time-limit 1800
    tensorboard --logdir runs/

The saved ``agent.pt`` holds the state dict and the arguments. For the full-featured
trainer (checkpoints, resume, model cards, MaskablePPO models) use ``train/ppo.py``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.envs.vector import BackfillVectorEnv
from hpcgym.evaluation.play import play_windows
from hpcgym.evaluation.runner import run_baselines
from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.evaluation.tensorboard import (
    baseline_rows,
    baselines_folder,
    metric_tag,
    ratio_tag,
    windows_key,
    write_baseline_runs,
)
from hpcgym.evaluation.windows import select_windows

MASKED = -1e8  # logit of an invalid action (probability exactly 0 in float32)


@dataclass
class Args:
    """Command-line arguments (``--name value``; see ``--help``)."""

    trace: str = "synthetic"  # trace name, SWF path or "synthetic"
    mode: str = "guarded"  # guarded | penalized | free
    policy: str = "FCFS"  # base queue policy
    reference: str = "EASY-SJBF"  # reward reference and the ratio of the evaluation
    length: int = 256  # jobs per training window
    max_queue: int = 128  # K: observation rows
    seed: int = 1
    num_envs: int = 16  # simulations stepped together
    num_steps: int = 256  # steps per env per rollout
    total_timesteps: int = 500_000
    time_limit: float = 0.0  # seconds of training (0: no limit)
    learning_rate: float = 3e-4
    gamma: float = 1.0  # one terminal reward per episode: no discount
    gae_lambda: float = 0.97
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    eval_windows: int = 10  # validation windows per evaluation
    eval_length: int = 256  # jobs per validation window
    eval_every: int = 10  # evaluate every N updates (and at the end)
    baselines: str = "EASY,EASY-SJBF"  # comma-separated schedulers beside the agent
    threads: int = 1  # torch threads
    run_dir: str = "runs"
    run_name: str = ""


def parse_args(argv: list[str] | None = None) -> Args:
    """Parse ``--field value`` for every field of :class:`Args`."""
    p = argparse.ArgumentParser(
        prog="cleanrl_ppo.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    for f in fields(Args):
        p.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    ns = p.parse_args(argv)
    args = Args(**vars(ns))
    bad = [
        (n, v)
        for n, v, ok in (
            ("num-envs", args.num_envs, args.num_envs >= 1),
            ("num-steps", args.num_steps, args.num_steps >= 1),
            ("total-timesteps", args.total_timesteps, args.total_timesteps >= 1),
            ("time-limit", args.time_limit, args.time_limit >= 0),
            ("num-minibatches", args.num_minibatches, args.num_minibatches >= 1),
            ("eval-windows", args.eval_windows, args.eval_windows >= 2),
        )
        if not ok
    ]
    if bad:
        p.error(", ".join(f"--{n} {v!r} is out of range" for n, v in bad))
    return args


class KernelAgent(nn.Module):
    """The kernel network: one MLP scores each job row; a learned STOP logit; a value head
    over the mean of the valid rows' embeddings and the machine-state columns."""

    def __init__(self, n_features: int, hidden: tuple[int, ...] = (32, 16, 8)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = n_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.body = nn.Sequential(*layers)
        self.score = nn.Linear(width, 1)
        self.stop = nn.Parameter(torch.tensor(-3.0))
        self.value = nn.Sequential(nn.Linear(width, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(B, K + 1)`` and values ``(B,)`` of observations ``(B, K, F)``."""
        h = self.body(obs)  # (B, K, H)
        scores = self.score(h).squeeze(-1)  # (B, K)
        logits = torch.cat([scores, self.stop.expand(obs.shape[0], 1)], dim=1)
        logits = torch.where(mask, logits, torch.full_like(logits, MASKED))
        valid = obs[:, :, :1]  # column 0: the row's validity flag
        pooled = (h * valid).sum(1) / valid.sum(1).clamp(min=1.0)
        return logits, self.value(pooled).squeeze(-1)

    @torch.no_grad()
    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """SB3's ``predict`` signature, so that ``hpcgym.evaluation`` can play the agent."""
        obs = torch.as_tensor(np.asarray(observation, dtype=np.float32))
        single = obs.ndim == 2
        if single:
            obs = obs[None]
        if action_masks is None:
            raise ValueError("KernelAgent.predict needs action_masks")
        mask = torch.as_tensor(np.asarray(action_masks, dtype=bool)).reshape(obs.shape[0], -1)
        logits, _ = self(obs, mask)
        if deterministic:
            act = logits.argmax(1)
        else:
            act = torch.distributions.Categorical(logits=logits).sample()
        out = act.numpy()
        return (out[0] if single else out), state


def evaluate(agent: KernelAgent, env: BackfillEnv, starts: list[int], baselines: dict,
             reference: str) -> dict:  # fmt: skip
    """Play the agent deterministically on the validation windows of ``env``; the paired
    ratio vs ``reference`` with its bootstrap interval."""
    rows = play_windows(env, agent, starts, seed=0)
    bsld = [r["avg_bsld"] for r in rows]
    out = {"avg_bsld": float(np.mean(bsld))}
    ref = baselines.get(reference)
    if ref is not None:
        cmp = paired_comparison(bsld, ref["per_window"])
        out.update(geo_ratio=cmp.geo_ratio, ci_low=cmp.ci_low, ci_high=cmp.ci_high)
        out["wins"] = float(cmp.wins)
    return out


def tb_scalars(ev: dict, reference: str) -> dict[str, float]:
    """An evaluation of :func:`evaluate` as the tags of every run (``eval/avg_bsld``,
    ``eval/ratio_vs_<reference>``...)."""
    names = {"avg_bsld": metric_tag("avg_bsld"), "geo_ratio": ratio_tag(reference)}
    names.update({k: ratio_tag(reference, k) for k in ("ci_low", "ci_high", "wins")})
    return {names[k]: v for k, v in ev.items() if k in names}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    name = args.run_name or f"cleanrl-{args.trace}-{args.mode}-s{args.seed}-{int(time.time())}"
    run = Path(args.run_dir) / name
    run.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(str(run))
    writer.add_text("args", json.dumps(asdict(args), indent=1))
    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002 - only to make torch/numpy legacy code repeatable
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    envs = BackfillVectorEnv(
        args.num_envs, autoreset_mode="SameStep", trace=args.trace, mode=args.mode,
        policy=args.policy, reference=args.reference, window_length=args.length,
        split="train", max_queue=args.max_queue,
    )  # fmt: skip
    k, f = envs.single_observation_space.shape
    agent = KernelAgent(f)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # the validation windows and the baselines on them are fixed for the whole run
    n_val = len(envs.envs[0].workload)
    ws = select_windows(n_val, args.eval_length, args.eval_windows, "validation", args.seed)
    starts = [int(s) for s in ws.starts]
    names = [n.strip() for n in args.baselines.split(",") if n.strip()]
    if args.reference not in names:
        names.append(args.reference)
    baselines, _ = run_baselines(
        envs.envs[0].workload, starts, args.eval_length, names, policy=args.policy
    )
    wl = envs.envs[0].workload
    key = windows_key(
        "validation", starts, args.eval_length, trace=args.trace, policy=args.policy,
        jobs=len(wl), machine_size=int(wl.machine_size),
    )  # fmt: skip
    tb_baselines = baselines_folder(args.run_dir, args.trace, key)
    ref_values = baselines[args.reference]["per_window"] if args.reference in baselines else None

    def write_baselines(step: int) -> None:  # the heuristics as runs of their own, once
        write_baseline_runs(
            tb_baselines, list(baselines),
            lambda b: baseline_rows(wl, baselines[b], starts, args.eval_length),
            step=step, reference=args.reference if ref_values else None,
            reference_values=ref_values,
        )  # fmt: skip

    eval_env = BackfillEnv(
        trace=args.trace, mode=args.mode, policy=args.policy, reference=None,
        window_length=args.eval_length, split="validation", max_queue=args.max_queue,
    )  # fmt: skip

    n, t_steps = args.num_envs, args.num_steps
    batch = n * t_steps
    minibatch = max(1, batch // args.num_minibatches)
    obs_b = torch.zeros((t_steps, n, k, f))
    mask_b = torch.zeros((t_steps, n, k + 1), dtype=torch.bool)
    act_b = torch.zeros((t_steps, n), dtype=torch.long)
    logp_b = torch.zeros((t_steps, n))
    rew_b = torch.zeros((t_steps, n))
    done_b = torch.zeros((t_steps, n))
    val_b = torch.zeros((t_steps, n))

    obs, info = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(obs)
    next_mask = torch.as_tensor(info["action_mask"])
    step, update, t0 = 0, 0, time.perf_counter()
    episodes: list[float] = []
    last_eval: dict[str, float] = {}
    while step < args.total_timesteps:
        if args.time_limit and time.perf_counter() - t0 > args.time_limit:
            break
        # ---- rollout
        for t in range(t_steps):
            obs_b[t], mask_b[t] = next_obs, next_mask
            with torch.no_grad():
                logits, value = agent(next_obs, next_mask)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
            act_b[t], logp_b[t], val_b[t] = action, dist.log_prob(action), value
            obs, reward, term, trunc, info = envs.step(action.numpy())
            rew_b[t] = torch.as_tensor(reward, dtype=torch.float32)
            done_b[t] = torch.as_tensor(term | trunc, dtype=torch.float32)
            next_obs = torch.as_tensor(obs)
            next_mask = torch.as_tensor(info["action_mask"])
            final = info.get("final_info", {})
            if "agent" in final:
                ended = final["_agent"]
                episodes += [float(v) for v in final["agent"]["avg_bsld"][ended]]
        step += batch
        # ---- advantages (GAE; the terminal reward ends each episode: no bootstrap)
        with torch.no_grad():
            _, next_value = agent(next_obs, next_mask)
            adv = torch.zeros_like(rew_b)
            last = torch.zeros(n)
            for t in reversed(range(t_steps)):
                nv = next_value if t == t_steps - 1 else val_b[t + 1]
                nonterminal = 1.0 - done_b[t]
                delta = rew_b[t] + args.gamma * nv * nonterminal - val_b[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                adv[t] = last
            ret = adv + val_b
        # ---- PPO update
        b_obs, b_mask = obs_b.reshape(batch, k, f), mask_b.reshape(batch, k + 1)
        b_act, b_logp = act_b.reshape(-1), logp_b.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
        for _ in range(args.update_epochs):
            perm = torch.randperm(batch)
            for lo in range(0, batch, minibatch):
                idx = perm[lo : lo + minibatch]
                logits, value = agent(b_obs[idx], b_mask[idx])
                dist = torch.distributions.Categorical(logits=logits)
                ratio = (dist.log_prob(b_act[idx]) - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef))
                loss = (
                    pg.mean()
                    + args.vf_coef * 0.5 * (value - b_ret[idx]).pow(2).mean()
                    - args.ent_coef * dist.entropy().mean()
                )
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        update += 1
        # ---- logging (the tags of train/ppo.py)
        sps = step / (time.perf_counter() - t0)
        writer.add_scalar("time/steps_per_s", sps, step)
        writer.add_scalar("train/loss", loss.item(), step)
        if episodes:
            writer.add_scalar("rollout/avg_bsld", float(np.mean(episodes)), step)
            episodes.clear()
        if update % args.eval_every == 0:
            last_eval = evaluate(agent, eval_env, starts, baselines, args.reference)
            for t, value in tb_scalars(last_eval, args.reference).items():
                writer.add_scalar(t, value, step)
            write_baselines(step)
            print(f"step {step:>9,}  {sps:8.0f} steps/s  validation {last_eval}", flush=True)
    last_eval = evaluate(agent, eval_env, starts, baselines, args.reference)
    for t, value in tb_scalars(last_eval, args.reference).items():
        writer.add_scalar(t, value, step)
    write_baselines(step)
    writer.close()
    torch.save({"state_dict": agent.state_dict(), "args": asdict(args)}, run / "agent.pt")
    summary = {
        "run": str(run),
        "steps": step,
        "seconds": time.perf_counter() - t0,
        "validation": last_eval,
        "baselines": {b: r["mean"] for b, r in baselines.items()},
    }
    (run / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    print(json.dumps(summary, indent=1, default=float))
    return summary


if __name__ == "__main__":
    try:
        main()
    except (ValueError, FileNotFoundError) as exc:  # bad trace/option values: one line
        print(f"cleanrl_ppo.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
