"""RLBackfilling Table 4: AVEbsld per trace of the heuristics and the shipped agents."""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from typing import TYPE_CHECKING

import numpy as np

from hpcgym.evaluation.cards import ModelCard, canonical_trace
from hpcgym.evaluation.methods import Method, MethodUnavailable, card_method, scheduler_method
from hpcgym.evaluation.published import (
    EXTRA_SCHEDULERS,
    PAPER_TABLE4,
    TABLE4_COLUMNS,
    TABLE4_TRACES,
)
from hpcgym.paper.tables import PaperTable, TableRun, TableSection, cards_by

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hpcgym.paper.tables import TableOptions

__all__ = ["table4"]


def table4(
    cards: Sequence[ModelCard],
    *,
    traces: Sequence[str] = TABLE4_TRACES,
    extra: Sequence[str] = EXTRA_SCHEDULERS,
    **options: Unpack[TableOptions],
) -> PaperTable:
    """RLBackfilling Table 4: rows = traces, columns = :data:`TABLE4_COLUMNS` + ``extra``.

    ``FCFS+RLBF`` / ``SJF+RLBF`` use the card (``cards``) trained on that trace with that
    base policy, if any (else ``—`` and a note). Unknown or failing schedulers (e.g.
    ``EASY-HMM`` before it is wired) and unavailable traces give ``—`` and a note. All
    columns of a trace run on the same windows (:func:`select_windows`).

    :param options: the protocol and run options (``windows``, ``length``, ``split``,
        ``seed``, ``train_fraction``, ``prefix``, ``scales``, ``jobs``, ``progress``,
        ``agent_loader``, ``reference``, ``lenient``; defaults: :class:`TableRun`)
    """
    run = TableRun(**options)
    notes: list[str] = []
    by = cards_by(cards, notes)
    columns = list(TABLE4_COLUMNS) + [e for e in extra if e not in TABLE4_COLUMNS]
    requests = []
    colmap: dict[str, dict[str, str]] = {}
    rows: list[str] = []
    missing: list[str] = []
    req_rows: list[str] = []
    win: dict[str, list[int]] = {}
    for t in traces:
        name = canonical_trace(t)
        rows.append(name)
        loaded = run.load(t, name, notes, "its row is empty")
        if loaded is None:
            continue
        wl, ws = loaded
        win[name] = list(ws.starts)
        methods: list[Method] = []
        cmap: dict[str, str] = {}
        for col in columns:
            if col.endswith("+RLBF"):
                pol = col.split("+")[0]
                card = by.get((name, pol))
                if card is None:
                    missing.append(f"{name} {col}")
                    continue
                methods.append(card_method(card, col, run.scales))
                cmap[col] = f"agent {card.name}"
                continue
            spec = col[5:] if col.startswith("FCFS+") else col
            try:
                methods.append(scheduler_method(spec, label=col))
                cmap[col] = spec
            except MethodUnavailable as exc:
                notes.append(f"{col}: unavailable scheduler ({str(exc).split(';')[0]})")
        colmap[name] = cmap
        requests.append((wl, methods, ws))
        req_rows.append(name)
    if missing:
        notes.insert(
            0,
            "RLBF cells without a shipped agent (a model card with that trace and base policy): "
            + ", ".join(missing),
        )
    results = run.evaluate(requests, reference="FCFS+EASY")
    paper = {r: dict(PAPER_TABLE4.get(r, {})) for r in rows}
    empty: dict[str, dict[str, float | None]] = {r: {} for r in rows}
    section = TableSection("", rows, columns, deepcopy(empty), deepcopy(empty), paper, colmap)
    for name, (wl, _m, _w), res in zip(req_rows, requests, results, strict=True):
        section.collect(name, res)
        for lab, why in res.skipped.items():
            notes.append(f"{name} {lab}: skipped ({why})")
        if np.array_equal(wl.request, wl.runtime):
            notes.append(
                f"{name}: every request equals the runtime (synthetic trace), so EASY and "
                "EASY-AR are the same schedule; the paper reports one of them"
            )
    caption = "Table 4: AVEbsld of RLBackfilling and the heuristics (same trace)"
    return run.table("table4", caption, [section], notes, win, results)
