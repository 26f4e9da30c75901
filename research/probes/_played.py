"""Shared by the probes that play methods on fixed windows of a trace
(``window_dependence.py``, ``period_profile.py``, ``criterion_power.py``,
``portfolio_headroom.py``, ``seed_pooled.py``): a method named on the command line, its
per-window log AVEbsld ratio to a reference, and the ratios a card's held-out test stored
(read back, never replayed). Agents are named as :func:`research.probes._cards.card_path`
finds them (the zoo, the retired agents, or a zoo agent's ``trained_as`` name).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "card_path",
    "log_ratio_cell",
    "merge_stored_tests",
    "named_method",
    "named_methods",
    "played_log_ratios",
    "split_grids",
    "stored_test_row",
]


def card_path(name: str) -> Path:
    """An agent's card for a bare name that has one (the zoo's, a retired agent's, or the
    zoo card whose ``trained_as`` is ``name``: :func:`research.probes._cards.card_path`);
    otherwise ``name`` as a path."""
    from research.probes._cards import card_path as find

    return find(name)


def named_method(name: str) -> tuple[Any, Any]:
    """The :class:`~hpcgym.evaluation.methods.Method` of a scheduler name (``ELOSS``,
    ``SJF+EASY``...), an agent's name (:func:`card_path`), or a model card's path, and the card
    (``None`` for a scheduler).

    :raises hpcgym.evaluation.methods.MethodUnavailable: an unknown scheduler (the message
        lists the valid ones)
    """
    from hpcgym.evaluation.cards import load_model_card
    from hpcgym.evaluation.methods import card_method, scheduler_method

    card = card_path(name)
    if card.suffix == ".json":
        model_card = load_model_card(card)
        return card_method(model_card), model_card
    return scheduler_method(name), None


def named_methods(text: str, parser: Any) -> list[Any]:
    """The methods of a comma-separated ``--method`` value (:func:`named_method` each);
    an unknown one ends the script through ``parser.error`` with the valid choices.

    :param text: ``NAME,NAME,...`` (blank items are skipped); an item ``key=value``
        belongs to the name before it (``ELOSS,warm=log,EASY++`` is two methods)
    :param parser: the script's ``argparse.ArgumentParser``
    """
    from hpcgym.evaluation.methods import MethodUnavailable

    names: list[str] = []
    for item in [m.strip() for m in text.split(",") if m.strip()]:
        if "=" in item and names:
            names[-1] += f",{item}"
        else:
            names.append(item)
    methods = []
    for name in names:
        try:
            methods.append(named_method(name)[0])
        except MethodUnavailable as exc:
            parser.error(f"--method {name}: {exc}")
    return methods


def log_ratio_cell(logs: np.ndarray, resamples: int, seed: int) -> dict[str, Any]:
    """The paired geometric-mean ratio of per-window log ratios and its 95 % percentile
    bootstrap interval (``hpcgym.evaluation.statistics``): ``{"geo_ratio", "ci_low",
    "ci_high", "windows"}``, the interval None for fewer than two windows."""
    from hpcgym.evaluation.statistics import bootstrap_interval

    v = np.asarray(logs, dtype=np.float64)
    ratio = float(np.exp(v.mean()))
    if len(v) < 2:
        return {"geo_ratio": ratio, "ci_low": None, "ci_high": None, "windows": len(v)}
    low, high = bootstrap_interval(np.exp(v), np.ones_like(v), resamples=resamples, seed=seed)
    return {"geo_ratio": ratio, "ci_low": low, "ci_high": high, "windows": len(v)}


def split_grids(validation: int, end: int, length: int, step: int) -> np.ndarray:
    """Window starts every ``step`` jobs across the train split ``[0, validation)`` and, on
    a grid of its own, across the validation split ``[validation, end)``: no window mixes
    the two splits, none reaches the test split from ``end``.

    :param validation: first job of the validation split
    :param end: first job of the test split
    :param length: jobs per window
    :param step: jobs between starts
    """
    return np.concatenate(
        [
            np.arange(0, validation - length + 1, step),
            np.arange(validation, end - length + 1, step),
        ]
    ).astype(np.int64)


def played_log_ratios(
    workload: Any,
    methods: Sequence[Any],
    reference: str,
    starts: Sequence[int],
    length: int,
    jobs: int = 1,
) -> dict[str, np.ndarray]:
    """Play ``reference`` and ``methods`` on the windows of ``length`` jobs at ``starts``
    and return each method's per-window ``ln(AVEbsld / AVEbsld_reference)``.

    :param workload: the trace
    :param methods: :class:`~hpcgym.evaluation.methods.Method` objects
    :param reference: the reference scheduler's name
    :param starts: the windows' first jobs (any split: the caller chooses)
    :param jobs: worker processes
    :return: ``{method label: log ratios in the order of starts}``
    """
    from hpcgym.evaluation.methods import scheduler_method
    from hpcgym.evaluation.runner import evaluate
    from hpcgym.evaluation.windows import select_windows
    from hpcgym_agents import load_agent

    ws = select_windows(len(workload), length, len(starts), "all", None, starts=list(starts))
    res = evaluate(
        workload,
        [scheduler_method(reference), *methods],
        ws,
        jobs=jobs,
        progress=False,
        reference=None,
        agent_loader=load_agent,
    )
    per = res.per_window("avg_bsld")
    ref = np.log(np.asarray(per[reference], dtype=np.float64))
    return {m.label: np.log(np.asarray(per[m.label], dtype=np.float64)) - ref for m in methods}


def stored_test_row(card: str, trace: str, reference: str, labels: list[str]) -> dict | None:
    """The per-window log ratios against ``reference`` of those of ``labels`` that a
    card's held-out test on ``trace`` stored (the values the test measured, read from the
    card: nothing is played on the test split). None without such a test.

    A zoo card's test records its agent under the name it was tested as (its
    ``trained_as``); the label of the card's own method (its name) reads that column.

    :param card: an agent's name (:func:`card_path`) or a card's path
    :return: ``{"card", "seed", "windows", "starts", "log_ratios": {label: array}}``
    """
    from hpcgym.evaluation.cards import canonical_trace, load_model_card
    from research.probes._cards import tested_as

    path = card_path(card)
    model_card = load_model_card(path)
    data = {**model_card.data, "name": model_card.name}
    sec = (data.get("test") or {}).get(canonical_trace(trace))
    methods = (sec or {}).get("methods") or {}
    if reference not in methods or not methods[reference].get("per_window"):
        return None
    own = tested_as(data, sec)
    column = {k: own if k == model_card.name and k not in methods else k for k in labels}
    ref = np.log(np.asarray(methods[reference]["per_window"], dtype=np.float64))
    logs = {
        k: np.log(np.asarray(methods[column[k]]["per_window"], dtype=np.float64)) - ref
        for k in labels
        if methods.get(column[k], {}).get("per_window")
    }
    return {
        "card": path.stem,
        "seed": sec.get("seed"),
        "windows": len(ref),
        "starts": [int(x) for x in sec.get("starts") or []],
        "log_ratios": logs,
    }


def merge_stored_tests(rows: list[dict | None]) -> dict | None:
    """One test row from several cards' :func:`stored_test_row`: each method's values
    from the first card that holds them. The cards' tests must have been played on the
    same windows (same starts), so that their columns are paired.

    :return: ``{"seed", "windows", "cards": {label: card}, "log_ratios": {label: array}}``,
        None when no row holds a test
    :raises ValueError: two cards whose tests were played on different windows
    """
    found = [r for r in rows if r is not None]
    if not found:
        return None
    first = found[0]
    out: dict = {"seed": first["seed"], "windows": first["windows"], "cards": {}, "log_ratios": {}}
    for r in found:
        if r["starts"] != first["starts"]:
            raise ValueError(
                f"the tests stored on {first['card']} and {r['card']} were played on "
                "different windows: give cards tested with the same window seed and length"
            )
        for k, v in r["log_ratios"].items():
            if k not in out["log_ratios"]:
                out["log_ratios"][k] = v
                out["cards"][k] = r["card"]
    return out
