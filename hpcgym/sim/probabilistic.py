"""Probabilistic EASY backfilling with runtime distributions (Nissimov, chapter 5).

EASY backfills a waiting job iff starting it now does not postpone the start of the
first queued job (the *head*). With runtime *distributions* that event has a
probability; Nissimov backfills iff it is below a threshold ``tau`` (0.05, §5.3).

Notation (§5.2): at time ``t0`` = now, ``c(t)`` is the number of processors released
by the running jobs up to and including ``t``; ``c0 = head.procs - free`` must be
released to start the head, ``c = c0 + cand.procs`` to run both. Running jobs end
independently; job ``n`` of ``p_n`` processors has ended by ``t`` with probability
``P_t[n]``. The dynamic programme

    ``M_t[n, c] = M_t[n-1, c] + (M_t[n-1, c - p_n] - M_t[n-1, c]) * P_t[n]``,
    ``M_t[*, c <= 0] = 1``, ``M_t[0, c > 0] = 0``

gives ``M_t[n, c] = Pr(c(t) >= c)``. The candidate (ending at ``t_e``) postpones the
head iff ``c0 <= c(t) < c`` for some ``t < t_e``; the thesis bounds this probability
from below by ``max_{t < t_e} (M_t[n, c0] - M_t[n, c])`` and integrates over the
candidate's end: the test of Algorithm 6 is

    ``sum_j Pr(cand in bin j) * max_{events before its end} (M[n, c0] - M[n, c]) < tau``.

Times are discrete: a job's possible ends are *probability events* at the ends of
its (Algorithm-5-truncated) runtime bins, and ``M`` is evaluated after each event in
time order (ties in the order given), exactly as Algorithm 6 loops over events.
A job without a prediction has one event, its request, with probability 1; if
every job is like that, the test is EASY's (proved in ``docs/hmm.md`` and tested).

Everything here is a pure function of numpy arrays; :class:`ReleaseModel` computes
the table ``M`` once for a running set and answers any number of candidates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit

from hpcgym.predictors.hmm import truncate_distributions

__all__ = [
    "ReleaseModel",
    "allow_backfill",
    "candidate_events",
    "completion_probabilities",
    "job_events",
    "postpone_probability",
    "release_survival",
    "release_table",
    "running_events",
    "stack_events",
]

Events = tuple[np.ndarray, np.ndarray]


# ============================================================== probability events
def running_events(
    dists: np.ndarray | None,
    edges: np.ndarray,
    start: np.ndarray,
    now: float,
    request: np.ndarray,
    has_dist: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Probability events of running (or, with ``start = now``, candidate) jobs.

    Each job's distribution is truncated to ``[now - start, request]`` (Algorithm 5)
    and each truncated bin's mass becomes an event at ``start + end of the truncated
    bin``. Jobs without a distribution (``has_dist`` False, or ``dists`` None), or whose
    truncated distribution has no mass left, get one event at ``start + request``
    with probability 1 (§5.2).

    :param dists: ``(n, N)`` bin probabilities predicted at submission (or None)
    :param edges: ``N + 1`` runtime-bin edges
    :param start: ``(n,)`` start times
    :param request: ``(n,)`` requests (upper bounds of the runtimes)
    :return: flat arrays ``(job, time, prob)``; ``job`` indexes the ``n`` inputs
    """
    st = np.asarray(start, dtype=np.float64).ravel()
    rq = np.asarray(request, dtype=np.float64).ravel()
    n = len(st)
    if rq.shape != (n,):
        raise ValueError("start and request must have the same length")
    e = np.asarray(edges, dtype=np.float64)
    N = len(e) - 1
    use = np.zeros(n, dtype=bool) if dists is None else np.ones(n, dtype=bool)
    if has_dist is not None and dists is not None:
        use &= np.asarray(has_dist, dtype=bool).ravel()
    jobs: list[np.ndarray] = []
    times: list[np.ndarray] = []
    probs: list[np.ndarray] = []
    if use.any():
        assert dists is not None
        d = np.asarray(dists, dtype=np.float64).reshape(n, N)
        idx = np.flatnonzero(use)
        tr = truncate_distributions(d[idx], e, now - st[idx], rq[idx])
        ok = tr.sum(axis=1) > 0
        use[idx[~ok]] = False
        idx, tr = idx[ok], tr[ok]
        ends = np.minimum(e[1:][None, :], np.maximum(rq[idx][:, None], e[:-1][None, :]))
        r, j = np.nonzero(tr > 0)
        jobs.append(idx[r])
        times.append(st[idx[r]] + ends[r, j])
        probs.append(tr[r, j])
    point = np.flatnonzero(~use)
    jobs.append(point)
    times.append(st[point] + rq[point])
    probs.append(np.ones(len(point)))
    job = np.concatenate(jobs).astype(np.int64)
    time_ = np.concatenate(times)
    prob = np.concatenate(probs)
    order = np.lexsort((job, time_))  # by time, then by input order
    return job[order], time_[order], prob[order]


def job_events(
    dist: np.ndarray | None, edges: np.ndarray, start: float, now: float, request: float
) -> Events:
    """Events ``(times, probs)`` of one job (see :func:`running_events`)."""
    d = None if dist is None else np.asarray(dist, dtype=np.float64).reshape(1, -1)
    _, t, p = running_events(d, edges, np.array([start]), now, np.array([request]))
    return t, p


def candidate_events(
    dist: np.ndarray | None, edges: np.ndarray, now: float, request: float
) -> Events:
    """End events of a candidate started now: bin ends capped at its request."""
    return job_events(dist, edges, now, now, request)


def stack_events(per_job: Sequence[Events]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flatten per-job ``(times, probs)`` into ``(job, time, prob)`` arrays."""
    if not per_job:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    job = np.concatenate(
        [np.full(len(np.atleast_1d(t)), k, dtype=np.int64) for k, (t, _) in enumerate(per_job)]
    )
    time_ = np.concatenate([np.atleast_1d(np.asarray(t, dtype=np.float64)) for t, _ in per_job])
    prob = np.concatenate([np.atleast_1d(np.asarray(p, dtype=np.float64)) for _, p in per_job])
    return job, time_, prob


# ======================================================================= the DP
def completion_probabilities(ev_job: np.ndarray, ev_prob: np.ndarray, n_jobs: int) -> np.ndarray:
    """``P[k, n]``: probability that job ``n`` has ended after the first ``k`` events.

    Events must already be in processing order. Row 0 is the state before any event.
    """
    E = len(ev_job)
    D = np.zeros((E + 1, n_jobs))
    if E:
        D[np.arange(1, E + 1), np.asarray(ev_job, dtype=np.int64)] = ev_prob
    P = np.cumsum(D, axis=0)
    return np.minimum(P, 1.0, out=P)


def release_survival(P: np.ndarray, procs: np.ndarray, max_c: int) -> np.ndarray:
    """The dynamic programme of §5.2 for many time points at once.

    :param P: ``(K, n)`` probabilities that job ``n`` has ended (one row per time)
    :param procs: ``(n,)`` processors of each job (> 0)
    :param max_c: largest threshold needed
    :return: ``M`` of shape ``(K, max_c + 1)`` with ``M[k, c] = Pr(released >= c)``
    """
    P = np.asarray(P, dtype=np.float64)
    pr = np.asarray(procs, dtype=np.int64)
    if P.ndim != 2 or P.shape[1] != len(pr):
        raise ValueError(f"P must have shape (K, {len(pr)}), got {P.shape}")
    if len(pr) and pr.min() <= 0:
        raise ValueError("running jobs must use at least one processor")
    K = P.shape[0]
    C = max(int(max_c), 0)
    M = np.zeros((K, C + 1))
    M[:, 0] = 1.0  # M[0, c <= 0] = 1, M[0, c > 0] = 0
    for n, cn in enumerate(pr):
        cn = int(cn)
        shifted = np.ones_like(M)  # M[n-1, c - c_n] = 1 for c - c_n <= 0
        if cn <= C:
            shifted[:, cn:] = M[:, : C + 1 - cn]
        M += (shifted - M) * P[:, n : n + 1]
    return M


@njit(cache=True)
def _release_table_kernel(ev_job, ev_prob, procs, out):  # pragma: no cover
    """The thesis' DP after each event, compiled and in place.

    Row ``k`` uses the end probabilities after ``k`` events. Jobs with ``P = 0`` are
    skipped and jobs with ``P = 1`` only shift the thresholds by their processors
    (both exact); the others go through the recursion, ``c`` descending so that
    ``M[n-1, c - c_n]`` is still the previous stage's value.
    """
    n = procs.shape[0]
    E = ev_job.shape[0]
    C = out.shape[1] - 1
    P = np.zeros(n)
    m = np.empty(C + 1)
    for k in range(E + 1):
        if k > 0:
            j = ev_job[k - 1]
            P[j] = min(P[j] + ev_prob[k - 1], 1.0)
        m[0] = 1.0
        for c in range(1, C + 1):
            m[c] = 0.0
        shift = 0
        for j in range(n):
            p = P[j]
            if p <= 0.0:
                continue
            cn = procs[j]
            if p >= 1.0:
                shift += cn
                continue
            for c in range(C, 0, -1):
                prev = m[c - cn] if c > cn else 1.0
                m[c] += (prev - m[c]) * p
        for c in range(C + 1):
            cc = c - shift
            out[k, c] = m[cc] if cc > 0 else 1.0


def release_table(
    ev_job: np.ndarray, ev_prob: np.ndarray, procs: np.ndarray, max_c: int
) -> np.ndarray:
    """``M[k, c] = Pr(released >= c)`` before any event (``k = 0``) and after each event.

    Same values as :func:`release_survival` applied to :func:`completion_probabilities`
    (the thesis' DP), compiled: ``O(E * n * max_c)`` without temporaries. Events must
    be in processing order.
    """
    pr = np.ascontiguousarray(procs, dtype=np.int64)
    if len(pr) and pr.min() <= 0:
        raise ValueError("running jobs must use at least one processor")
    ej = np.ascontiguousarray(ev_job, dtype=np.int64)
    ep = np.ascontiguousarray(ev_prob, dtype=np.float64)
    out = np.empty((len(ej) + 1, max(int(max_c), 0) + 1))
    _release_table_kernel(ej, ep, pr, out)
    return out


class ReleaseModel:
    """Processor-release probabilities of a running set, for Algorithm 6's test.

    :param free: idle processors now
    :param head_procs: processors of the head (first queued job)
    :param run_procs: ``(n,)`` processors of the running jobs
    :param ev_job, ev_time, ev_prob: probability events of the running jobs (index into
        ``run_procs``, absolute time, probability); e.g. from :func:`running_events`.
        Events are processed by time, ties in the given order (pass the running jobs
        in the engine's order of estimated ends to reproduce its EASY walk exactly).
    :param horizon: events at or after this time are ignored (no candidate can end
        before them); default: keep all
    """

    def __init__(
        self,
        free: int,
        head_procs: int,
        run_procs: np.ndarray,
        ev_job: np.ndarray,
        ev_time: np.ndarray,
        ev_prob: np.ndarray,
        horizon: float = math.inf,
    ) -> None:
        procs = np.asarray(run_procs, dtype=np.int64).ravel()
        ej = np.asarray(ev_job, dtype=np.int64).ravel()
        et = np.asarray(ev_time, dtype=np.float64).ravel()
        ep = np.asarray(ev_prob, dtype=np.float64).ravel()
        if not (len(ej) == len(et) == len(ep)):
            raise ValueError("ev_job, ev_time and ev_prob must have the same length")
        if len(ej) and (ej.min() < 0 or ej.max() >= len(procs)):
            raise ValueError("ev_job indexes a job outside run_procs")
        if np.any(ep < 0) or np.any(~np.isfinite(et)):
            raise ValueError("event probabilities must be >= 0 and times finite")
        order = np.argsort(et, kind="stable")
        keep = et[order] < horizon
        order = order[keep]
        self.free = int(free)
        self.head_procs = int(head_procs)
        self.c0 = self.head_procs - self.free
        self.times = et[order]
        # processors are released in multiples of g: thresholds can be divided by it
        g = int(np.gcd.reduce(procs)) if len(procs) else 1
        self.g = max(g, 1)
        self.max_extra = max(self.free, 0)
        cmax = self._scaled(self.c0 + self.max_extra)
        self.M = release_table(ej[order], ep[order], procs // self.g, max(cmax, 0))

    def _scaled(self, c: int) -> int:
        """Threshold ``c`` in units of ``g`` processors (``<= 0`` means always met)."""
        return -((-int(c)) // self.g) if c > 0 else 0

    def survival(self, c: int) -> np.ndarray:
        """``Pr(c(t) >= c)`` before any event and after each event (length ``E + 1``)."""
        cs = self._scaled(c)
        if cs >= self.M.shape[1]:
            raise ValueError(f"threshold {c} exceeds the table (head + free processors)")
        return self.M[:, cs]

    def postpone_probability(
        self, cand_procs: int, cand_times: np.ndarray, cand_probs: np.ndarray
    ) -> float:
        """Algorithm 6's statistic ``sum_j p_j max_{events before t_j} (M[c0] - M[c])``.

        :param cand_procs: processors of the candidate (``<= free``)
        :param cand_times: absolute end times of the candidate's events (e.g.
            :func:`candidate_events`)
        :param cand_probs: their probabilities
        """
        if int(cand_procs) > self.max_extra:
            raise ValueError(
                f"candidate needs {cand_procs} processors but only {self.free} are free"
            )
        diff = self.survival(self.c0) - self.survival(self.c0 + int(cand_procs))
        pmax = np.maximum.accumulate(diff)
        idx = np.searchsorted(self.times, np.asarray(cand_times, dtype=np.float64), side="left")
        return float(np.dot(np.asarray(cand_probs, dtype=np.float64), pmax[idx]))

    def allow(
        self, cand_procs: int, cand_times: np.ndarray, cand_probs: np.ndarray, tau: float = 0.05
    ) -> bool:
        """Backfill iff the candidate fits now and its postpone probability is below ``tau``."""
        if int(cand_procs) > self.free:
            return False
        return self.postpone_probability(cand_procs, cand_times, cand_probs) < tau


def postpone_probability(
    free: int,
    head_procs: int,
    run_procs: np.ndarray,
    run_events: Sequence[Events],
    cand_procs: int,
    cand_events: Events,
) -> float:
    """Probability (thesis' lower bound) that backfilling the candidate postpones the head.

    :param free: idle processors now
    :param head_procs: processors of the head
    :param run_procs: processors of each running job
    :param run_events: per running job, ``(times, probs)`` of its possible ends
        (absolute times; :func:`job_events`); ties are processed in this order
    :param cand_procs: processors of the candidate (``<= free``)
    :param cand_events: ``(times, probs)`` of the candidate's possible ends
    """
    if len(run_events) != len(np.atleast_1d(run_procs)):
        raise ValueError("one (times, probs) pair per running job is needed")
    ej, et, ep = stack_events(run_events)
    horizon = float(np.max(cand_events[0])) if len(np.atleast_1d(cand_events[0])) else -math.inf
    model = ReleaseModel(free, head_procs, run_procs, ej, et, ep, horizon=horizon)
    return model.postpone_probability(cand_procs, cand_events[0], cand_events[1])


def allow_backfill(
    free: int,
    head_procs: int,
    run_procs: np.ndarray,
    run_events: Sequence[Events],
    cand_procs: int,
    cand_events: Events,
    tau: float = 0.05,
) -> bool:
    """Backfill iff ``cand_procs <= free`` and :func:`postpone_probability` ``< tau``."""
    if int(cand_procs) > int(free):
        return False
    p = postpone_probability(free, head_procs, run_procs, run_events, cand_procs, cand_events)
    return p < tau
