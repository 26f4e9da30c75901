"""hpcgym agents: the RLBackfilling kernel policy (``MaskablePPO``) and heuristic agents.

:class:`KernelPolicy` needs the ``train`` extra (torch, stable-baselines3, sb3-contrib); it
is imported lazily so that the heuristic agents work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.easy import EasyAgent, SJBFAgent
from agents.heuristic import FirstValid, HeuristicAgent, RandomValid, StopAlways

if TYPE_CHECKING:
    from agents.kernel_policy import KernelPolicy

__all__ = [
    "EasyAgent",
    "FirstValid",
    "HeuristicAgent",
    "KernelPolicy",
    "RandomValid",
    "SJBFAgent",
    "StopAlways",
]


def __getattr__(name: str) -> Any:
    if name == "KernelPolicy":
        from agents.kernel_policy import KernelPolicy

        return KernelPolicy
    raise AttributeError(f"module 'agents' has no attribute {name!r}")
