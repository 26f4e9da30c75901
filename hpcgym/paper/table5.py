"""RLBackfilling Table 5 (generality): agents trained on trace X applied to trace Y."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcgym.evaluation.cards import ModelCard, canonical_trace
from hpcgym.evaluation.methods import card_method, scheduler_method
from hpcgym.evaluation.published import PAPER_TABLE5, TABLE4_TRACES
from hpcgym.evaluation.windows import WindowSet
from hpcgym.paper.tables import PaperTable, TableRun, TableSection, cards_by
from hpcgym.workload.core import Workload

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hpcgym.paper.tables import TableOptions

__all__ = ["table5"]


def table5(
    cards: Sequence[ModelCard],
    *,
    traces: Sequence[str] = TABLE4_TRACES,
    policies: Sequence[str] = ("FCFS", "SJF"),
    agent_traces: bool = True,
    **options: Unpack[TableOptions],
) -> PaperTable:
    """RLBackfilling Table 5 (generality): for every base policy, rows = evaluated traces
    Y, columns = ``EASY``, ``EASY-AR`` (with that base policy) and ``RL-X`` for every
    shipped agent trained on trace X with that policy, applied to Y on Y's windows.

    :param agent_traces: also add the agents' training traces that are not in ``traces``
        as rows (every agent on every trace)
    :param options: the protocol and run options, as for
        :func:`~hpcgym.evaluation.table4` (defaults: :class:`TableRun`)
    """
    run = TableRun(**options)
    notes: list[str] = []
    by = cards_by(cards, notes)
    traces = list(traces)
    rows = [canonical_trace(t) for t in traces]
    if agent_traces:  # every pair: the agents' own traces are rows too
        for c in sorted(cards, key=lambda c: c.name):
            if c.trace not in rows and c.policy.upper() in {p.upper() for p in policies}:
                rows.append(c.trace)
                traces.append(c.trace)
    loaded: dict[str, Workload] = {}
    win: dict[str, list[int]] = {}
    wsets: dict[str, WindowSet] = {}
    for t, name in zip(traces, rows, strict=True):
        got = run.load(t, name, notes, "its rows are empty")
        if got is None:
            continue
        loaded[name], ws = got
        wsets[name] = ws
        win[name] = list(ws.starts)
    requests = []
    meta: list[tuple[str, str]] = []  # (policy, trace) per request
    sections_cols: dict[str, list[str]] = {}
    sources: dict[str, dict[str, dict[str, str]]] = {}
    order = {n: i for i, n in enumerate(rows)}
    for pol in policies:
        pol = pol.upper()
        pol_traces = sorted(  # the training traces of the agents with this base policy
            (tr for (tr, p) in by if p == pol), key=lambda x: (order.get(x, len(order)), x)
        )
        if not pol_traces:
            notes.append(f"{pol}: no shipped agent with the {pol} base policy")
        cols = ["EASY", "EASY-AR"] + [f"RL-{x}" for x in pol_traces]
        sections_cols[pol] = cols
        sources[pol] = {}
        for name in rows:
            if name not in loaded:
                continue
            methods = [
                scheduler_method("EASY" if pol == "FCFS" else f"{pol}+EASY", label="EASY"),
                scheduler_method("EASY-AR" if pol == "FCFS" else f"{pol}+EASY-AR", label="EASY-AR"),
            ]
            src = {"EASY": methods[0].spec, "EASY-AR": methods[1].spec}
            for x in pol_traces:
                card = by[(x, pol)]
                methods.append(card_method(card, f"RL-{x}", run.scales))
                src[f"RL-{x}"] = f"agent {card.name}"
            sources[pol][name] = src
            requests.append((loaded[name], methods, wsets[name]))
            meta.append((pol, name))
    results = run.evaluate(requests, reference="EASY")
    sections = []
    for pol in [p.upper() for p in policies]:
        section = TableSection(
            f"{pol} as the base scheduling policy",
            rows,
            sections_cols[pol],
            {r: {} for r in rows},
            {r: {} for r in rows},
            {r: dict(PAPER_TABLE5.get(pol, {}).get(r, {})) for r in rows},
            sources[pol],
        )
        for (p, name), res in zip(meta, results, strict=True):
            if p != pol:
                continue
            res.tag = pol
            section.collect(name, res)
            for lab, why in res.skipped.items():
                notes.append(f"{pol} {name} {lab}: skipped ({why})")
        sections.append(section)
    for name, wl in loaded.items():
        if np.array_equal(wl.request, wl.runtime):
            notes.append(
                f"{name}: requests equal runtimes (synthetic), EASY = EASY-AR; the paper "
                "prints the value under EASY-AR"
            )
    caption = "Table 5: agents trained on trace X (RL-X) applied to trace Y (rows)"
    return run.table("table5", caption, sections, notes, win, results)
