"""The leaderboard of docs/results.md: every heuristic and every zoo agent on the zoo's
held-out test windows, trace by trace.

The zoo agents of a trace were tested once on the same windows (30 windows of 1,024 jobs
of the test split, one window seed: their cards' ``test`` sections). The leaderboard plays
every agent again on those windows, and runs every heuristic of
:data:`LEADERBOARD_SCHEDULERS` there with the engine; whatever a card recorded (the
agent's and the heuristics' per-window or mean AVEbsld) must agree with the replay to
:data:`AGREEMENT_RTOL`, else the card is stale and :func:`leaderboard` says so. Each row
is compared with :data:`LEADERBOARD_REFERENCE` on the same windows by the paired
geometric-mean ratio and its 95% bootstrap interval, the ratio of means with its interval
and the verdict (:mod:`.statistics`); an agent is also compared with the heuristic it was
trained against (its card's ``paired`` section). Every row also carries the objectives
beyond bounded slowdown (:mod:`hpcgym.sim.metrics`): utilization, area-weighted response
time (AWRT, with its paired ratio to the reference) and the waits by job-size class.

A verdict on one trace's windows is one test. Each row is looked up on the board of the
trace's sibling (:data:`REPLICATION_TRACES`: the other real trace, the other synthetic one)
-- the same heuristic, or the zoo agent of the same recipe (queue policy, reference, mode
and estimator) -- and :func:`~hpcgym.evaluation.statistics.replicated_verdict` says whether
the claim holds there too (``replicated``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcgym.evaluation.cards import ModelCard
from hpcgym.evaluation.loaders import AgentLoader
from hpcgym.evaluation.methods import card_method, scheduler_method
from hpcgym.evaluation.report import (
    OBJECTIVES_CAPTION,
    late_heads_cell,
    ratio_cell,
    size_class_table,
)
from hpcgym.evaluation.runner import evaluate
from hpcgym.evaluation.statistics import paired_comparison, replicated_verdict, verdict_caption
from hpcgym.evaluation.windows import select_windows
from hpcgym.sim.metrics import SIZE_CLASS_METRICS
from hpcgym.tasks import card_task
from hpcgym.zoo.heldout import completed_paired

__all__ = [
    "AGREEMENT_RTOL",
    "LEADERBOARD_REFERENCE",
    "LEADERBOARD_SCHEDULERS",
    "REPLICATION_TRACES",
    "replicate",
    "leaderboard",
    "leaderboard_markdown",
]

#: The reference of every ratio: FCFS order with EASY backfilling of the shortest job first.
LEADERBOARD_REFERENCE = "EASY-SJBF"
#: The heuristics of every trace's board: FCFS order with the literature's backfillers and
#: reservation estimators, then the queue orders of Carastan-Santos et al. and Tang et al.
#: with EASY (and SJF with the same backfillers as the FCFS rows).
LEADERBOARD_SCHEDULERS: tuple[str, ...] = (
    "EASY",
    "EASY-SJBF",
    "CONSERVATIVE",
    "EASY++",
    "ELOSS",
    "SAF",
    "SJF+EASY",
    "SJF+EASY-SJBF",
    "SJF+EASY++",
    "SJF+ELOSS",
    "WFP3+EASY",
    "UNICEF+EASY",
    "F1+EASY",
)
#: Relative agreement a card's recorded heuristic must have with the engine.
AGREEMENT_RTOL = 1e-9
#: The second trace of every trace's claims: the other real trace, the other synthetic one.
REPLICATION_TRACES: dict[str, str] = {
    "SDSC-SP2": "HPC2N",
    "HPC2N": "SDSC-SP2",
    "Lublin-1": "Lublin-2",
    "Lublin-2": "Lublin-1",
}


def _test_sections(cards: Sequence[ModelCard]) -> dict[str, list[tuple[ModelCard, dict]]]:
    """(card, test section) of every card's test on its own trace, by trace."""
    out: dict[str, list[tuple[ModelCard, dict]]] = {}
    for card in cards:
        if card_task(card.data).board != "backfill":  # Schedule-v0: schedule_board
            continue
        sec = (card.data.get("test") or {}).get(card.trace)
        if sec and not sec.get("transfer"):
            out.setdefault(card.trace, []).append((card, sec))
    return out


def _windows_of(trace: str, pairs: list[tuple[ModelCard, dict]]) -> dict[str, Any]:
    first = pairs[0][1]
    for card, sec in pairs[1:]:
        if list(sec["starts"]) != list(first["starts"]) or sec["length"] != first["length"]:
            raise ValueError(
                f"the zoo agents of {trace} were not tested on the same windows: "
                f"{card.name} and {pairs[0][0].name} differ (re-test one with "
                f"eval/heldout.py --seed {first['seed']})"
            )
    return {k: first[k] for k in ("starts", "length", "seed", "windows")}


def _row(
    label: str,
    kind: str,
    values: Sequence[float],
    ref: Sequence[float],
    res: Any = None,
    ref_label: str | None = None,
    key: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A board's row: the paired statistics of ``values`` against ``ref`` and, with the
    evaluation ``res``, the objectives of its method ``key`` (default ``label``; AWRT ratio
    against ``ref_label``)."""
    pc = paired_comparison(values, ref)
    return {
        "method": label,
        "kind": kind,
        "mean_avg_bsld": float(np.mean(values)),
        **pc.to_dict(),
        "verdict": pc.verdict,
        **(_objectives(res, key or label, ref_label) if res is not None else {}),
        **extra,
    }


def _objectives(res: Any, label: str, ref_label: str | None) -> dict[str, Any]:
    """``mean_utilization``, ``mean_awrt``, ``awrt_ratio`` (with its interval) and the
    mean waits by job-size class of a method of the evaluation ``res``."""
    aw = res.per_window("awrt")
    out: dict[str, Any] = {
        "mean_utilization": res.mean(label, "utilization"),
        "mean_awrt": float(np.mean(aw[label])),
        "awrt_ratio": None,
        "awrt_ci_low": None,
        "awrt_ci_high": None,
    }
    if ref_label is not None:
        pc = paired_comparison(aw[label], aw[ref_label])
        out.update(awrt_ratio=pc.geo_ratio, awrt_ci_low=pc.ci_low, awrt_ci_high=pc.ci_high)
    for m in SIZE_CLASS_METRICS:
        v = np.asarray(res.per_window(m)[label], dtype=np.float64)
        out[f"mean_{m}"] = float(np.nanmean(v)) if np.isfinite(v).any() else None
    return out


def _recipe(card: ModelCard) -> str:
    """What makes two zoo agents of different traces the same recipe."""
    d = card.data
    return "agent:" + "/".join(str(d.get(k)) for k in ("policy", "normalizer", "mode", "estimator"))


def replicate(boards: Sequence[dict[str, Any]], pairs: dict[str, str] | None = None) -> None:
    """Set each row's ``replicated_on`` (the sibling trace whose board holds the same
    heuristic or recipe), ``second_verdict`` (its verdict there) and ``replicated``
    (:func:`~hpcgym.evaluation.statistics.replicated_verdict` of the two; ``None``
    without a second test).

    :param boards: boards of :func:`leaderboard` or :func:`~.schedule_board.schedule_boards`
        (rows with ``method``, ``verdict`` and, for agents, ``recipe``)
    :param pairs: trace -> its second trace (:data:`REPLICATION_TRACES`)
    """
    pairs = REPLICATION_TRACES if pairs is None else pairs
    by_trace = {b["trace"]: b for b in boards}
    for b in boards:
        other = by_trace.get(pairs.get(b["trace"], ""))
        theirs = (
            {r.get("recipe") or r["method"]: r for r in other["rows"]} if other is not None else {}
        )
        for r in b["rows"]:
            twin = theirs.get(r.get("recipe") or r["method"])
            if twin is None or other is None:  # (no twin without the other board)
                r["replicated_on"] = None
                r["second_verdict"] = None
                r["replicated"] = None
            else:
                r["replicated_on"] = other["trace"]
                r["second_verdict"] = twin["verdict"]
                r["replicated"] = replicated_verdict(r["verdict"], twin["verdict"])


def _check(card: ModelCard, trace: str, name: str, rec: dict, got: list[float]) -> None:
    want = rec.get("per_window")
    ok = (
        np.allclose(want, got, rtol=AGREEMENT_RTOL, atol=0)
        if want is not None
        else math.isclose(rec["mean_avg_bsld"], float(np.mean(got)), rel_tol=AGREEMENT_RTOL)
    )
    if not ok:
        raise ValueError(
            f"the recorded test of {card.name} on {trace} has other {name} values than "
            "a replay on its windows gives: check it with "
            f"python eval/heldout.py agents/pretrained/{card.name}.json --check"
        )


def leaderboard(
    cards: Sequence[ModelCard],
    *,
    agent_loader: AgentLoader,
    schedulers: Sequence[str] = LEADERBOARD_SCHEDULERS,
    jobs: int | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One board per trace the cards were tested on: its windows and its rows, best first.

    :param cards: model cards with ``test`` sections (:func:`.find_model_cards`)
    :param agent_loader: turns a card's model into a policy (the loader eval/ passes)
    :param schedulers: the heuristics of every board (:data:`LEADERBOARD_SCHEDULERS`)
    :param jobs: worker processes of the heuristics' simulations (``None``: all cores)
    :param progress: show a progress bar
    :raises ValueError: a trace's agents were tested on different windows, or a card's
        recorded heuristic disagrees with the engine (the message names the card)
    """
    from hpcgym.workload import load, trace_spec

    if LEADERBOARD_REFERENCE not in schedulers:
        schedulers = [LEADERBOARD_REFERENCE, *schedulers]
    boards = []
    for trace, pairs in _test_sections(cards).items():
        win = _windows_of(trace, pairs)
        wl = load(trace_spec(trace))
        ws = select_windows(len(wl), win["length"], starts=win["starts"])
        agents = {}
        for card, sec in pairs:
            label = str(sec.get("agent", {}).get("label") or card.name)
            agents[label] = card_method(card, label=label)
        res = evaluate(
            wl,
            [scheduler_method(s) for s in schedulers] + list(agents.values()),
            ws,
            jobs=jobs,
            progress=progress,
            reference=None,
            agent_loader=agent_loader,
        )
        per = {k: [float(v) for v in vs] for k, vs in res.per_window("avg_bsld").items()}
        ref = per[LEADERBOARD_REFERENCE]
        for card, sec in pairs:
            for name, rec in sec["methods"].items():
                if name in per:
                    _check(card, trace, name, rec, per[name])
        rows = []
        for s in schedulers:
            rows.append(
                _row(
                    s,
                    "heuristic",
                    per[s],
                    ref,
                    res,
                    LEADERBOARD_REFERENCE,
                    head_delayed=res.head_delays(s)["head_delayed"],
                    head_delay=res.head_delays(s)["head_delay"],
                    command=(
                        f"python eval/compare.py --trace {trace} --schedulers {s} "
                        f"--split test --windows {win['windows']} --length {win['length']} "
                        f"--seed {win['seed']} --reference {LEADERBOARD_REFERENCE}"
                    ),
                )
            )
        for card, sec in pairs:
            label = str(sec.get("agent", {}).get("label") or card.name)
            own = str(card.data.get("normalizer") or "")
            own = own if card.policy == "FCFS" else f"{card.policy}+{own}"
            rows.append(
                _row(
                    card.name,
                    "agent",
                    per[label],
                    ref,
                    res,
                    LEADERBOARD_REFERENCE,
                    key=label,
                    recipe=_recipe(card),
                    **res.head_delays(label),
                    own_reference=own if own in sec.get("paired", {}) else None,
                    own=completed_paired(sec, label).get(own),
                    command=f"python eval/heldout.py agents/pretrained/{card.name}.json --check",
                )
            )
        rows.sort(key=lambda r: (r["geo_ratio"], r["method"]))
        boards.append(
            {
                "trace": trace,
                **win,
                "reference": LEADERBOARD_REFERENCE,
                "machine_size": int(wl.machine_size),
                "rows": rows,
            }
        )
    order = {"SDSC-SP2": 0, "HPC2N": 1, "Lublin-1": 2, "Lublin-2": 3}
    replicate(boards)
    return sorted(boards, key=lambda b: (order.get(b["trace"], 9), b["trace"]))


def _ratio(r: dict[str, Any] | None) -> str:
    if not r or r.get("geo_ratio") is None or not math.isfinite(r["geo_ratio"]):
        return "—"
    return f"{r['geo_ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def _names(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['method']} ({r['geo_ratio']:.2f})" for r in rows) or "none"


def replicated_cell(r: dict[str, Any]) -> str:
    """The cell of a row's second test: ``holds on HPC2N``, ``not on HPC2N (on par)``,
    ``—`` (no second test of a claim)."""
    if r.get("replicated_on") is None:
        return "—: no second test" if r["verdict"] == "better" else "—"
    if r["verdict"] not in ("better", "worse"):
        return f"{r['replicated_on']}: {r['second_verdict']}"
    if r["replicated"] == r["verdict"]:
        return f"holds on {r['replicated_on']}"
    return f"not on {r['replicated_on']} ({r['second_verdict']})"


def _paragraph(board: dict[str, Any]) -> str:
    rows = [r for r in board["rows"] if r["method"] != board["reference"]]
    held = [r for r in rows if r["verdict"] == "better" and r.get("replicated") == "better"]
    once = [r for r in rows if r["verdict"] == "better" and r.get("replicated") != "better"]
    by = {v: [r for r in rows if r["verdict"] == v] for v in ("on par", "inconclusive", "worse")}
    agents = [r for r in rows if r["kind"] == "agent"]
    text = (
        f"Against {board['reference']} on these windows, lower slowdowns that hold on a "
        f"second trace: {_names(held)}; lower here only (one test): {_names(once)}; "
        f"on par: {_names(by['on par'])}; inconclusive: {_names(by['inconclusive'])}; "
        f"worse: {_names(by['worse'])}."
    )
    own = [r for r in agents if r.get("own_reference") and r["own_reference"] != board["reference"]]
    if own:
        parts = [
            f"{r['method']} {_ratio(r['own'])} × {r['own_reference']}, {_verdict_word(r['own'])}"
            for r in own
        ]
        text += " Against the heuristic each was trained against: " + "; ".join(parts) + "."
    return text


def _verdict_word(cell: dict[str, Any] | None) -> str:
    """The verdict of a recorded paired cell by today's rule (its own word otherwise)."""
    from hpcgym.evaluation.statistics import verdict

    if not cell:
        return "—"
    return verdict(cell) or str(cell.get("verdict") or "—")


def _hours(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v / 3600.0:.{digits}f}"


def leaderboard_markdown(boards: Sequence[dict[str, Any]], command: str) -> str:
    """The Markdown of the boards (a section per trace).

    :param boards: :func:`leaderboard`'s result
    :param command: the command that generated it (named under the title)
    """
    out = [
        "# Results",
        "",
        f"Generated by `{command}`; do not edit by hand. Every heuristic and every zoo agent "
        "(`agents/pretrained/`) on the zoo's held-out test windows of each trace: the "
        "zoo agents were chosen on validation windows and tested once on these windows. "
        "`ratio` is the paired geometric-mean ratio of AVEbsld against the reference on "
        "the same windows with its 95% bootstrap interval; `ratio of means` is the mean "
        "AVEbsld over the windows divided by the reference's, with its own paired 95% "
        "bootstrap interval. " + verdict_caption() + " `second trace`: the verdict of "
        "the same heuristic (or the zoo agent of the same recipe) against the same "
        "reference on the sibling trace's board (SDSC-SP2 with HPC2N, Lublin-1 with "
        "Lublin-2). `wins`: windows where the method's AVEbsld is lower than the "
        "reference's. `late heads`: jobs started after the reservation the requested run "
        "times promised them (guarded agents and request-based backfilling never delay "
        "one). " + OBJECTIVES_CAPTION + " The agents' numbers are their cards' "
        "recorded tests, played again by this command (which fails unless they agree), and "
        "the heuristics run on the same windows. The research report "
        "([research/report.md](research/report.md)) reads them against the headroom ladder: "
        "only a certified lower bound on AVEbsld is proven (the best schedule found is 3.11-9.77 "
        "times it on the job-ordering windows), clairvoyant orders reach 0.258-0.627 x the best "
        "queue order, and on the ladder's train and validation windows no online predictor, rule "
        "or planner is better than the ladder's reference heuristic with a tail that is not worse.",
        "",
    ]
    for b in boards:
        ref = b["reference"]
        out += [
            f"## Backfill-v0 on {b['trace']}",
            "",
            f"{b['windows']} test windows of {b['length']:,} jobs (window seed {b['seed']}), "
            f"reference {ref}.",
            "",
            f"| rank | method | kind | mean AVEbsld | ratio vs {ref} [95% CI] | "
            f"ratio of means vs {ref} [95% CI] | wins | verdict | second trace | util (%) | "
            f"AWRT (h) | AWRT ratio vs {ref} [95% CI] | late heads |",
            "|---:|---|---|---:|---|---|---:|---|---|---:|---:|---|---:|",
        ]
        for i, r in enumerate(b["rows"], 1):
            name = f"**{r['method']}**" if r["kind"] == "agent" else r["method"]
            util = r.get("mean_utilization")
            out.append(
                f"| {i} | {name} | {'zoo agent' if r['kind'] == 'agent' else 'heuristic'} | "
                f"{r['mean_avg_bsld']:.2f} | {_ratio(r)} | "
                f"{ratio_cell(r.get('mean_ratio'), r.get('mean_low'), r.get('mean_high'))} | "
                f"{r['wins']}/{r['windows']} | {r['verdict']} | {replicated_cell(r)} | "
                f"{'—' if util is None else f'{100 * util:.1f}'} | "
                f"{_hours(r.get('mean_awrt'))} | "
                f"{ratio_cell(r.get('awrt_ratio'), r.get('awrt_ci_low'), r.get('awrt_ci_high'))}"
                f" | {late_heads_cell(r.get('head_delayed'), r.get('head_delay'))} |"
            )
        out += ["", _paragraph(b)]
        out += [ln.replace("## Waits by job size", f"### Waits by job size on {b['trace']}")
                for ln in size_class_table(b["rows"], b.get("machine_size"))]  # fmt: skip
        out += ["", "Reproduce a row:", ""]
        out += [f"- {r['method']}: `{r['command']}`" for r in b["rows"]]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
