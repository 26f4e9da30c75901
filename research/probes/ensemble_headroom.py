"""Do ensembles of agents beat their best member? (validation windows only)

Several agents of one trace, base policy and observation (e.g. the seeds of one
recipe) are combined at every decision point by one of three rules:

* ``mean``: the action with the highest mean of the members' masked action probabilities;
* ``logmean``: the highest mean log-probability (a product of experts);
* ``vote``: the action most members choose (ties: the highest mean probability);

and played with the members on the same windows of the members' **validation** split
(window seed 8 by default: not the seed-7 windows their checkpoints were chosen on),
paired against the reference heuristic (docs/research/findings.md)::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/ensemble_headroom.py \\
        lublin1-fcfs-guarded-dense-vf03-s1 lublin1-fcfs-guarded-dense-vf03-s2 \\
        lublin1-fcfs-guarded-dense-vf03-seeds34 --length 512

The members must share the env their cards describe (trace, split, base policy, mode,
estimator, observation columns and scales); the script refuses others.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.ensemble_headroom`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable, [sys.executable, "-m", "research.probes.ensemble_headroom", *sys.argv[1:]]
    )

from hpcgym.evaluation.cards import ModelCard, load_model_card  # noqa: E402
from hpcgym.evaluation.methods import card_method, scheduler_method  # noqa: E402
from hpcgym.evaluation.selection import (  # noqa: E402
    _against_first,
    _choice_windows,
    run_reference,
)
from hpcgym_agents import load_agent  # noqa: E402
from hpcgym_agents.gated import action_probabilities  # noqa: E402
from hpcgym_agents.heuristic import HeuristicAgent  # noqa: E402
from hpcgym_agents.loading import load_card_agent, load_model  # noqa: E402
from research.probes._cards import card_path  # noqa: E402

RULES = ("mean", "logmean", "vote")
#: Card keys that fix the env an agent is played in: members must agree on all of them.
ENV_KEYS = (
    "trace",
    "train_fraction",
    "validation_fraction",
    "policy",
    "mode",
    "estimator",
    "correction",
    "feature_predictor",
    "features",
    "time_scale",
    "max_queue",
    "est_scale",
    "wait_scale",
)
ENSEMBLE_KEY = "bench_ensemble"


class EnsembleAgent(HeuristicAgent):
    """The members' combined choice (:data:`RULES`).

    :param models: the members' ``MaskablePPO`` models
    :param rule: one of :data:`RULES`
    """

    def __init__(self, models: list[Any], rule: str) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
        self.models = models
        self.rule = rule

    @property
    def observation_space(self) -> Any:
        return self.models[0].observation_space

    @property
    def action_space(self) -> Any:
        return self.models[0].action_space

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        probs = np.stack([action_probabilities(m, observations, masks) for m in self.models])
        mean = probs.mean(axis=0)
        if self.rule == "mean":
            return mean.argmax(axis=1)
        if self.rule == "logmean":
            logp = np.log(np.clip(probs, 1e-12, 1.0)).mean(axis=0)
            return np.where(masks, logp, -np.inf).argmax(axis=1)
        n = observations.shape[0]
        votes = np.zeros_like(mean)
        for p in probs:
            votes[np.arange(n), p.argmax(axis=1)] += 1.0
        return (votes + 1e-3 * mean).argmax(axis=1)  # mean < 1: only breaks ties


def loader(spec: str) -> Any:
    """The evaluation's agent loader: an ensemble card of this script, or load_agent's."""
    path = Path(spec)
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if ENSEMBLE_KEY in data:
            ens = data[ENSEMBLE_KEY]
            return EnsembleAgent([load_model(m) for m in ens["models"]], ens["rule"])
        return load_card_agent(path)
    return load_agent(spec)


def member_cards(names: list[str]) -> list[ModelCard]:
    """The members' cards (names as :func:`research.probes._cards.card_path` finds them),
    checked to describe one env."""
    cards = []
    for n in names:
        p = card_path(n)
        if p.suffix != ".json":
            raise SystemExit(f"{n}: no such agent in agents/pretrained or research/agents")
        cards.append(load_model_card(p))
    first = cards[0].data
    for c in cards[1:]:
        diff = [k for k in ENV_KEYS if c.data.get(k) != first.get(k)]
        if diff:
            raise SystemExit(
                f"{c.name} and {cards[0].name} differ in {', '.join(diff)}: an ensemble's "
                "members must share their env"
            )
    return cards


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents", nargs="+", help="agents' names or card .json files")
    ap.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=8, help="window seed (default 8)")
    ap.add_argument("--reference", default=None, help="default: the members' reference")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    if len(args.agents) < 2:
        ap.error("give at least two agents")
    cards = member_cards(args.agents)
    c0 = cards[0]
    ref = args.reference or run_reference(c0.data)
    wl, ws, _ = _choice_windows(c0.trace, None, c0.data, args.length, args.windows, args.seed)
    methods = [scheduler_method(ref)] + [card_method(c) for c in cards]
    with tempfile.TemporaryDirectory(prefix="hpcgym-ensemble-") as tmp:
        for rule in args.rules:
            data = {k: v for k, v in c0.to_dict().items() if k != "test"}
            data.update(model=str(c0.model.resolve()), name=f"ensemble-{rule}")
            data[ENSEMBLE_KEY] = {"rule": rule, "models": [str(c.model) for c in cards]}
            path = Path(tmp) / f"ensemble-{rule}.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            method = card_method(load_model_card(path))
            method.spec = str(path)  # the loader above builds the ensemble from the card
            methods.append(method)
        res = _against_first(wl, methods, ws, loader, args.jobs, False)
    print(
        f"{c0.trace}: {len(ws.starts)} validation windows of {ws.length} jobs "
        f"(window seed {args.seed}); paired geo-mean ratio of AVEbsld vs {ref}\n"
    )
    print("| method | ratio [95%] | wins |\n|---|---:|---:|")
    for m in methods[1:]:
        p = res.paired(m.label)
        print(
            f"| {m.label} | {p['geo_ratio']:.3f} [{p['ci_low']:.3f}, {p['ci_high']:.3f}] | "
            f"{p['wins']}/{len(ws.starts)} |"
        )


if __name__ == "__main__":
    main()
