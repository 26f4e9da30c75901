"""``research/probes/portfolio_headroom.py``: choosing a member from the recent past only, the
clairvoyant choice, and the script end to end on the embedded synthetic workload."""

from __future__ import annotations

import json

import numpy as np
import pytest

from research.probes import portfolio_headroom as B


def test_past_choice_uses_only_windows_that_ended_before_the_gap() -> None:
    # member 0 is best in the first half, member 1 in the second
    logs = np.array([[-1.0] * 4 + [1.0] * 4, [1.0] * 4 + [-1.0] * 4])
    starts = np.arange(8) * 10
    one = B.past_choice(logs, starts, 10, history=1, gap=0)
    assert one.tolist() == [-1, 0, 0, 0, 0, 1, 1, 1]  # switches one window late
    gapped = B.past_choice(logs, starts, 10, history=1, gap=10)
    assert gapped.tolist() == [-1, -1, 0, 0, 0, 0, 1, 1]  # the window before is skipped
    two = B.past_choice(logs, starts, 10, history=2, gap=0)
    assert two.tolist() == [-1, -1, 0, 0, 0, 0, 1, 1]  # 0 on the 1:1 tie (first listed)


def test_past_choice_never_reads_an_overlapping_window() -> None:
    # windows of 10 jobs every 5: window i overlaps i-1, so its past starts at i-2
    logs = np.array([[0.0, 0.0, -5.0, 0.0], [0.0, -1.0, 0.0, 0.0]])
    starts = np.array([0, 5, 10, 15])
    c = B.past_choice(logs, starts, 10, history=1, gap=0)
    # window 2 (start 10) may read window 0 only, window 3 (start 15) window 1
    assert c.tolist() == [-1, -1, 0, 1]


def test_oracle_and_chosen() -> None:
    logs = np.array([[0.0, -1.0, 0.5], [-0.5, 0.0, 0.2]])
    c = B.oracle_choice(logs)
    assert c.tolist() == [1, 0, 1]
    assert B.chosen(logs, c).tolist() == [-0.5, -1.0, 0.2]
    with pytest.raises(ValueError, match="without a choice"):
        B.chosen(logs, np.array([0, -1, 0]))


def test_past_choice_refuses_bad_input() -> None:
    logs = np.zeros((2, 3))
    with pytest.raises(ValueError, match="history"):
        B.past_choice(logs, np.arange(3), 1, history=0, gap=0)
    with pytest.raises(ValueError, match="increasing"):
        B.past_choice(logs, np.array([0, 2, 1]), 1, history=1, gap=0)
    with pytest.raises(ValueError, match="one column per start"):
        B.past_choice(logs, np.arange(4), 1, history=1, gap=0)


def test_main_on_a_generated_workload(tmp_path, capsys) -> None:
    out = tmp_path / "portfolio.json"
    B.main(
        [
            "--trace", "synthetic:n_jobs=3000,seed=1", "--length", "128",
            "--member", "EASY,EASY-SJBF,ELOSS", "--reference", "EASY-SJBF",
            "--history", "1,2", "--resamples", "4000", "--out", str(out),
        ]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert "| past 2 |" in text and "| oracle |" in text
    data = json.loads(out.read_text())
    logs = np.asarray(data["log_ratios"])
    scored = np.asarray(data["scored"])
    assert np.all(logs[1] == 0.0)  # the reference is a member: ratio 1 on every window
    rows = {r["rule"]: r for r in data["rows"]}
    oracle = np.exp(logs[:, scored].min(axis=0).mean())
    assert rows["oracle"]["geo_ratio"] == pytest.approx(oracle)
    assert rows["oracle"]["geo_ratio"] <= min(rows[m]["geo_ratio"] for m in data["members"])
    past = np.asarray(data["choices"]["past 2"])[scored]
    expect = np.exp(logs[past, scored].mean())
    assert rows["past 2"]["geo_ratio"] == pytest.approx(expect)
    assert sum(rows["past 1"]["counts"]) == len(scored)
    with pytest.raises(SystemExit):
        B.main(["--trace", "synthetic:n_jobs=3000,seed=1", "--member", "EASY"])
