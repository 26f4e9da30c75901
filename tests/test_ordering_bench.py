"""``bench/ordering_headroom.py``: ordering the candidates of a guard by the guard's own
estimates reproduces that guard's scheduler, on the embedded synthetic workload."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import ordering_headroom as B  # noqa: E402

from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.workload import load  # noqa: E402


@pytest.mark.parametrize("guard", B.GUARDS)
@pytest.mark.parametrize("start", [0, 3000])
def test_the_guards_own_order_is_the_guard(guard: str, start: int) -> None:
    w = load(None).window(start, 400)
    own = B.ordered_backfill(w, "guard", B.by_runtime, guard)
    assert own == pytest.approx(get_scheduler(guard).simulate(w).metrics["avg_bsld"])


def test_another_order_changes_the_schedule() -> None:
    # the clairvoyant order is a different schedule (the test above could not fail if the
    # decisions were ignored)
    w = load(None).window(0, 400)
    values = {B.ordered_backfill(w, "actual", k, "ELOSS") for k in (B.by_runtime, B.by_area)}
    values.add(get_scheduler("ELOSS").simulate(w).metrics["avg_bsld"])
    assert len(values) > 1
