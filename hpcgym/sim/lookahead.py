"""One-step lookahead backfillers: decide at each decision point by simulating the choices.

Both are deciders (:mod:`hpcgym.sim.deciders`) at the engine's backfill decision points
with ``candidates="easy"`` (guarded: a candidate is a job EASY itself would start, so
the reserved head job is never delayed beyond its reservation). At a decision point the
options are the first ``k`` candidates in SJBF order (shortest estimate first) and
STOP (no more backfilling at this instant). Each option is applied to a copy of the
state, the rest is *rolled out* with the compiled EASY-SJBF backfiller, and the option
with the lowest rollout cost is taken. Ties go to the earliest option in the order
``candidates (SJBF order) ..., STOP``: the SJBF choice wins a tie, STOP only wins when
strictly better.

:class:`LookaheadOracle` (``LOOKAHEAD1-CLAIRVOYANT``, formerly ``LOOKAHEAD-ORACLE``) is
**clairvoyant**: its rollouts see the real future of the window (arrivals and actual run
times). It is not a scheduler a site could run but a *reference point*: one step of
lookahead, rolled out with EASY-SJBF. What it reaches is a lower bound on the room that
clairvoyance gives (a clairvoyant static order or a search can do better), not an upper
bound on anything.

:class:`Lookahead` (``LOOKAHEAD1-ONLINE``, formerly ``LOOKAHEAD``) is **online and
honest**: a rollout only uses what a real scheduler knows at that instant -- the jobs
already submitted and their requests, the run times of finished jobs, the past of the
trace (submissions before now) and the simulation's own estimates. The unknown future is
replaced by Monte Carlo samples: arrivals replayed from the recent past
(:class:`PastReplay`) and run times drawn from the users' history of actual/requested
ratios (:class:`UserHistorySampler`, any :class:`RuntimeSampler` can replace it),
averaged over ``samples`` futures that every option shares (common random numbers).

Cost-improvement guarantee (the classical property of rollout algorithms, Bertsekas):
with ``horizon="window"`` and rollouts that use the simulation's own estimates
(``rollout="same"``), the oracle's option values are exact (deterministic model), the
SJBF choice -- EASY-SJBF's own action -- is always an option, and the value of the
option taken at one decision equals the value of the SJBF option at the next. So the
value never increases from decision to decision, and the final AVEbsld is **never above
EASY-SJBF's** on any window (tested). With ``rollout="actual"`` (rollouts believe the
actual run times, while the real run keeps its request-based estimates) or a limited
horizon, the rollout is only a model of the continuation and the guarantee is lost.

See ``docs/research/findings.md`` for measured results and costs.
"""

from __future__ import annotations

import math
import re
import time
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim import _core_ext as KX
from hpcgym.sim.futures import PastReplay, WindowPools, compose_rollout, past_jobs
from hpcgym.sim.samplers import (  # re-exported: the samplers lived here before
    Ave2ResidualSampler,
    RuntimeSampler,
    UserHistorySampler,
    _int_option,
    make_sampler,
)

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation
    from hpcgym.workload.core import Workload

__all__ = [
    "Ave2ResidualSampler",
    "Lookahead",
    "LookaheadOracle",
    "PastReplay",
    "RuntimeSampler",
    "UserHistorySampler",
    "parse_horizon",
]

_NORMAL = NormalDist()
#: ``Lookahead(runtimes=...)``: the two online kinds, then the clairvoyant diagnostics
_RUNTIMES = (
    "sampled",
    "request",
    "actual",
    "noisy",
    "actual-running",
    "actual-waiting",
    "user-pool",
    "predecessor",
)
_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_horizon(value: str | int | float | None) -> tuple[str, float]:
    """A rollout horizon: ``("window", inf)``, ``("jobs", N)`` or ``("seconds", X)``.

    :param value: ``None``, ``"window"`` or ``"all"`` (the rest of the window); an
        integer (or its string): that many further arrivals; a number with a unit
        ``s``, ``m``/``min``, ``h`` or ``d`` (e.g. ``"12h"``): arrivals up to that many
        seconds after now
    """
    if value is None:
        return "window", math.inf
    if isinstance(value, bool):
        raise ValueError(f"bad horizon {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"horizon must be >= 0 jobs, got {value}")
        return "jobs", float(value)
    text = str(value).strip().lower()
    if text in ("window", "all", "inf", "none"):
        return "window", math.inf
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(s|m|min|h|d)?", text)
    if m is None:
        raise ValueError(
            f"bad horizon {value!r}: want 'window', a number of jobs (e.g. 256) or a time "
            "such as 3600s, 30m, 12h, 2d"
        )
    num, unit = float(m.group(1)), m.group(2)
    if unit is None:
        if num != int(num) or isinstance(value, float):
            raise ValueError(f"horizon {value!r}: a job count must be an integer; add s/m/h/d")
        return "jobs", float(int(num))
    return "seconds", num * _UNITS[unit]


def bsld(wait: np.ndarray, runtime: np.ndarray) -> np.ndarray:
    """Bounded slowdown ``max((wait + runtime) / max(runtime, 10), 1)`` per job."""
    return np.maximum((wait + runtime) / np.maximum(runtime, 10.0), 1.0)


def _options(sim: Simulation, k: int) -> list[int]:
    """The first ``k`` EASY-allowed candidates in SJBF order (``(est, index)``)."""
    jobs, easy = sim.candidates()
    jobs = jobs[easy]
    if len(jobs) == 0:
        return []
    est = sim.estimates[jobs]
    order = np.lexsort((jobs, est))
    return [int(j) for j in jobs[order[:k]]]


class _Counted:
    """Shared counters of the lookahead deciders."""

    def _reset_counters(self) -> None:
        self._counters: dict[str, int] = {
            "lookahead_decisions": 0,
            "lookahead_rollouts": 0,
            "lookahead_stops": 0,
            "lookahead_not_sjbf": 0,
        }
        self.seconds = 0.0

    @property
    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def _count(self, best: int, n_opts: int, rollouts: int, t0: float) -> None:
        c = self._counters
        c["lookahead_decisions"] += 1
        c["lookahead_rollouts"] += rollouts
        if best == n_opts - 1:
            c["lookahead_stops"] += 1
        if best != 0:
            c["lookahead_not_sjbf"] += 1
        self.seconds += time.perf_counter() - t0


# ============================================================================ oracle
class LookaheadOracle(_Counted):
    """Clairvoyant one-step lookahead over EASY-SJBF rollouts (``LOOKAHEAD1-CLAIRVOYANT``):
    a reference point, not a bound.

    At every decision point: for each of the first ``k`` EASY-allowed candidates in
    SJBF order, and for STOP, clone the simulation (:meth:`Simulation.clone`), apply
    the option, switch the clone to the compiled SJBF backfiller
    (:meth:`Simulation.switch`) and run it to the horizon with the **actual** future of
    the window (arrivals and run times); the cost is the sum of the bounded slowdowns
    of the jobs not yet started (so: the window's AVEbsld, up to a constant). The
    lowest cost wins; ties go to the earliest option (candidates in SJBF order, then
    STOP). It knows the future, so it is not a scheduler a site could run; and it looks
    one step ahead only, so what it reaches is a lower bound on the room that perfect
    knowledge gives to guarded backfilling; it bounds nothing from above.

    :param k: candidates examined per decision (default 16)
    :param horizon: ``"window"`` (default: the rest of the window), a number of further
        arrivals, or a time (``"12h"``); see :func:`parse_horizon`. The cost then
        covers the jobs arriving within the horizon
    :param rollout: estimates the rollouts' EASY-SJBF believes: ``"same"`` (default:
        the simulation's own, e.g. the requests -- rollouts are then exactly what
        EASY-SJBF would do next, which gives the guarantee of the module doc) or
        ``"actual"`` (EASY-SJBF-AR rollouts)
    :param reuse: with ``horizon="window"`` and ``rollout="same"``, take the SJBF
        option's value from the previous decision instead of rolling it out again
        (exact; saves one rollout per decision)
    """

    name = "lookahead1-clairvoyant"
    candidates = "easy"

    def __init__(
        self,
        k: int | str = 16,
        horizon: str | int | None = "window",
        rollout: str = "same",
        reuse: bool | str = True,
    ) -> None:
        self.k = _int_option("k", k, 1)
        self.horizon = parse_horizon(horizon)
        rollout = str(rollout).lower()
        if rollout in ("request", "requests"):
            rollout = "same"
        if rollout not in ("same", "actual"):
            raise ValueError(f"rollout must be 'same' or 'actual', got {rollout!r}")
        self.rollout = rollout
        if isinstance(reuse, str):
            reuse = reuse.strip().lower() in ("1", "true", "yes", "on")
        self.reuse = bool(reuse) and self.horizon[0] == "window" and rollout == "same"
        self._sim: Simulation | None = None
        self._reset_counters()

    def _bind(self, sim: Simulation) -> None:
        wl = sim.workload
        self._sim = sim
        self._submit = np.asarray(wl.submit, dtype=np.float64)
        self._runtime = np.asarray(wl.runtime, dtype=np.float64)
        self._last: tuple[int, np.ndarray] | None = None  # (decision, final starts)
        self._reset_counters()

    def _last_job(self, sim: Simulation) -> int:
        kind, h = self.horizon
        n = len(sim.workload)
        nxt = int(sim.C[K.C_NEXT])
        if kind == "window":
            return n
        if kind == "jobs":
            return min(n, nxt + int(h))
        return max(nxt, int(np.searchsorted(self._submit, sim.now + h, side="right")))

    def value(self, sim: Simulation, option: int | None, last_job: int | None = None) -> float:
        """Rollout cost of ``option`` (a candidate job, or ``None`` = STOP) at the
        current decision point of ``sim``: the sum of the bounded slowdowns of the jobs
        not started now (up to the horizon) after EASY-SJBF rollouts. ``sim`` is not
        changed.

        :param sim: a simulation at a decision point
        :param option: a candidate, or ``None`` for STOP
        :param last_job: horizon as a job index (default: from ``horizon``)
        """
        if sim is not self._sim:
            self._bind(sim)
        lj = self._last_job(sim) if last_job is None else last_job
        affected = np.flatnonzero(sim.status[:lj] <= K.ST_WAITING)
        return self._cost(self._rollout(sim, option, lj), affected)

    def _cost(self, start: np.ndarray, affected: np.ndarray) -> float:
        s = start[affected]
        return float(bsld(s - self._submit[affected], self._runtime[affected]).sum())

    def _rollout(self, sim: Simulation, option: int | None, lj: int) -> np.ndarray:
        """Start times after applying ``option`` and rolling out with EASY-SJBF."""
        c = sim.clone(decider=False)
        if option is None:
            c.stop()
        else:
            c.backfill(option)
        c.switch(
            backfill="sjbf",
            estimate="actual" if self.rollout == "actual" else None,
            last_job=lj if lj < len(sim.workload) else None,
        )
        c.advance()  # compiled to the end (built-in backfiller, no online estimator)
        return c.JF[K.F_START]

    def __call__(self, sim: Simulation) -> int | None:
        if sim is not self._sim:
            self._bind(sim)
        t0 = time.perf_counter()
        opts: list[int | None] = list(_options(sim, self.k))
        opts.append(None)
        lj = self._last_job(sim)
        affected = np.flatnonzero(sim.status[:lj] <= K.ST_WAITING)
        decisions = int(sim.C[K.C_DECISIONS])
        values = np.empty(len(opts))
        starts: list[np.ndarray] = []  # each option's final start times
        rollouts = 0
        for i, o in enumerate(opts):
            if (
                i == 0
                and o is not None
                and self._last is not None
                and self._last[0] == decisions - 1
            ):
                # the SJBF option continues exactly the rollout chosen at the previous
                # decision (deterministic model): reuse its final start times
                starts.append(self._last[1])
            else:
                starts.append(self._rollout(sim, o, lj))
                rollouts += 1
            values[i] = self._cost(starts[i], affected)
        best = int(np.argmin(values))  # first minimum: SJBF order, STOP last
        self._count(best, len(opts), rollouts, t0)
        if self.reuse:
            self._last = (decisions, starts[best])
        return opts[best]


# ======================================================================= online
class Lookahead(_Counted):
    """Online one-step lookahead over EASY-SJBF rollouts of Monte Carlo futures
    (``LOOKAHEAD1-ONLINE``).

    A scheduler a site could run: at every decision point it draws ``samples``
    imagined futures from what is known now -- the run times of the waiting and
    running jobs (``sampler``, conditioned on the time already run), and future
    arrivals over ``horizon`` seconds replayed from the recent past (:class:`PastReplay`)
    with sampled run times -- and, for each option (the first ``k`` EASY-allowed
    candidates in SJBF order, then STOP), applies it in every future and rolls out with
    the compiled EASY-SJBF on the simulation's own estimates (future arrivals get their
    request). The cost of an option is the mean bounded slowdown of the jobs waiting now
    and the sampled arrivals, averaged over the futures (the same futures for every
    option: common random numbers). The lowest mean cost wins, ties to the earliest
    option; but it replaces the SJBF choice (the first option) only if its paired
    improvement over the futures exceeds ``z`` standard errors -- a guard against
    acting on sampling noise. Guarded like the oracle: only EASY-allowed candidates.

    Measured on SDSC-SP2 this lands on par with EASY-SJBF (docs/research/findings.md): the
    oracle's gain comes from knowing the future, which these futures do not capture.

    :param k: candidates examined per decision (default 16)
    :param samples: futures per decision (default 4)
    :param horizon: seconds of future arrivals to sample (default ``"6h"``; ``3600s``,
        ``2d``...; see :func:`parse_horizon`; a job count is not accepted: the number of
        future arrivals is unknown online)
    :param seed: seed of the decider's random generator (every random choice)
    :param past: jobs of the trace before the window that count as known history
        (arrivals and run times; loaded with :func:`hpcgym.workload.load` from the
        window's source), or a :class:`Workload` of them; 0: only the window's own past
    :param future: ``"replay"`` (default) or ``"none"`` (no future arrivals: the naive
        planner); ``"actual"`` is a clairvoyant diagnostic (the real
        arrivals of the window)
    :param runtimes: ``"sampled"`` (default) or ``"request"`` (every unknown run time is
        its request: the naive planner); ``"actual"`` is a clairvoyant diagnostic (the
        real run times of the jobs submitted so far), and ``"noisy"`` the same blurred:
        each job gets a fixed prediction ``actual * exp(noise * e)``, ``e ~ N(0, 1)``,
        and its run times are drawn log-normal around that prediction with log-SD
        ``noise`` (conditioned on the time already run, capped at the request): a
        predictive distribution whose log error has the standard deviation ``noise``;
        ``"actual-running"`` and ``"actual-waiting"`` give the real run times of only the
        running or only the waiting jobs, the other group's drawn by ``sampler``
        (future arrivals as with ``"actual"``); ``"user-pool"`` knows each user's
        run times but not which job is which: a job's run times are drawn from the real
        run times of the *other* jobs of its user in the window, past and future (with
        ``match="user-request"`` first of those with its request), or of all other
        jobs of the window when its user has none (conditioned on the time already
        run, capped at its request; future arrivals as with ``"actual"``);
        ``"predecessor"`` gives each job the real run time of its user's job with the
        same request submitted just before it in the window, finished or not (where that
        is above the time already run; otherwise ``"user-pool"``'s draws by user and
        request): a diagnostic of what the resemblance of a user's consecutive like
        jobs is worth to the planner
    :param noise: log-SD of ``runtimes="noisy"`` (required there, > 0; 0 otherwise)
    :param shared: with ``runtimes="noisy"``, the share of the predictions' error variance
        that a user's jobs have in common (default 0: independent errors; 1: one error per
        user): each job's error is ``sqrt(1 - shared) e_job + sqrt(shared) e_user``, still
        of log-SD ``noise``; the draws around each prediction are unchanged
    :param days: :class:`PastReplay` periods to draw the replayed block from
    :param sampler: a :class:`RuntimeSampler`, or the name of a built-in one
        (:data:`hpcgym.sim.samplers.SAMPLERS`): ``"user-history"`` (default,
        :class:`UserHistorySampler` with ``kind``, ``match`` and ``recent``) or
        ``"ave2-residual"`` (:class:`Ave2ResidualSampler` with ``recent``)
    :param z: standard errors an option must beat the SJBF choice by (default 1; 0:
        plain argmin)
    :param kind: default sampler: ``"runtime"`` (default) or ``"ratio"``
    :param match: default sampler: ``"user"`` (default) or ``"user-request"``
    :param recent: values kept per user (default: the sampler's, 4 for
        ``user-history`` and 2 for ``ave2-residual``)
    """

    name = "lookahead1-online"
    candidates = "easy"

    def __init__(
        self,
        k: int | str = 16,
        samples: int | str = 4,
        horizon: str | float = "6h",
        seed: int | str | None = 0,
        past: int | str | Workload = 20000,
        future: str = "replay",
        runtimes: str = "sampled",
        days: int | str = 7,
        sampler: RuntimeSampler | str | None = None,
        z: float | str = 1.0,
        kind: str = "runtime",
        match: str = "user",
        recent: int | str | None = None,
        noise: float | str = 0.0,
        shared: float | str = 0.0,
    ) -> None:
        self.k = _int_option("k", k, 1)
        self.z = float(z)
        self.samples = _int_option("samples", samples, 1)
        hkind, h = parse_horizon(horizon)
        if hkind == "jobs":
            raise ValueError(
                f"the online lookahead needs a horizon in time (e.g. 12h), got {horizon!r}"
            )
        self.horizon = h
        self.seed = None if seed is None or seed == "None" else _int_option("seed", seed, 0)
        self.past = past if not isinstance(past, (int, str)) else _int_option("past", past, 0)
        self.future = str(future).lower()
        if self.future not in ("replay", "none", "actual"):
            raise ValueError(
                f"future must be 'replay', 'none' or 'actual' (clairvoyant), got {future!r}"
            )
        self.runtimes = str(runtimes).lower()
        if self.runtimes not in _RUNTIMES:
            raise ValueError(
                f"runtimes must be one of {', '.join(map(repr, _RUNTIMES))} (all but the "
                f"first two clairvoyant diagnostics), got {runtimes!r}"
            )
        self.noise = float(noise)
        if self.runtimes == "noisy" and not (math.isfinite(self.noise) and self.noise > 0.0):
            raise ValueError(
                f"runtimes=noisy needs a log-SD noise > 0, got noise={noise!r} "
                "(runtimes=actual is the noiseless case)"
            )
        if self.runtimes != "noisy" and self.noise != 0.0:
            raise ValueError(f"noise={noise!r} applies to runtimes=noisy only")
        self.match = match
        self.shared = float(shared)
        if not (0.0 <= self.shared <= 1.0):
            raise ValueError(f"shared must be a share of the variance in [0, 1], got {shared!r}")
        if self.runtimes != "noisy" and self.shared != 0.0:
            raise ValueError(f"shared={shared!r} applies to runtimes=noisy only")
        if sampler is None or isinstance(sampler, str):
            name = "user-history" if sampler is None else sampler.lower()
            opts: dict[str, object] = {} if recent is None else {"recent": recent}
            if name == "user-history":
                opts.update(kind=kind, match=match)
            elif (kind, match) != ("runtime", "user"):
                raise ValueError(f"kind and match apply to sampler=user-history, not {name!r}")
            self.sampler: RuntimeSampler = make_sampler(name, **opts)
        elif recent is not None or (kind, match) != ("runtime", "user"):
            raise ValueError("kind, match and recent configure a named sampler only")
        else:
            self.sampler = sampler
        self.arrivals = PastReplay(days=_int_option("days", days, 1))
        self._sim: Simulation | None = None
        self._reset_counters()

    def _bind(self, sim: Simulation) -> None:
        wl = sim.workload
        past = self.past if not isinstance(self.past, int) else past_jobs(wl, self.past)
        self.sampler.bind(sim, past)
        self.arrivals.bind(sim, past)
        self.rng = np.random.default_rng(self.seed)
        if self.runtimes == "noisy":  # its own stream: the futures stay those of 'actual'
            seq = None if self.seed is None else [self.seed, 0x6E6F697379]
            self._noise_rng = np.random.default_rng(seq)
            self._err = self._noise_rng.standard_normal(len(wl))
            if self.shared > 0.0:  # one more draw per user, after the jobs' (same stream)
                _, user_of = np.unique(np.asarray(wl.user), return_inverse=True)
                per_user = self._noise_rng.standard_normal(int(user_of.max()) + 1)
                r = self.shared
                self._err = math.sqrt(1.0 - r) * self._err + math.sqrt(r) * per_user[user_of]
        if self.runtimes in ("user-pool", "predecessor"):  # its own stream, like 'noisy'
            seq = None if self.seed is None else [self.seed, 0x706F6F6C]
            self._noise_rng = np.random.default_rng(seq)
            match = "user-request" if self.runtimes == "predecessor" else self.match
            self._pools = WindowPools(wl, match)
        self._user = np.asarray(wl.user)
        self._sim = sim
        self._reset_counters()

    def _clairvoyant(self, sim: Simulation, jobs: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        """``(samples, len(jobs))`` run times of the diagnostics ``runtimes="noisy"``
        (:meth:`_blurred`), ``"user-pool"`` and ``"predecessor"`` (:class:`WindowPools`)."""
        if self.runtimes == "noisy":
            return self._blurred(sim, jobs, elapsed)
        if self.runtimes == "predecessor":
            return self._pools.predecessor(jobs, elapsed, self.samples, self._noise_rng)
        return self._pools.draw(jobs, elapsed, self.samples, self._noise_rng)

    def _blurred(self, sim: Simulation, jobs: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        """``(samples, len(jobs))`` run times of ``runtimes="noisy"``: log-normal around
        each job's fixed noisy prediction, above ``elapsed``, at most the request."""
        s, rng = self.noise, self._noise_rng
        JF = sim.JF
        mu = np.log(np.maximum(JF[K.F_RUNTIME, jobs], 1.0)) + s * self._err[jobs]
        z = rng.standard_normal((self.samples, len(jobs)))
        for i in np.flatnonzero(elapsed > 0.0).tolist():  # truncated below at elapsed
            z0 = (math.log(elapsed[i]) - mu[i]) / s
            lo = _NORMAL.cdf(z0)
            u = lo + (1.0 - lo) * rng.random(self.samples)
            u = np.clip(u, 1e-300, 1.0 - 1e-12)
            z[:, i] = np.maximum([_NORMAL.inv_cdf(float(v)) for v in u], z0)
        out = np.exp(mu + s * z)
        np.minimum(out, JF[K.F_REQUEST, jobs], out=out)
        np.maximum(out, np.nextafter(elapsed, np.inf), out=out)
        return out

    def _futures(self, sim: Simulation) -> list[tuple[np.ndarray, ...]]:
        """``samples`` imagined states (engine arrays) at this decision point."""
        now = sim.now
        n, rng = self.samples, self.rng
        wait, run = sim.waiting(), sim.running()
        JF = sim.JF
        req_w, req_r = JF[K.F_REQUEST, wait], JF[K.F_REQUEST, run]
        nxt = int(sim.C[K.C_NEXT])
        if self.future == "actual":  # diagnostic, clairvoyant: the real arrivals
            wl = sim.workload
            hi = int(np.searchsorted(wl.submit, now + self.horizon, side="right"))
            real = {
                c: np.asarray(getattr(wl, c))[nxt:hi]
                for c in ("submit", "procs", "request", "user")
            }
            real["runtime"] = np.asarray(wl.runtime)[nxt:hi]
            futs = [real] * n
        elif self.future == "replay" and self.horizon > 0:
            futs = self.arrivals.sample(now, nxt, self.horizon, n, rng)
        else:
            none = np.empty(0)
            empty = {"submit": none, "procs": none.astype(np.int64), "request": none}
            futs = [dict(empty, user=none.astype(np.int64)) for _ in range(n)]
        if self.runtimes == "actual":  # diagnostic, clairvoyant: the real run times
            rt_w = np.broadcast_to(JF[K.F_RUNTIME, wait], (n, len(wait)))
            rt_r = np.broadcast_to(JF[K.F_RUNTIME, run], (n, len(run)))
            rt_f = [f.get("runtime", f["request"]) for f in futs]
        elif self.runtimes in ("noisy", "user-pool", "predecessor"):  # clairvoyant, blurred
            # real run times, or the users' real run times
            rt_w = self._clairvoyant(sim, wait, np.zeros(len(wait)))
            rt_r = self._clairvoyant(sim, run, now - JF[K.F_START, run])
            rt_f = [f.get("runtime", f["request"]) for f in futs]
        elif self.runtimes == "request":
            rt_w = np.broadcast_to(req_w, (n, len(wait)))
            rt_r = np.broadcast_to(req_r, (n, len(run)))
            rt_f = [f["request"] for f in futs]
        else:
            self.sampler.observe(sim)
            rt_w = self.sampler.sample(self._user[wait], req_w, np.zeros(len(wait)), n, rng)
            elapsed = now - JF[K.F_START, run]
            rt_r = self.sampler.sample(self._user[run], req_r, elapsed, n, rng)
            if self.runtimes == "sampled":
                rt_f = [
                    self.sampler.sample(f["user"], f["request"], np.zeros(len(f["user"])), 1, rng)[
                        0
                    ]
                    for f in futs
                ]
            else:  # diagnostics: one group's real run times, arrivals as with 'actual'
                rt_f = [f.get("runtime", f["request"]) for f in futs]
                if self.runtimes == "actual-running":
                    rt_r = np.broadcast_to(JF[K.F_RUNTIME, run], (n, len(run)))
                else:
                    rt_w = np.broadcast_to(JF[K.F_RUNTIME, wait], (n, len(wait)))
        return [
            compose_rollout(sim, wait, rt_w[s], run, rt_r[s], futs[s], rt_f[s]) for s in range(n)
        ]

    def __call__(self, sim: Simulation) -> int | None:
        if sim is not self._sim:
            self._bind(sim)
        t0 = time.perf_counter()
        opts: list[int | None] = list(_options(sim, self.k))
        opts.append(None)
        wait = sim.waiting()
        values = np.zeros((self.samples, len(opts)))
        for s, (JF0, JI0, S0, C0, PF) in enumerate(self._futures(sim)):
            nxt = int(sim.C[K.C_NEXT])
            jobs = np.concatenate([wait, np.arange(nxt, JF0.shape[1])])
            sub, rt = JF0[K.F_SUBMIT, jobs], JF0[K.F_RUNTIME, jobs]
            for i, o in enumerate(opts):
                JF, JI, S, C = JF0.copy(), JI0.copy(), S0.copy(), C0.copy()
                if o is None:
                    K.stop_backfilling(C)
                else:
                    K.backfill_start(JF, JI, S, C, o)
                    KX.rerun_pass(JF, JI, S, C, PF)
                K.advance(JF, JI, S, C, PF)
                values[s, i] = bsld(JF[K.F_START, jobs] - sub, rt).mean()
        mean = values.mean(axis=0)
        self.last_values = mean  # the options' costs at this decision (for inspection)
        best = int(np.argmin(mean))
        if best != 0 and self.z > 0.0 and self.samples > 1:
            diff = values[:, 0] - values[:, best]
            se = diff.std(ddof=1) / math.sqrt(self.samples)
            if diff.mean() <= self.z * se:
                best = 0
        self._count(best, len(opts), len(opts) * self.samples, t0)
        return opts[best]
