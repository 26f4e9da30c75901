"""``research/probes/criterion_power.py``: how large a gain the test criterion detects."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from research.probes import criterion_power as B


def _curve(logs: np.ndarray, step: int, range_jobs: int, family=(1,), draws=1500):
    grid = np.arange(len(logs)) * step
    return B.simulate_tests(
        logs,
        grid,
        range_jobs=range_jobs,
        length=step,
        windows=30,
        draws=draws,
        resamples=4000,
        family=family,
        rng=np.random.default_rng(3),
    )


def test_independent_windows_give_the_textbook_power() -> None:
    # disjoint windows with independent log ratios, the test range the whole grid:
    # the criterion is a one-sided test at 2.5 % with standard error sd / sqrt(30)
    sd = 0.2
    logs = np.random.default_rng(0).normal(0.0, sd, size=2000)
    curve = _curve(logs, step=100, range_jobs=2000 * 100)
    se = sd / math.sqrt(30)
    assert curve.sd == pytest.approx(sd, rel=0.05)
    assert curve.test_means.std() == pytest.approx(se, rel=0.1)
    # no gain: about 2.5 % false claims (the percentile bootstrap of 30 runs a little narrow)
    assert 0.01 <= curve.power(1.0) <= 0.06
    # a gain of 1.96 + 0.84 standard errors is met four times in five
    assert curve.power(math.exp(-(1.96 + 0.84) * se)) == pytest.approx(0.8, abs=0.06)
    assert curve.detectable(0.8) == pytest.approx(math.exp(-(1.96 + 0.84) * se), abs=0.01)
    # monotone: a larger gain is met more often
    powers = [curve.power(d) for d in (0.8, 0.9, 0.95, 1.0, 1.05)]
    assert powers == sorted(powers, reverse=True) and powers[0] > 0.99


def test_holm_needs_a_larger_gain() -> None:
    logs = np.random.default_rng(1).normal(0.0, 0.2, size=1000)
    curve = _curve(logs, step=100, range_jobs=1000 * 100, family=(1, 10))
    assert curve.power(0.9, 10) < curve.power(0.9, 1)
    assert curve.detectable(0.8, 10) < curve.detectable(0.8, 1)
    assert curve.power(1.0, 10) < 0.01
    with pytest.raises(KeyError):
        curve.power(0.9, 5)  # not simulated


def test_a_ceiling_on_the_ratio_itself() -> None:
    # target 1 also asks the test's ratio to be at most 0.85: a true ratio of 0.85 with
    # an interval that is always below 1 meets that about half the time
    logs = np.random.default_rng(5).normal(0.0, 0.2, size=2000)
    curve = _curve(logs, step=100, range_jobs=2000 * 100)
    assert curve.power(0.85) > 0.95
    assert curve.power(0.85, at_most=0.85) == pytest.approx(0.5, abs=0.05)
    assert curve.power(0.7, at_most=0.85) > 0.99
    assert curve.detectable(0.5, at_most=0.85) == pytest.approx(0.85, abs=0.01)
    assert curve.detectable(0.8, at_most=0.85) < min(0.85, curve.detectable(0.8))
    with pytest.raises(ValueError, match="at_most"):
        curve.power(0.9, at_most=0.0)


def test_periods_that_differ_make_false_claims_more_often() -> None:
    # the same window noise, plus a shift per period of 50 windows; a test range holds
    # 100 windows' jobs, so each simulated test sees two or three periods only
    rng = np.random.default_rng(2)
    periods = np.repeat(rng.normal(0.0, 0.15, size=40), 50)
    noise = rng.normal(0.0, 0.1, size=2000)
    flat = _curve(noise, step=100, range_jobs=100 * 100)
    shifted = _curve(noise + periods, step=100, range_jobs=100 * 100)
    assert flat.power(1.0) < 0.06
    assert shifted.power(1.0) > 0.15  # the interval does not see the period's luck
    assert shifted.test_means.std() > 2 * (shifted.sd / math.sqrt(30))


def test_same_seed_same_curve_and_bad_input() -> None:
    logs = np.random.default_rng(4).normal(0.0, 0.1, size=50)
    a, b = _curve(logs, 10, 300, draws=50), _curve(logs, 10, 300, draws=50)
    assert np.array_equal(a.upper[1], b.upper[1])
    grid = np.arange(50) * 10
    kw = dict(length=10, windows=30, draws=5, resamples=4000, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="one log ratio per grid start"):
        B.simulate_tests(logs[:-1], grid, range_jobs=300, **kw)
    with pytest.raises(ValueError, match="increase"):
        B.simulate_tests(logs, grid[::-1], range_jobs=300, **kw)
    with pytest.raises(ValueError, match="needs 10 <= range <= 500"):
        B.simulate_tests(logs, grid, range_jobs=501, **kw)
    with pytest.raises(ValueError, match="family"):
        B.simulate_tests(logs, grid, range_jobs=300, family=(0,), **kw)
    with pytest.raises(ValueError, match="delta"):
        a.power(0.0)
    with pytest.raises(ValueError, match="power"):
        a.detectable(1.0)


def test_normal_detectable() -> None:
    # 1.96 + 0.84 standard errors of the mean
    assert B.normal_detectable(0.2, 30, 0.8) == pytest.approx(
        math.exp(-(1.959964 + 0.841621) * 0.2 / math.sqrt(30)), rel=1e-6
    )
    assert B.normal_detectable(0.2, 30, 0.8, k=5) < B.normal_detectable(0.2, 30, 0.8)
    assert B.normal_detectable(0.0, 30, 0.8) == 1.0
    # a ceiling on the ratio itself: the interval no longer binds
    se = 0.2 / math.sqrt(30)
    assert B.normal_detectable(0.2, 30, 0.8, at_most=0.85) == pytest.approx(
        0.85 * math.exp(-0.841621 * se), rel=1e-5
    )
    with pytest.raises(ValueError, match="windows >= 2"):
        B.normal_detectable(0.2, 1, 0.8)


def test_stored_scatter_reads_the_cards_test(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    name = "hpc2n-fcfs-guarded-cmaes"
    ns = argparse.Namespace(trace="HPC2N", reference="EASY-SJBF", stored_test=[name], at_most=None)
    B._stored_scatter(ns, [name, "ELOSS", "not-in-the-card"], (1, 7))
    out = capsys.readouterr().out
    rows = [r for r in out.splitlines() if r.startswith(f"| {name} |") or r.startswith("| ELOSS")]
    assert len(rows) == 4 and "window seed 2611, 30 windows" in out
    assert "not-in-the-card" not in out
    ns.trace = "SDSC-SP2"  # the card has no SDSC-SP2 test
    B._stored_scatter(ns, [name], (1,))
    assert "no card of --stored-test holds a test on SDSC-SP2" in capsys.readouterr().out


def test_main_on_the_synthetic_workload(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = [
        "--trace",
        "synthetic:n_jobs=10000",
        "--method",
        "SJF+EASY-SJBF",
        "--reference",
        "EASY-SJBF",
    ]
    argv += ["--length", "64", "--step", "512", "--family", "4", "--draws", "40"]
    argv += ["--resamples", "4000", "--out", str(tmp_path / "p.json")]
    B.main(argv)
    out = capsys.readouterr().out
    rec = json.loads((tmp_path / "p.json").read_text())
    assert rec["range_jobs"] == 3000 and len(rec["grid"]) == 14
    m = rec["methods"]["SJF+EASY-SJBF"]
    assert len(m["log_ratios"]) == 14 and sorted(m["power"]) == ["1", "4"]
    assert "14 windows of 64 jobs every 512 jobs in [0, 7000)" in out
    assert "40 simulated tests of 30 windows on 3,000-job sub-ranges" in out
    rows = [r for r in out.splitlines() if r.startswith("| SJF+EASY-SJBF |")]
    assert [r.split(" | ")[3] for r in rows] == ["1", "4"]
    with pytest.raises(SystemExit):
        B.main(["--trace", "synthetic:n_jobs=10000", "--method", "EASY", "--step", "0"])
    with pytest.raises(SystemExit, match="2"):  # windows longer than the test range
        B.main(["--trace", "synthetic:n_jobs=10000", "--method", "EASY", "--length", "4000"])
    with pytest.raises(SystemExit):  # fewer than two windows before the test split
        B.main(["--trace", "synthetic:n_jobs=10000", "--method", "EASY", "--step", "7000"])
    with pytest.raises(SystemExit):  # an unknown method: the valid names
        B.main(["--trace", "synthetic:n_jobs=10000", "--method", "EASY,NOPE", "--length", "64"])
    err = capsys.readouterr().err
    assert "--method NOPE: unknown scheduler 'NOPE' (did you mean 'NONE'?); valid names: " in err
    assert "longer than synthetic:n_jobs=10000's test range (3000)" in err
    assert "do not cover a range as long as the test's (3000 jobs)" in err
