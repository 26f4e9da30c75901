"""A screen of training settings (``hpcgym.evaluation.screen``, ``eval/screen.py``): the
checkpoint choices of several runs, read from their ``selection.json``, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hpcgym.evaluation.screen import compare_selections, screen_markdown
from hpcgym.evaluation.selection import SELECTION_FILE
from hpcgym.evaluation.statistics import choice_holdout, paired_comparison

REPO = Path(__file__).resolve().parents[1]
STARTS = list(range(0, 3000, 100))  # 30 windows
REF = np.random.default_rng(1).uniform(20, 80, size=len(STARTS))


def _run(root: Path, name: str, config: dict[str, Any], shifts: list[float], **sel: Any) -> Path:
    """A run folder with ``config.json`` and a selection of one candidate per shift
    (candidate ``i``: the reference times ``exp(shift_i + noise)`` per window)."""
    d = root / name
    d.mkdir()
    base = {"trace": "SDSC-SP2", "seed": 31, "gamma": 1.0, "logdir": str(root), "run_name": name}
    (d / "config.json").write_text(json.dumps({**base, **config}))
    rng = np.random.default_rng(len(name))
    cands = []
    for i, s in enumerate(shifts):
        x = REF * np.exp(s + 0.1 * rng.standard_normal(len(REF)))
        pc = paired_comparison(x, REF).to_dict()
        cands.append({"model": f"m{i}.zip", "steps": 1000 * (i + 1), **pc, "avg_bsld": list(x)})
    chosen = min(cands, key=lambda c: c["geo_ratio"])
    doc = {
        "trace": "SDSC-SP2",
        "split": "validation",
        "windows": len(STARTS),
        "length": 1024,
        "seed": 7,
        "starts": STARTS,
        "reference": "EASY-SJBF",
        "reference_avg_bsld": list(REF),
        "chosen": chosen["model"],
        "candidates": cands,
        "holdout": choice_holdout({c["model"]: c["avg_bsld"] for c in cands}, REF),
        **sel,
    }
    (d / SELECTION_FILE).write_text(json.dumps(doc))
    return d


def test_screen_sets_the_runs_side_by_side(tmp_path: Path) -> None:
    a = _run(tmp_path, "base", {}, [0.05, 0.0, 0.02])
    b = _run(tmp_path, "lam", {"gae_lambda": 0.8}, [-0.10, 0.01, 0.03, -0.02])
    s = compare_selections([a, b])
    ra, rb = s["runs"]
    # the setting: where a run departs from the others (not folders or run names); on a
    # tie the earliest run is the common setting
    assert ra["setting"] == "the common setting" and rb["setting"] == "gae_lambda=0.8"
    c = _run(tmp_path, "gam", {"gamma": 0.99}, [0.0, 0.1])
    three = compare_selections([a, b, c])["runs"]
    assert [r["setting"] for r in three] == ["the common setting", "gae_lambda=0.8", "gamma=0.99"]
    assert (ra["candidates"], rb["candidates"]) == (3, 4)
    sel_b = json.loads((b / SELECTION_FILE).read_text())
    ratios_b = sorted(c["geo_ratio"] for c in sel_b["candidates"])
    assert rb["geo_ratio"] == ratios_b[0] and rb["chosen"] == sel_b["chosen"]
    assert rb["median"] == pytest.approx((ratios_b[1] + ratios_b[2]) / 2)
    # across the runs: the lowest of all 7 candidates, and the holdout of that choice
    across = s["across"]
    assert across["chosen"] == f"lam: {rb['chosen']}" and across["candidates"] == 7
    assert across["geo_ratio"] == rb["geo_ratio"] < ra["geo_ratio"]
    every = {
        f"{n}: {c['model']}": c["avg_bsld"]
        for n, d in (("base", a), ("lam", b))
        for c in json.loads((d / SELECTION_FILE).read_text())["candidates"]
    }
    assert across["holdout"] == choice_holdout(every, list(REF))
    md = screen_markdown(s)
    assert "| lam | gae_lambda=0.8 | 4 |" in md and "Across the 2 runs (7 candidates)" in md


def test_screen_refuses_other_windows_and_single_runs(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", {}, [0.0, 0.1])
    b = _run(tmp_path, "b", {"gamma": 0.99}, [0.0], seed=8)
    with pytest.raises(ValueError, match="differs .* in seed"):
        compare_selections([a, b])
    with pytest.raises(ValueError, match="at least two runs"):
        compare_selections([a])
    with pytest.raises(ValueError, match="named twice"):
        compare_selections([a, a])
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="eval/select_checkpoint.py"):
        compare_selections([a, tmp_path / "c"])


def test_screen_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from eval.screen import main

    a = _run(tmp_path, "a", {"learning_rate": 3e-4}, [0.0, 0.1])
    b = _run(tmp_path, "b", {"learning_rate": 1e-4}, [-0.05, 0.1])
    out = tmp_path / "screen.md"
    assert main([str(a), str(b), "--out", str(out)]) == 0
    assert "learning_rate=0.0001" in out.read_text()
    assert main([str(a), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1])["across"]["candidates"] == 4
    assert main([str(a)]) == 2
    assert "at least two runs" in capsys.readouterr().err
