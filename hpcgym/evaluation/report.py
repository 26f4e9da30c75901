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
from hpcgym.evaluation.statistics import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    EQUIVALENCE_MARGIN,
    verdict_caption,
)
from hpcgym.evaluation.windows import WindowSet
from hpcgym.sim.metrics import MEDIUM_MACHINE_FRACTION, SIZE_CLASSES, SMALL_MAX_PROCS
from hpcgym.sim.schedulers import is_clairvoyant

__all__ = [
    "OBJECTIVES_CAPTION",
    "compare_table",
    "markdown_table",
    "ratio_caption",
    "ratio_cell",
    "size_class_caption",
    "windows_caption",
    "write_outputs",
]


def ratio_caption(reference: str, windows: int, margin: float = EQUIVALENCE_MARGIN) -> str:
    """The explanation of the ratio / interval / wins / verdict columns.

    :param reference: the reference every ratio is against
    :param windows: the windows of the comparison
    :param margin: the equivalence margin of the verdict
    """
    return (
        f"`ratio vs {reference}`: paired geometric-mean ratio of AVEbsld over the same "
        f"{windows} windows (< 1 = lower slowdowns than {reference}); `95% interval`: "
        f"percentile bootstrap over the windows ({DEFAULT_RESAMPLES} resamples, seed "
        f"{DEFAULT_SEED}); `ratio of means vs {reference}`: mean AVEbsld over the windows "
        f"divided by {reference}'s, with its own paired bootstrap 95% interval (the busy "
        f"windows weigh more); `wins`: windows with a lower AVEbsld than {reference}. "
        + verdict_caption(margin)
    )


def ratio_cell(ratio: float | None, low: float | None, high: float | None) -> str:
    """``0.912 [0.850, 0.978]`` (``—`` without a ratio)."""
    if ratio is None:
        return "—"
    return f"{fmt(ratio, 3)} [{fmt(low, 3)}, {fmt(high, 3)}]"


def size_class_caption(machine_size: int | None = None) -> str:
    """What the job-size classes are (with the machine's bounds when given)."""
    medium = (
        f"{SMALL_MAX_PROCS + 1} to {int(machine_size * MEDIUM_MACHINE_FRACTION)}"
        if machine_size
        else f"more than {SMALL_MAX_PROCS}"
    )
    return (
        f"Job-size classes: `{SIZE_CLASSES[0]}` 1 processor, `{SIZE_CLASSES[1]}` 2 to "
        f"{SMALL_MAX_PROCS}, `{SIZE_CLASSES[2]}` {medium} (at most 1/8 of the machine), "
        f"`{SIZE_CLASSES[3]}` the rest (`hpcgym.sim.metrics.size_class`)."
    )


#: What the objective columns are.
OBJECTIVES_CAPTION = (
    "`util (%)`: mean over the windows of the utilization, busy processor-seconds / "
    "(processors x (last end - first submit)); `AWRT (h)`: mean over the windows of the "
    "area-weighted response time, sum of procs x run x (wait + run) / sum of procs x run "
    "(`hpcgym.sim.metrics`); `AWRT ratio`: its paired geometric-mean ratio against the "
    "same reference with the 95% interval."
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


#: the mark of a clairvoyant method's row in every table, and the caption that explains it
CLAIRVOYANT_MARK = "†"
CLAIRVOYANT_CAPTION = (
    "† clairvoyant: the method knows what no scheduler knows in advance (the jobs' actual "
    "run times, or the window's future); a reference point, not a competitor."
)


def method_cell(method: str) -> str:
    """A method's name as a table shows it: marked :data:`CLAIRVOYANT_MARK` when it is
    clairvoyant (:func:`hpcgym.sim.schedulers.is_clairvoyant`: ``EASY-AR``...).

    :param method: the method's label (a scheduler name or an agent's label)
    """
    return f"{method} {CLAIRVOYANT_MARK}" if is_clairvoyant(method) else method


def clairvoyant_caption(methods: list[str]) -> list[str]:
    """The lines that explain the mark under a table of ``methods`` (none when no method
    is clairvoyant)."""
    return [CLAIRVOYANT_CAPTION, ""] if any(is_clairvoyant(m) for m in methods) else []


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
    rr = result.ratio_reference
    if stats:
        head += [f"ratio vs {rr}", "95% interval", f"ratio of means vs {rr} [95%]", "wins"]
        head.append("verdict")
        if fair:
            head.append("tail: max wait / p99 (upper 95%)")
    objectives = any(s["mean_awrt"] is not None for s in summ)
    if objectives:
        head += ["util (%)", "AWRT (h)"]
        awrt_ratio = any(s["awrt_ratio"] is not None for s in summ)
        if awrt_ratio:
            head.append(f"AWRT ratio vs {rr} [95%]")
    delays = any(s["head_delayed"] is not None for s in summ)
    if delays:
        head.append("late heads (mean delay)")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|---|" + "---:|" * (len(head) - 2))
    for s in summ:
        cells = [
            method_cell(s["method"]),
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
                ratio_cell(s["mean_ratio"], s["mean_low"], s["mean_high"]),
                f"{s['wins']}/{s['windows']}",
                (fair_verdict(s) if fair else s["verdict"]) or "—",
            ]
            if fair:
                cells.append(tail_cell(s))
        if objectives:
            a = s["mean_awrt"]
            cells += [
                fmt(100.0 * s["mean_utilization"], 1),
                "—" if a is None else fmt(a / 3600.0, 2),
            ]
            if awrt_ratio:
                cells.append(ratio_cell(s["awrt_ratio"], s["awrt_ci_low"], s["awrt_ci_high"]))
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
    if any(is_clairvoyant(x["method"]) for x in summ):
        lines += ["", CLAIRVOYANT_CAPTION]
    if fair:
        lines += ["", FAIRNESS_CAPTION]
    if objectives:
        lines += ["", OBJECTIVES_CAPTION]
        lines += size_class_table(summ, result.machine_size)
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
        for wi, start in enumerate(w.starts):
            lines.append(
                f"| {wi} | {start} | "
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
    "(interval below 1) with a tail that is worse reads `inconclusive (longer tail)` in the "
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


def compare_table(result: EvalResult, label: str = "method") -> list[str]:
    """The table of ``hpcgym compare``: per method its mean AVEbsld and wait, and against
    the result's ratio reference the paired geometric-mean ratio with its 95% interval,
    the ratio of means with its interval, the wins, the verdict (tail included), the tail
    columns, utilization and AWRT; captions say against what and how to read them.

    :param result: the evaluation (paired statistics need its ``ratio_values``)
    :param label: the first column's name (``method`` or ``scheduler``)
    """
    summ = result.summary()
    rr = result.ratio_reference if result.ratio_values is not None else None
    head = [label, "mean AVEbsld", "mean wait (s)"]
    if rr:
        head += [f"ratio vs {rr} [95%]", f"ratio of means vs {rr} [95%]", "wins", "verdict"]
    head += ["max wait (h)", "p99 bsld"]
    if rr:
        head.append(f"tail vs {rr}: max wait / p99 (upper 95%)")
    head += ["util (%)", "AWRT (h)"]
    if rr:
        head.append(f"AWRT ratio vs {rr} [95%]")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for s in summ:
        cells = [method_cell(s["method"]), fmt(s["mean_avg_bsld"]), fmt(s["mean_avg_wait"], 0)]
        if rr:
            cells += [
                ratio_cell(s["geo_ratio"], s["ci_low"], s["ci_high"]),
                ratio_cell(s["mean_ratio"], s["mean_low"], s["mean_high"]),
                f"{s['wins']}/{s['windows']}",
                fair_verdict(s) or "—",
            ]
        mw = s["mean_max_wait"]
        cells += ["—" if mw is None else fmt(mw / 3600.0, 1), fmt(s["mean_p99_bsld"], 1)]
        if rr:
            cells.append(tail_cell(s))
        awrt = s["mean_awrt"]
        cells += [
            fmt(100.0 * s["mean_utilization"], 1),
            "—" if awrt is None else fmt(awrt / 3600.0, 2),
        ]
        if rr:
            cells.append(ratio_cell(s["awrt_ratio"], s["awrt_ci_low"], s["awrt_ci_high"]))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if rr:
        lines += [ratio_caption(rr, len(result.windows.starts)), "", FAIRNESS_CAPTION, ""]
    else:
        lines += ["No ratios: no reference among the methods.", ""]
    lines += clairvoyant_caption([x["method"] for x in summ])
    lines.append(OBJECTIVES_CAPTION)
    return lines + size_class_table(summ, result.machine_size)


def size_class_table(summ: list[dict], machine_size: int | None = None) -> list[str]:
    """The Markdown lines of the waits by job-size class (mean / p95, hours), a row per
    method of ``summ`` (:meth:`EvalResult.summary` rows); ``[]`` without the metrics.

    :param summ: the summary rows
    :param machine_size: processors (for the classes' bounds in the caption)
    """
    if not summ or all(s.get("mean_awrt") is None for s in summ):
        return []

    def cell(s: dict, c: str) -> str:
        mean, p95 = s.get(f"mean_avg_wait_{c}"), s.get(f"mean_p95_wait_{c}")
        if mean is None:
            return "—"
        if p95 is None:  # the summary computes both from the same per-class waits
            raise ValueError(f"summary row of {s.get('method')!r} has mean_avg_wait_{c} but no p95")
        return f"{fmt(mean / 3600.0, 2)} / {fmt(p95 / 3600.0, 2)}"

    lines = [
        "",
        "## Waits by job size",
        "",
        "| method | " + " | ".join(f"{c}: mean / p95 wait (h)" for c in SIZE_CLASSES) + " |",
        "|---|" + "---:|" * len(SIZE_CLASSES),
    ]
    for s in summ:
        lines.append(f"| {s['method']} | " + " | ".join(cell(s, c) for c in SIZE_CLASSES) + " |")
    lines += [
        "",
        "Means over the windows of each window's mean and 95th-percentile wait of the jobs "
        "of a class (a window without jobs of the class does not count; — : no window has "
        "any). " + size_class_caption(machine_size),
    ]
    return lines


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
        # ignore: numpy's stubs let an "allow_pickle" key of **arrays reach that bool keyword
        # (no key here is named so). Passing allow_pickle=True would not do: numpy releases
        # that pyproject.toml allows without the keyword would save it as one more array.
        np.savez_compressed(p, **arrays)  # type: ignore[arg-type]
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
