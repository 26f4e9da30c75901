"""hpcgym agents (installed as ``hpcgym_agents``; the folder is ``agents/``).

The RLBackfilling kernel policy for ``MaskablePPO`` (:class:`KernelPolicy`), heuristic
agents with SB3's ``predict`` (:class:`EasyAgent`, :class:`SJBFAgent`, :class:`StopAlways`,
:class:`RandomValid`, :class:`FirstValid`), the gated agent that departs from a heuristic
only where its model is confident (:class:`GatedAgent`) and :func:`load_agent`, which
turns a name or an agent file into such an object.

:class:`KernelPolicy` needs the ``train`` extra (torch, stable-baselines3, sb3-contrib); it
is imported lazily so that the heuristic agents work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpcgym_agents.easy import EasyAgent, SJBFAgent
from hpcgym_agents.gated import GatedAgent
from hpcgym_agents.heuristic import FirstValid, HeuristicAgent, RandomValid, StopAlways
from hpcgym_agents.loading import (
    ALIASES,
    HEURISTICS,
    load_agent,
    load_model,
    pretrained_agents,
    pretrained_dir,
)

if TYPE_CHECKING:
    from hpcgym_agents.kernel_policy import KernelPolicy

__all__ = [
    "ALIASES",
    "HEURISTICS",
    "EasyAgent",
    "FirstValid",
    "GatedAgent",
    "HeuristicAgent",
    "KernelPolicy",
    "RandomValid",
    "SJBFAgent",
    "StopAlways",
    "load_agent",
    "load_model",
    "pretrained_agents",
    "pretrained_dir",
]


def __getattr__(name: str) -> Any:
    if name == "KernelPolicy":
        from hpcgym_agents.kernel_policy import KernelPolicy

        return KernelPolicy
    raise AttributeError(f"module 'hpcgym_agents' has no attribute {name!r}")
