"""The backfilling decision, ``hpcgym/Backfill-v0`` (RLBackfilling, paper 004 §3).

At a decision point the queue's head is blocked with a reservation at its shadow time; the
agent starts one of the *candidates* now (a waiting job the ``mode`` allows) or STOPs
backfilling until the next event. The env's specification (spaces, columns, rewards) is
:class:`hpcgym.envs.backfill_env.BackfillEnv`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces

from hpcgym.envs import observation as FT
from hpcgym.envs._args import _choice
from hpcgym.envs.features import FEATURE_SETS, EpisodeFeatures, TraceContext, has_extended
from hpcgym.sim.engine import Event
from hpcgym.tasks.base import Buffers, DecisionTask, QueueSetup, Rows
from hpcgym.tasks.registry import register_task

if TYPE_CHECKING:
    from hpcgym.envs.batch import BatchState
    from hpcgym.envs.generic_env import TaskEnv
    from hpcgym.sim.engine import Simulation
    from hpcgym.workload.core import Workload

__all__ = ["KERNEL_BACKFILL", "MODES", "BackfillTask"]

#: candidate modes: name -> engine candidate mode
MODES: dict[str, str] = {"guarded": "easy", "penalized": "fit", "free": "fit"}
#: the branch of the compiled batch step (:mod:`hpcgym.envs.batch`)
KERNEL_BACKFILL = 0


@register_task
class BackfillTask(DecisionTask):
    """Which waiting job to backfill now, or STOP (``Discrete(K + 1)``, ``K`` = STOP).

    :param policy: the base queue policy (``hpcgym.sim.POLICIES``)
    :param mode: the candidates: ``guarded`` (what EASY allows), ``penalized`` (every job
        that fits; a start that delays the reservation earns ``violation_penalty``) or
        ``free`` (the same, no penalty)
    :param violation_penalty: the reward of a delaying start in ``penalized`` mode (<= 0)
    :param feature_predictor: predictor of the ``prediction`` column, or ``None``
    :param features: ``paper`` or ``extended`` / ``extended-log`` (14 more columns)
    """

    name = "backfill"
    env_id = "hpcgym/Backfill-v0"
    env_entry_point = "hpcgym.envs.backfill_env:BackfillEnv"
    vector_entry_point = "hpcgym.envs.vector:BackfillVectorEnv"
    summary = "start a backfill candidate now, or STOP backfilling until the next event"
    decision_event = Event.DECISION
    default_reference = "ENV+EASY-SJBF"
    board = "backfill"
    kernel = KERNEL_BACKFILL
    options: ClassVar[tuple[str, ...]] = (
        "policy",
        "mode",
        "violation_penalty",
        "feature_predictor",
        "features",
    )

    def __init__(
        self,
        policy: str = "FCFS",
        mode: str = "guarded",
        violation_penalty: float = -1.0,
        feature_predictor: Any = None,
        features: str = "paper",
    ) -> None:
        self.policy = str(policy)
        self.mode = _choice("mode", mode, MODES)
        if not np.isfinite(violation_penalty) or violation_penalty > 0:
            raise ValueError(
                f"violation_penalty must be a finite number <= 0, got {violation_penalty}"
            )
        self.violation_penalty = float(violation_penalty)
        self.feature_predictor = feature_predictor
        self.features = _choice("features", features, FEATURE_SETS)
        self.extended = has_extended(self.features)
        self.columns = FT.column_names(feature_predictor is not None, self.extended)
        #: the trace's context of the extended columns (``setup``)
        self.context: TraceContext | None = None
        self._new_episode()

    def _new_episode(self) -> None:
        #: row-builder scratch, one entry per job of the window
        self.pos = np.zeros(0, dtype=np.int64)
        #: the extended columns' episode state
        self.ext: EpisodeFeatures | None = None

    @property
    def variant(self) -> str:
        """The candidate mode (a model card's ``mode``)."""
        return self.mode

    # ------------------------------------------------------------- set-up
    def queue_setup(
        self, workload: Workload, label: str | None, starvation: float | str | None, reference: Any
    ) -> QueueSetup:
        return QueueSetup(self.policy, starvation, reference)

    def setup(self, env: TaskEnv) -> None:
        if self.extended and self.context is None:
            self.context = TraceContext(env.workload, log=self.features == "extended-log")
        if self.ext is not None:
            self.ext.ctx = self.context

    def action_space(self, max_queue: int) -> spaces.Discrete:
        return spaces.Discrete(max_queue + 1)

    @classmethod
    def fits_spaces(cls, rows: int, columns: int, actions: int) -> bool:
        """``Discrete(K + 1)`` over ``K`` rows: the last action is STOP."""
        return actions == rows + 1

    def fallback_action(self, max_queue: int) -> int:
        """STOP."""
        return max_queue

    def spawn(self) -> BackfillTask:
        twin = super().spawn()
        assert isinstance(twin, BackfillTask)
        twin.context = self.context  # shared, read-only (copying drops it: __getstate__)
        twin._new_episode()
        return twin

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["context"] = None  # rebuilt from the workload (setup)
        return state

    # ------------------------------------------------------------ episode
    def make_simulation(self, env: TaskEnv, window: Workload, seed: int) -> Simulation:
        """The agent's scheduler with external backfilling."""
        self.pos = np.zeros(len(window), dtype=np.int64)
        return env.agent_scheduler.make_simulation(
            window, seed, backfill="external", candidates=MODES[self.mode]
        )

    def begin_episode(self, env: TaskEnv, sim: Simulation, start: int) -> None:
        if self.context is not None:
            self.ext = EpisodeFeatures(self.context, sim, start, env.max_queue)

    def observe(self, env: TaskEnv, sim: Simulation, out: Buffers | None) -> Rows:
        return FT.build(
            sim.view,
            self.pos,
            env.predictions,
            env.est_scale,
            env.wait_scale,
            env.max_queue,
            len(self.columns),
            out,
            self.ext,
            env.time_scale,
        )

    def apply(self, sim: Simulation, rows: np.ndarray, action: int) -> bool:
        if action < rows.shape[0]:
            return sim.backfill(int(rows[action]))
        sim.stop()
        return False

    def step_reward(self, violation: bool) -> float:
        return self.violation_penalty if violation and self.mode == "penalized" else 0.0

    def invalid_message(self, action: Any, valid: list[int]) -> str:
        return (
            f"invalid action {action!r}: valid actions now are {valid} (rows with a candidate; "
            f"{valid[-1]} = STOP). Use info['action_mask'] or "
            "env.get_wrapper_attr('action_masks')(), or the default invalid_action='stop' "
            "to turn invalid actions into STOP."
        )

    def render(self, env: TaskEnv) -> str:
        from hpcgym.envs.render import render_ansi

        return render_ansi(env)

    def describe(self) -> str:
        return f"mode={self.mode!r}, policy={self.policy.upper()!r}"

    # ------------------------------------------------------ compiled batch
    def batch_problem(self, env: TaskEnv) -> str | None:
        if self.ext is not None:
            return "extended features (their state is kept in Python)"
        return None

    def batch_bind(self, batch: BatchState, i: int) -> None:
        """Move the episode's row-builder scratch into slot ``i`` of ``batch``."""
        batch.POS[i] = self.pos
        self.pos = batch.POS[i]

    # ---------------------------------------------- evaluation and training
    @classmethod
    def env_kwargs(cls, kwargs: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        drop = ("order", "backfill", "commit_head", "rows", "row_predictor", "row_history")
        return {k: v for k, v in kwargs.items() if k not in drop}

    @classmethod
    def card_env(cls, env: dict[str, Any], card: Mapping[str, Any]) -> dict[str, Any]:
        """The card's env entries this env takes (no ``task``: the default task's cards
        predate tasks)."""
        out = super().card_env(env, card)
        del out["task"]
        return out

    @classmethod
    def mode_label(cls, mode: str) -> str:
        """The candidate mode."""
        return mode

    @classmethod
    def agent_env(cls, policy: str | None, mode: str, max_queue: int | None) -> dict[str, Any]:
        return {"policy": (policy or "FCFS").upper(), "mode": mode, "max_queue": max_queue}
