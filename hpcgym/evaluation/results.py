"""Results: :class:`EvalResult` (all methods on the same windows of one trace), its
summary statistics, and the CSV / JSON forms of ``windows.csv``, ``summary.csv`` and
``results.json``."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcgym.evaluation.fairness import FAIRNESS_COLUMNS, fairness
from hpcgym.evaluation.methods import AGENT_HEURISTICS, Method
from hpcgym.evaluation.play import AGENT_COUNTERS, HEAD_DELAY_METRICS, WINDOW_METRICS
from hpcgym.evaluation.published import LABEL_TO_T4, PAPER_LENGTH, PAPER_TABLE4
from hpcgym.evaluation.windows import WindowSet
from hpcgym.sim.metrics import SIZE_CLASS_METRICS, bounded_slowdown

__all__ = [
    "OBJECTIVE_COLUMNS",
    "RESULT_SCHEMA",
    "STAT_COLUMNS",
    "SUMMARY_COLUMNS",
    "WINDOW_COLUMNS",
    "EvalResult",
    "csv_text",
    "fmt",
]

RESULT_SCHEMA = "hpcgym-evaluation/1"

#: Paired statistics against the ratio reference (:mod:`hpcgym.evaluation.statistics`):
#: the geometric-mean ratio and its 95% interval, the ratio of means and its 95% interval,
#: the 90% interval and margin of the equivalence test, the wins; ``verdict`` is
#: :attr:`~hpcgym.evaluation.statistics.PairedComparison.verdict`.
STAT_COLUMNS: tuple[str, ...] = (
    "geo_ratio",
    "ci_low",
    "ci_high",
    "mean_ratio",
    "mean_low",
    "mean_high",
    "eq_low",
    "eq_high",
    "margin",
    "wins",
    "verdict",
)

#: Objectives beyond bounded slowdown, means over the windows (:mod:`hpcgym.sim.metrics`):
#: the area-weighted response time, its paired geometric-mean ratio against the ratio
#: reference with the 95% interval (when the reference is one of the methods), and the
#: mean and 95th-percentile wait of each job-size class (a window without jobs of a class
#: does not count in its mean; ``None``: no window has any).
OBJECTIVE_COLUMNS: tuple[str, ...] = (
    "mean_awrt",
    "awrt_ratio",
    "awrt_ci_low",
    "awrt_ci_high",
    *(f"mean_{m}" for m in SIZE_CLASS_METRICS),
)

#: Columns of ``windows.csv`` (one row per method and window; agent-only columns are
#: empty for engine schedulers).
WINDOW_COLUMNS: tuple[str, ...] = (
    "trace",
    "method",
    "kind",
    "window",
    "start",
    "length",
    *WINDOW_METRICS,
    *AGENT_COUNTERS,
    *HEAD_DELAY_METRICS,
)

#: Columns of ``summary.csv`` (one row per method; statistics over the windows).
SUMMARY_COLUMNS: tuple[str, ...] = (
    "trace",
    "method",
    "kind",
    "windows",
    "mean_avg_bsld",
    "median_avg_bsld",
    "std_avg_bsld",
    "min_avg_bsld",
    "max_avg_bsld",
    "mean_avg_wait",
    "mean_utilization",
    *OBJECTIVE_COLUMNS,
    *FAIRNESS_COLUMNS,
    "vs_reference_pct",
    "paper_table4",
    *STAT_COLUMNS,
    *HEAD_DELAY_METRICS,
)


@dataclass
class EvalResult:
    """All methods on the same windows of one trace.

    :param trace: the trace's label (workload name)
    :param jobs: jobs in the trace
    :param machine_size: processors
    :param windows: the windows
    :param methods: the evaluated methods (skipped ones are not here)
    :param rows: one dict per (method, window), method-major, keys :data:`WINDOW_COLUMNS`
    :param job_start: per method, the start time of every job, ``(windows, length)``
    :param submit, runtime: the windows' jobs, ``(windows, length)``
    :param skipped: method label -> why it could not be evaluated
    :param timings: method label -> wall seconds per window (not deterministic)
    :param reference: label of the reference method of ``vs_reference_pct`` (or ``None``)
    :param tag: extra name of the evaluation (e.g. the Table 5 section), used for folders
    :param ratio_reference: the scheduler of the paired statistics (``geo_ratio``...)
    :param ratio_values: its AVEbsld per window (``None``: no statistics)
    """

    trace: str
    jobs: int
    machine_size: int
    windows: WindowSet
    methods: list[Method]
    rows: list[dict[str, Any]]
    job_start: dict[str, np.ndarray]
    submit: np.ndarray
    runtime: np.ndarray
    skipped: dict[str, str] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)
    reference: str | None = None
    tag: str | None = None
    ratio_reference: str | None = None
    ratio_values: list[float] | None = None

    @property
    def labels(self) -> list[str]:
        """The methods' labels, in order."""
        return [m.label for m in self.methods]

    def method(self, label: str) -> Method:
        """The method of ``label`` (:raises KeyError: no such method)."""
        for m in self.methods:
            if m.label == label:
                return m
        raise KeyError(f"no method {label!r}; evaluated: {', '.join(self.labels)}")

    def per_window(self, metric: str = "avg_bsld") -> dict[str, list[float]]:
        """``{label: [value per window]}`` in window order."""
        out: dict[str, list[float]] = {lab: [] for lab in self.labels}
        for r in self.rows:
            out[r["method"]].append(r[metric])
        return out

    def mean(self, label: str, metric: str = "avg_bsld") -> float:
        """Mean of ``metric`` over the windows for the method ``label``."""
        return float(np.mean(self.per_window(metric)[label]))

    def job_bsld(self, label: str) -> np.ndarray:
        """Bounded slowdown of every job, ``(windows, length)``."""
        wait = self.job_start[label] - self.submit
        return bounded_slowdown(wait, self.runtime)

    def job_wait(self, label: str) -> np.ndarray:
        """Wait time of every job, ``(windows, length)``."""
        return self.job_start[label] - self.submit

    def summary(self) -> list[dict[str, Any]]:
        """One dict per method, keys :data:`SUMMARY_COLUMNS`."""
        bs = self.per_window("avg_bsld")
        ws = self.per_window("avg_wait")
        us = self.per_window("utilization")
        ref = self.reference if self.reference in bs else None
        ref_mean = float(np.mean(bs[ref])) if ref else None
        paper = self.paper_values()
        out = []
        for m in self.methods:
            b = np.asarray(bs[m.label], dtype=np.float64)
            mean = float(b.mean())
            out.append(
                {
                    "trace": self.trace,
                    "method": m.label,
                    "kind": m.kind,
                    "windows": len(b),
                    "mean_avg_bsld": mean,
                    "median_avg_bsld": float(np.median(b)),
                    "std_avg_bsld": float(b.std()),
                    "min_avg_bsld": float(b.min()),
                    "max_avg_bsld": float(b.max()),
                    "mean_avg_wait": float(np.mean(ws[m.label])),
                    "mean_utilization": float(np.mean(us[m.label])),
                    "vs_reference_pct": None
                    if ref_mean is None or ref_mean == 0
                    else 100.0 * (ref_mean - mean) / ref_mean,
                    "paper_table4": paper.get(m.label),
                    **self.objectives(m.label),
                    **fairness(self, m.label),
                    **self.paired(m.label),
                    **self.head_delays(m.label),
                }
            )
        return out

    def head_delays(self, label: str) -> dict[str, Any]:
        """``head_delayed`` (jobs started after their request-based reservation, summed over
        the windows) and ``head_delay`` (their mean delay, seconds) of a method; ``None``
        when not measured (older results)."""
        rows = [r for r in self.rows if r["method"] == label]
        if not rows or any(r.get("head_delayed") is None for r in rows):
            return dict.fromkeys(HEAD_DELAY_METRICS)
        n = sum(int(r["head_delayed"]) for r in rows)
        total = sum(int(r["head_delayed"]) * float(r["head_delay"]) for r in rows)
        return {"head_delayed": n, "head_delay": total / n if n else 0.0}

    def paired(self, label: str, metric: str = "avg_bsld") -> dict[str, Any]:
        """:data:`STAT_COLUMNS` of a method against the ratio reference on the same windows
        (``None`` values without a reference).

        :param label: the method
        :param metric: the per-window metric (AVEbsld)
        """
        if self.ratio_values is None:
            return dict.fromkeys(STAT_COLUMNS)
        from hpcgym.evaluation.statistics import paired_comparison

        pc = paired_comparison(self.per_window(metric)[label], self.ratio_values)
        out = {k: v for k, v in pc.to_dict().items() if k in STAT_COLUMNS}
        out["verdict"] = pc.verdict
        return {k: out.get(k) for k in STAT_COLUMNS}

    def objectives(self, label: str) -> dict[str, Any]:
        """:data:`OBJECTIVE_COLUMNS` of a method (``None`` where not measured: rows
        recorded before these metrics, a class without jobs in any window, no ratio
        reference among the methods).

        :param label: the method
        """
        from hpcgym.evaluation.statistics import paired_comparison

        rows = [r for r in self.rows if r["method"] == label]
        out: dict[str, Any] = dict.fromkeys(OBJECTIVE_COLUMNS)

        def values(rs: list[dict[str, Any]], key: str) -> np.ndarray | None:
            if not rs or any(r.get(key) is None for r in rs):
                return None
            return np.asarray([float(r[key]) for r in rs], dtype=np.float64)

        awrt = values(rows, "awrt")
        if awrt is None:
            return out
        out["mean_awrt"] = float(awrt.mean())
        for m in SIZE_CLASS_METRICS:
            v = values(rows, m)
            if v is not None and np.isfinite(v).any():
                out[f"mean_{m}"] = float(np.nanmean(v))
        ref = self.ratio_reference
        theirs = values([r for r in self.rows if r["method"] == ref], "awrt")
        if ref in self.labels and theirs is not None and (awrt > 0).all() and (theirs > 0).all():
            pc = paired_comparison(awrt, theirs)
            out.update(awrt_ratio=pc.geo_ratio, awrt_ci_low=pc.ci_low, awrt_ci_high=pc.ci_high)
        return out

    def paper_values(self) -> dict[str, float]:
        """Published Table 4 values for the methods that have one (paper protocol only:
        sampled windows of 1024 jobs)."""
        table = PAPER_TABLE4.get(self.trace)
        if table is None or self.windows.length != PAPER_LENGTH or self.windows.how == "full":
            return {}
        out = {}
        for m in self.methods:
            col = LABEL_TO_T4.get(m.label) if m.kind == "scheduler" else None
            v = table.get(col) if col else None
            if v is not None:
                out[m.label] = v
        return out

    def replay_command(self) -> str:
        """The ``eval/compare.py`` command line that reproduces these rows."""
        w = self.windows
        parts = [f"--trace {self.trace}"]
        if w.how == "full":
            parts.append(f"--full-trace --split {w.split}")
        else:
            parts.append(f"--starts {' '.join(map(str, w.starts))} --length {w.length}")
        scheds = [m.spec for m in self.methods if m.kind == "scheduler"]
        ags = [m.spec for m in self.methods if m.kind == "agent"]
        heur = [m for m in self.methods if m.spec in AGENT_HEURISTICS]
        pols = {m.env.get("policy", m.env.get("order")) for m in heur} - {None}
        if pols - {"FCFS"} and len(pols) == 1:
            parts.append(f"--policy {pols.pop()}")
        tasks = sorted(t for t in {m.env.get("task") for m in heur} if t is not None)
        if tasks:  # heuristics of another task than the default (Backfill-v0)
            parts.append(f"--task {tasks[0]}")
        if scheds:
            parts.append("--schedulers " + " ".join(scheds))
        if ags:
            parts.append("--agents " + " ".join(ags))
        if self.ratio_values is not None and self.ratio_reference != "EASY-SJBF":
            parts.append(f"--reference {self.ratio_reference}")  # not the command's default
        return "python eval/compare.py " + " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``results.json``."""
        return {
            "schema": RESULT_SCHEMA,
            "trace": self.trace,
            "jobs": self.jobs,
            "machine_size": self.machine_size,
            "windows": self.windows.to_dict(),
            "reference": self.reference,
            **({"ratio_reference": self.ratio_reference} if self.ratio_values else {}),
            "methods": [m.to_dict() for m in self.methods],
            "skipped": dict(self.skipped),
            "summary": self.summary(),
            "rows": [{k: r[k] for k in WINDOW_COLUMNS} for r in self.rows],
            "replay": self.replay_command(),
        }


def fmt(v: Any, digits: int = 2) -> str:
    """A table cell: ``—`` for missing / NaN, floats with ``digits`` decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:,.{digits}f}".replace(",", "")
    return str(v)


def csv_text(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    """CSV with a header; floats as ``repr`` (exact), ``None`` as empty."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(
            [
                "" if r.get(c) is None else (repr(r[c]) if isinstance(r[c], float) else r[c])
                for c in columns
            ]
        )
    return buf.getvalue()
