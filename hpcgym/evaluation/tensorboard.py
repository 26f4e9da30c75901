"""TensorBoard: the one tag scheme and the one sanitizer of evaluation scalars.

Tags are ``<prefix>/<metric>/<method>`` (training: ``eval/avg_bsld/agent``,
``eval/avg_bsld/EASY-SJBF``), or ``<prefix>/<trace>/<metric>/<method>`` when the trace is
part of the tag (:func:`write_tensorboard`: ``evaluation/SDSC-SP2/avg_bsld/EASY``). Every
name component goes through :func:`sanitize`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.report import markdown_table
from hpcgym.evaluation.results import EvalResult

__all__ = ["EVAL_PREFIX", "sanitize", "tag", "write_tensorboard"]

#: Prefix of the training-time evaluation scalars.
EVAL_PREFIX = "eval"


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
    prefix: str = "evaluation",
) -> Path:
    """Write the evaluation scalars as TensorBoard events into ``tb_dir`` (e.g. a
    ``train/ppo.py`` run folder), so agents and baselines sit side by side in the UI.

    Tags, per trace ``T`` and method ``M``: ``<prefix>/T/avg_bsld/M`` and
    ``<prefix>/T/avg_wait/M`` (mean over the windows) at ``step``;
    ``<prefix>_windows/T/avg_bsld/M`` at step = window index; a Custom Scalars chart per
    trace with every method's AVEbsld; the Markdown table as text ``<prefix>/T/table``.

    :param step: global step of the scalars (default: the timesteps of the evaluated
        model if exactly one has them in its card, else 0)
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
    d = Path(tb_dir)
    d.mkdir(parents=True, exist_ok=True)
    w = SummaryWriter(log_dir=str(d))
    layout: dict[str, dict[str, list[Any]]] = {}
    try:
        for r in res_list:
            name = r.trace if r.tag is None else f"{r.trace}_{r.tag}"
            t = sanitize(name)
            for metric in ("avg_bsld", "avg_wait"):
                for lab, vals in r.per_window(metric).items():
                    w.add_scalar(
                        tag(metric, lab, prefix=prefix, trace=name), float(np.mean(vals)), step
                    )
                    if metric == "avg_bsld":
                        for wi, v in enumerate(vals):
                            w.add_scalar(
                                tag(metric, lab, prefix=f"{prefix}_windows", trace=name), v, wi
                            )
            w.add_text(f"{prefix}/{t}/table", markdown_table(r), step)
            layout[f"{prefix} {t}"] = {
                "AVEbsld per window (x = window index)": [
                    "Multiline",
                    [f"{prefix}_windows/{t}/avg_bsld/.*"],
                ],
                "mean AVEbsld": ["Multiline", [f"{prefix}/{t}/avg_bsld/.*"]],
            }
        w.add_custom_scalars(layout)
    finally:
        w.close()
    return d
