"""Ranking and reservation estimates apart (``rank_estimate=`` beside ``estimate=``):
the queue policies rank by one, reservations and backfilling use the other."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.predictors.base import Estimator, SystemView
from hpcgym.sim import POLICIES, Simulation, get_scheduler, simulate
from hpcgym.workload.core import Workload


def make_wl(submit, runtime, procs, request, m) -> Workload:
    n = len(submit)
    neg = -np.ones(n)
    return Workload(
        name="t",
        machine_size=m,
        job_id=np.arange(1, n + 1),
        submit=np.asarray(submit, dtype=float),
        runtime=np.asarray(runtime, dtype=float),
        procs=np.asarray(procs),
        request=np.asarray(request, dtype=float),
        user=neg,
        group=neg,
        executable=neg,
        queue=neg,
    )


# Machine of 2. J0 (1 proc, runs 10 s, asks 100 s) starts at 0. At t=1 three jobs arrive:
# J1 (2 procs, runs 20, asks 30), J2 (2 procs, runs 5, asks 50), J3 (1 proc, runs 30,
# asks 40). SJF + EASY.
#  * rank by the request: J1 (30) < J3 (40) < J2 (50): J1 is the head.
#  * rank by the run time: J2 (5) < J1 (20) < J3 (30): J2 is the head.
#  * reserve by the request: J0 ends at 100 for the scheduler: shadow 100, J3 ends by
#    1 + 40 = 41 <= 100 and backfills at t=1 (it runs to 31, keeping 1 proc).
#  * reserve by the run time: shadow 10 (J0's real end); J3 (1 + 30 > 10, no extra
#    processor at the shadow) waits.
# request/request (EASY): J3 backfills at 1; J1 waits for J3's end: 31 (to 51); J2 at 51.
# actual/actual (EASY-AR): J2 starts at 10 (J0 ends), J1 at 15, J3 at 35 (J1 ends).
# rank actual, reserve request: J3 backfills at 1; the head J2 starts at 31, J1 at 36.
HAND = make_wl([0, 1, 1, 1], [10, 20, 5, 30], [1, 2, 2, 1], [100, 30, 50, 40], m=2)
HAND_STARTS = {
    ("request", None): [0, 31, 51, 1],
    ("actual", None): [0, 15, 10, 35],
    ("request", "actual"): [0, 36, 31, 1],
    # rank by the request, reserve by the run time: J1 starts at 10 (J0 ends), then J3
    # (ranked 40 < 50) at 30 when J1 ends, J2 at 60 when J3 ends
    ("actual", "request"): [0, 10, 60, 30],
}


@pytest.mark.parametrize(("estimate", "rank"), list(HAND_STARTS))
def test_rank_and_reservation_hand_worked(estimate, rank):
    res = Simulation(HAND, policy="SJF", backfill="easy", estimate=estimate, rank_estimate=rank)
    out = res.run()
    np.testing.assert_array_equal(out.start, HAND_STARTS[(estimate, rank)])
    if rank is not None:
        assert out.config["rank_estimate"] == rank
    else:
        assert "rank_estimate" not in out.config


def test_rank_apart_differs_from_both_single_choices():
    starts = {k: tuple(v) for k, v in HAND_STARTS.items()}
    single = (starts[("request", None)], starts[("actual", None)])
    assert starts[("request", "actual")] not in single


def _random_wl(seed: int, n: int = 80, m: int = 16) -> Workload:
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 4000, n)).astype(float)
    runtime = rng.integers(1, 600, n).astype(float)
    request = runtime * rng.uniform(1.0, 5.0, n)
    return make_wl(submit, runtime, rng.integers(1, m + 1, n), request, m)


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("backfill", ["none", "easy", "sjbf", "conservative"])
def test_rank_equal_to_estimate_is_the_default(policy, backfill):
    """A separate ranking row holding the same values schedules exactly as one row."""
    wl = _random_wl(1)
    for est in ("request", "actual"):
        one = simulate(wl, policy, backfill, est)
        two = Simulation(wl, policy, backfill, est, rank_estimate=est).run()
        np.testing.assert_array_equal(one.start, two.start)
        assert one.metrics == {**two.metrics, "sim_seconds": one.metrics["sim_seconds"]}


def test_array_rank_is_a_static_priority_order():
    """SJF with an array of keys runs the jobs in the order of the keys."""
    n = 12
    rng = np.random.default_rng(7)
    runtime = rng.integers(1, 50, n).astype(float)
    wl = make_wl(np.zeros(n), runtime, np.ones(n, dtype=int), runtime * 2, m=1)
    keys = rng.permutation(n) + 1.0
    res = Simulation(wl, policy="SJF", backfill="none", rank_estimate=keys).run()
    assert np.argsort(res.start).tolist() == np.argsort(keys).tolist()
    # the keys are not capped at the request (they are not run times)
    big = keys * 1e6
    res2 = Simulation(wl, policy="SJF", backfill="none", rank_estimate=big).run()
    np.testing.assert_array_equal(res.start, res2.start)
    # and policy_order follows them
    sim = Simulation(wl, policy="SJF", backfill="none", rank_estimate=keys)
    assert sim.rank_estimates.tolist() == keys.tolist()
    assert sim.view.rank_estimate.tolist() == keys.tolist()
    np.testing.assert_array_equal(sim.estimates, wl.request)


def test_array_rank_rejects_bad_keys():
    wl = _random_wl(2, n=5)
    with pytest.raises(ValueError, match="positive and finite.*job 1"):
        Simulation(wl, rank_estimate=np.array([1.0, 0.0, 2.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match="shape"):
        Simulation(wl, rank_estimate=np.ones(4))


class Half(Estimator):
    """An online estimator: half the request."""

    name = "half"
    online = True

    def predict(self, job: int, view: SystemView) -> float:
        return float(self.workload.request[job]) / 2


def test_online_rank_estimator_feeds_the_rank_row_only():
    wl = _random_wl(3)
    sim = Simulation(wl, policy="SAF", backfill="easy", estimate="request", rank_estimate=Half())
    res = sim.run()
    np.testing.assert_allclose(sim.rank_estimates, np.maximum(wl.request / 2, 1))
    np.testing.assert_array_equal(sim.estimates, wl.request)
    # ranking by half the request is ranking by the request: the same schedule
    ref = simulate(wl, "SAF", "easy", "request")
    np.testing.assert_array_equal(res.start, ref.start)


def test_snapshot_and_clone_keep_the_rank_estimator():
    wl = _random_wl(4)
    sim = Simulation(wl, policy="SJF", backfill="easy", rank_estimate=Half())
    sim.advance(until=float(wl.submit[40]))
    snap = sim.snapshot()
    twin = sim.clone()
    end = sim.run()
    np.testing.assert_array_equal(twin.run().start, end.start)
    sim.restore(snap)
    np.testing.assert_array_equal(sim.run().start, end.start)


def test_switch_rank_estimate():
    wl = _random_wl(5)
    a = Simulation(wl, policy="SJF", backfill="easy")
    a.switch(rank_estimate="actual")
    b = Simulation(wl, policy="SJF", backfill="easy", rank_estimate="actual")
    np.testing.assert_array_equal(a.run().start, b.run().start)


def test_scheduler_spec_rank_estimate():
    sp = get_scheduler("SJF+EASY,rank_estimate=actual")
    assert sp.rank_estimate == "actual"
    res = sp.simulate(HAND)
    np.testing.assert_array_equal(res.start, HAND_STARTS[("request", "actual")])
    kv = get_scheduler("policy=SJF,backfill=easy,estimate=request,rank=actual")
    assert kv.rank_estimate == "actual" and "rank" in kv.name
    np.testing.assert_array_equal(kv.simulate(HAND).start, res.start)
    # the same estimator for both is the plain scheduler
    same = get_scheduler("SJF+EASY,rank_estimate=request")
    np.testing.assert_array_equal(same.simulate(HAND).start, HAND_STARTS[("request", None)])


# ------------------------------------------------------------------------- envs
def _play_row0(env, seed: int = 0) -> dict:
    _, info = env.reset(seed=seed)
    while True:
        _, _, term, trunc, info = env.step(0)
        if term or trunc:
            return info


def test_schedule_env_ranks_its_rows_by_the_rank_estimator():
    """Row 0 of Schedule-v0 is the order's choice under the ranking estimate: always
    playing it is the scheduler that ranks the same way (the reference, here)."""
    from hpcgym.envs.schedule_env import ScheduleEnv

    kw = dict(trace=None, window_length=96, order="SJF", max_queue=32)
    env = ScheduleEnv(rank_estimator="actual", reference="SJF+EASY-SJBF,rank=actual", **kw)
    info = _play_row0(env)
    assert env._sim.config["rank_estimate"] == "actual"
    np.testing.assert_array_equal(env._sim.rank_estimates, env._sim.workload.runtime)
    assert info["agent"]["avg_bsld"] == pytest.approx(info["reference"]["avg_bsld"], rel=1e-12)
    plain = ScheduleEnv(reference="SJF+EASY-SJBF", **kw)
    assert _play_row0(plain)["agent"]["avg_bsld"] != info["agent"]["avg_bsld"]


def test_envs_check_the_rank_estimator():
    from hpcgym.envs.backfill_env import BackfillEnv

    env = BackfillEnv(trace=None, window_length=32, policy="SJF", rank_estimator="AR")
    assert env.rank_estimator == "actual" and env._spec.ranks_apart
    assert (
        BackfillEnv(trace=None, window_length=32, rank_estimator="request").rank_estimator is None
    )
    with pytest.raises(TypeError, match="rank_estimator must be a name"):
        BackfillEnv(trace=None, window_length=32, rank_estimator=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no-such"):
        BackfillEnv(trace=None, window_length=32, rank_estimator="no-such")


def test_compiled_batch_steps_a_rank_estimator():
    """The compiled batch step of Schedule-v0 with a ranking estimate equals the Python
    step (resets and the reference's end run in Python: one estimate row is compiled)."""
    from hpcgym.envs.vector import ScheduleVectorEnv

    kw = dict(
        trace=None,
        window_length=48,
        order="SAF",
        max_queue=16,
        rank_estimator="actual",
        reference="SAF+EASY-SJBF,rank=actual",
    )
    fast, slow = (
        ScheduleVectorEnv(2, compiled=True, **kw),
        ScheduleVectorEnv(2, compiled=False, **kw),
    )
    o1, i1 = fast.reset(seed=3)
    o2, _ = slow.reset(seed=3)
    assert fast.compiled and not fast.batch.reset_on
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(0)
    for _ in range(150):
        a = np.array([rng.choice(np.flatnonzero(m)) for m in i1["action_mask"]])
        r1, r2 = fast.step(a), slow.step(a)
        for x, y in zip(r1[:4], r2[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        i1 = r1[4]
