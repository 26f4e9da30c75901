"""Information-graded run-time knowledge: clairvoyant oracles at graded quality, and the
like-job rule a site can run.

These estimators measure how much a scheduler gains from knowing run times, and how good
that knowledge must be (``bench/ladder.py``, ``docs/research/ladder.md``):

==========================  ======  =====================================================
name                        kind    estimate
==========================  ======  =====================================================
``blurred``                 static  ``actual x exp(sigma z)``, ``z ~ N(0, 1)`` (CLAIRVOYANT,
                                    blurred; option ``sigma``)
``ends-within``             static  ``min(threshold, request)`` for the jobs a simulated
                                    classifier flags as ending within ``threshold``
                                    seconds, the request for the others (CLAIRVOYANT at
                                    ``precision`` = ``recall`` = 1; options ``threshold``,
                                    ``precision``, ``recall``)
``like-job``                online  the run time of the user's most recently *finished*
                                    job with the same request (and, with
                                    ``same_procs=true``, the same size); the request when
                                    there is none
==========================  ======  =====================================================

The clairvoyant ones read the job's own run time: they are reference points of what a
given quality of knowledge is worth, never schedulers a site could run. Their random
draws come from a :class:`numpy.random.Generator`: the engine's (bound at
:meth:`~hpcgym.sim.estimators.Estimator.bind`), or, with ``seed=``, one seeded with
``(seed, window offset)`` so that every window of a trace gets its own draws.

``like-job`` uses only jobs that finished before the submission (the engine reports them
through ``observe_finished``); with ``warm=log`` it also learns the accounting log before
the window (:mod:`hpcgym.sim.warmstart`).
"""

from __future__ import annotations

import numpy as np

from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.predictors.static import NoisyActualEstimator, _clip
from hpcgym.workload.core import Workload

__all__ = [
    "BlurredActualEstimator",
    "EndsWithinEstimator",
    "LikeJobEstimator",
    "classifier_bits",
    "classifier_quality",
]


def _generator(
    seed: int | None, workload: Workload, rng: np.random.Generator
) -> np.random.Generator:
    if seed is None:
        return rng
    return np.random.default_rng((int(seed), int(workload.offset)))


def classifier_bits(
    truth: np.ndarray, precision: float, recall: float, rng: np.random.Generator
) -> np.ndarray:
    """The bits of a simulated binary classifier with the given precision and recall.

    ``round(recall x P)`` of the ``P`` true positives are flagged (drawn without
    replacement), and ``round(TP (1 - precision) / precision)`` of the negatives (at most
    all of them): on these jobs the measured precision and recall are the asked ones up
    to rounding (and the precision is higher when there are too few negatives).

    :param truth: the true bits (bool, one per job)
    :param precision: share of the flagged jobs that are true positives, in (0, 1]
    :param recall: share of the true positives that are flagged, in [0, 1]
    :param rng: the generator of the draws
    """
    if not 0.0 < float(precision) <= 1.0:
        raise ValueError(f"precision must be in (0, 1], got {precision}")
    if not 0.0 <= float(recall) <= 1.0:
        raise ValueError(f"recall must be in [0, 1], got {recall}")
    truth = np.asarray(truth, dtype=bool)
    pos, neg = np.flatnonzero(truth), np.flatnonzero(~truth)
    tp = int(round(float(recall) * len(pos)))
    fp = min(len(neg), int(round(tp * (1.0 - float(precision)) / float(precision))))
    out = np.zeros(len(truth), dtype=bool)
    out[rng.choice(pos, size=tp, replace=False)] = True
    out[rng.choice(neg, size=fp, replace=False)] = True
    return out


def classifier_quality(flagged: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """``(precision, recall)`` of the bits ``flagged`` against ``truth`` (``nan`` where
    undefined: nothing flagged, or no true positive)."""
    flagged, truth = np.asarray(flagged, dtype=bool), np.asarray(truth, dtype=bool)
    tp = float(np.sum(flagged & truth))
    nf, nt = float(flagged.sum()), float(truth.sum())
    return (tp / nf if nf else float("nan"), tp / nt if nt else float("nan"))


class BlurredActualEstimator(NoisyActualEstimator):
    """The actual run time blurred by log-normal multiplicative noise:
    ``min(p_j exp(sigma z_j), request)``, ``z_j ~ N(0, 1)`` (CLAIRVOYANT, blurred).

    The noisy estimator of :mod:`hpcgym.predictors.static` with a log-normal relative
    error, so that the blur is symmetric on the log scale a run time is predicted on:
    ``sigma`` is the standard deviation of ``log(estimate / run time)`` before the cap.

    :param sigma: the standard deviation of the log error, >= 0
    :param seed: seed of the draws (with the window's offset); ``None``: the engine's
        generator
    """

    def __init__(self, sigma: float, seed: int | None = None) -> None:
        super().__init__(0.0)
        if not np.isfinite(float(sigma)) or float(sigma) < 0:
            raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
        self.sigma = float(sigma)
        self.seed = seed
        self.name = f"blurred:sigma={self.sigma:g}"

    def relative_errors(self) -> np.ndarray:
        rng = _generator(self.seed, self.workload, self.rng)
        return np.expm1(self.sigma * rng.standard_normal(len(self.workload)))


class EndsWithinEstimator(Estimator):
    """A classifier of "the job ends within ``threshold`` seconds" as an estimate:
    ``min(threshold, request)`` for the flagged jobs, the request for the others.

    At ``precision = recall = 1`` the bit is clairvoyant (it reads the run time); lower
    values simulate a classifier of that quality (:func:`classifier_bits`). A job whose
    request is at most ``threshold`` surely ends within it and is always flagged (it is
    not counted in the classifier's draws).

    :param threshold: ``X`` in seconds (> 0)
    :param precision: the classifier's precision, in (0, 1]
    :param recall: the classifier's recall, in [0, 1]
    :param seed: seed of the draws (with the window's offset); ``None``: the engine's
        generator
    """

    online = False

    def __init__(
        self,
        threshold: float = 60.0,
        precision: float = 1.0,
        recall: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if not float(threshold) > 0:
            raise ValueError(f"threshold must be > 0 seconds, got {threshold}")
        classifier_bits(np.zeros(0, dtype=bool), precision, recall, np.random.default_rng(0))
        self.threshold = float(threshold)
        self.precision = float(precision)
        self.recall = float(recall)
        self.seed = seed
        self.name = (
            f"ends-within:threshold={self.threshold:g},precision={self.precision:g},"
            f"recall={self.recall:g}"
        )

    def flags(self) -> np.ndarray:
        """The classifier's bit of every job of the bound workload."""
        wl = self.workload
        sure = wl.request <= self.threshold
        truth = wl.runtime <= self.threshold
        rng = _generator(self.seed, wl, self.rng)
        bits = np.ones(len(wl), dtype=bool)
        idx = np.flatnonzero(~sure)
        bits[idx] = classifier_bits(truth[idx], self.precision, self.recall, rng)
        return bits

    def static_estimates(self) -> np.ndarray:
        wl = self.workload
        est = np.where(self.flags(), np.minimum(self.threshold, wl.request), wl.request)
        return _clip(est.astype(np.float64), wl.request)

    def predict(self, job: int, view: SystemView) -> float:
        return float(self.static_estimates()[job])


class LikeJobEstimator(Estimator):
    """The run time of the user's most recently finished job with the same request (and
    size, with ``same_procs``); the request when the user has none.

    A site's like-job rule ("a job goes first when its user's most recently finished job
    with the same request ran <= 60 s") ranks on this estimate. It reads only jobs that
    finished before the submission.

    :param same_procs: also require the same number of processors
    """

    online = True
    warm_static = None

    def __init__(self, same_procs: bool = False) -> None:
        self.same_procs = bool(same_procs)
        self.name = "like-job" + (":same_procs=true" if self.same_procs else "")

    def bind(self, workload: Workload, rng: np.random.Generator) -> None:
        super().bind(workload, rng)
        self._last: dict[tuple[int, float, int], float] = {}

    def _key(self, j: int) -> tuple[int, float, int]:
        wl = self.workload
        procs = int(wl.procs[j]) if self.same_procs else 0
        return int(wl.user[j]), float(wl.request[j]), procs

    def observe_finished(self, jobs: np.ndarray, end_times: np.ndarray) -> None:
        rt = self.workload.runtime
        for j in np.asarray(jobs, dtype=np.int64):
            self._last[self._key(int(j))] = float(rt[j])

    def predict(self, job: int, view: SystemView) -> float:
        return self._last.get(self._key(int(job)), float(self.workload.request[job]))
