"""EASY with the reservation planned as Slurm's backfill plans it (``shadow_window``,
``SLURM-EASY``): hand-worked cases of the will-run windows (:mod:`hpcgym.sim._willrun`)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.sim import Simulation, get_scheduler, simulate
from hpcgym.workload.core import Workload


def _wl(submit, runtime, procs, m) -> Workload:
    n = len(submit)
    neg = -np.ones(n)
    rt = np.asarray(runtime, dtype=float)
    return Workload(
        name="t",
        machine_size=m,
        job_id=np.arange(1, n + 1),
        submit=np.asarray(submit, dtype=float),
        runtime=rt,
        procs=np.asarray(procs),
        request=rt.copy(),
        user=neg,
        group=neg,
        executable=neg,
        queue=neg,
    )


# m=12. t=0: A(4p, ends 100), B(1p, 125), C(3p, 145) start; 4 processors free.
# t=1: H(9p) waits. Exactly, H fits once A and B have ended: shadow 125, extra 0.
# Slurm's will-run test releases A, then every job ending by the next multiple of 30 s
# after A's end plus one window (120 + 30 = 150): B and C too; H fits, and its
# reservation starts at the end of the last job released: shadow 145, extra 12 - 9 = 3.
# t=2: D(3p, 1000 s) fits in the extra processors only with Slurm's shadow.
# t=3: E(1p, ends 133) ends by Slurm's shadow, not by the exact one.
WL = _wl([0, 0, 0, 1, 2, 3], [100, 125, 145, 10, 1000, 130], [4, 1, 3, 9, 3, 1], m=12)


def test_exact_shadow_is_the_first_instant_the_head_fits() -> None:
    res = simulate(WL, backfill="easy", estimate="actual")
    assert res.start[3] == 125  # H at the exact shadow
    assert res.start[4] > 100 and res.start[5] > 100  # D and E wait


def test_slurm_windows_release_the_batch_and_plan_the_head_at_its_last_end() -> None:
    res = Simulation(WL, backfill="easy", estimate="actual", shadow_window=30.0).run()
    assert res.start.tolist() == [0, 0, 0, 145, 2, 3]
    assert res.backfilled.tolist() == [False, False, False, False, True, True]
    assert res.config["shadow_window"] == 30.0


def test_windows_are_aligned_on_the_clock() -> None:
    # time 0 is 10 s past a multiple of 30 on the clock: A ends at 110, the first window
    # ends at 120 (engine time 110) and the batch at 150 (140): C (145) is not in it, and
    # the shadow is B's end, as the exact one: D and E wait. When A ends (t=100), B's end
    # (clock 135) opens the batch up to 170 (engine 160), which takes C in: shadow 145,
    # extra 3, and D starts then, so H, which would fit at 125, waits for C (E after H).
    res = Simulation(
        WL, backfill="easy", estimate="actual", shadow_window=30.0, shadow_origin=10.0
    ).run()
    assert res.start.tolist() == [0, 0, 0, 145, 100, 155]


def test_slurm_easy_is_a_named_scheduler_and_a_spec_key() -> None:
    spec = get_scheduler("SLURM-EASY")
    assert (spec.backfill, spec.shadow_window, spec.policy) == ("easy", 30.0, "FCFS")
    assert get_scheduler("SAF+SLURM-EASY").shadow_window == 30.0
    alt = get_scheduler("EASY,estimate=actual,shadow_window=30")
    assert alt.simulate(WL).start.tolist() == [0, 0, 0, 145, 2, 3]
    assert spec.to_dict()["shadow_window"] == 30.0
    # with no job to wait for, the windows change nothing
    easy = get_scheduler("EASY").simulate(_wl([0, 1], [50, 50], [2, 2], m=8))
    slurm = spec.simulate(_wl([0, 1], [50, 50], [2, 2], m=8))
    assert easy.start.tolist() == slurm.start.tolist() == [0, 1]


def test_bad_shadow_window_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="one reservation"):
        Simulation(WL, backfill="conservative", shadow_window=30.0)
    with pytest.raises(ValueError, match=">= 0"):
        Simulation(WL, backfill="easy", shadow_window=-1.0)
    with pytest.raises(ValueError, match="shadow_window must be a number"):
        get_scheduler("EASY,shadow_window=soon")
