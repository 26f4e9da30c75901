"""Scheduler and decider names that were renamed: the old spelling still resolves, for
one minor version, with a :class:`FutureWarning` that names the new one.

The one-step lookaheads carry their nature in their names: ``LOOKAHEAD1`` (one step,
rolled out with a reference), ``CLAIRVOYANT`` (the rollouts see the window's real
future: a reference point, not a scheduler a site could run, and not a bound on
anything) or ``ONLINE`` (Monte Carlo futures sampled from the past).
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType

__all__ = ["RENAMED_DECIDERS", "RENAMED_SCHEDULERS", "renamed"]

#: old scheduler name -> new (upper case, as :data:`hpcgym.sim.schedulers.NAMED`)
RENAMED_SCHEDULERS: dict[str, str] = {
    "LOOKAHEAD-ORACLE": "LOOKAHEAD1-CLAIRVOYANT",
    "LOOKAHEAD": "LOOKAHEAD1-ONLINE",
    "SCHEDULE-ORACLE": "SCHEDULE-LOOKAHEAD1-CLAIRVOYANT",
    "SCHEDULE-LOOKAHEAD": "SCHEDULE-LOOKAHEAD1-ONLINE",
}

#: old decider (``decider=``) name -> new (lower case, as the decider registries)
RENAMED_DECIDERS: dict[str, str] = {k.lower(): v.lower() for k, v in RENAMED_SCHEDULERS.items()}


def renamed(name: str, table: dict[str, str], kind: str = "scheduler") -> str:
    """``name``, or its new spelling when it is an old one of ``table`` (case-insensitive;
    a :class:`FutureWarning` names the new one).

    :param name: a name as given
    :param table: :data:`RENAMED_SCHEDULERS` or :data:`RENAMED_DECIDERS`
    :param kind: what the name names, for the message
    """
    for old, new in table.items():
        if old.lower() == str(name).strip().lower():
            warnings.warn(
                f"{kind} name {old!r} is deprecated and will be removed in the next minor "
                f"version: use {new!r} (a one-step lookahead: a reference point, not a bound)",
                FutureWarning,
                stacklevel=_caller_level(),
            )
            return new
    return name


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside :mod:`hpcgym.sim` (the user's call)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(2)  # the caller of renamed()
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
        level += 1
    return level
