"""How much can a guarded backfiller gain by *ordering* the candidates alone?

A guarded agent (``mode="guarded"``, request-based reservations) chooses, at each decision
point, one of the jobs EASY allows — or STOP. This probe measures simple online
orderings of those candidates, and a clairvoyant one, against EASY-SJBF (which orders by
the request) on the same windows, always starting the first candidate in the order (never
STOP):

* ``order-<predictor>``: shortest predicted runtime first, the prediction made at the
  job's submission by an online predictor (``--predictors``: ``ave2``, ``eloss`` by
  default; any name of ``hpcgym.predictors.estimator_names()``);
* ``area-<predictor>``: smallest predicted ``runtime x procs`` first;
* ``order-actual``: shortest *actual* runtime first (clairvoyant: an upper bound of what
  runtime knowledge alone can give an ordering).

Three more questions, asked on request:

* ``--ties``: how much of EASY-SJBF is its *tie-break*? EASY-SJBF starts the candidate
  with the shortest request, and among equal requests the first in FCFS order. The
  ``ties-<how>`` methods keep the shortest-request order and break ties differently:
  ``ties-fcfs`` (EASY-SJBF's own, a check: it must equal EASY-SJBF), ``ties-lifo`` (the
  latest submitted first) and ``ties-random`` (uniformly, a seeded generator); the
  share of decisions with a tie is printed. A learned policy whose row scores differ by
  tiny amounts between jobs of equal request breaks those ties by whatever else it reads;
  this is what that costs.

* ``--short SECONDS``: is the clairvoyant room in *knowing which jobs are short*?
  ``short-actual`` starts the candidates that really end within ``SECONDS`` first (then
  the guard's own order, shortest engine estimate first); ``short-history`` does the same
  with what is known at the decision point instead: the runtime of the last *finished*
  job of the same user with the same request and processor count (else the user's last
  finished job), re-read at every decision, so a burst of jobs that crash in seconds is
  recognised as soon as its first job has ended.
* ``--fit-check``: is it in *not starting jobs that will overrun the shadow*?
  ``fit-actual`` starts, shortest engine estimate first, only the candidates that really
  end by the shadow time (or fit in the extra processors), and STOPs when there is none;
  ``fit-<predictor>`` asks the same of an online prediction (a second opinion on the
  guard's fit test).

and, for comparison, ``ELOSS`` (E-Loss predictions as the engine's estimates: a different,
non-guarded-by-request scheduler) and ``LOOKAHEAD1-CLAIRVOYANT`` if requested. It answers a
design question of the guarded agents: if even the clairvoyant ordering stays far from the
target ratio (0.85 x EASY-SJBF), the rest of the headroom must come from *when to stop*
(future arrivals) or from the guard itself, not from ranking candidates better.

Windows are drawn from the ``validation`` split (never ``test``)::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/ordering_headroom.py \\
        --trace SDSC-SP2 --windows 30 --length 1024

``--guard ELOSS`` asks the same under ELOSS's reservations (E-Loss predictions as the
engine's estimates, incremental-offset corrections): the candidates are those ELOSS's own
guard allows, the ratios are against ELOSS, and ``order-guard`` (shortest *engine
estimate* first, i.e. ELOSS's own SJBF choice) must equal ELOSS, a check of the set-up.
This is the room of the guarded FCFS agents with ELOSS's reservations (measured against
ELOSS, like for like), which choose among exactly these
candidates: if the clairvoyant ``order-actual`` stays close to 1 x ELOSS, the room over
ELOSS is in *when to stop*, not in which job to start.

``--policy SJF`` asks both questions with the SJF queue (the SJF-base agents, measured
against SJF+EASY-SJBF): the guard and every heuristic then order the *queue* by
shortest request first (``SJF+EASY-SJBF``, ``SJF+ELOSS``, ``SJF+LOOKAHEAD1-CLAIRVOYANT``), and
the ratios are against ``SJF+EASY-SJBF`` (or ``SJF+ELOSS`` with ``--guard ELOSS``).

``--guard ELOSS --warm log`` asks it against the warm ELOSS (``ELOSS,warm=log``: E-Loss
taught the trace's accounting log before each window, :mod:`hpcgym.sim.warmstart`), the
reference of the ELOSS-reservation agents with warm predictors: the guard's estimates and the
reference row are then the warm E-Loss's, and a warm predictor to order by is spelled
``--predictors log-ridge:lam=10,warm=log``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.sim import get_scheduler
from hpcgym.sim.engine import EstimatorFeed, Simulation
from hpcgym.sim.estimators import make_estimator
from hpcgym.sim.warmstart import warm_label
from hpcgym.workload import WindowSampler, load
from hpcgym.workload.core import Workload

Key = Callable[[np.ndarray, np.ndarray, Workload], np.ndarray]


#: Whose reservations decide the candidates: EASY-SJBF (request-based) or ELOSS (E-Loss
#: predictions with incremental-offset corrections), with the FCFS or the SJF queue.
GUARDS = ("EASY-SJBF", "ELOSS", "SJF+EASY-SJBF", "SJF+ELOSS")
#: The guards whose estimates come from an online predictor, which ``,warm=log`` (or
#: ``,warm=N``) warm-starts from the trace's accounting log (:mod:`hpcgym.sim.warmstart`).
GUARDS_WARM = ("ELOSS", "SJF+ELOSS")


def queue_name(policy: str, name: str) -> str:
    """``name`` with the queue policy ``policy`` (``SJF+EASY``; FCFS names are bare)."""
    return name if policy == "FCFS" else f"{policy}+{name}"


def guard_simulation(window: Workload, guard: str = "EASY-SJBF") -> Simulation:
    """A simulation of ``window`` whose backfill decisions are the caller's, among the
    candidates that ``guard``'s reservations allow (:data:`GUARDS`).

    :param window: the jobs
    :param guard: ``EASY-SJBF`` (request-based reservations) or ``ELOSS`` (E-Loss's
        predictions with incremental-offset corrections), optionally with the SJF queue
        (``SJF+EASY-SJBF``, ``SJF+ELOSS``); an ELOSS guard may carry a warm start
        (``ELOSS,warm=log``)
    """
    base, _, keys = guard.partition(",")
    if base not in GUARDS or (keys and base not in GUARDS_WARM):
        raise ValueError(
            f"unknown guard {guard!r}; valid: {', '.join(GUARDS)} (and "
            f"{', '.join(g + ',warm=...' for g in GUARDS_WARM)}: its predictor warm-started)"
        )
    return get_scheduler(guard).make_simulation(window, backfill="external")


def play_in_order(sim: Simulation, score: Callable[[np.ndarray], np.ndarray]) -> float:
    """Run ``sim`` starting, at every decision point, the allowed candidate with the lowest
    ``score(jobs)``; return its AVEbsld. A candidate scored ``inf`` is never started: when
    every candidate is, the decision is STOP (with finite scores, never).

    :param sim: a simulation with external backfilling (:func:`guard_simulation`)
    :param score: the allowed candidates' job indices -> one score each
    """

    def decide(s: Simulation) -> int | None:  # the engine's decision points (Simulation.run)
        jobs, easy = s.candidates()
        jobs = jobs[easy]
        if not len(jobs):
            return None
        sc = score(jobs)
        best = int(np.argmin(sc))
        return int(jobs[best]) if np.isfinite(sc[best]) else None

    return float(sim.run(decide).metrics["avg_bsld"])


def predictions(sim: Simulation, predictor: str) -> np.ndarray:
    """The runtime of every job of ``sim``'s window as ``predictor`` sees it: ``actual``
    (clairvoyant), ``guard`` (zeros, for the caller to fill with the engine's current
    estimates) or an online predictor name, whose prediction for a job is written at its
    submission (the array is filled as ``sim`` runs).

    :param sim: a simulation that has not started (:func:`guard_simulation`)
    :param predictor: see above
    """
    window = sim.workload
    if predictor == "guard":
        return np.zeros(len(window), dtype=np.float64)
    if predictor == "actual":
        return np.minimum(window.runtime, window.request).astype(np.float64)
    est = make_estimator(predictor)
    est.bind(window, np.random.default_rng(0))
    feed = EstimatorFeed(est)
    pred = np.array(window.request, dtype=np.float64)
    sim.observe_arrivals(lambda s, lo, hi: feed.predict(s, lo, hi, pred))
    return pred


def ordered_backfill(window: Workload, predictor: str, key: Key, guard: str = "EASY-SJBF") -> float:
    """AVEbsld of guarded backfilling that starts the candidate minimising ``key``.

    :param window: the jobs
    :param predictor: ``actual``, ``guard`` (the engine's current estimates, i.e. the
        guard's own order) or an online predictor name, predicting at submission
    :param key: ``key(jobs, predictions, window)`` -> scores (lowest starts first)
    :param guard: the scheduler whose reservations (estimates and corrections) decide the
        candidates (:data:`GUARDS`)
    """
    sim = guard_simulation(window, guard)
    pred = predictions(sim, predictor)

    def score(jobs: np.ndarray) -> np.ndarray:
        if predictor == "guard":  # the engine's estimates now (corrected ones included)
            pred[jobs] = sim.estimates[jobs]
        return key(jobs, pred, window)

    return play_in_order(sim, score)


def short_first(window: Workload, seconds: float, source: str, guard: str = "EASY-SJBF") -> float:
    """AVEbsld of guarded backfilling that starts the candidates believed to end within
    ``seconds`` first, each group in the guard's own order (shortest engine estimate).

    :param window: the jobs
    :param seconds: what counts as short
    :param source: ``actual`` (clairvoyant) or ``history`` (the last finished similar job
        of the same user, else the user's last finished job, at the decision point)
    :param guard: the scheduler whose reservations decide the candidates (:data:`GUARDS`)
    """
    sim = guard_simulation(window, guard)
    ran = np.minimum(window.runtime, window.request).astype(np.float64)
    user, req, procs = window.user, window.request, window.procs
    last_user: dict[int, float] = {}
    last_similar: dict[tuple[int, float, int], float] = {}
    seen = 0

    def believed_short(jobs: np.ndarray) -> np.ndarray:
        nonlocal seen
        if source == "actual":
            return ran[jobs] < seconds
        for j in sim.view.finished(seen):  # what ended since the last decision
            last_user[int(user[j])] = ran[j]
            last_similar[(int(user[j]), float(req[j]), int(procs[j]))] = ran[j]
        seen = sim.view.n_finished
        out = np.zeros(len(jobs), dtype=bool)
        for i, j in enumerate(jobs):
            u = int(user[j])
            r = last_similar.get((u, float(req[j]), int(procs[j])), last_user.get(u, np.inf))
            out[i] = r < seconds
        return out

    def score(jobs: np.ndarray) -> np.ndarray:
        est = sim.estimates[jobs]
        return np.where(believed_short(jobs), est - 1e12, est)

    return play_in_order(sim, score)


def fit_checked(window: Workload, predictor: str, guard: str = "EASY-SJBF") -> float:
    """AVEbsld of guarded backfilling that starts, shortest engine estimate first, only
    the candidates that ``predictor`` says end by the shadow time (or that fit in the
    extra processors), and STOPs when none does.

    :param window: the jobs
    :param predictor: ``actual`` (clairvoyant) or an online predictor name, predicting at
        submission
    :param guard: the scheduler whose reservations decide the candidates (:data:`GUARDS`)
    """
    sim = guard_simulation(window, guard)
    pred = predictions(sim, predictor)

    def score(jobs: np.ndarray) -> np.ndarray:
        fits = (sim.now + pred[jobs] <= sim.shadow) | (window.procs[jobs] <= sim.extra)
        return np.where(fits, sim.estimates[jobs], np.inf)

    return play_in_order(sim, score)


def by_runtime(jobs: np.ndarray, pred: np.ndarray, w: Workload) -> np.ndarray:
    return pred[jobs]


def by_area(jobs: np.ndarray, pred: np.ndarray, w: Workload) -> np.ndarray:
    return pred[jobs] * w.procs[jobs]


class TieBreak:
    """Shortest engine estimate first, ties broken ``fcfs`` (lowest job index, as
    EASY-SJBF), ``lifo`` (highest index) or ``random`` (uniform, from ``rng``); counts the
    decisions and those with a tie for the shortest estimate.

    :param how: ``fcfs``, ``lifo`` or ``random``
    :param rng: the generator of ``random`` tie-breaks
    """

    HOWS = ("fcfs", "lifo", "random")

    def __init__(self, how: str, rng: np.random.Generator) -> None:
        if how not in self.HOWS:
            raise ValueError(f"unknown tie-break {how!r}; valid: {', '.join(self.HOWS)}")
        self.how, self.rng = how, rng
        self.decisions = 0
        self.tied = 0

    def __call__(self, jobs: np.ndarray, pred: np.ndarray, w: Workload) -> np.ndarray:
        est = pred[jobs]
        self.decisions += 1
        self.tied += int(np.count_nonzero(est == est.min()) > 1)
        if self.how == "fcfs":
            tie = jobs.astype(np.float64)
        elif self.how == "lifo":
            tie = -jobs.astype(np.float64)
        else:
            tie = self.rng.random(len(jobs))
        score = np.empty(len(jobs), dtype=np.float64)
        score[np.lexsort((tie, est))] = np.arange(len(jobs))
        return score


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", default="SDSC-SP2")
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--split", default="validation", choices=["train", "validation"])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--oracle", action="store_true", help="also run LOOKAHEAD1-CLAIRVOYANT (slow)")
    p.add_argument(
        "--guard",
        default="EASY-SJBF",
        choices=GUARDS[:2],
        help="whose reservations decide the candidates (and the ratios' reference)",
    )
    p.add_argument(
        "--warm",
        default=None,
        metavar="WARM",
        help="with --guard ELOSS: warm-start E-Loss from the trace's accounting log "
        "(log, or a number of jobs) in the guard and in the ELOSS row, the reference "
        "(ELOSS,warm=log); warm online predictors to order by are spelled "
        "NAME:warm=log in --predictors",
    )
    p.add_argument(
        "--policy",
        default="FCFS",
        choices=["FCFS", "SJF"],
        help="the queue policy of the guard and of every heuristic (SJF: the SJF-base "
        "agents' question, against SJF+EASY-SJBF)",
    )
    p.add_argument(
        "--short",
        type=float,
        default=None,
        metavar="SECONDS",
        help="also order the candidates believed to end within SECONDS first: "
        "short-actual (clairvoyant) and short-history (the last finished similar job)",
    )
    p.add_argument(
        "--fit-check",
        action="store_true",
        help="also start only the candidates that end by the shadow by their actual "
        "runtime (fit-actual) or each predictor's prediction (fit-<predictor>), else STOP",
    )
    p.add_argument(
        "--ties",
        action="store_true",
        help="also keep EASY-SJBF's shortest-request order with other tie-breaks: "
        "ties-fcfs (its own), ties-lifo, ties-random",
    )
    p.add_argument(
        "--predictors",
        nargs="+",
        default=["ave2", "eloss"],
        metavar="NAME",
        help="online predictors to order by (hpcgym.predictors.estimator_names(); "
        "'actual', the clairvoyant order, is always added)",
    )
    args = p.parse_args()
    for name in args.predictors:  # an unknown name fails now, with the valid ones
        try:
            make_estimator(name)
        except ValueError as exc:
            p.error(f"--predictors: {exc}")
    warm = ""
    if args.warm is not None:
        if args.guard not in GUARDS_WARM:
            p.error(f"--warm needs a guard with an online predictor: {', '.join(GUARDS_WARM)}")
        try:
            warm = f",warm={warm_label(args.warm)}"
        except ValueError as exc:
            p.error(f"--warm: {exc}")
    wl = load(args.trace)
    starts = WindowSampler(wl, args.length, args.split, seed=args.seed).sample_many(args.windows)
    g = queue_name(args.policy, args.guard) + warm

    def heuristic(name: str) -> Callable[[Workload], float]:
        spec = get_scheduler(queue_name(args.policy, name))
        return lambda w: float(spec.simulate(w).metrics["avg_bsld"])

    def order(predictor: str, key: Key) -> Callable[[Workload], float]:
        return lambda w: ordered_backfill(w, predictor, key, g)

    rows = ("EASY", "EASY-SJBF", "ELOSS" + warm)  # the ELOSS row is the guard's own scheduler
    methods: dict[str, Callable[[Workload], float]] = {
        queue_name(args.policy, h): heuristic(h) for h in rows
    }
    if args.guard != "EASY-SJBF":
        methods["order-guard"] = order("guard", by_runtime)
    for pred in [*args.predictors, "actual"]:
        methods[f"order-{pred}"] = order(pred, by_runtime)
        if pred != "eloss":
            methods[f"area-{pred}"] = order(pred, by_area)
    if args.short is not None:
        for src in ("actual", "history"):
            methods[f"short-{src}"] = lambda w, src=src: short_first(w, args.short, src, g)
    if args.fit_check:
        for pred in ["actual", *args.predictors]:
            methods[f"fit-{pred}"] = lambda w, pred=pred: fit_checked(w, pred, g)
    ties: dict[str, TieBreak] = {}
    if args.ties:
        rng = np.random.default_rng(args.seed)
        for how in TieBreak.HOWS:
            ties[how] = TieBreak(how, rng)
            methods[f"ties-{how}"] = lambda w, t=ties[how]: ordered_backfill(w, "guard", t, g)
    if args.oracle:
        name = "LOOKAHEAD1-CLAIRVOYANT"
        methods[queue_name(args.policy, name)] = heuristic(name)
    values: dict[str, list[float]] = {m: [] for m in methods}
    seconds: dict[str, float] = dict.fromkeys(methods, 0.0)
    for s in starts:
        w = wl.window(int(s), args.length)
        for name, fn in methods.items():
            t0 = time.perf_counter()
            values[name].append(float(fn(w)))
            seconds[name] += time.perf_counter() - t0
    ref = values[g]
    print(
        f"{args.trace}: {args.windows} {args.split} windows of {args.length} jobs "
        f"(seed {args.seed}); orderings under {g}'s reservations; paired geo-mean ratio of "
        f"AVEbsld vs {g}, 95% bootstrap"
    )
    print(f"| method | mean AVEbsld | ratio vs {g} [95% CI] | wins | s/window |")
    print("|---|---|---|---|---|")
    for name, v in values.items():
        c = paired_comparison(v, ref)
        print(
            f"| {name} | {np.mean(v):.1f} | {c.geo_ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"
            f" | {c.wins}/{len(v)} | {seconds[name] / len(v):.3f} |"
        )
    for how, t in ties.items():
        print(f"ties-{how}: {t.tied} of {t.decisions} decisions had a tie for the shortest")


if __name__ == "__main__":
    main()
