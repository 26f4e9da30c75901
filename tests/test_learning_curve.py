"""The aggregation over seeds of ``bench/learning_curve.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.learning_curve import aggregate_seeds, at_minutes, write_seed_outputs  # noqa: E402


def _row(config: str, minutes: float, steps: int, ratio: float) -> dict[str, object]:
    return {
        "config": config,
        "minutes": minutes,
        "steps": steps,
        "avg_bsld": 10.0 * ratio,
        "reference_avg_bsld": 10.0,
        "geo_ratio": ratio,
    }


def test_the_curve_holds_the_latest_checkpoint_saved_by_each_minute() -> None:
    rows = [_row("a", 0.0, 0, 1.3), _row("a", 1.4, 10, 1.1), _row("a", 2.0, 20, 0.9)]
    assert at_minutes(rows, [0.0, 1.0, 1.4, 1.9, 2.0, 5.0]) == [1.3, 1.3, 1.1, 1.1, 0.9, 0.9]
    # out of order rows give the same curve
    assert at_minutes(rows[::-1], [0.5, 1.5, 3.0]) == [1.3, 1.1, 0.9]


def test_mean_range_and_finals_over_seeds(tmp_path: Path) -> None:
    per_seed = {
        0: [_row("a", 0.0, 0, 1.2), _row("a", 1.0, 5, 1.0), _row("b", 0.0, 0, 1.2)],
        1: [_row("a", 0.0, 0, 1.4), _row("a", 1.5, 7, 0.8), _row("b", 0.0, 0, 1.4)],
    }
    per_seed[1].append(_row("b", 2.1, 9, 1.1))  # the last checkpoint after the budget
    grid, agg = aggregate_seeds(per_seed, 2.5)
    assert grid == [0.0, 1.0, 2.0]
    assert agg["a"]["mean"] == pytest.approx([1.3, 1.2, 0.9])
    assert agg["a"]["low"] == pytest.approx([1.2, 1.0, 0.8])
    assert agg["a"]["high"] == pytest.approx([1.4, 1.4, 1.0])
    assert agg["a"]["finals"] == [1.0, 0.8]
    assert agg["a"]["steps"] == [5, 7]
    assert agg["b"]["mean"] == pytest.approx([1.3, 1.3, 1.15])
    text = write_seed_outputs(per_seed, 2.5, tmp_path, "T")
    # every other minute and the last: here minute 2 only
    assert "| a | 0.900 [0.80, 1.00] | 1.000 / 0.800 | 6 |" in text
    assert "| b | 1.150 [1.10, 1.20] | 1.200 / 1.100 | 4 |" in text
    assert (tmp_path / "seeds.png").stat().st_size > 0
