"""Reproduced paper tables: :class:`PaperTable` (sections of rows = traces, columns =
methods, ours beside the published numbers), its Markdown / CSV / JSON and
:func:`write_table`; helpers shared by Table 4 and Table 5."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from hpcgym.evaluation.cards import ModelCard
from hpcgym.evaluation.published import PAPER_LENGTH, PAPER_WINDOWS
from hpcgym.evaluation.report import ratio_caption, write_outputs
from hpcgym.evaluation.results import STAT_COLUMNS, EvalResult, csv_text, fmt
from hpcgym.evaluation.statistics import verdict
from hpcgym.evaluation.tensorboard import sanitize
from hpcgym.evaluation.windows import WindowSet, select_windows
from hpcgym.workload.core import Workload

if TYPE_CHECKING:
    from hpcgym.evaluation.loaders import AgentLoader
    from hpcgym.evaluation.methods import Method

__all__ = ["TABLE_SCHEMA", "PaperTable", "TableSection", "table_from_dict", "write_table"]

TABLE_SCHEMA = "hpcgym-paper-table/1"


@dataclass
class TableSection:
    """One block of a paper table: rows = traces, columns = methods.

    ``ours[row][col]`` = mean AVEbsld over the windows (``None``: not available),
    ``wait`` the mean wait, ``paper`` the published value (``None``: not published),
    ``ratios[row][col]`` the paired statistics against ``reference`` (``geo_ratio, ci_low,
    ci_high, wins, windows``; empty without a reference).
    """

    title: str
    rows: list[str]
    columns: list[str]
    ours: dict[str, dict[str, float | None]]
    wait: dict[str, dict[str, float | None]]
    paper: dict[str, dict[str, float | None]]
    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    ratios: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    reference: str | None = None

    def collect(self, row: str, result: EvalResult) -> None:
        """Fill the cells of ``row`` from an evaluation (mean AVEbsld, wait, statistics).

        :param row: the trace's row
        :param result: the evaluation of that row's methods
        """
        for lab in result.labels:
            self.ours[row][lab] = result.mean(lab)
            self.wait[row][lab] = result.mean(lab, "avg_wait")
            if result.ratio_values is not None:
                cell = {**result.paired(lab), "windows": len(result.windows.starts)}
                self.ratios.setdefault(row, {})[lab] = cell
                self.reference = result.ratio_reference


@dataclass
class PaperTable:
    """A reproduced paper table (Table 4 or 5) with its notes and protocol."""

    name: str
    caption: str
    sections: list[TableSection]
    notes: list[str]
    protocol: dict[str, Any]
    windows: dict[str, list[int]]
    results: list[EvalResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``<name>.json`` (schema :data:`TABLE_SCHEMA`)."""
        return {
            "schema": TABLE_SCHEMA,
            "name": self.name,
            "caption": self.caption,
            "protocol": self.protocol,
            "windows": self.windows,
            "sections": [
                {
                    "title": s.title,
                    "rows": s.rows,
                    "columns": s.columns,
                    "ours": s.ours,
                    "mean_wait": s.wait,
                    "paper": s.paper,
                    "sources": s.sources,
                    **({"reference": s.reference, "ratios": s.ratios} if s.ratios else {}),
                }
                for s in self.sections
            ],
            "notes": self.notes,
        }

    def markdown(self, heading: str = "#") -> str:
        """Markdown: per section, one row per trace for ours and one for the paper."""
        lines = [f"{heading} {self.caption}", ""]
        p = self.protocol
        drawn = f"sampled with seed {p['seed']}" if p.get("seed") is not None else "evenly spaced"
        lines.append(
            f"hpcgym: mean AVEbsld over {p['windows']} windows of {p['length']} jobs per trace, "
            f"{drawn} in the {p['split']!r} split (train_fraction {p['train_fraction']})"
            + (f", first {p['prefix']} jobs" if p.get("prefix") else "")
            + "; the same windows for every column of a trace. Paper: RLBackfilling (paper 004) "
            "— 10 random 1024-job sequences of the first 10K jobs of each trace. "
            "— = not available / not reported."
        )
        for s in self.sections:
            if s.title:
                lines += ["", f"{heading}# {s.title}"]
            lines += ["", "| trace | | " + " | ".join(s.columns) + " |"]
            lines.append("|---|---|" + "---:|" * len(s.columns))
            for row in s.rows:
                lines.append(
                    f"| {row} | hpcgym | "
                    + " | ".join(fmt(s.ours[row].get(c)) for c in s.columns)
                    + " |"
                )
                if any(v is not None for v in s.paper.get(row, {}).values()):
                    lines.append(
                        "| | paper | "
                        + " | ".join(fmt(s.paper.get(row, {}).get(c)) for c in s.columns)
                        + " |"
                    )
            lines += ["", "Mean wait (s), hpcgym:", ""]
            lines.append("| trace | " + " | ".join(s.columns) + " |")
            lines.append("|---|" + "---:|" * len(s.columns))
            for row in s.rows:
                lines.append(
                    f"| {row} | " + " | ".join(fmt(s.wait[row].get(c), 0) for c in s.columns) + " |"
                )
            if s.ratios:
                lines += _ratio_lines(s)
        if self.notes:
            lines += ["", "Notes:", ""]
            lines += [f"* {n}" for n in self.notes]
        if self.windows:
            lines += ["", "Window starts (replay with `eval/compare.py --starts`):", ""]
            for t, st in self.windows.items():
                lines.append(f"* {t}: {' '.join(map(str, st))}")
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """One row per (section, trace, column); the statistics columns when there are any."""
        stats = any(s.ratios for s in self.sections)
        rows = []
        for s in self.sections:
            for r in s.rows:
                for c in s.columns:
                    rows.append(
                        {
                            "section": s.title,
                            "trace": r,
                            "column": c,
                            "avg_bsld": s.ours[r].get(c),
                            "mean_wait": s.wait[r].get(c),
                            "paper": s.paper.get(r, {}).get(c),
                            "method": s.sources.get(r, {}).get(c),
                            **s.ratios.get(r, {}).get(c, {}),
                        }
                    )
        cols = ("section", "trace", "column", "avg_bsld", "mean_wait", "paper", "method")
        return csv_text(rows, cols + (STAT_COLUMNS if stats else ()))


def _ratio_lines(s: TableSection) -> list[str]:
    """The Markdown block of a section's paired statistics."""
    n = max((c.get("windows", 0) for r in s.ratios.values() for c in r.values()), default=0)
    lines = [
        "",
        f"Paired geometric-mean ratio of AVEbsld vs {s.reference} [95% bootstrap interval], "
        "ratio of means, wins / windows, verdict, hpcgym:",
        "",
        "| trace | " + " | ".join(s.columns) + " |",
        "|---|" + "---:|" * len(s.columns),
    ]
    for row in s.rows:
        cells = []
        for c in s.columns:
            v = s.ratios.get(row, {}).get(c)
            cells.append(
                "—"
                if not v
                else f"{fmt(v['geo_ratio'], 3)} [{fmt(v['ci_low'], 3)}, "
                f"{fmt(v['ci_high'], 3)}]"
                + (
                    f", ratio of means {fmt(v['mean_ratio'], 3)}"
                    if v.get("mean_ratio") is not None
                    else ""
                )
                + f" {v['wins']}/{v['windows']} {verdict(v) or ''}".rstrip()
            )
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    lines += ["", ratio_caption(s.reference or "", n)]
    return lines


def write_table(
    table: PaperTable,
    out_dir: str | os.PathLike[str],
    *,
    plots: bool = True,
    per_trace: bool = True,
) -> dict[str, Path]:
    """Write ``<name>.md``, ``<name>.csv``, ``<name>.json`` and, with ``per_trace``, the
    full evaluation outputs of every trace into ``out_dir/<trace>/`` (table, CSV, JSON,
    plots). The paper table's figure ``<name>.png`` too (``plots``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext, text in (
        ("md", table.markdown()),
        ("csv", table.csv()),
        ("json", json.dumps(table.to_dict(), indent=2) + "\n"),
    ):
        p = out / f"{table.name}.{ext}"
        p.write_text(text, encoding="utf-8")
        paths[p.name] = p
    if per_trace:
        for r in table.results:
            name = r.trace if r.tag is None else f"{r.trace}_{r.tag}"
            sub = out / sanitize(name)
            for k, v in write_outputs(r, sub, plots=plots).items():
                paths[f"{sub.name}/{k}"] = v
    if plots and any(
        v is not None for s in table.sections for row in s.ours.values() for v in row.values()
    ):  # a table without any value (every trace unavailable, see its notes) has no figure
        from hpcgym.evaluation import plots as P

        p = P.plot_paper_table(table.to_dict(), out / f"{table.name}.png")
        paths[p.name] = p
    return paths


def trace_available(name: str, lenient: bool = False) -> tuple[Workload | None, str | None]:
    """``(workload, None)``, or ``(None, why)`` when the trace cannot be loaded.

    :param name: registered name, SWF path or ``synthetic``
    :param lenient: skip (and count) malformed SWF lines (``read_swf``)
    """
    from hpcgym.workload import load

    try:
        return load(name, lenient=lenient), None
    except Exception as exc:  # missing trace: a note, not a crash
        return None, f"{type(exc).__name__}: {exc}"


def cards_by(cards: Sequence[ModelCard], notes: list[str]) -> dict[tuple[str, str], ModelCard]:
    """(canonical trace, policy) -> card; duplicates: the first by name, noted."""
    out: dict[tuple[str, str], ModelCard] = {}
    for c in sorted(cards, key=lambda c: c.name):
        key = (c.trace, c.policy.upper())
        if key in out:
            notes.append(
                f"several agents for {key[0]} / {key[1]}: using {out[key].name}, ignoring {c.name}"
            )
            continue
        out[key] = c
    return out


class TableOptions(TypedDict, total=False):
    """The keyword arguments :func:`~hpcgym.evaluation.table4` and
    :func:`~hpcgym.evaluation.table5` share (meanings and defaults: :class:`TableRun`)."""

    windows: int
    length: int
    split: str
    seed: int | None
    train_fraction: float
    prefix: int | None
    scales: str
    jobs: int | None
    progress: bool
    agent_loader: AgentLoader | None
    reference: str | None
    lenient: bool


@dataclass(frozen=True)
class TableRun:
    """The evaluation protocol of a paper table and how it is run (Table 4 and Table 5).

    :param windows: windows per trace
    :param length: jobs per window
    :param split: ``train``, ``test`` or ``all`` (:func:`select_windows`)
    :param seed: window sampling seed (``None``: evenly spaced)
    :param train_fraction: the train part of a trace
    :param prefix: only the first ``prefix`` jobs of a trace
    :param scales: the agents' observation scales (``card_method``)
    :param jobs: worker processes (``None``: all cores)
    :param progress: progress bar on stderr
    :param agent_loader: turns an agent spec into a policy (:func:`evaluate_many`)
    :param reference: scheduler of the paired statistics (``ratio_reference``)
    :param lenient: skip (and count) malformed SWF lines of the traces
    """

    windows: int = PAPER_WINDOWS
    length: int = PAPER_LENGTH
    split: str = "test"
    seed: int | None = 1
    train_fraction: float = 0.7
    prefix: int | None = None
    scales: str = "target"
    jobs: int | None = None
    progress: bool = True
    agent_loader: AgentLoader | None = None
    reference: str | None = None
    lenient: bool = False

    def load(
        self, trace: str, name: str, notes: list[str], empty: str
    ) -> tuple[Workload, WindowSet] | None:
        """The workload of ``trace`` (row ``name``) and its windows (the same for every
        column), or ``None`` and the note ``"<name>: trace not available (why); <empty>"``."""
        wl, err = trace_available(trace, lenient=self.lenient)
        if wl is None:
            notes.append(f"{name}: trace not available ({err}); {empty}")
            return None
        ws = select_windows(
            len(wl),
            self.length,
            self.windows,
            self.split,
            self.seed,
            self.train_fraction,
            prefix=self.prefix,
        )
        return wl, ws

    def evaluate(
        self, requests: Sequence[tuple[Workload, list[Method], WindowSet]], reference: str
    ) -> list[EvalResult]:
        """:func:`evaluate_many` of the table's requests (failing methods are skipped);
        ``reference`` is the label of ``vs_reference_pct``."""
        from hpcgym.evaluation.runner import evaluate_many

        return evaluate_many(
            requests,
            jobs=self.jobs,
            progress=self.progress,
            skip_unavailable=True,
            reference=reference,
            agent_loader=self.agent_loader,
            ratio_reference=self.reference,
        )

    def table(
        self,
        name: str,
        caption: str,
        sections: list[TableSection],
        notes: list[str],
        windows: dict[str, list[int]],
        results: list[EvalResult],
    ) -> PaperTable:
        """The :class:`PaperTable` of this run (its notes without repeats, its protocol)."""
        return PaperTable(
            name=name,
            caption=caption,
            sections=sections,
            notes=dedupe(notes),
            protocol=self.protocol(),
            windows=windows,
            results=results,
        )

    def protocol(self) -> dict[str, Any]:
        """The evaluation protocol of the table (its JSON ``protocol``)."""
        fields = ("windows", "length", "split", "seed", "train_fraction", "prefix", "scales")
        return {**{f: getattr(self, f) for f in fields}, "engine_seed": 0, "env_seed": 0}


def dedupe(items: list[str]) -> list[str]:
    """``items`` without repeats, in first-seen order."""
    seen: set[str] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def table_from_dict(data: dict[str, Any]) -> PaperTable:
    """The :class:`PaperTable` of a ``<name>.json`` written by :func:`write_table`."""
    if data.get("schema") != TABLE_SCHEMA:
        raise ValueError(f"not an hpcgym paper table JSON (schema {data.get('schema')!r})")
    sections = [
        TableSection(
            s["title"],
            s["rows"],
            s["columns"],
            s["ours"],
            s["mean_wait"],
            s["paper"],
            s.get("sources", {}),
            s.get("ratios", {}),
            s.get("reference"),
        )
        for s in data["sections"]
    ]
    return PaperTable(
        name=data["name"],
        caption=data["caption"],
        sections=sections,
        notes=data["notes"],
        protocol=data["protocol"],
        windows=data["windows"],
    )
