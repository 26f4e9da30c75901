"""``research/probes/ranking_predictor.py``: the ridge fit, the ordering under ELOSS's reservations,
and the whole probe on the embedded synthetic workload."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.predictors.eloss import FEATURES
from hpcgym.predictors.ridge import FLAGS, LINEAR, design
from hpcgym.workload import load
from research.probes import ordering_headroom as O
from research.probes import ranking_predictor as B


def test_design_and_fit_recover_a_known_model() -> None:
    rng = np.random.default_rng(0)
    x = np.expm1(rng.uniform(0.0, 10.0, size=(500, len(FEATURES))))  # log1p: uniform
    for f in LINEAR:  # bounded columns (clock, a ratio)
        x[:, FEATURES.index(f)] = rng.uniform(-1.0, 1.0, 500)
    for f in FLAGS:  # some jobs without history
        x[rng.random(500) < 0.3, FEATURES.index(f)] = 0.0
    d = design(x)
    assert d.shape == (500, 1 + len(FEATURES) + len(FLAGS) + 8)
    assert np.all(d[:, 0] == 1.0)
    w_true = rng.normal(0.0, 0.1, d.shape[1])
    w_true[0] += 0.1 - min(0.0, float((d @ w_true).min()))  # runtimes > 1 s (not clipped)
    runtime = np.exp(d @ w_true)
    w = B.fit_log_runtime(d, runtime, lam=1e-9)
    assert np.allclose(w, w_true, atol=1e-4)
    # the ridge term shrinks the weights
    assert np.linalg.norm(B.fit_log_runtime(d, runtime, lam=1e6)) < np.linalg.norm(w)


def test_ordering_by_the_actual_runtime_matches_the_ordering_probe() -> None:
    wl = load(None)
    key = wl.runtime.astype(np.float64)
    for start in (0, 2000):
        ours = B.ordered_by(wl, start, 300, key)
        theirs = O.ordered_backfill(wl.window(start, 300), "actual", O.by_runtime, "ELOSS")
        assert ours == pytest.approx(theirs)


def test_rank_corr() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0])
    assert B.rank_corr(a, a * 10) == pytest.approx(1.0)
    assert B.rank_corr(a, -a) == pytest.approx(-1.0)


def test_probe_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert B.main(["--trace", "synthetic", "--windows", "3", "--length", "128"]) == 0
    out = capsys.readouterr().out
    assert "| ridge log-runtime |" in out and "| actual |" in out
