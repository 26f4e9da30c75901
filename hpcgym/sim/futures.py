"""The imagined futures of the online lookahead (:class:`hpcgym.sim.lookahead.Lookahead`):
future arrivals replayed from the known past (:class:`PastReplay`), the clairvoyant
run-time pools of a window (:class:`WindowPools`), and the workload a rollout runs on
(:func:`compose_rollout`: the queue now, the running jobs, the imagined arrivals).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim import _core_ext as KX
from hpcgym.sim.samplers import _int_option

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation
    from hpcgym.workload.core import Workload

__all__ = ["PastReplay"]


class PastReplay:
    """Future arrivals: a block of the known past, replayed after now.

    For a horizon of ``H`` seconds, a sample takes the jobs submitted in
    ``(now - d, now - d + H]`` and submits them again ``d`` seconds later, in
    ``(now, now + H]``, with their processors, requests and users (their run times are
    drawn by the :class:`RuntimeSampler`). ``d`` is a whole number of periods
    ``P = ceil(H / 1 day)`` days -- the same hours of one of the last ``days`` periods,
    which keeps the daily cycle -- chosen at random per sample among those the known
    past covers; if none is covered, ``d = H`` (the last ``H`` seconds) or, early in a
    trace, as much of the past as exists. Only jobs submitted at or before now are used.

    :param days: how many periods back a block may come from
    """

    def __init__(self, days: int = 7) -> None:
        self.days = _int_option("days", days, 1)

    def bind(self, sim: Simulation, past: Workload | None) -> None:
        wl = sim.workload
        cols = ("submit", "procs", "request", "user")
        if past is not None and len(past):
            self._cols = {c: np.concatenate([getattr(past, c), getattr(wl, c)]) for c in cols}
            self._npast = len(past)
        else:
            self._cols = {c: np.asarray(getattr(wl, c)) for c in cols}
            self._npast = 0

    def sample(
        self, now: float, n_known: int, horizon: float, n: int, rng: np.random.Generator
    ) -> list[dict[str, np.ndarray]]:
        """``n`` futures: dicts of ``submit``, ``procs``, ``request``, ``user`` arrays.

        :param now: current time
        :param n_known: window jobs submitted so far
        :param horizon: seconds of future to sample
        :param n: number of samples
        :param rng: random generator
        """
        sub = self._cols["submit"]
        known = self._npast + n_known
        first = float(sub[0])
        period = 86400.0 * max(1, math.ceil(horizon / 86400.0))
        ks = [k for k in range(1, self.days + 1) if now - k * period >= first]
        if ks:
            shifts = period * np.asarray(ks, dtype=np.float64)
            pick = rng.choice(len(shifts), size=n, replace=n > len(shifts))
            ds = shifts[pick]
        else:
            d = horizon if now - horizon >= first else now - first
            ds = np.full(n, d)
        out = []
        for d in ds.tolist():
            if d <= 0.0:
                lo = hi = known
            else:
                lo = int(np.searchsorted(sub[:known], now - d, side="right"))
                hi = int(np.searchsorted(sub[:known], now - d + horizon, side="right"))
            f = {c: v[lo:hi] for c, v in self._cols.items()}
            f["submit"] = f["submit"] + d
            out.append(f)
        return out


def past_jobs(wl: Workload, jobs: int) -> Workload | None:
    """Up to ``jobs`` jobs of the trace just before the window ``wl`` (``None`` when
    there are none or the trace cannot be found: the lookahead then uses only the
    window's own past)."""
    from hpcgym.workload.traces import trace_past

    try:
        return trace_past(wl, jobs)
    except ValueError:
        return None


def compose_rollout(
    sim: Simulation,
    wait: np.ndarray,
    wait_rt: np.ndarray,
    run: np.ndarray,
    run_rt: np.ndarray,
    fut: dict[str, np.ndarray],
    fut_rt: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Engine arrays of an imagined state: the jobs submitted so far (sampled run times
    for the waiting and running ones) followed by the sampled future arrivals, at the
    current decision point, with the compiled SJBF backfiller and no online estimator."""
    nxt = int(sim.C[K.C_NEXT])
    nf = len(fut_rt)
    n = nxt + nf
    JF = np.empty((K.NF, n))
    JI = np.empty((K.NI, n), dtype=np.int64)
    JF[:, :nxt] = sim.JF[:, :nxt]
    JI[:, :nxt] = sim.JI[:, :nxt]
    if nf:
        JF[:, nxt:] = 0.0
        JI[:, nxt:] = 0
        JF[K.F_SUBMIT, nxt:] = fut["submit"]
        JF[K.F_RUNTIME, nxt:] = fut_rt
        JF[K.F_REQUEST, nxt:] = fut["request"]
        JF[K.F_EST, nxt:] = fut["request"]
        JF[K.F_RANK, nxt:] = fut["request"]  # with a separate ranking estimate
        JF[K.F_START, nxt:] = np.nan
        JF[K.F_BFSHADOW, nxt:] = np.nan
        JF[K.F_HEADSINCE, nxt:] = np.nan
        JI[K.I_PROCS, nxt:] = fut["procs"]
        JI[K.I_BFHEAD, nxt:] = -1
    JF[K.F_RUNTIME, wait] = wait_rt
    JF[K.F_RUNTIME, run] = run_rt
    S = sim.S.copy()
    S[K.S_UNTIL] = np.inf
    C = sim.C.copy()
    C[K.C_N] = n
    C[K.C_ONLINE] = 0
    C[K.C_BACKFILL] = K.BF_SJBF
    KX.rebuild_running(JF, JI, C)
    return JF, JI, S, C, np.zeros((2, 1))


class WindowPools:
    """The clairvoyant draws of ``Lookahead(runtimes="user-pool")``: a job's run times
    from the real run times (capped at the requests) of the other jobs of its group in
    the window -- the same user (``match="user"``), or first the same user and request
    (``"user-request"``) -- then of all other jobs of the window; above ``elapsed``;
    the request when none is left; at most the job's request."""

    def __init__(self, wl: Workload, match: str) -> None:
        self.runtime = np.minimum(np.asarray(wl.runtime, float), np.asarray(wl.request, float))
        self.request = np.asarray(wl.request, float)
        user = np.asarray(wl.user)
        keys = [user] if match == "user" else [np.stack([user, self.request], 1), user]
        # per level (the last: every job of the window): each job's group, each group's
        # members (sorted) and their run times
        self.levels: list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]] = []
        for key in keys:
            _, g = np.unique(key, axis=0, return_inverse=True)
            g = g.ravel()
            order = np.argsort(g, kind="stable")
            cuts = np.flatnonzero(np.diff(g[order])) + 1
            members = np.split(order, cuts)
            self.levels.append((g, members, [self.runtime[m] for m in members]))
        everyone = np.arange(len(user))
        self.levels.append((np.zeros(len(user), np.intp), [everyone], [self.runtime]))
        # the run time of the user's job with the same request submitted just before
        # each job (runtimes="predecessor"; nan: none)
        self.previous = np.full(len(user), np.nan)
        last: dict[tuple[int, float], int] = {}
        for j, pair in enumerate(zip(user.tolist(), self.request.tolist(), strict=True)):
            if pair in last:
                self.previous[j] = self.runtime[last[pair]]
            last[pair] = j

    def draw(
        self, jobs: np.ndarray, elapsed: np.ndarray, n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """``(n, len(jobs))`` run times of the jobs ``jobs`` that have run ``elapsed``."""
        out = np.empty((n, len(jobs)))
        for i, (j, el) in enumerate(zip(jobs.tolist(), elapsed.tolist(), strict=True)):
            vals = None
            for g, members, rts in self.levels:
                m, a = members[g[j]], rts[g[j]]
                keep = m != j
                if el > 0.0:
                    keep &= a > el
                if keep.any():
                    vals = a[keep]
                    break
            if vals is None:
                out[:, i] = self.request[j]
            else:
                out[:, i] = vals[rng.integers(len(vals), size=n)]
        np.minimum(out, self.request[jobs], out=out)
        np.maximum(out, np.nextafter(elapsed, np.inf), out=out)
        return out

    def predecessor(
        self, jobs: np.ndarray, elapsed: np.ndarray, n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """``(n, len(jobs))`` run times of ``runtimes="predecessor"``: the real run time
        of the user's like job submitted just before (finished or not), where there is
        one above ``elapsed``; else :meth:`draw`'s."""
        out = self.draw(jobs, elapsed, n, rng)
        prev = self.previous[jobs]
        use = prev > elapsed  # False for nan
        out[:, use] = np.minimum(prev[use], self.request[jobs[use]])
        return out
