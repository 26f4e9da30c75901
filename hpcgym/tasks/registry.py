"""The registry of decision tasks: :func:`register_task`, :func:`get_task`, :func:`list_tasks`.

Registering a task also registers its Gymnasium id (:func:`register_envs`), with the
task's env class as entry point, or the generic :class:`~hpcgym.envs.generic_env.TaskEnv`
(``task=NAME``) when the task has none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpcgym.suggest import did_you_mean

if TYPE_CHECKING:
    from hpcgym.tasks.base import DecisionTask

__all__ = [
    "DEFAULT_TASK",
    "card_task",
    "get_task",
    "list_tasks",
    "register_envs",
    "register_task",
    "task_for_env_id",
]

#: the task of a model card, run or method that names none (they predate tasks)
DEFAULT_TASK = "backfill"

_TASKS: dict[str, type[DecisionTask]] = {}

#: the generic env and vector env of a task without its own classes
GENERIC_ENV = "hpcgym.envs.generic_env:TaskEnv"
GENERIC_VECTOR_ENV = "hpcgym.envs.vector:TaskVectorEnv"


def register_task(cls: type[DecisionTask], *, replace: bool = False) -> type[DecisionTask]:
    """Register a :class:`~hpcgym.tasks.base.DecisionTask` subclass under its ``name``
    and its Gymnasium id under ``env_id`` (usable as a class decorator).

    :param replace: replace a task registered under the same name (else an error)
    :raises ValueError: the name or the Gymnasium id is taken, or missing
    :return: ``cls``
    """
    name = str(getattr(cls, "name", "") or "").strip().lower()
    env_id = getattr(cls, "env_id", None)
    if not name or not env_id:
        raise ValueError(f"{cls.__name__}: a task needs a name and an env_id")
    if name in _TASKS and _TASKS[name] is not cls and not replace:
        raise ValueError(f"a task named {name!r} is registered already: pass replace=True")
    for other in _TASKS.values():
        if other.env_id == env_id and other.name != name:
            raise ValueError(f"{env_id!r} is the Gymnasium id of the task {other.name!r}")
    _TASKS[name] = cls
    _register_env(cls, replace)
    return cls


def get_task(name: str) -> type[DecisionTask]:
    """The task class registered as ``name`` (case-insensitive).

    :raises ValueError: an unknown name, with the valid choices and the nearest
    """
    key = str(name).strip().lower()
    if key not in _TASKS:
        hint = did_you_mean(key, _TASKS)
        raise ValueError(f"unknown task {name!r}{hint}; valid choices: {', '.join(_TASKS)}")
    return _TASKS[key]


def card_task(data: Any) -> type[DecisionTask]:
    """The task of a model card's data, a run's configuration or an agent's env arguments
    (their ``task``; :data:`DEFAULT_TASK` without one).

    :param data: a mapping with an optional ``task``
    """
    return get_task((data or {}).get("task") or DEFAULT_TASK)


def list_tasks() -> tuple[str, ...]:
    """The registered task names, in registration order."""
    return tuple(_TASKS)


def task_for_env_id(env_id: str) -> type[DecisionTask]:
    """The task whose Gymnasium id is ``env_id`` (``"hpcgym/Schedule-v0"``).

    :raises ValueError: no task has that id
    """
    for cls in _TASKS.values():
        if cls.env_id == env_id:
            return cls
    ids = [c.env_id for c in _TASKS.values()]
    hint = did_you_mean(env_id, ids)
    raise ValueError(f"no task has the env id {env_id!r}{hint}; valid choices: {', '.join(ids)}")


def _register_env(cls: type[DecisionTask], replace: bool = False) -> None:
    import gymnasium

    if cls.env_id in gymnasium.registry and not replace:
        return
    own = cls.env_entry_point is not None
    gymnasium.register(
        id=cls.env_id,
        entry_point=cls.env_entry_point or GENERIC_ENV,
        vector_entry_point=cls.vector_entry_point or GENERIC_VECTOR_ENV,
        kwargs={} if own else {"task": cls.name},
        disable_env_checker=False,
    )


def register_envs() -> None:
    """Register the Gymnasium id of every registered task (idempotent)."""
    for cls in _TASKS.values():
        _register_env(cls)
