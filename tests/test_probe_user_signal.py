"""``research/probes/user_signal.py``: how much of a user's run-time variation each piece of
submission-time information explains (known cases, then the script end to end)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.workload import Workload
from research.probes import user_signal as B


def test_within_r_ignores_group_offsets_and_recovers_a_known_r() -> None:
    rng = np.random.default_rng(0)
    n, groups = 40_000, np.repeat(np.arange(4_000), 10)
    x = rng.standard_normal(n)
    # large offsets between groups that x does not know; within groups R = 0.6
    y = 50.0 * groups + 0.6 * x + 0.8 * rng.standard_normal(n)
    r, used = B.within_r(x, y, groups)
    assert used == n
    assert r == pytest.approx(0.6, abs=0.02)
    # an input that is one value per group explains nothing within the groups
    assert np.isnan(B.within_r(groups.astype(float), y, groups)[0])


def test_within_r_drops_unknown_inputs_and_lone_jobs() -> None:
    y = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 11.0])
    x = np.array([1.0, 2.0, np.nan, 4.0, 1.0, 2.0])
    groups = np.array([0, 0, 1, 1, 2, 2])
    r, used = B.within_r(x, y, groups)
    assert used == 4  # job 2 unknown, so job 3 is alone in its group
    assert r == pytest.approx(1.0)


def test_category_r_out_of_sample() -> None:
    groups = np.repeat([0, 1], 4)
    y = np.array([1.0, 1.0, 5.0, 5.0, 2.0, 2.0, 9.0, 9.0])
    cat = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    r, used = B.category_r(y, groups, cat)
    assert (r, used) == (pytest.approx(1.0), 8)  # the category tells every job exactly
    # the category is the group itself: it tells nothing the group's other jobs do not
    assert B.category_r(y, groups, groups)[0] == pytest.approx(0.0)
    # a value per job has no category-mates
    assert np.isnan(B.category_r(y, groups, np.arange(8))[0])
    # a category unrelated to y does worse than the group's mean out of sample: 0
    noise = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    assert B.category_r(y, groups, noise)[0] == 0.0


def _workload(user: list[int], request: list[float], submit: list[float]) -> Workload:
    n = len(user)
    return Workload(
        name="t",
        machine_size=8,
        job_id=np.arange(n),
        submit=np.array(submit),
        runtime=np.array(request) / 2,
        procs=np.ones(n, dtype=np.int64),
        request=np.array(request),
        user=np.array(user),
        group=np.zeros(n, dtype=np.int64),
        executable=np.zeros(n, dtype=np.int64),
        queue=np.zeros(n, dtype=np.int64),
    )


def test_numeric_inputs() -> None:
    w = _workload([1, 2, 1, 1], [100.0, 50.0, 400.0, 400.0], [0.0, 10.0, 99.0, 43_299.0])
    gap = B.numeric_inputs(w, "gap", None).ravel()
    assert np.isnan(gap[[0, 1]]).all()
    np.testing.assert_allclose(gap[2:], np.log1p([99.0, 43_200.0]))
    change = B.numeric_inputs(w, "request-change", None).ravel()
    np.testing.assert_allclose(change[2:], np.log([4.0, 1.0]))
    day = B.numeric_inputs(w, "time-of-day", None)
    assert day.shape == (4, 2)
    a = 2 * np.pi * 43_299.0 / 86_400.0  # 12:01:39, about half a day
    np.testing.assert_allclose(day[3], [np.cos(a), np.sin(a)])
    assert day[3][0] < -0.99
    assert np.isnan(B.numeric_inputs(w, "memory", None)).all()
    mem = np.array([-1.0, 0.0, 2048.0, 4096.0])
    np.testing.assert_allclose(B.numeric_inputs(w, "memory-given", mem).ravel(), [0, 0, 1, 1])
    np.testing.assert_allclose(B.numeric_inputs(w, "memory", mem).ravel()[2:], np.log(mem[2:]))
    with pytest.raises(ValueError, match="valid: request"):
        B.numeric_inputs(w, "nope", None)


def test_history_inputs() -> None:
    # user 1 submits three like jobs (request 100) and one other; user 2 one like job
    w = _workload([1, 1, 2, 1, 1], [100.0, 100.0, 100.0, 100.0, 60.0], [0, 10, 20, 30, 40])
    w.runtime = np.array([20.0, 80.0, 5.0, 50.0, 30.0])
    # recorded waits: job 0 ends at 20, job 1 at 10 + 5 + 80 = 95
    w.recorded_wait = np.array([0.0, 5.0, 0.0, 0.0, 0.0])
    y = np.log([20.0, 80.0, 5.0, 50.0, 30.0])
    sub = B.history_inputs(w, "last-submitted").ravel()
    np.testing.assert_allclose(sub, [np.nan, y[0], np.nan, y[1], np.nan])
    fin = B.history_inputs(w, "last-finished").ravel()
    # job 1 (submitted at 10) sees none finished; job 3 (at 30) sees job 0 only
    np.testing.assert_allclose(fin, [np.nan, np.nan, np.nan, y[0], np.nan])
    w.recorded_wait = None  # no recorded schedule: nothing finished is known
    assert np.isnan(B.history_inputs(w, "last-finished")).all()
    with pytest.raises(ValueError, match="valid: last-finished"):
        B.history_inputs(w, "last")


def test_main_on_the_synthetic_workload(capsys: pytest.CaptureFixture[str]) -> None:
    B.main(["--windows", "3", "--length", "256", "--noise", "1"])
    out = capsys.readouterr().out.splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out if line.startswith("| ")}
    assert set(B.SIGNALS) | {"blur-1"} <= set(rows)
    assert rows["memory"].endswith("| 0 | — | — |")  # a generated workload has no memory
    r_user = float(rows["blur-1"].split(" | ")[2])
    assert 0.5 < r_user < 1.0
