"""The leaderboard of docs/results.md (``hpcgym.evaluation.leaderboard``, ``eval/results.py``).

A tiny agent is tested on 3 windows of the synthetic workload; the board must replay its
recorded test, add every heuristic on the same windows and refuse a card whose recorded
numbers are not what a replay gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

pytest.importorskip("sb3_contrib")

from hpcgym import evaluation as E  # noqa: E402
from hpcgym.evaluation.heldout import heldout_test  # noqa: E402
from hpcgym.evaluation.leaderboard import (  # noqa: E402
    LEADERBOARD_REFERENCE,
    leaderboard,
    leaderboard_markdown,
)
from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.workload import load  # noqa: E402
from hpcgym_agents import load_agent  # noqa: E402

SCHEDULERS = ("EASY", "EASY-SJBF", "SAF", "SJF+EASY")


@pytest.fixture(scope="module")
def tested(tmp_path_factory) -> Path:
    """A tiny MaskablePPO agent's card with a held-out test on 3 synthetic windows."""
    from conftest import tiny_agent_card

    path = tiny_agent_card(tmp_path_factory.mktemp("board"), normalizer="EASY-SJBF")
    card = json.loads(path.read_text())
    sec = heldout_test(
        E.load_model_card(path),
        agent_loader=load_agent,
        windows=3,
        length=128,
        seed=5,
        jobs=1,
    )
    card["test"] = {"synthetic": sec}
    path.write_text(json.dumps(card))
    return path


def test_the_board_replays_the_agent_and_runs_every_heuristic(tested: Path) -> None:
    card = E.load_model_card(tested)
    (board,) = leaderboard([card], agent_loader=load_agent, schedulers=SCHEDULERS, jobs=1)
    sec = card.data["test"]["synthetic"]
    assert board["trace"] == "synthetic" and board["starts"] == sec["starts"]
    rows = {r["method"]: r for r in board["rows"]}
    assert set(rows) == {*SCHEDULERS, "tiny"}
    # the heuristics are the engine's numbers on the card's windows
    wl = load(None)
    saf = [get_scheduler("SAF").simulate(wl.window(s, 128), seed=0).metrics["avg_bsld"]
           for s in sec["starts"]]  # fmt: skip
    assert rows["SAF"]["mean_avg_bsld"] == pytest.approx(np.mean(saf), rel=1e-12)
    # the agent's row is its recorded test, compared with the reference on the same windows
    assert rows["tiny"]["mean_avg_bsld"] == pytest.approx(sec["methods"]["tiny"]["mean_avg_bsld"])
    assert rows["tiny"]["geo_ratio"] == pytest.approx(sec["paired"]["EASY-SJBF"]["geo_ratio"])
    assert rows[LEADERBOARD_REFERENCE]["geo_ratio"] == 1.0
    # best first; three windows are too few for any verdict but "inconclusive"
    ratios = [r["geo_ratio"] for r in board["rows"]]
    assert ratios == sorted(ratios)
    assert {r["verdict"] for r in board["rows"]} == {"inconclusive"}
    # the ratio of means and the objectives beyond bounded slowdown are in every row
    assert rows["SAF"]["mean_ratio"] == pytest.approx(
        np.mean(saf) / rows[LEADERBOARD_REFERENCE]["mean_avg_bsld"], rel=1e-12
    )
    assert rows[LEADERBOARD_REFERENCE]["awrt_ratio"] == 1.0
    assert {"mean_utilization", "mean_awrt", "mean_avg_wait_serial"} <= set(rows["tiny"])
    assert rows["SAF"]["replicated_on"] is None  # one board: no second trace
    md = leaderboard_markdown([board], "python eval/results.py --out x.md")
    assert "## Backfill-v0 on synthetic" in md and "| **tiny** | zoo agent |" in md
    assert "`python eval/heldout.py agents/pretrained/tiny.json --check`" in md
    assert "--schedulers SAF --split test --windows 3 --length 128 --seed 5" in md


def test_a_stale_card_is_refused(tested: Path, tmp_path: Path) -> None:
    data = json.loads(tested.read_text())
    data["model"] = str(tested.with_suffix(".zip"))
    data["test"]["synthetic"]["methods"]["EASY-SJBF"]["per_window"][0] *= 1.001
    (tmp_path / "tiny.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="other EASY-SJBF values than a replay"):
        leaderboard(
            [E.load_model_card(tmp_path / "tiny.json")],
            agent_loader=load_agent,
            schedulers=SCHEDULERS,
            jobs=1,
        )


def test_the_command_writes_the_board(tested: Path, tmp_path: Path) -> None:
    from eval.results import main

    out = tmp_path / "results.md"
    assert main(["--cards", str(tested.parent), "--jobs", "1", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Results") and "| **tiny** |" in text
    assert f"python eval/results.py --cards {tested.parent} --out {out}" in text
    assert main(["--cards", str(tmp_path / "none"), "--out", str(out)]) == 2


def test_a_claim_holds_only_where_the_second_trace_makes_it_too() -> None:
    from hpcgym.evaluation.leaderboard import replicate, replicated_cell

    def row(method: str, verdict: str, **kw) -> dict:
        return {"method": method, "kind": "heuristic", "verdict": verdict, **kw}

    recipe = "agent:SJF/EASY-SJBF/guarded/request"
    sdsc = {"trace": "SDSC-SP2", "rows": [
        row("SAF", "better"), row("ELOSS", "better"), row("EASY", "worse"), row("X", "better"),
        row("sdsc-sp2-sjf", "better", kind="agent", recipe=recipe),
    ]}  # fmt: skip
    hpc2n = {"trace": "HPC2N", "rows": [
        row("SAF", "better"), row("ELOSS", "on par"), row("EASY", "inconclusive"),
        row("hpc2n-sjf", "inconclusive (longer tail)", kind="agent", recipe=recipe),
    ]}  # fmt: skip
    replicate([sdsc, hpc2n])
    r = {x["method"]: x for x in sdsc["rows"]}
    assert r["SAF"]["replicated"] == "better" and replicated_cell(r["SAF"]) == "holds on HPC2N"
    assert r["ELOSS"]["replicated"] == "inconclusive"
    assert replicated_cell(r["ELOSS"]) == "not on HPC2N (on par)"
    assert replicated_cell(r["EASY"]) == "not on HPC2N (inconclusive)"
    assert r["X"]["replicated"] is None and replicated_cell(r["X"]) == "—: no second test"
    # a zoo agent is looked up by its recipe, not its name
    assert r["sdsc-sp2-sjf"]["replicated_on"] == "HPC2N"
    assert r["sdsc-sp2-sjf"]["replicated"] == "inconclusive"
    h = {x["method"]: x for x in hpc2n["rows"]}
    assert h["SAF"]["replicated"] == "better" and h["SAF"]["replicated_on"] == "SDSC-SP2"
