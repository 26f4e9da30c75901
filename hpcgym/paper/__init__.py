"""The RLBackfilling paper's (paper 004) reproduction: Table 4 (:mod:`.table4`), Table 5
(:mod:`.table5`), the Fig. 1 noise sweep (:mod:`.noise`), table rendering (:mod:`.tables`)
and ``docs/results.md`` (:mod:`.markdown`); the published numbers are
:mod:`hpcgym.evaluation.published` (re-exported here), which the harness shows beside its own.

It sits above the harness (:mod:`hpcgym.evaluation`) and the zoo (:mod:`hpcgym.zoo`), whose
agents it plays. Every name is imported on first use (``from hpcgym.paper import
noise_sweep``); the table functions live in their modules: ``from hpcgym.paper.table4
import table4``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from hpcgym.evaluation import published as constants

#: public name -> the module of this package that defines it
_LAZY: dict[str, str] = {
    "NOISE_LEVELS": "noise",
    "NOISE_POLICIES": "noise",
    "noise_markdown": "noise",
    "noise_sweep": "noise",
    "write_noise_sweep": "noise",
    "TABLE_SCHEMA": "tables",
    "PaperTable": "tables",
    "TableSection": "tables",
    "table_from_dict": "tables",
    "write_table": "tables",
    "results_markdown": "markdown",
}

__all__ = [*constants.__all__, *_LAZY]


def __getattr__(name: str) -> Any:
    if name in constants.__all__:
        return getattr(constants, name)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
