"""``hpcgym.sim.metrics``: the compiled metrics kernel gives numpy's numbers, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.sim.metrics import bounded_slowdown, compute_metrics, pp_bounded_slowdown
from hpcgym.workload.core import Workload


def numpy_metrics(w: Workload, start: np.ndarray) -> dict[str, float]:
    """The metrics written with numpy's reductions (the kernel's specification)."""
    wait = start - w.submit
    end = start + w.runtime
    makespan = float(end.max() - w.submit[0])
    work = float(np.dot(w.runtime, w.procs.astype(np.float64)))
    bsld = bounded_slowdown(wait, w.runtime)
    return {
        "avg_bsld": float(bsld.mean()),
        "p99_bsld": float(np.percentile(bsld, 99)),
        "avg_pp_bsld": float(pp_bounded_slowdown(wait, w.runtime, w.procs).mean()),
        "avg_wait": float(wait.mean()),
        "max_wait": float(wait.max()),
        "avg_turnaround": float((wait + w.runtime).mean()),
        "utilization": work / (w.machine_size * makespan) if makespan > 0 else 0.0,
        "makespan": makespan,
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
        for key, value in want.items():
            if key == "utilization":  # numpy's dot is BLAS's (its own order of the sum)
                assert got[key] == pytest.approx(value, rel=1e-14)
            else:
                assert got[key] == value, key
        assert got["jobs"] == n and got["machine_size"] == 128
        assert got["backfilled"] <= n and list(got)[:2] == ["avg_bsld", "p99_bsld"]
