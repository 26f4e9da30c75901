"""Figures of the evaluation (matplotlib, Agg backend, PNG): per-method box plots of
AVEbsld over windows, per-job slowdown CDFs, the noise sweep (RLBackfilling Fig. 1),
training curves read from a run folder's TensorBoard events, and paper-table bars.

Every function takes plain data (dicts of lists / arrays), writes one PNG and returns its
path; :mod:`hpcgym.evaluation` calls them with its results. Needs matplotlib (``dev`` /
``train`` extras); the training curves need tensorboard.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.cards import RUN_CARD_FILE

__all__ = [
    "AGENT_GROUP",
    "HEURISTIC_GROUP",
    "TRAINING_PANELS",
    "distinct_colors",
    "method_colors",
    "plot_noise_sweep",
    "plot_paper_table",
    "plot_slowdown_cdf",
    "plot_training",
    "plot_window_boxplot",
    "read_scalars",
    "replot_comparison",
    "replot_noise_sweep",
]


def _plt() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("plots need matplotlib: pip install matplotlib") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # no timestamp / software metadata: the same data gives the same file
    fig.savefig(p, dpi=120, metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return p


def _log_scale_wanted(values: Sequence[float]) -> bool:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x) and x > 0])
    return len(v) > 1 and float(v.max() / v.min()) > 20.0


#: Groups of methods in the figures: learned agents (models) and heuristics (engine
#: schedulers and heuristic agents such as EasyAgent).
AGENT_GROUP, HEURISTIC_GROUP = "learned agents", "heuristics"
_GROUP_FACE = {AGENT_GROUP: "#fdd0a2", HEURISTIC_GROUP: "#c6dbef"}
_GROUP_EDGE = {AGENT_GROUP: "#d94801", HEURISTIC_GROUP: "#2171b5"}


def distinct_colors(n: int) -> list[Any]:
    """``n`` colours, no two the same: tab10 up to 10, tab20 up to 20, else evenly spaced
    on the ``turbo`` colour map.

    :param n: how many
    """
    plt = _plt()
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    if n <= 20:
        cmap = plt.get_cmap("tab20")
        return [cmap(i) for i in (*range(0, 20, 2), *range(1, 20, 2))][:n]
    cmap = plt.get_cmap("turbo")
    return [cmap(x) for x in np.linspace(0.05, 0.95, n)]


def _ordered(labels: Sequence[str], groups: Mapping[str, str] | None) -> list[str]:
    """Learned agents first, then heuristics, each in the given order."""
    g = groups or {}
    agents = [lab for lab in labels if g.get(lab) == AGENT_GROUP]
    return agents + [lab for lab in labels if lab not in agents]


def method_colors(labels: Sequence[str], groups: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One distinct colour per method, the same in every figure of a comparison (learned
    agents get the first colours).

    :param labels: the methods
    :param groups: label -> :data:`AGENT_GROUP` / :data:`HEURISTIC_GROUP`
    """
    order = _ordered(labels, groups)
    return dict(zip(order, distinct_colors(len(order)), strict=True))


def plot_window_boxplot(
    per_window: Mapping[str, Sequence[float]],
    path: str | os.PathLike[str],
    title: str = "",
    metric: str = "AVEbsld",
    groups: Mapping[str, str] | None = None,
) -> Path:
    """Box plot of ``metric`` over the windows, one box per method (points overlaid in the
    method's colour, the mean as a diamond). Learned agents come first, in orange boxes,
    then a dashed divider and the heuristics (schedulers, heuristic agents) in blue
    boxes, each group named above its boxes. Log scale when the values span more than a
    factor 20.

    :param per_window: method -> value per window
    :param path: the PNG
    :param title: the figure's title
    :param metric: the name of the values (y label)
    :param groups: method -> :data:`AGENT_GROUP` / :data:`HEURISTIC_GROUP` (default: all
        heuristics)
    """
    plt = _plt()
    g = {lab: (groups or {}).get(lab, HEURISTIC_GROUP) for lab in per_window}
    labels = _ordered(list(per_window), g)
    colors = method_colors(labels, g)
    data = [np.asarray(per_window[k], dtype=np.float64) for k in labels]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.75 * len(labels) + 2.0), 4.6))
    box = ax.boxplot(data, showfliers=False, widths=0.6, patch_artist=True)
    for patch, med, lab in zip(box["boxes"], box["medians"], labels, strict=True):
        patch.set_facecolor(_GROUP_FACE[g[lab]])
        patch.set_edgecolor(_GROUP_EDGE[g[lab]])
        med.set_color(_GROUP_EDGE[g[lab]])
    ax.set_xticks(range(1, len(labels) + 1), labels)
    for i, (d, lab) in enumerate(zip(data, labels, strict=True), start=1):
        x = np.full(len(d), float(i)) + np.linspace(-0.12, 0.12, len(d)) if len(d) > 1 else [i]
        ax.plot(x, d, "o", ms=3, alpha=0.75, color=colors[lab])
        ax.plot([i], [d.mean()], "D", ms=6, color="black", label="mean" if i == 1 else None)
    if _log_scale_wanted([float(x) for d in data for x in d]):
        ax.set_yscale("log")
    n_agents = sum(1 for lab in labels if g[lab] == AGENT_GROUP)
    spans = [(AGENT_GROUP, 1, n_agents), (HEURISTIC_GROUP, n_agents + 1, len(labels))]
    if 0 < n_agents < len(labels):
        ax.axvline(n_agents + 0.5, color="0.3", ls="--", lw=1.2)
    for name, lo, hi in spans:
        if hi >= lo:
            ax.text(
                (lo + hi) / 2,
                1.01,
                name,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=9,
                fontweight="bold",
                color=_GROUP_EDGE[name],
            )
    for tick, lab in zip(ax.get_xticklabels(), labels, strict=True):
        tick.set_color(_GROUP_EDGE[g[lab]])
    ax.set_ylabel(f"{metric} per window")
    ax.set_title(title or f"{metric} over windows", fontsize=10, pad=18)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def plot_slowdown_cdf(
    per_job: Mapping[str, np.ndarray],
    path: str | os.PathLike[str],
    title: str = "",
    groups: Mapping[str, str] | None = None,
) -> Path:
    """Empirical CDF of the per-job bounded slowdown (all jobs of all windows pooled), one
    curve per method, each in its own colour (no colour is used twice); learned agents
    solid and thick, heuristics thinner with dash patterns (identical schedules stay
    visible on top of each other); log x axis (bsld >= 1).

    :param per_job: method -> per-job bounded slowdowns
    :param path: the PNG
    :param title: the figure's title
    :param groups: method -> :data:`AGENT_GROUP` / :data:`HEURISTIC_GROUP`
    """
    plt = _plt()
    g = {lab: (groups or {}).get(lab, HEURISTIC_GROUP) for lab in per_job}
    labels = _ordered(list(per_job), g)
    colors = method_colors(labels, g)
    fig, ax = plt.subplots(figsize=(6.8, 4.6))
    # matplotlib line styles: a name, or (offset, (on, off, ...)) dashes
    styles: list[str | tuple[int, tuple[int, ...]]] = ["--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
    ls: str | tuple[int, tuple[int, ...]]
    k = 0
    for lab in labels:
        v = np.sort(np.asarray(per_job[lab], dtype=np.float64).ravel())
        y = np.arange(1, len(v) + 1) / len(v)
        if g[lab] == AGENT_GROUP:
            ls, lw, name = "-", 2.4, f"{lab} (agent)"
        else:
            ls, lw, name = styles[k % len(styles)], 1.5, lab
            k += 1
        ax.step(v, y, where="post", ls=ls, lw=lw, color=colors[lab], label=name)
    ax.set_xscale("log")
    ax.set_xlabel("bounded slowdown of a job (tau = 10 s)")
    ax.set_ylabel("fraction of jobs with bsld <= x")
    ax.set_ylim(0, 1.01)
    ax.set_title(title or "Per-job bounded slowdown", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _save(fig, path)


def plot_noise_sweep(
    res: Mapping[str, Mapping[str, float]],
    levels: Sequence[float],
    trace: str,
    path: str | os.PathLike[str],
) -> Path:
    """RLBackfilling Fig. 1: AVEbsld against the prediction noise level, one line per
    queue policy (``res`` as returned by :func:`hpcgym.evaluation.noise_sweep`); the
    user-request value as a dotted horizontal line of the same colour."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    x = [100 * lev for lev in levels]
    for pol, row in res.items():
        (line,) = ax.plot(x, [row[f"{lev:g}"] for lev in levels], marker="o", label=f"{pol}+EASY")
        if "request" in row:
            ax.axhline(row["request"], color=line.get_color(), ls=":", lw=1)
    ax.set_xlabel("prediction noise level L (%)  [dotted: user requests]")
    ax.set_ylabel("AVEbsld")
    ax.set_title(f"Noisy runtime predictions, {trace}")
    ax.set_xscale("symlog", linthresh=5)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{v:g}" for v in x])
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)


# --------------------------------------------------------------------------- training
#: Panels of :func:`plot_training`: (title, y label, tag regexes); a panel is drawn when at
#: least one tag matches. Tags are those of ``train/ppo.py`` (docs/training.md).
TRAINING_PANELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # eval/avg_bsld: the run's agent; eval/avg_bsld/<method>: runs of earlier versions
    ("AVEbsld on the evaluation windows", "AVEbsld", (r"^eval/avg_bsld(/.+)?$",)),
    (
        "Training episodes: AVEbsld",
        "AVEbsld",
        (r"^rollout/avg_bsld$", r"^rollout/avg_bsld_(reference|normalizer)$"),
    ),
    (
        "Terminal reward (training episodes, test windows)",
        "reward",
        (r"^rollout/reward$", r"^eval/reward$"),
    ),
    ("PPO update", "value", (r"^train/approx_kl$", r"^train/clip_fraction$")),
    ("Value function", "explained variance", (r"^train/explained_variance$",)),
)


def read_scalars(run_dir: str | os.PathLike[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every scalar series of the TensorBoard event files in ``run_dir`` (not recursive):
    ``{tag: (steps, values)}``, sorted by step (the last value wins for repeated steps)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    d = Path(run_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"run folder {d} not found")
    if not any(d.glob("events.out.tfevents*")):
        raise FileNotFoundError(f"no TensorBoard event file (events.out.tfevents*) in {d}")
    ea = EventAccumulator(str(d), size_guidance={"scalars": 0})
    ea.Reload()
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for tag in ea.Tags().get("scalars", []):
        ev = {e.step: e.value for e in ea.Scalars(tag)}
        steps = np.array(sorted(ev), dtype=np.int64)
        out[tag] = (steps, np.array([ev[s] for s in steps], dtype=np.float64))
    return out


def plot_training(
    run_dir: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Path:
    """Training curves of a training run folder from its TensorBoard events
    (:data:`TRAINING_PANELS`): the agent's test AVEbsld against the baselines' (their means
    from the run's card, :data:`~hpcgym.evaluation.cards.RUN_CARD_FILE`), the training
    episodes' AVEbsld and reward, and PPO diagnostics. x = environment steps.

    :param path: output PNG (default ``<run_dir>/training_curves.png``)
    """
    scalars = read_scalars(run_dir)
    card = Path(run_dir) / RUN_CARD_FILE
    if "eval/avg_bsld" in scalars and card.is_file():
        # the heuristics are runs of their own (hpcgym.evaluation.tensorboard); their
        # constant means are in the run's card (its training-time evaluation)
        steps = scalars["eval/avg_bsld"][0]
        means = (json.loads(card.read_text()).get("eval") or {}).get("baselines") or {}
        for name, mean in means.items():
            if mean is not None:
                scalars[f"eval/avg_bsld/{name}"] = (steps, np.full(len(steps), float(mean)))
    panels = []
    for ptitle, ylabel, pats in TRAINING_PANELS:
        tags = sorted(t for t in scalars if any(re.match(p, t) for p in pats))
        if tags:
            panels.append((ptitle, ylabel, tags))
    if not panels:
        raise ValueError(
            f"{run_dir}: none of the training tags (eval/avg_bsld/*, rollout/*, train/*) "
            f"in its events; found: {', '.join(sorted(scalars)) or 'none'}"
        )
    plt = _plt()
    n = len(panels)
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.6 * rows), squeeze=False)
    for ax, (ptitle, ylabel, tags) in zip(axes.ravel(), panels, strict=False):
        vals = []
        for tag in tags:
            steps, v = scalars[tag]
            vals.extend(v.tolist())
            agent = tag in ("eval/avg_bsld", "eval/avg_bsld/agent", "rollout/avg_bsld")
            name = "agent" if tag in ("eval/avg_bsld", "eval/avg_bsld/agent") else tag
            if tag.startswith("eval/avg_bsld/") and not agent:
                # baselines are constant across evaluations: dashed lines
                ax.plot(steps, v, ls="--", lw=1, label=tag.split("/")[-1])
            else:
                ax.plot(
                    steps,
                    v,
                    lw=2 if agent else 1.2,
                    marker="o" if len(v) < 40 else None,
                    ms=3,
                    label=name,
                )
        if ylabel == "AVEbsld" and _log_scale_wanted(vals):
            ax.set_yscale("log")
        ax.set_title(ptitle, fontsize=10)
        ax.set_xlabel("environment steps")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle(title or f"Training: {Path(run_dir).name}", fontsize=11)
    fig.tight_layout()
    return _save(fig, path or Path(run_dir) / "training_curves.png")


# --------------------------------------------------------------------------- tables
def plot_paper_table(table: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Bars of a reproduced paper table (the dict of
    :meth:`hpcgym.evaluation.PaperTable.to_dict`): one panel per (section, trace), one
    bar per column for hpcgym, and the paper's value as a black tick where published."""
    plt = _plt()
    sections = table["sections"]

    def has_data(t: str) -> bool:
        return any(
            v is not None
            for s in sections
            for d in (s["ours"].get(t, {}), s["paper"].get(t, {}))
            for v in d.values()
        )

    traces = [t for t in sections[0]["rows"] if has_data(t)]
    if not traces:
        raise ValueError("the table has no value to plot")
    nr, nc = len(sections), len(traces)
    fig, axes = plt.subplots(
        nr, nc, figsize=(max(3.2 * nc, 6), 3.4 * nr), squeeze=False, sharey=False
    )
    for i, s in enumerate(sections):
        for j, t in enumerate(traces):
            ax = axes[i, j]
            cols = s["columns"]
            ours = [s["ours"].get(t, {}).get(c) for c in cols]
            paper = [s["paper"].get(t, {}).get(c) for c in cols]
            x = np.arange(len(cols))
            h = [v if v is not None else 0.0 for v in ours]
            colors = ["tab:orange" if "RL" in c else "tab:blue" for c in cols]
            ax.bar(x, h, color=colors, width=0.7)
            px = [k for k, v in enumerate(paper) if v is not None]
            if px:
                ax.plot(
                    px,
                    [paper[k] for k in px],
                    "_",
                    color="black",
                    ms=14,
                    mew=2,
                    label="paper",
                )
                ax.legend(fontsize=7)
            for k, v in enumerate(ours):
                if v is None:
                    ax.text(k, 0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
            ax.set_xticks(x, cols)
            plt.setp(ax.get_xticklabels(), rotation=60, ha="right", fontsize=7)
            short = s["title"].split()[0] if s["title"] else ""
            ax.set_title(f"{t}" + (f" ({short})" if short else ""), fontsize=9)
            if j == 0:
                ax.set_ylabel("mean AVEbsld")
            ax.grid(axis="y", alpha=0.3)
    fig.suptitle(table.get("caption", ""), fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def replot_comparison(
    folder: str | os.PathLike[str], out: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Re-draw the box plot and slowdown CDF of a saved comparison (``results.json`` and
    ``per_job.npz`` of :func:`hpcgym.evaluation.write_outputs`).

    :param folder: the comparison's output folder
    :param out: folder of the figures (default: ``folder``)
    :return: the written PNGs
    """
    import json

    src = Path(folder)
    data = json.loads((src / "results.json").read_text(encoding="utf-8"))
    per_window: dict[str, list[float]] = {}
    for r in data["rows"]:
        per_window.setdefault(r["method"], []).append(r["avg_bsld"])
    w = data["windows"]
    title = f"{data['trace']}: {len(w['starts'])} windows of {w['length']} jobs"
    dest = Path(out) if out else src
    from hpcgym.evaluation.methods import AGENT_HEURISTICS

    groups = {
        m["label"]: AGENT_GROUP
        if m.get("kind") == "agent" and m.get("spec") not in AGENT_HEURISTICS
        else HEURISTIC_GROUP
        for m in data.get("methods", [])
    }
    paths = [plot_window_boxplot(per_window, dest / "bsld_boxplot.png", title=title, groups=groups)]
    npz = src / "per_job.npz"
    if npz.is_file():
        z = np.load(npz)
        per_job = {str(lab): z[f"bsld_{i}"] for i, lab in enumerate(z["labels"])}
        paths.append(plot_slowdown_cdf(per_job, dest / "bsld_cdf.png", title=title, groups=groups))
    return paths


def replot_noise_sweep(
    path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None
) -> Path:
    """Re-draw the noise-sweep figure of a saved ``noise_sweep.json``.

    :param path: the JSON of :func:`hpcgym.evaluation.write_noise_sweep`
    :param out: the PNG (default: next to the JSON)
    """
    import json

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    res = data["avg_bsld"]
    levels = [float(k) for k in next(iter(res.values())) if k != "request"]
    return plot_noise_sweep(res, levels, data["trace"], out or Path(path).with_suffix(".png"))
