"""How much does a guarded backfiller gain by *not* backfilling (STOP)?

The guarded Lublin agents depart from EASY-SJBF's choice mostly by STOPping where
EASY-SJBF would start a job; the SDSC-SP2 agent never stops (docs/research/findings.md).
This probe plays simple restraint rules against EASY-SJBF on the same
validation windows (``--split train``: the train split's; never ``test``), all in guarded
mode (request-based reservations):

* ``stop p=P``: EASY-SJBF's choice, but STOP instead with probability ``P`` at each
  decision point (a seeded ``numpy.random.Generator`` per window);
* ``one per instant``: EASY-SJBF's first choice at each new event time, then STOP until
  the next event (at most one backfill per instant);

and, with ``--agents``, what agents (the zoo's or the retired ones', by name or card) do at
the same decision points: the share of
their decisions that equal EASY-SJBF's, that STOP where EASY-SJBF starts a job, and that
start another job. With ``--policy SJF`` (or any base policy) the queue is ordered by that
policy and the reference is that policy with EASY-SJBF backfilling, e.g. ``SJF+EASY-SJBF``::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/restraint_headroom.py \\
        --trace Lublin-1 --length 512 --validation-fraction 0.3 \\
        --agents lublin1-fcfs-guarded-dense-vf03-seeds34
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.restraint_headroom`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.restraint_headroom", *sys.argv[1:]]
    )

from hpcgym import evaluation as E  # noqa: E402
from hpcgym.envs.backfill_env import BackfillEnv  # noqa: E402
from hpcgym.evaluation.play import play_window  # noqa: E402
from hpcgym.evaluation.statistics import paired_comparison  # noqa: E402
from hpcgym.sim.schedulers import policy_name  # noqa: E402
from hpcgym.workload import load, trace_spec  # noqa: E402
from hpcgym_agents import SJBFAgent, load_agent  # noqa: E402
from research.probes._cards import card_path  # noqa: E402


class RandomStop:
    """EASY-SJBF's choice, or STOP with probability ``p`` where it would start a job.

    :param p: the probability of STOP
    :param seed: seed of the generator
    """

    def __init__(self, p: float, seed: int) -> None:
        self.p = float(p)
        self.rng = np.random.default_rng(seed)
        self.sjbf = SJBFAgent()

    def predict(self, obs: np.ndarray, action_masks: Any = None, **_: Any) -> tuple[Any, None]:
        k = obs.shape[-2]
        a = int(self.sjbf.predict(obs, action_masks=action_masks)[0])
        return np.asarray(k if a != k and self.rng.random() < self.p else a), None


class OnePerInstant:
    """EASY-SJBF's first choice at each new event time of ``env``, then STOP.

    :param env: the env played (its simulation's clock tells a new instant)
    """

    def __init__(self, env: BackfillEnv) -> None:
        self.env = env
        self.last: float | None = None
        self.sjbf = SJBFAgent()

    def predict(self, obs: np.ndarray, action_masks: Any = None, **_: Any) -> tuple[Any, None]:
        now = float(self.env.simulation.now)
        if now == self.last:
            return np.asarray(obs.shape[-2]), None
        self.last = now
        return self.sjbf.predict(obs, action_masks=action_masks)


def decision_shares(env: BackfillEnv, agent: Any, starts: list[int]) -> dict[str, Any]:
    """The agent's decisions compared with EASY-SJBF's at the same decision points, and its
    AVEbsld per window (``bsld``)."""
    sjbf = SJBFAgent()
    n = same = stop = 0
    bsld: list[float] = []
    for s in starts:
        obs, _ = env.reset(seed=0, options={"start": int(s)})
        while True:
            mask = env.action_masks()
            k = len(mask) - 1
            a = int(np.asarray(agent.predict(obs, action_masks=mask, deterministic=True)[0]))
            b = int(sjbf.predict(obs, action_masks=mask)[0])
            n, same, stop = n + 1, same + (a == b), stop + (a != b and a == k)
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                bsld.append(float(info["agent"]["avg_bsld"]))
                break
    shares = {"same": same / n, "stop": stop / n, "other": (n - same - stop) / n}
    return {"decisions": n, **shares, "bsld": bsld}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--trace", default="SDSC-SP2", help="trace name or synthetic:K=V,...")
    p.add_argument("--policy", default="FCFS", help="base queue policy (FCFS)")
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--seed", type=int, default=8, help="window seed (8)")
    p.add_argument("--validation-fraction", type=float, default=0.1)
    p.add_argument(
        "--split",
        choices=("validation", "train"),
        default="validation",
        help="where the windows are drawn (validation; never test)",
    )
    p.add_argument("--stop", type=float, nargs="*", default=[0.1, 0.3], help="STOP probabilities")
    p.add_argument(
        "--agents", nargs="*", default=[], help="agents (names or cards): their decisions"
    )
    args = p.parse_args(argv)
    wl = load(trace_spec(args.trace))
    ws = E.select_windows(
        len(wl), args.length, args.windows, args.split, args.seed, 0.7,
        validation_fraction=args.validation_fraction,
    )  # fmt: skip
    starts = [int(s) for s in ws.starts]
    env = BackfillEnv(
        trace=wl, window_length=args.length, split="all", reference=None,
        policy=args.policy, mode="guarded",
    )  # fmt: skip
    base = [play_window(env, SJBFAgent(), s)["avg_bsld"] for s in starts]
    ref = policy_name("EASY-SJBF", args.policy)
    print(
        f"{args.trace} ({args.policy}), {len(starts)} {args.split} windows of {args.length} jobs "
        f"(seed {args.seed}); {ref} mean AVEbsld {np.mean(base):.2f}\n"
    )
    print(f"| rule | mean AVEbsld | ratio vs {ref} [95%] | wins |")
    print("|---|---:|---:|---:|")
    rules: list[tuple[str, Any]] = [
        (f"stop p={q:g}", lambda s, q=q: RandomStop(q, seed=s)) for q in args.stop
    ]
    rules.append(("one per instant", lambda s: OnePerInstant(env)))
    for name, make in rules:
        vals = [play_window(env, make(s), s)["avg_bsld"] for s in starts]
        pc = paired_comparison(vals, base)
        print(
            f"| {name} | {np.mean(vals):.2f} | {pc.geo_ratio:.3f} "
            f"[{pc.ci_low:.3f}, {pc.ci_high:.3f}] | {pc.wins}/{len(starts)} |"
        )
    for a in args.agents:
        found = card_path(a)  # a zoo or retired agent's card, else as given
        spec = str(found) if found.suffix == ".json" else a
        method = E.agent_method(spec)  # the env the agent was trained with, from its card
        aenv = BackfillEnv(
            trace=wl, window_length=args.length, split="all", reference=None, **method.env
        )
        sh = decision_shares(aenv, load_agent(spec), starts)
        pc = paired_comparison(sh["bsld"], base)
        print(
            f"\n{a}: {pc.geo_ratio:.3f} [{pc.ci_low:.3f}, {pc.ci_high:.3f}] x {ref}; "
            f"{sh['decisions']} decisions; same as {ref} {100 * sh['same']:.1f}%, "
            f"STOP where {ref} starts a job {100 * sh['stop']:.1f}%, "
            f"another job {100 * sh['other']:.1f}%"
        )


if __name__ == "__main__":
    main()
