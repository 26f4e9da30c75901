"""The online log-ridge runtime predictor (hpcgym.predictors.ridge)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcgym.predictors import LogRidgeEstimator, make_estimator
from hpcgym.predictors.eloss import FEATURES
from hpcgym.predictors.ridge import N_INPUTS, design
from hpcgym.sim.engine import Simulation
from hpcgym.workload.core import Workload


def _wl(runtime, request, user, submit=None, procs=None) -> Workload:
    n = len(runtime)
    return Workload(
        name="hand",
        machine_size=64,
        job_id=np.arange(1, n + 1),
        submit=np.arange(n) * 5000.0 if submit is None else np.asarray(submit, dtype=float),
        runtime=np.asarray(runtime, dtype=float),
        procs=np.ones(n, dtype=np.int64) if procs is None else np.asarray(procs),
        request=np.asarray(request, dtype=float),
        user=np.asarray(user, dtype=np.int64),
        group=np.ones(n, dtype=np.int64),
        executable=-np.ones(n, dtype=np.int64),
        queue=-np.ones(n, dtype=np.int64),
        meta={},
    )


def _replay(est: LogRidgeEstimator, w: Workload) -> np.ndarray:
    """The estimates the engine gives every job in a real simulation (no queueing here:
    jobs are far apart and small)."""
    sim = Simulation(w, backfill="easy", estimate=est)
    sim.run()
    return np.asarray(sim.estimates, dtype=np.float64)


def test_design_columns_by_hand() -> None:
    x = np.zeros(len(FEATURES))
    x[FEATURES.index("request")] = math.e - 1.0  # log1p -> 1
    x[FEATURES.index("last1")] = 3.0
    x[FEATURES.index("day_cos")] = -0.5  # used as it is
    d = design(x)
    assert d.shape == (N_INPUTS,) == (32,)
    assert d[0] == 1.0
    assert d[1 + FEATURES.index("request")] == pytest.approx(1.0)
    assert d[1 + FEATURES.index("last1")] == pytest.approx(math.log(4.0))
    assert d[1 + FEATURES.index("day_cos")] == -0.5
    flags = d[1 + len(FEATURES) : 1 + len(FEATURES) + 3]
    assert list(flags) == [1.0, 0.0, 0.0]  # last1 > 0; no ave2, no ave_all
    squares = d[-8:]
    assert squares[0] == pytest.approx(1.0) and squares[1] == pytest.approx(math.log(4.0) ** 2)
    assert design(np.stack([x, x])).shape == (2, N_INPUTS)
    with pytest.raises(ValueError, match="20 E-Loss features"):
        design(np.zeros(5))


def test_no_history_predicts_the_request_then_learns_the_accuracy() -> None:
    # one user whose jobs always run a tenth of their request
    rng = np.random.default_rng(3)
    n = 300
    req = rng.choice([600.0, 3600.0, 14400.0], size=n)
    w = _wl(req / 10.0, req, np.ones(n))
    est = make_estimator("log-ridge")
    assert isinstance(est, LogRidgeEstimator)
    p = _replay(est, w)
    assert p[0] == req[0]  # nothing learned yet: the request
    assert np.all(p <= req) and np.all(p >= 1.0)
    late = p[-100:] / req[-100:]
    assert np.all(np.abs(np.log(late / 0.1)) < 0.15), late.min()
    # every job but the last was learned from (the engine tells an online estimator
    # about completions before the next submission; none follows the last one)
    assert est.trained == n - 1


def test_ranks_two_users_apart() -> None:
    # same requests, user 1 runs 5 % of it, user 2 the full request: once both have
    # history, the predictor orders a user-1 job before a user-2 job
    n = 200
    user = np.tile([1, 2], n // 2)
    req = np.full(n, 7200.0)
    rt = np.where(user == 1, 360.0, 7200.0)
    p = _replay(make_estimator("log-ridge"), _wl(rt, req, user))
    assert np.all(p[-40:][user[-40:] == 1] < 0.2 * 7200)
    assert np.all(p[-40:][user[-40:] == 2] > 0.8 * 7200)


def test_more_ridge_stays_nearer_the_request() -> None:
    n = 60
    req = np.full(n, 3600.0)
    w = _wl(req / 20.0, req, np.ones(n))
    weak = _replay(make_estimator("log-ridge:lam=0.1"), w)
    strong = _replay(make_estimator("log-ridge:lam=1000"), w)
    assert weak[0] == strong[0] == 3600.0
    assert np.all(strong[1:] >= weak[1:]) and strong[1] > 1.5 * weak[1]
    assert abs(strong[-1] - 180.0) < 5.0  # both reach the truth with enough data


def test_errors() -> None:
    with pytest.raises(ValueError, match="lam must be a positive"):
        LogRidgeEstimator(lam=0.0)
    with pytest.raises(ValueError, match="valid choices"):
        LogRidgeEstimator(missing="mean")
    est = LogRidgeEstimator()
    est.bind(_wl([10.0], [20.0], [1]), np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="never predicted"):
        est.observe_finished(np.array([0]), np.array([10.0]))


def test_templates_learn_per_request_accuracies() -> None:
    # one user; each request value has its own accuracy, not monotone in the request:
    # the user's last job with the same request (a template) tells it, the request's
    # log and its square do not
    rng = np.random.default_rng(5)
    acc = {600.0: 0.9, 1200.0: 0.05, 1800.0: 0.7, 2400.0: 0.1, 3000.0: 0.5}
    n = 400
    req = rng.choice(list(acc), size=n)
    w = _wl(req * np.array([acc[r] for r in req]), req, np.ones(n))
    truth = np.log(w.runtime / req)[-150:]

    def err(spec: str) -> float:
        p = _replay(make_estimator(spec), w)
        return float(np.mean(np.abs(np.log(p[-150:] / req[-150:]) - truth)))

    base, tpl = err("log-ridge"), err("log-ridge:templates=true")
    assert tpl < 0.05 and tpl < base / 3, (base, tpl)
    est = make_estimator("log-ridge:lam=10,templates=true")
    assert isinstance(est, LogRidgeEstimator) and est.templates and est.n_inputs == 36


def test_templates_of_unknown_users_are_empty() -> None:
    n = 50
    req = np.full(n, 1000.0)
    w = _wl(req / 4, req, -np.ones(n))
    est = make_estimator("log-ridge:templates=true")
    p = _replay(est, w)
    assert est._same_req == {} and np.all(p <= req)
