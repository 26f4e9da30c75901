"""Agent loaders: how evaluation gets agent objects without importing the agents package.

An agent loader is a function ``loader(spec) -> policy``: ``spec`` is a heuristic name
(``easy``, ``sjbf``, ``stop``, ``random``, ``first``), a model ``.zip`` path or the model
card ``.json`` of a gated agent (:mod:`hpcgym.evaluation.gating`), the result has SB3's
``predict``. Callers pass one in (``agent_loader=...``); the agents package that
ships with hpcgym declares its loader in the entry-point group :data:`AGENT_LOADER_GROUP`,
which :func:`resolve_agent_loader` reads (``hpcgym compare --agents`` uses it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from hpcgym.evaluation.play import Policy

__all__ = [
    "AGENT_LOADER_GROUP",
    "AgentLoader",
    "LoaderUnavailable",
    "default_agents_dir",
    "resolve_agent_loader",
    "resolve_agent_name",
]

#: Turns an agent spec (heuristic name or model ``.zip`` path) into a :class:`Policy`.
AgentLoader = Callable[[str], Policy]
#: Entry-point group of the installed agent loaders (``default`` is the one used).
AGENT_LOADER_GROUP = "hpcgym.agent_loaders"


class LoaderUnavailable(ValueError):
    """No agent loader is installed under the asked name."""


def resolve_agent_loader(name: str = "default") -> AgentLoader:
    """The agent loader installed under ``name`` in the entry-point group
    :data:`AGENT_LOADER_GROUP`.

    :param name: the entry point's name
    :raises LoaderUnavailable: no such loader is installed (the message says what to do)
    """
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group=AGENT_LOADER_GROUP)}
    if name not in found:
        have = ", ".join(sorted(found)) or "none"
        raise LoaderUnavailable(
            f"no agent loader {name!r} in the entry-point group {AGENT_LOADER_GROUP!r} "
            f"(installed: {have}): install hpcgym with its agents (pip install -e . in the "
            "checkout), or evaluate agents with python eval/compare.py"
        )
    return found[name].load()  # type: ignore[no-any-return]


def default_agents_dir() -> Path | None:
    """The shipped agents' folder of the installed agent loader: the ``pretrained_dir()``
    of the loader's module, or ``None`` without a loader or such a function."""
    try:
        loader = resolve_agent_loader()
    except LoaderUnavailable:
        return None
    folder = getattr(sys.modules.get(loader.__module__), "pretrained_dir", None)
    return Path(folder()) if callable(folder) else None


def resolve_agent_name(name: str) -> tuple[str | None, str | None]:
    """What the installed agent loader's package makes of an agent name: ``(zoo name,
    replacement)``. The zoo name is set when ``name`` is a zoo agent, an alias or a zoo
    agent's ``trained_as`` name (the module's ``resolve_name``); the replacement when
    ``name`` is an agent that left the zoo (the module's ``retired_agents``). Both are
    ``None`` without a loader or when the name means nothing to it.

    :param name: an agent name as a user types it
    """
    try:
        loader = resolve_agent_loader()
    except LoaderUnavailable:
        return None, None
    module = sys.modules.get(loader.__module__)
    resolve = getattr(module, "resolve_name", None)
    retired = getattr(module, "retired_agents", None)
    zoo = resolve(name) if callable(resolve) else None
    replacement = None if zoo or not callable(retired) else retired().get(name.lower())
    return zoo, replacement
