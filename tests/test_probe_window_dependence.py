"""``research/probes/window_dependence.py``: the correlation of per-window values by start
distance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from research.probes import window_dependence as B


def test_lag_correlations_of_a_moving_average() -> None:
    # values that are means of 8 consecutive independent draws, one window per step:
    # windows k steps apart share (8 - k) of 8 draws, so their correlation is 1 - k / 8
    rng = np.random.default_rng(0)
    noise = rng.normal(size=200_008)
    values = np.convolve(noise, np.ones(8) / 8, mode="valid")[:200_000]
    starts = np.arange(len(values)) * 16
    lags = B.lag_correlations(starts, values, length=128, max_distance=160)
    assert [g.distance for g in lags] == list(range(16, 161, 16))
    assert [g.pairs for g in lags] == [200_000 - k for k in range(1, 11)]
    for k, g in enumerate(lags, start=1):
        assert g.shared == pytest.approx(max(0.0, 1 - k / 8))
        assert g.correlation == pytest.approx(max(0.0, 1 - k / 8), abs=0.01)


def test_lag_correlations_edges() -> None:
    lags = B.lag_correlations(np.array([0, 5, 10, 15]), np.ones(4), 10, 100)
    assert [g.distance for g in lags] == [5, 10, 15]
    assert all(math.isnan(g.correlation) for g in lags)  # constant values: undefined
    assert lags[-1].pairs == 1
    with pytest.raises(ValueError, match="evenly spaced"):
        B.lag_correlations(np.array([0, 5, 11]), np.zeros(3), 10, 100)
    with pytest.raises(ValueError, match="evenly spaced"):
        B.lag_correlations(np.array([10, 5, 0]), np.zeros(3), 10, 100)
    with pytest.raises(ValueError, match="one value per start"):
        B.lag_correlations(np.array([0, 5]), np.zeros(3), 10, 100)


def test_correlation_at_and_the_test_design() -> None:
    lags = [
        B.Lag(100, 0.9, 50, 0.5),
        B.Lag(200, 0.8, 49, -0.2),
        B.Lag(300, 0.7, 48, float("nan")),
    ]
    assert B.correlation_at(lags, 0) == 1.0
    assert B.correlation_at(lags, 50) == pytest.approx(0.75)  # halfway from 1 to 0.5
    assert B.correlation_at(lags, -100) == pytest.approx(0.5)
    assert B.correlation_at(lags, 200) == 0.0  # a negative estimate counts as 0
    assert B.correlation_at(lags, 300) == 1.0  # an undefined one as 1
    assert B.correlation_at(lags, 301) == 0.0  # beyond the table
    # pairs (0, 0): 1, (0, 100) twice: 0.5, ... of starts [0, 0, 100]
    assert B.mean_pair_correlation([0, 0, 100], lags) == pytest.approx((1 + 0.5 + 0.5) / 3)
    with pytest.raises(ValueError, match="two windows"):
        B.mean_pair_correlation([5], lags)

    n_eff, k = B.widening(30, 0.0)
    assert n_eff == 30 and k == pytest.approx(math.sqrt(30 / 29))
    n_eff, k = B.widening(30, 0.1)
    assert n_eff == pytest.approx(30 / 3.9)
    assert k == pytest.approx(math.sqrt(30 * 3.9 / (29 * 0.9)))
    with pytest.raises(ValueError):
        B.widening(30, 1.0)
    lo, hi = B.widen(0.8, 0.7, 0.9, 2.0)
    assert lo == pytest.approx(0.8 * (0.7 / 0.8) ** 2)
    assert hi == pytest.approx(0.8 * (0.9 / 0.8) ** 2)

    card = {
        "test": {
            "T": {
                "starts": [0, 0, 100],
                "length": 1024,
                "paired": {"R": {"geo_ratio": 0.8, "ci_low": 0.7, "ci_high": 0.9}},
            }
        }
    }
    text = B.heldout_design(card, "T", "R", lags)
    assert text is not None
    assert "3 windows of 1024 jobs holding 1,124 different jobs" in text
    assert "mean pair correlation 0.667" in text
    _, k = B.widening(3, 2 / 3)
    lo, hi = B.widen(0.8, 0.7, 0.9, k)
    assert f"-> widened [{lo:.3f}, {hi:.3f}]" in text
    assert B.heldout_design(card, "U", "R", lags) is None
    # a table measured on windows of another length does not widen the test's interval
    other = B.heldout_design(card, "T", "R", lags, length=512)
    assert other is not None and "--length 1024" in other and "widened" not in other
    assert "widened" in (B.heldout_design(card, "T", "R", lags, length=1024) or "")


def test_selection_design() -> None:
    lags = [B.Lag(100, 0.9, 50, 0.5)]
    cands = [
        {"model": "a.zip", "geo_ratio": 0.9, "ci_low": 0.8, "ci_high": 1.0},
        {"model": "b.zip", "geo_ratio": 0.8, "ci_low": 0.7, "ci_high": 0.9},
    ]
    sel = {
        "trace": "T",
        "split": "validation",
        "starts": [0, 50, 400],
        "length": 256,
        "reference": "R",
        "chosen": "b.zip",
        "candidates": cands,
    }
    text = B.selection_design({"selection": sel}, "T", "R", lags)
    assert text is not None and "validation windows on T: 3 windows of 256 jobs" in text
    assert "holding 562 different jobs" in text  # [0, 306) and [400, 656)
    rho = (0.75 + 0.0 + 0.0) / 3  # (0, 50): halfway to 0.5; the others beyond the table
    assert f"mean pair correlation {rho:.3f}" in text
    _, k = B.widening(3, rho)
    lo, hi = B.widen(0.8, 0.7, 0.9, k)
    assert f"vs R: 0.800 [0.700, 0.900] -> widened [{lo:.3f}, {hi:.3f}]" in text
    # another reference: the windows, not an interval measured against something else
    other = B.selection_design({"selection": sel}, "T", "Q", lags)
    assert other is not None and "widened" not in other
    assert B.selection_design({"selection": {**sel, "generated": True}}, "T", "R", lags) is None
    assert B.selection_design({"selection": sel}, "U", "R", lags) is None
    assert B.selection_design({}, "T", "R", lags) is None
    # a table measured on windows of another length does not widen the choice's interval
    text = B.selection_design({"selection": sel}, "T", "R", lags, length=1024)
    assert text is not None and "--length 256" in text and "widened" not in text
    assert "widened" in (B.selection_design({"selection": sel}, "T", "R", lags, 256) or "")


def test_main_on_the_synthetic_workload(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--trace",
        "synthetic:n_jobs=10000",
        "--method",
        "SJF+EASY-SJBF",
        "--reference",
        "EASY-SJBF",
    ]
    argv += ["--length", "64", "--step", "16", "--max-windows", "20", "--max-distance", "48"]
    B.main(argv)
    out = capsys.readouterr().out
    assert "20 windows of 64 jobs starting every 16 jobs in [6632, 7000)" in out
    assert "before the test split at job 7000" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "|---" not in line]
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| 16", "| 32", "| 48"]
    with pytest.raises(SystemExit):
        B.main(["--trace", "synthetic:n_jobs=10000", "--method", "EASY", "--step", "0"])
