"""The Gymnasium backfilling env ``hpcgym/Backfill-v0`` (RLBackfilling, paper 004 §3).

See :class:`BackfillEnv` for the specification and ``docs/env.md`` for the design
notes and the measured speed.
"""

from __future__ import annotations

import operator
import os
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcgym.envs import observation as FT
from hpcgym.envs._args import _UNSET, _alias, _choice, _Unset, agent_spec
from hpcgym.envs.features import FEATURE_SETS, EpisodeFeatures, TraceContext, has_extended
from hpcgym.envs.predictions import episode_predictions
from hpcgym.envs.render import render_ansi
from hpcgym.envs.reward import (
    OBJECTIVES,
    REWARD_MODES,
    REWARD_SCALES,
    JobCredit,
    clear_normalizer_cache,
    deterministic_metrics,
    reference_metrics,
    resolve_reference,
    terminal_reward,
    workload_fingerprint,
)
from hpcgym.sim.engine import EstimatorFeed, Event, Simulation
from hpcgym.sim.estimators import BUILTIN_ESTIMATORS, Estimator, canonical_name, make_estimator
from hpcgym.sim.schedulers import SchedulerSpec
from hpcgym.workload.core import Workload
from hpcgym.workload.sequences import VALIDATION_FRACTION, WindowSampler

__all__ = [
    "BackfillEnv",
    "FEATURE_SETS",
    "MODES",
    "OBJECTIVES",
    "INVALID_ACTIONS",
    "clear_normalizer_cache",
]

#: candidate modes: name -> engine candidate mode
MODES: dict[str, str] = {"guarded": "easy", "penalized": "fit", "free": "fit"}
#: what an invalid action does: ``stop`` (default) and ``penalty`` act as STOP (``penalty``
#: with ``invalid_penalty`` -1 unless given), ``raise`` raises ``ValueError`` (debugging)
INVALID_ACTIONS: tuple[str, ...] = ("stop", "penalty", "raise")


class BackfillEnv(gym.Env[np.ndarray, np.int64]):
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
    ``utilization``: ``(u_agent - u_norm) / u_norm``). With ``reference=None`` the
    terminal reward is the raw ``-AVEbsld``, ``-mean wait`` (seconds) or
    ``+utilization``. ``reward_scale="log"`` uses ``ln(b_norm / b_agent)`` instead
    (``-ln`` of the ratio the evaluation averages geometrically; the same for wait and
    utilization: :func:`~hpcgym.envs.reward.terminal_reward`); with the dense reward the
    last step then adds the difference between the log and the linear total.

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
    | `objective`         | `"bsld"`        | ``bsld``, ``wait`` or ``utilization``             |
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
    the same episode core (:meth:`_reset_episode`, :meth:`_transition`) and equals
    ``SyncVectorEnv`` of this env step for step (autoreset ``NEXT_STEP``).

    ## Rendering

    ``render_mode="ansi"``: :meth:`render` returns the decision point as text. Other
    modes (e.g. the ``"rgb_array"`` SB3's ``make_vec_env`` asks for) only log a
    warning; :meth:`render` then returns ``None``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}

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
        super().__init__()
        from hpcgym.workload import load

        window_length = _alias("window_length", window_length, "sequence_length", sequence_length)
        if window_length is None:
            window_length = 256
        reference = _alias("reference", reference, "normalizer", normalizer, unset=_UNSET)
        if reference is _UNSET:
            reference = "ENV+EASY-SJBF"

        if render_mode not in (None, *self.metadata["render_modes"]):
            # not an error: SB3's make_vec_env always asks for "rgb_array"
            gym.logger.warn(
                f"render_mode {render_mode!r} is not supported by BackfillEnv (supported: "
                f"{self.metadata['render_modes']}); render() will return None"
            )
        self.render_mode = render_mode
        self.mode = _choice("mode", mode, MODES)
        self.objective = _choice("objective", objective, OBJECTIVES)
        self.invalid_action = _choice("invalid_action", invalid_action, INVALID_ACTIONS)
        self.reward_mode = _choice("reward_mode", reward_mode, REWARD_MODES)
        if self.reward_mode == "dense":
            JobCredit.check_objective(self.objective)
        self.reward_scale = _choice("reward_scale", reward_scale, REWARD_SCALES)
        if int(max_queue) < 1:
            raise ValueError(f"max_queue must be >= 1, got {max_queue}")
        if int(window_length) < 1:
            raise ValueError(f"window_length must be >= 1, got {window_length}")
        if invalid_penalty is None:
            invalid_penalty = -1.0 if self.invalid_action == "penalty" else 0.0
        for name, v in (
            ("violation_penalty", violation_penalty),
            ("invalid_penalty", invalid_penalty),
        ):
            if not np.isfinite(v) or v > 0:
                raise ValueError(f"{name} must be a finite number <= 0, got {v}")
        self.max_queue = int(max_queue)
        self.window_length = int(window_length)
        self.violation_penalty = float(violation_penalty)
        self.invalid_penalty = float(invalid_penalty)

        # ---- workload (kept by spec so that pickling can reload it by name)
        self._trace = trace
        self._machine_size = machine_size
        self._trace_kwargs = dict(trace_kwargs or {})
        workload = load(trace, machine_size=machine_size, **self._trace_kwargs)
        self._workload = workload
        self._fingerprint = workload_fingerprint(workload)
        if isinstance(trace, Workload):
            self.trace_label = trace.name
        elif trace is None:
            self.trace_label = "synthetic"
        else:
            self.trace_label = str(trace)
        self.split = split
        self._sampler = WindowSampler(
            workload,
            self.window_length,
            split,
            train_fraction,
            0,
            None,
            validation_fraction,
            load_weighting,
        )
        self.train_fraction, self.validation_fraction = self._sampler.fractions

        # ---- scheduler of the agent (external backfilling) and the reference
        self._spec = agent_spec(
            policy,
            estimator,
            estimator_kwargs,
            correction,
            starvation,
            rank_estimator,
            rank_estimator_kwargs,
        )
        # validate every name now (not at the first reset)
        Simulation(
            workload.window(self._sampler.lo, 1),
            policy=policy,
            backfill="external",
            estimate=self._spec._estimator(),
            correction=correction,
            starvation=self._spec.starvation,
            rank_estimate=self._spec._rank_estimator(),
        )
        self.policy = policy.upper()
        self.estimator = self._spec.estimate
        #: the estimator the queue ranks by, or ``None`` (``estimator`` ranks too)
        self.rank_estimator = self._spec.rank_estimate if self._spec.ranks_apart else None
        self.reference = self._resolve_normalizer(reference)  # type: ignore[arg-type]
        self._norm_key = None if self.reference is None else repr(self.reference.to_dict())

        # ---- features
        self._fpred = feature_predictor
        if isinstance(feature_predictor, str):
            fp = canonical_name(feature_predictor)
            if fp not in BUILTIN_ESTIMATORS:
                self._fpred = make_estimator(fp)
            else:
                self._fpred = fp
        self.est_scale = float(workload.request.max() if est_scale is None else est_scale)
        self.wait_scale = float(wait_scale) if wait_scale is not None else self.est_scale
        for name, value in (("est_scale", self.est_scale), ("wait_scale", self.wait_scale)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0 seconds, got {value}")
        self.features = _choice("features", features, FEATURE_SETS)
        self.time_scale = _choice("time_scale", time_scale, FT.TIME_SCALES)
        extended = has_extended(self.features)
        self._ext_ctx = (
            TraceContext(workload, log=self.features == "extended-log") if extended else None
        )
        #: name of every observation column, in order
        self.feature_names = FT.column_names(self._fpred is not None, extended)
        self.n_features = len(self.feature_names)
        self.observation_space = spaces.Box(
            0.0, 1.0, (self.max_queue, self.n_features), dtype=np.float32
        )
        self.action_space = spaces.Discrete(self.max_queue + 1)

        self._init_episode_state()

    def _init_episode_state(self) -> None:
        """No episode yet (own buffers; not batched)."""
        self._sim: Simulation | None = None
        self._start = -1
        self._done = True
        self._at_decision = False
        self._obs = np.zeros((self.max_queue, self.n_features), dtype=np.float32)
        self._mask = np.zeros(self.max_queue + 1, dtype=bool)
        self._rows = np.full(self.max_queue, -1, dtype=np.int64)
        self._ncand = 0
        self._pos = np.zeros(0, dtype=np.int64)
        self._pred = np.zeros(0, dtype=np.float64)
        self._pred_feed: EstimatorFeed | None = None
        self._ext: EpisodeFeatures | None = None
        self._steps = 0
        self._overflow = 0
        self._final_info: dict[str, Any] = {}
        self._credit: JobCredit | None = None  # reward_mode="dense"
        # batched mode (BackfillVectorEnv): observation and mask are written into these
        # slices of the vector env's buffers instead of fresh arrays
        self._out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # ---------------------------------------------------------------- set-up
    @property
    def sequence_length(self) -> int:
        """Old name of :attr:`window_length`."""
        return self.window_length

    @property
    def normalizer(self) -> SchedulerSpec | None:
        """Old name of :attr:`reference`."""
        return self.reference

    def _resolve_normalizer(self, normalizer: str | SchedulerSpec | None) -> SchedulerSpec | None:
        return resolve_reference(normalizer, self.policy, self._spec.starvation)

    @property
    def workload(self) -> Workload:
        """The whole loaded workload (all splits)."""
        return self._workload

    @property
    def simulation(self) -> Simulation:
        """The engine of the current episode (read-only use, please)."""
        if self._sim is None:
            raise RuntimeError("no episode yet: call reset()")
        return self._sim

    @property
    def valid_starts(self) -> tuple[int, int]:
        """First and last valid window start of the split."""
        return self._sampler.lo, self._sampler.hi - self.window_length

    def candidate_jobs(self) -> np.ndarray:
        """Window job index of every observation row (``-1`` for padding)."""
        return self._rows.copy()

    def feature_predictions(self) -> np.ndarray:
        """The feature predictor's runtime prediction (s) of every job of the episode's
        window (``nan`` until an online one has predicted it; empty without one)."""
        return self._pred.copy()

    # -------------------------------------------------------------- gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._reset_episode(seed, options)
        return self._obs, self._info()

    def _reset_episode(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """:meth:`reset` without its info: seed, draw the window, run the engine to the
        first decision point and observe it (shared with the vector env).

        :param seed: seed of ``self.np_random`` (``None``: keep the generator)
        :param options: ``None`` or ``{"start": i}``
        """
        start, sim_seed = self._draw_window(seed, options)
        window = self._workload.window(start, self.window_length)
        self._sim = self._make_simulation(window, sim_seed)
        self._start = start
        self._steps = 0
        self._overflow = 0
        self._pos = np.zeros(len(window), dtype=np.int64)
        self._setup_predictions(window, sim_seed)
        if self._ext_ctx is not None:
            self._ext = EpisodeFeatures(self._ext_ctx, self._sim, start, self.max_queue)
        self._done = False
        self._final_info = {}
        if self.reward_mode == "dense":
            key = self._norm_cache_key()
            self._credit = JobCredit.of(self.objective, window, self.reference, key)
        ev = self._sim.advance()
        self._observe(ev)

    def _draw_window(self, seed: int | None, options: dict[str, Any] | None) -> tuple[int, int]:
        """Seed the generator, draw the window's start (or take ``options["start"]``) and
        the engine's seed: ``(start, seed)`` (shared with the vector env's compiled reset)."""
        super().reset(seed=seed)
        start = None
        if options:
            unknown = set(options) - {"start"}
            if unknown:
                raise ValueError(f"unknown reset option(s) {sorted(unknown)}; valid: 'start'")
            start = options.get("start")
        lo, last = self.valid_starts
        if start is None:
            start = self._sampler.draw(self.np_random)
        else:
            start = operator.index(start)
            if not lo <= start <= last:
                raise ValueError(
                    f"start {start} is outside the {self.split!r} split of {self.trace_label}: "
                    f"valid starts are {lo}..{last} (window_length={self.window_length})"
                )
        return start, int(self.np_random.integers(0, 2**63 - 1))

    def _make_simulation(self, window: Workload, seed: int) -> Simulation:
        """The episode's engine: the agent's scheduler with external backfilling."""
        return self._spec.make_simulation(
            window, seed, backfill="external", candidates=MODES[self.mode]
        )

    def _setup_predictions(self, window: Workload, seed: int) -> None:
        assert self._sim is not None
        self._pred, self._pred_feed = episode_predictions(self._fpred, window, seed, self._sim)

    def _observe(self, ev: Event) -> None:
        """Build the observation of the engine's current stop: into fresh arrays (single
        env: every returned observation is a new array) or, batched, into this env's
        slices of the vector env's buffers."""
        kq = self.max_queue
        if ev == Event.DECISION:
            sim = self._sim
            assert sim is not None
            self._obs, self._mask, self._rows, self._ncand = FT.build(
                sim.view,
                self._pos,
                self._pred,
                self.est_scale,
                self.wait_scale,
                kq,
                self.n_features,
                self._out,
                self._ext,
                self.time_scale,
            )
            if self._ncand > kq:
                self._overflow += 1
            self._at_decision = True
        else:  # done: terminal-ready state, only STOP is valid
            if self._out is not None:
                self._obs.fill(0.0)
                self._mask.fill(False)
                self._rows.fill(-1)
            else:
                self._obs = np.zeros((kq, self.n_features), dtype=np.float32)
                self._mask = np.zeros(kq + 1, dtype=bool)
                self._rows = np.full(kq, -1, dtype=np.int64)
            self._mask[kq] = True
            self._ncand = 0
            self._at_decision = False

    def _info(self) -> dict[str, Any]:
        view = self._sim.view  # type: ignore[union-attr]
        return {
            "action_mask": self._mask.copy(),
            "decision": self._at_decision,
            "candidates": self._ncand,
            "time": view.now,
            "decisions": view.decisions,
            "backfills": view.backfills,
            "violations": view.violations,
            "start": self._start,
            "window": f"{self.trace_label}[{self._start}:{self._start + self.window_length}]",
        }

    def action_masks(self) -> np.ndarray:
        """Valid actions now: bool ``(K + 1,)``, index ``K`` = STOP (always valid).

        Through Gymnasium's wrappers: ``env.get_wrapper_attr("action_masks")()``.

        :raises RuntimeError: before the first :meth:`reset`
        """
        if self._sim is None:
            raise RuntimeError(
                "action_masks() before reset(): call env.reset() first (the mask of the "
                "first decision point is also info['action_mask'] of reset)"
            )
        return self._mask.copy()

    def _invalid(self, action: Any) -> ValueError:
        valid = np.flatnonzero(self._mask).tolist()
        return ValueError(
            f"invalid action {action!r}: valid actions now are {valid} (rows with a candidate; "
            f"{self.max_queue} = STOP). Use info['action_mask'] or "
            "env.get_wrapper_attr('action_masks')(), or the default invalid_action='stop' "
            "to turn invalid actions into STOP."
        )

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        reward, terminated, violation, invalid = self._transition(action)
        return self._obs, reward, terminated, False, self._step_info(violation, invalid)

    def _step_info(self, violation: bool, invalid: bool) -> dict[str, Any]:
        """The info of the step just taken (after :meth:`_transition`).

        :param violation: the step's start delayed the reservation
        :param invalid: the step's action was invalid (acted as STOP)
        :return: the info dict of :meth:`step`
        """
        info = self._info()
        info["violation"] = violation
        info["invalid_action"] = invalid
        info["invalid"] = invalid  # old name of "invalid_action"
        if self._done:
            info.update(self._final_info)
        return info

    def _transition(self, action: Any) -> tuple[float, bool, bool, bool]:
        """The per-episode core of :meth:`step`, shared with the vector env: check the
        action (invalid -> STOP), apply it, advance the engine to its next stop, observe
        it, and compute the reward and termination (at the end also the episode-end
        infos, ``self._final_info``). Builds no info dict.

        :param action: an element of the action space
        :return: ``(reward, terminated, violation, invalid)``
        """
        if self._done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        try:
            a = operator.index(action)
        except TypeError:
            arr = np.asarray(action)
            if arr.size != 1 or arr.dtype.kind not in "iu":
                raise self._invalid(action) from None
            a = int(arr.reshape(()))
        reward = 0.0
        invalid = False
        if not (0 <= a < self._mask.shape[0] and self._mask[a]):
            if self.invalid_action == "raise":
                raise self._invalid(action)
            invalid = True
            reward += self.invalid_penalty
            a = self._fallback_action()
        sim = self._sim
        assert sim is not None
        violation = False
        if self._at_decision:
            ev, violation = self._apply(a)
            if violation and self.mode == "penalized":
                reward += self.violation_penalty
        else:
            ev = Event.DONE
        self._steps += 1
        self._observe(ev)
        if self._credit is not None:
            reward += self._credit.step(sim.start_times)
        terminated = ev == Event.DONE
        if terminated:
            self._done = True
            final = self._terminal()
            reward += final
        return reward, terminated, violation, invalid

    def _fallback_action(self) -> int:
        """What an invalid action does: STOP."""
        return self.max_queue

    def _apply(self, a: int) -> tuple[Event, bool]:
        """Apply valid action ``a`` at the decision point and advance the engine.

        :return: the engine's next stop and whether the start delayed the reservation
        """
        sim = self._sim
        assert sim is not None
        violation = False
        if a < self.max_queue:
            violation = sim.backfill(int(self._rows[a]))
        else:
            sim.stop()
        return sim.advance(), violation

    # --------------------------------------------------------------- reward
    def normalizer_metrics(self) -> dict[str, float] | None:
        """Metrics of the reference scheduler on the current window (cached), or ``None``."""
        if self.reference is None or self._sim is None:
            return None
        return reference_metrics(self.reference, self._sim.workload, self._norm_cache_key())

    def _norm_cache_key(self) -> tuple[Any, ...]:
        return (self._fingerprint, self._start, self.window_length, self._norm_key)

    def _terminal(
        self, metrics: tuple[dict[str, float], dict[str, float] | None] | None = None
    ) -> float:
        """The last step's reward (dense: what job shares left); sets ``_final_info``.
        ``metrics``: the agent's and the reference's (the compiled batch step has them)."""
        if metrics is None:
            sim = self._sim
            assert sim is not None
            agent = deterministic_metrics(sim.result().metrics)
            norm = self.normalizer_metrics()
        else:
            agent, norm = metrics
        self._final_info = {
            "agent": agent,
            "reference": norm,
            "normalizer": norm,  # old name of "reference"
            "objective": self.objective,
            "overflow_decisions": self._overflow,
            "episode_steps": self._steps,
        }
        if self._credit is None:
            return self.terminal_reward(agent, norm)
        if self.reward_scale == "linear":  # dense: the jobs' shares have paid it all
            return 0.0
        return self.terminal_reward(agent, norm) - terminal_reward(self.objective, agent, norm)

    def terminal_reward(self, agent: dict[str, float], norm: dict[str, float] | None) -> float:
        """The terminal reward for the agent's and the reference's metrics (see the
        class docstring, *Rewards*, and :func:`hpcgym.envs.reward.terminal_reward`)."""
        return terminal_reward(self.objective, agent, norm, self.reward_scale)

    # ------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if not isinstance(self._trace, Workload):
            state["_workload"] = None  # reloaded by name (cached loader) on unpickling
            state["_ext_ctx"] = None  # rebuilt from it
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "features" not in state:  # pickled before the feature sets
            self.__dict__.update(features="paper", _ext_ctx=None, _ext=None)
            self.feature_names = FT.column_names(self._fpred is not None)
        if self._workload is None:
            from hpcgym.workload import load

            self._workload = load(
                self._trace, machine_size=self._machine_size, **self._trace_kwargs
            )
            if has_extended(self.features):
                self._ext_ctx = TraceContext(self._workload, log=self.features == "extended-log")
        if self._ext is not None:
            self._ext.ctx = self._ext_ctx

    def render(self) -> str | None:
        """``render_mode="ansi"``: the decision point as text (machine state and rows)."""
        if self.render_mode != "ansi" or self._sim is None:
            return None
        return render_ansi(self)

    def __repr__(self) -> str:
        return (
            f"BackfillEnv(trace={self.trace_label!r}, mode={self.mode!r}, policy={self.policy!r}, "
            f"estimator={self.estimator!r}, reference="
            f"{None if self.reference is None else self.reference.name!r}, "
            f"window_length={self.window_length}, max_queue={self.max_queue})"
        )
