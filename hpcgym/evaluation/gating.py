"""Gated agents: a model card's ``gate`` section (docs/evaluation.md, *Gated agents*).

A gated agent plays a heuristic agent's choice (the *fallback*: ``sjbf`` is EASY-SJBF's
choice, ``easy`` EASY's) at every decision point, except where its trained model gives
another action a probability of at least ``tau``. The card of such an agent is the card
of its model plus::

    "gate": {"tau": 0.7, "fallback": "sjbf", "base": "<the model's own card>",
             "selection": {...}}

``selection`` (written by :func:`hpcgym.evaluation.selection.select_gate`) records the
validation windows ``tau`` was chosen on, every candidate threshold's paired ratio and the
command that reproduces the choice. This module reads and checks the section and renders
it for the card's Markdown; the agent itself is built by the caller's agent loader
(:mod:`hpcgym.evaluation.loaders`), which gets the card's path as its spec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hpcgym.sim.registry import RegistryView, list_heuristics

__all__ = ["GATE_FALLBACKS", "GATE_KEY", "default_fallback", "gate_markdown", "read_gate"]

#: The card key of the gate section.
GATE_KEY = "gate"

#: Heuristic agents a gate may fall back to (the deterministic ones of
#: :data:`hpcgym.evaluation.methods.AGENT_HEURISTICS`) -> what they play in guarded mode.
#: A read-only view of the registered heuristic agents that have a fallback place
#: (:func:`hpcgym.sim.registry.register_agent_heuristic`).
GATE_FALLBACKS: Mapping[str, str] = RegistryView(
    "agent", lambda h: h.plays, lambda h: h.fallback is not None, lambda h: h.fallback
)


def read_gate(data: dict[str, Any], where: str = "model card") -> dict[str, Any] | None:
    """The checked ``gate`` section of a card dict, or ``None`` when it has none.

    :param data: the card dict
    :param where: what to name in an error (the card's file)
    :raises ValueError: ``tau`` is missing, not a number or negative, or ``fallback`` is not
        one of :data:`GATE_FALLBACKS` (the message lists them)
    """
    gate = data.get(GATE_KEY)
    if gate is None:
        return None
    if not isinstance(gate, dict):
        raise ValueError(f"{where}: '{GATE_KEY}' must be an object with 'tau' and 'fallback'")
    try:
        tau = float(gate["tau"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(
            f"{where}: '{GATE_KEY}.tau' must be a number >= 0 (the probability the model "
            "needs to replace the fallback's choice)"
        ) from None
    if not math.isfinite(tau) or tau < 0:
        raise ValueError(f"{where}: '{GATE_KEY}.tau' must be a finite number >= 0, got {tau}")
    fallback = str(gate.get("fallback", "")).lower()
    if fallback not in GATE_FALLBACKS:
        raise ValueError(
            f"{where}: unknown '{GATE_KEY}.fallback' {gate.get('fallback')!r}; valid: "
            + ", ".join(GATE_FALLBACKS)
        )
    return {**gate, "tau": tau, "fallback": fallback}


def default_fallback(reference: str) -> str:
    """The gate fallback that makes the same choice as ``reference``'s backfilling in the
    env (``sjbf`` for an SJBF backfiller such as EASY-SJBF, EASY++ and ELOSS, whose order
    the env's estimate column follows; ``easy`` for EASY).

    :param reference: a scheduler name (:func:`hpcgym.sim.get_scheduler`)
    :raises ValueError: the reference backfills otherwise (give the fallback)
    """
    from hpcgym.sim import get_scheduler

    backfill = str(get_scheduler(reference).backfill).lower()
    for agent in list_heuristics("agent"):  # the fallback that mirrors that backfiller
        if agent.mirrors == backfill and agent.fallback is not None:
            return agent.name
    raise ValueError(
        f"no gate fallback plays like {reference} (backfill {backfill!r}): give one of "
        + ", ".join(GATE_FALLBACKS)
    )


def gate_markdown(gate: dict[str, Any] | None) -> list[str]:
    """The card's *Gate* section (Markdown lines; empty without a gate)."""
    if not gate:
        return []
    tau, fb = float(gate["tau"]), str(gate["fallback"])
    lines = [
        "",
        "## Gate",
        "",
        f"Plays `{fb}` ({GATE_FALLBACKS.get(fb, fb)}) at every decision point "
        f"unless the model gives another action a probability of at least **tau = {tau:g}**"
        + (f"; the model is the agent `{gate['base']}`" if gate.get("base") else "")
        + " (docs/evaluation.md, *Gated agents*).",
    ]
    sel = gate.get("selection")
    if not sel:
        return lines
    where = "the validation split"
    if sel.get("generated"):
        where = f"the generated workload `{sel['trace']}`"
    lines += [
        "",
        f"tau was chosen on {sel['windows']} windows of {sel['length']} jobs of {where} "
        f"(window seed {sel['seed']}; {sel['reference']}: mean AVEbsld "
        f"{float(sel['reference_mean_avg_bsld']):.2f}), the lowest paired geometric-mean "
        f"ratio of AVEbsld vs {sel['reference']}. Reproduce: `{sel['command']}`",
        "",
        "| tau | departures | mean AVEbsld | ratio [95% interval] | wins |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in sel.get("candidates", []):
        mark = " (chosen)" if float(r["tau"]) == tau else ""
        dep = r.get("departure_rate")
        lines.append(
            f"| {float(r['tau']):g}{mark} | {'—' if dep is None else f'{100 * dep:.1f}%'} | "
            f"{float(r['mean_avg_bsld']):.2f} | {float(r['geo_ratio']):.3f} "
            f"[{float(r['ci_low']):.3f}, {float(r['ci_high']):.3f}] | "
            f"{r['wins']}/{sel['windows']} |"
        )
    return lines
