"""TensorBoard: the one tag scheme and the one sanitizer of evaluation scalars.

Tags are ``<prefix>/<metric>/<method>``: training writes ``eval/avg_bsld/agent`` and
``eval/avg_bsld/EASY-SJBF``; ``eval/compare.py --tb-dir`` writes the same tags for every
method (``eval/avg_bsld/<method>``, ``eval/avg_wait/<method>``) and the paired ratio
against the reference with its interval (``eval/geo_ratio/<method>``,
``eval/ci_low/<method>``, ``eval/ci_high/<method>``, ``eval/wins/<method>``), so agents of
training and of evaluation land on the same charts. When several traces go into one
folder (Table 4/5) the trace is a level: ``<prefix>/<trace>/<metric>/<method>``. Every
name component goes through :func:`sanitize`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.report import markdown_table
from hpcgym.evaluation.results import EvalResult

__all__ = ["AGENT_LABEL", "EVAL_PREFIX", "RATIO_METRICS", "sanitize", "tag", "write_tensorboard"]

#: Prefix of the evaluation scalars (training-time and ``eval/compare.py``).
EVAL_PREFIX = "eval"
#: The label training gives the agent it trains (``eval/avg_bsld/agent``).
AGENT_LABEL = "agent"
#: The paired statistics against the reference, one tag each (training uses them too).
RATIO_METRICS: tuple[str, ...] = ("geo_ratio", "ci_low", "ci_high", "wins")


def sanitize(name: str) -> str:
    """A name as one tag (or file name) component: every character but letters, digits and
    ``-_.+`` becomes ``_`` (a ``/`` would add a level).

    :param name: a method, scheduler or trace name
    """
    return "".join(c if (c.isalnum() or c in "-_.+") else "_" for c in name)


def tag(metric: str, method: str, *, prefix: str = EVAL_PREFIX, trace: str | None = None) -> str:
    """The tag of ``metric`` of ``method``: ``<prefix>[/<trace>]/<metric>/<method>``.

    :param metric: ``avg_bsld``, ``avg_wait``...
    :param method: the method's label (sanitized here)
    :param prefix: first level (``eval`` during training, ``evaluation`` for eval/)
    :param trace: a trace level (sanitized here), or ``None``
    """
    parts = [prefix, *([sanitize(trace)] if trace is not None else []), metric, sanitize(method)]
    return "/".join(parts)


def write_tensorboard(
    results: EvalResult | Sequence[EvalResult],
    tb_dir: str | os.PathLike[str],
    step: int | None = None,
    prefix: str = EVAL_PREFIX,
    rename: Mapping[str, str] | None = None,
    by_trace: bool | None = None,
) -> Path:
    """Write the evaluation scalars as TensorBoard events into ``tb_dir`` (e.g. a
    ``train/ppo.py`` run folder), so agents and baselines sit side by side in the UI.

    Tags (:func:`tag`), per method ``M``, at ``step``: ``<prefix>/avg_bsld/M`` and
    ``<prefix>/avg_wait/M`` (means over the windows) and, with a ratio reference,
    ``<prefix>/geo_ratio/M``, ``<prefix>/ci_low/M``, ``<prefix>/ci_high/M``,
    ``<prefix>/wins/M``; ``<prefix>_windows/avg_bsld/M`` at step = window index; a Custom
    Scalars chart (AVEbsld, ratio with its interval as a margin chart); the Markdown table
    as text ``<prefix>/table``. With several results (one per trace; or ``by_trace``) the
    trace is a level of every tag: ``<prefix>/<trace>/avg_bsld/M``.

    :param results: one evaluation, or several (Table 4/5)
    :param tb_dir: the events folder
    :param step: global step of the scalars (default: the timesteps of the evaluated
        model if exactly one has them in its card, else 0)
    :param prefix: first level of the tags (``eval``: the scheme training uses)
    :param rename: method label -> name in the tags (e.g. ``{"my-model": "agent"}`` puts a
        model on the chart of the run it was trained in)
    :param by_trace: make the trace a level of the tags (default: with several results)
    :return: ``tb_dir``
    """
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "--tb-dir needs torch and tensorboard (pip install -e '.[train]')"
        ) from exc
    res_list = [results] if isinstance(results, EvalResult) else list(results)
    if step is None:
        steps = {m.steps for r in res_list for m in r.methods if m.steps is not None}
        step = steps.pop() if len(steps) == 1 else 0
    names = dict(rename or {})
    d = Path(tb_dir)
    d.mkdir(parents=True, exist_ok=True)
    w = SummaryWriter(log_dir=str(d))
    layout: dict[str, dict[str, list[Any]]] = {}
    try:
        for r in res_list:
            trace = None
            if by_trace or (by_trace is None and len(res_list) > 1):
                trace = r.trace if r.tag is None else f"{r.trace}_{r.tag}"
            for lab, vals in r.per_window("avg_bsld").items():
                name = names.get(lab, lab)
                w.add_scalar(tag("avg_bsld", name, prefix=prefix, trace=trace), _mean(vals), step)
                for wi, v in enumerate(vals):
                    w.add_scalar(
                        tag("avg_bsld", name, prefix=f"{prefix}_windows", trace=trace), v, wi
                    )
            for lab, vals in r.per_window("avg_wait").items():
                w.add_scalar(
                    tag("avg_wait", names.get(lab, lab), prefix=prefix, trace=trace),
                    _mean(vals),
                    step,
                )
            if r.ratio_values is not None:
                for s in r.summary():
                    for metric in RATIO_METRICS:
                        name = names.get(s["method"], s["method"])
                        w.add_scalar(
                            tag(metric, name, prefix=prefix, trace=trace), float(s[metric]), step
                        )
            level = prefix if trace is None else f"{prefix}/{sanitize(trace)}"
            w.add_text(f"{level}/table", markdown_table(r), step)
            layout[level] = _layout(r, level, prefix, trace, names)
        w.add_custom_scalars(layout)
    finally:
        w.close()
    return d


def _mean(vals: Sequence[float]) -> float:
    return float(np.mean(vals))


def _layout(
    r: EvalResult, level: str, prefix: str, trace: str | None, names: Mapping[str, str]
) -> dict[str, list[Any]]:
    """The Custom Scalars charts of one evaluation: every method's AVEbsld in one chart,
    per window and on average, and each method's ratio with its interval (margin chart)."""
    win = f"{prefix}_windows" if trace is None else f"{prefix}_windows/{sanitize(trace)}"
    charts: dict[str, list[Any]] = {
        "mean AVEbsld (every method)": ["Multiline", [f"^{level}/avg_bsld/"]],
        "AVEbsld per window (x = window index)": ["Multiline", [f"^{win}/avg_bsld/"]],
    }
    if r.ratio_values is not None:
        charts[f"ratio vs {r.ratio_reference} (every method)"] = [
            "Multiline",
            [f"^{level}/geo_ratio/"],
        ]
        for lab in r.labels:
            n = names.get(lab, lab)
            charts[f"ratio vs {r.ratio_reference}: {n} [95% interval]"] = [
                "Margin",
                [
                    tag("geo_ratio", n, prefix=prefix, trace=trace),
                    tag("ci_low", n, prefix=prefix, trace=trace),
                    tag("ci_high", n, prefix=prefix, trace=trace),
                ],
            ]
    return charts
