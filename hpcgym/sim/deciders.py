"""Python backfill deciders: backfillers that decide at the engine's decision points.

A *decider* is a callable ``decide(sim) -> job | None`` for
:meth:`hpcgym.sim.engine.Simulation.run` with ``backfill="external"``: at each
decision point (the head is blocked, its reservation is computed, at least one job is
a candidate) it returns the job to start now, or ``None`` to stop backfilling at this
time. Heuristic deciders, the compiled backfillers and the RL agent all decide at the
same points of the same engine loop.

Registered deciders (:func:`make_decider`), used by decider-backed named schedulers
(:class:`hpcgym.sim.schedulers.SchedulerSpec` ``decider=``):

==========================  ===========  ============================================
name                        candidates   rule
==========================  ===========  ============================================
``probabilistic``           ``fit``      Nissimov's EASY+HMM test (thesis ch. 5):
                                         start the first candidate, in backfill
                                         order, whose probability of postponing the
                                         head is below ``tau`` (EASY-HMM)
``easy``                    ``easy``     the first EASY-allowed candidate in backfill
                                         order (the compiled EASY/SJBF passes, in
                                         Python)
``lookahead1-clairvoyant``  ``easy``     clairvoyant one-step lookahead over
                                         EASY-SJBF rollouts (LOOKAHEAD1-CLAIRVOYANT; a
                                         reference point, not a bound;
                                         :class:`hpcgym.sim.lookahead.LookaheadOracle`)
``lookahead1-online``       ``easy``     online one-step lookahead over Monte Carlo
                                         futures (LOOKAHEAD1-ONLINE;
                                         :class:`hpcgym.sim.lookahead.Lookahead`)
==========================  ===========  ============================================

The old names ``lookahead-oracle`` and ``lookahead`` still resolve, with a
:class:`FutureWarning` (:mod:`hpcgym.sim.renamed`).

Each decider has ``name``, ``candidates`` (the candidate mode it needs) and
``counters`` (ints, merged into :attr:`hpcgym.sim.engine.SimResult.counters`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from hpcgym.sim import _core as K
from hpcgym.sim.probabilistic import _scan_kernel
from hpcgym.sim.registry import RegistryView
from hpcgym.sim.renamed import RENAMED_DECIDERS, renamed
from hpcgym.suggest import did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation

__all__ = [
    "DECIDERS",
    "Decider",
    "DistributionSource",
    "DistributionTable",
    "EasyDecider",
    "ProbabilisticBackfiller",
    "make_decider",
]


@runtime_checkable
class DistributionSource(Protocol):
    """Where runtime-bin distributions come from (e.g. :class:`HMMPredictor`).

    ``dists[j]`` is job ``j``'s distribution over the bins bounded by ``edges``
    (predicted at its submission); it is valid iff ``has_dist[j]``. The arrays are read
    at each decision, so an online source may fill them as jobs arrive.
    """

    edges: np.ndarray
    dists: np.ndarray
    has_dist: np.ndarray


@dataclass
class DistributionTable:
    """A fixed :class:`DistributionSource` (tests, offline or oracle distributions).

    :param edges: ``N + 1`` runtime-bin edges (seconds)
    :param dists: ``(n, N)`` bin probabilities, one row per job of the workload
    :param has_dist: ``(n,)`` which rows are valid (default: all)
    """

    edges: np.ndarray
    dists: np.ndarray
    has_dist: np.ndarray

    @classmethod
    def empty(cls, n_jobs: int, edges: np.ndarray) -> DistributionTable:
        """No job has a distribution: EASY-HMM then decides exactly like EASY."""
        e = np.asarray(edges, dtype=np.float64)
        return cls(e, np.zeros((n_jobs, len(e) - 1)), np.zeros(n_jobs, dtype=bool))

    @classmethod
    def point_masses(cls, runtimes: np.ndarray, edges: np.ndarray) -> DistributionTable:
        """Each job's mass in the bin of its given runtime (e.g. the actual one)."""
        e = np.asarray(edges, dtype=np.float64)
        N = len(e) - 1
        b = np.clip(np.searchsorted(e[1:-1], np.asarray(runtimes), side="right"), 0, N - 1)
        d = np.zeros((len(b), N))
        d[np.arange(len(b)), b] = 1.0
        return cls(e, d, np.ones(len(b), dtype=bool))


class Decider(Protocol):
    """What :meth:`Simulation.run` and decider-backed schedulers call."""

    name: str
    candidates: str

    def __call__(self, sim: Simulation) -> int | None: ...

    @property
    def counters(self) -> dict[str, int]: ...


class EasyDecider:
    """EASY as a decider: the first EASY-allowed candidate in the backfill order, found by
    the compiled core's own EASY pass (:func:`hpcgym.sim._core.easy_next`).

    With ``candidates="easy"`` this reproduces the compiled EASY (policy order) and
    SJBF (``external_order="sjbf"``) passes exactly (tested in ``tests/test_engine.py``).
    """

    name = "easy"
    candidates = "easy"

    def __init__(self) -> None:
        self._counters = {"decider_calls": 0}

    @property
    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def __call__(self, sim: Simulation) -> int | None:
        self._counters["decider_calls"] += 1
        order = sim.backfill_order()
        k = K.easy_next(sim.JF, sim.JI, sim.S, sim.C, order, len(order), 0)  # the one pass
        return None if k < 0 else int(order[k])


class ProbabilisticBackfiller:
    """EASY+HMM backfilling (Nissimov thesis, chapter 5) as an engine decider.

    At a decision point, the candidates (every waiting job that fits now,
    ``candidates="fit"``) are tested in the backfill order (the queue policy's order);
    the first one whose probability of postponing the head's start is below ``tau``
    is started, and the engine comes back to a new decision at the same instant with
    the reservation and the running set updated, so the release table is rebuilt after
    each start. Backfilling stops at this instant when no candidate passes.

    The test (Algorithm 6, :func:`hpcgym.sim.probabilistic.scan_candidates`) *replaces*
    EASY's condition, as in the thesis ("the algorithm remains the same with the only
    change of backfilling condition"): it may start jobs EASY would refuse (they
    violate the request-based reservation and are counted in the engine's
    ``violations``) and may refuse jobs EASY would start (a running job may end
    earlier than its request, and then the candidate is in the head's way; counted in
    ``hmm_stops_with_easy_candidate``). Running jobs' distributions are truncated to
    ``[elapsed, request]`` (Algorithm 5); a job without a distribution ends at its
    request with probability 1. If no job involved has a distribution, the decision is
    exactly EASY's with the requests (``docs/hmm.md``).

    :param tau: threshold on the postpone probability (thesis: 0.05)
    :param source: a :class:`DistributionSource`; default: the simulation's estimator
        (the HMM predictor of EASY-HMM, ``estimate="hmm"`` with ``point="request"``)
    :param rescan: after a start, test the candidates again from the start of the
        backfill order (default); ``False`` continues after the started job, so each job
        is tested at most once per scheduling pass (a single scan of the queue)
    :param early_exit: the thesis' early exits (exact; only saves time)
    """

    name = "probabilistic"
    candidates = "fit"

    def __init__(
        self,
        tau: float = 0.05,
        source: DistributionSource | None = None,
        rescan: bool = True,
        early_exit: bool = True,
    ) -> None:
        tau = float(tau)
        if not (0.0 <= tau <= 1.0):
            raise ValueError(f"tau must be a probability in [0, 1], got {tau}")
        self.tau = tau
        self.source = source
        self.rescan = bool(rescan)
        self.early_exit = bool(early_exit)
        self._sim: Simulation | None = None
        self._reset()

    def _reset(self) -> None:
        self._counters: dict[str, int] = {
            "hmm_decisions": 0,
            "hmm_starts": 0,
            "hmm_stops": 0,
            "hmm_stops_with_easy_candidate": 0,
            "hmm_starts_not_easy": 0,
            "hmm_tested": 0,
            "hmm_rows": 0,
        }
        self.seconds = 0.0
        self._pass: tuple[float, int] = (np.nan, -1)
        self._tested: list[int] = []

    @property
    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def _bind(self, sim: Simulation) -> None:
        src = self.source if self.source is not None else sim.estimator
        if not (
            src is not None
            and hasattr(src, "edges")
            and hasattr(src, "dists")
            and hasattr(src, "has_dist")
        ):
            raise ValueError(
                "the probabilistic backfiller needs runtime distributions: simulate with "
                "estimate='hmm' (the EASY-HMM scheduler does), or pass source= (an object "
                "with edges, dists and has_dist, e.g. DistributionTable)"
            )
        n = len(sim.workload)
        if len(src.dists) != n or len(src.has_dist) != n:
            raise ValueError(
                f"distribution source has {len(src.dists)} rows but the workload has {n} jobs"
            )
        self._src: Any = src
        self._edges = np.ascontiguousarray(src.edges, dtype=np.float64)
        self._log_edges = np.log(self._edges)
        self._procs = np.ascontiguousarray(sim.workload.procs, dtype=np.int64)
        self._req = np.ascontiguousarray(sim.workload.request, dtype=np.float64)
        self._stats = np.empty(n)
        self._info = np.zeros(3, dtype=np.int64)
        self._tested_mask = np.zeros(n, dtype=bool)
        self._sim = sim
        self._reset()

    def __call__(self, sim: Simulation) -> int | None:
        if sim is not self._sim:
            self._bind(sim)
        t0 = time.perf_counter()
        cnt = self._counters
        cnt["hmm_decisions"] += 1
        free = sim.free
        head = sim.head
        now = sim.now
        order = sim.backfill_order()
        cand = order[self._procs[order] <= free]
        if not self.rescan:
            key = (now, head)
            if key != self._pass:
                self._tested_mask[self._tested] = False
                self._tested = []
                self._pass = key
            cand = cand[~self._tested_mask[cand]]
        run = sim.running()
        src = self._src
        dists, has = src.dists, src.has_dist
        cp = self._procs[cand]
        creq = self._req[cand]
        k = _scan_kernel(
            now,
            free,
            int(self._procs[head]),
            self._procs[run],
            sim.start_times[run],
            self._req[run],
            dists[run],
            has[run],
            cp,
            creq,
            dists[cand],
            has[cand],
            self._edges,
            self._log_edges,
            self.tau,
            True,
            self.early_exit,
            self._stats[: len(cand)],
            self._info,
        )
        cnt["hmm_rows"] += int(self._info[0])
        cnt["hmm_tested"] += int(self._info[2])
        # EASY's own verdict on the same candidates (request-based reservation)
        easy = (now + sim.estimates[cand] <= sim.shadow) | (cp <= sim.extra)
        if not self.rescan:
            upto = len(cand) if k < 0 else k
            self._tested_mask[cand[:upto]] = True
            self._tested.extend(cand[:upto].tolist())
        self.seconds += time.perf_counter() - t0
        if k < 0:
            cnt["hmm_stops"] += 1
            if easy.any():
                cnt["hmm_stops_with_easy_candidate"] += 1
            return None
        cnt["hmm_starts"] += 1
        if not easy[k]:
            cnt["hmm_starts_not_easy"] += 1
        return int(cand[k])


#: registered deciders: name -> class (a read-only view of :mod:`hpcgym.sim.registry`: the
#: backfillers given as a decider, :func:`hpcgym.sim.registry.register_backfill`)
DECIDERS: Mapping[str, Any] = RegistryView(
    "backfill", lambda h: h.resolve(), lambda h: h.factory is not None
)


def make_decider(name: str, **kwargs: Any) -> Any:
    """A fresh decider by registered name (see :data:`DECIDERS`)."""
    key = renamed(str(name).strip().lower(), RENAMED_DECIDERS, "decider")
    if key not in DECIDERS:
        raise ValueError(
            f"unknown decider {name!r}{did_you_mean(key, DECIDERS)}; valid choices: "
            f"{', '.join(DECIDERS)}"
        )
    try:
        return DECIDERS[key](**kwargs)
    except TypeError as exc:  # unknown option
        raise ValueError(f"bad option for decider {name!r}: {exc}") from None
