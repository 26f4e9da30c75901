"""Gated agents: ``hpcgym_agents.GatedAgent``, the card's ``gate`` section
(``hpcgym.evaluation.gating``), ``select_gate`` / ``gated_card`` and ``eval/gate.py``, on
the embedded synthetic workload with a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
#: the 10,000-job synthetic workload (the default workload before 1.0): short and fast
SMALL = "synthetic:n_jobs=10000"

from hpcgym import evaluation as E  # noqa: E402
from hpcgym.evaluation import selection as S  # noqa: E402
from hpcgym.evaluation.gating import GATE_FALLBACKS, default_fallback, read_gate  # noqa: E402
from hpcgym.workload import load  # noqa: E402
from hpcgym_agents import HEURISTICS, GatedAgent, SJBFAgent, load_agent  # noqa: E402

CARD = {"schema": "hpcgym-model-card/1", "name": "tiny", "model": "tiny.zip",
        "trace": SMALL, "policy": "FCFS", "mode": "guarded", "normalizer": "EASY-SJBF",
        "max_queue": 16, "train_fraction": 0.7}  # fmt: skip


@pytest.fixture(scope="module")
def card(tmp_path_factory) -> Path:
    """A tiny trained model and its card (no gate)."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents.kernel_policy import KernelPolicy

    d = tmp_path_factory.mktemp("gate")
    env = BackfillEnv(trace=SMALL, sequence_length=64, max_queue=16, normalizer=None)
    model = MaskablePPO(KernelPolicy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    model.save(d / "tiny.zip")
    path = d / "tiny.json"
    path.write_text(json.dumps(CARD), encoding="utf-8")
    return path


def _gated_card(card: Path, gate: object, name: str = "g") -> Path:
    data = {**json.loads(card.read_text()), "name": name, "gate": gate}
    out = card.parent / f"{name}.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def _play(env, agent, start: int = 0) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(observation, mask, action) of every step of one episode played by ``agent``."""
    obs, _ = env.reset(seed=0, options={"start": start})
    steps = []
    while True:
        mask = env.action_masks()
        a = int(np.asarray(agent.predict(obs, action_masks=mask)[0]))
        steps.append((obs.copy(), mask.copy(), a))
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            return steps


def test_gate_rule_and_its_extremes(card: Path) -> None:
    """tau 0 plays the model's deterministic choice, tau > 1 the fallback's; in between an
    action departs from the fallback exactly where the model's most probable action is
    another one with probability >= tau."""
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents import load_model
    from hpcgym_agents.gated import action_probabilities

    model = load_model(card.with_suffix(".zip"))
    env = BackfillEnv(trace=SMALL, window_length=128, max_queue=16, split="all", reference=None)
    sjbf = SJBFAgent()
    steps = _play(env, GatedAgent(model, sjbf, 0.0))
    assert len(steps) > 20
    for obs, mask, a in steps:
        assert a == int(model.predict(obs, action_masks=mask, deterministic=True)[0])
    for obs, mask, a in _play(env, GatedAgent(model, sjbf, 1.01)):
        assert a == int(sjbf.predict(obs, action_masks=mask)[0])
    # a threshold in the middle of the model's confidences: both branches happen
    probs = np.stack([action_probabilities(model, o[None], m[None])[0] for o, m, _ in steps])
    tau = float(np.median(probs.max(axis=1)))
    gated = GatedAgent(model, sjbf, tau)
    played = _play(env, gated)
    departed = 0
    for obs, mask, a in played:
        p = action_probabilities(model, obs[None], mask[None])[0]
        best, base = int(p.argmax()), int(sjbf.predict(obs, action_masks=mask)[0])
        expect = best if p[best] >= tau and best != base else base
        assert a == expect
        departed += a != base
    assert gated.decisions == len(played) and gated.departures == departed
    assert 0 < departed < len(played)
    # a batch gives the actions of its observations one by one
    obs = np.stack([o for o, _, _ in played[:5]])
    masks = np.stack([m for _, m, _ in played[:5]])
    batch, _ = GatedAgent(model, sjbf, tau).predict(obs, action_masks=masks)
    assert batch.shape == (5,) and list(batch) == [a for _, _, a in played[:5]]
    with pytest.raises(ValueError, match="tau must be"):
        GatedAgent(model, sjbf, -0.1)


def test_cards_with_a_gate_load_as_gated_agents(card: Path) -> None:
    agent = load_agent(_gated_card(card, {"tau": 0.8, "fallback": "sjbf"}))
    assert isinstance(agent, GatedAgent) and agent.tau == 0.8
    assert isinstance(agent.fallback, SJBFAgent)
    assert not isinstance(load_agent(card), GatedAgent)  # a card without a gate: the model
    with pytest.raises(ValueError, match="valid: sjbf, easy, first, stop"):
        load_agent(_gated_card(card, {"tau": 0.8, "fallback": "random"}))
    with pytest.raises(ValueError, match=">= 0"):
        E.load_model_card(_gated_card(card, {"tau": -1, "fallback": "sjbf"}))
    with pytest.raises(ValueError, match="tau"):
        E.load_model_card(_gated_card(card, {"fallback": "sjbf"}))
    # every fallback is a deterministic heuristic agent of both tables
    assert set(GATE_FALLBACKS) <= set(HEURISTICS) and set(GATE_FALLBACKS) <= set(E.AGENT_HEURISTICS)
    assert read_gate({"gate": {"tau": "0.5", "fallback": "SJBF"}}) == {
        "tau": 0.5,
        "fallback": "sjbf",
    }
    assert default_fallback("EASY-SJBF") == "sjbf" and default_fallback("SJF+ELOSS") == "sjbf"
    assert default_fallback("EASY") == "easy"
    with pytest.raises(ValueError, match="give one of"):
        default_fallback("CONSERVATIVE")


def test_select_gate_and_the_shipped_gated_agent(card: Path, tmp_path: Path) -> None:
    sel = S.select_gate(
        card, agent_loader=load_agent, taus=[1.01, 0, 0.6], windows=4, length=64, seed=3, jobs=1
    )
    assert sel["split"] == "validation" and sel["reference"] == "EASY-SJBF"
    assert sel["fallback"] == "sjbf"
    rows = {r["tau"]: r for r in sel["candidates"]}
    assert list(rows) == [0.0, 0.6, 1.01]
    # never departing is EASY-SJBF itself, window by window
    assert rows[1.01]["departures"] == 0 and rows[1.01]["geo_ratio"] == pytest.approx(1.0)
    assert rows[0.0]["decisions"] > 0
    # tau 0 is the model alone: the same scores as evaluating the model's card
    wl = load(SMALL)
    ws = E.select_windows(len(wl), 64, 4, "validation", 3, 0.7)
    res = E.evaluate(
        wl, [E.agent_method(str(card), label="m")], ws, jobs=1, agent_loader=load_agent
    )
    plain = res.per_window("avg_bsld")["m"]
    assert rows[0.0]["mean_avg_bsld"] == pytest.approx(float(np.mean(plain)))
    best = min(sel["candidates"], key=lambda r: (r["geo_ratio"], -r["tau"]))
    assert sel["chosen_tau"] == best["tau"]
    assert sel["command"].startswith(f"python eval/gate.py {card}")
    assert "--taus 0 0.6 1.01 --windows 4 --length 64 --seed 3" in sel["command"]
    # ship it: the card shares the model, carries the choice and no test
    c = E.load_model_card(card)
    data = S.gated_card(c, sel, "tiny-gated", tmp_path)
    assert data["gate"]["tau"] == sel["chosen_tau"] and data["gate"]["base"] == "tiny"
    assert "test" not in data
    (tmp_path / "tiny-gated.json").write_text(json.dumps(data), encoding="utf-8")
    shipped = E.load_model_card(tmp_path / "tiny-gated.json")
    assert shipped.model.resolve() == card.with_suffix(".zip").resolve()
    method = E.agent_method("tiny-gated", agents_dir=tmp_path)
    assert method.spec.endswith("tiny-gated.json")
    again = E.evaluate(wl, [method], ws, jobs=1, agent_loader=load_agent)
    got = again.per_window("avg_bsld")["tiny-gated"]
    assert float(np.mean(got)) == pytest.approx(best["mean_avg_bsld"])
    deps = [r["departures"] for r in again.rows]
    assert sum(deps) == best["departures"]
    assert "## Gate" in E.cards.card_markdown(data)
    with pytest.raises(ValueError, match="gated already"):
        S.select_gate(shipped, agent_loader=load_agent, windows=2, length=64)
    with pytest.raises(ValueError, match="taus"):
        S.select_gate(card, agent_loader=load_agent, taus=[-1], windows=2, length=64)


def test_engine_schedulers_and_plain_agents_have_no_departures(card: Path) -> None:
    wl = load(None)
    ws = E.select_windows(len(wl), 64, 2, "validation", 3, 0.7)
    ms = [E.scheduler_method("EASY"), E.agent_method(str(card), label="m")]
    res = E.evaluate(wl, ms, ws, jobs=1, agent_loader=load_agent)
    assert all("departures" not in r for r in res.rows)


def test_gate_command_line(card: Path, tmp_path: Path, capsys) -> None:
    from eval.gate import main

    args = [str(card), "--taus", "0", "1.01", "--windows", "2", "--length", "64"]
    args += ["--jobs", "1", "--no-progress", "--out", str(tmp_path)]
    assert main([*args, "--name", "tg"]) == 0
    out = capsys.readouterr().out
    assert "| 1.01 | 0.0% |" in out and "<- chosen" in out
    data = json.loads((tmp_path / "tg.json").read_text())
    assert data["gate"]["fallback"] == "sjbf" and (tmp_path / "tg.md").is_file()
    assert main([*args, "--name", "tg"]) == 2  # the name exists
    assert "exists" in capsys.readouterr().err
    assert main([str(tmp_path / "tg.json"), "--windows", "2", "--length", "64"]) == 2
    assert "gated already" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([str(card), "--taus", "-0.5"])
    assert exc.value.code == 2
    assert main(["no-such-agent"]) == 2
    assert "neither a model card" in capsys.readouterr().err
    assert set(GATE_FALLBACKS) == {"sjbf", "easy", "first", "stop"}
    assert all(callable(HEURISTICS[f]) for f in GATE_FALLBACKS)


def test_heldout_test_counts_a_gated_agents_departures(card: Path) -> None:
    from hpcgym.evaluation.heldout import heldout_markdown, heldout_test

    gated = E.load_model_card(_gated_card(card, {"tau": 0.0, "fallback": "sjbf"}, "g0"))
    sec = heldout_test(gated, agent_loader=load_agent, windows=2, length=64, seed=5, jobs=1)
    a = sec["agent"]
    # tau 0 plays the model: it departs wherever its choice is not EASY-SJBF's
    assert 0 < a["departures"] <= a["decisions"]
    assert f"fallback at {a['departures']} of them" in "\n".join(heldout_markdown(sec, "g0"))
    plain = heldout_test(
        E.load_model_card(card), agent_loader=load_agent, windows=2, length=64, seed=5, jobs=1
    )
    assert "departures" not in plain["agent"] and plain["agent"]["decisions"] == a["decisions"]
