"""The engine's option tables: queue policies (with their key formulas), backfill modes,
run-time corrections and the candidate modes of external backfilling, and the lookup
that turns a name into the compiled core's id (the valid choices listed on a wrong name).

:mod:`hpcgym.sim.engine` re-exports every name.
"""

from __future__ import annotations

from typing import Any

from hpcgym.sim import _core as K

__all__ = ["BACKFILLS", "CANDIDATE_MODES", "CORRECTIONS", "POLICIES", "policy_id"]

#: queue policies: name -> (kernel id, key formula)
POLICIES: dict[str, tuple[int, str]] = {
    "FCFS": (K.POL_FCFS, "s"),
    "SJF": (K.POL_SJF, "r"),
    "SPF": (K.POL_SJF, "r"),
    "SQF": (K.POL_SQF, "n"),
    "SAF": (K.POL_SAF, "r*n"),
    "LJF": (K.POL_LJF, "-r"),
    "LPF": (K.POL_LJF, "-r"),
    "LQF": (K.POL_LQF, "-n"),
    "LAF": (K.POL_LAF, "-r*n"),
    "WFP3": (K.POL_WFP3, "-(w/r)^3*n"),
    "UNICEF": (K.POL_UNICEF, "-w/(log2(max(n,2))*r)"),
    "F1": (K.POL_F1, "log10(r)*n + 870*log10(s)"),
    "F2": (K.POL_F2, "sqrt(r)*n + 25600*log10(s)"),
    "F3": (K.POL_F3, "r*n + 6.86e6*log10(s)"),
    "F4": (K.POL_F4, "r*sqrt(n) + 5.3e5*log10(s)"),
}

BACKFILLS: dict[str, int] = {
    "none": K.BF_NONE,
    "easy": K.BF_EASY,
    "sjbf": K.BF_SJBF,
    "conservative": K.BF_CONSERVATIVE,
    "external": K.BF_EXTERNAL,
}

CORRECTIONS: dict[str, int] = {
    "requested": K.CORR_REQUEST,
    "incremental": K.CORR_INCREMENTAL,
    "doubling": K.CORR_DOUBLING,
    "incremental-offset": K.CORR_INCREMENTAL_OFFSET,
}

CANDIDATE_MODES: dict[str, int] = {"easy": K.CAND_EASY, "fit": K.CAND_FIT}


def _choice(kind: str, value: str, table: dict[str, Any]) -> Any:
    for k in table:
        if k.lower() == str(value).lower():
            return table[k]
    raise ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(table)}")


def policy_id(name: str) -> int:
    """The compiled core's id of queue policy ``name`` (any case; ``external`` too).

    :raises ValueError: for an unknown name, with the valid choices
    """
    if str(name).lower() == "external":
        return K.POL_EXTERNAL
    return int(_choice("policy", name, {**POLICIES, "external": None})[0])
