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
    "TASKS",
    "register_envs",
    "task_env",
]

#: Gymnasium id of :class:`BackfillEnv`
BACKFILL_ENV_ID = "hpcgym/Backfill-v0"
#: Gymnasium id of :class:`ScheduleEnv`
SCHEDULE_ENV_ID = "hpcgym/Schedule-v0"

#: the tasks: name -> (Gymnasium id, env entry point, vector env entry point)
TASKS: dict[str, tuple[str, str, str]] = {
    "backfill": (
        BACKFILL_ENV_ID,
        "hpcgym.envs.backfill_env:BackfillEnv",
        "hpcgym.envs.vector:BackfillVectorEnv",
    ),
    "schedule": (
        SCHEDULE_ENV_ID,
        "hpcgym.envs.schedule_env:ScheduleEnv",
        "hpcgym.envs.vector:ScheduleVectorEnv",
    ),
}


def task_env(task: str, vector: bool = False) -> Any:
    """The env class of ``task`` (``backfill`` or ``schedule``), or its vector env class.

    :raises ValueError: an unknown task, with the valid ones
    """
    import importlib

    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid choices: {', '.join(TASKS)}")
    module, _, name = TASKS[task][2 if vector else 1].partition(":")
    return getattr(importlib.import_module(module), name)


def register_envs() -> None:
    """Register the hpcgym envs with Gymnasium (idempotent)."""
    import gymnasium

    for env_id, entry, vector in TASKS.values():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id, entry_point=entry, vector_entry_point=vector, disable_env_checker=False
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
