"""Argument helpers of :class:`hpcgym.envs.backfill_env.BackfillEnv`: a choice among
names (the error lists the valid ones), and deprecated keyword aliases."""

from __future__ import annotations

from typing import Any

from hpcgym.suggest import did_you_mean

__all__ = ["_UNSET", "_Unset", "_alias", "_choice"]


def _choice(kind: str, value: str, valid: Any) -> str:
    v = str(value).lower()
    if v not in valid:
        hint = did_you_mean(v, valid)
        raise ValueError(f"unknown {kind} {value!r}{hint}; valid choices: {', '.join(valid)}")
    return v


class _Unset:
    """Marker of an argument that was not given (``None`` is a valid reference)."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


def _alias(name: str, value: Any, old: str, old_value: Any, unset: Any = None) -> Any:
    """``value``, or the deprecated keyword ``old``'s value; both given: an error."""
    if old_value is unset:
        return value
    if value is not unset and value != old_value:
        raise ValueError(f"{old!r} is the old name of {name!r}: give only one of them")
    return old_value
