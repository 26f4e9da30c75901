"""``research/probes/ordering_headroom.py``: ordering the candidates of a guard by the guard's own
estimates reproduces that guard's scheduler, on a 10,000-job synthetic workload."""

from __future__ import annotations

import numpy as np
import pytest
from test_features import handmade
from test_features_log import with_log

from hpcgym.sim import get_scheduler
from hpcgym.workload import load
from research.probes import ordering_headroom as B

#: the generated workload the expected figures were measured on
SYNTHETIC_10K = "synthetic:n_jobs=10000"


@pytest.mark.parametrize("guard", B.GUARDS)
@pytest.mark.parametrize("start", [0, 3000])
def test_the_guards_own_order_is_the_guard(guard: str, start: int) -> None:
    w = load(SYNTHETIC_10K).window(start, 400)
    own = B.ordered_backfill(w, "guard", B.by_runtime, guard)
    assert own == pytest.approx(get_scheduler(guard).simulate(w).metrics["avg_bsld"])


def test_another_order_changes_the_schedule() -> None:
    # the clairvoyant order is a different schedule (the test above could not fail if the
    # decisions were ignored)
    w = load(SYNTHETIC_10K).window(0, 400)
    values = {B.ordered_backfill(w, "actual", k, "ELOSS") for k in (B.by_runtime, B.by_area)}
    values.add(get_scheduler("ELOSS").simulate(w).metrics["avg_bsld"])
    assert len(values) > 1


@pytest.mark.parametrize("guard", B.GUARDS)
@pytest.mark.parametrize("source", ["actual", "history"])
def test_short_first_with_nothing_short_is_the_guard(guard: str, source: str) -> None:
    w = load(SYNTHETIC_10K).window(0, 400)
    ref = get_scheduler(guard).simulate(w).metrics["avg_bsld"]
    assert B.short_first(w, 0.0, source, guard) == pytest.approx(ref)


@pytest.mark.parametrize("source", ["actual", "history"])
def test_short_first_changes_the_schedule(source: str) -> None:
    w = load(SYNTHETIC_10K).window(0, 400)
    ref = get_scheduler("ELOSS").simulate(w).metrics["avg_bsld"]
    seconds = float(np.median(w.runtime))
    assert B.short_first(w, seconds, source, "ELOSS") != pytest.approx(ref)


def test_fit_check_by_actual_runtime() -> None:
    w = load(SYNTHETIC_10K).window(0, 400)
    # under request-based reservations every candidate already ends by the shadow by its
    # request, so by its actual runtime too: nothing is skipped, EASY-SJBF's schedule
    for guard in ("EASY-SJBF", "SJF+EASY-SJBF"):
        sjbf = get_scheduler(guard).simulate(w).metrics["avg_bsld"]
        assert B.fit_checked(w, "actual", guard) == pytest.approx(sjbf)
    # under ELOSS's under-predicted reservations some candidates would overrun: skipped
    eloss = get_scheduler("ELOSS").simulate(w).metrics["avg_bsld"]
    assert B.fit_checked(w, "actual", "ELOSS") != pytest.approx(eloss)
    assert B.fit_checked(w, "log-ridge", "ELOSS") > 0


def test_an_infinite_score_means_stop() -> None:
    w = load(SYNTHETIC_10K).window(0, 200)
    sim = B.guard_simulation(w, "EASY-SJBF")
    never = B.play_in_order(sim, lambda jobs: np.full(len(jobs), np.inf))
    assert never == pytest.approx(get_scheduler("NONE").simulate(w).metrics["avg_bsld"])


def test_the_sjf_queue_is_another_schedule() -> None:
    # the SJF guards are not the FCFS ones under another name
    w = load(SYNTHETIC_10K).window(0, 400)
    fcfs = B.ordered_backfill(w, "actual", B.by_runtime, "EASY-SJBF")
    assert B.ordered_backfill(w, "actual", B.by_runtime, "SJF+EASY-SJBF") != pytest.approx(fcfs)
    assert B.queue_name("SJF", "EASY") == "SJF+EASY" and B.queue_name("FCFS", "EASY") == "EASY"


def test_an_unknown_guard_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid: EASY-SJBF, ELOSS"):
        B.guard_simulation(load(SYNTHETIC_10K).window(0, 50), "EASY")


def test_tie_breaks() -> None:
    """``ties-fcfs`` is EASY-SJBF exactly; LIFO ties are another schedule on a window with
    ties; the tie counter sees them."""
    w = load(SYNTHETIC_10K).window(0, 400)
    ref = get_scheduler("EASY-SJBF").simulate(w).metrics["avg_bsld"]
    rng = np.random.default_rng(0)
    fcfs, lifo = B.TieBreak("fcfs", rng), B.TieBreak("lifo", rng)
    assert B.ordered_backfill(w, "guard", fcfs, "EASY-SJBF") == pytest.approx(ref)
    assert 0 < fcfs.tied < fcfs.decisions
    assert B.ordered_backfill(w, "guard", lifo, "EASY-SJBF") != pytest.approx(ref)
    # without ties (distinct estimates) every tie-break is the same order
    jobs = np.array([4, 1, 7])
    pred = np.zeros(8)
    pred[jobs] = [30.0, 10.0, 20.0]
    for how in B.TieBreak.HOWS:
        score = B.TieBreak(how, rng)(jobs, pred, w)
        np.testing.assert_array_equal(np.argsort(score), [1, 2, 0])
    pred[jobs] = [10.0, 10.0, 20.0]
    assert np.argmin(B.TieBreak("fcfs", rng)(jobs, pred, w)) == 1  # job 1 before job 4
    assert np.argmin(B.TieBreak("lifo", rng)(jobs, pred, w)) == 0
    with pytest.raises(ValueError, match="valid: fcfs, lifo, random"):
        B.TieBreak("sjf", rng)


@pytest.mark.parametrize("guard", B.GUARDS_WARM)
def test_a_warm_guards_own_order_is_the_warm_guard(guard: str) -> None:
    # a window of a logged trace: the warm E-Loss behind the reservations is taught the
    # jobs before it, so its own order is the warm scheduler and not the cold one
    w = with_log(handmade(n=700, seed=4), seed=4).window(400, 300)
    warm = f"{guard},warm=log"
    own = B.ordered_backfill(w, "guard", B.by_runtime, warm)
    assert own == pytest.approx(get_scheduler(warm).simulate(w).metrics["avg_bsld"])
    assert own != pytest.approx(get_scheduler(guard).simulate(w).metrics["avg_bsld"])


def test_only_an_eloss_guard_takes_a_warm_start() -> None:
    w = load(SYNTHETIC_10K).window(0, 50)
    with pytest.raises(ValueError, match="ELOSS,warm=..."):
        B.guard_simulation(w, "EASY-SJBF,warm=log")
