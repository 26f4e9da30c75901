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
its (Algorithm-5-truncated) runtime bins. ``M`` is evaluated at every distinct event
time, after all the events of that instant (``ties="together"``, the default:
``c(t)`` counts every release "before and including ``t``", and the engine's EASY
counts every job ending at the shadow time in ``extra``). ``ties="sequential"``
evaluates ``M`` after each single event, as Algorithm 6's listing literally loops
(ties in the order given); the two differ only when events coincide. A job without
a prediction has one event, its request, with probability 1; if every job is like
that, the test with ``ties="together"`` is exactly the engine's EASY (proved in
``docs/hmm.md`` and tested).

Everything here is a pure function of numpy arrays; :class:`ReleaseModel` computes
the table ``M`` once for a running set and answers any number of candidates;
:func:`scan_candidates` is the compiled decision of the EASY-HMM backfiller (events,
lazy table and Algorithm 6 with its early exits for a whole candidate list).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit

__all__ = [
    "ReleaseModel",
    "truncate_distribution",
    "truncate_distributions",
    "allow_backfill",
    "candidate_events",
    "completion_probabilities",
    "job_events",
    "postpone_probability",
    "release_survival",
    "release_table",
    "running_events",
    "scan_candidates",
    "stack_events",
]

#: how events at the same instant are evaluated (see the module doc)
TIES: tuple[str, ...] = ("together", "sequential")

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
        Events are processed by time, ties in the given order (which matters only
        with ``ties="sequential"``).
    :param horizon: events at or after this time are ignored (no candidate can end
        before them); default: keep all
    :param ties: ``"together"`` (default): ``M`` counts only after the last event of
        each instant; ``"sequential"``: after every event (Algorithm 6's literal loop)
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
        ties: str = "together",
    ) -> None:
        if ties not in TIES:
            raise ValueError(f"unknown ties mode {ties!r}; valid: {', '.join(TIES)}")
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
        self.ties = ties
        # rows that count: all (sequential), or the last row of each instant (together)
        self._counts = np.ones(len(self.times) + 1, dtype=bool)
        if ties == "together" and len(self.times) > 1:
            self._counts[1:-1] = self.times[1:] != self.times[:-1]

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
        diff = np.where(self._counts, diff, -np.inf)
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
    ties: str = "together",
) -> float:
    """Probability (thesis' lower bound) that backfilling the candidate postpones the head.

    :param free: idle processors now
    :param head_procs: processors of the head
    :param run_procs: processors of each running job
    :param run_events: per running job, ``(times, probs)`` of its possible ends
        (absolute times; :func:`job_events`); ties are processed in this order
    :param cand_procs: processors of the candidate (``<= free``)
    :param cand_events: ``(times, probs)`` of the candidate's possible ends
    :param ties: see :class:`ReleaseModel`
    """
    if len(run_events) != len(np.atleast_1d(run_procs)):
        raise ValueError("one (times, probs) pair per running job is needed")
    ej, et, ep = stack_events(run_events)
    horizon = float(np.max(cand_events[0])) if len(np.atleast_1d(cand_events[0])) else -math.inf
    model = ReleaseModel(free, head_procs, run_procs, ej, et, ep, horizon=horizon, ties=ties)
    return model.postpone_probability(cand_procs, cand_events[0], cand_events[1])


def allow_backfill(
    free: int,
    head_procs: int,
    run_procs: np.ndarray,
    run_events: Sequence[Events],
    cand_procs: int,
    cand_events: Events,
    tau: float = 0.05,
    ties: str = "together",
) -> bool:
    """Backfill iff ``cand_procs <= free`` and :func:`postpone_probability` ``< tau``."""
    if int(cand_procs) > int(free):
        return False
    p = postpone_probability(
        free, head_procs, run_procs, run_events, cand_procs, cand_events, ties=ties
    )
    return p < tau


# ============================================ the compiled decision (EASY-HMM)
@njit(cache=True)
def _truncate_into(dist, edges, log_edges, elapsed, request, out):  # pragma: no cover
    """Algorithm 5 for one job, unnormalised, into ``out``; returns the total mass."""
    tot = 0.0
    for b in range(out.shape[0]):
        lo = edges[b]
        hi = edges[b + 1]
        ns = max(lo, min(elapsed, hi))
        ne = min(hi, max(request, lo))
        v = 0.0
        if ne > ns and dist[b] > 0.0:
            f = (math.log(ne) - math.log(ns)) / (log_edges[b + 1] - log_edges[b])
            v = dist[b] * min(f, 1.0)
        out[b] = v
        tot += v
    return tot


@njit(cache=True)
def _dp_row(P, procs, m, out):  # pragma: no cover
    """One row of the thesis' DP: ``out[c] = Pr(released >= c)`` for ``P``.

    Jobs with ``P = 1`` shift the thresholds (exact); only the columns the shifted
    row needs are computed, and only up to the processors seen so far (above them
    ``M = 0``).
    """
    C = out.shape[0] - 1
    shift = 0
    for j in range(P.shape[0]):
        if P[j] >= 1.0:
            shift += procs[j]
    top = C - shift
    if top > 0:
        m[0] = 1.0
        for c in range(1, top + 1):
            m[c] = 0.0
        seen = 0
        for j in range(P.shape[0]):
            p = P[j]
            if p <= 0.0 or p >= 1.0:
                continue
            cn = procs[j]
            seen += cn
            hi = min(top, seen)
            for c in range(hi, 0, -1):
                prev = m[c - cn] if c > cn else 1.0
                m[c] += (prev - m[c]) * p
    for c in range(C + 1):
        cc = c - shift
        out[c] = m[cc] if cc > 0 else 1.0


@njit(cache=True)
def _ceil_div(a, b):  # pragma: no cover
    return -((-a) // b)


@njit(cache=True)
def _scan_kernel(
    now,
    free,
    head_procs,
    r_procs,
    r_start,
    r_req,
    r_dist,
    r_has,
    c_procs,
    c_req,
    c_dist,
    c_has,
    edges,
    log_edges,
    tau,
    first_only,
    early_exit,
    stats,
    info,
):  # pragma: no cover
    """Algorithm 6 for a list of candidates; see :func:`scan_candidates`."""
    n = r_procs.shape[0]
    N = edges.shape[0] - 1
    nc = c_procs.shape[0]
    for k in range(nc):
        stats[k] = np.nan
    info[0] = 0
    info[1] = 0
    info[2] = 0
    c0 = head_procs - free
    amax = 0
    horizon = -np.inf
    for k in range(nc):
        if c_procs[k] <= free:
            amax = max(amax, c_procs[k])
            horizon = max(horizon, now + c_req[k])
    if amax == 0:
        return -1
    # probability events of the running jobs (only those before the horizon matter)
    cap = n * (N + 1)
    ev_t = np.empty(cap)
    ev_j = np.empty(cap, dtype=np.int64)
    ev_p = np.empty(cap)
    tmp = np.empty(N)
    E = 0
    for i in range(n):
        done = False
        if r_has[i]:
            tot = _truncate_into(r_dist[i], edges, log_edges, now - r_start[i], r_req[i], tmp)
            if tot > 0.0:
                done = True
                for b in range(N):
                    if tmp[b] > 0.0:
                        t = r_start[i] + min(edges[b + 1], max(r_req[i], edges[b]))
                        if t < horizon:
                            ev_t[E] = t
                            ev_j[E] = i
                            ev_p[E] = tmp[b] / tot
                            E += 1
        if not done:
            t = r_start[i] + r_req[i]
            if t < horizon:
                ev_t[E] = t
                ev_j[E] = i
                ev_p[E] = 1.0
                E += 1
    order = np.argsort(ev_t[:E], kind="mergesort")  # by time, ties in job order
    g = 0
    for i in range(n):
        a, b = g, r_procs[i]
        while b:
            a, b = b, a % b
        g = a
    if g <= 0:
        g = 1
    procs = r_procs // g
    c0s = _ceil_div(c0, g) if c0 > 0 else 0
    C = _ceil_div(c0 + amax, g)
    M = np.empty((E + 1, C + 1))
    rt = np.empty(E + 1)
    m = np.empty(C + 1)
    P = np.zeros(n)
    M[0, 0] = 1.0
    for c in range(1, C + 1):
        M[0, c] = 0.0
    rt[0] = -np.inf
    R = 0  # rows computed (row r: after every event at or before rt[r])
    ke = 0  # events applied
    found = -1
    for k in range(nc):
        a = c_procs[k]
        if a > free:
            continue
        info[2] += 1
        cs = _ceil_div(c0 + a, g)
        req = c_req[k]
        has = False
        tot = 1.0
        if c_has[k]:
            tot = _truncate_into(c_dist[k], edges, log_edges, 0.0, req, tmp)
            has = tot > 0.0
        if not has:
            tot = 1.0
        d0 = M[0, c0s] - M[0, cs]
        pmax = d0
        r = 0
        result = 0.0
        rem = 1.0
        refused = False
        for b in range(N if has else 1):
            if has:
                if tmp[b] <= 0.0:
                    continue
                q = tmp[b] / tot
                tb = now + min(edges[b + 1], max(req, edges[b]))
            else:
                q = 1.0
                tb = now + req
            # pMax over the instants strictly before this end (rows made lazily)
            while True:
                if r < R:
                    if rt[r + 1] < tb:
                        r += 1
                        d = M[r, c0s] - M[r, cs]
                        if d > pmax:
                            pmax = d
                        continue
                    break
                if ke < E and ev_t[order[ke]] < tb:
                    T = ev_t[order[ke]]
                    while ke < E and ev_t[order[ke]] == T:
                        e = order[ke]
                        j = ev_j[e]
                        P[j] = min(P[j] + ev_p[e], 1.0)
                        ke += 1
                    R += 1
                    rt[R] = T
                    _dp_row(P, procs, m, M[R])
                    continue
                break
            result += q * pmax
            rem -= q
            # the thesis' early exits: result and pMax only grow
            if early_exit and (result >= tau or result + pmax * rem >= tau * (1.0 + 1e-12)):
                refused = True
                break
        stats[k] = result
        if not refused and result < tau:
            if found < 0:
                found = k
            if first_only:
                break
    info[0] = R
    info[1] = E
    return found


def scan_candidates(
    now: float,
    free: int,
    head_procs: int,
    run_procs: np.ndarray,
    run_start: np.ndarray,
    run_request: np.ndarray,
    run_dists: np.ndarray | None,
    run_has: np.ndarray | None,
    cand_procs: np.ndarray,
    cand_request: np.ndarray,
    cand_dists: np.ndarray | None,
    cand_has: np.ndarray | None,
    edges: np.ndarray,
    tau: float = 0.05,
    first_only: bool = True,
    early_exit: bool = True,
) -> tuple[int, np.ndarray]:
    """EASY-HMM's backfill decision for a list of candidates (Algorithm 6, compiled).

    Builds the running jobs' probability events (Algorithm 5 truncation to
    ``[now - start, request]``, mass at the truncated bin ends, the request with
    probability 1 without a distribution), then tests the candidates in the given
    order with the statistic of :meth:`ReleaseModel.postpone_probability`
    (``ties="together"``). The table ``M`` is shared by all candidates and its rows
    are computed lazily, only up to the instants a candidate needs; with
    ``early_exit`` a candidate is refused as soon as ``result >= tau`` or
    ``result + pMax * (remaining mass) >= tau`` (the thesis' two exits, exact up to
    a relative slack of 1e-12). A candidate is *allowed* iff it fits
    (``procs <= free``) and its statistic is ``< tau``.

    :param now: current time
    :param free: idle processors
    :param head_procs: processors of the blocked head (``> free``)
    :param run_procs, run_start, run_request: running jobs (engine order)
    :param run_dists, run_has: ``(n, N)`` distributions predicted at submission and
        which rows are valid (``None``: no predictions)
    :param cand_procs, cand_request, cand_dists, cand_has: candidates, in the order to
        test them
    :param edges: ``N + 1`` runtime-bin edges
    :param tau: threshold (0.05)
    :param first_only: stop at the first allowed candidate
    :param early_exit: use the early exits (the statistic of a refused candidate is
        then only a lower bound, ``>= tau``)
    :return: ``(index of the first allowed candidate or -1, statistic per candidate)``;
        the statistic is NaN for candidates that do not fit or were not reached
    """
    e = np.ascontiguousarray(edges, dtype=np.float64)
    N = len(e) - 1
    rp = np.ascontiguousarray(run_procs, dtype=np.int64).ravel()
    n = len(rp)
    cp = np.ascontiguousarray(cand_procs, dtype=np.int64).ravel()
    nc = len(cp)
    if n and rp.min() <= 0:
        raise ValueError("running jobs must use at least one processor")
    if int(head_procs) <= int(free):
        raise ValueError("the head fits now: not a backfill decision")

    def _d(d: np.ndarray | None, h: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        if d is None:
            return np.zeros((k, N)), np.zeros(k, dtype=np.bool_)
        dd = np.ascontiguousarray(d, dtype=np.float64).reshape(k, N)
        hh = np.ones(k, dtype=np.bool_) if h is None else np.asarray(h, dtype=np.bool_).ravel()
        return dd, np.ascontiguousarray(hh)

    rd, rh = _d(run_dists, run_has, n)
    cd, ch = _d(cand_dists, cand_has, nc)
    stats = np.empty(nc)
    info = np.zeros(3, dtype=np.int64)
    k = _scan_kernel(
        float(now),
        int(free),
        int(head_procs),
        rp,
        np.ascontiguousarray(run_start, dtype=np.float64).ravel(),
        np.ascontiguousarray(run_request, dtype=np.float64).ravel(),
        rd,
        rh,
        cp,
        np.ascontiguousarray(cand_request, dtype=np.float64).ravel(),
        cd,
        ch,
        e,
        np.log(e),
        float(tau),
        bool(first_only),
        bool(early_exit),
        stats,
        info,
    )
    return int(k), stats


# ---------------------------------------------- Algorithm 5 (Nissimov): truncation
def truncate_distributions(
    probs: np.ndarray, edges: np.ndarray, elapsed: np.ndarray, request: np.ndarray
) -> np.ndarray:
    """Algorithm 5 for many jobs: condition bin probabilities on ``elapsed <= r <= request``.

    Bin ``j`` keeps the fraction of its mass, log-uniform inside the bin, that lies in
    ``[max(lo_j, min(elapsed, hi_j)), min(hi_j, max(request, lo_j))]``; rows are
    renormalised. A row whose mass vanishes (the job outlived every bin the model
    gave mass to, or ``elapsed >= request``) is returned as all zeros; callers treat
    it as "no prediction" (the user estimate with probability 1, §5.2).

    :param probs: ``(n, N)`` bin probabilities
    :param edges: ``N + 1`` bin edges (:attr:`RuntimeBins.edges`)
    :param elapsed: ``(n,)`` lower bounds (seconds the job has run; 0 before start)
    :param request: ``(n,)`` upper bounds (user requests)
    :return: ``(n, N)`` truncated, renormalised probabilities
    """
    p = np.atleast_2d(np.asarray(probs, dtype=np.float64))
    e = np.asarray(edges, dtype=np.float64)
    lo, hi = e[:-1][None, :], e[1:][None, :]
    el = np.asarray(elapsed, dtype=np.float64).reshape(-1, 1)
    rq = np.asarray(request, dtype=np.float64).reshape(-1, 1)
    new_start = np.maximum(lo, np.minimum(el, hi))
    new_end = np.minimum(hi, np.maximum(rq, lo))
    frac = (np.log(new_end) - np.log(new_start)) / (np.log(hi) - np.log(lo))
    out = p * np.clip(frac, 0.0, 1.0)
    tot = out.sum(axis=1, keepdims=True)
    np.divide(out, tot, out=out, where=tot > 0)
    out[(tot <= 0).ravel()] = 0.0
    return out


def truncate_distribution(
    probs: np.ndarray, edges: np.ndarray, elapsed: float, request: float
) -> np.ndarray | None:
    """Algorithm 5 for one job (see :func:`truncate_distributions`); ``None`` if no mass is left."""
    out = truncate_distributions(probs, edges, np.array([elapsed]), np.array([request]))[0]
    return out if out.sum() > 0 else None
