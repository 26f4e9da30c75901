"""``hpcgym.sim.metrics``: the compiled metrics kernel gives numpy's numbers, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.sim.metrics import (
    KERNEL_METRICS,
    SIZE_CLASSES,
    bounded_slowdown,
    compute_metrics,
    pp_bounded_slowdown,
    size_class,
)
from hpcgym.workload.core import Workload


def numpy_metrics(w: Workload, start: np.ndarray) -> dict[str, float]:
    """The metrics written with numpy's reductions (the kernel's specification)."""
    wait = start - w.submit
    end = start + w.runtime
    makespan = float(end.max() - w.submit[0])
    work = float(np.dot(w.runtime, w.procs.astype(np.float64)))
    bsld = bounded_slowdown(wait, w.runtime)
    area = w.runtime * w.procs.astype(np.float64)
    turn = wait + w.runtime
    cls = size_class(w.procs, w.machine_size)
    by_class: dict[str, float] = {}
    for k, c in enumerate(SIZE_CLASSES):
        mine = wait[cls == k]
        by_class[f"avg_wait_{c}"] = float(mine.mean()) if len(mine) else float("nan")
        by_class[f"p95_wait_{c}"] = float(np.percentile(mine, 95)) if len(mine) else float("nan")
    return {
        "avg_bsld": float(bsld.mean()),
        "p99_bsld": float(np.percentile(bsld, 99)),
        "avg_pp_bsld": float(pp_bounded_slowdown(wait, w.runtime, w.procs).mean()),
        "avg_wait": float(wait.mean()),
        "max_wait": float(wait.max()),
        "avg_turnaround": float((wait + w.runtime).mean()),
        "utilization": work / (w.machine_size * makespan) if makespan > 0 else 0.0,
        "makespan": makespan,
        "awrt": float((area * turn).sum() / area.sum()) if area.sum() > 0 else float(turn.mean()),
        **by_class,
    }


def workload(n: int, rng: np.random.Generator) -> Workload:
    z = np.zeros(n, dtype=np.int64)
    rt = rng.random(n) * 10.0 ** rng.integers(0, 5, n) + 1.0
    return Workload(
        name="w", job_id=np.arange(n), submit=np.sort(rng.random(n) * 1e6), runtime=rt,
        procs=rng.integers(1, 64, n), request=2 * rt, user=z, group=z, executable=z,
        queue=z, machine_size=128,
    )  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 100, 128, 129, 255, 256, 1000, 1024, 3001])
def test_kernel_equals_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(3):
        w = workload(n, rng)
        start = w.submit + rng.random(n) * 1e5 * (rng.random(n) < 0.6)  # some start at once
        got, want = (
            compute_metrics(w, start, backfilled=rng.random(n) < 0.3),
            numpy_metrics(w, start),
        )
        assert set(want) == set(KERNEL_METRICS)
        for key, value in want.items():
            if key == "utilization":  # numpy's dot is BLAS's (its own order of the sum)
                assert got[key] == pytest.approx(value, rel=1e-14)
            elif np.isnan(value):  # a size class without jobs
                assert np.isnan(got[key]), key
            else:
                assert got[key] == value, key
        assert got["jobs"] == n and got["machine_size"] == 128
        assert got["backfilled"] <= n and list(got)[:2] == ["avg_bsld", "p99_bsld"]


def test_new_objectives_on_a_hand_made_schedule() -> None:
    """The hand case ``fcfs_easy_request`` (tests/hand_cases.py): jobs (submit, run,
    procs) J0 (0, 10, 3), J1 (1, 5, 4), J2 (2, 4, 1), J3 (3, 5, 1) on 4 processors, started
    at 0, 11, 2 and 6 (worked out by hand there; the engine gives the same)."""
    from hpcgym.sim import simulate
    from tests.hand_cases import CASES, case_inputs

    case = next(c for c in CASES if c.name == "fcfs_easy_request")
    kw = case_inputs(case)
    z = np.zeros(4, dtype=np.int64)
    w = Workload(
        name="hand", job_id=np.arange(4), submit=kw["submit"], runtime=kw["runtime"],
        procs=kw["procs"], request=kw["request"], user=z, group=z, executable=z, queue=z,
        machine_size=case.m,
    )  # fmt: skip
    start = np.array(case.start, dtype=np.float64)
    res = simulate(w, policy="FCFS", backfill="easy", estimate="request")
    np.testing.assert_array_equal(res.start, start)  # the hand schedule is the engine's
    got = compute_metrics(w, start)
    # waits 0, 10, 0, 3; runs 10, 5, 4, 5; areas (procs x run) 30, 20, 4, 5 = 59
    # responses (wait + run) 10, 15, 4, 8: AWRT = (300 + 300 + 16 + 40) / 59
    assert got["awrt"] == pytest.approx(656 / 59, rel=1e-15)
    # ends 10, 16, 6, 11: makespan 16 from the first submit, utilization 59 / (4 x 16)
    assert got["utilization"] == pytest.approx(59 / 64, rel=1e-15) and got["makespan"] == 16
    # classes on 4 processors: serial J2, J3 (waits 0, 3); small J0, J1 (3 and 4 procs:
    # waits 0, 10); none medium or wide (at most 8 processors is small first)
    assert (got["avg_wait_serial"], got["p95_wait_serial"]) == (1.5, pytest.approx(2.85))
    assert (got["avg_wait_small"], got["p95_wait_small"]) == (5.0, pytest.approx(9.5))
    for c in ("medium", "wide"):
        assert np.isnan(got[f"avg_wait_{c}"]) and np.isnan(got[f"p95_wait_{c}"])
    # the engine's result carries them too
    assert res.metrics["awrt"] == got["awrt"]


def test_size_classes() -> None:
    procs = np.array([1, 2, 8, 9, 16, 17, 64, 128])
    # 128 processors: serial 1, small 2-8, medium 9-16 (1/8 of 128), wide above
    assert [SIZE_CLASSES[k] for k in size_class(procs, 128)] == [
        "serial", "small", "small", "medium", "medium", "wide", "wide", "wide",
    ]  # fmt: skip
    # a small machine: 1/8 of 32 is 4 < 9, so no job is medium; 5-8 stay small
    assert [SIZE_CLASSES[k] for k in size_class(np.array([1, 5, 8, 9]), 32)] == [
        "serial", "small", "small", "wide",
    ]  # fmt: skip


def test_awrt_without_any_area_is_the_mean_response() -> None:
    z = np.zeros(3, dtype=np.int64)
    w = Workload(
        name="z", job_id=np.arange(3), submit=np.array([0.0, 1.0, 2.0]), runtime=np.zeros(3),
        procs=np.array([1, 2, 3]), request=np.ones(3), user=z, group=z, executable=z,
        queue=z, machine_size=4,
    )  # fmt: skip
    got = compute_metrics(w, np.array([0.0, 3.0, 2.0]))
    assert got["awrt"] == got["avg_turnaround"] == pytest.approx(2.0 / 3.0)
