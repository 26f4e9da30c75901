"""Small scheduling scenarios whose start times were worked out BY HAND.

Each :class:`HandCase` lists its jobs as ``(submit, runtime, procs, request[, est])``
(in submit order; job ``Jk`` is the k-th tuple), the machine size, the policy, the
backfill mode, the estimate kind and the starvation threshold, and the EXPECTED start
time of every job plus the indices of the jobs expected to be started by backfilling.
The comment above each case is the hand derivation from the rules in the docstring of
``tests/oracle.py`` ("free" = idle processors, "shadow"/"extra" = the blocked head's
reservation, "bf" = backfilled). Data only: the tests feed these cases to the oracle
(tests/test_oracle.py) and to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HandCase", "CASES", "case_inputs"]


@dataclass(frozen=True)
class HandCase:
    """One hand-worked scenario.

    :param name: unique identifier (used as the pytest id)
    :param jobs: ``(submit, runtime, procs, request)`` or ``(..., est)`` per job; either
        every job has an ``est`` or none has
    :param m: machine size
    :param policy: queue policy name
    :param backfill: ``"none"``, ``"easy"``, ``"sjbf"`` or ``"conservative"``
    :param estimate: ``"request"`` or ``"actual"`` (ignored when the jobs carry ``est``)
    :param starvation: starvation threshold in seconds, or None
    :param start: expected start time of every job
    :param backfilled: indices of the jobs expected to be started by backfilling
    """

    name: str
    jobs: tuple[tuple[float, ...], ...]
    m: int
    policy: str
    backfill: str
    estimate: str
    starvation: float | None
    start: tuple[float, ...]
    backfilled: tuple[int, ...]


def case_inputs(case: HandCase) -> dict[str, Any]:
    """Keyword arguments of ``oracle_simulate`` (and of the engine cross-check) for a case."""
    if any(len(j) != len(case.jobs[0]) for j in case.jobs):
        raise ValueError(f"case {case.name}: every job must have the same number of fields")
    cols = list(zip(*case.jobs, strict=True))
    has_est = len(case.jobs[0]) == 5
    return {
        "submit": np.array(cols[0], dtype=np.float64),
        "runtime": np.array(cols[1], dtype=np.float64),
        "procs": np.array(cols[2], dtype=np.int64),
        "request": np.array(cols[3], dtype=np.float64),
        "m": case.m,
        "policy": case.policy,
        "backfill": case.backfill,
        "estimate": case.estimate,
        "starvation": case.starvation,
        "est": np.array(cols[4], dtype=np.float64) if has_est else None,
    }


# One job tuple per line would make this list four times longer; keep it compact.
# fmt: off
CASES: list[HandCase] = [
    # t=0 J0,J1 start (free 0). t=1 J2 (3p) waits; t=2 J3 waits behind it (no backfill,
    # although J3 would fit at t=5 when J1 ends and frees 2). t=10 J0 ends: free 4, J2
    # starts (free 1), then J3 (free 0).
    HandCase(
        "fcfs_none_head_of_line",
        ((0, 10, 2, 10), (0, 5, 2, 5), (1, 3, 3, 3), (2, 2, 1, 2)),
        4, "FCFS", "none", "request", None,
        (0, 0, 10, 10), (),
    ),
    # Request estimates. t=0 J0 starts (free 1, est end 20). t=1 J1 (4p) blocked:
    # shadow 20, extra 0. t=2 J2: 2+15=17<=20 -> bf (free 0; actually ends 6). t=3 J3:
    # free 0. t=6 J2 ends (free 1): J3 6+5=11<=20 -> bf. t=10 J0 ends (free 3) J1 still
    # blocked (shadow = J3's est end 11). t=11 J3 ends, J1 starts.
    HandCase(
        "fcfs_easy_request",
        ((0, 10, 3, 20), (1, 5, 4, 5), (2, 4, 1, 15), (3, 5, 1, 5)),
        4, "FCFS", "easy", "request", None,
        (0, 11, 2, 6), (2, 3),
    ),
    # Same jobs, est = actual runtime. t=1 shadow 10, extra 0. t=2 J2: 2+4=6<=10 -> bf.
    # t=6 J2 ends (free 1): J3 6+5=11>10 and 1>extra 0 -> no. t=10 J0 ends: J1 starts
    # (free 0); J3 now head, waits for J1's end 15.
    HandCase(
        "fcfs_easy_actual",
        ((0, 10, 3, 20), (1, 5, 4, 5), (2, 4, 1, 15), (3, 5, 1, 5)),
        4, "FCFS", "easy", "actual", None,
        (0, 10, 2, 15), (2,),
    ),
    # Extra-processors clause. t=0 J0 (6p) starts, free 4. t=1 J1 (8p) blocked: at 100
    # 4+6=10 -> shadow 100, extra 2. t=2 J2 (2p, ends 202>100) fits in extra -> bf,
    # extra 0, free 2. t=3 (new pass, extra recomputed: at 100 2+6=8 -> extra 0) J3
    # 3+200>100 and 1>0 -> no. t=4 J4 4+50=54<=100 -> bf (free 0). t=54 J4 ends, J3
    # still no. t=100 J1 starts (free 0); J3 head, shadow 110. t=110 J3 starts.
    HandCase(
        "fcfs_easy_extra_clause",
        ((0, 100, 6, 100), (1, 10, 8, 10), (2, 200, 2, 200), (3, 200, 1, 200), (4, 50, 2, 50)),
        10, "FCFS", "easy", "request", None,
        (0, 100, 2, 110, 4), (2, 4),
    ),
    # Extra shared by several same-submit jobs in ONE pass. t=1 J1 (8p) blocked, free 5,
    # shadow 100 (5+5), extra 2. J2 (1p, long) via extra -> extra 1; J3 -> extra 0; J4:
    # 1>0 -> no (ties at submit 1 broken by position). t=100 J0 ends: free 8, J1 starts;
    # J4 head, shadow 110 (J1's end). t=110 J4 starts.
    HandCase(
        "fcfs_easy_extra_consumed_same_submit",
        ((0, 100, 5, 100), (1, 10, 8, 10), (1, 500, 1, 500), (1, 500, 1, 500), (1, 500, 1, 500)),
        10, "FCFS", "easy", "request", None,
        (0, 100, 1, 1, 110), (2, 3),
    ),
    # A job admitted by the FIRST clause does not consume extra. t=1 shadow 100, extra 2,
    # free 5. J2 1+50=51<=100 -> bf (free 3, extra stays 2). J3 (2p, long) -> bf via
    # extra (free 1, extra 0). J4 (1p, long): 1>0 -> no. t=51 J2 ends: shadow 100 (3+5=8),
    # extra 0 -> J4 no. t=100 J1 starts; t=110 J4 starts.
    HandCase(
        "fcfs_easy_first_clause_keeps_extra",
        ((0, 100, 5, 100), (1, 10, 8, 10), (1, 50, 2, 50), (1, 500, 2, 500), (1, 500, 1, 500)),
        10, "FCFS", "easy", "request", None,
        (0, 100, 1, 1, 110), (2, 3),
    ),
    # Equal estimated ends at the shadow. t=0 J0,J1,J2 start (free 2). t=1 J3 (4p)
    # blocked: J0 and J1 both end at 50 and are added together: 2+3+3=8 -> shadow 50,
    # extra 4 (adding J0 alone would give extra 1). J4 (2p, ends 501) via extra -> bf.
    # t=50 J0,J1 end: free 6, J3 starts.
    HandCase(
        "fcfs_easy_equal_estimated_ends",
        ((0, 50, 3, 50), (0, 50, 3, 50), (0, 100, 4, 100), (1, 10, 4, 10), (1, 500, 2, 500)),
        12, "FCFS", "easy", "request", None,
        (0, 0, 0, 50, 1), (4,),
    ),
    # Completion + arrival at t=10 handled together, FCFS: J1 (waiting since 1) starts
    # at 10, J2 waits for J1's end 110.
    HandCase(
        "fcfs_easy_completion_and_arrival",
        ((0, 10, 4, 10), (1, 100, 4, 100), (10, 5, 4, 5)),
        4, "FCFS", "easy", "request", None,
        (0, 10, 110), (),
    ),
    # Same jobs under SJF: at t=10 J0's completion AND J2's arrival are processed before
    # the single pass, so J2 (r=5) is ahead of J1 (r=100) and starts at 10; J1 at 15.
    HandCase(
        "sjf_easy_completion_and_arrival",
        ((0, 10, 4, 10), (1, 100, 4, 100), (10, 5, 4, 5)),
        4, "SJF", "easy", "request", None,
        (0, 15, 10), (),
    ),
    # Completion + arrival, the arrival backfills at once. t=1 J2 (4p) blocked, shadow 100
    # (J0 at 10 gives 2, J1 at 100 gives 4), extra 0. t=10 J0 ends (free 2) and J3
    # arrives: 10+5=15<=100 -> bf. t=100 J2 starts.
    HandCase(
        "fcfs_easy_arrival_backfills_at_completion",
        ((0, 10, 2, 10), (0, 100, 2, 100), (1, 50, 4, 50), (10, 5, 2, 5)),
        4, "FCFS", "easy", "request", None,
        (0, 0, 100, 10), (3,),
    ),
    # SJF equal keys (all requests 7): order by submit, then position. t=10 J1 (s=1)
    # starts, ends 15; t=15 J2 (s=2, before J3 by position), ends 20; t=20 J3.
    HandCase(
        "sjf_ties_request",
        ((0, 10, 2, 10), (1, 5, 2, 7), (2, 5, 2, 7), (2, 4, 2, 7)),
        2, "SJF", "easy", "request", None,
        (0, 10, 15, 20), (),
    ),
    # Same, est = actual: keys 5,5,4. t=10 J3 (4) starts, ends 14; t=14 J1 (5, s=1)
    # before J2 (5, s=2), ends 19; t=19 J2.
    HandCase(
        "sjf_ties_actual",
        ((0, 10, 2, 10), (1, 5, 2, 7), (2, 5, 2, 7), (2, 4, 2, 7)),
        2, "SJF", "easy", "actual", None,
        (0, 14, 19, 10), (),
    ),
    # SQF, no backfill. t=10: order J3(1p), J2(2p), J1(3p): J3 (free 3), J2 (free 1),
    # J1 blocked. t=20 J2,J3 end together: J1 starts.
    HandCase(
        "sqf_none",
        ((0, 10, 4, 10), (1, 10, 3, 10), (2, 10, 2, 10), (3, 10, 1, 10)),
        4, "SQF", "none", "request", None,
        (0, 20, 10, 10), (),
    ),
    # Carastan-Santos Proposition 1: SQF + EASY backfills nothing (a job that fits while
    # the smallest head does not cannot exist). t=0 J0 (6p) free 2. t=4 order J4(2),J2(3),
    # J1(4),J3(5),J5(8): J4 starts as HEAD (free 0). t=9 J4 ends. t=50 J0 ends (free 8):
    # J2 (free 5), J1 (free 1); J3 (5p) blocked. t=60 J2 ends (free 4) J3 still blocked.
    # t=70 J1 ends: J3 starts (free 3). t=170 J3 ends: J5 starts.
    HandCase(
        "sqf_easy_prop1_no_backfill",
        ((0, 50, 6, 60), (1, 20, 4, 30), (2, 10, 3, 10), (3, 100, 5, 100), (4, 5, 2, 5),
         (4, 30, 8, 40)),
        8, "SQF", "easy", "request", None,
        (0, 50, 50, 70, 4, 170), (),
    ),
    # Same jobs FCFS+EASY (contrast): t=1 J1 blocked, shadow 60, extra 4. t=4 J4
    # 4+5=9<=60 -> bf (free 0). t=50 J1 (free 4), J2 (free 1) start; J3 blocked: est ends
    # J2 60 (1+3=4<5), J1 80 -> shadow 80, extra 3; J5 8>1. t=70 J3 starts; t=170 J5.
    HandCase(
        "fcfs_easy_prop1_contrast",
        ((0, 50, 6, 60), (1, 20, 4, 30), (2, 10, 3, 10), (3, 100, 5, 100), (4, 5, 2, 5),
         (4, 30, 8, 40)),
        8, "FCFS", "easy", "request", None,
        (0, 50, 50, 70, 4, 170), (4,),
    ),
    # SAF (r*n), no backfill. t=10 order J3 (6), J2 (8), J1 (10): J3 starts (free 2), J2
    # (4p) blocked, J1 waits although it fits. t=13 J2 starts (free 0), t=15 J1.
    HandCase(
        "saf_none",
        ((0, 10, 4, 10), (1, 10, 1, 10), (2, 2, 4, 2), (3, 3, 2, 3)),
        4, "SAF", "none", "request", None,
        (0, 15, 13, 10), (),
    ),
    # LJF (-r). t=10 order J2 (-20), J3 (-10), J1 (-5): J2 starts (free 2), J3 (4p)
    # blocked: shadow 30, extra 0; J1 10+5=15<=30 -> bf. t=30 J3 starts.
    HandCase(
        "ljf_easy",
        ((0, 10, 4, 10), (1, 5, 2, 5), (2, 20, 2, 20), (3, 10, 4, 10)),
        4, "LJF", "easy", "request", None,
        (0, 10, 10, 30), (1,),
    ),
    # LQF (-n), no backfill. t=10 order J3 (5p) starts (free 1); J2 (3p) blocked. t=20
    # J3 ends: J2 (free 3), J4 (free 1), J1 (free 0) all start.
    HandCase(
        "lqf_none",
        ((0, 10, 6, 10), (1, 10, 1, 10), (2, 10, 3, 10), (3, 10, 5, 10), (4, 10, 2, 10)),
        6, "LQF", "none", "request", None,
        (0, 20, 20, 10, 20), (),
    ),
    # LQF + EASY. t=0 J1 (8p) then J0 (2p) start (free 0). t=1 J2 (10p) blocked: J0 at 10
    # gives 2, J1 at 100 gives 10 -> shadow 100, extra 0. t=10 J0 ends (free 2); backfill
    # in LQF order: J4 (2p) 10+30<=100 -> bf (free 0); J3 no. t=40 J4 ends: J3 -> bf.
    # t=100 J2 starts.
    HandCase(
        "lqf_easy",
        ((0, 10, 2, 10), (0, 100, 8, 100), (1, 50, 10, 50), (2, 30, 1, 30), (3, 30, 2, 30)),
        10, "LQF", "easy", "request", None,
        (0, 0, 100, 40, 10), (3, 4),
    ),
    # Same with SJBF: at t=10 the backfill order is (est, submit): J3 (30, s=2) before J4
    # (30, s=3) -- equal estimates, unlike the LQF order. J3 -> bf (free 1); J4 (2p) no.
    # t=40 J3 ends: J4 40+30<=100 -> bf. t=100 J2.
    HandCase(
        "lqf_sjbf_equal_estimates",
        ((0, 10, 2, 10), (0, 100, 8, 100), (1, 50, 10, 50), (2, 30, 1, 30), (3, 30, 2, 30)),
        10, "LQF", "sjbf", "request", None,
        (0, 0, 100, 10, 40), (3, 4),
    ),
    # LAF (-r*n) with est = actual: J2 (-60) before J1 (-40). t=10 J2 starts (free 3),
    # J1 (4p) blocked until J2 ends at 30.
    HandCase(
        "laf_easy_actual",
        ((0, 10, 6, 10), (1, 10, 4, 100), (2, 20, 3, 20)),
        6, "LAF", "easy", "actual", None,
        (0, 30, 10), (),
    ),
    # Same with est = request: J1 (-400) before J2 (-60). t=10 J1 starts (free 2, est end
    # 110), J2 (3p) blocked. t=20 J1 actually ends: J2 starts.
    HandCase(
        "laf_easy_request",
        ((0, 10, 6, 10), (1, 10, 4, 100), (2, 20, 3, 20)),
        6, "LAF", "easy", "request", None,
        (0, 10, 20), (),
    ),
    # LAF orders by area, not length: t=10 J1 (-10*8=-80) before J2 (-20*2=-40): J1 starts
    # (free 0); t=20 J2. (LJF would start J2 first.)
    HandCase(
        "laf_none_area_not_length",
        ((0, 10, 8, 10), (1, 10, 8, 10), (2, 20, 2, 20)),
        8, "LAF", "none", "request", None,
        (0, 10, 20), (),
    ),
    # WFP3 keys are recomputed at each pass. t=0 J0,J1 both key -0 -> position: J0. At
    # t=60: J1 -(60/100)^3*4=-0.864, J2 -(10/10)^3*4=-4 -> J2 starts at 60 (keys frozen
    # at arrival, both 0, would have picked J1). t=70 J1 starts.
    HandCase(
        "wfp3_none_dynamic",
        ((0, 60, 4, 60), (0, 100, 4, 100), (50, 10, 4, 10)),
        4, "WFP3", "none", "request", None,
        (0, 70, 60), (),
    ),
    # WFP3 + EASY. t=10 J1 (4p) blocked, shadow 100, extra 0. t=20 keys J1 -(10/50)^3*4
    # =-0.032, J2 0: J1 still head; J2 20+60=80<=100 -> bf. t=100 J1 starts.
    HandCase(
        "wfp3_easy",
        ((0, 100, 3, 100), (10, 50, 4, 50), (20, 30, 1, 60)),
        4, "WFP3", "easy", "request", None,
        (0, 100, 20), (2,),
    ),
    # WFP3 exponent + EASY shadow boundary. t=100 (J0 ends, J3 arrives): J1 -(60/30)^3*1
    # =-8, J2 -(20/20)^3*6=-6, J3 0 (a square would put J2 first). J1 starts (free 5);
    # J2 (6p) blocked, shadow = J1's end 130, extra 0; J3 100+30=130<=130 -> bf (the
    # bound is inclusive). t=130 J1,J3 end: J2 starts.
    HandCase(
        "wfp3_easy_cube_and_shadow_boundary",
        ((0, 100, 6, 100), (40, 30, 1, 30), (80, 20, 6, 20), (100, 30, 5, 30)),
        6, "WFP3", "easy", "request", None,
        (0, 100, 130, 100), (3,),
    ),
    # UNICEF -w/(log2(max(n,2))*r). t=0 tie (w=0) -> J0. t=100: J1 -100/(3*50)=-0.667,
    # J2 -90/(1*100)=-0.9, J3 -80/(2*20)=-2 -> J3 (free 4), J2 (free 3), J1 (8p) blocked.
    # t=200 J2 ends: J1 starts.
    HandCase(
        "unicef_none",
        ((0, 100, 8, 100), (0, 50, 8, 50), (10, 100, 1, 100), (20, 20, 4, 20)),
        8, "UNICEF", "none", "request", None,
        (0, 200, 100, 100), (),
    ),
    # UNICEF clamps log2(n) at n=2: a 1-processor job is not favoured. t=0 all w=0 (keys
    # -0, tie) -> J0 by position. t=10: J1 -10/(log2(2)*100)=-0.1, J2 -10/(1*10)=-1 -> J2
    # starts (free 0); t=20 J1. (log2(1)=0 would make J1's key -inf and start it first.)
    HandCase(
        "unicef_none_single_processor_clamp",
        ((0, 10, 2, 10), (0, 100, 1, 100), (0, 10, 2, 10)),
        2, "UNICEF", "none", "request", None,
        (0, 20, 10), (),
    ),
    # UNICEF + conservative, exactly equal keys. t=10 (J0 ends): keys J1 -10/(1*40),
    # J2 -5/(2*10), J3 -5/(1*20), all -0.25 -> by submit, then position: J1, J2, J3.
    # J1 starts (free 2, busy to 50); J2 (4p) reserved at 50; J3 (2p, [10,30)) fits
    # before -> starts, bf. t=50 J2 starts.
    HandCase(
        "unicef_conservative_equal_keys",
        ((0, 10, 4, 10), (0, 40, 2, 40), (5, 10, 4, 10), (5, 20, 2, 20)),
        4, "UNICEF", "conservative", "request", None,
        (0, 10, 50, 10), (3,),
    ),
    # F1 log10(r)*n + 870*log10(s), r and s clamped at 1. Keys: J0 8+0, J1 3+0, J2 4+0
    # (s=1), J3 4+0 (tie with J2 -> position), J4 2+870. t=0 J1 starts before J0 (an
    # unclamped log10(0) would put J0 first), free 3, J0 blocked. t=1 J2 (2p) starts
    # (free 1), J3 blocked. t=1000 J1 ends (free 4, J2 ended at 101): J3 starts; t=1010
    # J0; t=1110 J4.
    HandCase(
        "f1_none_clamped_submit",
        ((0, 100, 4, 100), (0, 1000, 1, 1000), (1, 100, 2, 100), (1, 10, 4, 10),
         (10, 10, 2, 10)),
        4, "F1", "none", "request", None,
        (1010, 0, 1, 1000, 1110), (),
    ),
    # F1 with large trace-second submits: 870*log10(s) differs by ~0.004 per 10 s, so
    # the r-term dominates: J2 2+5220.0076, J3 8+5220.0076, J1 12+5220.0038. t=1000100
    # J2 starts (free 2), J3 (4p) blocked (shadow 1000110, extra 0), J1 (4p) no.
    # 1000110 J3, 1000210 J1.
    HandCase(
        "f1_easy_large_submit",
        ((1000000, 100, 4, 100), (1000010, 1000, 4, 1000), (1000020, 10, 2, 10),
         (1000020, 100, 4, 100)),
        4, "F1", "easy", "request", None,
        (1000000, 1000210, 1000100, 1000110), (),
    ),
    # F1 submit weight, bracketed from both sides. Keys: J1 5*170+0=850, J2 1*40+870=910,
    # J3 5*176+870=1750, J4 0*200+870*2=1740. t=100 (J0 ends, J4 arrives): J1 starts
    # (free 30) -- needs weight > 810; J2 (40p) blocked. t=100100 J2 starts (free 160), J4
    # (200p) blocked. t=100110 J4 before J3 -- needs weight < 880; t=100111 J3.
    HandCase(
        "f1_submit_weight_bracket",
        ((0, 100, 200, 100), (1, 100000, 170, 100000), (10, 10, 40, 10),
         (10, 100000, 176, 100000), (100, 1, 200, 1)),
        200, "F1", "none", "request", None,
        (0, 100, 100100, 100111, 100110), (),
    ),
    # F2 sqrt(r)*n + 25600*log10(s): J1 20+25600, J2 4+25600, J3 20+51200. t=10 J2 head
    # blocked. t=100 J0 ends AND J3 arrives: J2 starts (free 0); J1 blocked (shadow 101).
    # t=101 J1 (free 3) and J3 (free 1) start.
    HandCase(
        "f2_easy_completion_and_arrival",
        ((0, 100, 4, 100), (10, 400, 1, 400), (10, 1, 4, 1), (100, 100, 2, 100)),
        4, "F2", "easy", "request", None,
        (0, 101, 100, 101), (),
    ),
    # F2 form and submit weight. Keys: J1 sqrt(40000)*125=25000, J2 5*80+25600=26000,
    # J3 400*65+25600=51600, J4 1*200+51200=51400. t=100: J1 starts (free 75) -- needs
    # weight > 24600 (with r instead of sqrt(r), J2 would go first); J2 (80p) blocked.
    # t=40100 J2 starts; J4 (200p) blocked. t=40125 J4 before J3 -- needs weight < 25800.
    # t=40126 J3.
    HandCase(
        "f2_sqrt_and_submit_weight",
        ((0, 100, 200, 100), (1, 40000, 125, 40000), (10, 25, 80, 25),
         (10, 160000, 65, 160000), (100, 1, 200, 1)),
        200, "F2", "none", "request", None,
        (0, 100, 40100, 40126, 40125), (),
    ),
    # F3 r*n + 6.86e6*log10(s): J1 100+0 (s=1), J2 20+6.86e6, J3 1000+6.86e6. t=100 J1
    # starts (free 2); J2 (4p) blocked, shadow 150, extra 0; J3 100+1000>150 -> no.
    # t=150 J2; t=155 J3. (SAF would start J2 first.)
    HandCase(
        "f3_easy",
        ((0, 100, 4, 100), (1, 50, 2, 50), (10, 5, 4, 5), (10, 1000, 1, 1000)),
        4, "F3", "easy", "request", None,
        (0, 100, 150, 155), (),
    ),
    # F3 submit weight bracket. Keys: J1 40000*170=6.8e6, J2 10*40+6.86e6=6860400, J3
    # 69002*100+6.86e6=13760200, J4 1*200+2*6.86e6=13720200. t=100: J1 starts (free 30) --
    # needs weight > 6799600; J2 (40p) blocked. t=40100 J2 starts; J4 (200p) blocked.
    # t=40110 J4 before J3 -- needs weight < 6.9e6; t=40111 J3.
    HandCase(
        "f3_submit_weight_bracket",
        ((0, 100, 200, 100), (1, 40000, 170, 40000), (10, 10, 40, 10),
         (10, 69002, 100, 69002), (100, 1, 200, 1)),
        200, "F3", "none", "request", None,
        (0, 100, 40100, 40111, 40110), (),
    ),
    # F4 r*sqrt(n) + 5.3e5*log10(s): J1 100*2=200, J2 300, J3 10+5.3e5 (r*n would put J2
    # before J1). t=100 J1 starts (free 0), J2 blocked, shadow 200. t=200 J2, J3 start.
    HandCase(
        "f4_easy",
        ((0, 100, 4, 100), (1, 100, 4, 100), (1, 300, 1, 300), (10, 10, 1, 10)),
        4, "F4", "easy", "request", None,
        (0, 100, 200, 200), (),
    ),
    # F4 submit weight bracket, m=225. Keys: J1 37500*sqrt(196)=525000, J2 10*6+5.3e5=530060,
    # J3 180005*3+5.3e5=1070015, J4 1*15+1.06e6=1060015. t=100: J1 starts (free 29) --
    # needs weight > 524940; J2 (36p) blocked. t=37600 J2 starts; J4 (225p) blocked.
    # t=37610 J4 before J3 -- needs weight < 540000; t=37611 J3.
    HandCase(
        "f4_submit_weight_bracket",
        ((0, 100, 225, 100), (1, 37500, 196, 37500), (10, 10, 36, 10),
         (10, 180005, 9, 180005), (100, 1, 225, 1)),
        225, "F4", "none", "request", None,
        (0, 100, 37600, 37611, 37610), (),
    ),
    # SJBF. t=2 J1 (10p) blocked: shadow 100, extra 0, free 2. SJBF order J3 (20), J2 (80):
    # J3 2+20<=100 -> bf (free 0). t=22 J2 22+80>100 -> no. t=100 J1; t=150 J2.
    HandCase(
        "fcfs_sjbf",
        ((0, 100, 8, 100), (1, 50, 10, 50), (2, 80, 2, 80), (2, 20, 2, 20)),
        10, "FCFS", "sjbf", "request", None,
        (0, 100, 150, 2), (3,),
    ),
    # Same jobs with EASY (queue order): J2 2+80<=100 -> bf at 2; at t=82 J3 82+20>100.
    # t=100 J1; t=150 J3.
    HandCase(
        "fcfs_easy_vs_sjbf",
        ((0, 100, 8, 100), (1, 50, 10, 50), (2, 80, 2, 80), (2, 20, 2, 20)),
        10, "FCFS", "easy", "request", None,
        (0, 100, 2, 150), (2,),
    ),
    # Starvation Theta=50 over SJF. t=100: J1 (w=90) and J2 (w=80) starved -> FCFS first:
    # J1 starts (ends 300); J3 (w=10) not starved. t=300 J2 (starved) starts; t=310 J3.
    HandCase(
        "sjf_starvation_50",
        ((0, 100, 4, 100), (10, 200, 4, 200), (20, 10, 4, 10), (90, 10, 4, 10)),
        4, "SJF", "easy", "request", 50,
        (0, 100, 300, 310), (),
    ),
    # Theta=90 (strict >): at t=100 J1 has w=90, NOT starved -> SJF: J2 starts (ends 110).
    # t=110 J1 w=100>90 starved -> goes before J3 (w=20): J1 starts, ends 310; J3 at 310.
    HandCase(
        "sjf_starvation_90_strict",
        ((0, 100, 4, 100), (10, 200, 4, 200), (20, 10, 4, 10), (90, 10, 4, 10)),
        4, "SJF", "easy", "request", 90,
        (0, 110, 100, 310), (),
    ),
    # No threshold: t=100 J2, t=110 J3 (key 10 < 200), t=120 J1.
    HandCase(
        "sjf_no_starvation",
        ((0, 100, 4, 100), (10, 200, 4, 200), (20, 10, 4, 10), (90, 10, 4, 10)),
        4, "SJF", "easy", "request", None,
        (0, 120, 100, 110), (),
    ),
    # Conservative. t=1 J1 (8p) reserved [100,150) (free 4 before 100). t=2 J2 (9p):
    # free 4 now, 2 in [100,150) -> reserved [150,200). t=3 J3 (2p, 200 s): at 3 the
    # window [3,203) hits [150,200) with 1 free -> no; 100, 150 no; reserved at 200.
    # t=100 J1 starts; t=150 J2; t=200 J3. Nothing backfilled.
    HandCase(
        "fcfs_conservative_protects_all",
        ((0, 100, 6, 100), (1, 50, 8, 50), (2, 50, 9, 50), (3, 200, 2, 200)),
        10, "FCFS", "conservative", "request", None,
        (0, 100, 150, 200), (),
    ),
    # Same jobs with EASY: t=3 J3 (2p) fits in extra 10-8=2 -> bf; it delays J2 (9p):
    # at t=100 J1 starts, J2's shadow is J3's end 203.
    HandCase(
        "fcfs_easy_vs_conservative",
        ((0, 100, 6, 100), (1, 50, 8, 50), (2, 50, 9, 50), (3, 200, 2, 200)),
        10, "FCFS", "easy", "request", None,
        (0, 100, 203, 3), (3,),
    ),
    # Conservative, request estimates, reservations recomputed at each pass. t=1 J1 (4p)
    # reserved at 100 (J0's est end). t=2 J2 (2p, est 50) fits [2,52) before 100 -> bf.
    # t=10 J0 really ends: J1 re-reserved at J2's est end 52. t=32 J2 really ends: J1
    # starts at 32.
    HandCase(
        "fcfs_conservative_request",
        ((0, 10, 2, 100), (1, 20, 4, 20), (2, 30, 2, 50)),
        4, "FCFS", "conservative", "request", None,
        (0, 32, 2), (2,),
    ),
    # Same, est = actual: t=1 J1 reserved [10,30). t=2 J2 ([2,32)) collides with J1 at 10
    # -> reserved at 30. t=10 J1 starts; t=30 J2.
    HandCase(
        "fcfs_conservative_actual",
        ((0, 10, 2, 100), (1, 20, 4, 20), (2, 30, 2, 50)),
        4, "FCFS", "conservative", "actual", None,
        (0, 10, 30), (),
    ),
    # Conservative, half-open reservations. t=1 J1 [10,20) (starts exactly at J0's est
    # end). t=2 J2 (3p) reserved [20,30). t=3 J3 (2p, 20 s): at 20 only 1 free -> [30,50).
    # t=4 J4 (1p) reserved [20,30) beside J2. t=10 J1 starts. t=20 J2 starts (free 1);
    # J3 still at 30; J4 fits [20,30) (ends as J3's reservation begins) -> bf. t=30 J3.
    HandCase(
        "fcfs_conservative_adjacent_reservations",
        ((0, 10, 4, 10), (1, 10, 4, 10), (2, 10, 3, 10), (3, 20, 2, 20), (4, 10, 1, 10)),
        4, "FCFS", "conservative", "actual", None,
        (0, 10, 20, 30, 20), (4,),
    ),
    # SJF + conservative. t=1 order J2 (5), J3 (8), J1 (100). J2 (4p) reserved [10,15);
    # J3 (1p, [1,9)) fits now -> bf; J1 (2p, 100 s): blocked by J0+J3, then by J2's
    # reservation -> reserved at 15. t=10 J2 starts; t=15 J1.
    HandCase(
        "sjf_conservative",
        ((0, 10, 3, 10), (1, 100, 2, 100), (1, 5, 4, 5), (1, 8, 1, 8)),
        4, "SJF", "conservative", "request", None,
        (0, 15, 10, 1), (3,),
    ),
    # Explicit est column (between runtime and request). t=1 J1 blocked: shadow = J0's
    # est end 20, extra 0. t=2 J2 2+15=17<=20 -> bf. t=10 J0 ends (free 2), J1 waits for
    # J2's est end 17. t=17 J1 starts.
    HandCase(
        "fcfs_easy_explicit_est",
        ((0, 10, 2, 100, 20), (1, 10, 4, 10, 10), (2, 15, 2, 100, 15)),
        4, "FCFS", "easy", "request", None,
        (0, 17, 2), (2,),
    ),
    # Same jobs, est = request: shadow 100, J2 2+100>100 and extra 0 -> no. t=10 J1
    # starts; t=20 J2.
    HandCase(
        "fcfs_easy_explicit_est_contrast",
        ((0, 10, 2, 100), (1, 10, 4, 10), (2, 15, 2, 100)),
        4, "FCFS", "easy", "request", None,
        (0, 10, 20), (),
    ),
]
# fmt: on
