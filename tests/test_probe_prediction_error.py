"""``research/probes/prediction_error.py``: the log-error statistics, the diagnostic's own
predictions on the same scale, and the script end to end on the synthetic workload."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.workload import load
from research.probes import prediction_error as B


def test_error_stats_on_known_predictions() -> None:
    rt = np.array([10.0, 100.0, 1000.0, 30.0])
    pred = np.array([20.0, 100.0, 250.0, 90.0])  # x2, exact, /4, x3
    r = B.error_stats(pred, rt, short=60.0)
    e = np.log([2.0, 1.0, 0.25, 3.0])
    assert r.jobs == 4
    assert r.mean == pytest.approx(e.mean()) and r.sd == pytest.approx(e.std())
    assert r.median_abs == pytest.approx(np.median(np.abs(e)))
    assert r.within_2x == pytest.approx(0.5)  # x2 and exact; /4 and x3 are not
    # short jobs: 10 s and 30 s; predicted short: 20 s (right), 90 s is not flagged
    assert r.short_recall == pytest.approx(0.5) and r.short_precision == pytest.approx(1.0)
    # the one-second floor: a zero run time predicted at 1 s is exact
    assert B.error_stats(np.array([1.0]), np.array([0.0]), 60.0).sd == 0.0
    with pytest.raises(ValueError):
        B.error_stats(np.array([1.0, 2.0]), np.array([1.0]), 60.0)


def test_noisy_predictions_have_the_named_log_sd() -> None:
    rt = np.full(20000, 500.0)
    rng = np.random.default_rng(1)
    for s in (0.25, 1.0):
        r = B.error_stats(B.noisy_predictions(rt, s, rng), rt, 60.0)
        assert r.sd == pytest.approx(s, rel=0.03) and abs(r.mean) < 0.03


def test_user_share_of_the_error_variance() -> None:
    groups = np.array([0, 0, 1, 1, 2])  # group 2 has one job: left out
    assert B.user_share(np.array([1.0, 1.0, -1.0, -1.0, 9.0]), groups) == pytest.approx(1.0)
    assert B.user_share(np.array([1.0, -1.0, 1.0, -1.0, 9.0]), groups) == pytest.approx(0.0)
    assert np.isnan(B.user_share(np.array([1.0, 2.0]), np.array([0, 1])))
    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(400), 25)
    rt = np.full(len(g), 500.0)
    for r in (0.0, 0.5, 0.9):
        e = B.log_errors(B.noisy_predictions(rt, 1.0, rng, r, g), rt)
        assert B.user_share(e, g) == pytest.approx(r, abs=0.06)
        assert e.std() == pytest.approx(1.0, rel=0.08)
    with pytest.raises(ValueError, match="groups"):
        B.noisy_predictions(rt, 1.0, rng, 0.5)


def test_log_correlations_overall_and_within_a_user() -> None:
    rt = np.array([10.0, 100.0, 1000.0, 10.0, 100.0, 1000.0])
    g = np.array([0, 0, 0, 1, 1, 1])
    assert B.log_corr(rt * 3.0, rt) == pytest.approx(1.0)  # a bias tells as much
    assert B.log_corr(rt[::-1].copy(), rt) == pytest.approx(-1.0)
    # one prediction per user tells nothing within a user, however accurate overall
    per_user = np.array([100.0, 100.0, 100.0, 50.0, 50.0, 50.0])
    assert np.isnan(B.within_user_corr(per_user, rt, g))
    between = np.array([100.0, 100.0, 100.0, 1000.0, 1000.0, 1000.0])
    rt2 = np.array([90.0, 100.0, 110.0, 900.0, 1000.0, 1100.0])
    assert B.log_corr(between, rt2) > 0.99 and np.isnan(B.within_user_corr(between, rt2, g))
    assert B.within_user_corr(rt2 * 2.0, rt2, g) == pytest.approx(1.0)
    shuffled = np.array([110.0, 90.0, 100.0, 1100.0, 900.0, 1000.0])
    assert B.within_user_corr(shuffled, rt2, g) == pytest.approx(-0.5, abs=0.01)
    # the blur: both correlations follow sd(ln rt) / sqrt(sd(ln rt)^2 + s^2)
    rng = np.random.default_rng(4)
    big = np.exp(rng.normal(6.0, 2.0, 20000))
    groups = np.repeat(np.arange(1000), 20)
    pred = B.noisy_predictions(big, 1.0, rng)
    assert B.log_corr(pred, big) == pytest.approx(2.0 / np.sqrt(5.0), abs=0.02)
    assert B.within_user_corr(pred, big, groups) == pytest.approx(2.0 / np.sqrt(5.0), abs=0.02)
    r = B.error_stats(pred, big, 60.0, groups)
    assert r.corr == B.log_corr(pred, big) and r.user_corr == B.within_user_corr(pred, big, groups)


def test_window_predictions_are_online_and_the_request_predictor_is_the_request() -> None:
    w = load("synthetic", n_jobs=200, seed=3).window(0, 200)
    req = B.window_predictions(w, "request", "ELOSS")
    np.testing.assert_array_equal(req, np.asarray(w.request, dtype=float))
    ave2 = B.window_predictions(w, "ave2", "ELOSS")
    assert ave2.shape == (200,) and np.all(ave2 > 0) and not np.array_equal(ave2, req)
    with pytest.raises(ValueError, match="valid"):
        B.window_predictions(w, "request", "NOPE")


def test_main_end_to_end(capsys) -> None:
    B.main(
        ["--windows", "2", "--length", "150", "--predictors", "request", "ave2", "--noise", "0.5"]
        + ["--shared", "0", "0.7"]
    )
    out = capsys.readouterr().out
    assert "2 train windows of 150 jobs" in out and "300 jobs" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ")]
    names = [r.split("|")[1].strip() for r in rows[1:]]
    assert names == ["request", "ave2", "noisy-0.5", "noisy-0.5,shared=0.7"]
    assert "user share" in rows[0] and "within-user corr" in rows[0]
    assert all(len(r.split("|")) == len(rows[0].split("|")) for r in rows)
    with pytest.raises(SystemExit):
        B.main(["--shared", "1.5"])
    with pytest.raises(SystemExit):
        B.main(["--predictors", "nope"])
    with pytest.raises(SystemExit):
        B.main(["--noise", "0"])
