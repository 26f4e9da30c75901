"""The compiled batch step of the native vector envs (:mod:`hpcgym.envs.vector`).

One numba call steps all ``N`` simulations of a vector env: it applies every sub-env's
action at its decision point, runs the engine (:func:`hpcgym.sim._core.advance`, the one
event loop) to the next decision point and writes the observation, the mask and the job
of every row into the batched buffers with the single env's own row builders
(:func:`hpcgym.envs.observation._build` for ``Backfill-v0``,
:func:`hpcgym.envs.queue_observation._build_queue` for ``Schedule-v0``). The sub-envs are
independent, so the loop over them can run on several cores (``numba.prange``,
``threads``); no Python runs per sub-env and step.

The same call ends episodes and starts new ones. At an episode's end it computes the
agent's metrics (:func:`hpcgym.sim.metrics.metrics_kernel`, the kernel of
``compute_metrics``) and simulates the reference scheduler on the same window when that
scheduler is compiled (a per-window cache keeps its metrics); the terminal reward and the
episode-end infos are then the single env's ``end_episode``. A reset draws the window and
the engine seed in Python with the sub-env's own generator (``draw_window``, the first
part of the single env's reset), and the rest is compiled: the engine's initial state as
:class:`~hpcgym.sim.engine.Simulation` builds it, the users' columns of ``Schedule-v0``,
the run to the first decision point and its observation. Where a part needs Python (a
reference with a predictor, estimates other than the requests or run times), the
sub-env does that part itself, and :meth:`BatchState.bind` copies its new episode into
its slot of the batched arrays, where its engine then points. The batch reaches a sub-env
only through its public episode state (:class:`~hpcgym.envs.generic_env.EpisodeState`) and
its task (:class:`~hpcgym.tasks.DecisionTask`: ``kernel``, ``batch_problem``,
``batch_bind``, ``batch_reset``).

The state of all ``N`` episodes (see :mod:`hpcgym.sim._core` for one):

====================  ====================================================================
``JF``, ``JI``        ``(N, NF, n)`` / ``(N, NI, n)`` per-job columns (``n`` jobs a window)
``S``, ``C``, ``PF``  ``(N, NS)``, ``(N, NC)``, ``(N, 2, 1)`` scalars and profile scratch
``POS``               ``(N, n)`` row-builder scratch
``PRED``              ``(N, n)`` feature predictions (``(N, 0)`` without a predictor)
``ROWS``              ``(N, K)`` the job of every row (-1: padding)
``Q*``                ``Schedule-v0``: the users' columns (``QueueFeatures``)
``ATDEC``, ``NCAND``  at a decision point; candidates (waiting jobs) of it
``STEPS``, ``OVER``   steps of the episode; decisions with more candidates than rows
====================  ====================================================================
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from hpcgym.envs import observation as _observation
from hpcgym.envs import queue_observation as _queue_observation
from hpcgym.envs.observation import LOG_TAU, _build
from hpcgym.envs.queue_observation import _build_queue
from hpcgym.sim import _core as K
from hpcgym.sim import _core_ext as KX
from hpcgym.sim import _layout
from hpcgym.sim import metrics as _metrics
from hpcgym.sim.metrics import KERNEL_METRICS, metrics_kernel
from hpcgym.sim.options import POLICIES
from hpcgym.tasks.backfill import KERNEL_BACKFILL
from hpcgym.tasks.schedule import KERNEL_QUEUE

__all__ = [
    "TASK_BACKFILL",
    "TASK_SCHEDULE",
    "BatchState",
    "compiled_reference",
    "fast_path_problem",
    "refresh_cache",
]

#: the compiled step's branches (a task's ``kernel``: :mod:`hpcgym.tasks`)
TASK_BACKFILL = KERNEL_BACKFILL
TASK_SCHEDULE = KERNEL_QUEUE
#: the float metrics of an episode, then the count of backfilled jobs (rows of AGENT, REF)
N_FLOAT = len(KERNEL_METRICS)
EPISODE_METRICS: tuple[str, ...] = (*KERNEL_METRICS, "backfilled")


#: what the compiled step reads and writes (:meth:`BatchState.step` builds them):
#: ``sc`` the scalars, ``st`` the episodes' arrays, ``rf`` the reference's
#: sc = (task, est_scale, wait_scale, tau, den_e, den_w)
#: st = (JF, JI, S, C, PF, POS, PRED, OBS, MASK, ROWS, ATDEC, NCAND, STEPS, OVER, event,
#:       violation, order_id, ORDER, QUSER, QRATIO, QHIST, QCOUNT, QSCRATCH, QPOP, QSEEN,
#:       AGENT)
#: rf = (REF, RJF, RJI, RS, RC, RPF, RS0, RC0, REST, RAUTO, TRACE, START, REFC, need)


@njit(cache=True, nogil=True)
def _step_env(i, sc, st, actions):  # pragma: no cover - numba
    """Step sub-env ``i`` with ``actions[i]`` (a valid action: the caller maps invalid
    ones): ``event[i]`` := the engine's next stop (``EV_DONE`` at the end),
    ``violation[i]``, the observation, mask and rows; at the end the agent's metrics
    (``AGENT[i]``)."""
    task, est_scale, wait_scale, tau, den_e, den_w = sc
    (JF, JI, S, C, PF, POS, PRED, OBS, MASK, ROWS, ATDEC, NCAND, STEPS, OVER, event,
     violation, order_id, ORDER, QUSER, QRATIO, QHIST, QCOUNT, QSCRATCH, QPOP, QSEEN,
     AGENT) = st  # fmt: skip
    kq = OBS.shape[1]
    jf = JF[i]
    ji = JI[i]
    s = S[i]
    c = C[i]
    a = actions[i]
    viol = False
    ev = K.EV_DONE
    if ATDEC[i]:
        if task == TASK_BACKFILL:
            if a < kq:
                viol = K.backfill_start(jf, ji, s, c, ROWS[i, a]) == 2
            else:
                K.stop_backfilling(c)
        else:
            c[K.C_QCHOICE] = ROWS[i, a]
        s[K.S_UNTIL] = np.inf
        ev = K.advance(jf, ji, s, c, PF[i])
    STEPS[i] += 1
    violation[i] = viol
    event[i] = ev
    _observe_env(i, ev, sc, st)


@njit(cache=True, nogil=True)
def _observe_env(i, ev, sc, st):  # pragma: no cover - numba
    """Sub-env ``i``'s observation, mask and rows at the engine's stop ``ev`` (the end:
    padding, one valid action, and the agent's metrics)."""
    task, est_scale, wait_scale, tau, den_e, den_w = sc
    (JF, JI, S, C, PF, POS, PRED, OBS, MASK, ROWS, ATDEC, NCAND, STEPS, OVER, event,
     violation, order_id, ORDER, QUSER, QRATIO, QHIST, QCOUNT, QSCRATCH, QPOP, QSEEN,
     AGENT) = st  # fmt: skip
    kq = OBS.shape[1]
    jf = JF[i]
    ji = JI[i]
    s = S[i]
    c = C[i]
    obs = OBS[i]
    mask = MASK[i]
    rows = ROWS[i]
    if task == TASK_BACKFILL and ev == K.EV_DECISION:
        total = _build(
            jf[K.F_SUBMIT],
            jf[K.F_EST],
            ji[K.I_PROCS],
            ji[K.I_QUEUE],
            c[K.C_QLEN],
            ji[K.I_ORDER],
            c[K.C_OLEN],
            s[K.S_T],
            s[K.S_SHADOW],
            c[K.C_M],
            c[K.C_FREE],
            c[K.C_EXTRA],
            c[K.C_HEAD],
            c[K.C_CANDMODE] == K.CAND_EASY,
            POS[i],
            PRED[i],
            est_scale,
            wait_scale,
            tau,
            obs,
            mask,
            rows,
        )
        ATDEC[i] = True
        NCAND[i] = total
        if total > kq:
            OVER[i] += 1
    elif task == TASK_SCHEDULE and ev == K.EV_QUEUE:
        order = ORDER[i]
        norder = KX.policy_order(jf, ji, s, c, order_id[i], order)
        _build_queue(
            obs,
            mask,
            rows,
            order,
            norder,
            ji[K.I_QUEUE],
            c[K.C_QLEN],
            ji[K.I_RUN],
            c[K.C_RLEN],
            ji[K.I_FIN],
            c[K.C_NFIN],
            jf[K.F_SUBMIT],
            jf[K.F_REQUEST],
            jf[K.F_EST],
            ji[K.I_PROCS],
            jf[K.F_START],
            jf[K.F_REST],
            s[K.S_T],
            c[K.C_FREE],
            c[K.C_M],
            QUSER[i],
            QRATIO[i],
            QHIST[i],
            QCOUNT[i],
            QSCRATCH[i],
            QPOP[i],
            QSEEN[i],
            den_e,
            den_w,
            tau,
        )
        ATDEC[i] = True
        NCAND[i] = norder
        if norder > kq:
            OVER[i] += 1
    else:  # the end (or an engine stop this task has no row builder for: see caller)
        obs[:, :] = 0.0
        mask[:] = False
        rows[:] = -1
        if task == TASK_BACKFILL:
            mask[kq] = True  # STOP
        else:
            mask[0] = True
        NCAND[i] = 0
        ATDEC[i] = False
        if ev == K.EV_DONE:
            _episode_metrics(jf, ji, c, AGENT[i])


@njit(cache=True, nogil=True)
def _reference_lookup(st, rf, active):  # pragma: no cover - numba
    """``REF[i]`` := the cached reference metrics of every sub-env whose episode ended,
    ``need[i]``: not cached (to simulate)."""
    event = st[14]
    REF, REFC, need, TRACE, START = rf[0], rf[12], rf[13], rf[10], rf[11]
    for i in range(event.shape[0]):
        need[i] = False
        if active[i] and event[i] == K.EV_DONE:
            cached = REFC[TRACE[i], START[i]]
            if np.isnan(cached[0]):
                need[i] = True
            else:
                REF[i, :] = cached


@njit(cache=True, nogil=True)
def _reference_env(i, st, rf):  # pragma: no cover - numba
    """Simulate the reference on sub-env ``i``'s window: ``REF[i]``."""
    JF, JI = st[0], st[1]
    REF, RJF, RJI, RS, RC, RPF, RS0, RC0, REST, RAUTO, TRACE = rf[:11]
    t = TRACE[i]
    _run_reference(JF[i], JI[i], RJF[i], RJI[i], RS[i], RC[i], RPF[i], RS0[t], RC0[t],
                   REST[t], RAUTO[t], REF[i])  # fmt: skip


@njit(cache=True, nogil=True)
def _reference_store(rf):  # pragma: no cover - numba
    """Keep the simulated reference metrics in the per-window cache."""
    REF, TRACE, START, REFC, need = rf[0], rf[10], rf[11], rf[12], rf[13]
    for i in range(need.shape[0]):
        if need[i]:
            REFC[TRACE[i], START[i], :] = REF[i]


@njit(cache=True)
def _episode_metrics(jf, ji, c, out):  # pragma: no cover - numba
    """``out`` := the metrics of a finished episode (:data:`EPISODE_METRICS`)."""
    metrics_kernel(jf[K.F_SUBMIT], jf[K.F_RUNTIME], ji[K.I_PROCS], jf[K.F_START],
                   float(c[K.C_M]), out)  # fmt: skip
    bf = 0
    for j in range(ji.shape[1]):
        bf += ji[K.I_BACKFILLED, j]
    out[N_FLOAT] = bf


@njit(cache=True)
def _run_reference(jf, ji, rjf, rji, rs, rc, rpf, s0, c0, est, auto, out):  # pragma: no cover
    """Simulate the reference scheduler (its engine state before the first event:
    ``s0``/``c0``) on the window of ``jf``/``ji`` as :class:`~hpcgym.sim.engine.Simulation`
    starts it (estimates: the requests, ``est`` 0, or the run times, 1; ``auto``: the
    starvation threshold is 3x the window's largest request); ``out`` := its metrics."""
    _load_state(rjf, rji, rs, rc, jf[K.F_SUBMIT], jf[K.F_RUNTIME], jf[K.F_REQUEST],
                ji[K.I_PROCS], s0, c0, est, auto)  # fmt: skip
    rpf[:, :] = 0.0
    if K.advance(rjf, rji, rs, rc, rpf) != K.EV_DONE:
        out[:] = np.nan  # not a compiled scheduler: the caller checked this beforehand
        return
    _episode_metrics(rjf, rji, rc, out)


@njit(cache=True, nogil=True)
def _load_state(
    jf, ji, s, c, submit, runtime, request, procs, s0, c0, est, auto
):  # pragma: no cover
    """An engine state before its first event, as :class:`~hpcgym.sim.engine.Simulation`
    builds it: the jobs' columns, the estimates (the requests, ``est`` 0, or the run
    times, 1), the scalars of ``s0``/``c0`` (a simulation of the same scheduler just
    built), the window's first submission as the clock and, with ``auto``, the
    starvation threshold of the window (3x its largest request)."""
    jf[:, :] = 0.0
    ji[:, :] = 0
    jf[K.F_SUBMIT] = submit
    jf[K.F_RUNTIME] = runtime
    jf[K.F_REQUEST] = request
    jf[K.F_EST] = request if est == 0 else runtime
    jf[K.F_START] = np.nan
    jf[K.F_BFSHADOW] = np.nan
    jf[K.F_HEADSINCE] = np.nan
    ji[K.I_PROCS] = procs
    ji[K.I_BFHEAD] = -1
    s[:] = s0
    c[:] = c0
    s[K.S_T] = submit[0]
    if auto:
        s[K.S_THETA] = 3.0 * np.max(request)


@njit(cache=True, nogil=True)
def _reset_env(i, sc, st, tr):  # pragma: no cover - numba
    """Sub-env ``i``'s next episode on the window at ``START[i]`` of its trace (the start
    drawn by the sub-env): the engine's initial state, the users' columns of
    ``Schedule-v0``, the run to the first decision point and its observation."""
    task = sc[0]
    JF, JI, S, C, PF = st[0], st[1], st[2], st[3], st[4]
    STEPS, OVER, ORDER = st[12], st[13], st[17]
    QUSER, QRATIO, QHIST, QCOUNT, QSCRATCH, QPOP, QSEEN = st[18:25]
    TSUB, TRUN, TREQ, TPROC, TUSER, AS0, AC0, AEST, AAUTO, TRACE, START, NUSERS = tr
    t = TRACE[i]
    lo = START[i]
    n = JF.shape[2]
    hi = lo + n
    jf, ji, s, c = JF[i], JI[i], S[i], C[i]
    _load_state(jf, ji, s, c, TSUB[t, lo:hi], TRUN[t, lo:hi], TREQ[t, lo:hi], TPROC[t, lo:hi],
                AS0[t], AC0[t], AEST[t], AAUTO[t])  # fmt: skip
    PF[i] = 0.0
    STEPS[i] = 0
    OVER[i] = 0
    if task == TASK_SCHEDULE:
        _reset_users(TUSER[t, lo:hi], TRUN[t, lo:hi], TREQ[t, lo:hi], QUSER[i], QRATIO[i])
        NUSERS[i] = max(np.max(QUSER[i]) + 1, 1)
        ORDER[i] = 0
        QHIST[i] = 0.0
        QCOUNT[i] = 0
        QSCRATCH[i] = 0
        QPOP[i] = 0.0
        QSEEN[i] = 0
    s[K.S_UNTIL] = np.inf
    _observe_env(i, K.advance(jf, ji, s, c, PF[i]), sc, st)


@njit(cache=True, nogil=True)
def _reset_users(user, runtime, request, dense, ratio):  # pragma: no cover - numba
    """The users' columns of :class:`~hpcgym.envs.queue_observation.QueueFeatures`: dense
    ids (the rank of each known user among the window's distinct users, as
    ``np.unique``'s inverse; -1: unknown) and each job's accuracy ``runtime / request``."""
    known = np.sort(user[user >= 0])
    distinct = np.empty(known.shape[0], dtype=np.int64)
    nd = 0
    for k in range(known.shape[0]):
        if nd == 0 or known[k] != distinct[nd - 1]:
            distinct[nd] = known[k]
            nd += 1
    distinct = distinct[:nd]
    for j in range(user.shape[0]):
        dense[j] = np.searchsorted(distinct, user[j]) if user[j] >= 0 else -1
        ratio[j] = min(max(runtime[j] / max(request[j], 1.0), 0.0), 1.0)


@njit(cache=True, nogil=True)
def _batch_serial(sc, st, rf, tr, ref_on, actions, active, resetting):  # pragma: no cover
    """One call of the batch on the calling thread: reset the sub-envs of ``resetting``,
    step those of ``active``, then (``ref_on``) simulate the reference on the windows that
    ended (one kernel for both, so that numba compiles the engine into one of them)."""
    for i in range(resetting.shape[0]):
        if resetting[i]:
            _reset_env(i, sc, st, tr)
    for i in range(active.shape[0]):
        if active[i]:
            _step_env(i, sc, st, actions)
    if ref_on:
        _reference_lookup(st, rf, active)
        need = rf[13]
        for i in range(need.shape[0]):
            if need[i]:
                _reference_env(i, st, rf)
        _reference_store(rf)


@njit(cache=True, parallel=True, nogil=True)
def _batch_parallel(sc, st, rf, tr, ref_on, actions, active, resetting):  # pragma: no cover
    """:func:`_batch_serial` with the sub-envs spread over numba's threads."""
    for i in prange(resetting.shape[0]):
        if resetting[i]:
            _reset_env(i, sc, st, tr)
    for i in prange(active.shape[0]):
        if active[i]:
            _step_env(i, sc, st, actions)
    if ref_on:
        _reference_lookup(st, rf, active)
        need = rf[13]
        for i in prange(need.shape[0]):
            if need[i]:
                _reference_env(i, st, rf)
        _reference_store(rf)


#: the files of the compiled functions the batch step calls: numba's disk cache notices
#: changes of a function's own file only, so :func:`refresh_cache` compares these
_DEPENDENCIES = (K, KX, _layout, _metrics, _observation, _queue_observation)


def _dependency_digest() -> str:
    h = hashlib.blake2b(digest_size=16)
    for mod in _DEPENDENCIES:
        h.update(Path(str(mod.__file__)).read_bytes())
    return h.hexdigest()


def refresh_cache(dispatcher: Any = None) -> bool:
    """Drop a compiled function of this module from numba's disk cache when a file it
    calls into has changed since it was cached (numba itself only checks the function's
    own file), so that its next call compiles it again. Returns whether it was dropped.

    :param dispatcher: the cached numba function (default: every one of the batch step)
    """
    if dispatcher is None:
        kernels = (_batch_serial, _batch_parallel, _step_env, _observe_env,
                   _reference_lookup, _reference_env, _reference_store, _episode_metrics,
                   _run_reference, _load_state, _reset_env, _reset_users)  # fmt: skip
        return any([refresh_cache(f) for f in kernels])
    cache = getattr(dispatcher, "_cache", None)
    path = getattr(cache, "_cache_path", None)
    if cache is None or path is None:
        return False
    stamp = Path(path) / f"{dispatcher.__name__}.deps"
    digest = _dependency_digest()
    try:
        if stamp.read_text(encoding="ascii") == digest:
            return False
    except OSError:
        pass
    cache.flush()
    try:
        stamp.write_text(digest, encoding="ascii")
    except OSError:  # a read-only cache folder: numba then compiles in memory anyway
        pass
    return True


refresh_cache()


def fast_path_problem(env: Any) -> str | None:
    """Why sub-env ``env`` (after a reset) cannot be stepped by the compiled batch step,
    or ``None`` when it can: every per-step part of its configuration must be compiled
    (no online estimator or feature predictor, no dense reward, a built-in backfiller
    inside the queue decision, and what its task says: ``task.batch_problem``, e.g.
    Backfill-v0's extended features or Schedule-v0's informed rows)."""
    sim = env.state.sim
    if sim is None:
        return "no episode"
    if env.task.kernel is None:
        return f"the task {env.task.name!r} (it has no compiled step)"
    problem = env.task.batch_problem(env)
    if problem is not None:
        return problem
    if int(sim.C[K.C_ONLINE]) != 0:
        return "an online estimator or feature predictor (it predicts in Python at arrivals)"
    if env.state.credit is not None:
        return "the dense reward (paid in Python job by job)"
    if int(sim.C[K.C_POLICY]) == K.POL_EXTERNAL and int(sim.C[K.C_BACKFILL]) == K.BF_EXTERNAL:
        return "an external backfiller inside the queue decision"
    return None


def compiled_reference(spec: Any) -> int | None:
    """How the batch step simulates reference scheduler ``spec`` (a
    :class:`~hpcgym.sim.schedulers.SchedulerSpec`): its estimates are the requests (0) or
    the run times (1); ``None`` when it needs Python (a decider, a predictor, a warm start,
    a separate ranking estimate), and the episode's end is then computed by the sub-env
    itself."""
    if spec is None or spec.decider is not None or spec.warm is not None:
        return None
    if spec.ranks_apart or spec.policy.upper() not in POLICIES:  # one estimate row; compiled
        return None
    est = spec._estimator()
    if not isinstance(est, str):
        return None
    return {"request": 0, "actual": 1}.get(est)


class BatchState:
    """The batched engine state of a vector env's ``N`` episodes (module docstring) and the
    compiled step over it.

    :param envs: the sub-envs (each with its slices of ``obs``/``mask`` bound)
    :param obs: ``(N, K, F)`` float32 batched observations (the sub-envs' slices)
    :param mask: ``(N, K + 1)`` or ``(N, K)`` bool batched masks
    :param task: :data:`TASK_BACKFILL` or :data:`TASK_SCHEDULE`
    :param n_jobs: jobs of every window
    :param threads: threads of the step (``None``: numba's, every core by default)
    """

    def __init__(
        self,
        envs: tuple[Any, ...],
        obs: np.ndarray,
        mask: np.ndarray,
        task: int,
        n_jobs: int,
        threads: int | None = 1,
    ) -> None:
        n = len(envs)
        kq = obs.shape[1]
        first = envs[0]
        self.envs = envs
        # numba.config sets its attributes from the environment at import: mypy cannot see them
        most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
        self.threads = min(int(threads), most) if threads else None
        self.task = int(task)
        self.n_jobs = int(n_jobs)
        self.obs, self.mask = obs, mask
        self.JF = np.zeros((n, K.NF, n_jobs))
        self.JI = np.zeros((n, K.NI, n_jobs), dtype=np.int64)
        self.S = np.zeros((n, K.NS))
        self.C = np.zeros((n, K.NC), dtype=np.int64)
        self.PF = np.zeros((n, 2, 1))
        self.POS = np.zeros((n, n_jobs), dtype=np.int64)
        width = n_jobs if first.state.pred.shape[0] > 0 else 0
        self.PRED = np.zeros((n, width))
        self.ROWS = np.full((n, kq), -1, dtype=np.int64)
        self.ATDEC = np.zeros(n, dtype=np.bool_)
        self.NCAND = np.zeros(n, dtype=np.int64)
        self.STEPS = np.zeros(n, dtype=np.int64)
        self.OVER = np.zeros(n, dtype=np.int64)
        self.event = np.zeros(n, dtype=np.int64)
        self.violation = np.zeros(n, dtype=np.bool_)
        schedule = self.task == TASK_SCHEDULE
        m = n_jobs if schedule else 0
        self.ORDER = np.zeros((n, m), dtype=np.int64)
        self.QUSER = np.zeros((n, m), dtype=np.int64)
        self.QRATIO = np.zeros((n, m))
        self.QHIST = np.zeros((n, m, 4))
        self.QCOUNT = np.zeros((n, m), dtype=np.int64)
        self.QSCRATCH = np.zeros((n, 2, m), dtype=np.int64)
        self.QPOP = np.zeros((n, 2 if schedule else 0))
        self.QSEEN = np.zeros((n, 1 if schedule else 0), dtype=np.int64)
        self.tau = LOG_TAU if first.time_scale == "log" else 0.0
        #: the row order's policy id of every sub-env (Schedule-v0: set by its task's bind)
        self.order_id = np.zeros(n, dtype=np.int64)
        tau = self.tau
        self.den_e = float(np.log1p(first.est_scale / tau) if tau > 0 else first.est_scale)
        self.den_w = float(np.log1p(first.wait_scale / tau) if tau > 0 else first.wait_scale)
        for env in envs:
            if (env.est_scale, env.wait_scale) != (first.est_scale, first.wait_scale):
                raise ValueError("the sub-envs of a compiled batch share est_scale/wait_scale")
        self.AGENT = np.zeros((n, len(EPISODE_METRICS)))
        self.REF = np.zeros((n, len(EPISODE_METRICS)))
        self.need = np.zeros(n, dtype=np.bool_)
        self.START = np.zeros(n, dtype=np.int64)
        self._init_reference(envs, n, n_jobs)
        self._init_resets(envs, n, n_jobs)
        # the compiled step's arguments (module comment above _step_env), built once
        self._sc = (self.task, float(first.est_scale), float(first.wait_scale), self.tau,
                    self.den_e, self.den_w)  # fmt: skip
        self._st = (self.JF, self.JI, self.S, self.C, self.PF, self.POS, self.PRED, self.obs,
                    self.mask, self.ROWS, self.ATDEC, self.NCAND, self.STEPS, self.OVER,
                    self.event, self.violation, self.order_id, self.ORDER, self.QUSER,
                    self.QRATIO, self.QHIST, self.QCOUNT, self.QSCRATCH, self.QPOP, self.QSEEN,
                    self.AGENT)  # fmt: skip
        self._rf = (self.REF, self.RJF, self.RJI, self.RS, self.RC, self.RPF, self.RS0,
                    self.RC0, self.REST, self.RAUTO, self.TRACE, self.START, self.REFC,
                    self.need)  # fmt: skip
        self._tr = (self.TSUB, self.TRUN, self.TREQ, self.TPROC, self.TUSER, self.AS0,
                    self.AC0, self.AEST, self.AAUTO, self.TRACE, self.START,
                    self.NUSERS)  # fmt: skip
        self._resetting = np.zeros(n, dtype=np.bool_)
        self._idle = np.zeros(n, dtype=np.int64)
        self._none = np.zeros(n, dtype=np.bool_)
        self._threaded(self._idle, self._none, self._none)  # load (or compile) the kernel

    def _init_reference(self, envs: tuple[Any, ...], n: int, n_jobs: int) -> None:
        """The reference scheduler of every trace of the batch, when compiled: its engine
        state before the first event (from a :class:`~hpcgym.sim.engine.Simulation` the
        reference itself builds), its estimates and a per-window cache of its metrics."""
        traces: dict[int, int] = {}  # id of the sub-env's workload -> trace index
        firsts: list[Any] = []
        self.TRACE = np.zeros(n, dtype=np.int64)
        for i, env in enumerate(envs):
            t = traces.setdefault(id(env.workload), len(traces))
            if t == len(firsts):
                firsts.append(env)
            self.TRACE[i] = t
        #: the reward compares with a reference scheduler (else with the raw objective)
        self.has_ref = firsts[0].reference is not None
        kinds = [compiled_reference(e.reference) for e in firsts] if self.has_ref else []
        #: whether the batch step simulates the reference
        self.ref_on = self.has_ref and all(k is not None for k in kinds)
        #: whether the batch step computes the episode's end (else the sub-env does)
        self.end_on = self.ref_on or not self.has_ref
        nt = len(firsts)
        conservative = self.ref_on and any(e.reference.backfill == "conservative" for e in firsts)
        self.RS0 = np.zeros((nt, K.NS))
        self.RC0 = np.zeros((nt, K.NC), dtype=np.int64)
        self.REST = np.array([k or 0 for k in kinds] or [0] * nt, dtype=np.int64)
        self.RAUTO = np.zeros(nt, dtype=np.bool_)
        work = n if self.ref_on else 0
        self.RJF = np.zeros((work, K.NF, n_jobs))
        self.RJI = np.zeros((work, K.NI, n_jobs), dtype=np.int64)
        self.RS = np.zeros((work, K.NS))
        self.RC = np.zeros((work, K.NC), dtype=np.int64)
        self.RPF = np.zeros((work, 2, 2 * n_jobs + 4 if conservative else 1))
        longest = max(len(e.workload) for e in firsts) if self.ref_on else 0
        self.REFC = np.full((nt, longest, len(EPISODE_METRICS)), np.nan)
        if not self.ref_on:
            return
        for t, env in enumerate(firsts):
            spec = env.reference
            template = spec.make_simulation(env.workload.window(0, n_jobs), 0)
            self.RS0[t] = template.S
            self.RC0[t] = template.C
            self.RAUTO[t] = spec.starvation == "auto"

    def _init_resets(self, envs: tuple[Any, ...], n: int, n_jobs: int) -> None:
        """What the compiled reset needs: every trace's job columns, the agent's engine
        state before the first event (from a simulation the sub-env itself builds) and
        its estimates; :attr:`reset_on` is whether resets are compiled (the sub-envs'
        estimates are the requests or the run times)."""
        firsts: list[Any] = []
        for i, env in enumerate(envs):
            if int(self.TRACE[i]) == len(firsts):
                firsts.append(env)
        kinds = [compiled_reference(e.agent_scheduler) for e in firsts]
        #: whether resets are compiled too (else each sub-env resets itself in Python)
        self.reset_on = all(k is not None for k in kinds)
        nt = len(firsts)
        longest = max(len(e.workload) for e in firsts) if self.reset_on else 0
        self.TSUB = np.zeros((nt, longest))
        self.TRUN = np.zeros((nt, longest))
        self.TREQ = np.zeros((nt, longest))
        self.TPROC = np.zeros((nt, longest), dtype=np.int64)
        self.TUSER = np.zeros((nt, longest), dtype=np.int64)
        self.AS0 = np.zeros((nt, K.NS))
        self.AC0 = np.zeros((nt, K.NC), dtype=np.int64)
        self.AEST = np.array([k or 0 for k in kinds], dtype=np.int64)
        self.AAUTO = np.zeros(nt, dtype=np.bool_)
        self.NUSERS = np.ones(n, dtype=np.int64)
        if not self.reset_on:
            return
        for t, env in enumerate(firsts):
            w = env.workload
            m = len(w)
            self.TSUB[t, :m], self.TRUN[t, :m], self.TREQ[t, :m] = w.submit, w.runtime, w.request
            self.TPROC[t, :m], self.TUSER[t, :m] = w.procs, w.user
            # a throwaway twin of the task builds the template (it keeps episode scratch)
            window = w.window(env.valid_starts[0], n_jobs)
            template = env.task.spawn().make_simulation(env, window, 0)
            self.AS0[t] = template.S
            self.AC0[t] = template.C
            self.AAUTO[t] = env.agent_scheduler.starvation == "auto"

    def reset(self, indices: list[int], seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> None:  # fmt: skip
        """Reset the sub-envs ``indices`` in one compiled call: each draws its window and
        engine seed with its own generator (the single env's ``draw_window``: the same
        windows as its own reset), the rest is compiled; equal to the sub-env's own reset.

        :param indices: the sub-envs
        :param seed: one seed for every sub-env of ``indices`` (a list: in their order)
        :param options: the single env's reset options (``{"start": j}``)
        :raises RuntimeError: resets are not compiled for this batch (:attr:`reset_on`)
        """
        if not self.reset_on:
            raise RuntimeError("the sub-envs' estimates are not compiled: reset them in Python")
        resetting = self._resetting
        resetting.fill(False)
        n_jobs = self.n_jobs
        for k, i in enumerate(indices):
            env = self.envs[i]
            s = seed[k] if isinstance(seed, list) else seed
            start, sim_seed = env.draw_window(s, options)
            st = env.state
            sim = st.sim
            sim.workload = env.workload.window(start, n_jobs)
            sim.rng = np.random.default_rng(sim_seed)
            st.start = start
            st.done = False
            st.final_info = {}
            self.START[i] = start
            resetting[i] = True
        self._threaded(self._idle, self._none, resetting)
        for i in indices:
            self.sync(i)
            self.envs[i].task.batch_reset(self, i)

    def bind(self, i: int) -> None:
        """Move sub-env ``i``'s episode (just reset by its own code) into slot ``i`` and
        point its engine, scratch and row arrays at the slot.

        :raises ValueError: the window's length differs from the batch's
        """
        env = self.envs[i]
        st = env.state
        sim = st.sim
        if len(sim.workload) != self.n_jobs:
            raise ValueError(
                f"window of {len(sim.workload)} jobs in a batch of {self.n_jobs}-job windows"
            )
        for name, buf in (("JF", self.JF), ("JI", self.JI), ("S", self.S), ("C", self.C)):
            buf[i] = getattr(sim, name)
            setattr(sim, name, buf[i])
        sim.rebind_arrays()  # the view is rebuilt on the slot's arrays
        if self.PRED.shape[1]:
            self.PRED[i] = st.pred
            st.pred = self.PRED[i]
        self.ROWS[i] = st.rows
        st.rows = self.ROWS[i]
        st.out = (self.obs[i], self.mask[i], st.rows)
        env.task.batch_bind(self, i)
        self.ATDEC[i] = st.at_decision
        self.NCAND[i] = st.count
        self.STEPS[i] = st.steps
        self.OVER[i] = st.overflow
        self.START[i] = st.start

    def sync(self, i: int) -> None:
        """Write slot ``i``'s per-step counters back into sub-env ``i``'s attributes."""
        st = self.envs[i].state
        st.at_decision = bool(self.ATDEC[i])
        st.count = int(self.NCAND[i])
        st.steps = int(self.STEPS[i])
        st.overflow = int(self.OVER[i])

    def episode_end(self, i: int) -> tuple[dict[str, float], dict[str, float] | None] | None:
        """The agent's and the reference's metrics of sub-env ``i``'s ended episode, or
        ``None`` when the batch step does not compute them (see :attr:`end_on`)."""
        if not self.end_on:
            return None
        return self.metrics(i), self.metrics(i, reference=True) if self.has_ref else None

    def metrics(self, i: int, reference: bool = False) -> dict[str, float]:
        """The metrics of sub-env ``i``'s ended episode (``reference``: of the reference
        scheduler on its window) as :func:`~hpcgym.sim.metrics.compute_metrics` gives them."""
        row = (self.REF if reference else self.AGENT)[i].tolist()
        out: dict[str, float] = dict(zip(KERNEL_METRICS, row[:N_FLOAT], strict=True))
        out["backfilled"] = int(row[N_FLOAT])
        out["jobs"] = self.n_jobs
        out["machine_size"] = int(self.C[i, K.C_M])
        return out

    def step(self, actions: np.ndarray, active: np.ndarray) -> None:
        """One compiled step of every active sub-env (valid ``actions``); the results are
        in :attr:`event`, :attr:`violation`, the batched buffers and, for the episodes that
        ended, :meth:`metrics`."""
        self._threaded(actions, active, self._none)

    def _threaded(self, actions: np.ndarray, active: np.ndarray, resetting: np.ndarray) -> None:
        """The kernel on :attr:`threads` threads (numba's count restored after)."""
        if self.threads == 1:
            _batch_serial(self._sc, self._st, self._rf, self._tr, self.ref_on, actions, active,
                          resetting)  # fmt: skip
            return
        prev = numba.get_num_threads()
        if self.threads is not None and prev != self.threads:
            numba.set_num_threads(self.threads)
        try:
            _batch_parallel(self._sc, self._st, self._rf, self._tr, self.ref_on, actions, active,
                            resetting)  # fmt: skip
        finally:
            if numba.get_num_threads() != prev:
                numba.set_num_threads(prev)
