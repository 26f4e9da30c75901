"""A certified lower bound on a window's AVEbsld (CP-SAT, from OR-Tools).

**The relaxation.** Take any schedule of a window (any scheduler, clairvoyant or not:
non-preemptive, jobs start at or after their submission, never more processors busy than
the machine has). Restricted to a subset ``B`` of the jobs it is a feasible schedule of
``B`` alone on an empty machine, so the sum of the bounded slowdowns of ``B``'s jobs is at
least the optimum ``OPT(B)`` of that smaller problem, which is at least any proven lower
bound of a solver on it. Over disjoint subsets ``B_1 .. B_k`` and every other job's
``bsld >= 1``::

    AVEbsld >= (sum_i LB(B_i) + (n - sum_i |B_i|)) / n

for every schedule of the window. The subsets are the most congested runs of consecutive
jobs (the runs whose own schedule, alone on the machine, has the largest slowdowns:
:func:`alone_blocks`).

**The sub-problem** (:func:`block_bound`): integer start times ``s_j >= r_j`` (the data
are integer seconds, and a schedule shifted left onto submissions and completions stays
feasible and no worse, so integer starts lose nothing), a cumulative constraint on the
processors, and ``bsld_j = max(1, (s_j - r_j + p_j) / max(p_j, 10))`` as integer
variables ``c_j >= S`` with ``max(p_j, 10) c_j >= S (s_j - r_j + p_j)`` (``S`` = the
scale). At any solution ``c_j <= S bsld_j + 1``, so CP-SAT's proven bound ``L`` on
``sum c_j`` gives ``sum bsld_j >= (L - |B|) / S``. The bound reported is the solver's
proven objective bound, never its incumbent; the incumbent (a schedule of the block
alone) is reported beside it.

**A second relaxation, of the whole window** (:func:`fluid_bound`). Map a schedule of
rigid jobs on ``m`` processors to one machine of capacity 1 that processes job ``j`` at
rate ``q_j / m`` during ``[s_j, s_j + p_j]``: a fluid single-machine schedule of amounts
``a_j = q_j p_j / m`` released at ``r_j``, in which ``j``'s mean busy time is
``M_j = s_j + p_j / 2``. For every such schedule, ``sum w_j M_j`` is at least its value
in the preemptive schedule that always runs the released job of largest ``w_j / a_j``
(Goemans, SODA 1997: that schedule solves the mean-busy-time LP, whose constraints hold
for any schedule of capacity 1). With ``w_j = 1 / max(p_j, 10)`` this bounds
``sum (C_j - r_j) / max(p_j, 10)``, which equals the sum of the bounded slowdowns over the
jobs of at least 10 s and is below it for the others; with ``w_j = 0`` for the jobs under
10 s and their ``bsld >= 1``, a second bound. The larger of the two, and of ``n``, holds
for every schedule of the window; it keeps the window's backlog, which the block
relaxation loses.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hpcgym.sim.metrics import TAU, bounded_slowdown
from hpcgym.workload.core import Workload

__all__ = [
    "BlockBound",
    "fluid_bound",
    "alone_blocks",
    "block_bound",
    "congested_blocks",
    "serial_optimum",
    "window_bound",
]

#: the integer scale of the bounded slowdowns in the CP-SAT model
SCALE = 1000


def _solver() -> Any:
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the lower bound needs OR-Tools' CP-SAT: pip install 'hpcgym[bound]' "
            "(or pip install 'ortools>=9.10')"
        ) from exc
    return cp_model


@dataclass(frozen=True)
class BlockBound:
    """CP-SAT on one block of jobs from an empty machine.

    :param jobs: the block's size
    :param lower: certified lower bound on the sum of the block's bounded slowdowns
    :param incumbent: sum of bounded slowdowns of the best schedule of the block alone
        that CP-SAT found (``nan`` if none)
    :param status: CP-SAT's status name
    :param seconds: wall-clock time of the solve
    """

    jobs: int
    lower: float
    incumbent: float
    status: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _integer(name: str, x: np.ndarray) -> np.ndarray:
    xi = np.round(np.asarray(x, dtype=np.float64))
    if not np.allclose(xi, x):
        raise ValueError(f"the lower bound needs integer {name} (seconds), got fractions")
    return xi.astype(np.int64)


def block_bound(
    submit: np.ndarray,
    runtime: np.ndarray,
    procs: np.ndarray,
    machine_size: int,
    time_limit: float = 10.0,
    hint: np.ndarray | None = None,
    workers: int = 1,
    seed: int = 0,
) -> BlockBound:
    """A certified lower bound on the sum of bounded slowdowns of these jobs alone.

    :param submit: submission times (integer seconds)
    :param runtime: run times (integer seconds)
    :param procs: processors of each job
    :param machine_size: processors of the machine
    :param time_limit: CP-SAT's time limit in seconds
    :param hint: start times of a feasible schedule to start the search from (optional)
    :param workers: CP-SAT's search workers
    :param seed: CP-SAT's random seed
    """
    cp_model = _solver()
    r = _integer("submit times", submit)
    p = _integer("run times", runtime)
    q = np.asarray(procs, dtype=np.int64)
    n = len(r)
    if n == 0:
        return BlockBound(0, 0.0, 0.0, "EMPTY", 0.0)
    if int(q.max()) > int(machine_size):
        raise ValueError(f"a job needs {int(q.max())} processors; the machine has {machine_size}")
    t0 = int(r.min())
    r = r - t0
    horizon = int(r.max() + p.sum())  # a serial schedule after the last submission fits
    d = np.maximum(p, int(TAU))
    model = cp_model.CpModel()
    starts, intervals, costs = [], [], []
    for j in range(n):
        s = model.NewIntVar(int(r[j]), horizon, f"s{j}")
        iv = model.NewFixedSizeIntervalVar(s, int(p[j]), f"i{j}")
        ub = SCALE * (horizon + int(p[j]) - int(r[j])) // int(d[j]) + SCALE
        c = model.NewIntVar(SCALE, ub, f"c{j}")
        model.Add(int(d[j]) * c >= SCALE * (s - int(r[j]) + int(p[j])))
        starts.append(s)
        intervals.append(iv)
        costs.append(c)
    model.AddCumulative(intervals, [int(x) for x in q], int(machine_size))
    model.Minimize(sum(costs))
    if hint is not None:
        h = _integer("hint start times", hint) - t0
        for j in range(n):
            model.AddHint(starts[j], int(h[j]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    t = time.perf_counter()
    status = solver.Solve(model)
    secs = time.perf_counter() - t
    name = solver.StatusName(status)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = float(solver.BestObjectiveBound())
        s_val = np.array([solver.Value(v) for v in starts], dtype=np.float64)
        inc = float(bounded_slowdown(s_val - r, p.astype(np.float64)).sum())
    else:
        bound = float(solver.BestObjectiveBound()) if status != cp_model.MODEL_INVALID else 0.0
        inc = float("nan")
    lower = max(float(n), (bound - n) / SCALE)
    return BlockBound(n, lower, inc, name, secs)


def serial_optimum(
    submit: np.ndarray, runtime: np.ndarray, procs: np.ndarray, machine_size: int
) -> float:
    """The exact minimum of the sum of bounded slowdowns of a tiny instance, by brute
    force: every priority list through the serial schedule-generation scheme (each job
    at the earliest time at or after its submission where it fits beside the jobs placed
    before it), whose schedules include an optimal one for this regular objective.
    Exponential in the number of jobs (tests only: up to about 7 jobs).
    """
    from itertools import permutations

    r = np.asarray(submit, dtype=np.float64)
    p = np.asarray(runtime, dtype=np.float64)
    q = np.asarray(procs, dtype=np.int64)
    n = len(r)
    if n > 8:
        raise ValueError(f"brute force is for tiny instances (<= 8 jobs), got {n}")
    best = math.inf
    for perm in permutations(range(n)):
        placed: list[tuple[float, float, int]] = []
        start = np.zeros(n)
        for j in perm:
            times = sorted({r[j], *(e for _, e, _ in placed if e >= r[j])})
            for t in times:
                ok = True
                checks = {t, *(s for s, _, _ in placed if t <= s < t + p[j])}
                for u in checks:
                    used = sum(k for s, e, k in placed if s <= u < e)
                    if used + q[j] > machine_size:
                        ok = False
                        break
                if ok:
                    start[j] = t
                    placed.append((t, t + p[j], int(q[j])))
                    break
        best = min(best, float(bounded_slowdown(start - r, p).sum()))
    return best


def congested_blocks(bsld: np.ndarray, size: int, count: int) -> list[tuple[int, int]]:
    """The ``count`` disjoint runs of ``size`` consecutive jobs with the largest sum of
    ``bsld - 1`` (greedy, largest first), as ``(first, end)`` index pairs, sorted.

    :param bsld: per-job bounded slowdowns of some schedule of the window
    :param size: jobs per block
    :param count: blocks wanted (fewer when the window is too short)
    """
    excess = np.asarray(bsld, dtype=np.float64) - 1.0
    n = len(excess)
    size = min(int(size), n)
    if size <= 0:
        return []
    csum = np.concatenate([[0.0], np.cumsum(excess)])
    score = csum[size:] - csum[: n - size + 1]
    taken = np.zeros(n, dtype=bool)
    out: list[tuple[int, int]] = []
    for i in np.argsort(-score, kind="stable"):
        if len(out) >= count:
            break
        if not taken[i : i + size].any():
            taken[i : i + size] = True
            out.append((int(i), int(i) + size))
    return sorted(out)


def fluid_bound(submit: np.ndarray, runtime: np.ndarray, procs: np.ndarray, m: int) -> float:
    """A certified lower bound on the *sum* of the bounded slowdowns of every schedule of
    these jobs on ``m`` processors (the fluid mean-busy-time relaxation, module text).

    :param submit: submission times
    :param runtime: run times
    :param procs: processors of each job
    :param m: processors of the machine
    """
    import heapq

    r = np.asarray(submit, dtype=np.float64)
    p = np.asarray(runtime, dtype=np.float64)
    q = np.asarray(procs, dtype=np.float64)
    n = len(r)
    if n == 0:
        return 0.0
    t0 = float(r.min())
    r = r - t0
    d = np.maximum(p, TAU)
    a = q * p / float(m)
    long_ = p >= TAU

    def lp(w: np.ndarray) -> float:
        """min sum w_j M_j over fluid schedules: preemptive largest w/a first."""
        order = np.argsort(r, kind="stable")
        left = a.copy()
        busy = np.zeros(n)  # integral of t over j's processing, per unit amount
        heap: list[tuple[float, int]] = []
        t, i = 0.0, 0
        while i < n or heap:
            if not heap:
                t = max(t, r[order[i]])
            while i < n and r[order[i]] <= t:
                j = int(order[i])
                ratio = w[j] / a[j] if a[j] > 0 else np.inf
                heapq.heappush(heap, (-ratio, j))
                i += 1
            _, j = heap[0]
            nxt = r[order[i]] if i < n else np.inf
            run = min(left[j], nxt - t)
            busy[j] += (t + run) ** 2 / 2.0 - t**2 / 2.0
            left[j] -= run
            t += run
            if left[j] <= 1e-12 * max(1.0, a[j]):
                heapq.heappop(heap)
        mbt = np.where(a > 0, busy / np.where(a > 0, a, 1.0), r)
        return float(np.sum(w * mbt))

    w_all = 1.0 / d
    base = float(np.sum(w_all * (p / 2.0 - r)))
    all_jobs = lp(w_all) + base
    w_long = np.where(long_, w_all, 0.0)
    long_only = lp(w_long) + float(np.sum(w_long * (p / 2.0 - r))) + float(np.sum(~long_))
    return max(float(n), all_jobs, long_only)


def alone_blocks(
    window: Workload, size: int, count: int, stride: int | None = None
) -> list[tuple[int, int]]:
    """The ``count`` disjoint runs of ``size`` consecutive jobs that are the most congested
    *alone*: the largest AVEbsld of SAF with clairvoyant EASY-SJBF on the run by itself
    from an empty machine (the sub-problem the bound solves), greedy, largest first.

    :param window: the jobs
    :param size: jobs per block
    :param count: blocks wanted
    :param stride: distance between candidate runs (default ``size // 4``)
    """
    from hpcgym.sim import simulate

    n = len(window)
    size = min(int(size), n)
    step = max(1, int(stride or size // 4))
    firsts = list(range(0, n - size + 1, step))
    if firsts[-1] != n - size:
        firsts.append(n - size)
    score = [
        simulate(window.window(i, size), policy="SAF", backfill="sjbf", estimate="actual").metrics[
            "avg_bsld"
        ]
        for i in firsts
    ]
    taken = np.zeros(n, dtype=bool)
    out: list[tuple[int, int]] = []
    for k in np.argsort(-np.asarray(score), kind="stable"):
        i = firsts[int(k)]
        if len(out) >= count:
            break
        if not taken[i : i + size].any():
            taken[i : i + size] = True
            out.append((i, i + size))
    return sorted(out)


def window_bound(
    window: Workload,
    start: np.ndarray | None = None,
    size: int = 128,
    count: int = 1,
    time_limit: float = 10.0,
    workers: int = 1,
) -> dict[str, Any]:
    """A certified lower bound on ``window``'s AVEbsld from CP-SAT on its most congested
    blocks (:func:`alone_blocks`).

    :param window: the jobs
    :param start: start times of a feasible schedule of the window (optional): the hint
        of each solve, and its block sums are reported beside the bounds
    :param size: jobs per block
    :param count: disjoint blocks solved
    :param time_limit: CP-SAT's time limit per block (seconds)
    :param workers: CP-SAT's search workers
    :return: ``{"lower", "blocks_lower", "fluid_lower", "blocks": [...], "jobs",
        "block_jobs"}``: ``lower``, the larger of the block bound and the fluid bound
        (:func:`fluid_bound`), is a bound on the AVEbsld of every schedule of the window
    """
    blocks = alone_blocks(window, size, count)
    total, covered, rows = 0.0, 0, []
    for lo, hi in blocks:
        hint = None if start is None else np.asarray(start, dtype=np.float64)[lo:hi]
        res = block_bound(
            window.submit[lo:hi],
            window.runtime[lo:hi],
            window.procs[lo:hi],
            window.machine_size,
            time_limit=time_limit,
            hint=hint,
            workers=workers,
        )
        total += res.lower
        covered += hi - lo
        row: dict[str, Any] = {"first": lo, "end": hi, **res.to_dict()}
        if hint is not None:
            row["schedule_sum"] = float(
                bounded_slowdown(hint - window.submit[lo:hi], window.runtime[lo:hi]).sum()
            )
        rows.append(row)
    n = len(window)
    blocks_lower = (total + (n - covered)) / n
    fluid = fluid_bound(window.submit, window.runtime, window.procs, window.machine_size) / n
    return {
        "lower": max(blocks_lower, fluid),
        "blocks_lower": blocks_lower,
        "fluid_lower": fluid,
        "blocks": rows,
        "jobs": n,
        "block_jobs": covered,
    }
