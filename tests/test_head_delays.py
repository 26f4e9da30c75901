"""Starts beyond the request-based reservation (issue 14: like-for-like with ELOSS)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.sim import get_scheduler
from hpcgym.sim.metrics import head_delay_summary, request_reservation_delays
from hpcgym.workload import load
from hpcgym.workload.core import Workload


def _wl(submit, runtime, procs, request, m) -> Workload:
    n = len(submit)
    neg = -np.ones(n)
    f = np.asarray
    return Workload(
        "case", m, np.arange(n), f(submit, float), f(runtime, float), f(procs), f(request, float),
        neg, neg, neg, neg,
    )  # fmt: skip


def test_handmade_schedule():
    # 10 processors. Job 0 (8 procs, request 100) runs from 0; job 1 (5 procs) reaches the
    # head at 1 and is blocked: its request-based reservation is 100. Job 2 (2 procs) is
    # backfilled at 2. Job 3 reaches the head when job 1 starts.
    wl = _wl([0, 1, 2, 3], [100, 10, 300, 10], [8, 5, 2, 6], [100, 10, 300, 10], 10)
    on_time = request_reservation_delays(wl, np.array([0.0, 100.0, 2.0, 110.0]))
    np.testing.assert_array_equal(on_time, [0, 0, 0, 0])
    # job 1 started at 150: 50 s after its reservation; job 3 reached the head at 150
    # with jobs 1 (5 procs, ends 160 by request) and 2 (2 procs, 302) running: it needs
    # 6 of 3 free -> reservation 160; it starts at 170: 10 s late
    late = request_reservation_delays(wl, np.array([0.0, 150.0, 2.0, 170.0]))
    np.testing.assert_array_equal(late, [0, 50, 0, 10])
    assert head_delay_summary(late) == {"head_delayed": 2, "head_delay": 30.0}
    assert head_delay_summary(on_time) == {"head_delayed": 0, "head_delay": 0.0}


def test_job_that_fits_when_it_reaches_the_head():
    # job 1 fits at 1 (2 free processors) but starts at 5: 4 s late
    wl = _wl([0, 1], [100, 10], [8, 2], [100, 10], 10)
    np.testing.assert_array_equal(request_reservation_delays(wl, np.array([0.0, 5.0])), [0, 4])


def test_backfill_at_the_same_time_does_not_hide_a_delay():
    # job 2 (submitted after job 1) starts at 1, the moment job 1 becomes the head: it was
    # backfilled, so it is not part of job 1's reservation (which stays at 100)
    wl = _wl([0, 1, 1], [100, 10, 500], [6, 8, 4], [100, 10, 500], 10)
    d = request_reservation_delays(wl, np.array([0.0, 501.0, 1.0]))
    assert d[1] == pytest.approx(401.0)


def test_shape_is_checked():
    wl = _wl([0, 1], [1, 1], [1, 1], [1, 1], 2)
    with pytest.raises(ValueError, match="2 jobs"):
        request_reservation_delays(wl, np.zeros(3))


@pytest.mark.parametrize("name", ["EASY", "EASY-SJBF", "CONSERVATIVE"])
def test_request_reservations_are_never_late(name):
    wl = load(None, n_jobs=4000, seed=3)
    for s in (0, 1500, 3000):
        w = wl.window(s, 1000)
        res = get_scheduler(name).simulate(w, seed=0)
        assert head_delay_summary(request_reservation_delays(w, res.start))["head_delayed"] == 0


def test_predicted_reservations_can_be_late(require_trace):
    """ELOSS reserves with E-Loss predictions: on this SDSC-SP2 window some heads start
    after their request-based reservation (EASY-SJBF: none)."""
    require_trace("SDSC-SP2")
    w = load("SDSC-SP2").window(20000, 1024)
    eloss = get_scheduler("ELOSS").simulate(w, seed=0)
    sjbf = get_scheduler("EASY-SJBF").simulate(w, seed=0)
    assert head_delay_summary(request_reservation_delays(w, eloss.start))["head_delayed"] > 0
    assert head_delay_summary(request_reservation_delays(w, sjbf.start))["head_delayed"] == 0


# ------------------------------------------- the engine's record: any queue policy
def _engine_delays(w: Workload, res) -> np.ndarray:
    return request_reservation_delays(w, res.start, res.head_since, res.backfilled)


@pytest.mark.parametrize("name", ["EASY", "EASY-SJBF", "EASY++", "ELOSS"])
def test_engine_record_gives_the_schedules_delays_on_fcfs(name):
    """On an FCFS queue the head follows from the schedule alone; the engine's record of
    when each job became the reserved head must give the very same delays (including
    the late ones of the predicted reservations)."""
    wl = load(None, n_jobs=6000, seed=3)
    late = 0
    for s in (0, 1500, 3000, 4500):
        w = wl.window(s, 1000)
        res = get_scheduler(name).simulate(w, seed=0)
        by_schedule = request_reservation_delays(w, res.start)
        np.testing.assert_array_equal(_engine_delays(w, res), by_schedule)
        late += int((by_schedule > 0).sum())
        # a reserved job started after it became the head; the others never were reserved
        rec = ~np.isnan(res.head_since)
        assert np.all(res.start[rec] > res.head_since[rec])
    if name in ("EASY++", "ELOSS"):
        assert late > 0  # the comparison covered late heads, not only zeros


@pytest.mark.parametrize(
    "name", ["SJF+EASY", "SJF+EASY-SJBF", "SAF+EASY", "LJF+EASY", "WFP3+EASY", "UNICEF+EASY"]
)
def test_request_reservations_are_never_late_for_any_queue_policy(name):
    wl = load(None, n_jobs=6000, seed=3)
    reserved = 0
    for s in (0, 2500, 5000):
        w = wl.window(s, 1000)
        res = get_scheduler(name).simulate(w, seed=0)
        assert head_delay_summary(_engine_delays(w, res))["head_delayed"] == 0
        reserved += int((~np.isnan(res.head_since)).sum())
    assert reserved > 0  # heads were reserved, so zero is a measurement


def test_sjf_head_overtaken_loses_its_reservation():
    # 10 processors. Job 0 (8 procs) runs from 0 to 100. Job 1 (5 procs, request 50)
    # becomes the reserved head at 1; job 2 (5 procs, request 10) arrives at 2 and, shorter,
    # takes the head: job 1 no longer holds a reservation. At 100 both start.
    wl = _wl([0, 1, 2], [100, 50, 10], [8, 5, 5], [100, 50, 10], 10)
    res = get_scheduler("SJF+EASY").simulate(wl, seed=0)
    np.testing.assert_array_equal(res.start, [0, 100, 100])
    assert np.isnan(res.head_since[1]) and res.head_since[2] == 2.0
    np.testing.assert_array_equal(_engine_delays(wl, res), [0, 0, 0])


def test_sjf_head_reservation_is_renewed_when_a_job_ahead_starts():
    # 10 processors. Job 0 (6 procs) runs 0-100. Job 1 (8 procs, request 1000) becomes the
    # head at 1 with reservation 100. Job 2 (4 procs, request 200) arrives at 2, is ahead of
    # job 1 under SJF and fits: it starts as the head, not as a backfill, and job 1's
    # reservation moves to 202 (job 2's end). Job 1 starts at 202: on time for the renewed
    # reservation (measured from the first one, it would look 102 s late).
    wl = _wl([0, 1, 2], [100, 10, 200], [6, 8, 4], [100, 1000, 200], 10)
    res = get_scheduler("SJF+EASY").simulate(wl, seed=0)
    np.testing.assert_array_equal(res.start, [0, 202, 2])
    assert not res.backfilled[2] and res.head_since[1] == 2.0
    np.testing.assert_array_equal(_engine_delays(wl, res), [0, 0, 0])
    stale = request_reservation_delays(
        wl, res.start, np.array([np.nan, 1.0, np.nan]), res.backfilled
    )
    assert stale[1] == 102.0  # what the stale record would say


def test_engine_record_needs_backfilled_flags():
    wl = _wl([0, 1], [1, 1], [1, 1], [1, 1], 2)
    with pytest.raises(ValueError, match="both be given"):
        request_reservation_delays(wl, np.zeros(2), np.full(2, np.nan))


def test_predicted_sjf_reservations_can_be_late(require_trace):
    """SJF+ELOSS reserves with E-Loss predictions: on SDSC-SP2 windows some SJF heads
    start after their request-based reservation (SJF+EASY-SJBF: none)."""
    require_trace("SDSC-SP2")
    wl = load("SDSC-SP2")
    late = {"SJF+ELOSS": 0, "SJF+EASY-SJBF": 0}
    for s in (20000, 40000):
        w = wl.window(s, 1024)
        for name in late:
            res = get_scheduler(name).simulate(w, seed=0)
            late[name] += head_delay_summary(_engine_delays(w, res))["head_delayed"]
    assert late["SJF+ELOSS"] > 0 and late["SJF+EASY-SJBF"] == 0


def test_conservative_backfilling_keeps_no_record():
    """Every job holds a reservation under conservative backfilling: the engine keeps no
    head record there, and an evaluation reports its late heads as not measured (FCFS:
    from the schedule, as before)."""
    from hpcgym.evaluation import evaluate, scheduler_method, select_windows

    wl = load(None, n_jobs=3000, seed=3)
    res = get_scheduler("SJF+CONSERVATIVE").simulate(wl.window(0, 500), seed=0)
    assert res.head_since is None
    ws = select_windows(len(wl), 256, starts=[0, 1000])
    methods = [scheduler_method("SJF+CONSERVATIVE"), scheduler_method("CONSERVATIVE")]
    ev = evaluate(wl, methods, ws, jobs=1, progress=False)
    assert ev.head_delays("SJF+CONSERVATIVE")["head_delayed"] is None
    assert ev.head_delays("CONSERVATIVE")["head_delayed"] == 0
