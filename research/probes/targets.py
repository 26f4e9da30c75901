"""The project's targets at a glance, counted from the agents' held-out tests.

    python research/probes/targets.py [--agents DIR [DIR ...]] [--out targets.md]

Reads every model card with a ``test`` section (``eval/heldout.py``; by default the
retired agents of ``research/agents`` and the zoo of ``agents/pretrained``) and sorts each
tested (agent, trace) pair into the target it speaks to, by what the card says the agent
is (queue policy, estimator, the trace it was trained on, whether the test is a
transfer); then checks each target's criterion on each such test:

* **FCFS, own trace** (``fcfs``): guarded FCFS agents with request-based reservations, on
  their own trace (SDSC-SP2, HPC2N, Lublin-1, Lublin-2): ratio vs EASY-SJBF <= 0.85 and
  the interval's upper end < 1;
* **FCFS, transfer** (``transfer``): a guarded FCFS SDSC-SP2 agent on CTC-SP2, SDSC-BLUE
  and KTH-SP2: ratio vs EASY-SJBF <= 1.0 and mean AVEbsld below EASY's; met when one agent
  meets it on all three;
* **FCFS, predicted reservations** (``fcfs-predicted``): guarded FCFS agents with a
  predictor's estimates (like for like with ELOSS) on SDSC-SP2 and HPC2N: interval vs
  ELOSS entirely below 1;
* **SJF, own trace** (``sjf``): guarded SJF agents on the four own traces: interval vs
  SJF+EASY-SJBF entirely below 1; an agent whose reservations use a predictor's
  estimates (not the requests) must also have its interval entirely below 1 against the
  heuristic with the same estimates and correction under its queue (``SJF+ELOSS`` for
  E-Loss's), like for like as the predicted-reservations target asks, so a gain the
  predictor's reservations give is not counted as the agent's (its p-value is the larger
  of the two: both must hold).

Every tested agent counts, not only the best one: each agent's test was looked at once,
but with several agents tested on one trace (often one recipe with other seeds) a single
one meeting a target is weaker evidence than the same figure from the only agent tested,
so the table gives how many were tested, how many met it, and the range of their ratios;
and, for the targets whose criterion is an interval below 1 (all but the transfer), how
many still meet it when every look is paid for: Holm's step-down test over all the
agents tested on that trace at a family-wise error of 2.5 % one-sided (the single-test
rule "the 95 % interval is below 1"), each agent's p-value the bootstrap's own share of
resamples at or above 1 from the per-window values its card stores
(:func:`hpcgym.evaluation.statistics.bootstrap_p_below_one`), or, for cards tested
before those were stored, read from its ratio and interval
(:func:`hpcgym.evaluation.statistics.p_below_one`). Free-mode agents (they may delay the
head job) are never counted. A zoo agent is listed under its zoo name; its test records
it under the name it was trained as (``trained_as``), which is where its values are read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m research.probes.targets`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.targets", *sys.argv[1:]])

from hpcgym.evaluation.heldout import WARM_HELDOUT, card_warm  # noqa: E402
from hpcgym.evaluation.statistics import (  # noqa: E402
    bootstrap_p_below_one,
    holm,
    p_below_one,
)
from hpcgym.evaluation.windows import distinct_jobs  # noqa: E402
from hpcgym.sim.schedulers import NAMED, policy_name  # noqa: E402
from hpcgym.sim.warmstart import split_warm  # noqa: E402
from research.probes._cards import cards_markdown_main, tested_as  # noqa: E402

__all__ = [
    "OWN_TRACES",
    "TARGETS",
    "Target",
    "main",
    "pvalue",
    "target_rows",
    "like_for_like",
    "targets_markdown",
    "with_policy",
]

Card = dict[str, Any]
Section = dict[str, Any]

#: The traces the agents are trained and tested on (the own-trace targets').
OWN_TRACES = ("SDSC-SP2", "HPC2N", "Lublin-1", "Lublin-2")


@dataclass(frozen=True)
class Target:
    """One target: which tests speak to it and when one meets it.

    :param key: a short identifier (``fcfs``, ``transfer``, ``fcfs-predicted``, ``sjf``)
    :param name: what the target is about, as the table names it
    :param traces: the test traces it names, in the table's order
    :param criterion: the criterion as the table states it
    :param reference: the paired reference whose ratio the table shows (a name without
        the queue prefix: ``SJF+`` is added for an SJF agent)
    :param admits: ``(card, test section) -> bool``: the test speaks to this target
    :param meets: ``(card, test section) -> bool``: the test meets the criterion against
        :attr:`reference` (:meth:`met` adds :attr:`also`'s)
    :param all_traces: met only by one agent meeting it on every trace (the transfer)
    :param interval: the criterion asks for the interval below 1 (then the table also
        counts the agents meeting it after Holm's adjustment for the agents tested)
    :param also: ``card -> reference or None``: a second reference (without the queue
        prefix) whose interval must be below 1 too for that agent (the SJF target's like
        for like, :func:`like_for_like`); the agent's p-value is then the larger of the two
    """

    key: str
    name: str
    traces: tuple[str, ...]
    criterion: str
    reference: str
    admits: Callable[[Card, Section], bool]
    meets: Callable[[Card, Section], bool]
    all_traces: bool = False
    interval: bool = True
    also: Callable[[Card], str | None] = lambda card: None

    def met(self, card: Card, sec: Section) -> bool:
        """Whether the agent's test meets this target: :attr:`meets`, and, when :attr:`also`
        names a second reference, an interval below 1 against that one too."""
        other = self.also(card)
        return self.meets(card, sec) and (other is None or _below(card, sec, other))

    def pvalue(self, card: Card, sec: Section) -> float | None:
        """The test's one-sided p-value for this target's criterion (see :func:`pvalue`),
        the larger of the two when :attr:`also` names a second reference (a missing
        second comparison counts as p = 1); None without the main comparison."""
        p = pvalue(card, sec, self.reference)
        other = self.also(card)
        if p is None or other is None:
            return p
        q = pvalue(card, sec, other)
        return max(p, 1.0 if q is None else q)


def _guarded(card: Card, policy: str) -> bool:
    return str(card.get("mode")) == "guarded" and str(card.get("policy", "FCFS")) == policy


def _request(card: Card) -> bool:
    return str(card.get("estimator", "request")) == "request"


def like_for_like(card: Card) -> str | None:
    """The named heuristic whose reservations use the same estimates and correction as the
    agent's (``ELOSS`` for ``estimator=eloss, correction=incremental-offset``; the queue
    prefix is added by :func:`with_policy`), or None for an agent with request-based
    reservations. An estimator no named heuristic uses gives a name no test holds, so the
    like-for-like criterion cannot be met by default."""
    if _request(card):
        return None
    est = split_warm(str(card.get("estimator")))[0]  # a warm start: added by with_policy
    corr = str(card.get("correction", "incremental"))
    for spec in NAMED.values():
        if (
            spec.policy == "FCFS"
            and spec.backfill == "sjbf"
            and spec.decider is None
            and not spec.estimate_kwargs
            and spec.estimate == est
            and spec.correction == corr
        ):
            return spec.name
    return f"(no heuristic with estimator {est}, correction {corr})"


def with_policy(card: Card, reference: str) -> str:
    """``reference`` with the agent's queue policy: ``SJF+EASY-SJBF`` for an SJF agent,
    ``EASY-SJBF`` for an FCFS one; for an agent whose predictors are warm-started from the
    accounting log, a heuristic that learns online is its warm version (``ELOSS,warm=log``:
    like for like, the test's own, :func:`hpcgym.evaluation.heldout.heldout_schedulers`)."""
    name = policy_name(reference, str(card.get("policy", "FCFS")))
    warm = card_warm(card)
    if warm is not None and reference in WARM_HELDOUT:
        name += f",warm={warm}"
    return name


def paired(card: Card, sec: Section, reference: str) -> dict[str, Any] | None:
    """The test's paired comparison against ``reference`` with the agent's queue policy
    (:func:`with_policy`), or None when the card has none."""
    return (sec.get("paired") or {}).get(with_policy(card, reference))


def pvalue(card: Card, sec: Section, reference: str) -> float | None:
    """One-sided p-value of "the agent's ratio vs ``reference`` is not below 1" on the
    test: the bootstrap's own (:func:`~hpcgym.evaluation.statistics.bootstrap_p_below_one`)
    from the stored per-window values, or, for tests written before those were stored,
    the normal approximation from the ratio and interval
    (:func:`~hpcgym.evaluation.statistics.p_below_one`); None without paired statistics."""
    p = paired(card, sec, reference)
    if not p:
        return None
    meth = sec.get("methods") or {}
    agent = (meth.get(tested_as(card, sec)) or {}).get("per_window")
    base = (meth.get(with_policy(card, reference)) or {}).get("per_window")
    if agent and base:
        return bootstrap_p_below_one(agent, base)
    return p_below_one(p)


def _below(card: Card, sec: Section, reference: str, at_most: float | None = None) -> bool:
    p = paired(card, sec, reference)
    if not p or int(p.get("windows", 0)) < 30:
        return False
    ok = float(p["ci_high"]) < 1.0
    return ok and (at_most is None or float(p["geo_ratio"]) <= at_most)


def _transfer_ok(card: Card, sec: Section) -> bool:
    p = paired(card, sec, "EASY-SJBF")
    meth = sec.get("methods") or {}
    agent, easy = meth.get(tested_as(card, sec)), meth.get("EASY")
    if not p or int(p.get("windows", 0)) < 30 or not agent or not easy:
        return False
    return float(p["geo_ratio"]) <= 1.0 and agent["mean_avg_bsld"] < easy["mean_avg_bsld"]


def _own(card: Card, sec: Section) -> bool:
    return not sec.get("transfer") and str(sec.get("trace")) == str(card.get("trace"))


#: The four targets with tests (the training-time target is stated on the cards).
TARGETS: tuple[Target, ...] = (
    Target(
        "fcfs",
        "FCFS, own trace",
        OWN_TRACES,
        "<= 0.85 x EASY-SJBF, interval < 1",
        "EASY-SJBF",
        lambda c, s: _guarded(c, "FCFS") and _request(c) and _own(c, s),
        lambda c, s: _below(c, s, "EASY-SJBF", 0.85),
    ),
    Target(
        "transfer",
        "FCFS, transfer",
        ("CTC-SP2", "SDSC-BLUE", "KTH-SP2"),
        "<= 1.0 x EASY-SJBF, mean AVEbsld below EASY's",
        "EASY-SJBF",
        lambda c, s: (
            _guarded(c, "FCFS")
            and _request(c)
            and str(c.get("trace")) == "SDSC-SP2"
            and bool(s.get("transfer"))
        ),
        _transfer_ok,
        all_traces=True,
        interval=False,
    ),
    Target(
        "fcfs-predicted",
        "FCFS, predicted reservations",
        ("SDSC-SP2", "HPC2N"),
        "interval vs ELOSS < 1 (ELOSS's own reservations; warm agents: vs ELOSS,warm=log)",
        "ELOSS",
        lambda c, s: _guarded(c, "FCFS") and not _request(c) and _own(c, s),
        lambda c, s: _below(c, s, "ELOSS"),
    ),
    Target(
        "sjf",
        "SJF, own trace",
        OWN_TRACES,
        "interval vs SJF+EASY-SJBF < 1 (predicted reservations: also vs the same heuristic)",
        "EASY-SJBF",
        lambda c, s: _guarded(c, "SJF") and _own(c, s),
        lambda c, s: _below(c, s, "EASY-SJBF"),
        also=like_for_like,
    ),
)


@dataclass
class Row:
    """One (target, trace) cell: the tested agents, those meeting it, their ratios."""

    target: Target
    trace: str
    tested: list[str] = field(default_factory=list)
    met: list[str] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    #: different jobs each tested agent's test windows hold together
    jobs: list[int] = field(default_factory=list)
    #: one-sided p-value of "not below 1" per tested agent with paired statistics
    pvalues: dict[str, float] = field(default_factory=dict)
    #: the met agents that stay met under Holm's adjustment over ``pvalues``
    met_holm: list[str] = field(default_factory=list)


def _tests(cards: Sequence[Card]) -> list[tuple[Card, Section]]:
    out = []
    for card in cards:
        for trace, sec in (card.get("test") or {}).items():
            out.append((card, {**sec, "trace": sec.get("trace", trace)}))
    return out


def target_rows(cards: Sequence[Card]) -> list[Row]:
    """One row per target and trace it names (plus the transfer's "all three" row), in
    :data:`TARGETS`' order, from the cards' held-out tests.

    :param cards: model card dicts (``ModelCard.to_dict()``)
    """
    tests = _tests(cards)
    rows: list[Row] = []
    for t in TARGETS:
        per_trace: list[Row] = []
        for trace in t.traces:
            row = Row(t, trace)
            for card, sec in tests:
                if str(sec["trace"]) != trace or not t.admits(card, sec):
                    continue
                name = str(card.get("name"))
                row.tested.append(name)
                p = paired(card, sec, t.reference)
                if p:
                    row.ratios.append(float(p["geo_ratio"]))
                    pv = t.pvalue(card, sec) if t.interval else None
                    if pv is not None:
                        row.pvalues[name] = pv
                if sec.get("starts") and sec.get("length"):
                    row.jobs.append(distinct_jobs(sec["starts"], int(sec["length"])))
                if t.met(card, sec):
                    row.met.append(name)
            if t.interval and row.pvalues:  # at holm's default, the verdict's own level
                keep = dict(zip(row.pvalues, holm(list(row.pvalues.values())), strict=True))
                row.met_holm = [n for n in row.met if keep.get(n)]
            per_trace.append(row)
        rows += per_trace
        if t.all_traces:
            every = Row(t, "all three")
            names = [set(r.tested) for r in per_trace]
            every.tested = sorted(set.intersection(*names)) if names else []
            every.met = sorted(set.intersection(*(set(r.met) for r in per_trace)))
            rows.append(every)
    return rows


def _range(values: list[float]) -> str:
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:.3f}" if len(values) == 1 else f"{lo:.3f} – {hi:.3f}"


def _jobs(values: list[int]) -> str:
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,} – {hi:,}"


def targets_markdown(cards: Sequence[Card]) -> str:
    """The Markdown section: a table of :func:`target_rows` and how to read it.

    :param cards: model card dicts
    """
    out = [
        "## Targets at a glance",
        "",
        "Counted by `python research/probes/targets.py` from the held-out tests of the "
        "guarded agents (free agents never count). *tested*: agents whose test "
        "speaks to the target on that trace; *met*: those meeting its criterion there; "
        "the ratios are their test ratios against the target's reference (lowest – "
        "highest). Several agents tested on one trace (often one recipe with other seeds) "
        "make a single one meeting it weaker evidence than the same figure from the only "
        "agent tested; *met, Holm* pays for that: the agents still meeting it when "
        "the chance of any false claim among all those tested on the trace is held at "
        "2.5 % one-sided, the single test's level (Holm's step-down test, each agent's "
        "p-value the bootstrap's own from its per-window values, or read from its ratio "
        "and interval for cards tested before those were stored: docs/evaluation.md, "
        "*Many agents on one trace*). *jobs*: the different jobs the test windows hold "
        "together, the period of the trace a result covers (the windows are drawn from "
        "the test range and overlap where it is short: docs/evaluation.md, *What a test "
        "interval covers*).",
        "",
        "| target | trace | criterion | tested | met | met, Holm | test ratios | jobs | met by |",
        "|---|---|---|---:|---:|---:|---|---:|---|",
    ]
    for r in target_rows(cards):
        met_by = ", ".join(f"`{n}`" for n in r.met) or "—"
        every = r.trace == "all three"
        if r.target.all_traces and not every:  # a part of the target, not the target
            state, criterion = "", r.target.criterion
        else:
            state = " (**met**)" if r.met else " (not met)"
            criterion = "one agent meeting it on all three" if every else r.target.criterion
        ratios = "—" if every else _range(r.ratios)
        jobs = "—" if every else _jobs(r.jobs)
        holm_cell = str(len(r.met_holm)) if r.target.interval and r.pvalues else "—"
        out.append(
            f"| {r.target.name} | {r.trace} | {criterion} | {len(r.tested)} "
            f"| {len(r.met)}{state} | {holm_cell} | {ratios} | {jobs} | {met_by} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print or write the table; returns the exit code (2 on user errors).

    :param argv: the arguments (default: the process's)
    """
    return cards_markdown_main("python research/probes/targets.py", __doc__, targets_markdown, argv)


if __name__ == "__main__":
    raise SystemExit(main())
