"""The order of the queue, ``hpcgym/Schedule-v0`` (RLScheduler's decision).

At every scheduling pass with a choice the agent picks the next head among the waiting
jobs; the engine starts it, or reserves for it and backfills with ``backfill``. The env's
specification (spaces, columns, rewards) is :class:`hpcgym.envs.schedule_env.ScheduleEnv`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hpcgym.envs._args import _choice
from hpcgym.envs.informed_rows import (
    INFORMED_COLUMNS,
    ROW_SETS,
    EpisodeHistory,
    TraceHistory,
    build_informed,
    default_row_predictor,
    parse_history,
)
from hpcgym.envs.queue_observation import QUEUE_COLUMNS, QueueFeatures, build_queue
from hpcgym.sim.engine import Event, Simulation, policy_id
from hpcgym.sim.references import deployable_policy, reference_policy, starvation_threshold
from hpcgym.tasks.base import Buffers, DecisionTask, QueueSetup, Rows
from hpcgym.tasks.registry import register_task

if TYPE_CHECKING:
    from hpcgym.envs.batch import BatchState
    from hpcgym.envs.generic_env import TaskEnv
    from hpcgym.sim.view import EngineView
    from hpcgym.workload.core import Workload

__all__ = ["BACKFILLERS", "KERNEL_QUEUE", "ScheduleTask"]

#: backfilling inside the env: name -> (engine backfill, named scheduler of the reference)
BACKFILLERS: dict[str, tuple[str, str]] = {
    "sjbf": ("sjbf", "EASY-SJBF"),
    "easy": ("easy", "EASY"),
    "none": ("none", "NONE"),
}
#: the branch of the compiled batch step (:mod:`hpcgym.envs.batch`)
KERNEL_QUEUE = 1


@register_task
class ScheduleTask(DecisionTask):
    """Which waiting job becomes the head (``Discrete(K)``: row ``i``).

    :param order: the row order's policy (``None``: the trace's reference's)
    :param backfill: ``sjbf`` (EASY-SJBF), ``easy`` or ``none``
    :param commit_head: a chosen head keeps its place until it starts
    :param rows: ``default`` (16 columns) or ``informed`` (24)
    :param row_predictor: the informed rows' predictor (``None``: log-ridge warmed on the log)
    :param row_history: the informed rows' log before the window (``"log"``, N jobs, 0)
    """

    name = "schedule"
    env_id = "hpcgym/Schedule-v0"
    env_entry_point = "hpcgym.envs.schedule_env:ScheduleEnv"
    vector_entry_point = "hpcgym.envs.vector:ScheduleVectorEnv"
    summary = "choose the next head of the queue among the waiting jobs"
    decision_event = Event.QUEUE
    orders_queue = True
    default_reference = "default"
    board = "schedule"
    kernel = KERNEL_QUEUE
    options: ClassVar[tuple[str, ...]] = (
        "order",
        "backfill",
        "commit_head",
        "rows",
        "row_predictor",
        "row_history",
    )

    def __init__(
        self,
        order: str | None = None,
        backfill: str = "sjbf",
        commit_head: bool = False,
        rows: str = "default",
        row_predictor: str | Any | None = None,
        row_history: int | str | None = None,
    ) -> None:
        self.backfill = _choice("backfill", str(backfill).lower(), BACKFILLERS)
        self.rows = _choice("rows", rows, ROW_SETS)
        self.informed = self.rows == "informed"
        if not self.informed and (row_predictor is not None or row_history is not None):
            raise ValueError("row_predictor and row_history apply to rows='informed' only")
        self.warmup = parse_history("log" if row_history is None else row_history)
        self.engine_backfill, self.named_backfill = BACKFILLERS[self.backfill]
        self.order_arg = order
        #: the row order's policy (set on the trace: ``queue_setup``)
        self.order = "" if order is None else str(order).upper()
        self.order_id = 0
        self.commit_head = bool(commit_head)
        self.feature_predictor = (
            (row_predictor or default_row_predictor(self.warmup)) if self.informed else None
        )
        self.columns = QUEUE_COLUMNS + (tuple(INFORMED_COLUMNS) if self.informed else ())
        #: the accounting log of the informed rows (per trace; ``setup``)
        self.history: TraceHistory | None = None
        self.tau = 0.0
        self._new_episode()

    def _new_episode(self) -> None:
        #: the users' columns of the episode
        self.qf: QueueFeatures | None = None
        #: the informed rows' history of the episode
        self.eh: EpisodeHistory | None = None
        #: the row order's scratch
        self.order_buf = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------- set-up
    def queue_setup(
        self, workload: Workload, label: str | None, starvation: float | str | None, reference: Any
    ) -> QueueSetup:
        """The row order (the trace's deployable reference's, or the strongest order
        without a guard with ``reference="unguarded"``), the starvation guard of Carastan-
        Santos et al. (``"default"``, ``"platform"``) and the reference of
        ``"default"``/``"unguarded"``: the env's order with its ``backfill``."""
        special = reference.strip().lower() if isinstance(reference, str) else None
        guarded = special != "unguarded"
        order = str(
            self.order_arg or (deployable_policy(label) if guarded else reference_policy(label))
        )
        policy_id(order)  # validates the name
        self.order = order.upper()
        if special in ("default", "unguarded"):
            reference = f"ENV+{self.named_backfill}"  # the env's order and starvation rule
        platform = starvation == "platform" or (starvation == "default" and guarded)
        if starvation == "default" and not guarded:
            starvation = None
        if platform:  # the thesis's guard: 3 x the platform's largest allowed run time
            starvation = starvation_threshold(workload)
        return QueueSetup(self.order, starvation, reference)

    def setup(self, env: TaskEnv) -> None:
        if self.informed and self.history is None:
            self.history = TraceHistory(env.workload, self.warmup)
        self.order_id = policy_id(self.order)
        self.tau = 10.0 if env.time_scale == "log" else 0.0

    def fallback_action(self, max_queue: int) -> int:
        """Row 0: the reference policy's choice."""
        return 0

    def spawn(self) -> ScheduleTask:
        twin = super().spawn()
        assert isinstance(twin, ScheduleTask)
        twin._new_episode()
        return twin

    # ------------------------------------------------------------ episode
    def make_simulation(self, env: TaskEnv, window: Workload, seed: int) -> Simulation:
        sp = env.agent_scheduler
        self.qf = QueueFeatures(window.user, window.runtime, window.request)
        self.order_buf = np.zeros(len(window), dtype=np.int64)
        if self.history is not None:
            start = int(window.offset - env.workload.offset)
            self.eh = EpisodeHistory(self.history, start, window)
        return Simulation(
            window,
            policy="external",
            backfill=self.engine_backfill,
            estimate=sp._estimator(),
            correction=sp.correction,
            starvation=sp.starvation,
            rest_order=self.order,
            commit_head=self.commit_head,
            seed=seed,
            rank_estimate=sp._rank_estimator(),
        )

    def observe(self, env: TaskEnv, sim: Simulation, out: Buffers | None) -> Rows:
        assert self.qf is not None
        order = sim.policy_order(self.order)
        if self.eh is not None:  # rows="informed"
            return build_informed(
                sim.view, order, len(order), self.qf, self.eh, env.predictions,
                env.est_scale, env.wait_scale, env.max_queue, out, self.tau,
            )  # fmt: skip
        return build_queue(
            sim.view, order, len(order), self.qf, env.est_scale, env.wait_scale,
            env.max_queue, out, self.tau,
        )  # fmt: skip

    def apply(self, sim: Simulation, rows: np.ndarray, action: int) -> bool:
        sim.choose(int(rows[action]))
        return False

    def decisions(self, view: EngineView) -> int:
        """The queue decisions so far."""
        return int(view.queue_decisions)

    def invalid_message(self, action: Any, valid: list[int]) -> str:
        return (
            f"invalid action {action!r}: valid actions now are {valid} (rows with a waiting "
            "job). Use info['action_mask'] or env.get_wrapper_attr('action_masks')(), or the "
            "default invalid_action='stop' to turn invalid actions into row 0."
        )

    def render(self, env: TaskEnv) -> str:
        view = env.simulation.view
        lines = [
            f"t={view.now:.0f}s free={view.free}/{view.machine_size} waiting={view.n_waiting} "
            f"running={view.n_running}"
        ]
        state = env.state
        mask: np.ndarray | list[bool] = state.mask[: state.count] if state.at_decision else []
        for r in np.flatnonzero(mask):
            j = int(state.rows[r])
            lines.append(
                f"  row {r:3d}: job {j} procs={int(view.procs[j])} "
                f"est={view.estimate[j]:.0f}s wait={view.now - view.submit[j]:.0f}s"
            )
        return "\n".join(lines)

    def describe(self) -> str:
        return f"backfill={self.backfill!r}, order={self.order!r}"

    # ------------------------------------------------------ compiled batch
    def batch_problem(self, env: TaskEnv) -> str | None:
        if self.rows != "default":
            return (
                f"rows={self.rows!r} (their history is kept in Python and the compiled step "
                "builds the default rows only): use the vector env's Python step, compiled=False"
            )
        return None

    def batch_bind(self, batch: BatchState, i: int) -> None:
        """Move the row order's scratch and the users' columns into slot ``i``."""
        qf = self.qf
        assert qf is not None
        batch.order_id[i] = self.order_id
        nu = qf.hist.shape[0]
        batch.ORDER[i] = self.order_buf
        self.order_buf = batch.ORDER[i]
        batch.QUSER[i] = qf.user
        batch.QRATIO[i] = qf.ratio
        batch.QHIST[i] = 0.0
        batch.QHIST[i, :nu] = qf.hist
        batch.QCOUNT[i] = 0
        batch.QCOUNT[i, :nu] = qf.count
        batch.QSCRATCH[i] = 0
        batch.QSCRATCH[i, :, :nu] = qf.scratch
        batch.QPOP[i] = qf.pop
        batch.QSEEN[i] = qf.seen
        qf.user, qf.ratio = batch.QUSER[i], batch.QRATIO[i]
        qf.hist, qf.count = batch.QHIST[i, :nu], batch.QCOUNT[i]
        qf.scratch, qf.pop, qf.seen = batch.QSCRATCH[i], batch.QPOP[i], batch.QSEEN[i]

    def batch_reset(self, batch: BatchState, i: int) -> None:
        """The users of the compiled reset's window."""
        qf = self.qf
        assert qf is not None
        qf.n_users = nu = int(batch.NUSERS[i])
        qf.hist = batch.QHIST[i, :nu]

    # ---------------------------------------------- evaluation and training
    @classmethod
    def queue_policy(cls, policy: str, trace: str | None) -> str:
        """The env's row order: ``policy`` unless FCFS (the default), else the trace's
        deployable reference's (:func:`hpcgym.sim.references.schedule_order`)."""
        from hpcgym.sim.references import schedule_order

        return schedule_order(policy, trace)

    @classmethod
    def reference_starvation(cls, trace: str | None) -> float | None:
        """The starvation guard of the env's queue: 3 x the platform's largest run time."""
        from hpcgym.workload import load, trace_spec

        return starvation_threshold(load(trace_spec(trace) if trace else None))

    @classmethod
    def card_keys(cls, config: Mapping[str, Any], trace: str | None) -> dict[str, Any]:
        """``task``, the row order as ``policy``, mode ``schedule`` and the informed rows'
        options."""
        order = cls.queue_policy(config.get("policy"), trace)  # type: ignore[arg-type]
        out = {"task": cls.name, "policy": order, "mode": cls.name}
        if config.get("rows", "default") != "default":  # the informed rows: 24 columns
            out["rows"] = config["rows"]
            for key in ("row_predictor", "row_history"):
                if config.get(key) is not None:
                    out[key] = config[key]
        return out

    @classmethod
    def card_env(cls, env: dict[str, Any], card: Mapping[str, Any]) -> dict[str, Any]:
        """The card's row order (its ``policy``) as ``order``."""
        out = super().card_env(env, card)
        out["order"] = str(card["policy"]).upper()
        return out

    @classmethod
    def env_kwargs(cls, kwargs: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """Backfill-v0's arguments dropped; the row order of ``config["policy"]``."""
        from hpcgym.workload import trace_spec

        drop = ("policy", "mode", "feature_predictor", "features", "violation_penalty")
        out = {k: v for k, v in kwargs.items() if k not in drop}
        spec = trace_spec(config.get("trace"))
        trace = None if spec is None else str(spec)
        out["order"] = cls.queue_policy(config.get("policy", "FCFS"), trace)
        if config.get("rows", "default") != "default":  # the informed rows
            out["rows"] = config["rows"]
            for key in ("row_predictor", "row_history"):
                if config.get(key) is not None:
                    out[key] = config[key]
        return out

    @classmethod
    def agent_env(cls, policy: str | None, mode: str, max_queue: int | None) -> dict[str, Any]:
        env: dict[str, Any] = {"task": cls.name, "max_queue": max_queue}
        if policy is not None:
            env["order"] = policy.upper()
        return env
