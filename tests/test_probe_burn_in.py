"""``research/probes/burn_in.py``: without burn-in it measures exactly the scheduler's AVEbsld on
the window; with one it measures the same jobs in another schedule."""

from __future__ import annotations

import pytest

from hpcgym.sim import get_scheduler
from hpcgym.workload import load
from research.probes import burn_in as B


def test_no_burn_in_is_the_window_itself() -> None:
    w = load(None)
    got = B.played(w, [500, 2000], 0, 300, ["ELOSS", "EASY-SJBF"])
    for name, values in got.items():
        want = [
            get_scheduler(name).simulate(w.window(s, 300)).metrics["avg_bsld"] for s in (500, 2000)
        ]
        assert values == pytest.approx(want, rel=1e-12)


def test_a_burn_in_changes_what_the_same_jobs_see() -> None:
    w = load(None)
    cold = B.played(w, [2000], 0, 300, ["ELOSS"])["ELOSS"]
    warm = B.played(w, [2000], 1000, 300, ["ELOSS"])["ELOSS"]
    short = B.played(w, [100], 1000, 300, ["ELOSS"])["ELOSS"]  # only 100 jobs before it
    assert warm != cold
    assert short == B.played(w, [100], 100, 300, ["ELOSS"])["ELOSS"]
