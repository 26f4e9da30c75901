"""Moved to :mod:`hpcgym.paper` (the RLBackfilling paper's reproduction); this old path and
its modules work for one minor version, with a FutureWarning."""

from __future__ import annotations

import warnings
from typing import Any

import hpcgym.paper as _new

warnings.warn(
    "hpcgym.evaluation.paper moved to hpcgym.paper; the old path goes in the next minor version",
    FutureWarning,
    stacklevel=2,
)

__all__ = list(_new.__all__)


def __getattr__(name: str) -> Any:
    return getattr(_new, name)
