"""The ``prediction`` column's source of the backfilling env (``feature_predictor``).

:func:`episode_predictions` prepares, for one episode, the per-job array the observation
builder reads: a static predictor's estimates at once, or -- for an online one -- an
array filled at each submission by an arrival observer of the engine.
"""

from __future__ import annotations

import numpy as np

from hpcgym.sim.engine import EstimatorFeed, Simulation, cap_estimates
from hpcgym.sim.estimators import Estimator
from hpcgym.workload.core import Workload

__all__ = ["episode_predictions"]


class _PredictAtSubmission:
    """Arrival observer of the engine: the feature predictor predicts each job when it is
    submitted (told before about every completion and start until then), writing into
    the env's prediction column source ``out``."""

    def __init__(self, feed: EstimatorFeed, out: np.ndarray) -> None:
        self.feed = feed
        self.out = out

    def __call__(self, sim: Simulation, lo: int, hi: int) -> None:
        self.feed.predict(sim, lo, hi, self.out)


def episode_predictions(
    fp: str | Estimator | None, window: Workload, seed: int, sim: Simulation
) -> tuple[np.ndarray, EstimatorFeed | None]:
    """The predictions of one episode (empty without a feature predictor).

    :param fp: ``None``, ``"request"``, ``"actual"`` or an :class:`Estimator`
    :param window: the episode's jobs
    :param seed: seed of the predictor's generator
    :param sim: the episode's simulation, before its first ``advance`` (an online
        predictor is registered as its arrival observer)
    :return: the per-job predictions (``nan`` until an online predictor predicts a job)
        and the online predictor's feed (``None`` otherwise)
    """
    if fp is None:
        return np.zeros(0, dtype=np.float64), None
    req = window.request
    if fp == "request":
        return np.array(req, dtype=np.float64), None
    if fp == "actual":
        return np.minimum(window.runtime, req).astype(np.float64), None
    assert isinstance(fp, Estimator)
    fp.bind(window, np.random.default_rng(seed))
    if fp.online:
        pred = np.full(len(window), np.nan)
        feed = EstimatorFeed(fp)
        sim.observe_arrivals(_PredictAtSubmission(feed, pred))
        return pred, feed
    static = fp.static_estimates()
    if static is None:
        raise ValueError(f"feature predictor {fp.name!r} gave no static estimates")
    return cap_estimates(np.asarray(static, dtype=np.float64), req), None
