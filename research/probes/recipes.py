"""Training recipes across traces: what each recipe's agents scored on held-out time.

    python research/probes/recipes.py [--agents DIR [DIR ...]] [--out recipes.md]

A *recipe* is what a user would copy to train an agent on another trace: the queue
policy, the reservations the guard keeps, the reward and the training options that are
not the run's bookkeeping (seeds, time limit, folders), and how the checkpoint was
chosen. Every guarded agent with a held-out test on its own trace is one entry; the
table has one row per recipe and one column per trace, each cell the test ratios of the
recipe's agents on that trace against the reference of the recipe's base (EASY-SJBF;
SJF+EASY-SJBF for SJF agents; ELOSS for agents that keep ELOSS's predicted
reservations). It answers the question a new user asks first: does one recipe work
everywhere, or was each result tuned to its trace?

The recipe is read from the model card: its fields (``policy``, ``estimator``,
``reward_mode``, ``time_scale``, ...) and, for options a card has no field for
(``--lr-schedule``, ``--init-from``, ``--total-steps 0``, PPO's settings such as
``--gae-lambda``), its training command. Cards
from before the reward option (the RLBackfilling-reproduction ``-paper`` agents, which
have neither a training command nor a reward mode) are listed as the paper's recipe.
The cards read by default are the retired agents' (``research/agents``) and the zoo's
(``agents/pretrained``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m research.probes.recipes`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.recipes", *sys.argv[1:]])

from hpcgym.evaluation.card_text import command_flags  # noqa: E402
from research.probes._cards import cards_markdown_main  # noqa: E402
from research.probes.targets import OWN_TRACES, paired, with_policy  # noqa: E402

__all__ = ["PPO_FLAGS", "main", "recipe_of", "recipe_rows", "recipes_markdown"]

Card = dict[str, Any]

#: PPO options that make another recipe when a training command gives them (``--ent-coef``,
#: ``--lr-schedule`` and ``--init-from`` have their own wording below); the set of
#: train/ppo.py's "hyper" options, checked by tests/test_probe_recipes.py
PPO_FLAGS = (
    "--trajectories",
    "--n-steps",
    "--calib-windows",
    "--batch-size",
    "--n-epochs",
    "--learning-rate",
    "--value-lr",
    "--gamma",
    "--gae-lambda",
    "--clip-range",
    "--target-kl",
    "--vf-coef",
    "--max-grad-norm",
    "--value-head",
    "--stop-score",
    "--row-context",
    "--row-prior",
    "--anchor-kl",
    "--stop-init",
    "--kernel-arch",
)


def reference_of(card: Card) -> str:
    """The paired reference the recipe's agents are judged against on their own trace.

    :param card: a model card dict
    """
    eloss = str(card.get("estimator", "request")) != "request"
    return with_policy(card, "ELOSS" if eloss else "EASY-SJBF")


def _scale_parts(card: Card) -> list[str]:
    """The recipe's time scale and validation fraction, where not the defaults."""
    parts: list[str] = []
    if str(card.get("time_scale") or "linear") != "linear":
        parts.append(f"{card['time_scale']} time")
    vf = card.get("validation_fraction")
    if vf is not None and abs(float(vf) - 0.1) > 1e-9:
        parts.append(f"vf {float(vf):g}")
    return parts


def _column_parts(card: Card) -> list[str]:
    """The recipe's observation columns, where not the paper's."""
    parts: list[str] = []
    if str(card.get("features") or "paper") != "paper":
        parts.append(f"{card['features']} features")
    if card.get("feature_predictor"):
        parts.append(f"column {card['feature_predictor']}")
    return parts


def recipe_of(card: Card) -> str:
    """A short, stable description of how the agent of ``card`` was trained and chosen.

    :param card: a model card dict (``ModelCard.to_dict()``)
    """
    command = str(card.get("training_command") or "")
    flags = command_flags(command)
    parts = [str(card.get("policy", "FCFS"))]
    estimator = str(card.get("estimator", "request"))
    if estimator != "request":
        parts.append(f"{estimator} reservations")
    if not command and card.get("reward_mode") is None:  # cards of the reproduction
        return " · ".join([*parts, "the paper's recipe (RLBackfilling reproduction)"])
    search = card.get("search")
    if search:  # research/search/search.py: the recipe is the search, not the weights it found
        hidden = int(search.get("hidden") or 0)  # research/search/search.py --hidden H
        score = f"score with {hidden} hidden ReLU units" if hidden else "linear score"
        parts.append(
            f"CMA-ES {score} on {search.get('windows')} x {search.get('length')} train windows"
        )
        return " · ".join([*parts, *_scale_parts(card), *_column_parts(card)])
    if command and flags.get("--preset") != "fast":
        parts.append(f"preset {flags.get('--preset', 'paper')}")
    parts.append(str(card.get("reward_mode") or "terminal"))
    if str(card.get("reward_scale") or "linear") != "linear":
        parts.append(f"{card['reward_scale']} reward")
    ent = float((card.get("hyperparameters") or {}).get("ent_coef") or 0.0)
    if ent:
        parts.append(f"ent {ent:g}")
    parts += _scale_parts(card)
    if flags.get("--lr-schedule", "constant") != "constant":
        parts.append(f"{flags['--lr-schedule']} lr")
    parts += [f"{f[2:]} {flags[f]}" for f in PPO_FLAGS if f in flags]
    parts += _column_parts(card)
    if "--mix-traces" in flags:
        parts.append("trace mix")
    if "--init-from" in flags:
        parts.append("clone, no PPO" if flags.get("--total-steps") == "0" else "from a clone")
    selection = card.get("selection") or {}
    if selection.get("generated"):
        parts.append("chosen on generated windows")
    if selection.get("transfer"):
        parts.append("chosen for transfer")
    if card.get("gate"):
        parts.append("gated")
    return " · ".join(parts)


def _cell(card: Card, section: dict[str, Any]) -> tuple[float, str] | None:
    p = paired(card, section, reference_of(card).split("+")[-1])
    if not p:
        return None
    ratio = float(p["geo_ratio"])
    text = f"{ratio:.3f}"
    if float(p["ci_high"]) < 1.0:
        text = f"**{text}**"
    elif float(p["ci_low"]) > 1.0:
        text += " (worse)"
    return ratio, text


def recipe_rows(cards: Sequence[Card]) -> list[tuple[str, str, dict[str, list[str]]]]:
    """``(recipe, reference, {trace: cell texts, lowest ratio first})`` per recipe, for
    guarded agents tested on their own trace, sorted by base, reservations and recipe.

    :param cards: model card dicts
    """
    table: dict[str, tuple[str, dict[str, list[tuple[float, str]]]]] = {}
    for card in cards:
        if str(card.get("mode")) != "guarded":
            continue
        trace = str(card.get("trace"))
        section = (card.get("test") or {}).get(trace)
        if not section or section.get("transfer"):
            continue
        cell = _cell(card, section)
        if cell is None:
            continue
        recipe = recipe_of(card)
        _, cells = table.setdefault(recipe, (reference_of(card), {}))
        cells.setdefault(trace, []).append(cell)
    rows = []
    for recipe in sorted(
        table, key=lambda r: (r.split(" · ")[0] != "FCFS", "reservations" in r, r)
    ):
        ref, cells = table[recipe]
        rows.append((recipe, ref, {t: [s for _, s in sorted(v)] for t, v in cells.items()}))
    return rows


def recipes_markdown(cards: Sequence[Card], traces: Sequence[str] = OWN_TRACES) -> str:
    """The Markdown section: one row per recipe, one column per trace.

    :param cards: model card dicts
    :param traces: the columns (default: the four traces the agents are trained on)
    """
    rows = recipe_rows(cards)
    extra = sorted({t for _, _, cells in rows for t in cells} - set(traces))
    columns = [*traces, *extra]
    out = [
        "## Recipes across traces",
        "",
        "Counted by `python research/probes/recipes.py` from the agents' cards: one row per "
        "training recipe (the queue policy, the reservations, the reward and the options "
        "that are not bookkeeping, and how the checkpoint was chosen; the retired agents' "
        "names carry them as suffixes), one column per trace the agents were trained and "
        "tested on. A cell lists the test ratios of the recipe's agents there against the "
        "row's reference, lowest first; **bold**: interval entirely below 1 (better); "
        "*(worse)*: entirely above. An empty cell: no agent of the recipe was tested on "
        "that trace. One recipe that is bold in every column would be one that works "
        "everywhere.",
        "",
        "| recipe | vs | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for recipe, ref, cells in rows:
        texts = [", ".join(cells.get(t, [])) or " " for t in columns]
        out.append(f"| {recipe} | {ref} | " + " | ".join(texts) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print or write the table; returns the exit code (2 on user errors).

    :param argv: the arguments (default: the process's)
    """
    return cards_markdown_main("python research/probes/recipes.py", __doc__, recipes_markdown, argv)


if __name__ == "__main__":
    raise SystemExit(main())
