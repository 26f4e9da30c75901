"""``bench/prediction_error.py``: the log-error statistics, the diagnostic's own
predictions on the same scale, and the script end to end on the synthetic workload."""

from __future__ import annotations

import numpy as np
import prediction_error as B
import pytest

from hpcgym.workload import load


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
    )
    out = capsys.readouterr().out
    assert "2 train windows of 150 jobs" in out and "300 jobs" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ")]
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["request", "ave2", "noisy-0.5"]
    with pytest.raises(SystemExit):
        B.main(["--predictors", "nope"])
    with pytest.raises(SystemExit):
        B.main(["--noise", "0"])
