"""``research/probes/selection_shift.py``: validation ratios (chosen and median candidate) against
the test ratio, read from model cards."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from research.probes import selection_shift as B


def _card(name: str, ratios: list[float], chosen: int, test: float, **more: object) -> dict:
    cands = [{"model": f"m{i}.zip", "geo_ratio": r} for i, r in enumerate(ratios)]
    return {
        "schema": "hpcgym-model-card/1",
        "name": name,
        "selection": {"reference": "EASY-SJBF", "chosen": f"m{chosen}.zip", "candidates": cands},
        "test": {
            "T": {"trace": "T", "transfer": False, "paired": {"EASY-SJBF": {"geo_ratio": test}}},
            "U": {"trace": "U", "transfer": True, "paired": {"EASY-SJBF": {"geo_ratio": 9.0}}},
        },
        **more,
    }


def test_read_shift_and_summary(tmp_path: Path) -> None:
    cards = {
        "a": _card("a", [0.8, 0.9, 1.0], 0, 0.9),
        "b": _card("b", [0.7, 1.0, 1.1, 1.2], 0, 1.05),
        "gated": _card("gated", [0.8], 0, 0.8, gate={"tau": 0.5, "fallback": "sjbf"}),
        "nosel": {"schema": "hpcgym-model-card/1", "name": "nosel", "test": {}},
        "notest": {**_card("notest", [0.9], 0, 0.9), "test": {}},
    }
    cards["b"]["selection"]["holdout"] = {"geo_ratio": 0.95}
    for k, v in cards.items():
        (tmp_path / f"{k}.json").write_text(json.dumps(v))
    # a JSON file that is not a card (the zoo's table of retired names) is not read
    (tmp_path / "retired.json").write_text(json.dumps({"old-name": "new-name"}))
    shifts, skipped = B.read_shifts(tmp_path)
    assert skipped == {"gated": 1, "no selection": 1, "no test": 1}
    a, b = shifts
    # the home trace's test, never the transfer's; the median of an even count is the
    # geometric mean of the middle two
    assert (a.chosen, a.test, a.holdout, a.candidates) == (0.8, 0.9, None, 3)
    assert a.median == pytest.approx(0.9)
    assert (b.chosen, b.test, b.holdout) == (0.7, 1.05, 0.95)
    assert b.median == pytest.approx(math.sqrt(1.0 * 1.1))
    s = B.summary(shifts)["all"]
    assert s["agents"] == 2
    assert s["chosen_mean"] == pytest.approx((math.log(0.9 / 0.8) + math.log(1.05 / 0.7)) / 2)
    assert s["median_mean"] == pytest.approx(math.log(1.05 / math.sqrt(1.1)) / 2)
    assert B.summary(shifts)["T"]["agents"] == 2


def test_main_on_the_shipped_agents(capsys: pytest.CaptureFixture[str]) -> None:
    assert B.main([]) == 0
    out = capsys.readouterr().out
    assert "| all |" in out and "sdsc-sp2-fcfs-guarded |" in out


def test_main_errors(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        B.main(["--agents-dir", str(tmp_path / "none")])
    with pytest.raises(SystemExit):
        B.main(["--agents-dir", str(tmp_path)])  # no card
