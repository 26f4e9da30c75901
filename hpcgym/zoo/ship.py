"""Shipping an agent: its model and its card into a folder of agents (the zoo's
``agents/pretrained/``): ``<name>.zip``, ``<name>.json`` (the card, ``model`` relative to
it) and ``<name>.md`` (:func:`~hpcgym.zoo.card_text.card_markdown`).

The card comes from the trainer (``python -m train.card RUN --name NAME`` builds it from the
run's files and ships it with :func:`ship_card`); the library reads the card only.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

from hpcgym.evaluation.cards import ModelCard, load_run_card
from hpcgym.zoo.card_text import card_markdown

__all__ = ["ship_card", "ship_model"]


def ship_card(
    card: ModelCard, name: str, out_dir: str | os.PathLike[str], notes: str = ""
) -> dict[str, Path]:
    """Copy a card's model to ``out_dir/<name>.zip`` and write ``<name>.json`` (the model
    card, with ``model`` relative to it) and ``<name>.md`` (human-readable card).

    :param card: the agent's card (its ``model`` is copied)
    :param name: the agent's name (file stem of the three files)
    :param out_dir: destination folder
    :param notes: free text appended to the ``.md`` card (kept in the card as ``notes``)
    :return: the written paths (``zip``, ``json``, ``md``)
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    zdst = out / f"{name}.zip"
    shutil.copyfile(card.model, zdst)
    data = card.to_dict()
    data["model"] = zdst.name
    data["name"] = name
    if notes:
        data["notes"] = notes  # kept in the card: re-rendering the .md keeps them
    jpath = out / f"{name}.json"
    jpath.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    mpath = out / f"{name}.md"
    mpath.write_text(card_markdown(data, notes), encoding="utf-8")
    return {"zip": zdst, "json": jpath, "md": mpath}


def ship_model(
    run: str | os.PathLike[str],
    name: str,
    out_dir: str | os.PathLike[str],
    model: str = "best",
    notes: str = "",
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Deprecated: ship the card a trainer wrote into its run folder
    (:func:`~hpcgym.evaluation.cards.load_run_card`) with :func:`ship_card`; the trainer's
    ``python -m train.card RUN --name NAME`` builds and ships a card from the run's files.

    :param run: the run folder (or a ``.zip`` in it)
    :param name: the agent's name
    :param out_dir: destination folder
    :param model: ``best``, ``final`` or a ``.zip`` path
    :param notes: free text appended to the ``.md`` card
    :param meta: extra card keys of the caller
    """
    warnings.warn(
        "hpcgym.evaluation.ship_model is deprecated and goes in the next minor version: use "
        "hpcgym.zoo.ship_card(load_run_card(run), name, out_dir), or "
        "python -m train.card RUN --name NAME",
        FutureWarning,
        stacklevel=2,
    )
    if model == "selected":
        raise ValueError(
            f"{run}: a run's selected checkpoint is shipped by the trainer's card tool: "
            f"python -m train.card {run} --model selected --name {name}"
        )
    card = load_run_card(run, model)
    if meta:
        base = card.source.parent if card.source else card.model.parent
        card = ModelCard.from_dict({**card.data, **meta}, base, card.source)
    return ship_card(card, name, out_dir, notes)
