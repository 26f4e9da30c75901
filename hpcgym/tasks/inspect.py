"""The inspection decision, ``hpcgym/Inspect-v0`` (SchedInspector's decision).

A base queue policy schedules; before each start of its pick an inspector accepts it, or
rejects it so that the scheduler waits for the next event. The engine's side is
:mod:`hpcgym.sim.inspection`; the specification of the env is :class:`InspectTask`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces

from hpcgym.envs._args import _choice
from hpcgym.envs.queue_observation import QUEUE_COLUMNS, QueueFeatures, build_queue
from hpcgym.sim.engine import Event, Simulation, policy_id
from hpcgym.sim.inspection import DEFAULT_MAX_REJECTIONS
from hpcgym.sim.references import deployable_policy, starvation_threshold
from hpcgym.tasks.base import COMMON_OPTIONS, Buffers, DecisionTask, QueueSetup, Rows
from hpcgym.tasks.registry import register_task

if TYPE_CHECKING:
    from hpcgym.envs.generic_env import TaskEnv
    from hpcgym.sim.view import EngineView
    from hpcgym.workload.core import Workload

__all__ = ["ACCEPT", "BACKFILLERS", "INSPECT_COLUMNS", "REJECT", "InspectTask"]

#: the actions
ACCEPT, REJECT = 0, 1
#: backfilling of the base scheduler: name -> (engine backfill, named scheduler of the
#: default reference)
BACKFILLERS: dict[str, tuple[str, str]] = {
    "sjbf": ("sjbf", "EASY-SJBF"),
    "easy": ("easy", "EASY"),
    "none": ("none", "NONE"),
}
#: the observation columns: Schedule-v0's queue rows, then the inspector's two
INSPECT_COLUMNS: tuple[str, ...] = (*QUEUE_COLUMNS, "rejections", "queue_urgency")
#: ``queue_urgency``'s half-saturation: bounded slowdown added per hour of waiting, summed
#: over the queue
URGENCY_HALF = 100.0


@register_task
class InspectTask(DecisionTask):
    """Inspect the base scheduler's decisions: accept each start of its pick, or reject it
    and wait (SchedInspector, Zhang, Dai and Xie, HPDC'22).

    ## Description

    A window of ``window_length`` consecutive jobs of a workload trace is scheduled on a
    homogeneous machine by the hpcgym engine (:mod:`hpcgym.sim`) with a *base* scheduler:
    the queue policy ``base`` (any of :data:`hpcgym.sim.engine.POLICIES`) with
    ``backfill`` (EASY-SJBF by default). At every scheduling pass (a job arrived or ended)
    the base policy picks the first job of its order; when the pick fits in the free
    processors the engine is about to start it, and asks the agent first:

    * **accept** (action 0): the pick starts, and the pass goes on exactly as the base
      scheduler's pass: its next pick is inspected in turn; a pick that does not fit is
      reserved for and ``backfill`` fills the machine around it (backfilled jobs are not
      inspected);
    * **reject** (action 1): the pass ends at once -- nothing more starts at this time,
      no backfilling either -- and the scheduler waits for the next event (a job arrival,
      a completion, or a running job reaching its estimate), where a new pass starts and
      its pick (the same job or another by then) is inspected again.

    An agent that always accepts plays the base scheduler exactly (the reward is then 0).

    *The guard* (no livelock, no job held for ever): a decision is asked only when a
    reject is allowed -- when some job is running or is still to arrive (else there would
    be no event to wait for), and when the pick was rejected fewer than
    ``max_rejections`` times. Otherwise the pick starts without a decision. An episode
    therefore has at most (starts of the pick) + ``max_rejections`` x (jobs) steps.

    ## Action Space

    ``Discrete(2)``: 0 accept, 1 reject. Both are valid at every decision
    (:meth:`~hpcgym.envs.generic_env.TaskEnv.action_masks`, bool ``(2,)``; also
    ``info["action_mask"]``); after the episode's end only 0 is. An invalid action
    accepts, sets ``info["invalid_action"]`` and earns ``invalid_penalty``
    (``invalid_action="raise"`` raises ``ValueError`` instead).

    ## Observation Space

    ``Box(0, 1, (K, 18), float32)`` with ``K = max_queue``: one row per waiting job in the
    base policy's order, **row 0 is the pick** under inspection (then the others in the
    policy's order: the context; with more than ``K`` waiting jobs the first ``K``).
    Padding rows are all zeros. Columns 0-15 are Schedule-v0's
    (:mod:`hpcgym.envs.queue_observation`; ``rank`` is the position in that order), 16
    and 17 the inspector's:

    | Num | Name          | Value                                                     |
    |-----|---------------|-----------------------------------------------------------|
    | 0   | valid         | 1 (waiting job) / 0 (padding)                             |
    | 1   | wait          | ``dur(now - submit, wait_scale)``                         |
    | 2   | request       | ``dur(request, est_scale)``                               |
    | 3   | estimate      | ``dur(est, est_scale)``: the estimator's prediction       |
    | 4   | procs         | ``procs / m``                                             |
    | 5   | fits          | 1 if the job fits in the free processors now (row 0: 1)  |
    | 6   | time_to_fit   | ``dur(t_fit - now, est_scale)``, 0 if it fits now         |
    | 7   | slowdown_now  | ``1 - 1 / bsld`` if started now (estimate as run time)    |
    | 8   | rank          | position in the base order / ``max(rows - 1, 1)``         |
    | 9   | user_accuracy | mean actual/request, the user's last 4 completed jobs     |
    | 10  | user_running  | ``cnt(the user's running jobs)``                          |
    | 11  | user_waiting  | ``cnt(the user's other waiting jobs)``                    |
    | 12  | free          | ``free / m``                                              |
    | 13  | queue_jobs    | ``cnt(waiting jobs)``                                     |
    | 14  | queue_work    | ``sat(sum(procs * est) / m, 1 day)``                      |
    | 15  | running_jobs  | ``cnt(running jobs)``                                     |
    | 16  | rejections    | the job's rejections so far / ``max_rejections``          |
    | 17  | queue_urgency | ``sat(sum(3600 / max(est, 10)), 100)`` over the waiting   |
    |     |               | jobs: bounded slowdown the queue adds per hour of waiting |

    ``dur(x, s) = min(x / s, 1)`` (or its log form with ``time_scale="log"``),
    ``cnt(x) = min(log2(1 + x) / 10, 1)``, ``sat(x, t) = x / (x + t)``; ``est_scale`` is by
    default the trace's largest request, ``wait_scale`` defaults to ``est_scale``.

    ## Rewards

    0 at every step but the last, which pays the terminal reward comparing the episode's
    schedule with the ``reference`` scheduler's on the same window: for objective
    ``bsld`` ``(b_ref - b_agent) / b_ref`` with AVEbsld ``b`` (``ln(b_ref / b_agent)`` with
    ``reward_scale="log"``; ``wait``, ``utilization`` and ``awrt`` as in Backfill-v0;
    ``reward_mode="dense"`` pays the same total job by job). The default reference
    (``"default"``) is the base scheduler itself, uninspected: the base policy with the
    env's ``backfill``, estimator and starvation rule -- the improvement over the base
    policy, SchedInspector's reward. Any scheduler name is accepted (``"SAF+EASY"``;
    ``"ENV+EASY"``: the base policy with EASY), ``None`` gives the raw ``-AVEbsld``.

    ## Starting State, Episode End, Seeding

    As in every task (:class:`~hpcgym.envs.generic_env.TaskEnv`): :meth:`reset` draws a
    window of the ``split`` with the env's seeded generator, or takes ``options={"start":
    i}``, and runs the engine to the first decision. A window without any decision is
    over at once: only action 0 is valid and the first step ends it. The episode
    terminates when the window's last job has completed.

    ## Arguments

    The common ones of :class:`~hpcgym.envs.generic_env.TaskEnv` (``trace``, ``estimator``,
    ``starvation``, ``window_length``, ``split``, ``reference``, ``objective``,
    ``max_queue``...), and:

    | Parameter        | Default     | Description                                       |
    |------------------|-------------|---------------------------------------------------|
    | `base`           | trace's     | the base queue policy (``None``: the policy of    |
    |                  |             | the trace's deployable reference, SJF on SDSC-SP2)|
    | `backfill`       | `"sjbf"`    | the base scheduler's backfilling: ``sjbf``,       |
    |                  |             | ``easy`` or ``none``                              |
    | `max_rejections` | `8`         | rejections allowed per job (the guard)            |

    ``starvation`` takes seconds, ``"auto"``, ``"platform"`` (3 x the platform's largest
    run time, the guard of the deployable references) or ``None`` (default): a job
    past it is the pick first, and the inspector may still hold it (``max_rejections``).

    ## Info

    As every task's (``action_mask``, ``decision``, ``candidates``: waiting jobs,
    ``time``, ``decisions``: inspection decisions so far, ``backfills``, ``start``,
    ``window``...), and at the end ``agent`` and ``reference`` (metric dicts, the
    schedule's ``rejections`` among the agent's counters are ``info["rejections"]``).

    ## Vector env

    ``gymnasium.make_vec("hpcgym/Inspect-v0", num_envs=N)``: the generic vector env, which
    steps the sub-envs in Python (there is no compiled step for this task).

    ## What differs from SchedInspector

    SchedInspector's simulator waits after a reject until the next arrival, the next
    completion or 600 s, whichever is first; this engine schedules at events only, so a
    reject waits for the next event (the guard keeps one in sight). Its inspector sees
    the pick alone (7 features); here row 0 holds the pick's features and the other rows
    the queue's. Its reward is ``(ref - agent) / max(ref, agent, 1)``; here the
    project's terminal reward (relative to the reference). Its simulator commits to an
    accepted pick that does not fit (it waits for it, backfilling); here the base policy
    re-picks at every pass, as the built-in policies do, so only starts are inspected.
    """

    name = "inspect"
    env_id = "hpcgym/Inspect-v0"
    summary = "accept the base policy's pick, or reject it and wait for the next event"
    decision_event = Event.INSPECT
    default_reference = "default"
    board = "inspect"
    options: ClassVar[tuple[str, ...]] = ("base", "backfill", "max_rejections")

    def __init__(
        self,
        base: str | None = None,
        backfill: str = "sjbf",
        max_rejections: int = DEFAULT_MAX_REJECTIONS,
    ) -> None:
        self.backfill = _choice("backfill", str(backfill).lower(), BACKFILLERS)
        self.engine_backfill, self.named_backfill = BACKFILLERS[self.backfill]
        if base is not None:
            policy_id(base)  # validates the name
        self.base_arg = base
        #: the base queue policy (set on the trace: ``queue_setup``)
        self.base = "" if base is None else str(base).upper()
        if int(max_rejections) != max_rejections or int(max_rejections) < 1:
            raise ValueError(f"max_rejections must be an integer >= 1, got {max_rejections!r}")
        self.max_rejections = int(max_rejections)
        self.columns = INSPECT_COLUMNS
        self.tau = 0.0
        self._new_episode()

    def _new_episode(self) -> None:
        #: the users' columns of the episode
        self.qf: QueueFeatures | None = None
        #: the rows' scratch (Schedule-v0's builder writes its 16 columns and mask here)
        self._scratch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def spawn(self) -> InspectTask:
        twin = super().spawn()
        assert isinstance(twin, InspectTask)
        twin._new_episode()
        return twin

    # ------------------------------------------------------------- set-up
    def queue_setup(
        self, workload: Workload, label: str | None, starvation: float | str | None, reference: Any
    ) -> QueueSetup:
        """The base policy (default: the trace's deployable reference's), the starvation
        rule (``"platform"``: 3 x the platform's largest run time) and the reference
        (``"default"``: the base scheduler, uninspected)."""
        self.base = str(self.base_arg or deployable_policy(label)).upper()
        if isinstance(reference, str) and reference.strip().lower() == "default":
            reference = f"ENV+{self.named_backfill}"
        if isinstance(starvation, str) and starvation.strip().lower() == "platform":
            starvation = starvation_threshold(workload)
        return QueueSetup(self.base, starvation, reference)

    def setup(self, env: TaskEnv) -> None:
        self.tau = 10.0 if env.time_scale == "log" else 0.0

    def action_space(self, max_queue: int) -> spaces.Discrete:
        """``Discrete(2)``: 0 accept, 1 reject."""
        return spaces.Discrete(2)

    @classmethod
    def fits_spaces(cls, rows: int, columns: int, actions: int) -> bool:
        """``Discrete(2)`` (accept, reject) over rows of the inspector's columns."""
        return actions == 2 and columns == len(INSPECT_COLUMNS)

    def fallback_action(self, max_queue: int) -> int:
        """Accept: the base scheduler's own decision."""
        return ACCEPT

    # ------------------------------------------------------------ episode
    def make_simulation(self, env: TaskEnv, window: Workload, seed: int) -> Simulation:
        self.qf = QueueFeatures(window.user, window.runtime, window.request)
        kq = env.max_queue
        self._scratch = (
            np.zeros((kq, len(QUEUE_COLUMNS)), dtype=np.float32),
            np.zeros(kq, dtype=bool),
            np.full(kq, -1, dtype=np.int64),
        )
        sim = env.agent_scheduler.make_simulation(window, seed, backfill=self.engine_backfill)
        sim.enable_inspection(self.max_rejections)
        return sim

    def observe(self, env: TaskEnv, sim: Simulation, out: Buffers | None) -> Rows:
        assert self.qf is not None and self._scratch is not None
        pick = sim.inspected
        order = sim.policy_order(self.base)
        if order[0] != pick:  # the starvation rule picked it: the pick first, then the order
            order = np.concatenate(([pick], order[order != pick]))
        q_obs, _, q_rows, _ = build_queue(
            sim.view, order, len(order), self.qf, env.est_scale, env.wait_scale,
            env.max_queue, self._scratch, self.tau,
        )  # fmt: skip
        if out is None:
            nf = len(INSPECT_COLUMNS)
            obs = np.zeros((env.max_queue, nf), dtype=np.float32)
            mask = np.zeros(2, dtype=bool)
            rows = np.full(env.max_queue, -1, dtype=np.int64)
        else:
            obs, mask, rows = out
        nq = q_obs.shape[1]
        obs[:, :nq] = q_obs
        rows[:] = q_rows
        shown = q_rows >= 0
        obs[:, nq] = 0.0
        obs[shown, nq] = sim.rejections[q_rows[shown]] / self.max_rejections
        view = sim.view
        waiting = view.waiting_buffer[: view.n_waiting]
        urgency = float(np.sum(3600.0 / np.maximum(view.estimate[waiting], 10.0)))
        obs[:, nq + 1] = np.where(shown, urgency / (urgency + URGENCY_HALF), 0.0)
        mask[:] = True
        return obs, mask, rows, len(order)

    def apply(self, sim: Simulation, rows: np.ndarray, action: int) -> bool:
        sim.reject() if action == REJECT else sim.accept()
        return False

    def decisions(self, view: EngineView) -> int:
        """The inspection decisions so far."""
        return int(view.inspections)

    def invalid_message(self, action: Any, valid: list[int]) -> str:
        return (
            f"invalid action {action!r}: valid actions now are {valid} (0 accept, 1 reject). "
            "Use info['action_mask'], or the default invalid_action='stop' to accept."
        )

    def render(self, env: TaskEnv) -> str:
        view = env.simulation.view
        line = (
            f"t={view.now:.0f}s free={view.free}/{view.machine_size} waiting={view.n_waiting} "
            f"running={view.n_running}"
        )
        pick = env.simulation.inspected
        if pick < 0:
            return line
        rej = int(env.simulation.rejections[pick])
        return (
            f"{line}\n  pick: job {pick} procs={int(view.procs[pick])} "
            f"est={view.estimate[pick]:.0f}s wait={view.now - view.submit[pick]:.0f}s "
            f"rejected {rej}/{self.max_rejections}"
        )

    def describe(self) -> str:
        return (
            f"base={self.base!r}, backfill={self.backfill!r}, max_rejections={self.max_rejections}"
        )

    # ---------------------------------------------- evaluation and training
    @classmethod
    def queue_policy(cls, policy: str, trace: str | None) -> str:
        """The base policy of a run with ``--policy policy``: ``policy`` unless FCFS (the
        training command line's default), else the trace's deployable reference's, the
        env's default ``base`` (as Schedule-v0's row order)."""
        from hpcgym.sim.references import schedule_order

        return schedule_order(policy, trace)

    @classmethod
    def card_keys(cls, config: Mapping[str, Any], trace: str | None) -> dict[str, Any]:
        """``task``, the base policy as ``policy``, mode ``inspect``."""
        base = cls.queue_policy(config.get("policy"), trace)  # type: ignore[arg-type]
        return {"task": cls.name, "policy": base, "mode": cls.name}

    @classmethod
    def card_env(cls, env: dict[str, Any], card: Mapping[str, Any]) -> dict[str, Any]:
        """The card's base policy (its ``policy``) as ``base``."""
        out = super().card_env(env, card)
        out["base"] = str(card["policy"]).upper()
        return out

    @classmethod
    def env_kwargs(cls, kwargs: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """The other tasks' arguments dropped; ``base`` from ``config["policy"]``."""
        from hpcgym.workload import trace_spec

        keep = set(COMMON_OPTIONS) | set(cls.options)
        out = {k: v for k, v in kwargs.items() if k in keep}
        spec = trace_spec(config.get("trace"))
        trace = None if spec is None else str(spec)
        out["base"] = cls.queue_policy(config.get("policy", "FCFS"), trace)
        return out

    @classmethod
    def agent_env(cls, policy: str | None, mode: str, max_queue: int | None) -> dict[str, Any]:
        env: dict[str, Any] = {"task": cls.name, "max_queue": max_queue}
        if policy is not None:
            env["base"] = policy.upper()
        return env
