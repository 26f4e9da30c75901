"""``research/probes/targets.py``: the project's targets counted from model cards' held-out
tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

from research.probes.targets import main, target_rows, targets_markdown  # noqa: E402


def _p(ratio: float, high: float, windows: int = 30) -> dict[str, Any]:
    verdict = "better" if high < 1 else "on par"
    return {
        "geo_ratio": ratio,
        "ci_low": ratio - 0.05,
        "ci_high": high,
        "windows": windows,
        "wins": windows // 2,
        "verdict": verdict,
    }


def card(
    name: str,
    trace: str,
    tests: dict[str, dict[str, Any]],
    policy: str = "FCFS",
    estimator: str = "request",
    mode: str = "guarded",
) -> dict[str, Any]:
    """A card dict with ``tests``: test trace -> {reference: paired, "transfer": bool,
    "means": {method: mean AVEbsld}}."""
    out: dict[str, Any] = {}
    pre = "" if policy == "FCFS" else f"{policy}+"
    for tr, t in tests.items():
        means = t.get("means", {})
        out[tr] = {
            "trace": tr,
            "transfer": t.get("transfer", False),
            "windows": 30,
            "command": f"python eval/compare.py --trace {tr}",
            "paired": {
                pre + k: v for k, v in t.items() if k not in ("transfer", "means", "starts")
            },
            "methods": {m: {"mean_avg_bsld": v} for m, v in means.items()},
        }
        if "starts" in t:
            out[tr].update(starts=t["starts"], length=1024)
    return {
        "name": name,
        "trace": trace,
        "policy": policy,
        "estimator": estimator,
        "mode": mode,
        "test": out,
    }


def _row(rows: list[Any], target: str, trace: str) -> Any:
    return next(r for r in rows if r.target.key == target and r.trace == trace)


def test_fcfs_own_trace_needs_the_ratio_and_the_interval() -> None:
    cards = [
        card("a", "Lublin-1", {"Lublin-1": {"EASY-SJBF": _p(0.80, 0.95)}}),
        card("b", "Lublin-1", {"Lublin-1": {"EASY-SJBF": _p(0.86, 0.95)}}),  # ratio > 0.85
        card("c", "Lublin-1", {"Lublin-1": {"EASY-SJBF": _p(0.80, 1.01)}}),  # interval
        card("d", "Lublin-1", {"Lublin-1": {"EASY-SJBF": _p(0.80, 0.95, windows=20)}}),
        card("e", "Lublin-1", {"Lublin-1": {"EASY-SJBF": _p(0.5, 0.6)}}, mode="free"),
        card("f", "Lublin-1", {"Lublin-1": {"EASY-SJBF": _p(0.5, 0.6)}}, estimator="eloss"),
    ]
    r = _row(target_rows(cards), "fcfs", "Lublin-1")
    assert r.tested == ["a", "b", "c", "d"]  # free and predictor-informed agents elsewhere
    assert r.met == ["a"]
    assert min(r.ratios) == pytest.approx(0.80) and max(r.ratios) == pytest.approx(0.86)
    assert _row(target_rows(cards), "fcfs", "SDSC-SP2").tested == []


def test_transfer_is_met_only_on_all_three_traces() -> None:
    def transfer(ratio: float, agent: float, easy: float = 50.0) -> dict[str, Any]:
        return {
            "EASY-SJBF": _p(ratio, ratio + 0.05),
            "transfer": True,
            "means": {"EASY": easy, "x": agent},
        }

    two = {"CTC-SP2": transfer(0.98, 40.0), "SDSC-BLUE": transfer(0.99, 40.0)}
    x = card("x", "SDSC-SP2", {**two, "KTH-SP2": transfer(1.01, 40.0)})
    rows = target_rows([x])
    assert _row(rows, "transfer", "CTC-SP2").met == ["x"]
    assert _row(rows, "transfer", "KTH-SP2").met == []
    every = _row(rows, "transfer", "all three")
    assert every.tested == ["x"] and every.met == []
    ok = card("x", "SDSC-SP2", {**two, "KTH-SP2": transfer(1.0, 40.0)})
    assert _row(target_rows([ok]), "transfer", "all three").met == ["x"]
    worse_than_easy = card("x", "SDSC-SP2", {**two, "KTH-SP2": transfer(0.99, 60.0)})
    assert _row(target_rows([worse_than_easy]), "transfer", "all three").met == []
    # an agent trained on another trace is not "the SDSC-SP2 agent"
    other = card("y", "Lublin-1", {**two, "KTH-SP2": transfer(0.9, 40.0)})
    assert _row(target_rows([other]), "transfer", "KTH-SP2").tested == []


def test_predicted_reservations_and_sjf_targets() -> None:
    cards = [
        card("p", "HPC2N", {"HPC2N": {"ELOSS": _p(0.9, 0.97)}}, estimator="eloss"),
        card("q", "HPC2N", {"HPC2N": {"ELOSS": _p(0.9, 1.02)}}, estimator="eloss"),
        card("s", "HPC2N", {"HPC2N": {"EASY-SJBF": _p(0.9, 0.98)}}, policy="SJF"),
    ]
    rows = target_rows(cards)
    predicted = _row(rows, "fcfs-predicted", "HPC2N")
    assert predicted.tested == ["p", "q"] and predicted.met == ["p"]
    sjf = _row(rows, "sjf", "HPC2N")  # the SJF agent's reference is SJF+EASY-SJBF
    assert sjf.tested == ["s"] and sjf.met == ["s"] and sjf.ratios == [pytest.approx(0.9)]
    assert _row(rows, "fcfs", "HPC2N").tested == []


def test_sjf_with_predicted_reservations_is_like_for_like() -> None:
    """An SJF agent whose reservations use E-Loss's predictions must also beat SJF+ELOSS."""
    from research.probes.targets import like_for_like

    both = {"EASY-SJBF": _p(0.85, 0.95), "ELOSS": _p(0.93, 0.99)}
    only_sjbf = {"EASY-SJBF": _p(0.85, 0.95), "ELOSS": _p(0.97, 1.05)}
    cards = [
        card("e1", "SDSC-SP2", {"SDSC-SP2": both}, policy="SJF", estimator="eloss"),
        card("e2", "SDSC-SP2", {"SDSC-SP2": only_sjbf}, policy="SJF", estimator="eloss"),
        card("e3", "SDSC-SP2", {"SDSC-SP2": {"EASY-SJBF": _p(0.85, 0.95)}}, policy="SJF",
             estimator="eloss"),  # no like-for-like comparison on the card
        card("r", "SDSC-SP2", {"SDSC-SP2": {"EASY-SJBF": _p(0.85, 0.95)}}, policy="SJF"),
    ]  # fmt: skip
    for c in cards[:3]:
        c["correction"] = "incremental-offset"
    assert like_for_like(cards[0]) == "ELOSS" and like_for_like(cards[3]) is None
    odd = {**cards[0], "estimator": "tang-user"}
    assert like_for_like(odd) not in (None, "ELOSS", "EASY++")
    assert like_for_like({**cards[0], "estimator": "ave2"}) == "EASY++"
    r = _row(target_rows(cards), "sjf", "SDSC-SP2")
    assert r.tested == ["e1", "e2", "e3", "r"] and r.met == ["e1", "r"]
    # p-values: the larger of the two comparisons; a missing one counts as 1
    from research.probes.targets import pvalue

    sec = cards[1]["test"]["SDSC-SP2"]
    assert r.pvalues["e2"] == pvalue(cards[1], sec, "ELOSS") > pvalue(cards[1], sec, "EASY-SJBF")
    assert r.pvalues["e3"] == 1.0
    assert r.pvalues["r"] == pvalue(cards[3], cards[3]["test"]["SDSC-SP2"], "EASY-SJBF")


def test_holm_pays_for_every_agent_tested_on_the_trace() -> None:
    # alone, an interval just below 1 meets the SJF target; among ten tested it does not
    lone = card("a", "HPC2N", {"HPC2N": {"EASY-SJBF": _p(0.90, 0.99)}}, policy="SJF")
    r = _row(target_rows([lone]), "sjf", "HPC2N")
    assert r.met == ["a"] and r.met_holm == ["a"]
    assert r.pvalues["a"] == pytest.approx(0.0151, abs=1e-3)
    others = [
        card(f"o{i}", "HPC2N", {"HPC2N": {"EASY-SJBF": _p(1.0, 1.1)}}, policy="SJF")
        for i in range(9)
    ]
    r = _row(target_rows([lone, *others]), "sjf", "HPC2N")
    assert r.met == ["a"] and r.met_holm == [] and len(r.pvalues) == 10
    # a clear win survives the same nine looks
    clear = card("b", "HPC2N", {"HPC2N": {"EASY-SJBF": _p(0.80, 0.90)}}, policy="SJF")
    r = _row(target_rows([clear, *others]), "sjf", "HPC2N")
    assert r.met_holm == ["b"]
    md = targets_markdown([clear, *others])
    line = next(x for x in md.splitlines() if "| SJF, own trace | HPC2N" in x)
    assert "| 10 | 1 (**met**) | 1 |" in line
    # the transfer (no interval in its criterion) has no Holm count
    t2 = _row(target_rows([clear]), "transfer", "CTC-SP2")
    assert t2.pvalues == {} and t2.met_holm == []


def test_pvalue_from_the_per_window_values_when_the_card_has_them() -> None:
    """Cards with per-window values get the bootstrap's own p-value; older cards the
    normal approximation from ratio and interval."""
    import numpy as np

    from hpcgym.evaluation.statistics import (
        bootstrap_p_below_one,
        p_below_one,
        paired_comparison,
    )
    from research.probes.targets import pvalue

    rng = np.random.default_rng(3)
    ref = rng.uniform(20, 80, size=30)
    agent = ref * np.exp(-0.07 + 0.2 * rng.standard_normal(30))
    pc = paired_comparison(agent, ref).to_dict()
    old = card("a", "HPC2N", {"HPC2N": {"EASY-SJBF": pc}}, policy="SJF")
    sec = old["test"]["HPC2N"]
    assert pvalue(old, sec, "EASY-SJBF") == p_below_one(pc)
    new = json.loads(json.dumps(old))
    new["test"]["HPC2N"]["methods"] = {
        "a": {"per_window": list(agent)},
        "SJF+EASY-SJBF": {"per_window": list(ref)},
    }
    sec = new["test"]["HPC2N"]
    exact = bootstrap_p_below_one(agent, ref)
    assert pvalue(new, sec, "EASY-SJBF") == exact != p_below_one(pc)
    assert _row(target_rows([new]), "sjf", "HPC2N").pvalues["a"] == exact
    assert pvalue(new, sec, "ELOSS") is None  # no such comparison on the card


def test_markdown_and_the_command_line(tmp_path: Path) -> None:
    # windows [0, 1536) and [2000, 3024) together: 2,560 different jobs
    test = {"EASY-SJBF": _p(0.80, 0.95), "starts": [512, 0, 2000, 512]}
    cards = [card("a", "Lublin-2", {"Lublin-2": test})]
    assert _row(target_rows(cards), "fcfs", "Lublin-2").jobs == [2560]
    md = targets_markdown(cards)
    line = next(x for x in md.splitlines() if x.startswith("| FCFS, own trace | Lublin-2 |"))
    assert "| 1 | 1 (**met**) | 1 | 0.800 | 2,560 | `a` |" in line
    no_test = (
        "| SJF, own trace | Lublin-2 | interval vs SJF+EASY-SJBF < 1 (predicted reservations: "
        "also vs the same heuristic) | 0 | 0 (not met) | — | — | — | — |"
    )
    assert no_test in md
    transfer = "| FCFS, transfer | CTC-SP2 | <= 1.0 x EASY-SJBF, mean AVEbsld below EASY's"
    assert transfer + " | 0 | 0 | — | —" in md
    d = tmp_path / "agents"
    d.mkdir()
    (d / "a.zip").write_bytes(b"")
    (d / "a.json").write_text(json.dumps({**cards[0], "model": "a.zip"}))
    out = tmp_path / "t.md"
    assert main(["--agents", str(d), "--out", str(out)]) == 0
    assert out.read_text() == md + "\n"
    # several folders are read together; a folder that is not one is a user error
    e = tmp_path / "more"
    e.mkdir()
    assert main(["--agents", str(d), str(e), "--out", str(out)]) == 0
    assert out.read_text() == md + "\n"
    assert main(["--agents", str(tmp_path / "none")]) == 2


def test_the_retired_agents_and_the_zoo_are_counted_together() -> None:
    """By default both folders are read; a zoo agent's test records it under the name it
    was trained as, and its per-window values are found there."""
    from research.probes._cards import load_cards, tested_as
    from research.probes.targets import TARGETS, pvalue

    cards = load_cards()
    names = {str(c["name"]) for c in cards}
    assert {"lublin1-fcfs", "lublin1-fcfs-guarded-dense-vf03-seeds34"} <= names
    row = _row(target_rows(cards), "fcfs", "Lublin-1")
    assert "lublin1-fcfs" in row.met and "lublin1-fcfs-guarded-dense-vf03-seeds34" in row.met
    zoo = next(c for c in cards if c["name"] == "hpc2n-fcfs")  # its test stores per window
    sec = zoo["test"]["HPC2N"]
    assert tested_as(zoo, sec) == zoo["trained_as"] != zoo["name"]
    agent = sec["methods"][zoo["trained_as"]]["per_window"]
    base = sec["methods"]["EASY-SJBF"]["per_window"]
    from hpcgym.evaluation.statistics import bootstrap_p_below_one

    assert pvalue(zoo, sec, TARGETS[0].reference) == bootstrap_p_below_one(agent, base)


def test_warm_agents_are_measured_against_the_warm_heuristics() -> None:
    """An agent whose estimates are warm-started from the accounting log counts for
    the predicted-reservations target only against ``ELOSS,warm=log`` (like for like), never
    the cold ELOSS."""
    warm_only = {"ELOSS": _p(0.8, 0.9), "ELOSS,warm=log": _p(0.98, 1.03)}
    both = {"ELOSS": _p(0.8, 0.9), "ELOSS,warm=log": _p(0.9, 0.97)}
    cards = [
        card("w1", "HPC2N", {"HPC2N": warm_only}, estimator="eloss:warm=log"),
        card("w2", "HPC2N", {"HPC2N": both}, estimator="eloss:warm=log"),
        card("c", "HPC2N", {"HPC2N": {"ELOSS": _p(0.8, 0.9)}}, estimator="eloss"),
    ]
    r = _row(target_rows(cards), "fcfs-predicted", "HPC2N")
    assert r.tested == ["w1", "w2", "c"] and r.met == ["w2", "c"]
    assert r.ratios[0] == pytest.approx(0.98)
    sjf = {
        "EASY-SJBF": _p(0.9, 0.95),
        "ELOSS": _p(0.8, 0.9),
        "ELOSS,warm=log": _p(0.97, 1.02),
    }
    r4 = _row(
        target_rows([card("s", "HPC2N", {"HPC2N": sjf}, "SJF", "eloss:warm=log")]), "sjf", "HPC2N"
    )
    assert r4.tested == ["s"] and r4.met == []  # also vs SJF+ELOSS,warm=log: not below 1
