"""Tests of the reference scheduler (tests/oracle.py) on its own.

* it reproduces every hand-worked case of tests/hand_cases.py (start times and the
  backfilled flags);
* invariants on random workloads, for every policy x backfill mode x estimate kind:
  capacity never exceeded, no start before submit, every job starts, every start is an
  event time, no backfilling without a backfill mode, SQF+EASY/SJBF never backfills
  (Carastan-Santos, Proposition 1), FCFS without backfilling starts in submit order;
* equivalences of the options, input validation and the AVEbsld formula.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.hand_cases import CASES, HandCase, case_inputs
from tests.oracle import BACKFILLS, ESTIMATES, POLICIES, oracle_avebsld, oracle_simulate


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hand_case(case: HandCase) -> None:
    out = oracle_simulate(**case_inputs(case))
    np.testing.assert_array_equal(out["start"], np.array(case.start, dtype=np.float64))
    assert tuple(np.flatnonzero(out["backfilled"]).tolist()) == case.backfilled


def test_hand_cases_cover_the_spec() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert {c.policy for c in CASES} == set(POLICIES)
    assert {c.backfill for c in CASES} == set(BACKFILLS)
    assert {c.estimate for c in CASES} == set(ESTIMATES)
    assert any(c.starvation is not None for c in CASES)
    assert any(len(c.jobs[0]) == 5 for c in CASES)  # explicit est column
    for c in CASES:
        assert len(c.start) == len(c.jobs), c.name
        assert all(c.start[j] >= c.jobs[j][0] for j in range(len(c.jobs))), c.name


def random_workload(
    rng: np.random.Generator, n: int, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Small random jobs with coarse integer times, so that ties and simultaneous events
    are frequent."""
    submit = np.sort(rng.integers(0, 8 * n, size=n)).astype(np.float64)
    runtime = rng.integers(1, 60, size=n).astype(np.float64)
    procs = rng.integers(1, m + 1, size=n)
    small = rng.random(n) < 0.5
    procs[small] = rng.integers(1, max(2, m // 4), size=int(small.sum()))
    request = runtime + rng.integers(0, 3, size=n) * rng.integers(0, 60, size=n)
    return submit, runtime, procs, request.astype(np.float64)


def check_invariants(
    submit: np.ndarray, runtime: np.ndarray, procs: np.ndarray, m: int, out: dict
) -> None:
    start = out["start"]
    assert start.shape == submit.shape and np.all(np.isfinite(start))
    assert np.all(start >= submit), "a job started before its submission"
    # processors in use, swept over start/end events (ends before starts at equal times)
    times = np.concatenate([start, start + runtime])
    delta = np.concatenate([procs, -procs])
    order = np.lexsort((delta, times))
    assert np.cumsum(delta[order]).max() <= m, "more than m processors in use"
    # every start happens at an event: some job's submit or some job's completion
    events = set(submit.tolist()) | set((start + runtime).tolist())
    assert set(start.tolist()) <= events


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("backfill", BACKFILLS)
def test_invariants_random(policy: str, backfill: str) -> None:
    rng = np.random.default_rng([7, POLICIES.index(policy), BACKFILLS.index(backfill)])
    for _ in range(3):
        m = int(rng.integers(4, 17))
        submit, runtime, procs, request = random_workload(rng, 40, m)
        for estimate in ESTIMATES:
            starv = None if rng.random() < 0.5 else float(rng.integers(0, 200))
            out = oracle_simulate(
                submit, runtime, procs, request, m, policy, backfill, estimate, starv
            )
            check_invariants(submit, runtime, procs, m, out)
            if backfill == "none":
                assert not out["backfilled"].any()
            if policy == "SQF" and backfill in ("easy", "sjbf") and starv is None:
                assert not out["backfilled"].any(), "Proposition 1: SQF+EASY backfills nothing"
            if policy == "FCFS" and backfill == "none":
                assert np.all(np.diff(out["start"]) >= 0), "FCFS must start in submit order"


def test_backfilling_happens_on_random_workloads() -> None:
    # guards the invariant test above against vacuous workloads
    rng = np.random.default_rng(11)
    submit, runtime, procs, request = random_workload(rng, 60, 8)
    for backfill in ("easy", "sjbf", "conservative"):
        out = oracle_simulate(submit, runtime, procs, request, 8, "FCFS", backfill)
        assert out["backfilled"].any(), backfill
        none = oracle_simulate(submit, runtime, procs, request, 8, "FCFS", "none")
        assert np.mean(out["start"] - submit) < np.mean(none["start"] - submit), backfill


def test_estimate_kinds_equal_explicit_est() -> None:
    rng = np.random.default_rng(3)
    submit, runtime, procs, request = random_workload(rng, 50, 10)
    for backfill in ("easy", "conservative"):
        for estimate, col in (("request", request), ("actual", runtime)):
            a = oracle_simulate(submit, runtime, procs, request, 10, "SAF", backfill, estimate)
            b = oracle_simulate(
                submit, runtime, procs, request, 10, "SAF", backfill, "request", est=col
            )
            np.testing.assert_array_equal(a["start"], b["start"])
            np.testing.assert_array_equal(a["backfilled"], b["backfilled"])


def test_starvation_threshold_limits() -> None:
    rng = np.random.default_rng(5)
    submit, runtime, procs, request = random_workload(rng, 50, 10)
    plain = oracle_simulate(submit, runtime, procs, request, 10, "LJF", "easy")
    huge = oracle_simulate(submit, runtime, procs, request, 10, "LJF", "easy", starvation=1e18)
    np.testing.assert_array_equal(plain["start"], huge["start"])
    # threshold -1: every waiting job is starved at every pass -> FCFS order
    starved = oracle_simulate(submit, runtime, procs, request, 10, "LJF", "easy", starvation=-1)
    fcfs = oracle_simulate(submit, runtime, procs, request, 10, "FCFS", "easy")
    np.testing.assert_array_equal(starved["start"], fcfs["start"])
    assert not np.array_equal(plain["start"], fcfs["start"])


def test_conservative_equals_easy_for_a_single_waiting_job() -> None:
    # with one waiting job there is nothing to backfill: J2 needs all 3 processors, free
    # only when J0 ends at 30 (J1's end at 10 frees 1 of them)
    submit = [0, 0, 5]
    runtime = [30, 10, 10]
    procs = [2, 1, 3]
    for bf in ("easy", "conservative", "none"):
        out = oracle_simulate(submit, runtime, procs, runtime, 3, "FCFS", bf)
        np.testing.assert_array_equal(out["start"], [0, 0, 30])


def test_empty_and_single_job() -> None:
    out = oracle_simulate([], [], [], [], 4)
    assert out["start"].shape == (0,) and out["backfilled"].shape == (0,)
    out = oracle_simulate([123], [5], [4], [9], 4, "WFP3", "conservative")
    np.testing.assert_array_equal(out["start"], [123.0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policy": "SPF"}, "valid: FCFS"),
        ({"backfill": "EASY"}, "valid: none"),
        ({"estimate": "predicted"}, "valid: request"),
        ({"procs": [1, 5]}, "outside 1..m"),
        ({"runtime": [0, 1]}, "must be > 0"),
        ({"request": [1, 10]}, "estimate"),
        ({"est": [5, 1]}, "estimate"),
        ({"submit": [3, 1]}, "previous submit"),
        ({"request": [5]}, "same length"),
        ({"submit": [0, float("nan")]}, "non-finite"),
    ],
)
def test_invalid_input(kwargs: dict, match: str) -> None:
    args = {"submit": [0, 1], "runtime": [5, 5], "procs": [1, 2], "request": [5, 10], "m": 4}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        oracle_simulate(**args)


def test_avebsld() -> None:
    # job 0: wait 0, runtime 5 -> max(5/10, 1) = 1; job 1: wait 10, runtime 20 -> 30/20
    assert oracle_avebsld([0, 0], [5, 20], [0, 10]) == pytest.approx(1.25)
    # job 2: wait 95, runtime 5 -> 100/10 = 10
    assert oracle_avebsld([0, 0, 5], [5, 20, 5], [0, 10, 100]) == pytest.approx(12.5 / 3)
    with pytest.raises(ValueError):
        oracle_avebsld([], [], [])


# Each mutant is a one-line misreading of the rules, applied to the oracle's source. Every
# one must change the outcome of at least one hand case: this keeps the hand cases sharp
# enough to catch the same misreadings in the engine.
MUTANTS: dict[str, tuple[str, str]] = {
    "extra consumed by first-clause starts": (
        "            if t + E[c] <= shadow:\n                begin(c, t, True)",
        "            if t + E[c] <= shadow:\n                extra -= N[c]\n"
        "                begin(c, t, True)",
    ),
    "equal estimated ends added one by one": (
        "            while k < len(ends) and ends[k][0] == tk:",
        "            for _ in range(1):",
    ),
    "shadow bound strict": ("if t + E[c] <= shadow:", "if t + E[c] < shadow:"),
    "shadow from actual runtimes": (
        "ends = sorted((start[j] + E[j], j)",
        "ends = sorted((start[j] + R[j], j)",
    ),
    "backfill test with actual runtime": ("if t + E[c] <= shadow:", "if t + R[c] <= shadow:"),
    "EASY backfills in SJBF order": ('if backfill == "sjbf":', "if True:"),
    "SJBF ties not by submit": (
        "candidates.sort(key=lambda j: (E[j], S[j], j))",
        "candidates.sort(key=lambda j: E[j])",
    ),
    "keys from actual runtime": ("N[j], E[j], t), S[j], j", "N[j], R[j], t), S[j], j"),
    "dynamic keys frozen at submit": (
        "policy_key(policy, S[j], N[j], E[j], t)",
        "policy_key(policy, S[j], N[j], E[j], S[j] if policy in ('WFP3', 'UNICEF') else t)",
    ),
    "starvation threshold >=": ("t - S[j] > starvation", "t - S[j] >= starvation"),
    "starved jobs by key": (
        "starved.sort(key=lambda j: (S[j], j))",
        "starved.sort(key=lambda j: (policy_key(policy, S[j], N[j], E[j], t), S[j], j))",
    ),
    "pass between completions and arrivals": (
        "        # ... then arrivals ...\n",
        "        (conservative_pass if backfill == 'conservative' else easy_pass)(t)\n",
    ),
    "SQF as FCFS": (
        'if policy == "SQF":\n        return n',
        'if policy == "SQF":\n        return s',
    ),
    "SAF as SJF": (
        'if policy == "SAF":\n        return r * n',
        'if policy == "SAF":\n        return r',
    ),
    "LJF as FCFS": (
        'if policy == "LJF":\n        return -r',
        'if policy == "LJF":\n        return s',
    ),
    "LQF as FCFS": (
        'if policy == "LQF":\n        return -n',
        'if policy == "LQF":\n        return s',
    ),
    "LAF as LJF": (
        'if policy == "LAF":\n        return -r * n',
        'if policy == "LAF":\n        return -r',
    ),
    "WFP3 squared": ("-((w / r) ** 3) * n", "-((w / r) ** 2) * n"),
    "UNICEF log2(n) unclamped": ("math.log2(max(n, 2))", "max(math.log2(n), 1e-9)"),
    "F1-F4 submit not clamped": ("    sc = max(s, 1)", "    sc = s if s > 0 else 1e-300"),
    "F1 weight 87": ("870 * math.log10(sc)", "87 * math.log10(sc)"),
    "F1 weight 8700": ("870 * math.log10(sc)", "8700 * math.log10(sc)"),
    "F1 natural log": ("870 * math.log10(sc)", "870 * math.log(sc)"),
    "F2 r instead of sqrt(r)": ("math.sqrt(rc) * n + 25600", "rc * n + 25600"),
    "F2 weight 2560": ("25600 * math.log10(sc)", "2560 * math.log10(sc)"),
    "F2 weight 256000": ("25600 * math.log10(sc)", "256000 * math.log10(sc)"),
    "F3 weight 6.76e6": ("6.86e6 * math.log10(sc)", "6.76e6 * math.log10(sc)"),
    "F3 weight 6.96e6": ("6.86e6 * math.log10(sc)", "6.96e6 * math.log10(sc)"),
    "F4 n instead of sqrt(n)": ("rc * math.sqrt(n) + 5.3e5", "rc * n + 5.3e5"),
    "F4 weight 5.2e5": ("5.3e5 * math.log10(sc)", "5.2e5 * math.log10(sc)"),
    "F4 weight 5.45e5": ("5.3e5 * math.log10(sc)", "5.45e5 * math.log10(sc)"),
    "conservative protects only the first reservation": (
        "            busy.append((tau, tau + E[j], N[j]))",
        "            if all_started or tau == t:\n"
        "                busy.append((tau, tau + E[j], N[j]))",
    ),
    "conservative closed intervals": ("if b <= y < e", "if b <= y <= e"),
    "conservative checks only the start instant": (
        "[b for (b, _, _) in busy if x < b < x + d]",
        "[]",
    ),
    "conservative profile from actual runtimes": (
        "busy = [(start[j], start[j] + E[j], N[j]) for j in running]",
        "busy = [(start[j], start[j] + R[j], N[j]) for j in running]",
    ),
    "conservative never flags backfilled": (
        "begin(j, t, not all_started)",
        "begin(j, t, False)",
    ),
}


@pytest.mark.parametrize("mutant", list(MUTANTS), ids=list(MUTANTS))
def test_hand_cases_kill_mutant(mutant: str) -> None:
    import tests.oracle as oracle_module

    old, new = MUTANTS[mutant]
    src = Path(oracle_module.__file__).read_text(encoding="utf-8")
    assert src.count(old) == 1, f"mutation anchor not found once in oracle.py: {old!r}"
    namespace: dict = {"__name__": "oracle_mutant"}
    exec(compile(src.replace(old, new), f"<mutant {mutant}>", "exec"), namespace)
    killers = []
    for case in CASES:
        try:
            out = namespace["oracle_simulate"](**case_inputs(case))
        except Exception:  # a mutant that crashes on a hand case is killed too
            killers.append(case.name)
            continue
        bf = tuple(np.flatnonzero(out["backfilled"]).tolist())
        if out["start"].tolist() != [float(x) for x in case.start] or bf != case.backfilled:
            killers.append(case.name)
    assert killers, f"no hand case distinguishes the mutant {mutant!r}"
