"""Gymnasium environments of hpcgym.

Importing this package registers the Gymnasium id of every decision task of
:mod:`hpcgym.tasks`: ``hpcgym/Backfill-v0`` (:class:`BackfillEnv`, the backfilling
decision), ``hpcgym/Schedule-v0`` (:class:`ScheduleEnv`, the order of the queue), and any
other registered task (the generic :class:`~hpcgym.envs.generic_env.TaskEnv`).
:func:`register_envs` is also the ``gymnasium.envs`` entry point declared in
``pyproject.toml`` (loaded automatically by Gymnasium < 1.0). The env classes are
imported lazily::

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
    from hpcgym.envs.generic_env import TaskEnv
    from hpcgym.envs.schedule_env import ScheduleEnv
    from hpcgym.envs.vector import BackfillVectorEnv, ScheduleVectorEnv, TaskVectorEnv

__all__ = [
    "BACKFILL_ENV_ID",
    "SCHEDULE_ENV_ID",
    "BackfillEnv",
    "BackfillVectorEnv",
    "ScheduleEnv",
    "ScheduleVectorEnv",
    "TaskEnv",
    "TaskVectorEnv",
    "register_envs",
    "task_env",
]

#: Gymnasium id of :class:`BackfillEnv`
BACKFILL_ENV_ID = "hpcgym/Backfill-v0"
#: Gymnasium id of :class:`ScheduleEnv`
SCHEDULE_ENV_ID = "hpcgym/Schedule-v0"


def _task_table() -> dict[str, tuple[str, str, str]]:
    from hpcgym.tasks import get_task, list_tasks
    from hpcgym.tasks.registry import GENERIC_ENV, GENERIC_VECTOR_ENV

    out = {}
    for name in list_tasks():
        cls = get_task(name)
        out[name] = (
            cls.env_id,
            cls.env_entry_point or GENERIC_ENV,
            cls.vector_entry_point or GENERIC_VECTOR_ENV,
        )
    return out


def task_env(task: str, vector: bool = False) -> Any:
    """The env class of a registered task (:func:`hpcgym.tasks.get_task`), or its vector
    env class. A task without its own env class gets the generic
    :class:`~hpcgym.envs.generic_env.TaskEnv` bound to it (``functools.partial``).

    :raises ValueError: an unknown task, with the valid ones and the nearest
    """
    import functools
    import importlib

    from hpcgym.tasks import get_task

    cls = get_task(task)
    entry = cls.vector_entry_point if vector else cls.env_entry_point
    if entry is None:
        from hpcgym.envs.generic_env import TaskEnv
        from hpcgym.envs.vector import TaskVectorEnv

        return functools.partial(TaskVectorEnv if vector else TaskEnv, task=cls.name)
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def register_envs() -> None:
    """Register the Gymnasium id of every registered task (idempotent)."""
    from hpcgym.tasks import register_envs as _register

    _register()


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
    if name == "TASKS":  # the tasks: name -> (Gymnasium id, env entry, vector env entry)
        import warnings

        warnings.warn(
            "hpcgym.envs.TASKS is deprecated: use hpcgym.tasks.list_tasks() and "
            "hpcgym.tasks.get_task(name) (env_id, env_entry_point, vector_entry_point)",
            FutureWarning,
            stacklevel=2,
        )
        return _task_table()
    if name in ("TaskEnv", "TaskVectorEnv"):
        import importlib

        module = "generic_env" if name == "TaskEnv" else "vector"
        return getattr(importlib.import_module(f"hpcgym.envs.{module}"), name)
    raise AttributeError(f"module 'hpcgym.envs' has no attribute {name!r}")


register_envs()
