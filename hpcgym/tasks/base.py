"""The protocol of a decision task: :class:`DecisionTask`.

A *decision task* is one question the scheduler asks at one point of the engine's loop,
answered by an agent: which waiting job to backfill now (``Backfill-v0``), which job becomes
the queue's head (``Schedule-v0``), whether to accept the base policy's pick... The generic
env (:class:`hpcgym.envs.generic_env.TaskEnv`) does everything that is the same for every task
(the trace and its windows, seeding, the agent's scheduler and the reference, the reward,
the episode's end, infos, pickling, the vector env); the task object says what differs:

============================  =================================================================
the decision point            :attr:`~DecisionTask.decision_event` (the engine's stop),
                              :meth:`~DecisionTask.make_simulation` (the engine of an episode)
rows and columns              :attr:`~DecisionTask.columns`, :meth:`~DecisionTask.observe`
actions and mask              :meth:`~DecisionTask.action_space`, :meth:`~DecisionTask.apply`,
                              :meth:`~DecisionTask.fallback_action` (invalid action, episode end)
reward and reference          :meth:`~DecisionTask.queue_setup` (queue, starvation guard,
                              reference), :meth:`~DecisionTask.step_reward`,
                              :attr:`~DecisionTask.default_reference`
the compiled batch            :attr:`~DecisionTask.kernel`, :meth:`~DecisionTask.batch_problem`
evaluation and training       :attr:`~DecisionTask.board`, :meth:`~DecisionTask.queue_policy`,
                              :meth:`~DecisionTask.card_keys`, :meth:`~DecisionTask.env_kwargs`
============================  =================================================================

One task object belongs to one env (it keeps the episode's scratch: the row order, the
users' columns...); :meth:`~DecisionTask.spawn` makes the twin of a vector env's sub-env.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces

from hpcgym.sim.engine import Event

if TYPE_CHECKING:
    from hpcgym.envs.batch import BatchState
    from hpcgym.envs.generic_env import TaskEnv
    from hpcgym.sim.engine import Simulation
    from hpcgym.sim.view import EngineView
    from hpcgym.workload.core import Workload

__all__ = ["COMMON_OPTIONS", "Buffers", "DecisionTask", "QueueSetup", "Rows"]

#: the env arguments of every task (:class:`hpcgym.envs.generic_env.TaskEnv`)
COMMON_OPTIONS: tuple[str, ...] = (
    "trace", "machine_size", "estimator", "correction", "starvation", "window_length",
    "split", "train_fraction", "validation_fraction", "reference", "objective", "max_queue",
    "invalid_action", "invalid_penalty", "wait_scale", "trace_kwargs", "estimator_kwargs",
    "render_mode", "est_scale", "reward_mode", "load_weighting", "reward_scale", "time_scale",
    "rank_estimator", "rank_estimator_kwargs",
)  # fmt: skip

#: the arrays :meth:`DecisionTask.observe` writes into (a vector env's slices): ``(obs,
#: mask, rows)``
Buffers = tuple[np.ndarray, np.ndarray, np.ndarray]
#: what :meth:`DecisionTask.observe` returns: ``(obs (K, F) float32, mask (A,) bool, rows
#: (K,) int64: the window job of every row or -1, count: the candidates, may exceed K)``
Rows = tuple[np.ndarray, np.ndarray, np.ndarray, int]


@dataclasses.dataclass(frozen=True)
class QueueSetup:
    """The agent's scheduler and the reward's reference on one trace
    (:meth:`DecisionTask.queue_setup`).

    :param policy: the agent's queue policy (the base order of the rows)
    :param starvation: its starvation threshold: seconds, a time such as ``"54h"``,
        ``"auto"`` or ``None``
    :param reference: the reference scheduler of the reward, as
        :func:`hpcgym.envs.reward.resolve_reference` takes it (a name, ``ENV+NAME``, a
        :class:`~hpcgym.sim.schedulers.SchedulerSpec` or ``None``)
    """

    policy: str
    starvation: float | str | None
    reference: Any


class DecisionTask(abc.ABC):
    """One decision an agent makes inside the hpcgym engine (see the module docstring).

    Subclasses set the class attributes and implement the abstract methods; the
    constructor takes the task's own env arguments (validated there, with the valid
    choices in the error), never a workload: what depends on the trace is set up in
    :meth:`queue_setup` and :meth:`setup`.
    """

    # ------------------------------------------------------------ identity
    #: registry name (``get_task(name)``, ``--task NAME``, the ``task`` of a model card)
    name: ClassVar[str]
    #: Gymnasium id (``gymnasium.make(env_id)``)
    env_id: ClassVar[str]
    #: the env class documenting this task's arguments, ``"module:Class"``; ``None``: the
    #: generic :class:`~hpcgym.envs.generic_env.TaskEnv` with ``task=name``
    env_entry_point: ClassVar[str | None] = None
    #: its vector env class, ``"module:Class"``; ``None``: the generic
    #: :class:`~hpcgym.envs.vector.TaskVectorEnv` with ``task=name``
    vector_entry_point: ClassVar[str | None] = None
    #: one line: the question the agent answers
    summary: ClassVar[str] = ""
    #: the engine's stop at which the agent decides (:class:`hpcgym.sim.engine.Event`)
    decision_event: ClassVar[Event]
    #: the agent (not the queue policy) orders the queue: a model card's ``policy`` is
    #: the row order, and measures that assume the policy's own queue do not apply
    orders_queue: ClassVar[bool] = False
    #: the reference scheduler of the reward when the user gives none
    default_reference: ClassVar[str | None] = "ENV+EASY-SJBF"
    #: the leaderboard its agents are ranked on (``hpcgym.evaluation``)
    board: ClassVar[str] = "backfill"
    #: the branch of the compiled batch step (:mod:`hpcgym.envs.batch`) that plays this
    #: task, or ``None``: its vector env steps every sub-env in Python
    kernel: ClassVar[int | None] = None
    #: the env arguments of this task (the generic env takes the others)
    options: ClassVar[tuple[str, ...]] = ()

    #: name of every observation column, in order (set by the constructor)
    columns: tuple[str, ...] = ()
    #: runtime predictor of the rows (a name, an Estimator or ``None``): the env predicts
    #: every job of the window with it (its ``feature_predictions()``)
    feature_predictor: Any = None

    @property
    def variant(self) -> str:
        """The task's variant: the ``mode`` of its model cards and runs' names (default:
        the task's name)."""
        return self.name

    # ------------------------------------------------------------- set-up
    @abc.abstractmethod
    def queue_setup(
        self, workload: Workload, label: str | None, starvation: float | str | None, reference: Any
    ) -> QueueSetup:
        """The agent's queue and the reward's reference on ``workload``.

        :param label: the trace's name (``None`` without one: a synthetic workload)
        :param starvation: the env's ``starvation`` argument
        :param reference: the env's ``reference`` argument (``None``: no reference;
            :attr:`default_reference` when not given)
        """

    def setup(self, env: TaskEnv) -> None:
        """Trace-level state (after the env's common set-up: ``env.workload``, scales);
        called again after unpickling. Default: nothing."""
        return None

    def action_space(self, max_queue: int) -> spaces.Discrete:
        """The env's action space for ``K = max_queue`` rows (default ``Discrete(K)``)."""
        return spaces.Discrete(max_queue)

    def observation_space(self, max_queue: int) -> spaces.Box:
        """The env's observation space: ``Box(0, 1, (K, len(columns)), float32)``."""
        return spaces.Box(0.0, 1.0, (max_queue, len(self.columns)), dtype=np.float32)

    @classmethod
    def fits_spaces(cls, rows: int, columns: int, actions: int) -> bool:
        """Whether a model with ``(rows, columns)`` observations and ``Discrete(actions)``
        plays this task (default: one action per row, ``Discrete(K)``)."""
        return actions == rows

    @abc.abstractmethod
    def fallback_action(self, max_queue: int) -> int:
        """What an invalid action does, and the one valid action of a finished episode."""

    # ------------------------------------------------------------ episode
    @abc.abstractmethod
    def make_simulation(self, env: TaskEnv, window: Workload, seed: int) -> Simulation:
        """The engine of an episode on ``window`` (resets the task's episode scratch)."""

    def begin_episode(self, env: TaskEnv, sim: Simulation, start: int) -> None:
        """After the engine and the predictions of a new episode, before its first
        advance. Default: nothing."""
        return None

    @abc.abstractmethod
    def observe(self, env: TaskEnv, sim: Simulation, out: Buffers | None) -> Rows:
        """The rows of the decision point the engine stopped at (:attr:`decision_event`).

        :param out: the arrays to write into (a vector env's slices), or ``None``: new ones
        """

    @abc.abstractmethod
    def apply(self, sim: Simulation, rows: np.ndarray, action: int) -> bool:
        """Apply valid ``action`` at the decision point (the engine advances after).

        :param rows: the window job of every row
        :return: whether it broke a promise of the engine (a reservation delayed)
        """

    def step_reward(self, violation: bool) -> float:
        """The immediate reward of a step (penalties); default 0."""
        return 0.0

    def decisions(self, view: EngineView) -> int:
        """The episode's decisions so far (``info["decisions"]``)."""
        return int(view.decisions)

    def invalid_message(self, action: Any, valid: list[int]) -> str:
        """The error of ``invalid_action="raise"``."""
        return (
            f"invalid action {action!r}: valid actions now are {valid}. Use "
            "info['action_mask'] or env.get_wrapper_attr('action_masks')()."
        )

    def render(self, env: TaskEnv) -> str:
        """``render_mode="ansi"``: the decision point as text."""
        view = env.simulation.view
        return f"t={view.now:.0f}s free={view.free}/{view.machine_size}"

    def describe(self) -> str:
        """The task's arguments in the env's ``repr``."""
        return f"task={self.name!r}"

    def spawn(self) -> DecisionTask:
        """A twin for another env (same configuration, its own episode scratch)."""
        return copy.copy(self)

    # ------------------------------------------------------ compiled batch
    def batch_problem(self, env: TaskEnv) -> str | None:
        """Why the compiled batch step cannot play ``env``'s configuration of this task
        (``None``: it can). Asked only of a task with a :attr:`kernel`; the batch checks
        the generic parts itself (online predictors, the dense reward). Default: ``None``."""
        return None

    def batch_bind(self, batch: BatchState, i: int) -> None:
        """Move this task's episode scratch into slot ``i`` of ``batch`` (its public
        arrays) and point the task at the slot. Default: nothing."""
        return None

    def batch_reset(self, batch: BatchState, i: int) -> None:
        """After the compiled batch reset slot ``i``: re-read what it set. Default:
        nothing."""
        return None

    # ---------------------------------------------- evaluation and training
    @classmethod
    def queue_policy(cls, policy: str, trace: str | None) -> str:
        """The queue policy that baselines and references of a run with ``--policy
        policy`` are played with (default: ``policy``)."""
        return policy

    @classmethod
    def reference_starvation(cls, trace: str | None) -> float | None:
        """The starvation threshold of the env's own queue on ``trace`` (``ENV+NAME``
        references); default ``None``."""
        return None

    @classmethod
    def card_keys(cls, config: Mapping[str, Any], trace: str | None) -> dict[str, Any]:
        """The task's entries of a model card from a run's configuration (``policy``,
        ``mode``...).

        :param trace: the run's trace, as the trace registry spells it
        """
        return {"policy": config.get("policy", "FCFS"), "mode": config.get("mode", "guarded")}

    @classmethod
    def card_env(cls, env: dict[str, Any], card: Mapping[str, Any]) -> dict[str, Any]:
        """The env arguments of a model card's agent from the card's env entries: those
        this task's env takes, and ``task``."""
        out = {k: v for k, v in env.items() if k in COMMON_OPTIONS or k in cls.options}
        out["task"] = cls.name
        return out

    @classmethod
    def mode_label(cls, mode: str) -> str:
        """The ``mode`` part of a run's name and card, for a run with ``--mode mode``
        (default: the task's name)."""
        return cls.name

    @classmethod
    def env_kwargs(cls, kwargs: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """This task's env arguments from the generic ones of a run (``kwargs``, which may
        hold other tasks' options) and the run's configuration."""
        return dict(kwargs)

    @classmethod
    def column_names(cls, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The observation columns of the env a run's configuration builds."""
        return cls(**{k: config[k] for k in cls.options if config.get(k) is not None}).columns

    @classmethod
    def agent_env(cls, policy: str | None, mode: str, max_queue: int | None) -> dict[str, Any]:
        """The env arguments of an agent without a card (``policy``: its queue, ``None``:
        the task's default)."""
        return {"task": cls.name, "max_queue": max_queue}
