"""The Gymnasium backfilling env ``hpcgym/Backfill-v0`` (RLBackfilling, paper 004 §3).

See :class:`BackfillEnv` for the specification and ``docs/env.md`` for the design
notes and the measured speed. The decision itself is
:class:`hpcgym.tasks.backfill.BackfillTask`; the env machinery is the generic
:class:`~hpcgym.envs.generic_env.TaskEnv`.
"""

from __future__ import annotations

import os
from typing import Any

from hpcgym.envs._args import _UNSET, _alias, _Unset
from hpcgym.envs.features import FEATURE_SETS
from hpcgym.envs.generic_env import INVALID_ACTIONS, TaskEnv
from hpcgym.envs.reward import OBJECTIVES, clear_normalizer_cache
from hpcgym.sim.estimators import Estimator
from hpcgym.sim.schedulers import SchedulerSpec
from hpcgym.tasks.backfill import MODES, BackfillTask
from hpcgym.tasks.base import COMMON_OPTIONS
from hpcgym.workload.core import Workload
from hpcgym.workload.sequences import VALIDATION_FRACTION

__all__ = [
    "BackfillEnv",
    "FEATURE_SETS",
    "MODES",
    "OBJECTIVES",
    "INVALID_ACTIONS",
    "clear_normalizer_cache",
]


class BackfillEnv(TaskEnv):
    """Learning EASY-style backfilling decisions (RLBackfilling, paper 004 §3).

    ## Description

    A window of ``window_length`` consecutive jobs of a workload trace is scheduled
    on a homogeneous machine by the hpcgym engine (:mod:`hpcgym.sim`): jobs queue in
    the order of a base policy (FCFS by default); the first job of the queue starts as
    soon as enough processors are free. When it is blocked, it gets a *reservation* at
    its *shadow time* (when enough processors will be free, according to the running
    jobs' estimates). Other waiting jobs may then be *backfilled*: started now, ahead of
    the blocked job. The agent makes exactly these backfilling decisions.

    A **decision point** is a moment at which the queue's head is blocked and at least
    one waiting job is a backfill *candidate* (see ``mode``). At a decision point the
    agent picks one candidate to start now, or STOP ("no more backfilling at this
    time"). After a start, if candidates remain at the same time, the next step is
    another decision at the same time; STOP (or no candidate left) lets the engine run
    until the next decision point. Unlike the reference code, the agent is asked even
    when only one candidate exists, and it may decline.

    ## Action Space

    ``Discrete(K + 1)`` with ``K = max_queue``: action ``i < K`` starts the job of
    observation row ``i``; action ``K`` is STOP. Valid actions are given by
    :meth:`action_masks` (bool ``(K + 1,)``, the sb3-contrib ``MaskablePPO``
    convention; also ``info["action_mask"]``): the real rows, and STOP (always valid).
    Every element of the action space is a legal argument of :meth:`step` (the Gymnasium
    contract): an invalid action (a padding row) acts as STOP, sets
    ``info["invalid_action"]`` and earns ``invalid_penalty`` (default 0; ``-1`` with
    ``invalid_action="penalty"``). ``invalid_action="raise"`` raises ``ValueError`` naming
    the valid actions instead (for debugging an agent). The mask is also reachable through
    Gymnasium's wrappers: ``env.get_wrapper_attr("action_masks")()``; it equals
    ``info["action_mask"]``. Asking for it before :meth:`reset` raises ``RuntimeError``.

    ## Observation Space

    ``Box(0, 1, (K, F), float32)``: one row per candidate in FCFS (submission) order;
    when there are more than ``K`` candidates the first ``K`` are shown (the count is
    ``info["candidates"]``). Rows after the last candidate are padding: **all zeros**.
    Every value is in ``[0, 1]``. ``now`` is the current time, ``est`` the engine's
    runtime estimate (``estimator``), ``shadow`` / ``extra`` the head's reservation,
    ``free`` the free processors, ``m`` the machine size, ``est_scale`` (default the
    largest request of the whole trace), ``wait_scale`` (default ``est_scale``):

    | Num | Name           | Value                                   | Note                       |
    |-----|----------------|-----------------------------------------|----------------------------|
    | 0   | valid          | 1 (candidate) / 0 (padding)             | the validity flag          |
    | 1   | wait           | ``min((now - submit) / wait_scale, 1)`` | clipped                    |
    | 2   | estimate       | ``min(est / est_scale, 1)``             | 1 only above ``est_scale`` |
    | 3   | procs          | ``procs / m``                           |                            |
    | 4   | est_vs_shadow  | ``est / (est + shadow - now)``          | <= 0.5 iff ends by shadow  |
    | 5   | procs_vs_free  | ``procs / free``                        | <= 1 for candidates        |
    | 6   | procs_vs_extra | ``procs / (procs + extra)``             | <= 0.5 iff fits in extra   |
    | 7   | easy           | 1 if EASY would start the job now       | 0: would delay the head    |
    | 8   | free           | ``free / m``                            | machine availability       |
    | 9   | rank           | backfill position / ``max(n_wait-2,1)`` | 0 = first in base order    |
    | 10  | shadow         | ``min((shadow - now) / est_scale, 1)``  | clipped                    |
    | 11  | extra          | ``extra / m``                           |                            |
    | 12  | prediction     | ``min(prediction / est_scale, 1)``      | with ``feature_predictor`` |

    ``time_scale="log"`` reads the durations of columns 1, 2, 10, 12 on a log scale:
    ``min(ln(1 + x / 10 s) / ln(1 + scale / 10 s), 1)`` (:mod:`hpcgym.envs.observation`).

    The *backfill order* of column 9 is the base policy's queue order without the head
    (FCFS: submission order). Columns 8, 10, 11 are the same in every row: the paper
    appends the machine state to every job row so that a per-job kernel network sees it.

    ``features="extended"`` appends 14 online columns after these (at ``P = 12``, or
    ``13`` with ``feature_predictor``; names in :attr:`feature_names`; formulas, clock
    and scalings in :mod:`hpcgym.envs.features`). Each is computed only from jobs
    submitted so far (the trace's past included), their requests, the engine's
    estimates and state, and the actual runtimes of jobs completed in the episode.
    ``features="extended-log"`` has the same columns, with ``user_accuracy`` seeded at
    reset from the trace's accounting log (the jobs its recorded schedule shows completed
    before the window's first submission; SWF traces only).
    ``sat(x, t) = x / (x + t)``, ``ssat(x, t) = (1 + x / (|x| + t)) / 2``,
    ``cnt(x) = min(log2(1 + x) / 10, 1)``; ``tod`` is the local time of day of ``now``
    (trace header ``UnixStartTime`` and time zone; trace seconds without a header):

    | Num    | Name          | Value                                                    |
    |--------|---------------|----------------------------------------------------------|
    | P      | tod_sin       | ``(1 + sin(2 pi tod / 1 day)) / 2``                      |
    | P + 1  | tod_cos       | ``(1 + cos(2 pi tod / 1 day)) / 2``                      |
    | P + 2  | weekday       | local week phase of ``now``, 0 = Monday 00:00            |
    | P + 3  | load_hour     | ``sat(r, 1)``, r = procs * request submitted in the      |
    |        |               | last hour / (``m`` * 1 h)                                |
    | P + 4  | load_day      | the same over the last 24 h                              |
    | P + 5  | queue_jobs    | ``cnt(waiting jobs)``                                    |
    | P + 6  | queue_work    | ``sat(sum(procs * est) / m, 1 day)``, waiting jobs       |
    | P + 7  | shadow_free   | ``(extra + head procs) / m``                             |
    | P + 8  | slack         | ``ssat(shadow - now - est, 1 h)``                        |
    | P + 9  | extra_left    | ``(1 + (extra - procs * [now + est > shadow]) / m) / 2`` |
    | P + 10 | size_rank     | rows with a smaller ``est`` / ``max(rows - 1, 1)``       |
    | P + 11 | user_accuracy | mean actual/request, user's last 4 completed jobs        |
    | P + 12 | user_running  | ``cnt(the user's running jobs)``                         |
    | P + 13 | user_waiting  | ``cnt(the user's other waiting jobs)``                   |

    Columns P .. P + 7 are the same in every row. ``user_accuracy`` of a user without a
    completed job (or an unknown user) is the mean over all jobs completed in the
    episode so far (1 before the first completion).

    ## Rewards

    Intermediate rewards are 0, plus ``violation_penalty`` for a start that delays the
    reservation in ``penalized`` mode and ``invalid_penalty`` for an invalid action.
    The last step adds the terminal reward (``reward_mode="dense"``: the same total
    paid job by job instead, each job's share at the step in which it starts, relative
    to the same job in the reference's schedule; see
    :class:`~hpcgym.envs.reward.JobCredit`) comparing the
    agent's schedule of the window with that of the ``reference`` scheduler on the same
    window (objective ``bsld``: ``(b_norm - b_agent) / b_norm`` with AVEbsld ``b``;
    ``wait``: the same with the mean wait, denominator ``max(w_norm, 1 s)``;
    ``utilization``: ``(u_agent - u_norm) / u_norm``; ``awrt``: the area-weighted
    response time, like wait: :mod:`hpcgym.sim.metrics`). With ``reference=None`` the
    terminal reward is the raw ``-AVEbsld``, ``-mean wait`` (seconds),
    ``+utilization`` or ``-AWRT`` (seconds). ``reward_scale="log"`` uses
    ``ln(b_norm / b_agent)`` instead (``-ln`` of the ratio the evaluation averages
    geometrically; the same for wait, AWRT and utilization:
    :func:`~hpcgym.envs.reward.terminal_reward`); with the dense reward the last step then
    adds the difference between the log and the linear total.

    ## Starting State

    :meth:`reset` draws a window start uniformly from the ``split`` (or, with
    ``load_weighting=p > 0``, with probability ``~ load ** p``, ``load`` = the window's
    offered load: :class:`~hpcgym.workload.sequences.WindowSampler`) with the env's
    seeded generator (``self.np_random``), or uses ``options={"start": i}`` (replay an
    exact window), and runs the engine to the first decision point. If the window has
    no decision point at all, the episode is over already: the observation is all
    padding, only STOP is valid (``info["decision"] = False``) and the first step
    terminates with the terminal reward.

    ## Episode End

    The episode terminates when the window's last job has completed. ``truncated`` is
    never set by the env (wrap it in ``TimeLimit`` for a step limit).

    ## Arguments

    | Parameter           | Default         | Description                                       |
    |---------------------|-----------------|---------------------------------------------------|
    | `trace`             | `None`          | trace name, SWF path, Workload, None = synthetic  |
    | `machine_size`      | `None`          | processors (default: the trace's)                 |
    | `policy`            | `"FCFS"`        | base queue policy (``hpcgym.sim.POLICIES``)       |
    | `estimator`         | `"request"`     | runtime estimate of the engine (predictor names)  |
    | `correction`        | `"incremental"` | correction of under-estimates (engine)            |
    | `starvation`        | `None`          | starvation threshold of the queue policy (engine) |
    | `window_length`     | `256`           | jobs per episode (old name: ``sequence_length``)  |
    | `split`             | `"train"`       | ``train``, ``validation``, ``test`` or ``all``    |
    | `train_fraction`    | `0.7`           | share of the jobs in the training range           |
    | `validation_fraction` | `0.1`         | share of that range held back as ``validation``   |
    | `mode`              | `"guarded"`     | ``guarded``, ``penalized`` or ``free``            |
    | `reference`         | `"ENV+EASY-SJBF"` | scheduler of the terminal reward, or ``None``   |
    | `objective`         | `"bsld"`        | ``bsld``, ``wait``, ``utilization``, ``awrt``     |
    | `reward_mode`       | `"terminal"`    | ``terminal`` or ``dense`` (see *Rewards*)         |
    | `reward_scale`      | `"linear"`      | ``linear`` or ``log`` (see *Rewards*)             |
    | `load_weighting`    | `0.0`           | ``p``: draw windows ``~ load ** p`` (*Starting*)  |
    | `max_queue`         | `128`           | ``K``: observation rows                           |
    | `violation_penalty` | `-1.0`          | reward of a delaying start (``penalized``), <= 0  |
    | `invalid_action`    | `"stop"`        | ``stop``, ``penalty`` (STOP + -1) or ``raise``    |
    | `invalid_penalty`   | `None`          | invalid action's reward <= 0 (0; -1 if `penalty`) |
    | `feature_predictor` | `None`          | predictor name / Estimator: ``prediction`` column |
    | `wait_scale`        | `None`          | wait normalization, seconds (default est_scale)   |
    | `est_scale`         | `None`          | estimate scale, seconds (default: the largest     |
    |                     |                 | request; transferred agents pass their card's)    |
    | `features`          | `"paper"`       | ``paper`` (columns 0-11 [+12]) or ``extended``    |
    |                     |                 | (+14 online columns, see above)                   |
    | `time_scale`        | `"linear"`      | ``linear`` or ``log``: the duration columns       |
    | `trace_kwargs`      | `None`          | extra arguments of ``hpcgym.workload.load``       |
    | `estimator_kwargs`  | `None`          | arguments of the ``estimator`` predictor          |
    | `rank_estimator`    | `None`          | estimate the queue ``policy`` ranks by (predictor |
    |                     |                 | names); ``None``: ``estimator`` ranks too         |
    | `rank_estimator_kwargs` | `None`      | arguments of the ``rank_estimator`` predictor     |
    ``estimator`` gives the reservation estimate (shadow time, the jobs EASY allows, the
    ``estimate`` column); ``rank_estimator`` the run time the queue ``policy`` ranks by.

    Modes (what counts as a candidate): ``guarded`` -- the jobs EASY itself would start
    now (fits now and ends by the shadow time or fits in the extra processors): the
    agent can never delay the reservation; ``penalized`` -- every job that fits now; a
    start that delays the reservation is executed and earns ``violation_penalty`` (the
    paper's rule); ``free`` -- every job that fits now, no penalty (what the reference
    code trains). Violations are counted in every mode.

    Reference: any name of :func:`hpcgym.sim.schedulers.get_scheduler`, meaning exactly
    what ``hpcgym simulate --scheduler NAME`` runs (``EASY-SJBF`` is FCFS + EASY-SJBF under
    any ``policy``); ``ENV+NAME`` plays NAME's backfilling with the env's own ``policy``
    and starvation rule (the default ``ENV+EASY-SJBF`` is ``SJF+EASY-SJBF`` under
    ``policy="SJF"``), so that the reward measures the backfilling decisions only
    (:func:`hpcgym.envs.reward.resolve_reference`). It is simulated once per window
    (seed 0) with the built-in backfiller and cached (bounded LRU, per process).

    ## Info

    Every step: ``action_mask``, ``decision`` (the agent is at a decision point),
    ``candidates`` (number of candidates, may exceed ``K``), ``time`` (trace seconds),
    ``decisions``, ``backfills``, ``violations`` (episode counters so far), ``violation``
    (this step's start delayed the reservation), ``invalid_action`` (this step's action was
    invalid and acted as STOP; also under the old name ``invalid``), ``start`` and
    ``window``. At the end also ``agent`` and ``reference`` (the metrics dicts of
    :func:`hpcgym.sim.metrics.compute_metrics`; ``reference`` is ``None`` without one; also
    under the old name ``normalizer``), ``objective``, ``overflow_decisions`` (decision
    points with more than ``K`` candidates) and ``episode_steps``.

    ## Vector env

    :class:`~hpcgym.envs.vector.BackfillVectorEnv` (``gymnasium.make_vec(...,
    num_envs=N)``) steps ``N`` of these envs in one process with batched arrays; it calls
    the same episode core (:meth:`reset_episode`, :meth:`transition`) and equals
    ``SyncVectorEnv`` of this env step for step (autoreset ``NEXT_STEP``).

    ## Rendering

    ``render_mode="ansi"``: :meth:`render` returns the decision point as text. Other
    modes (e.g. the ``"rgb_array"`` SB3's ``make_vec_env`` asks for) only log a
    warning; :meth:`render` then returns ``None``.
    """

    def __init__(
        self,
        trace: str | os.PathLike[str] | Workload | None = None,
        machine_size: int | None = None,
        policy: str = "FCFS",
        estimator: str = "request",
        correction: str = "incremental",
        starvation: float | str | None = None,
        window_length: int | None = None,
        split: str = "train",
        train_fraction: float = 0.7,
        validation_fraction: float = VALIDATION_FRACTION,
        mode: str = "guarded",
        reference: str | SchedulerSpec | None | _Unset = _UNSET,
        objective: str = "bsld",
        max_queue: int = 128,
        violation_penalty: float = -1.0,
        invalid_action: str = "stop",
        invalid_penalty: float | None = None,
        feature_predictor: str | Estimator | None = None,
        wait_scale: float | None = None,
        trace_kwargs: dict[str, Any] | None = None,
        estimator_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
        est_scale: float | None = None,
        features: str = "paper",
        reward_mode: str = "terminal",
        load_weighting: float = 0.0,
        reward_scale: str = "linear",
        time_scale: str = "linear",
        rank_estimator: str | None = None,
        rank_estimator_kwargs: dict[str, Any] | None = None,
        *,
        sequence_length: int | None = None,
        normalizer: str | SchedulerSpec | None | _Unset = _UNSET,
    ) -> None:
        window_length = _alias("window_length", window_length, "sequence_length", sequence_length)
        reference = _alias("reference", reference, "normalizer", normalizer, unset=_UNSET)
        task = BackfillTask(policy, mode, violation_penalty, feature_predictor, features)
        common = {k: v for k, v in locals().items() if k in COMMON_OPTIONS}
        super().__init__(task, **common)  # every argument but the task's own
        self.task: BackfillTask

    @property
    def mode(self) -> str:
        """The candidate mode (``guarded``, ``penalized`` or ``free``)."""
        return self.task.mode

    @property
    def violation_penalty(self) -> float:
        """The reward of a start that delays the reservation (``penalized``)."""
        return self.task.violation_penalty

    @property
    def features(self) -> str:
        """The feature set (``paper``, ``extended`` or ``extended-log``)."""
        return self.task.features

    @property
    def _ext_ctx(self) -> Any:
        return self.task.context

    def __repr__(self) -> str:
        return (
            f"BackfillEnv(trace={self.trace_label!r}, mode={self.mode!r}, policy={self.policy!r}, "
            f"estimator={self.estimator!r}, reference="
            f"{None if self.reference is None else self.reference.name!r}, "
            f"window_length={self.window_length}, max_queue={self.max_queue})"
        )
