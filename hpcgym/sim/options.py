"""The engine's option tables: queue policies (with their key formulas), backfill modes,
run-time corrections and the candidate modes of external backfilling, and the lookup
that turns a name into the compiled core's id (the valid choices listed on a wrong name).

:mod:`hpcgym.sim.engine` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpcgym.sim import _core as K
from hpcgym.sim.registry import RegistryView, get_heuristic
from hpcgym.suggest import did_you_mean

__all__ = ["BACKFILLS", "CANDIDATE_MODES", "CORRECTIONS", "POLICIES", "policy_id"]

#: queue policies of the compiled core: name -> (kernel id, key formula); a read-only view of
#: :mod:`hpcgym.sim.registry` (Python policies registered there are played through a chooser)
POLICIES: Mapping[str, tuple[int, str]] = RegistryView(
    "policy", lambda h: (h.kernel, h.formula), lambda h: h.compiled
)

#: backfill modes of the compiled core: name -> kernel id (a read-only registry view)
BACKFILLS: Mapping[str, int] = RegistryView("backfill", lambda h: h.kernel, lambda h: h.compiled)

CORRECTIONS: dict[str, int] = {
    "requested": K.CORR_REQUEST,
    "incremental": K.CORR_INCREMENTAL,
    "doubling": K.CORR_DOUBLING,
    "incremental-offset": K.CORR_INCREMENTAL_OFFSET,
}

CANDIDATE_MODES: dict[str, int] = {"easy": K.CAND_EASY, "fit": K.CAND_FIT}


def _choice(kind: str, value: str, table: Mapping[str, Any]) -> Any:
    text = str(value)
    for key in (text, text.lower(), text.upper()):
        if key in table:
            return table[key]
    for k in table:
        if k.lower() == text.lower():
            return table[k]
    hint = did_you_mean(value, table)
    raise ValueError(f"unknown {kind} {value!r}{hint}; valid choices: {', '.join(table)}")


def policy_id(name: str) -> int:
    """The compiled core's id of queue policy ``name`` (any case; ``external`` too).

    :raises ValueError: for an unknown name, with the valid choices (the nearest first), or
        a queue policy registered as a Python priority function (the message says how the
        engine plays it)
    """
    key = str(name).strip().upper()
    if key == "EXTERNAL":
        return K.POL_EXTERNAL
    if key in POLICIES:
        return int(POLICIES[key][0])
    entry = get_heuristic("policy", name)  # raises for an unknown name
    raise ValueError(
        f"queue policy {entry.name!r} is a Python priority function: the engine plays it "
        f"through a scheduler (get_scheduler('{entry.name}+EASY')), or as policy='external' "
        f"with chooser=PriorityChooser('{entry.name}') and rest_order='SJF' "
        "(hpcgym.sim.priority)"
    )
