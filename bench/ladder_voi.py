"""The value-of-information curve of the headroom ladder (``bench/ladder.py --voi``): the
ratio to the reference against the quality of run-time knowledge (a classifier of "ends
within X" at graded precision and recall, run times blurred at graded noise), with the
online signals placed on it by their measured quality."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from bench.ladder import PRECISIONS, RECALLS, SIGMAS  # the grids the rungs were run on
from hpcgym.evaluation.statistics import paired_comparison


def _cell(lad: Any, key: str) -> dict[str, Any] | None:
    rows, ref = lad.values(key), lad.values(lad.ref_key)
    if rows is None or ref is None:
        return None
    x = np.array([r["avg_bsld"] for r in rows])
    cmp = paired_comparison(x, np.array([r["avg_bsld"] for r in ref])[: len(x)])
    out: dict[str, Any] = cmp.to_dict()
    for k in ("precision", "recall", "sigma", "corr", "sigma_eq"):
        vals = [r[k] for r in rows if k in r and r[k] is not None and math.isfinite(r[k])]
        if vals:
            out[k] = float(np.mean(vals))
    return out


#: online signals placed on the curves: (rung key prefix, label, panel)
SIGNALS = (
    ("b5-", "like-job rule (first)", "bit"),
    ("b0-", "log-ridge (rank)", "blur"),
    ("b1-", "E-Loss (rank)", "blur"),
    ("b7-", "like-job (rank)", "blur"),
)


def _signal(lad: Any, prefix: str) -> dict[str, Any] | None:
    rung = next((r for r in lad.rungs if r.key.startswith(prefix)), None)
    return None if rung is None else _cell(lad, rung.key)


def voi(args: argparse.Namespace, ladder: type, target: float = 0.85) -> str:
    """The value-of-information figure of each trace and its table (Markdown).

    :param args: the command line of ``bench/ladder.py --voi``
    :param ladder: its ``Ladder`` class (the rungs' stored results of a trace and split)
    :param target: the ratio the figure marks (a gain of 15%)
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    for trace in args.traces:
        lads = [ladder(args, trace, s) for s in args.splits]
        fig, axes = plt.subplots(len(lads), 2, figsize=(11, 4 * len(lads)), squeeze=False)
        for row, lad in enumerate(lads):
            ax_bit, ax_blur = axes[row]
            x = f"{args.threshold:g}"
            lines = [
                f"**{trace}, {lad.split}**: ratio to `{lad.reference}` of {lad.policy} with the "
                "jobs a "
                f"classifier flags as ending within {x} s first (reservations on the request), "
                "by the classifier's precision (rows) and recall (columns)",
                "",
                "| precision \\ recall | " + " | ".join(f"{r:g}" for r in RECALLS) + " |",
                "|---|" + "---|" * len(RECALLS),
            ]
            for p in PRECISIONS:
                cells = [_cell(lad, f"d-bit-p{p:g}-r{r:g}") for r in RECALLS]
                lines.append(
                    f"| {p:g} | "
                    + " | ".join(
                        ""
                        if c is None
                        else f"{c['geo_ratio']:.3f} [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
                        for c in cells
                    )
                    + " |"
                )
                pts = [(r, c) for r, c in zip(RECALLS, cells, strict=True) if c is not None]
                if pts:
                    xs = [r for r, _ in pts]
                    ys = np.array([c["geo_ratio"] for _, c in pts])
                    lo = ys - np.array([c["ci_low"] for _, c in pts])
                    hi = np.array([c["ci_high"] for _, c in pts]) - ys
                    ax_bit.errorbar(
                        xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=f"precision {p:g}"
                    )
            blur = [(s, _cell(lad, f"d-blur{s:g}-rank")) for s in SIGMAS]
            blur = [(s, c) for s, c in blur if c is not None]
            lines += [
                "",
                "Ranked on the run time blurred by log-normal noise (reservations on the request): "
                + ", ".join(
                    f"sigma {s:g}: {c['geo_ratio']:.3f} [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
                    for s, c in blur
                ),
            ]
            if blur:
                ys = np.array([c["geo_ratio"] for _, c in blur])
                lo = ys - np.array([c["ci_low"] for _, c in blur])
                hi = np.array([c["ci_high"] for _, c in blur]) - ys
                ax_blur.errorbar([s for s, _ in blur], ys, yerr=[lo, hi], marker="o", capsize=3,
                                 color="k", label="blurred run time (rank)")  # fmt: skip
            sig_text = []
            for prefix, label, panel in SIGNALS:
                c = _signal(lad, prefix)
                if c is None:
                    continue
                parts = [f"ratio {c['geo_ratio']:.3f} [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"]
                if "precision" in c and "recall" in c:
                    parts.append(
                        f"precision {c['precision']:.2f} and recall {c['recall']:.2f} of "
                        f"'estimate <= {x} s'"
                    )
                if "sigma" in c:
                    parts.append(f"spread of the log error {c['sigma']:.2f}")
                if "corr" in c and "sigma_eq" in c:
                    parts.append(
                        f"correlation of the logs {c['corr']:.2f} (equivalent blur "
                        f"{c['sigma_eq']:.2f})"
                    )
                sig_text.append(f"{label}: " + ", ".join(parts))
                if panel == "bit" and "recall" in c:
                    ax_bit.plot(c["recall"], c["geo_ratio"], "r*", ms=14)
                    ax_bit.annotate(f"{label}\n(precision {c.get('precision', float('nan')):.2f})",
                                    (c["recall"], c["geo_ratio"]), fontsize=8)  # fmt: skip
                if panel == "blur" and "sigma_eq" in c:
                    ax_blur.plot(c["sigma_eq"], c["geo_ratio"], "r*", ms=14)
                    ax_blur.annotate(label, (c["sigma_eq"], c["geo_ratio"]), fontsize=8)
            lines += [
                "",
                "Online signals, placed by their measured quality: " + "; ".join(sig_text) + ".",
            ]
            for ax, xlabel in (
                (ax_bit, f"recall of 'ends within {x} s'"),
                (ax_blur, "blur sigma (log-normal; signals: equivalent blur)"),
            ):
                ax.axhline(1.0, color="grey", lw=0.8)
                ax.axhline(target, color="g", ls="--", lw=0.8, label=f"{target:g}x")
                ax.set_xlabel(xlabel)
                ax.set_ylabel(f"ratio to {lad.reference}")
                ax.set_title(f"{trace} {lad.split}")
                ax.legend(fontsize=7)
            ax_blur.set_xscale("log", base=2)
            out.append("\n".join(lines) + "\n")
        fig.tight_layout()
        args.figures.mkdir(parents=True, exist_ok=True)
        path = args.figures / f"voi_{trace}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(f"![value of information, {trace}](../figures/{path.name})\n")
    return "\n".join(out)
