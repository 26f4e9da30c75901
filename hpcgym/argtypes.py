"""Argument types shared by the command lines (``hpcgym``, ``train/ppo.py``, ``eval/``).

Each raises :class:`argparse.ArgumentTypeError` with the value and what was expected, so
argparse prints ``error: argument --x: expected a positive integer, got '0'``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", int, float)

__all__ = ["nonneg_float", "nonneg_int", "positive_float", "positive_int", "unit_float"]


def _checked(convert: Callable[[str], T], ok: Callable[[T], bool], what: str) -> Callable[[str], T]:
    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    parse.__name__ = what.replace(" ", "_")
    return parse


positive_int = _checked(int, lambda v: v > 0, "a positive integer")
nonneg_int = _checked(int, lambda v: v >= 0, "an integer >= 0")
positive_float = _checked(float, lambda v: math.isfinite(v) and v > 0, "a positive number")
nonneg_float = _checked(float, lambda v: math.isfinite(v) and v >= 0, "a number >= 0")
unit_float = _checked(float, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]")
