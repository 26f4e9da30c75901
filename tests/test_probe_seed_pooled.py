"""``research/probes/seed_pooled.py``: a randomized scheduler's ratio pooled over decider seeds,
from the ``windows.csv`` of compare runs (hand-made files, and two real runs)."""

from __future__ import annotations

import csv
import importlib
from pathlib import Path

import numpy as np
import pytest

from research.probes import seed_pooled as B

COLS = ["trace", "method", "kind", "window", "start", "length", "avg_bsld"]


def _write(path: Path, rows: list[tuple[str, int, float]], trace: str = "T") -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLS)
        for i, (method, start, value) in enumerate(rows):
            w.writerow([trace, method, "scheduler", i, start, 100, value])
    return path


def test_split_seed() -> None:
    assert B.split_seed("LOOKAHEAD1-ONLINE,k=4,seed=3") == ("LOOKAHEAD1-ONLINE,k=4", 3)
    assert B.split_seed("LOOKAHEAD1-ONLINE,seed=12,k=4") == ("LOOKAHEAD1-ONLINE,k=4", 12)
    assert B.split_seed("LOOKAHEAD1-ONLINE,k=4") == ("LOOKAHEAD1-ONLINE,k=4", 0)
    assert B.split_seed("LOOKAHEAD1-ONLINE,myseed=3") == ("LOOKAHEAD1-ONLINE,myseed=3", 0)


def test_pooled_ratio_is_the_mean_log_ratio_over_seeds(tmp_path: Path) -> None:
    starts = [0, 100, 200, 300]
    ref = [10.0, 20.0, 40.0, 5.0]
    s0 = [5.0, 20.0, 40.0, 5.0]  # x 0.5 on one window
    s1 = [20.0, 10.0, 40.0, 5.0]
    a = _write(
        tmp_path / "a.csv",
        [("REF", s, v) for s, v in zip(starts, ref, strict=True)]
        + [("L,k=2", s, v) for s, v in zip(starts, s0, strict=True)],
    )
    b = _write(
        tmp_path / "b.csv",
        [("REF", s, v) for s, v in zip(starts, ref, strict=True)]
        + [("L,k=2,seed=1", s, v) for s, v in zip(starts, s1, strict=True)]
        + [("OTHER", s, 1.0) for s in starts[:2]],
    )
    rows = {r["method"]: r for r in B.pooled_rows(B.read_windows([a, b]), "REF")}
    row = rows["L,k=2"]
    assert row["seeds"] == [0, 1]
    assert row["per_seed"][0]["geo_ratio"] == pytest.approx(0.5**0.25)
    assert row["per_seed"][1]["geo_ratio"] == pytest.approx((2.0 * 0.5) ** 0.25)
    logs = (np.log(np.array(s0) / ref) + np.log(np.array(s1) / ref)) / 2.0
    assert row["pooled"]["geo_ratio"] == pytest.approx(np.exp(logs.mean()))
    lo, hi = row["pooled"]["ci_low"], row["pooled"]["ci_high"]
    assert lo <= row["pooled"]["geo_ratio"] <= hi
    assert row["seed_spread"] == pytest.approx(np.mean([2 * np.log(2.0), np.log(2.0), 0, 0]))
    assert rows["OTHER"]["pooled"]["windows"] == 2 and rows["OTHER"]["seed_spread"] is None


def test_inconsistent_inputs_are_refused(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.csv", [("REF", 0, 2.0), ("L", 0, 1.0)])
    b = _write(tmp_path / "b.csv", [("REF", 0, 3.0)])
    with pytest.raises(ValueError, match="not the same run"):
        B.read_windows([a, b])
    c = _write(tmp_path / "c.csv", [("REF", 0, 2.0)], trace="U")
    with pytest.raises(ValueError, match="mix traces"):
        B.read_windows([a, c])
    with pytest.raises(ValueError, match="no reference 'NOPE'"):
        B.pooled_rows(B.read_windows([a]), "NOPE")
    d = _write(tmp_path / "d.csv", [("REF", 0, 2.0), ("L,seed=0", 0, 1.0), ("L", 0, 1.5)])
    with pytest.raises(ValueError, match="one seed"):
        B.pooled_rows(B.read_windows([d]), "REF")
    with pytest.raises(SystemExit):
        B.main([str(a), "--reference", "NOPE"])


def test_two_compare_runs_end_to_end(tmp_path: Path, capsys) -> None:
    compare = importlib.import_module("eval.compare").main
    spec = "LOOKAHEAD1-ONLINE,samples=2,k=4,horizon=2h"
    common = ["--windows", "2", "--length", "120", "--no-progress", "--no-plots", "--jobs", "1"]
    common += ["--reference", "EASY-SJBF", "--seed", "3"]
    for name, seed in (("a", ""), ("b", ",seed=5")):
        out = tmp_path / name
        assert compare([*common, "--schedulers", "EASY-SJBF", spec + seed, "--out", str(out)]) in (
            0,
            None,
        )
    capsys.readouterr()
    B.main(
        [str(tmp_path / "a" / "windows.csv"), str(tmp_path / "b" / "windows.csv")]
        + [
            "--reference",
            "EASY-SJBF",
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| method (x EASY-SJBF) |")
    row = [ln for ln in out if ln.startswith(f"| {spec} |")]
    assert len(row) == 1 and "| 0, 5 |" in row[0]
