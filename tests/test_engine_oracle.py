"""The engine against hand-worked cases and against an independent naive implementation.

``tests/oracle.py`` implements the same written rules in plain Python, without looking at
the engine; ``tests/hand_cases.py`` holds scenarios whose start times were derived by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from hand_cases import CASES, case_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import oracle_simulate

from hpcgym.sim import Simulation
from hpcgym.workload.core import Workload

POLICIES = [
    "FCFS",
    "SJF",
    "SQF",
    "SAF",
    "LJF",
    "LQF",
    "LAF",
    "WFP3",
    "UNICEF",
    "F1",
    "F2",
    "F3",
    "F4",
]


def _wl(submit, runtime, procs, request, m) -> Workload:
    n = len(submit)
    neg = -np.ones(n)
    return Workload("case", m, np.arange(n), submit, runtime, procs, request, neg, neg, neg, neg)


def _engine(inputs: dict) -> tuple[np.ndarray, np.ndarray]:
    wl = _wl(inputs["submit"], inputs["runtime"], inputs["procs"], inputs["request"], inputs["m"])
    est = inputs["est"] if inputs.get("est") is not None else inputs["estimate"]
    res = Simulation(
        wl,
        policy=inputs["policy"],
        backfill=inputs["backfill"],
        estimate=est,
        starvation=inputs["starvation"],
    ).run()
    return res.start, res.backfilled


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_reproduces_hand_case(case):
    start, backfilled = _engine(case_inputs(case))
    assert start.tolist() == list(case.start)
    assert np.flatnonzero(backfilled).tolist() == sorted(case.backfilled)


@st.composite
def scenario(draw):
    m = draw(st.integers(1, 12))
    n = draw(st.integers(1, 30))
    submit = np.cumsum(draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))).astype(float)
    runtime = np.array(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n)), float)
    procs = np.array(draw(st.lists(st.integers(1, m), min_size=n, max_size=n)), np.int64)
    over = np.array(
        draw(st.lists(st.sampled_from([0, 0, 5, 20, 60]), min_size=n, max_size=n)), float
    )
    return {
        "submit": submit + 1000.0,  # F1-F4 use log10(s): keep submit times realistic
        "runtime": runtime,
        "procs": procs,
        "request": runtime + over,
        "m": m,
        "policy": draw(st.sampled_from(POLICIES)),
        "backfill": draw(st.sampled_from(["none", "easy", "sjbf", "conservative"])),
        "estimate": draw(st.sampled_from(["request", "actual"])),
        "starvation": draw(st.sampled_from([None, None, 30.0])),
        "est": None,
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=scenario())
def test_engine_equals_oracle_on_random_workloads(inputs):
    start, backfilled = _engine(inputs)
    ref = oracle_simulate(**inputs)
    np.testing.assert_array_equal(start, ref["start"])
    np.testing.assert_array_equal(backfilled, ref["backfilled"])
