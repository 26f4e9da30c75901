"""Gymnasium environments of hpcgym.

Importing this package registers ``hpcgym/Backfill-v0`` (:class:`BackfillEnv`, the
backfilling decision) and ``hpcgym/Schedule-v0`` (:class:`ScheduleEnv`, the order of the
queue) with Gymnasium; :func:`register_envs` is also the ``gymnasium.envs`` entry point declared
in ``pyproject.toml`` (loaded automatically by Gymnasium < 1.0). The env class is
imported lazily, so registering costs no simulator import::

    import gymnasium as gym
    import hpcgym  # or: gym.make("hpcgym:hpcgym/Backfill-v0", ...)

    env = gym.make("hpcgym/Backfill-v0", trace="SDSC-SP2")
    envs = gym.make_vec("hpcgym/Backfill-v0", num_envs=16, trace="SDSC-SP2")  # batched

``gym.make_vec`` uses the registered ``vector_entry_point``,
:class:`~hpcgym.envs.vector.BackfillVectorEnv` (``N`` simulations in one process with
batched arrays), by default or with ``vectorization_mode="vector_entry_point"``;
``"sync"`` / ``"async"`` give Gymnasium's wrappers of ``N`` single envs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.envs.schedule_env import ScheduleEnv
    from hpcgym.envs.vector import BackfillVectorEnv, ScheduleVectorEnv

__all__ = [
    "BACKFILL_ENV_ID",
    "SCHEDULE_ENV_ID",
    "BackfillEnv",
    "BackfillVectorEnv",
    "ScheduleEnv",
    "ScheduleVectorEnv",
    "register_envs",
]

#: Gymnasium id of :class:`BackfillEnv`
BACKFILL_ENV_ID = "hpcgym/Backfill-v0"
#: Gymnasium id of :class:`ScheduleEnv`
SCHEDULE_ENV_ID = "hpcgym/Schedule-v0"


def register_envs() -> None:
    """Register the hpcgym envs with Gymnasium (idempotent)."""
    import gymnasium

    if BACKFILL_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            id=BACKFILL_ENV_ID,
            entry_point="hpcgym.envs.backfill_env:BackfillEnv",
            vector_entry_point="hpcgym.envs.vector:BackfillVectorEnv",
            disable_env_checker=False,
        )
    if SCHEDULE_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            id=SCHEDULE_ENV_ID,
            entry_point="hpcgym.envs.schedule_env:ScheduleEnv",
            vector_entry_point="hpcgym.envs.vector:ScheduleVectorEnv",
            disable_env_checker=False,
        )


def __getattr__(name: str) -> Any:
    if name == "BackfillEnv":
        from hpcgym.envs.backfill_env import BackfillEnv

        return BackfillEnv
    if name == "BackfillVectorEnv":
        from hpcgym.envs.vector import BackfillVectorEnv

        return BackfillVectorEnv
    if name == "ScheduleEnv":
        from hpcgym.envs.schedule_env import ScheduleEnv

        return ScheduleEnv
    if name == "ScheduleVectorEnv":
        from hpcgym.envs.vector import ScheduleVectorEnv

        return ScheduleVectorEnv
    raise AttributeError(f"module 'hpcgym.envs' has no attribute {name!r}")


register_envs()
