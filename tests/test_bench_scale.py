"""``bench/scale.py`` prints one row per point of its axes."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.scale import main  # noqa: E402

NUMBER = r"[0-9][0-9,]*(\.[0-9]+)?"


def test_a_row_per_point_with_env_and_training_rates(
    require_trace: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    require_trace("Lublin-1")
    assert (
        main(["--axes", "envs", "--envs", "1", "4", "--steps", "300", "--train-steps", "600"]) == 0
    )
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("| envs |")]
    assert len(lines) == 2
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in lines]
    assert [row[:3] for row in cells] == [["envs", "N = 1", "256"], ["envs", "N = 4", "256"]]
    for row in cells:
        assert re.fullmatch(NUMBER, row[3]) and float(row[3].replace(",", "")) > 0
        env_rate, env_us = float(row[3].replace(",", "")), float(row[4])
        assert env_us == pytest.approx(1e6 / env_rate, rel=0.01)
        train_rate, train_us = float(row[5].replace(",", "")), float(row[6])
        assert train_rate > 0 and train_us == pytest.approx(1e6 / train_rate, rel=0.01)
