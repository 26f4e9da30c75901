"""Gymnasium environments of hpcgym.

Importing this package registers ``hpcgym/Backfill-v0`` (:class:`BackfillEnv`) with
Gymnasium; :func:`register_envs` is also the ``gymnasium.envs`` entry point declared
in ``pyproject.toml`` (loaded automatically by Gymnasium < 1.0). The env class is
imported lazily, so registering costs no simulator import::

    import gymnasium as gym
    import hpcgym  # or: gym.make("hpcgym:hpcgym/Backfill-v0", ...)

    env = gym.make("hpcgym/Backfill-v0", trace="SDSC-SP2")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpcgym.envs.backfill_env import BackfillEnv

__all__ = ["BACKFILL_ENV_ID", "BackfillEnv", "register_envs"]

#: Gymnasium id of :class:`BackfillEnv`
BACKFILL_ENV_ID = "hpcgym/Backfill-v0"


def register_envs() -> None:
    """Register the hpcgym envs with Gymnasium (idempotent)."""
    import gymnasium

    if BACKFILL_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            id=BACKFILL_ENV_ID,
            entry_point="hpcgym.envs.backfill_env:BackfillEnv",
            disable_env_checker=False,
        )


def __getattr__(name: str) -> Any:
    if name == "BackfillEnv":
        from hpcgym.envs.backfill_env import BackfillEnv

        return BackfillEnv
    raise AttributeError(f"module 'hpcgym.envs' has no attribute {name!r}")


register_envs()
