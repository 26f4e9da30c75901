"""``research/probes/ensemble_headroom.py``: the ensemble agent's rules and the members' env check,
on the embedded synthetic workload with tiny models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

CARD = {"schema": "hpcgym-model-card/1", "name": "tiny", "model": "tiny.zip",
        "trace": "synthetic", "policy": "FCFS", "mode": "guarded", "normalizer": "EASY-SJBF",
        "max_queue": 16, "train_fraction": 0.7}  # fmt: skip


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> tuple[list[Path], list[object], object]:
    """Two tiny models of different seeds with their cards, and the env they play in."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents.kernel_policy import KernelPolicy

    d = tmp_path_factory.mktemp("ensemble")
    env = BackfillEnv(trace=None, sequence_length=64, max_queue=16, normalizer=None)
    cards, models = [], []
    for seed in (0, 1):
        model = MaskablePPO(KernelPolicy, env, n_steps=64, batch_size=64, n_epochs=1, seed=seed)
        model.learn(128)
        model.save(d / f"tiny{seed}.zip")
        card = d / f"tiny{seed}.json"
        card.write_text(
            json.dumps({**CARD, "name": f"tiny{seed}", "model": f"tiny{seed}.zip"}),
            encoding="utf-8",
        )
        cards.append(card)
        models.append(model)
    return cards, models, env


def _decision_points(env, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the first ``n`` decision points of EASY-SJBF's episode."""
    from hpcgym_agents import SJBFAgent

    agent = SJBFAgent()
    obs, _ = env.reset(seed=0, options={"start": 0})
    out_o, out_m = [], []
    while len(out_o) < n:
        mask = env.action_masks()
        out_o.append(obs)
        out_m.append(mask)
        obs, _, done, trunc, _ = env.step(int(agent.predict(obs, action_masks=mask)[0]))
        if done or trunc:
            obs, _ = env.reset(seed=0, options={"start": 100})
    return np.stack(out_o), np.stack(out_m)


def test_rules(members) -> None:
    from hpcgym_agents.gated import action_probabilities
    from research.probes import ensemble_headroom as EH

    _cards, models, env = members
    obs, masks = _decision_points(env)
    probs = [action_probabilities(m, obs, masks) for m in models]
    # one member twice: every rule plays that member's deterministic choice
    for rule in EH.RULES:
        twice = EH.EnsembleAgent([models[0], models[0]], rule).select(obs, masks)
        np.testing.assert_array_equal(twice, probs[0].argmax(axis=1))
    mean = EH.EnsembleAgent(models, "mean").select(obs, masks)
    np.testing.assert_array_equal(mean, (probs[0] + probs[1]).argmax(axis=1))
    logmean = EH.EnsembleAgent(models, "logmean").select(obs, masks)
    assert masks[np.arange(len(obs)), logmean].all()
    vote = EH.EnsembleAgent(models, "vote").select(obs, masks)
    a0, a1 = probs[0].argmax(axis=1), probs[1].argmax(axis=1)
    agree = a0 == a1
    np.testing.assert_array_equal(vote[agree], a0[agree])  # two votes win
    # one vote each: the tie goes to the higher mean probability
    tie = ~agree
    both = probs[0] + probs[1]
    pick = np.where(both[np.arange(len(obs)), a0] >= both[np.arange(len(obs)), a1], a0, a1)
    np.testing.assert_array_equal(vote[tie], pick[tie])
    with pytest.raises(ValueError, match="mean, logmean, vote"):
        EH.EnsembleAgent(models, "max")


def test_members_must_share_their_env(members, tmp_path: Path) -> None:
    from research.probes import ensemble_headroom as EH

    cards, _models, _env = members
    assert [c.name for c in EH.member_cards([str(c) for c in cards])] == ["tiny0", "tiny1"]
    other = json.loads(cards[1].read_text())
    other.update(policy="SJF", model=str(cards[1].parent / "tiny1.zip"))
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(SystemExit, match="differ in policy"):
        EH.member_cards([str(cards[0]), str(odd)])
