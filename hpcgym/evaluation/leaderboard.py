"""The leaderboard of docs/results.md: every heuristic and every zoo agent on the zoo's
held-out test windows, trace by trace.

The zoo agents of a trace were tested once on the same windows (30 windows of 1,024 jobs
of the test split, one window seed: their cards' ``test`` sections). The leaderboard plays
every agent again on those windows, and runs every heuristic of
:data:`LEADERBOARD_SCHEDULERS` there with the engine; whatever a card recorded (the
agent's and the heuristics' per-window or mean AVEbsld) must agree with the replay to
:data:`AGREEMENT_RTOL`, else the card is stale and :func:`leaderboard` says so. Each row
is compared with :data:`LEADERBOARD_REFERENCE` on the same windows by the paired
geometric-mean ratio and its 95% bootstrap interval (:mod:`.statistics`); an agent is also
compared with the heuristic it was trained against (its card's ``paired`` section).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcgym.evaluation.cards import ModelCard
from hpcgym.evaluation.loaders import AgentLoader
from hpcgym.evaluation.methods import card_method, scheduler_method
from hpcgym.evaluation.report import late_heads_cell
from hpcgym.evaluation.runner import evaluate
from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.evaluation.windows import select_windows

__all__ = [
    "AGREEMENT_RTOL",
    "LEADERBOARD_REFERENCE",
    "LEADERBOARD_SCHEDULERS",
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


def _test_sections(cards: Sequence[ModelCard]) -> dict[str, list[tuple[ModelCard, dict]]]:
    """(card, test section) of every card's test on its own trace, by trace."""
    out: dict[str, list[tuple[ModelCard, dict]]] = {}
    for card in cards:
        if card.data.get("task", "backfill") != "backfill":  # Schedule-v0: schedule_board
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
    label: str, kind: str, values: Sequence[float], ref: Sequence[float], **extra: Any
) -> dict[str, Any]:
    pc = paired_comparison(values, ref)
    return {
        "method": label,
        "kind": kind,
        "mean_avg_bsld": float(np.mean(values)),
        **pc.to_dict(),
        "verdict": pc.verdict,
        **extra,
    }


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
                    **res.head_delays(label),
                    own_reference=own if own in sec.get("paired", {}) else None,
                    own=sec.get("paired", {}).get(own),
                    command=f"python eval/heldout.py agents/pretrained/{card.name}.json --check",
                )
            )
        rows.sort(key=lambda r: (r["geo_ratio"], r["method"]))
        boards.append({"trace": trace, **win, "reference": LEADERBOARD_REFERENCE, "rows": rows})
    order = {"SDSC-SP2": 0, "HPC2N": 1, "Lublin-1": 2, "Lublin-2": 3}
    return sorted(boards, key=lambda b: (order.get(b["trace"], 9), b["trace"]))


def _ratio(r: dict[str, Any] | None) -> str:
    if not r or r.get("geo_ratio") is None or not math.isfinite(r["geo_ratio"]):
        return "—"
    return f"{r['geo_ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def _names(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['method']} ({r['geo_ratio']:.2f})" for r in rows) or "none"


def _paragraph(board: dict[str, Any]) -> str:
    rows = [r for r in board["rows"] if r["method"] != board["reference"]]
    by = {v: [r for r in rows if r["verdict"] == v] for v in ("better", "on par", "worse")}
    agents = [r for r in rows if r["kind"] == "agent"]
    text = (
        f"Against {board['reference']} on these windows, better: {_names(by['better'])}; "
        f"on par: {_names(by['on par'])}; worse: {_names(by['worse'])}."
    )
    own = [r for r in agents if r.get("own_reference") and r["own_reference"] != board["reference"]]
    if own:
        parts = [
            f"{r['method']} {_ratio(r['own'])} × {r['own_reference']}, {r['own']['verdict']}"
            for r in own
        ]
        text += " Against the heuristic each was trained against: " + "; ".join(parts) + "."
    return text


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
        "the same windows with its 95% bootstrap interval; a method is *better* only when "
        "the whole interval lies below 1 over at least 30 windows, *worse* when it lies "
        "above 1, else *on par* ([evaluation.md](evaluation.md)). `wins`: windows where "
        "the method's AVEbsld is lower than the reference's. `late heads`: jobs started "
        "after the reservation the requested run times promised them (guarded agents and "
        "request-based backfilling never delay one). The agents' numbers are their cards' "
        "recorded tests, played again by this command (which fails unless they agree), and "
        "the heuristics run on the same windows. The research report "
        "([research/findings.md](research/findings.md)) explains the numbers.",
        "",
    ]
    for b in boards:
        out += [
            f"## Backfill-v0 on {b['trace']}",
            "",
            f"{b['windows']} test windows of {b['length']:,} jobs (window seed {b['seed']}), "
            f"reference {b['reference']}.",
            "",
            "| rank | method | kind | mean AVEbsld | ratio vs "
            f"{b['reference']} [95% CI] | wins | verdict | late heads |",
            "|---:|---|---|---:|---|---:|---|---:|",
        ]
        for i, r in enumerate(b["rows"], 1):
            name = f"**{r['method']}**" if r["kind"] == "agent" else r["method"]
            out.append(
                f"| {i} | {name} | {'zoo agent' if r['kind'] == 'agent' else 'heuristic'} | "
                f"{r['mean_avg_bsld']:.2f} | {_ratio(r)} | {r['wins']}/{r['windows']} | "
                f"{r['verdict']} | {late_heads_cell(r.get('head_delayed'), r.get('head_delay'))} |"
            )
        out += ["", _paragraph(b), "", "Reproduce a row:", ""]
        out += [f"- {r['method']}: `{r['command']}`" for r in b["rows"]]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
