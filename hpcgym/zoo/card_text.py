"""The human-readable model card ``<name>.md`` (:func:`card_markdown`) of a card dict
(:mod:`hpcgym.evaluation.cards`): its env and options, training, checkpoint selection,
gate, seeds and held-out tests."""

from __future__ import annotations

import shlex
from typing import Any

from hpcgym.evaluation.gating import gate_markdown, read_gate
from hpcgym.evaluation.statistics import holdout_text, verdict
from hpcgym.evaluation.windows import load_quartiles_text

__all__ = ["OPTION_KEYS", "card_markdown", "command_flags", "search_processes"]

#: Training options a run's ``config.json`` gives its card when set (what the agent observes
#: and how it was rewarded); the card's key table shows them.
OPTION_KEYS: tuple[str, ...] = (
    "correction",
    "feature_predictor",
    "features",
    "time_scale",
    "reward_mode",
    "reward_scale",
)


def card_markdown(data: dict[str, Any], notes: str = "") -> str:
    """The human-readable card ``<name>.md``.

    :param data: the card dict
    :param notes: free text appended at the end (default: the card's ``notes``)
    """
    notes = notes or str(data.get("notes") or "")
    how = (
        "a linear score searched by CMA-ES (its score prior, the kernel at 0)"
        if data.get("search")
        else data.get("algorithm", "MaskablePPO")
    )
    lines = [
        f"# {data['name']}",
        "",
        f"RLBackfilling kernel policy (`{data.get('policy_class', 'KernelPolicy')}`, "
        f"{how}) trained on **{data['trace']}** with the "
        f"**{data['policy']}** base policy in **{data['mode']}** mode.",
        "",
        "| key | value |",
        "|---|---|",
    ]
    for k in (
        "trace",
        "split",
        "train_fraction",
        "validation_fraction",
        "policy",
        "mode",
        "normalizer",
        "objective",
        "estimator",
        "rank_estimator",
        *OPTION_KEYS,
        "rows",
        "row_predictor",
        "row_history",
        "load_weighting",
        "mix_traces",
        "max_queue",
        "sequence_length",
        "est_scale",
        "seed",
        "steps",
        "updates",
        "run",
        "checkpoint",
    ):
        v = data.get(k)
        if v is not None:
            lines.append(f"| {k} | `{','.join(map(str, v)) if isinstance(v, list) else v}` |")
    ev = data.get("eval") or {}
    if ev.get("avg_bsld") is not None:
        lines += [
            "",
            f"Training-time evaluation: mean AVEbsld {ev['avg_bsld']:.2f} on "
            f"{len(ev.get('starts') or [])} {ev.get('split', 'test')} windows of "
            f"{ev.get('length')} jobs"
            + (
                "; baselines "
                + ", ".join(
                    f"{k} {v:.2f}" for k, v in (ev.get("baselines") or {}).items() if v is not None
                )
                if ev.get("baselines")
                else ""
            )
            + ".",
        ]
    lines += _paired_lines(ev.get("paired"))
    lines += _training_lines(data)
    lines += _selection_lines(data.get("selection"))
    lines += gate_markdown(read_gate(data))
    lines += _seeds_lines(data.get("seeds"))
    for trace, section in (data.get("test") or {}).items():
        from hpcgym.zoo.heldout import heldout_markdown

        lines += ["", f"## Held-out test: {trace}", ""]
        lines += heldout_markdown(section, data["name"])
    lines += [
        "",
        "Evaluate: `python eval/compare.py --trace "
        f"{data['trace']} --agents {data['name']} --schedulers EASY EASY-AR`",
    ]
    if notes:
        lines += ["", notes]
    return "\n".join(lines) + "\n"


def command_flags(command: str | None) -> dict[str, str]:
    """The ``--flag value`` and ``--flag=value`` pairs of a recorded command line (a flag
    with no value maps to ""); a line shlex cannot split is split on spaces.

    :param command: the command line, as a card or ``search.json`` records it
    """
    try:
        tokens = shlex.split(command or "")
    except ValueError:
        tokens = (command or "").split()
    out: dict[str, str] = {}
    for i, tok in enumerate(tokens):
        if not tok.startswith("--"):
            continue
        if "=" in tok:
            flag, value = tok.split("=", 1)
            out[flag] = value
        else:
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            out[tok] = "" if nxt.startswith("--") else nxt
    return out


def search_processes(command: str | None) -> int:
    """The worker processes a ``train/search.py`` command played its candidates on: the
    value of its ``--jobs``, 1 when it has none (the script's default) or it is not a
    positive number.

    :param command: the search's command line, as recorded in ``search.json``
    """
    value = command_flags(command).get("--jobs", "")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _cores_text(n: int) -> str:
    """``one core`` or ``N cores``."""
    return "one core" if n == 1 else f"{n} cores"


def _training_lines(data: dict[str, Any]) -> list[str]:
    """The card's training command, wall time and validation curve."""
    lines: list[str] = []
    search = data.get("search")
    if search:
        lines += [
            "",
            "## Search",
            "",
            f"`{search['command']}`",
            "",
            f"CMA-ES over {_score_text(int(search.get('hidden') or 0))} (docs/training.md, "
            "*Searching a linear score*): "
            f"{search['generations']} generations of {search['windows']} train-split windows "
            f"of {search['length']} jobs, {search['minutes']} min on "
            f"{_cores_text(search_processes(search.get('command')))}; CMA-ES's mean "
            f"at the end scored {search['last_train_ratio']:.3f} x {search['reference']} on "
            "the last generation's windows (the windows that made its last step)."
            + (
                f" Entering each of the last ten generations, scored on that generation's "
                f"windows before they moved it, the mean was at {search['fresh_train_ratio']:.3f} "
                f"(geometric mean)."
                if search.get("fresh_train_ratio") is not None
                else ""
            )
            + " The training command below makes the run that plays it (`--total-steps 0`).",
        ]
    if data.get("training_command"):
        lines += ["", "## Training", "", f"`{data['training_command']}`"]
        for c in data.get("resume_commands") or []:
            lines.append(f"resumed with `{c}`")
    if data.get("wall_time_min") is not None:
        what = "the search and its run" if search else "training (2 CPU cores)"
        lines += ["", f"Wall time: {data['wall_time_min']} min of {what}."]
    curve = data.get("validation_curve") or []
    if curve:
        lines += [
            "",
            "Validation curve (training-time evaluation on validation windows):",
            "",
            "| timesteps | updates | mean AVEbsld | ratio vs reference [95% interval] |",
            "|---:|---:|---:|---:|",
        ]
        for r in curve:
            ratio = (
                f"{r['geo_ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                if r.get("geo_ratio") is not None and r.get("ci_low") is not None
                else "—"
            )
            lines.append(
                f"| {r['timesteps']:,} | {r['updates']} | {float(r['avg_bsld']):.2f} | {ratio} |"
            )
    return lines


def _selection_lines(sel: dict[str, Any] | None) -> list[str]:
    """The card's checkpoint selection on validation windows (``eval/select_checkpoint.py``)."""
    if not sel:
        return []
    lines = [
        "",
        "## Checkpoint selection",
        "",
        f"Chosen: `{sel['chosen']}`, the lowest "
        + (
            "transfer score (below; ratios of AVEbsld vs "
            if sel.get("transfer")
            else "paired geometric-mean ratio of AVEbsld vs "
        )
        + f"{sel['reference']}"
        + (")" if sel.get("transfer") else "")
        + f" of {len(sel['candidates'])} checkpoints on {sel['windows']} "
        f"windows of {sel['length']} jobs of "
        + (
            f"the generated workload `{sel['trace']}`"
            if sel.get("generated")
            else "the validation split"
        )
        + f" (window seed {sel['seed']}; "
        + (f"{load}; " if (load := load_quartiles_text(sel.get("offered_load"))) else "")
        + f"{sel['reference']}: mean AVEbsld {float(sel['reference_mean_avg_bsld']):.2f}). "
        f"Reproduce: `{sel['command']}`",
    ]
    others = [w["trace"] for w in sel.get("transfer") or []]
    if others:
        lines += [
            "",
            f"Chosen for transfer: every checkpoint was also played on {sel['windows']} "
            f"validation windows of {', '.join(others)} (never trained on), and the choice "
            "is the lowest geometric mean of its ratios over its own validation windows and "
            "these (`score`).",
        ]
    if text := holdout_text(sel.get("holdout"), sel["reference"]):
        lines += ["", text]
    if sel.get("seeds"):  # a choice across the seeds of a --seeds run
        bests = ", ".join(
            f"{b['run']} {float(b['geo_ratio']):.3f}"
            + (f" (score {float(b['score']):.3f})" if b.get("score") is not None else "")
            for b in sel["seeds"]
        )
        lines += ["", f"The candidates are the checkpoints of all {len(sel['seeds'])} seeds "
                  f"of the seeds run, on the same windows; each seed's best: {bests}."]  # fmt: skip
    extra = "".join(f" {t} |" for t in others) + (" score |" if others else "")
    lines += [
        "",
        f"| checkpoint | steps | mean AVEbsld | ratio [95% interval] | wins |{extra}",
        "|---|---:|---:|---:|---:|" + "---:|" * (len(others) + bool(others)),
    ]
    for r in sel["candidates"]:
        mark = "**" if r["model"] == sel["chosen"] else ""
        steps = f"{r['steps']:,}" if r.get("steps") is not None else "?"
        cells = "".join(f" {float(r['transfer'][t]['geo_ratio']):.3f} |" for t in others)
        cells += f" {float(r['score']):.3f} |" if others else ""
        lines.append(
            f"| {mark}{r['model']}{mark} | {steps} | {float(r['mean_avg_bsld']):.2f} | "
            f"{float(r['geo_ratio']):.3f} [{float(r['ci_low']):.3f}, {float(r['ci_high']):.3f}]"
            f" | {r['wins']}/{sel['windows']} |{cells}"
        )
    return lines


def _seeds_lines(seeds: dict[str, Any] | None) -> list[str]:
    """The card's spread across training seeds (:func:`seeds_section`)."""
    if not seeds:
        return []

    def cell(p: dict[str, Any] | None) -> str:
        if not p or p.get("geo_ratio") is None:
            return "—"
        ci = (
            f" [{float(p['ci_low']):.3f}, {float(p['ci_high']):.3f}]"
            if p.get("ci_low") is not None
            else ""
        )
        return f"{float(p['geo_ratio']):.3f}{ci}"

    sel = next((r["selected"] for r in seeds["runs"] if r.get("selected")), None)
    sel_head = (
        f"selected checkpoint ({sel['windows']} x {sel['length']} validation windows)"
        if sel
        else "selected checkpoint"
    )
    lines = [
        "",
        "## Seeds",
        "",
        f"This configuration was trained with {len(seeds['runs'])} seeds (`{seeds['root']}`); "
        f"paired geometric-mean ratio of AVEbsld vs {seeds.get('reference') or 'the reference'}"
        " on validation windows:",
        "",
        f"| seed | status | steps | final model (training's evaluation) | {sel_head} |",
        "|---:|---|---:|---:|---:|",
    ]
    for r in seeds["runs"]:
        steps = f"{r['timesteps']:,}" if r.get("timesteps") is not None else "—"
        lines.append(
            f"| {r['seed']} | {r.get('status')} | {steps} | {cell(r.get('final'))} | "
            f"{cell(r.get('selected'))} |"
        )
    for key, what in (("final", "final models"), ("selected", "selected checkpoints")):
        s = seeds["across"].get(key)
        if s:
            lines.append(
                f"\nAcross seeds, {what}: mean {s['mean']:.3f}, std {s['std']:.3f} "
                f"(min {s['min']:.3f}, max {s['max']:.3f}, {s['n']} seeds)."
            )
    return lines


def _paired_lines(paired: dict[str, Any] | None) -> list[str]:
    """The card's sentence on the paired statistics of its training-time evaluation
    (``reference, geo_ratio, ci_low, ci_high, wins, windows``); the verdict word comes from
    :func:`hpcgym.evaluation.statistics.verdict` only."""
    word = verdict(paired)
    if not paired or word is None:
        return []
    ref = paired.get("reference", "the reference")
    return [
        "",
        f"Against {ref} on the same windows: paired geometric-mean ratio of AVEbsld "
        f"{float(paired['geo_ratio']):.3f}, 95% bootstrap interval "
        f"[{float(paired['ci_low']):.3f}, {float(paired['ci_high']):.3f}], "
        + (
            f"ratio of means {float(paired['mean_ratio']):.3f} "
            f"[{float(paired['mean_low']):.3f}, {float(paired['mean_high']):.3f}], "
            if paired.get("mean_ratio") is not None
            else ""
        )
        + f"{paired.get('wins', '?')}/{paired.get('windows', '?')} windows won: **{word}** "
        "(the verdict of the intervals alone, before the tail).",
    ]


def _score_text(hidden: int) -> str:
    """What a search searched: a linear score, or one with a hidden layer."""
    if not hidden:
        return "a linear score"
    return f"a linear score plus a hidden layer of {hidden} ReLU unit{'s' if hidden > 1 else ''}"
