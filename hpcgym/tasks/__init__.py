"""Decision tasks: the questions an agent answers inside the hpcgym engine.

A task is an object (:class:`DecisionTask`) that says where in the engine's loop the agent
decides, what it sees (rows and columns), what it may do (action space and mask), what a
step pays (penalties; the terminal reward against a reference scheduler is the generic
env's) and what the compiled batch step needs. One generic env,
:class:`hpcgym.envs.generic_env.TaskEnv`, plays any registered task; ``hpcgym/Backfill-v0``
(:class:`BackfillTask`) and ``hpcgym/Schedule-v0`` (:class:`ScheduleTask`) are two::

    import gymnasium as gym
    import hpcgym
    from hpcgym.tasks import get_task, list_tasks

    list_tasks()                            # ('backfill', 'schedule', ...)
    get_task("schedule").env_id             # 'hpcgym/Schedule-v0'
    env = gym.make("hpcgym/Schedule-v0", trace="SDSC-SP2")

How to add a task
-----------------

1. Write one module with a subclass of :class:`DecisionTask`: set ``name``, ``env_id``,
   ``decision_event`` (the engine's stop: :class:`hpcgym.sim.engine.Event`), ``columns``
   (in the constructor, which takes and validates the task's own env arguments, listed in
   ``options``), and implement :meth:`~DecisionTask.queue_setup` (the agent's queue and
   the reference), :meth:`~DecisionTask.make_simulation`, :meth:`~DecisionTask.observe`,
   :meth:`~DecisionTask.apply` and :meth:`~DecisionTask.fallback_action`. Override
   :meth:`~DecisionTask.action_space` for anything but "one action per row" (a binary
   accept/reject decision: ``Discrete(2)``, the base policy's pick in row 0).
2. Decorate the class with :func:`register_task` (or call it): the task is then listed by
   :func:`list_tasks`, found by :func:`get_task` and ``--task NAME``, and its Gymnasium
   id is registered with the generic env (``gym.make(env_id, **kwargs)``: the common
   arguments of :class:`~hpcgym.envs.generic_env.TaskEnv` plus the task's ``options``) and
   the generic vector env (``gym.make_vec``, stepping sub-envs in Python unless the task
   has a compiled ``kernel``).
3. Import the module here so that ``import hpcgym`` registers it; write its docs page and
   tests (the env checkers of Gymnasium and SB3 on defaults, the vector env).
"""

from __future__ import annotations

# the built-in tasks register themselves (hpcgym.tasks.registry) on import
from hpcgym.tasks.backfill import BackfillTask
from hpcgym.tasks.base import COMMON_OPTIONS, DecisionTask, QueueSetup, Rows
from hpcgym.tasks.registry import (
    DEFAULT_TASK,
    card_task,
    get_task,
    list_tasks,
    register_envs,
    register_task,
    task_for_env_id,
)
from hpcgym.tasks.schedule import ScheduleTask

# isort: split
from hpcgym.tasks.inspect import InspectTask  # registered after the first two

__all__ = [
    "COMMON_OPTIONS",
    "DEFAULT_TASK",
    "BackfillTask",
    "DecisionTask",
    "InspectTask",
    "QueueSetup",
    "Rows",
    "ScheduleTask",
    "card_task",
    "get_task",
    "list_tasks",
    "register_envs",
    "register_task",
    "task_for_env_id",
]
