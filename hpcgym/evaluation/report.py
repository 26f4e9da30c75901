"""Reports of one evaluation: the Markdown table (``table.md``) and every output file of
:func:`write_outputs` (Markdown, CSV, JSON, per-job arrays, plots)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from hpcgym.evaluation.fairness import MAX_WAIT_FLOOR, TAIL_TOLERANCE, fair_verdict, tail_cell
from hpcgym.evaluation.methods import AGENT_HEURISTICS
from hpcgym.evaluation.results import (
    SUMMARY_COLUMNS,
    WINDOW_COLUMNS,
    EvalResult,
    csv_text,
    fmt,
)
from hpcgym.evaluation.statistics import DEFAULT_RESAMPLES, DEFAULT_SEED, VERDICT_CAPTION
from hpcgym.evaluation.windows import WindowSet

__all__ = ["markdown_table", "ratio_caption", "windows_caption", "write_outputs"]


def ratio_caption(reference: str, windows: int) -> str:
    """The explanation of the ratio / interval / wins columns."""
    return (
        f"`ratio vs {reference}`: paired geometric-mean ratio of AVEbsld over the same "
        f"{windows} windows (< 1 = lower slowdowns than {reference}); `95% interval`: "
        f"percentile bootstrap over the windows ({DEFAULT_RESAMPLES} resamples, seed "
        f"{DEFAULT_SEED}); `wins`: windows with a lower AVEbsld than {reference}. "
        + VERDICT_CAPTION
    )


def windows_caption(w: WindowSet) -> str:
    """How the windows were chosen, in words (``3 windows of 256 jobs, drawn from...``)."""
    if w.how == "full":
        what = f"the whole {w.split!r} range as one window ({w.length} jobs from job {w.starts[0]})"
    else:
        how = {
            "sampled": f"drawn from the {w.split!r} split with seed {w.seed}",
            "evenly": f"evenly spaced in the {w.split!r} split",
            "explicit": "given starts",
        }[w.how]
        what = f"{len(w.starts)} windows of {w.length} jobs, {how}"
    if w.prefix:
        what += f", first {w.prefix} jobs of the trace only"
    return what


def markdown_table(result: EvalResult) -> str:
    """The Markdown report of one evaluation (``table.md``)."""
    w = result.windows
    what = windows_caption(w)
    lines = [
        f"# {result.trace}: {what}",
        "",
        f"Trace {result.trace}: {result.jobs} jobs, {result.machine_size} processors. "
        "AVEbsld = mean bounded slowdown (tau = 10 s); wait in seconds. Every method "
        "schedules exactly the same windows from an empty machine.",
        "",
    ]
    summ = result.summary()
    has_paper = any(s["paper_table4"] is not None for s in summ)
    ref = result.reference if result.reference in result.labels else None
    head = ["method", "kind", "mean AVEbsld", "median", "min", "max", "mean wait (s)"]
    fair = any(s["mean_p99_bsld"] is not None for s in summ)
    if fair:
        head += ["max wait (h)", "p99 bsld"]
    if ref:
        head.append(f"vs {ref}")
    if has_paper:
        head.append("paper (Table 4)")
    stats = result.ratio_values is not None
    if stats:
        head += [f"ratio vs {result.ratio_reference}", "95% interval", "wins", "verdict"]
        if fair:
            head.append("tail: max wait / p99 (upper 95%)")
    delays = any(s["head_delayed"] is not None for s in summ)
    if delays:
        head.append("late heads (mean delay)")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|---|" + "---:|" * (len(head) - 2))
    for s in summ:
        cells = [
            s["method"],
            s["kind"],
            fmt(s["mean_avg_bsld"]),
            fmt(s["median_avg_bsld"]),
            fmt(s["min_avg_bsld"]),
            fmt(s["max_avg_bsld"]),
            fmt(s["mean_avg_wait"], 0),
        ]
        if fair:
            mw = s["mean_max_wait"]
            cells += ["—" if mw is None else fmt(mw / 3600.0, 1), fmt(s["mean_p99_bsld"], 1)]
        if ref:
            v = s["vs_reference_pct"]
            cells.append("—" if v is None else f"{v:+.1f}%")
        if has_paper:
            cells.append(fmt(s["paper_table4"]))
        if stats:
            cells += [
                fmt(s["geo_ratio"], 3),
                f"[{fmt(s['ci_low'], 3)}, {fmt(s['ci_high'], 3)}]",
                f"{s['wins']}/{s['windows']}",
                (fair_verdict(s) if fair else s["verdict"]) or "—",
            ]
            if fair:
                cells.append(tail_cell(s))
        if delays:
            cells.append(late_heads_cell(s["head_delayed"], s["head_delay"]))
        lines.append("| " + " | ".join(cells) + " |")
    if ref:
        lines += [
            "",
            f"`vs {ref}`: relative change of the mean AVEbsld against {ref} (positive = lower "
            "mean AVEbsld; no interval: the verdict is in the ratio columns).",
        ]
    if stats:
        lines += ["", ratio_caption(result.ratio_reference or "", len(w.starts))]
    if fair:
        lines += ["", FAIRNESS_CAPTION]
    if delays:
        lines += ["", LATE_HEADS_CAPTION]
    if has_paper:
        lines += [
            "",
            "Paper: RLBackfilling Table 4 (10 random 1024-job sequences of the first 10K jobs; "
            "our windows differ, so only the magnitudes are comparable).",
        ]
    for metric, title, digits in (
        ("avg_bsld", "AVEbsld per window", 2),
        ("avg_wait", "Mean wait (s) per window", 0),
    ):
        pw = result.per_window(metric)
        lines += ["", f"## {title}", ""]
        lines.append("| window | start | " + " | ".join(result.labels) + " |")
        lines.append("|---:|---:|" + "---:|" * len(result.labels))
        for wi, s in enumerate(w.starts):
            lines.append(
                f"| {wi} | {s} | "
                + " | ".join(fmt(pw[lab][wi], digits) for lab in result.labels)
                + " |"
            )
        lines.append(
            "| mean | | "
            + " | ".join(fmt(float(np.mean(pw[lab])), digits) for lab in result.labels)
            + " |"
        )
    agents = [m for m in result.methods if m.kind == "agent"]
    if agents:
        lines += ["", "## Agents", ""]
        lines.append("| agent | model / heuristic | env | decisions | violations | overflow |")
        lines.append("|---|---|---|---:|---:|---:|")
        for m in agents:
            rs = [r for r in result.rows if r["method"] == m.label]
            env = ", ".join(f"{k}={v}" for k, v in sorted(m.env.items()) if v is not None)
            what_ = m.spec if m.spec in AGENT_HEURISTICS else Path(m.spec).name
            lines.append(
                f"| {m.label} | {what_} | {env} | {sum(r['decisions'] for r in rs)} | "
                f"{sum(r['violations'] for r in rs)} | {sum(r['overflow_decisions'] for r in rs)} |"
            )
    if result.skipped:
        lines += ["", "## Skipped", ""]
        for k, v in result.skipped.items():
            lines.append(f"* {k}: {v}")
    lines += ["", "Replay: `" + result.replay_command() + "`", ""]
    return "\n".join(lines)


#: What the fairness columns say.
FAIRNESS_CAPTION = (
    "`max wait (h)`, `p99 bsld`: means over the windows of each window's maximum wait and "
    "99th-percentile bounded slowdown (the tail an SJF-like order can starve). `tail`: the "
    "upper ends of the 95% intervals of the paired geometric-mean ratios of these two "
    f"(max wait floored at {MAX_WAIT_FLOOR:.0f} s) against the ratio reference; `not worse` "
    f"when both are at most {TAIL_TOLERANCE:.2f} (`hpcgym.evaluation.fairness`). A lower AVEbsld "
    "(interval below 1) with a tail that is worse reads `on par (longer tail)` in the "
    "verdict column."
)

#: What the "late heads" column counts.
LATE_HEADS_CAPTION = (
    "`late heads`: jobs (over all windows) that started after the request-based reservation "
    "they had when they last became the head of the queue, and their mean delay "
    "(`hpcgym.sim.metrics.request_reservation_delays`). Schedulers that reserve with the "
    "requested times never have any; schedulers that reserve with predictions may "
    "(— : not measured: a non-FCFS queue in a test recorded before 2026-11-29)."
)


def late_heads_cell(n: int | None, delay: float | None) -> str:
    """``"0"``, ``"12 (1.5 h)"`` or ``"—"`` (not measured)."""
    if n is None:
        return "—"
    if n == 0:
        return "0"
    return f"{n} ({(delay or 0.0) / 3600:.1f} h)"


def write_outputs(
    result: EvalResult,
    out_dir: str | os.PathLike[str],
    *,
    plots: bool = True,
    per_job: bool = True,
) -> dict[str, Path]:
    """Write ``table.md``, ``summary.csv``, ``windows.csv``, ``results.json``,
    ``timing.json``, ``per_job.npz`` and (``plots``) ``bsld_boxplot.png`` and
    ``bsld_cdf.png`` into ``out_dir``.

    :return: name -> path of every written file
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}

    def put(name: str, text: str) -> None:
        p = out / name
        p.write_text(text, encoding="utf-8")
        paths[name] = p

    put("table.md", markdown_table(result))
    put("summary.csv", csv_text(result.summary(), SUMMARY_COLUMNS))
    put("windows.csv", csv_text(result.rows, WINDOW_COLUMNS))
    put("results.json", json.dumps(result.to_dict(), indent=2) + "\n")
    put(
        "timing.json",
        json.dumps(
            {
                lab: {"total_s": float(np.sum(t)), "per_window_s": t}
                for lab, t in result.timings.items()
            },
            indent=2,
        )
        + "\n",
    )
    if per_job and result.methods:
        arrays: dict[str, np.ndarray] = {
            "labels": np.array(result.labels),
            "starts": np.array(result.windows.starts, dtype=np.int64),
            "submit": result.submit,
            "runtime": result.runtime,
        }
        for i, lab in enumerate(result.labels):
            arrays[f"start_{i}"] = result.job_start[lab]
            arrays[f"bsld_{i}"] = result.job_bsld(lab)
        p = out / "per_job.npz"
        np.savez_compressed(p, **arrays)
        paths["per_job.npz"] = p
    if plots and result.methods:
        from hpcgym.evaluation import plots as P

        title = f"{result.trace}: {windows_caption(result.windows)}"
        groups = {
            m.label: P.AGENT_GROUP if m.is_model else P.HEURISTIC_GROUP for m in result.methods
        }
        paths["bsld_boxplot.png"] = P.plot_window_boxplot(
            result.per_window("avg_bsld"), out / "bsld_boxplot.png", title=title, groups=groups
        )
        paths["bsld_cdf.png"] = P.plot_slowdown_cdf(
            {lab: result.job_bsld(lab) for lab in result.labels},
            out / "bsld_cdf.png",
            title=title,
            groups=groups,
        )
    return paths
