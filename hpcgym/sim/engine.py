"""The one event-driven scheduling engine.

:class:`Simulation` owns the complete state of one simulated window and steps it
from one stop to the next (:meth:`Simulation.advance`). A stop is either the end,
a batch of arrivals that an online estimator must estimate, or -- when the
backfiller is external (the RL agent, or any Python backfiller) -- a **decision
point**: the head of the queue is blocked and at least one waiting job is a
backfill candidate. The built-in backfillers (EASY, SJBF, conservative) answer the
same question at the same point inside the compiled pass.

Quick use::

    from hpcgym.sim import simulate
    res = simulate(workload, policy="FCFS", backfill="easy", estimate="request")
    res.metrics["avg_bsld"]

Driving decisions yourself::

    sim = Simulation(workload, backfill="external")
    while sim.advance() == Event.DECISION:
        jobs, flags = sim.candidates()          # FCFS order; flags: EASY-allowed
        if len(jobs): sim.backfill(jobs[0])     # or sim.stop()
        else: sim.stop()
    sim.result()

Semantics: see ``docs/engine.md``.
"""

from __future__ import annotations

import copy
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim import _core_ext as KX
from hpcgym.sim._estimates import setup_estimate
from hpcgym.sim.estimators import Estimator
from hpcgym.sim.feed import EstimatorFeed, cap_estimates  # re-exported
from hpcgym.sim.inspection import Inspection
from hpcgym.sim.metrics import compute_metrics
from hpcgym.sim.options import (  # the option tables, re-exported
    BACKFILLS,
    CANDIDATE_MODES,
    CORRECTIONS,
    POLICIES,
    _choice,
    policy_id,
)
from hpcgym.sim.switching import Switching
from hpcgym.sim.view import EngineView
from hpcgym.workload.core import Workload

__all__ = [
    "BACKFILLS",
    "EstimatorFeed",
    "cap_estimates",
    "CANDIDATE_MODES",
    "CORRECTIONS",
    "Event",
    "POLICIES",
    "SimResult",
    "SimSnapshot",
    "Simulation",
    "simulate",
]


def _copy_generator(g: np.random.Generator) -> np.random.Generator:
    """An independent generator in the same state as ``g`` (cheaper than deepcopy)."""
    bg = type(g.bit_generator)()
    bg.state = g.bit_generator.state
    return np.random.Generator(bg)


class Event(enum.IntEnum):
    """Why :meth:`Simulation.advance` returned."""

    DONE = K.EV_DONE
    ESTIMATE = K.EV_ESTIMATE  # handled inside advance(); never returned to callers
    DECISION = K.EV_DECISION
    PAUSE = K.EV_PAUSE  # advance(until=...) stopped before an event later than `until`
    QUEUE = K.EV_QUEUE  # policy="external": choose the head of the queue (choose())
    INSPECT = K.EV_INSPECT  # inspection on: accept() or reject() the pick's start


@dataclass
class SimResult:
    """Outcome of one simulation.

    :param start: start time of every job (trace seconds)
    :param backfilled: True for jobs started by backfilling
    :param metrics: see :func:`hpcgym.sim.metrics.compute_metrics`
    :param counters: engine counters (decisions, violations, corrections)
    :param config: the simulation's options
    :param head_since: per job, the time it last became the reserved head of the queue
        (the start of the reservation it started under; ``nan`` for a job that started
        without one: when it reached the head, by backfilling, or after it was overtaken)
        -- the input of :func:`hpcgym.sim.metrics.request_reservation_delays` for any
        queue policy; ``None`` with conservative backfilling (every job holds a
        reservation there, and the engine does not record them)
    """

    workload: Workload
    start: np.ndarray
    backfilled: np.ndarray
    metrics: dict[str, float]
    counters: dict[str, int] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    head_since: np.ndarray | None = None

    @property
    def wait(self) -> np.ndarray:
        return self.start - self.workload.submit

    def to_dict(self) -> dict[str, Any]:
        return {**self.config, **self.metrics, **self.counters}


@dataclass(frozen=True, eq=False)
class SimSnapshot:
    """An opaque copy of a :class:`Simulation`'s complete state
    (:meth:`Simulation.snapshot`); :meth:`Simulation.restore` puts it back, as often as
    wanted. It holds copies of the engine arrays and deep copies of the Python-side
    state (estimator, estimator feed, random generator, decider, configuration)."""

    owner: Simulation
    arrays: tuple[np.ndarray, ...]
    py: dict[str, Any]


class Simulation(Inspection, Switching):
    """The resumable state of one simulated window (inspection: :class:`Inspection`).

    :param workload: jobs to simulate (a window of a trace; submit-ordered)
    :param policy: queue policy name (see :data:`POLICIES`), or ``external``: the caller
        chooses the head of the queue at every queue decision (:attr:`Event.QUEUE`,
        :meth:`choose`); the engine starts it if it fits, else reserves for it and
        backfills with ``backfill``
    :param backfill: ``none``, ``easy``, ``sjbf``, ``conservative`` or ``external``
        (decisions are made by the caller at decision points)
    :param estimate: the reservation estimate -- backfill eligibility, the SJBF order,
        the shadow time, conservative reservations -- and, unless ``rank_estimate`` is
        given, the run time the queue policy ranks by: ``request``, ``actual``, a
        registered estimator name, an :class:`Estimator`, or a float array of estimates
        (one per job; capped at the request)
    :param correction: what a running job's estimate becomes when it reaches it
        without finishing: ``requested``, ``incremental`` or ``doubling``
        (Gaussier et al. §5.2). Irrelevant when estimates never under-estimate.
    :param starvation: starvation threshold Θ in seconds (Carastan-Santos §4): a job
        that has waited more than Θ goes first (FCFS among such jobs); ``None`` = off;
        ``"auto"`` = 3 × the workload's largest request.
    :param candidates: with ``backfill="external"``: ``easy`` (only jobs EASY allows:
        the reservation can never be delayed) or ``fit`` (every job that fits now)
    :param external_order: order reported by :meth:`backfill_order` for external
        deciders: ``policy`` (queue order) or ``sjbf``
    :param seed: seed or Generator for stochastic estimators
    :param decider: a Python backfiller ``decide(sim) -> job | None`` (see
        :mod:`hpcgym.sim.deciders`) that :meth:`run` uses when called without a
        callback; its ``counters`` (if any) are merged into the result's
    :param chooser: with ``policy="external"``: a queue decider ``choose(sim) -> job``
        (e.g. :class:`hpcgym.sim.queue_deciders.ScheduleOracle`) that :meth:`run` uses
        at queue decisions; its ``counters`` are merged like the decider's
    :param rest_order: with ``policy="external"``: the queue policy that orders the jobs
        behind the chosen head, which is the order plain EASY backfills in (SJBF sorts
        them by estimate anyway); default ``FCFS``
    :param commit_head: with ``policy="external"``: a chosen head that does not fit keeps
        its place until it starts (RLScheduler's semantics); default ``False``: the head
        is chosen again at every scheduling pass, exactly as the built-in policies
        re-order the queue
    :param rank_estimate: the ranking estimate: the run time the queue policy's key uses
        (SJF, SAF, WFP3, UNICEF, F1-F4... and :meth:`policy_order`), apart from the
        reservation ``estimate``. ``None`` (default): the same as ``estimate``. A
        registered estimator name or :class:`Estimator` (its own random stream; capped at
        the request), or a float array of positive keys used as given: with ``SJF`` an
        array is a static priority order (smallest first; ties by submission)
    :param shadow_window: ``0`` (default): the head's reservation starts at the first
        instant at which it fits. ``> 0`` (EASY, SJBF, external): as Slurm's backfill plans
        it, releasing the running jobs in windows of this many seconds, doubling, so that
        the reservation starts at the end of the last job of the batch in which the head
        fits (Slurm: 30; :mod:`hpcgym.sim._willrun`, the ``SLURM-EASY`` scheduler)
    :param shadow_origin: the clock time of the simulation's time 0, seconds: Slurm aligns
        those windows on Unix time (a replay's ``t0``); default 0
    """

    def __init__(
        self,
        workload: Workload,
        policy: str = "FCFS",
        backfill: str = "easy",
        estimate: str | Estimator | np.ndarray = "request",
        correction: str = "incremental",
        starvation: float | str | None = None,
        candidates: str = "easy",
        external_order: str = "policy",
        seed: int | np.random.Generator | None = 0,
        decider: Callable[[Simulation], int | None] | None = None,
        chooser: Callable[[Simulation], int] | None = None,
        rest_order: str = "FCFS",
        commit_head: bool = False,
        rank_estimate: str | Estimator | np.ndarray | None = None,
        shadow_window: float = 0.0,
        shadow_origin: float = 0.0,
    ) -> None:
        n = len(workload)
        if n == 0:
            raise ValueError("cannot simulate an empty workload")
        self.workload = workload
        self.policy = policy.upper()
        self.backfill_mode = backfill.lower()
        pol = policy_id(policy)
        bf = _choice("backfill", backfill, BACKFILLS)
        if pol == K.POL_EXTERNAL and bf == K.BF_CONSERVATIVE:
            raise ValueError(
                "policy='external' chooses one head at a time; conservative backfilling "
                "reserves for every job in queue order: use backfill none, easy, sjbf or "
                "external"
            )
        corr = _choice("correction", correction, CORRECTIONS)
        if not float(shadow_window) >= 0.0 or (shadow_window and bf == K.BF_CONSERVATIVE):
            raise ValueError(
                f"shadow_window must be >= 0 seconds and applies to backfill none, easy, "
                f"sjbf or external (one reservation), not {shadow_window!r} with {backfill!r}"
            )
        cand = _choice("candidate mode", candidates, CANDIDATE_MODES)
        ext = _choice("external order", external_order, {"policy": 0, "sjbf": 1})
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

        JF = np.zeros((K.NF, n), dtype=np.float64)
        JI = np.zeros((K.NI, n), dtype=np.int64)
        JF[K.F_SUBMIT] = workload.submit
        JF[K.F_RUNTIME] = workload.runtime
        JF[K.F_REQUEST] = workload.request
        JF[K.F_START] = np.nan
        JF[K.F_BFSHADOW] = np.nan
        JF[K.F_HEADSINCE] = np.nan
        JI[K.I_PROCS] = workload.procs
        JI[K.I_BFHEAD] = -1
        if int(workload.procs.max()) > workload.machine_size:
            raise ValueError(
                f"a job needs {int(workload.procs.max())} processors but the machine has "
                f"{workload.machine_size}"
            )
        S = np.zeros(K.NS, dtype=np.float64)
        C = np.zeros(K.NC, dtype=np.int64)
        C[K.C_N] = n
        C[K.C_M] = workload.machine_size
        C[K.C_FREE] = workload.machine_size
        C[K.C_POLICY] = pol
        C[K.C_BACKFILL] = bf
        C[K.C_CANDMODE] = cand
        C[K.C_CORRECTION] = corr
        C[K.C_HEAD] = -1
        C[K.C_BFMODE] = ext
        C[K.C_QCHOICE] = -1
        C[K.C_QCOMMIT] = int(bool(commit_head))
        C[K.C_QREST] = policy_id(rest_order)
        self.rest_order = rest_order.upper()
        S[K.S_SHADOW] = np.inf
        S[K.S_UNTIL] = np.inf
        S[K.S_WILLRUN_WIN] = float(shadow_window)
        S[K.S_WILLRUN_ORIGIN] = float(shadow_origin)
        S[K.S_T] = workload.submit[0]
        if starvation == "auto":
            S[K.S_THETA] = 3.0 * float(workload.request.max())
        elif starvation is not None:
            if float(starvation) <= 0:
                raise ValueError(f"starvation threshold must be > 0 seconds, got {starvation}")
            S[K.S_THETA] = float(starvation)
        self.starvation = float(S[K.S_THETA]) if S[K.S_THETA] > 0 else None

        main = setup_estimate(workload, estimate, self.rng)
        self.estimator: Estimator | None = main.estimator
        self.estimate_name: str = main.name
        JF[K.F_EST] = main.values
        C[K.C_RUN_REQUEST] = int(main.run_request)
        C[K.C_ONLINE] = int(main.online)
        self.rank_estimator: Estimator | None = None
        self.rank_estimate_name: str | None = None  # None: ranked by the estimate
        if rank_estimate is not None:
            bg = self.rng.bit_generator  # the ranking estimator's own stream
            rank_rng = (
                np.random.Generator(bg.jumped())
                if hasattr(bg, "jumped")
                else _copy_generator(self.rng)
            )
            rank = setup_estimate(workload, rank_estimate, rank_rng, ranking=True)
            self.rank_estimator, self.rank_estimate_name = rank.estimator, rank.name
            JF[K.F_RANK] = rank.values
            C[K.C_RANKSEP] = 1
            C[K.C_ONLINE] |= int(rank.online)
        self.JF, self.JI, self.S, self.C = JF, JI, S, C
        self.PF = np.zeros((2, 2 * n + 4) if bf == K.BF_CONSERVATIVE else (2, 1))
        est = self.estimator  # an online estimate always has its estimator object
        self._feed = EstimatorFeed(est) if main.online and est is not None else None
        re_ = self.rank_estimator
        self._rank_feed = EstimatorFeed(re_) if re_ is not None and re_.online else None
        self._sim_seconds = 0.0
        self._buf_jobs = np.empty(n, dtype=np.int64)
        self._buf_flags = np.empty(n, dtype=np.int64)
        self.config = {
            "policy": self.policy,
            "backfill": self.backfill_mode,
            "estimate": self.estimate_name,
            "correction": correction,
            "starvation": self.starvation,
        }
        if shadow_window:
            self.config["shadow_window"] = float(shadow_window)
        if self.rank_estimate_name is not None:
            self.config["rank_estimate"] = self.rank_estimate_name
        self.decider = decider
        if decider is not None:
            self.config["decider"] = getattr(decider, "name", type(decider).__name__)
        self.chooser = chooser
        if chooser is not None:
            self.config["chooser"] = getattr(chooser, "name", type(chooser).__name__)
        self._view: EngineView | None = None
        self._arrival_observers: list[Callable[[Simulation, int, int], None]] = []

    def rebind_arrays(self) -> None:
        """Drop what was built on the engine arrays (:attr:`view`), after the arrays were
        replaced by views of the same values elsewhere (the compiled batch's slots)."""
        self._view = None

    # ------------------------------------------------------------------ stepping
    @property
    def now(self) -> float:
        return float(self.S[K.S_T])

    @property
    def done(self) -> bool:
        return int(self.C[K.C_PHASE]) == K.P_DONE

    def advance(self, until: float | None = None) -> Event:
        """Run to the next decision point (external backfill or queue) or to the end.

        :param until: also stop (``Event.PAUSE``) before handling events later than
            this time; the next call continues from there. ``None``: no limit
        """
        t0 = time.perf_counter()
        self.S[K.S_UNTIL] = np.inf if until is None else float(until)
        while True:
            ev = K.advance(self.JF, self.JI, self.S, self.C, self.PF)
            if ev == K.EV_ESTIMATE:
                self._estimate_arrivals()
                lo, hi = int(self.C[K.C_ARR_LO]), int(self.C[K.C_ARR_HI])
                for observe in self._arrival_observers:
                    observe(self, lo, hi)
                continue
            self._sim_seconds += time.perf_counter() - t0
            return Event(ev)

    def observe_arrivals(self, observer: Callable[[Simulation, int, int], None]) -> None:
        """Call ``observer(sim, lo, hi)`` at every submission of jobs ``lo .. hi-1``, before
        they are queued (the moment an online estimator of the engine predicts them).

        Register before the first :meth:`advance`. Observers see the state of the
        submission time through the public API (``sim.view``, :class:`EstimatorFeed`);
        they must not change the simulation. An online feature predictor of the RL env
        is fed this way, so that it predicts each job when it is submitted, as the
        engine's own estimator does.
        """
        if int(self.C[K.C_NEXT]) > 0:
            raise RuntimeError("observe_arrivals() must be called before the first advance()")
        self._arrival_observers.append(observer)
        self.C[K.C_ONLINE] = 1  # the engine core stops at every arrival batch

    def _estimate_arrivals(self) -> None:
        lo, hi = int(self.C[K.C_ARR_LO]), int(self.C[K.C_ARR_HI])
        if self._feed is not None:  # (arrivals may stop only for observers)
            self._feed.predict(self, lo, hi, self.JF[K.F_EST])
        if self._rank_feed is not None:
            self._rank_feed.predict(self, lo, hi, self.JF[K.F_RANK])

    # ---------------------------------------------------------- decision points
    @property
    def head(self) -> int:
        """The reserved (blocked) head job at this decision point, or -1."""
        return int(self.C[K.C_HEAD])

    @property
    def shadow(self) -> float:
        return float(self.S[K.S_SHADOW])

    @property
    def extra(self) -> int:
        return int(self.C[K.C_EXTRA])

    @property
    def free(self) -> int:
        return int(self.C[K.C_FREE])

    def candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """Candidates at the current decision point, FCFS order.

        Returns ``(jobs, easy_allowed)``: job indices and a bool array telling which
        of them EASY itself would start (fits now, and ends by the shadow or fits in
        the extra processors).
        """
        c = K.candidates(self.JF, self.JI, self.S, self.C, self._buf_jobs, self._buf_flags)
        return self._buf_jobs[:c].copy(), (self._buf_flags[:c] & 1).astype(bool)

    def backfill_order(self) -> np.ndarray:
        """Waiting jobs except the head, in the configured backfill order."""
        JI, C = self.JI, self.C
        nb = K._fill_backfill_order(self.JF, JI, C, int(C[K.C_BFMODE]) == 1)
        return JI[K.I_BFORDER, :nb].copy()

    def backfill(self, job: int) -> bool:
        """Start waiting ``job`` now. Returns True if it delays the head's reservation.

        Raises ``ValueError`` if the job is not a candidate at this decision point.
        """
        if int(self.C[K.C_PHASE]) != K.P_DECIDE:
            raise RuntimeError("backfill() is only valid at a decision point")
        job = int(job)
        if (
            not (0 <= job < len(self.workload))
            or not K.is_candidate(self.JF, self.JI, self.S, self.C, job)
            or int(self.JI[K.I_STATUS, job]) != K.ST_WAITING
            or job == self.head
        ):
            jobs, _ = self.candidates()
            raise ValueError(f"job {job} is not a candidate now; valid: {jobs.tolist()}")
        return int(K.backfill_start(self.JF, self.JI, self.S, self.C, job)) == 2

    def stop(self) -> None:
        """Decline further backfilling at this time (resume with :meth:`advance`)."""
        if int(self.C[K.C_PHASE]) != K.P_DECIDE:
            raise RuntimeError("stop() is only valid at a decision point")
        K.stop_backfilling(self.C)

    def choose(self, job: int) -> None:
        """Make ``job`` (a waiting job) the head of the queue at this queue decision
        (:attr:`Event.QUEUE`); :meth:`advance` then starts it if it fits, else reserves
        for it and backfills, and stops at the next decision.

        Raises ``ValueError`` if the job is not waiting.
        """
        if int(self.C[K.C_PHASE]) != K.P_QUEUE:
            raise RuntimeError("choose() is only valid at a queue decision (Event.QUEUE)")
        job = int(job)
        if not (0 <= job < len(self.workload)) or int(self.JI[K.I_STATUS, job]) != K.ST_WAITING:
            raise ValueError(f"job {job} is not waiting; valid: {self.waiting().tolist()}")
        self.C[K.C_QCHOICE] = job

    def policy_order(self, policy: str) -> np.ndarray:
        """The waiting jobs in the order of queue ``policy`` (the head it would choose
        first; keys at the current time, ties by index, no starvation rule)."""
        out = self._buf_jobs
        c = KX.policy_order(self.JF, self.JI, self.S, self.C, policy_id(policy), out)
        return out[:c].copy()

    def would_delay(self, job: int) -> bool:
        """Whether starting ``job`` now would delay the head's reservation."""
        return not bool(K.easy_allows(self.JF, self.JI, self.S, self.C, int(job)))

    def __getstate__(self) -> dict[str, Any]:
        # the view holds views of this object's arrays: rebuilt on demand after a copy
        state = self.__dict__.copy()
        state["_view"] = None
        return state

    # ---------------------------------------------------------------- inspection
    @property
    def view(self) -> EngineView:
        """The public read-only, zero-copy view of the state (:class:`EngineView`)."""
        if self._view is None:
            self._view = EngineView(self)
        return self._view

    @property
    def start_times(self) -> np.ndarray:
        return self.JF[K.F_START]

    @property
    def status(self) -> np.ndarray:
        return self.JI[K.I_STATUS]

    @property
    def estimates(self) -> np.ndarray:
        """The reservation estimates (``estimate=``)."""
        return self.JF[K.F_EST]

    @property
    def rank_estimates(self) -> np.ndarray:
        """The run times the queue policy ranks by: the ranking estimates
        (``rank_estimate=``), or the reservation estimates when none is set."""
        return self.JF[K.F_RANK if int(self.C[K.C_RANKSEP]) == 1 else K.F_EST]

    def waiting(self) -> np.ndarray:
        """Waiting jobs in index (FCFS) order."""
        return self.JI[K.I_QUEUE, : int(self.C[K.C_QLEN])].copy()

    def running(self) -> np.ndarray:
        """Running jobs in order of estimated end."""
        return self.JI[K.I_RUN, : int(self.C[K.C_RLEN])].copy()

    @property
    def counters(self) -> dict[str, int]:
        C = self.C
        out = {
            "decisions": int(C[K.C_DECISIONS]),
            "backfills": int(C[K.C_NBACKFILLED]),
            "violations": int(C[K.C_VIOLATIONS]),
            "corrections": int(C[K.C_CORRECTIONS]),
        }
        if int(C[K.C_POLICY]) == K.POL_EXTERNAL:
            out["queue_decisions"] = int(C[K.C_QDECISIONS])
        out.update(self._inspection_counters())
        for d in (self.decider, self.chooser, self.inspector):
            extra = getattr(d, "counters", None)
            if isinstance(extra, dict):
                out.update(extra)
        return out

    def result(self) -> SimResult:
        if not self.done:
            raise RuntimeError("simulation is not finished; call advance() until DONE")
        start = self.JF[K.F_START].copy()
        backfilled = self.JI[K.I_BACKFILLED].astype(bool)
        metrics = compute_metrics(self.workload, start, backfilled)
        metrics["sim_seconds"] = self._sim_seconds
        return SimResult(
            workload=self.workload,
            start=start,
            backfilled=backfilled,
            metrics=metrics,
            counters=self.counters,
            config=dict(self.config),
            head_since=None
            if self.backfill_mode == "conservative"
            else self.JF[K.F_HEADSINCE].copy(),
        )

    def run(
        self,
        decide: Callable[[Simulation], int | None] | None = None,
        choose: Callable[[Simulation], int] | None = None,
        reject: Callable[[Simulation], bool] | None = None,
    ) -> SimResult:
        """Run to the end. With ``backfill="external"``, ``decide(sim)`` returns the job
        to start at each decision point, or ``None`` to stop backfilling there
        (default: the simulation's ``decider``); with ``policy="external"``,
        ``choose(sim)`` returns the head at each queue decision (default: the
        ``chooser``); with inspection on, ``reject(sim)`` is True to reject the pick
        (default: the ``inspector``). Their time counts in the result's ``sim_seconds``."""
        decide = self.decider if decide is None else decide
        choose = self.chooser if choose is None else choose
        reject = self.inspector if reject is None else reject
        while (ev := self.advance()) != Event.DONE:
            t0 = time.perf_counter()
            if ev == Event.INSPECT:
                self._answer(reject)
            elif ev == Event.QUEUE:
                if choose is None:
                    raise RuntimeError("policy='external' needs a choose() callback")
                self.choose(choose(self))
            else:
                if decide is None:
                    raise RuntimeError("backfill='external' needs a decide() callback")
                j = decide(self)
                if j is None:
                    self.stop()
                else:
                    self.backfill(j)
            self._sim_seconds += time.perf_counter() - t0
        return self.result()

    # ------------------------------------------------- snapshots and rollouts
    _PY_STATE: tuple[str, ...] = (
        "estimator",
        "_feed",
        "rng",
        "decider",
        "chooser",
        "config",
        "backfill_mode",
        "estimate_name",
        "rank_estimator",
        "_rank_feed",
        "rank_estimate_name",
    )

    def _py_state(
        self, target: Simulation, src: dict[str, Any], owner: Simulation
    ) -> dict[str, Any]:
        """Deep copy of the Python-side state ``src``; references to ``owner`` become
        references to ``target``, the (immutable) workload is shared."""
        memo: dict[int, Any] = {id(owner): target, id(self.workload): self.workload}
        return copy.deepcopy(src, memo)

    def snapshot(self) -> SimSnapshot:
        """The complete state now, as an opaque :class:`SimSnapshot`.

        Cheap: the engine arrays are copied (no re-simulation) and the estimator,
        its feed, the random generator and the decider are deep-copied, so the
        snapshot is independent of this simulation's future. Valid at any stop of
        :meth:`advance`, including a decision point in the middle of a pass. Arrival
        observers (:meth:`observe_arrivals`) and their state are not part of it.
        """
        py = {k: getattr(self, k) for k in self._PY_STATE}
        py = self._py_state(self, py, self)
        py["_sim_seconds"] = self._sim_seconds
        arrays = tuple(a.copy() for a in (self.JF, self.JI, self.S, self.C, self.PF))
        return SimSnapshot(owner=self, arrays=arrays, py=py)

    def restore(self, snap: SimSnapshot) -> None:
        """Put this simulation back into the state of ``snap`` (taken by
        :meth:`snapshot` on this simulation or on one of the same workload). The
        snapshot stays valid and can be restored again.

        :param snap: a snapshot of a simulation of the same workload
        """
        if snap.owner.workload is not self.workload and (
            len(snap.owner.workload) != len(self.workload)
        ):
            raise ValueError("snapshot of a simulation of another workload")
        JF, JI, S, C, PF = (a.copy() for a in snap.arrays)
        self.JF, self.JI, self.S, self.C, self.PF = JF, JI, S, C, PF
        self._view = None  # the view looked at the replaced arrays
        py = dict(snap.py)
        self._sim_seconds = float(py.pop("_sim_seconds"))
        for k, v in self._py_state(self, py, snap.owner).items():
            setattr(self, k, v)

    def clone(self, decider: bool = True) -> Simulation:
        """An independent copy of this simulation in its current state.

        The copy owns copies of the engine arrays and deep copies of the estimator,
        the random generator and (if ``decider``) the decider; advancing either one
        never changes the other. Cost: a few array copies (no re-simulation).

        :param decider: also copy the decider and chooser; ``False`` leaves the clone without
            (for rollouts that :meth:`switch` to a built-in backfiller)

        Arrival observers (:meth:`observe_arrivals`) are not copied: they belong to the
        code that registered them, and a rollout must not feed them.
        """
        new = object.__new__(Simulation)
        new.__dict__.update(self.__dict__)
        new.JF, new.JI = self.JF.copy(), self.JI.copy()
        new.S, new.C, new.PF = self.S.copy(), self.C.copy(), self.PF.copy()
        new._buf_jobs = np.empty_like(self._buf_jobs)
        new._buf_flags = np.empty_like(self._buf_flags)
        new.config = dict(self.config)  # str/float/None values
        new._view = None  # a view of the copy's own arrays, on demand
        # arrival observers belong to whoever registered them (e.g. the env's feature
        # predictor): a clone does not call them; arrivals stop only for its own estimator
        new._arrival_observers = []
        if new._feed is None and new._rank_feed is None:
            new.C[K.C_ONLINE] = 0
        if (
            self.estimator is None
            and self.rank_estimator is None
            and ((self.decider is None and self.chooser is None) or not decider)
        ):
            # fast path (rollouts): nothing else refers to the generator
            new.rng = _copy_generator(self.rng)
        else:
            keys: tuple[str, ...] = ("estimator", "_feed", "rank_estimator", "_rank_feed", "rng")
            keys += ("decider", "chooser") if decider else ()
            py = {k: getattr(self, k) for k in keys}
            for k, v in self._py_state(new, py, self).items():
                setattr(new, k, v)
        if not decider:
            new.decider = None
            new.chooser = None
            new.config.pop("decider", None)
            new.config.pop("chooser", None)
        return new


def warmup() -> None:
    """Compile (or load from numba's on-disk cache) the engine's kernels, so that
    timings of the first real simulation measure the simulation alone."""
    from hpcgym.workload.core import Workload as _W

    one = np.ones(3)
    wl = _W(
        "warmup",
        2,
        np.arange(3),
        np.arange(3.0),
        one,
        np.array([2, 1, 1]),
        one * 2,
        -one,
        -one,
        -one,
        -one,
    )
    for bf in ("easy", "sjbf", "conservative", "none"):
        simulate(wl, policy="WFP3", backfill=bf)
    sim = Simulation(wl, backfill="external")
    sim.run(lambda s: int(s.candidates()[0][0]))


def simulate(
    workload: Workload,
    policy: str = "FCFS",
    backfill: str = "easy",
    estimate: str | Estimator | np.ndarray = "request",
    correction: str = "incremental",
    starvation: float | str | None = None,
    seed: int | np.random.Generator | None = 0,
    rank_estimate: str | Estimator | np.ndarray | None = None,
) -> SimResult:
    """Simulate ``workload`` with a built-in backfiller and return the result (the
    arguments of :class:`Simulation`)."""
    sim = Simulation(
        workload,
        policy,
        backfill,
        estimate,
        correction,
        starvation,
        seed=seed,
        rank_estimate=rank_estimate,
    )
    return sim.run()
