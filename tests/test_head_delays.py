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
