""" "Did you mean": the nearest valid names to a mistyped one, for every error about a name.

Every place that resolves a name a user typed (schedulers, queue policies, traces,
estimators, agents, tasks) appends :func:`did_you_mean` to its error, so a typo is
answered the same way everywhere. It imports nothing from hpcgym: any layer may use it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["close_matches", "did_you_mean"]


def close_matches(value: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The valid names closest to ``value`` (case-insensitive, :mod:`difflib`'s similarity
    of at least 0.6): the closest and those as close as it (within 0.05), at most ``n``.

    :param value: the name as typed
    :param choices: the valid names
    :param n: how many to return at most
    """
    names = [str(c) for c in choices]
    by_key: dict[str, str] = {}
    for c in names:
        by_key.setdefault(c.lower(), c)
    key = str(value).strip().lower()
    found = difflib.get_close_matches(key, list(by_key), n=n, cutoff=0.6)
    if not found:
        return []

    def score(k: str) -> float:
        return difflib.SequenceMatcher(None, key, k).ratio()

    best = score(found[0])
    return [by_key[k] for k in found if score(k) >= best - 0.05]


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'EASY-SJBF'?)"`` for the closest valid names, ``""`` when none is
    close (to append to an error message right after the typed name).

    :param value: the name as typed
    :param choices: the valid names
    """
    found = close_matches(value, choices)
    if not found:
        return ""
    return " (did you mean " + " or ".join(repr(f) for f in found) + "?)"
