"""The Gymnasium job-ordering env ``hpcgym/Schedule-v0`` (RLScheduler's decision).

See :class:`ScheduleEnv` for the specification and ``docs/env.md`` for the notes.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
from gymnasium import spaces

from hpcgym.envs._args import _choice
from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.envs.queue_observation import QUEUE_COLUMNS, QueueFeatures, build_queue
from hpcgym.sim.engine import Event, Simulation, policy_id
from hpcgym.sim.references import deployable_policy, reference_policy, starvation_threshold
from hpcgym.sim.schedulers import SchedulerSpec
from hpcgym.workload.core import Workload
from hpcgym.workload.sequences import VALIDATION_FRACTION

__all__ = ["BACKFILLERS", "ScheduleEnv"]

#: backfilling inside the env: name -> (engine backfill, named scheduler of the reference)
BACKFILLERS: dict[str, tuple[str, str]] = {
    "sjbf": ("sjbf", "EASY-SJBF"),
    "easy": ("easy", "EASY"),
    "none": ("none", "NONE"),
}


class ScheduleEnv(BackfillEnv):
    """Learning the order of the queue: which waiting job goes next (RLScheduler).

    ## Description

    A window of ``window_length`` consecutive jobs of a workload trace is scheduled on a
    homogeneous machine by the hpcgym engine (:mod:`hpcgym.sim`). At every scheduling
    pass (a job arrived or ended) the engine needs a *head*: the next job to start, or
    to reserve processors for. The agent chooses it among the waiting jobs. The engine
    starts it if it fits and asks again for the rest of the queue, at the same time.
    Otherwise it reserves processors for it at its shadow time and backfills other jobs
    with ``backfill`` (EASY-SJBF by default), then runs to the next pass. This is the
    queue decision of the thirteen built-in policies (FCFS, SJF, SAF, WFP3, UNICEF,
    F1-F4...), at the same point of the same engine loop. An agent that always picks
    row 0 plays the reference policy exactly.

    A decision is asked only when there is a choice: with one waiting job it is the
    head. With ``starvation`` set, a job that has waited longer than the threshold goes
    first (the oldest such job) for the agent as for every heuristic. With
    ``commit_head=True`` a chosen head that does not fit keeps its place until it
    starts, as in RLScheduler; by default it is chosen again at every pass, as the
    built-in policies re-order their queue.

    ## Action Space

    ``Discrete(K)`` with ``K = max_queue``: action ``i`` makes the job of observation row
    ``i`` the head. Valid actions are the real rows (:meth:`action_masks`, bool ``(K,)``;
    also ``info["action_mask"]``). An invalid action (a padding row) chooses row 0 (the
    reference policy's choice), sets ``info["invalid_action"]`` and earns
    ``invalid_penalty`` (default 0; ``-1`` with ``invalid_action="penalty"``);
    ``invalid_action="raise"`` raises ``ValueError`` instead.

    ## Observation Space

    ``Box(0, 1, (K, 16), float32)``: one row per waiting job, in the order of the
    reference policy (row 0 = its choice). With more than ``K`` waiting jobs the first
    ``K`` in that order are shown (the count is ``info["candidates"]``). Padding rows are
    all zeros. The columns are those of :mod:`hpcgym.envs.queue_observation`:

    | Num | Name          | Value                                                     |
    |-----|---------------|-----------------------------------------------------------|
    | 0   | valid         | 1 (waiting job) / 0 (padding)                             |
    | 1   | wait          | ``dur(now - submit, wait_scale)``                         |
    | 2   | request       | ``dur(request, est_scale)``                               |
    | 3   | estimate      | ``dur(est, est_scale)``: the estimator's prediction       |
    | 4   | procs         | ``procs / m``                                             |
    | 5   | fits          | 1 if the job fits in the free processors now              |
    | 6   | time_to_fit   | ``dur(t_fit - now, est_scale)``, 0 if it fits now         |
    | 7   | slowdown_now  | ``1 - 1 / bsld`` if started now (estimate as run time)    |
    | 8   | rank          | position in the reference order / ``max(rows - 1, 1)``    |
    | 9   | user_accuracy | mean actual/request, the user's last 4 completed jobs     |
    | 10  | user_running  | ``cnt(the user's running jobs)``                          |
    | 11  | user_waiting  | ``cnt(the user's other waiting jobs)``                    |
    | 12  | free          | ``free / m``                                              |
    | 13  | queue_jobs    | ``cnt(waiting jobs)``                                     |
    | 14  | queue_work    | ``sat(sum(procs * est) / m, 1 day)``                      |
    | 15  | running_jobs  | ``cnt(running jobs)``                                     |

    ``dur(x, s) = min(x / s, 1)``, or with ``time_scale="log"``
    ``min(ln(1 + x / 10 s) / ln(1 + s / 10 s), 1)``. ``cnt(x) = min(log2(1 + x) / 10, 1)``,
    ``sat(x, t) = x / (x + t)``. ``est_scale`` is by default the largest request of the
    whole trace, and ``wait_scale`` defaults to ``est_scale``. Columns 12-15 are the
    machine state, the same in every row, so that a per-job kernel network sees it.

    ## Rewards

    0 at every step but the last (plus ``invalid_penalty``). The last step pays the
    terminal reward comparing the agent's schedule with the ``reference`` scheduler's on
    the same window. For objective ``bsld`` this is ``(b_ref - b_agent) / b_ref`` with
    AVEbsld ``b``, or ``ln(b_ref / b_agent)`` with ``reward_scale="log"``.
    ``reward_mode="dense"`` pays the same total job by job, as Backfill-v0 does.

    The default reference is the trace's *deployable* reference
    (:data:`hpcgym.sim.references.DEPLOYABLE_REFERENCE`): the strongest of the thirteen
    orders on the trace's train range under the starvation guard of Carastan-Santos et al.
    (a job that has waited longer than Θ, three times the platform's largest allowed run
    time, goes first), played with the env's ``backfill``. The same guard applies to the
    agent (``starvation="default"``). ``reference="unguarded"`` is the strongest order
    without a guard (:func:`~hpcgym.sim.references.reference_policy`, SAF on SDSC-SP2),
    and then the agent has no guard either unless ``starvation`` is given. Any scheduler
    name is accepted and means what ``hpcgym simulate --scheduler NAME`` runs (``"EASY"``
    is FCFS + EASY); ``ENV+NAME`` plays NAME's backfilling with the env's own ``order``
    and ``starvation`` (``"ENV+EASY-SJBF"``). With ``reference=None`` the reward is the raw
    ``-AVEbsld``.

    ## Starting State, Episode End, Seeding, Splits

    As in Backfill-v0 (:class:`~hpcgym.envs.backfill_env.BackfillEnv`): :meth:`reset`
    draws a window of the ``split`` with the env's seeded generator, or takes
    ``options={"start": i}``, and runs the engine to the first queue decision. A window
    without any decision is over at once: only row 0 is valid and the first step ends it.
    The episode terminates when the window's last job has completed.

    ## Arguments

    | Parameter           | Default         | Description                                       |
    |---------------------|-----------------|---------------------------------------------------|
    | `trace`             | `None`          | trace name, SWF path, Workload, None = synthetic  |
    | `machine_size`      | `None`          | processors (default: the trace's)                 |
    | `backfill`          | `"sjbf"`        | ``sjbf`` (EASY-SJBF), ``easy`` or ``none``        |
    | `estimator`         | `"request"`     | reservation estimate (predictor names): shadow,   |
    |                     |                 | backfilling, the ``estimate`` column              |
    | `rank_estimator`    | `None`          | estimate the row ``order`` ranks by; ``None``:    |
    |                     |                 | ``estimator`` (the reference: ``NAME,rank=...``)  |
    | `correction`        | `"incremental"` | correction of under-estimates (engine)            |
    | `starvation`        | `"default"`     | threshold: seconds, ``"platform"`` (3 x the       |
    |                     |                 | platform's largest run time), ``"auto"`` (3 x the |
    |                     |                 | window's largest request) or ``None``; default:   |
    |                     |                 | ``"platform"`` (``None`` with ``"unguarded"``)    |
    | `window_length`     | `256`           | jobs per episode                                  |
    | `split`             | `"train"`       | ``train``, ``validation``, ``test`` or ``all``    |
    | `train_fraction`    | `0.7`           | share of the jobs in the training range           |
    | `validation_fraction` | `0.1`         | share of that range held back as ``validation``   |
    | `reference`         | trace's         | scheduler of the terminal reward (``"default"``:  |
    |                     |                 | deployable; ``"unguarded"``; a name; ``None``)    |
    | `order`             | trace's         | the policy of the row order (rank, row 0)         |
    | `objective`         | `"bsld"`        | ``bsld``, ``wait`` or ``utilization``             |
    | `reward_mode`       | `"terminal"`    | ``terminal`` or ``dense``                         |
    | `reward_scale`      | `"linear"`      | ``linear`` or ``log``                             |
    | `load_weighting`    | `0.0`           | ``p``: draw windows ``~ load ** p``               |
    | `max_queue`         | `128`           | ``K``: observation rows                           |
    | `commit_head`       | `False`         | a chosen head keeps its place until it starts     |
    | `invalid_action`    | `"stop"`        | ``stop`` (row 0), ``penalty`` or ``raise``        |
    | `invalid_penalty`   | `None`          | invalid action's reward <= 0                      |
    | `wait_scale`        | `None`          | wait normalization, seconds (default est_scale)   |
    | `est_scale`         | `None`          | estimate scale, seconds (default largest request) |
    | `time_scale`        | `"linear"`      | ``linear`` or ``log``: the duration columns       |
    | `trace_kwargs`      | `None`          | extra arguments of ``hpcgym.workload.load``       |
    | `estimator_kwargs`  | `None`          | arguments of the ``estimator`` predictor          |
    | `rank_estimator_kwargs` | `None`      | arguments of the ``rank_estimator`` predictor     |

    ## Info

    Every step: ``action_mask``, ``decision``, ``candidates`` (waiting jobs, may exceed
    ``K``), ``time``, ``decisions`` (queue decisions so far), ``backfills``,
    ``violations``, ``invalid_action``, ``start`` and ``window``. At the end also ``agent``
    and ``reference`` (metric dicts of :func:`hpcgym.sim.metrics.compute_metrics`, with
    ``max_wait`` and ``p99_bsld``, the fairness columns), ``objective``,
    ``overflow_decisions`` (decisions with more than ``K`` waiting jobs) and
    ``episode_steps``.

    ## Vector env

    :class:`~hpcgym.envs.vector.ScheduleVectorEnv` (``gymnasium.make_vec(...,
    num_envs=N)``) steps ``N`` of these envs with batched arrays, as for Backfill-v0.
    """

    def __init__(
        self,
        trace: str | os.PathLike[str] | Workload | None = None,
        machine_size: int | None = None,
        backfill: str = "sjbf",
        estimator: str = "request",
        correction: str = "incremental",
        starvation: float | str | None = "default",
        window_length: int | None = None,
        split: str = "train",
        train_fraction: float = 0.7,
        validation_fraction: float = VALIDATION_FRACTION,
        reference: str | SchedulerSpec | None | Any = "default",
        order: str | None = None,
        objective: str = "bsld",
        max_queue: int = 128,
        commit_head: bool = False,
        invalid_action: str = "stop",
        invalid_penalty: float | None = None,
        wait_scale: float | None = None,
        trace_kwargs: dict[str, Any] | None = None,
        estimator_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
        est_scale: float | None = None,
        reward_mode: str = "terminal",
        load_weighting: float = 0.0,
        reward_scale: str = "linear",
        time_scale: str = "linear",
        rank_estimator: str | None = None,
        rank_estimator_kwargs: dict[str, Any] | None = None,
    ) -> None:
        bf = _choice("backfill", str(backfill).lower(), BACKFILLERS)
        engine_bf, named = BACKFILLERS[bf]
        label = trace.name if isinstance(trace, Workload) else trace
        label = None if label is None else str(label)
        special = reference.strip().lower() if isinstance(reference, str) else None
        guarded = special != "unguarded"
        self.order = str(
            order or (deployable_policy(label) if guarded else reference_policy(label))
        )
        policy_id(self.order)  # validates the name
        self.order = self.order.upper()
        if special in ("default", "unguarded"):
            reference = f"ENV+{named}"  # the env's order and starvation rule
        platform = starvation == "platform" or (starvation == "default" and guarded)
        if starvation == "default" and not guarded:
            starvation = None
        super().__init__(
            trace=trace,
            machine_size=machine_size,
            policy=self.order,
            estimator=estimator,
            correction=correction,
            starvation=None if platform else starvation,
            window_length=window_length,
            split=split,
            train_fraction=train_fraction,
            validation_fraction=validation_fraction,
            reference=None,  # resolved below, with the starvation rule
            objective=objective,
            max_queue=max_queue,
            invalid_action=invalid_action,
            invalid_penalty=invalid_penalty,
            wait_scale=wait_scale,
            trace_kwargs=trace_kwargs,
            estimator_kwargs=estimator_kwargs,
            render_mode=render_mode,
            est_scale=est_scale,
            reward_mode=reward_mode,
            load_weighting=load_weighting,
            reward_scale=reward_scale,
            time_scale=time_scale,
            rank_estimator=rank_estimator,
            rank_estimator_kwargs=rank_estimator_kwargs,
        )
        if platform:  # the thesis's guard: 3 x the platform's largest allowed run time
            theta = starvation_threshold(self._workload)
            self._spec = dataclasses.replace(self._spec, starvation=theta)
        #: the starvation threshold of the agent's queue (seconds, ``"auto"`` or ``None``)
        self.starvation = self._spec.starvation
        self.reference = self._resolve_normalizer(reference)  # type: ignore[arg-type]
        self._norm_key = None if self.reference is None else repr(self.reference.to_dict())
        self.backfill = bf
        self._engine_backfill = engine_bf
        self.commit_head = bool(commit_head)
        self._order_id = policy_id(self.order)
        self._tau = 10.0 if self.time_scale == "log" else 0.0
        #: name of every observation column, in order
        self.feature_names = QUEUE_COLUMNS
        self.n_features = len(QUEUE_COLUMNS)
        self.observation_space = spaces.Box(
            0.0, 1.0, (self.max_queue, self.n_features), dtype=np.float32
        )
        self.action_space = spaces.Discrete(self.max_queue)
        self._init_episode_state()

    def _init_episode_state(self) -> None:
        super()._init_episode_state()
        nf = getattr(self, "n_features", len(QUEUE_COLUMNS))
        self._obs = np.zeros((self.max_queue, nf), dtype=np.float32)
        self._mask = np.zeros(self.max_queue, dtype=bool)
        self._qf: QueueFeatures | None = None
        self._order_buf = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------ episode core
    def _make_simulation(self, window: Workload, seed: int) -> Simulation:
        sp = self._spec
        self._qf = QueueFeatures(window.user, window.runtime, window.request)
        self._order_buf = np.zeros(len(window), dtype=np.int64)
        return Simulation(
            window,
            policy="external",
            backfill=self._engine_backfill,
            estimate=sp._estimator(),
            correction=sp.correction,
            starvation=sp.starvation,
            rest_order=self.order,
            commit_head=self.commit_head,
            seed=seed,
            rank_estimate=sp._rank_estimator(),
        )

    def _observe(self, ev: Event) -> None:
        kq = self.max_queue
        sim = self._sim
        assert sim is not None
        if ev == Event.QUEUE:
            assert self._qf is not None
            order = sim.policy_order(self.order)
            self._obs, self._mask, self._rows, self._ncand = build_queue(
                sim.view,
                order,
                len(order),
                self._qf,
                self.est_scale,
                self.wait_scale,
                kq,
                self._out,
                self._tau,
            )
            if self._ncand > kq:
                self._overflow += 1
            self._at_decision = True
            return
        if self._out is not None:
            self._obs.fill(0.0)
            self._mask.fill(False)
            self._rows.fill(-1)
        else:
            self._obs = np.zeros((kq, self.n_features), dtype=np.float32)
            self._mask = np.zeros(kq, dtype=bool)
            self._rows = np.full(kq, -1, dtype=np.int64)
        self._mask[0] = True  # the one valid action of a finished episode
        self._ncand = 0
        self._at_decision = False

    def _fallback_action(self) -> int:
        """What an invalid action does: row 0, the reference policy's choice."""
        return 0

    def _apply(self, a: int) -> tuple[Event, bool]:
        sim = self._sim
        assert sim is not None
        sim.choose(int(self._rows[a]))
        return sim.advance(), False

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info["decisions"] = self._sim.view.queue_decisions  # type: ignore[union-attr]
        return info

    def _invalid(self, action: Any) -> ValueError:
        valid = np.flatnonzero(self._mask).tolist()
        return ValueError(
            f"invalid action {action!r}: valid actions now are {valid} (rows with a waiting "
            "job). Use info['action_mask'] or env.get_wrapper_attr('action_masks')(), or the "
            "default invalid_action='stop' to turn invalid actions into row 0."
        )

    def action_masks(self) -> np.ndarray:
        """Valid actions now: bool ``(K,)`` (the rows with a waiting job).

        :raises RuntimeError: before the first :meth:`reset`
        """
        return super().action_masks()

    def render(self) -> str | None:
        """``render_mode="ansi"``: the queue decision as text (machine state and rows)."""
        if self.render_mode != "ansi" or self._sim is None:
            return None
        view = self._sim.view
        lines = [
            f"t={view.now:.0f}s free={view.free}/{view.machine_size} waiting={view.n_waiting} "
            f"running={view.n_running}"
        ]
        for r in np.flatnonzero(self._mask[: self._ncand] if self._at_decision else []):
            j = int(self._rows[r])
            lines.append(
                f"  row {r:3d}: job {j} procs={int(view.procs[j])} "
                f"est={view.estimate[j]:.0f}s wait={view.now - view.submit[j]:.0f}s"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"ScheduleEnv(trace={self.trace_label!r}, backfill={self.backfill!r}, "
            f"order={self.order!r}, reference="
            f"{None if self.reference is None else self.reference.name!r}, "
            f"window_length={self.window_length}, max_queue={self.max_queue})"
        )
