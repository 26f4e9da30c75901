"""The Gymnasium job-ordering env ``hpcgym/Schedule-v0`` (RLScheduler's decision).

See :class:`ScheduleEnv` for the specification and ``docs/env.md`` for the notes. The
decision itself is :class:`hpcgym.tasks.schedule.ScheduleTask`; the env machinery is the
generic :class:`~hpcgym.envs.generic_env.TaskEnv`.
"""

from __future__ import annotations

import os
from typing import Any

from hpcgym.envs.generic_env import TaskEnv
from hpcgym.sim.schedulers import SchedulerSpec
from hpcgym.tasks.base import COMMON_OPTIONS
from hpcgym.tasks.schedule import BACKFILLERS, ScheduleTask
from hpcgym.workload.core import Workload
from hpcgym.workload.sequences import VALIDATION_FRACTION

__all__ = ["BACKFILLERS", "ScheduleEnv"]


class ScheduleEnv(TaskEnv):
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

    With ``rows="informed"`` the space is ``Box(0, 1, (K, 24), float32)``: the 16 columns
    above, then what a site knows (:mod:`hpcgym.envs.informed_rows` has the formulas),
    with ``lg(x) = min(ln(1 + x / 10 s) / ln(1 + est_scale / 10 s), 1)`` whatever
    ``time_scale``; a *like job* is a finished job of the same user with the same request
    and processors:

    | Num | Name               | Value                                                |
    |-----|--------------------|------------------------------------------------------|
    | 16  | rank_estimate      | ``lg(the estimate the row order ranks by)``          |
    | 17  | prediction         | ``lg(row_predictor's estimate at submission)``       |
    | 18  | like_count         | ``cnt(L)``, L = the user's finished like jobs        |
    | 19  | like_last          | ``lg(run time of the latest like job)`` (0 if L = 0) |
    | 20  | like_mean          | ``lg(mean run time, last 4 like jobs)`` (0 if L = 0) |
    | 21  | like_ago           | ``sat(now - its end, 1 h)`` (1 if L = 0)             |
    | 22  | user_accuracy_long | mean actual/request, the user's last 32 finished jobs|
    | 23  | user_finished      | ``cnt(the user's finished jobs)``                    |

    The history is the accounting log before the window (``row_history``: ``"log"``,
    every job of the trace that its recorded schedule shows finished by the window's
    first submission; ``N``: of the last ``N`` jobs before the window; ``0``: none), then
    the window's jobs as they finish; never a job that has not finished. The default
    ``row_predictor`` is log-ridge warmed on the same log (``"log-ridge:warm=log"``;
    ``warm=N`` with ``row_history=N``, cold with ``0``).

    ## Rewards

    0 at every step but the last (plus ``invalid_penalty``). The last step pays the
    terminal reward comparing the agent's schedule with the ``reference`` scheduler's on
    the same window. For objective ``bsld`` this is ``(b_ref - b_agent) / b_ref`` with
    AVEbsld ``b``, or ``ln(b_ref / b_agent)`` with ``reward_scale="log"``; ``wait``,
    ``utilization`` and ``awrt`` (the area-weighted response time) as in Backfill-v0.
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
    | `objective`         | `"bsld"`        | ``bsld``, ``wait``, ``utilization``, ``awrt``     |
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
    | `rows`              | `"default"`     | ``default`` (16 columns) or ``informed`` (24)     |
    | `row_predictor`     | `None`          | informed rows' ``prediction``: predictor name or  |
    |                     |                 | Estimator (``None``: log-ridge warmed on the log  |
    |                     |                 | of ``row_history``, ``"log-ridge:warm=log"``)     |
    | `row_history`       | `None`          | informed rows' log before the window: ``"log"``   |
    |                     |                 | (``None``), a number of jobs, or 0 (none)         |

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
    Its compiled step builds the default rows only: with ``rows="informed"`` the sub-envs
    step in Python (``compiled=True`` raises an error that says so).
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
        rows: str = "default",
        row_predictor: str | Any | None = None,
        row_history: int | str | None = None,
    ) -> None:
        task = ScheduleTask(order, backfill, commit_head, rows, row_predictor, row_history)
        common = {k: v for k, v in locals().items() if k in COMMON_OPTIONS}
        super().__init__(task, **common)  # every argument but the task's own
        self.task: ScheduleTask

    @property
    def order(self) -> str:
        """The row order's policy (row 0: its choice)."""
        return self.task.order

    @property
    def backfill(self) -> str:
        """The backfilling inside the env (``sjbf``, ``easy`` or ``none``)."""
        return self.task.backfill

    @property
    def commit_head(self) -> bool:
        """A chosen head keeps its place until it starts."""
        return self.task.commit_head

    @property
    def rows(self) -> str:
        """The row set (``default`` or ``informed``)."""
        return self.task.rows

    @property
    def mode(self) -> str:
        """Deprecated: Schedule-v0 has no backfill candidates; what a card's ``mode`` says
        of this task is ``env.task.variant`` (``"schedule"``)."""
        import warnings

        warnings.warn(
            "ScheduleEnv.mode is deprecated (Schedule-v0 has no backfill candidate mode; it "
            "read 'guarded'): use env.task.variant",
            FutureWarning,
            stacklevel=2,
        )
        return "guarded"

    @property
    def _eh(self) -> Any:
        return self.task.eh

    def action_masks(self) -> Any:
        """Valid actions now: bool ``(K,)`` (the rows with a waiting job).

        :raises RuntimeError: before the first :meth:`reset`
        """
        return super().action_masks()

    def __repr__(self) -> str:
        return (
            f"ScheduleEnv(trace={self.trace_label!r}, backfill={self.backfill!r}, "
            f"order={self.order!r}, reference="
            f"{None if self.reference is None else self.reference.name!r}, "
            f"window_length={self.window_length}, max_queue={self.max_queue})"
        )
