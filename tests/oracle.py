"""Independent, deliberately naive pure-Python reference scheduler ("oracle").

This module is used only by the tests and the benchmarks to cross-check the real
(numba) engine in :mod:`hpcgym.sim`. It does not import anything from ``hpcgym.sim``:
it is a second, independent reading of the same written rules, kept as plain as
possible (Python lists, full re-sorts at every pass, linear scans). It is also the
"naive list-based implementation" speed baseline of ``bench/naive_baseline.py``.

Semantics (the specification this oracle implements, verbatim)
--------------------------------------------------------------

Machine: ``m`` identical processors; a job needs ``procs`` of them, any ones, for its
actual ``runtime``; it is never killed (runtime <= request).

Events: time jumps to the next event: a job arrival (its submit time) or a job
completion (start + actual runtime). All events with the same timestamp are handled
together -- first every completion, then every arrival -- followed by ONE scheduling
pass. A simulated window starts with an empty machine at its first job's submit time
and ends when its last job completes.

Estimate ``est(j)``: the runtime the scheduler believes -- the user request (default),
or the actual runtime (``actual``). The same estimate is used for priority keys, for
the shadow time and for backfill eligibility.

Scheduling pass at time ``t``:

1. Sort the queue ascending by the policy key; ties by submit time, then by position
   in the (submit-ordered) job list.
2. Start jobs from the head while the head fits in the free processors.
3. If the queue is not empty, the head is blocked. Its reservation: walk the running
   jobs in order of estimated end ``start + est`` (ties by position), adding their
   processors to the free count; the first end time at which the head fits is the
   **shadow time**, and ``extra = (processors available at the shadow) - head.procs``.
   "Processors available at the shadow" includes ALL running jobs whose estimated end
   is <= the shadow time (jobs ending at the same instant are added together before
   testing whether the head fits).
4. EASY backfilling: go through the other waiting jobs in the backfill order -- the
   policy's queue order (``backfill="easy"``), or by (``est``, submit, position) for
   **SJBF** (``backfill="sjbf"``). Start job ``c`` if ``c.procs <= free`` and
   (``t + est(c) <= shadow`` or ``c.procs <= extra``); if it was admitted only by the
   second clause, ``extra -= c.procs``. Each start reduces ``free``. A job started in
   step 4 is "backfilled".

With ``backfill="none"`` steps 3-4 are skipped (strict head-of-line blocking).

Policies (key: smaller runs first; ``s`` submit time in trace seconds, ``n`` procs,
``r`` = est, ``w`` = t - s):
FCFS ``s``; SJF ``r``; SQF ``n``; SAF ``r*n``; LJF ``-r``, LQF ``-n``, LAF ``-r*n``;
WFP3 ``-(w/r)^3*n``; UNICEF ``-w/(log2(max(n,2))*r)``;
F1 ``log10(r)*n + 870*log10(s)``; F2 ``sqrt(r)*n + 25600*log10(s)``;
F3 ``r*n + 6.86e6*log10(s)``; F4 ``r*sqrt(n) + 5.3e5*log10(s)`` -- for F1-F4 clamp
``r`` and ``s`` below at 1. Dynamic keys (WFP3, UNICEF) are recomputed at every pass
(with that pass's t). Optional starvation threshold Theta: at a pass at time t, a
waiting job with t - s > Theta goes first, FCFS (by submit, position) among such jobs;
the others follow in key order.

**Conservative backfilling** (``backfill="conservative"``): at each pass, build a
profile of future free processors from the running jobs (each frees its procs at
start+est); then every waiting job, in queue (policy) order, gets a reservation at the
earliest time tau >= t at which it fits for est(j) seconds in the profile, given the
reservations of the jobs before it; a job whose reservation is tau = t starts now (it
is "backfilled" if some job before it in the queue order did not start now).
Reservations are recomputed from scratch at each pass.

Metrics: AVEbsld = mean(max((wait + runtime) / max(runtime, 10), 1)); wait = start -
submit.

Conventions of this oracle (not part of the rules above)
--------------------------------------------------------
* Times keep the Python type of the inputs while simulating (integers stay exact);
  the returned ``start`` array is float64.
* Every estimate must satisfy ``runtime <= est``: the rules above do not say what the
  scheduler believes about a job that outlives its estimate, so the oracle refuses
  such input instead of guessing (``ValueError``).
* Interval convention for reservations: a job started at ``x`` with estimate ``d``
  occupies ``[x, x + d)``; processors freed at ``x + d`` are usable at ``x + d``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["POLICIES", "BACKFILLS", "ESTIMATES", "oracle_simulate", "oracle_avebsld"]

POLICIES = (
    "FCFS",
    "SJF",
    "SQF",
    "SAF",
    "LJF",
    "LQF",
    "LAF",
    "WFP3",
    "UNICEF",
    "F1",
    "F2",
    "F3",
    "F4",
)
BACKFILLS = ("none", "easy", "sjbf", "conservative")
ESTIMATES = ("request", "actual")


def policy_key(policy: str, s: float, n: int, r: float, t: float) -> float:
    """Priority key of one waiting job (smaller runs first).

    :param policy: one of :data:`POLICIES`
    :param s: submit time (trace seconds)
    :param n: processors
    :param r: runtime estimate ``est``
    :param t: time of the scheduling pass (used by the dynamic keys WFP3 and UNICEF)
    """
    w = t - s
    if policy == "FCFS":
        return s
    if policy == "SJF":
        return r
    if policy == "SQF":
        return n
    if policy == "SAF":
        return r * n
    if policy == "LJF":
        return -r
    if policy == "LQF":
        return -n
    if policy == "LAF":
        return -r * n
    if policy == "WFP3":
        return -((w / r) ** 3) * n
    if policy == "UNICEF":
        return -w / (math.log2(max(n, 2)) * r)
    rc = max(r, 1)
    sc = max(s, 1)
    if policy == "F1":
        return math.log10(rc) * n + 870 * math.log10(sc)
    if policy == "F2":
        return math.sqrt(rc) * n + 25600 * math.log10(sc)
    if policy == "F3":
        return rc * n + 6.86e6 * math.log10(sc)
    if policy == "F4":
        return rc * math.sqrt(n) + 5.3e5 * math.log10(sc)
    raise ValueError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")


def oracle_simulate(
    submit: Sequence[float] | np.ndarray,
    runtime: Sequence[float] | np.ndarray,
    procs: Sequence[int] | np.ndarray,
    request: Sequence[float] | np.ndarray,
    m: int,
    policy: str = "FCFS",
    backfill: str = "easy",
    estimate: str = "request",
    starvation: float | None = None,
    est: Sequence[float] | np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Simulate one window of jobs with the rules of the module docstring.

    :param submit: submit times, non-decreasing (the job list is ordered by submit)
    :param runtime: actual run times (> 0)
    :param procs: processors per job (1..m)
    :param request: user-requested times (the default estimate)
    :param m: machine size (number of identical processors)
    :param policy: queue policy, one of :data:`POLICIES`
    :param backfill: ``"none"``, ``"easy"``, ``"sjbf"`` or ``"conservative"``
    :param estimate: ``"request"`` or ``"actual"``: which column the scheduler believes
    :param starvation: starvation threshold Theta in seconds, or None for no threshold
    :param est: explicit per-job estimates; overrides ``estimate`` when given
    :return: ``dict(start=float64 array, backfilled=bool array)``, one entry per job
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    if backfill not in BACKFILLS:
        raise ValueError(f"unknown backfill {backfill!r}; valid: {', '.join(BACKFILLS)}")
    if est is None and estimate not in ESTIMATES:
        raise ValueError(f"unknown estimate {estimate!r}; valid: {', '.join(ESTIMATES)}")

    S = np.asarray(submit).tolist()
    R = np.asarray(runtime).tolist()
    N = [int(x) for x in np.asarray(procs).tolist()]
    Q = np.asarray(request).tolist()
    nj = len(S)
    if not (len(R) == len(N) == len(Q) == nj):
        raise ValueError("submit, runtime, procs and request must have the same length")
    if est is not None:
        E = np.asarray(est).tolist()
        if len(E) != nj:
            raise ValueError(f"est has {len(E)} entries, expected {nj}")
    elif estimate == "request":
        E = list(Q)
    else:
        E = list(R)
    m = int(m)
    for name, col in (("submit", S), ("runtime", R), ("request", Q), ("est", E)):
        if not all(math.isfinite(x) for x in col):
            raise ValueError(f"{name} has non-finite values")
    for j in range(nj):
        if not 1 <= N[j] <= m:
            raise ValueError(f"job {j}: procs={N[j]} outside 1..m={m}")
        if not R[j] > 0:
            raise ValueError(f"job {j}: runtime={R[j]} must be > 0")
        if not E[j] >= R[j]:
            raise ValueError(
                f"job {j}: estimate {E[j]} < runtime {R[j]}; the oracle's rules only "
                "cover estimates that are never exceeded"
            )
        if j and S[j] < S[j - 1]:
            raise ValueError(f"job {j}: submit {S[j]} < previous submit {S[j - 1]}")

    start: list[float | None] = [None] * nj
    backfilled = [False] * nj
    waiting: list[int] = []  # job indices in the queue
    running: list[int] = []  # job indices on the machine
    used = 0  # busy processors
    next_arrival = 0

    def queue_order(t: float) -> list[int]:
        """Waiting jobs in queue order at time t (starved jobs first, then by key)."""
        starved = []
        others = []
        for j in waiting:
            if starvation is not None and t - S[j] > starvation:
                starved.append(j)
            else:
                others.append(j)
        starved.sort(key=lambda j: (S[j], j))
        others.sort(key=lambda j: (policy_key(policy, S[j], N[j], E[j], t), S[j], j))
        return starved + others

    def begin(j: int, t: float, is_backfill: bool) -> None:
        nonlocal used
        start[j] = t
        backfilled[j] = is_backfill
        used += N[j]
        waiting.remove(j)
        running.append(j)

    def easy_pass(t: float) -> None:
        order = queue_order(t)
        # step 2: start from the head while it fits
        while order and N[order[0]] <= m - used:
            begin(order.pop(0), t, False)
        if not order or backfill == "none":
            return
        # step 3: reservation of the blocked head
        head = order[0]
        free = m - used
        ends = sorted((start[j] + E[j], j) for j in running)  # type: ignore[operator]
        avail = free
        shadow = None
        k = 0
        while k < len(ends):
            tk = ends[k][0]
            while k < len(ends) and ends[k][0] == tk:
                avail += N[ends[k][1]]
                k += 1
            if avail >= N[head]:
                shadow = tk
                break
        assert shadow is not None, "the head always fits on an empty machine"
        extra = avail - N[head]
        # step 4: backfill the other waiting jobs
        candidates = order[1:]
        if backfill == "sjbf":
            candidates.sort(key=lambda j: (E[j], S[j], j))
        for c in candidates:
            free = m - used
            if N[c] > free:
                continue
            if t + E[c] <= shadow:
                begin(c, t, True)
            elif N[c] <= extra:
                extra -= N[c]
                begin(c, t, True)

    def conservative_pass(t: float) -> None:
        # busy intervals [begin, end) with their processors: running jobs, then reservations
        busy = [(start[j], start[j] + E[j], N[j]) for j in running]  # type: ignore[operator]

        def fits(x: float, d: float, p: int) -> bool:
            # usage is piecewise constant; its maximum over [x, x+d) is reached at x or
            # at an interval beginning inside (x, x+d)
            probes = [x] + [b for (b, _, _) in busy if x < b < x + d]
            for y in probes:
                u = sum(q for (b, e, q) in busy if b <= y < e)
                if m - u < p:
                    return False
            return True

        all_started = True
        for j in queue_order(t):
            candidates = sorted({t} | {e for (_, e, _) in busy if e > t})
            tau = next(x for x in candidates if fits(x, E[j], N[j]))
            busy.append((tau, tau + E[j], N[j]))
            if tau == t:
                begin(j, t, not all_started)
            else:
                all_started = False

    while next_arrival < nj or running:
        t = S[next_arrival] if next_arrival < nj else None
        for j in running:
            end = start[j] + R[j]  # type: ignore[operator]
            if t is None or end < t:
                t = end
        # completions first ...
        for j in list(running):
            if start[j] + R[j] == t:  # type: ignore[operator]
                running.remove(j)
                used -= N[j]
        # ... then arrivals ...
        while next_arrival < nj and S[next_arrival] == t:
            waiting.append(next_arrival)
            next_arrival += 1
        # ... then one scheduling pass
        if backfill == "conservative":
            conservative_pass(t)  # type: ignore[arg-type]
        else:
            easy_pass(t)  # type: ignore[arg-type]
        assert 0 <= used <= m

    assert not waiting, "every job must have started"
    return {
        "start": np.array(start, dtype=np.float64),
        "backfilled": np.array(backfilled, dtype=bool),
    }


def oracle_avebsld(
    submit: Sequence[float] | np.ndarray,
    runtime: Sequence[float] | np.ndarray,
    start: Sequence[float] | np.ndarray,
) -> float:
    """AVEbsld = mean(max((wait + runtime) / max(runtime, 10), 1)), wait = start - submit.

    :param submit: submit times
    :param runtime: actual run times
    :param start: start times (e.g. ``oracle_simulate(...)["start"]``)
    """
    total = 0.0
    n = 0
    cols = (np.asarray(submit).tolist(), np.asarray(runtime).tolist(), np.asarray(start).tolist())
    for s, r, st in zip(*cols, strict=True):
        total += max((st - s + r) / max(r, 10), 1.0)
        n += 1
    if n == 0:
        raise ValueError("AVEbsld of an empty job list is undefined")
    return total / n
