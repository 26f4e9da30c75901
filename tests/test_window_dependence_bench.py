"""``bench/window_dependence.py``: the correlation of per-window values by start distance."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import window_dependence as B  # noqa: E402


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
