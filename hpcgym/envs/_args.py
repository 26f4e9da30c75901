"""Argument helpers of :class:`hpcgym.envs.backfill_env.BackfillEnv`: a choice among
names (the error lists the valid ones), deprecated keyword aliases, and the agent's
scheduler from the env's estimator arguments."""

from __future__ import annotations

from typing import Any

from hpcgym.sim.estimators import canonical_name
from hpcgym.sim.schedulers import SchedulerSpec, starvation_seconds

__all__ = ["_UNSET", "_Unset", "_alias", "_choice", "agent_spec"]


def agent_spec(
    policy: str,
    estimator: str,
    estimator_kwargs: dict[str, Any] | None,
    correction: str,
    starvation: float | str | None,
    rank_estimator: str | None = None,
    rank_estimator_kwargs: dict[str, Any] | None = None,
) -> SchedulerSpec:
    """The agent's scheduler (its backfilling is the env's): queue ``policy``, the
    reservation ``estimator`` and, when given, the ``rank_estimator`` the policy ranks by.

    :param starvation: seconds, a time such as ``"54h"``, ``"auto"`` or ``None``
    :raises TypeError: an estimator that is not a name (options go in ``*_kwargs``)
    """
    for arg, value in (("estimator", estimator), ("rank_estimator", rank_estimator)):
        if not isinstance(value, str) and not (arg == "rank_estimator" and value is None):
            raise TypeError(
                f"{arg} must be a name ('request', 'actual' or a predictor of "
                f"hpcgym.predictors.make_estimator), got {type(value).__name__}; pass "
                f"predictor options with {arg}_kwargs"
            )
    if isinstance(starvation, str) and starvation.strip().lower() != "auto":
        starvation = starvation_seconds(starvation)  # "54h", "3600"
    return SchedulerSpec(
        name="agent",
        policy=policy.upper(),
        backfill="easy",
        estimate=canonical_name(estimator),
        estimate_kwargs=tuple(sorted((estimator_kwargs or {}).items())),
        correction=correction,
        starvation=starvation,
        rank_estimate=None if rank_estimator is None else canonical_name(rank_estimator),
        rank_estimate_kwargs=tuple(sorted((rank_estimator_kwargs or {}).items())),
    )


def _choice(kind: str, value: str, valid: Any) -> str:
    v = str(value).lower()
    if v not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(valid)}")
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
