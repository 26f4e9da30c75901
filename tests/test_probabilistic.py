"""Tests of probabilistic backfilling (hpcgym.sim.probabilistic, Nissimov chapter 5)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcgym.predictors.hmm import RuntimeBins, truncate_distribution
from hpcgym.sim.probabilistic import (
    ReleaseModel,
    allow_backfill,
    candidate_events,
    completion_probabilities,
    job_events,
    postpone_probability,
    release_survival,
    release_table,
    running_events,
    stack_events,
)


# ------------------------------------------------------------------ references
def _survival_bruteforce(p: np.ndarray, procs: np.ndarray, c: int) -> float:
    """Pr(sum of procs of the finished jobs >= c) by enumerating completion subsets."""
    total = 0.0
    n = len(procs)
    for done in itertools.product((0, 1), repeat=n):
        w = 1.0
        for k in range(n):
            w *= p[k] if done[k] else 1.0 - p[k]
        if sum(procs[k] for k in range(n) if done[k]) >= c:
            total += w
    return total


def _algorithm6_bruteforce(free, head, procs, run_events, cand_procs, cand_events) -> float:
    """Algorithm 6 literally: loop over candidate bins and events, DP by enumeration."""
    ej, et, ep = stack_events(run_events)
    order = np.argsort(et, kind="stable")
    ej, et, ep = ej[order], et[order], ep[order]
    c0 = head - free
    c = c0 + cand_procs
    P = np.zeros(len(procs))
    pmax = max(0.0, float(c0 <= 0) - float(c <= 0))
    k = 0
    result = 0.0
    ct, cp = cand_events
    for j in np.argsort(ct, kind="stable"):
        while k < len(et) and et[k] < ct[j]:
            P[ej[k]] = min(1.0, P[ej[k]] + ep[k])
            k += 1
            m0 = _survival_bruteforce(P, procs, c0)
            m1 = _survival_bruteforce(P, procs, c)
            pmax = max(pmax, m0 - m1)
        result += cp[j] * pmax
    return result


def _exact_postpone(free, head, procs, run_events, cand_procs, cand_events) -> float:
    """Exact Pr(exists t < t_e: c0 <= c(t) < c) by enumerating every joint outcome."""
    c0 = head - free
    c = c0 + cand_procs
    total = 0.0
    choices = [list(zip(t, p, strict=True)) for t, p in run_events]
    for outcome in itertools.product(*choices):
        w = float(np.prod([p for _, p in outcome]))
        ends = np.array([t for t, _ in outcome])
        for te, pe in zip(*cand_events, strict=True):
            bad = False
            for t in sorted(set(ends[ends < te])):
                released = sum(procs[k] for k in range(len(procs)) if ends[k] <= t)
                if c0 <= released < c:
                    bad = True
                    break
            total += w * pe * bad
    return total


def _easy_allows(
    now, free, head, run_procs, run_end, cand_procs, cand_est, ties="together"
) -> bool:
    """EASY: walk running jobs by estimated end, adding procs until the head fits.

    ``ties="together"`` (the engine's ``_compute_shadow``): every job ending at the
    shadow instant counts in ``extra``; ``"sequential"``: the walk stops at the job.
    """
    if cand_procs > free:
        return False
    avail = free
    shadow, extra = np.inf, 0
    for k in range(len(run_procs)):
        avail += run_procs[k]
        last = k + 1 == len(run_procs) or run_end[k + 1] != run_end[k]
        if avail >= head and (last or ties == "sequential"):
            shadow, extra = run_end[k], avail - head
            break
    if free >= head:
        shadow, extra = now, free - head
    return bool(now + cand_est <= shadow or cand_procs <= extra)


def _random_events(rng: np.random.Generator, n: int, k_max: int = 3) -> list:
    ev = []
    for _ in range(n):
        k = int(rng.integers(1, k_max + 1))
        t = np.sort(rng.uniform(0, 10, k))
        ev.append((t, rng.dirichlet(np.ones(k))))
    return ev


# --------------------------------------------------------------------- the DP
def test_release_survival_matches_subset_enumeration() -> None:
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(0, 7))
        procs = rng.integers(1, 6, n)
        P = rng.random((3, n))
        P[0] = np.where(rng.random(n) < 0.3, 1.0, P[0])  # some certain completions
        C = int(procs.sum()) + 1
        M = release_survival(P, procs, C)
        for k in range(3):
            for c in range(C + 1):
                assert M[k, c] == pytest.approx(_survival_bruteforce(P[k], procs, c), abs=1e-12)


def test_compiled_table_equals_thesis_dp() -> None:
    # many events per job, cumulative probabilities near 0, 1/2 and exactly 1
    rng = np.random.default_rng(11)
    for trial in range(20):
        n = int(rng.integers(1, 60))
        procs = rng.integers(1, 40, n)
        k = rng.integers(1, 25, n)
        ev_job = np.repeat(np.arange(n), k)
        ev_prob = np.concatenate([rng.dirichlet(np.full(m, 0.3 if trial % 2 else 5.0)) for m in k])
        if trial % 3 == 0:  # exactly 1/2 then 1/2
            ev_prob = np.where(np.repeat(k, k) == 2, 0.5, ev_prob)
        order = rng.permutation(len(ev_job))
        ej, ep = ev_job[order], ev_prob[order]
        C = int(rng.integers(1, procs.sum() + 5))
        ref = release_survival(completion_probabilities(ej, ep, n), procs, C)
        got = release_table(ej, ep, procs, C)
        assert np.abs(got - ref).max() < 1e-9


def test_postpone_probability_is_algorithm6() -> None:
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(1, 7))
        procs = rng.integers(1, 5, n)
        free = int(rng.integers(1, 5))
        head = int(rng.integers(free + 1, free + procs.sum() + 1))
        cand = int(rng.integers(1, free + 1))
        run_ev = _random_events(rng, n)
        k = int(rng.integers(1, 4))
        cand_ev = (np.sort(rng.uniform(0, 12, k)), rng.dirichlet(np.ones(k)))
        got = postpone_probability(free, head, procs, run_ev, cand, cand_ev)
        ref = _algorithm6_bruteforce(free, head, procs, run_ev, cand, cand_ev)
        assert got == pytest.approx(ref, abs=1e-12)
        # the thesis' statistic is a lower bound of the exact probability (no ties here)
        if n <= 5:
            exact = _exact_postpone(free, head, procs, run_ev, cand, cand_ev)
            assert got <= exact + 1e-12


def test_gcd_reduction_is_exact() -> None:
    rng = np.random.default_rng(2)
    procs = np.array([16, 32, 48, 16])
    run_ev = _random_events(rng, 4)
    for head, free, cand in [(40, 8, 8), (70, 10, 5), (100, 20, 17)]:
        ev = _random_events(rng, 1)[0]
        got = postpone_probability(free, head, procs, run_ev, cand, ev)
        assert got == pytest.approx(_algorithm6_bruteforce(free, head, procs, run_ev, cand, ev))


# ------------------------------------------------------- EASY as special case
@settings(max_examples=400, deadline=None)
@given(
    jobs=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 10)), min_size=0, max_size=7),
    free=st.integers(0, 8),
    head_extra=st.integers(1, 40),
    cand_procs=st.integers(1, 8),
    cand_est=st.integers(1, 12),
)
def test_degenerate_distributions_reduce_to_easy(jobs, free, head_extra, cand_procs, cand_est):
    now = 0.0
    procs = np.array([p for p, _ in jobs], dtype=np.int64)
    ends = np.array([float(e) for _, e in jobs])
    order = np.lexsort((np.arange(len(jobs)), ends))  # engine order: (end, index)
    procs, ends = procs[order], ends[order]
    head = min(free + head_extra, free + int(procs.sum())) if len(jobs) else free + head_extra
    if head <= free:
        return  # the head would start now: not a backfill decision
    easy = _easy_allows(now, free, head, procs, ends, cand_procs, cand_est)
    # no prediction: one event at the request (start + request = the estimated end)
    ej, et, ep = running_events(None, RuntimeBins().edges, ends - 5.0, now, np.full(len(ends), 5.0))
    model = ReleaseModel(free, head, procs, ej, et, ep)
    cand_ev = candidate_events(None, RuntimeBins().edges, now, float(cand_est))
    for tau in (0.05, 0.5, 1.0):
        assert model.allow(cand_procs, *cand_ev, tau=tau) == easy
    run_ev = [(np.array([e]), np.array([1.0])) for e in ends]
    assert allow_backfill(free, head, procs, run_ev, cand_procs, cand_ev) == easy
    # Algorithm 6's literal per-event loop is the walk that stops at the first job
    seq = _easy_allows(now, free, head, procs, ends, cand_procs, cand_est, ties="sequential")
    model = ReleaseModel(free, head, procs, ej, et, ep, ties="sequential")
    assert model.allow(cand_procs, *cand_ev) == seq


def test_simultaneous_releases_count_together() -> None:
    # two jobs end at t=10: c(10) = 12 (both), so a 2-proc candidate never delays a
    # head that needs 4 more -- in either order, like the engine's EASY (extra = 8)
    procs = np.array([4, 8])
    ends = np.array([10.0, 10.0])
    ev = [(np.array([10.0]), np.array([1.0]))] * 2
    cand = (np.array([20.0]), np.array([1.0]))
    for p in (procs, procs[::-1]):
        assert _easy_allows(0.0, 2, 6, p, ends, 2, 20.0) is True
        assert allow_backfill(2, 6, p, ev, 2, cand) is True
    # Algorithm 6's literal loop sees the state after job 0 alone (extra = 0)
    assert _easy_allows(0.0, 2, 6, procs, ends, 2, 20.0, ties="sequential") is False
    assert allow_backfill(2, 6, procs, ev, 2, cand, ties="sequential") is False
    assert allow_backfill(2, 6, procs[::-1], ev, 2, cand, ties="sequential") is True
    with pytest.raises(ValueError, match="ties"):
        allow_backfill(2, 6, procs, ev, 2, cand, ties="random")


# ------------------------------------------------------------------ events
def test_running_events_truncate_and_fall_back() -> None:
    bins = RuntimeBins(2.0, 4)  # edges 1, 2, 4, 8, 16
    e = bins.edges
    d = np.array([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    start = np.array([97.0, 90.0, 100.0])
    req = np.array([12.0, 30.0, 6.0])
    job, t, p = running_events(d, e, start, 100.0, req, has_dist=np.array([True, True, False]))
    # job 0: elapsed 3, request 12 -> Algorithm 5, events at 97 + (4, 8, 12)
    tr = truncate_distribution(d[0], e, 3.0, 12.0)
    assert tr is not None
    m0 = job == 0
    assert np.allclose(t[m0], [101.0, 105.0, 109.0]) and np.allclose(p[m0], tr[1:])
    # job 1 outlived its predicted bins -> its request; job 2 has no prediction
    assert np.allclose(t[job == 1], [120.0]) and np.allclose(p[job == 1], [1.0])
    assert np.allclose(t[job == 2], [106.0]) and np.allclose(p[job == 2], [1.0])
    assert np.all(np.diff(t) >= 0)
    for k in range(3):
        assert p[job == k].sum() == pytest.approx(1.0)
    ct, cp = candidate_events(d[0], e, 50.0, 5.0)
    assert np.allclose(ct, [52.0, 54.0, 55.0]) and cp.sum() == pytest.approx(1.0)
    jt, jp = job_events(d[0], e, 97.0, 100.0, 12.0)
    assert np.allclose(jt, t[m0]) and np.allclose(jp, p[m0])


def test_completion_probabilities_and_threshold() -> None:
    P = completion_probabilities(np.array([0, 1, 0]), np.array([0.3, 1.0, 0.7]), 2)
    assert np.allclose(P, [[0, 0], [0.3, 0], [0.3, 1.0], [1.0, 1.0]])
    # a running job that may end early: backfilling a long candidate is risky
    procs = np.array([2])
    run_ev = [(np.array([10.0, 1000.0]), np.array([0.2, 0.8]))]
    cand = (np.array([500.0]), np.array([1.0]))
    prob = postpone_probability(2, 4, procs, run_ev, 2, cand)
    assert prob == pytest.approx(0.2)  # if it ends at t=10 the head fits, but not both
    # EASY with the request (1000 s) would backfill: the candidate ends before it
    assert postpone_probability(2, 4, procs, [(np.array([1000.0]), np.array([1.0]))], 2, cand) == 0
    assert allow_backfill(2, 4, procs, run_ev, 2, cand, tau=0.05) is False
    assert allow_backfill(2, 4, procs, run_ev, 2, cand, tau=0.25) is True
    assert allow_backfill(2, 4, procs, run_ev, 3, cand) is False  # does not fit now
    with pytest.raises(ValueError, match="only 2 are free"):
        ReleaseModel(2, 4, procs, *stack_events(run_ev)).postpone_probability(3, *cand)
