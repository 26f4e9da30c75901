"""Correction rules of Gaussier et al. §5.2 (hpcgym.predictors.corrections)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcgym.predictors.corrections import (
    INCREMENTS,
    correct,
    correct_doubling,
    correct_incremental,
    correct_requested,
    increment_offset,
)

MIN, H = 60.0, 3600.0


def test_increments_are_the_papers_sequence() -> None:
    expected = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 3000, 6000]  # minutes
    assert list(INCREMENTS) == [m * MIN for m in expected]


def test_requested() -> None:
    assert correct("requested", 100.0, 100.0, 5000.0) == 5000.0
    assert correct_requested(100.0, 100.0, 5000.0) == 5000.0
    assert correct("request", 100.0, 100.0, 5000.0) == 5000.0


def test_incremental_adds_the_kth_amount_to_the_current_estimate() -> None:
    req = 1000 * H
    est = 100.0
    seen = []
    for k in range(13):  # the engine corrects when elapsed == current estimate
        est = correct("incremental", est, est, req, k)
        seen.append(est)
    sums = np.cumsum([*INCREMENTS, INCREMENTS[-1], INCREMENTS[-1]])
    np.testing.assert_allclose(seen, 100.0 + sums)
    assert seen[0] == 160.0 and seen[1] == 460.0 and seen[2] == 1360.0


def test_incremental_is_capped_at_request() -> None:
    assert correct("incremental", 3500.0, 3500.0, 3550.0, 0) == 3550.0
    assert correct_incremental(7000.0, 7000.0, 7200.0, count=5) == 7200.0


def test_incremental_offset_variant_is_predictsim() -> None:
    # initial prediction 100 s: 100+1min, then 100+5min, then 100+15min ...
    req = 1000 * H
    est = 100.0
    seen = []
    for k in range(13):
        est = correct("incremental", est, est, req, k, variant="offset")
        seen.append(est)
    offsets = [*INCREMENTS, 2 * INCREMENTS[-1], 3 * INCREMENTS[-1]]
    np.testing.assert_allclose(seen, 100.0 + np.asarray(offsets))
    assert increment_offset(-1) == 0.0 and increment_offset(11) == 2 * 360000.0
    with pytest.raises(ValueError, match="valid choices: add, offset"):
        correct("incremental", 1.0, 1.0, 10.0, variant="sum")


def test_doubling_twice_the_elapsed_time() -> None:
    assert correct("doubling", 300.0, 300.0, 10_000.0) == 600.0
    assert correct("recursive-doubling", 600.0, 600.0, 1000.0) == 1000.0
    assert correct_doubling(40.0, 40.0, 10_000.0) == 80.0


def test_late_caller_never_gets_an_end_in_the_past() -> None:
    # called after the estimate (elapsed > estimate + step): the request is used
    assert correct("incremental", 500.0, 100.0, 9000.0, 0) == 9000.0
    assert correct("incremental", 150.0, 100.0, 9000.0, 0) == 160.0


def test_errors() -> None:
    with pytest.raises(ValueError, match="valid choices: requested, incremental, doubling"):
        correct("tripling", 1.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="count"):
        correct_incremental(1.0, 1.0, 2.0, count=-1)


@given(
    st.sampled_from(["requested", "incremental", "doubling"]),
    st.floats(1.0, 1e6),
    st.floats(1.0, 1e3),
    st.integers(0, 20),
)
def test_result_after_elapsed_and_within_request(
    kind: str, est: float, slack: float, count: int
) -> None:
    req = est * (1.0 + slack)
    new = correct(kind, est, est, req, count)
    assert est < new <= req


@settings(deadline=None)  # the first call compiles the numba kernel
@given(
    st.sampled_from([0, 1, 2, 3]),
    st.floats(1.0, 1e6),
    st.floats(0.0, 1e3),
    st.floats(1e-3, 1e3),
    st.integers(0, 20),
)
def test_same_rule_as_the_engine_core(
    kind: int, est: float, late: float, slack: float, count: int
) -> None:
    from hpcgym.sim import _core as K

    names = {
        K.CORR_REQUEST: "requested",
        K.CORR_INCREMENTAL: "incremental",
        K.CORR_DOUBLING: "doubling",
        K.CORR_INCREMENTAL_OFFSET: "incremental",
    }
    elapsed = est + late
    req = elapsed * (1.0 + slack)
    if kind == K.CORR_INCREMENTAL_OFFSET:
        # the engine keeps the initial estimate; the estimate after `count` corrections is
        # initial + offset(count - 1)
        initial = est - increment_offset(count - 1)
        ours = correct("incremental", elapsed, est, req, count, variant="offset")
    else:
        initial = est
        ours = correct(names[kind], elapsed, est, req, count)
    theirs = K.corrected_estimate(kind, elapsed, est, req, count, initial)
    if theirs <= elapsed:  # the engine's safety rule, applied after the kernel function
        theirs = req
    assert ours == pytest.approx(theirs, rel=0, abs=0)
    np.testing.assert_array_equal(np.asarray(INCREMENTS), K.INCREMENTS)
