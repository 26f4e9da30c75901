"""Observation builder of the job-ordering env ``hpcgym/Schedule-v0`` (compiled rows).

:func:`build_queue` reads the engine's public view (:class:`hpcgym.sim.view.EngineView`)
at a queue decision and writes one row per waiting job, in the order of the reference
policy (its first choice is row 0; at most ``K`` rows), the action mask and the job of
every row. Columns (:data:`QUEUE_COLUMNS`; every value is in ``[0, 1]``; ``dur`` is the
duration scaling of :mod:`hpcgym.envs.observation`, linear or log;
``sat(x, t) = x / (x + t)``, ``cnt(x) = min(log2(1 + x) / 10, 1)``):

==  ===============  ===================================================================
 #  name             value
==  ===============  ===================================================================
 0  valid            1 for a waiting job's row, 0 for padding
 1  wait             ``dur(now - submit, wait_scale)``
 2  request          ``dur(request, est_scale)``
 3  estimate         ``dur(est, est_scale)``: the engine estimator's prediction
 4  procs            ``procs / m``
 5  fits             1 if the job fits in the free processors now
 6  time_to_fit      ``dur(t_fit - now, est_scale)``: t_fit = the first estimated end of a
                     running job at which enough processors are free (0 if it fits now)
 7  slowdown_now     ``1 - max(est, 10) / (wait + max(est, 10))``: its bounded slowdown
                     if started now, read as ``1 - 1/bsld``
 8  rank             position in the reference order / ``max(rows - 1, 1)``
 9  user_accuracy    mean ``actual / request`` of the user's last 4 completed jobs (the
                     episode's mean before that; 1 before any completion)
10  user_running     ``cnt(running jobs of the user)``
11  user_waiting     ``cnt(other waiting jobs of the user)``
12  free             ``free / m``                                  (same in every row)
13  queue_jobs       ``cnt(waiting jobs)``                          (same in every row)
14  queue_work       ``sat(sum(procs * est) / m, 1 day)``, waiting   (same in every row)
15  running_jobs     ``cnt(running jobs)``                          (same in every row)
==  ===============  ===================================================================

Only what a scheduler knows now is read: submissions so far, requests, the engine's
estimates and state, and the actual run times of completed jobs (user accuracy).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hpcgym.envs.observation import _cnt, _den, _dur

__all__ = ["QUEUE_COLUMNS", "USER_HISTORY", "QueueFeatures", "build_queue"]

QUEUE_COLUMNS: tuple[str, ...] = (
    "valid",
    "wait",
    "request",
    "estimate",
    "procs",
    "fits",
    "time_to_fit",
    "slowdown_now",
    "rank",
    "user_accuracy",
    "user_running",
    "user_waiting",
    "free",
    "queue_jobs",
    "queue_work",
    "running_jobs",
)
#: completed jobs per user that ``user_accuracy`` averages
USER_HISTORY = 4
DAY = 86400.0


class QueueFeatures:
    """Per-episode state of the user columns: dense user ids of the window's jobs, each
    user's last :data:`USER_HISTORY` accuracies (a ring) and completed count, the
    population's sum and count, and how many completions were already read.

    :param user: user id of every job of the window (negative: unknown)
    :param runtime: actual run time of every job (read for completed jobs only)
    :param request: request of every job
    """

    def __init__(self, user: np.ndarray, runtime: np.ndarray, request: np.ndarray) -> None:
        user = np.asarray(user)
        known = user >= 0
        dense = np.full(len(user), -1, dtype=np.int64)
        if known.any():
            _, inv = np.unique(user[known], return_inverse=True)
            dense[known] = inv
        self.user = dense
        nu = int(dense.max()) + 1 if len(dense) else 0
        self.n_users = max(nu, 1)
        self.ratio = np.clip(
            np.asarray(runtime, dtype=np.float64) / np.maximum(request, 1.0), 0.0, 1.0
        )
        self.hist = np.zeros((self.n_users, USER_HISTORY))
        self.count = np.zeros(self.n_users, dtype=np.int64)
        self.scratch = np.zeros((2, self.n_users), dtype=np.int64)  # running, waiting
        self.pop = np.zeros(2)  # sum, count
        self.seen = np.zeros(1, dtype=np.int64)


def build_queue(
    view,
    order: np.ndarray,
    norder: int,
    qf: QueueFeatures,
    est_scale: float,
    wait_scale: float,
    kq: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    tau: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Observation, mask (``(K,)``), row jobs and the number of waiting jobs.

    :param view: the simulation's :class:`~hpcgym.sim.view.EngineView`
    :param order: the waiting jobs in the reference order (``order[:norder]``)
    :param qf: the episode's :class:`QueueFeatures`
    :param out: batched ``(obs, mask, rows)`` slices to write into, or ``None`` (fresh)
    :param tau: 0 (linear durations) or the log scale's ``tau``
    """
    if out is None:
        obs = np.zeros((kq, len(QUEUE_COLUMNS)), dtype=np.float32)
        mask = np.zeros(kq, dtype=bool)
        rows = np.full(kq, -1, dtype=np.int64)
    else:
        obs, mask, rows = out
    _build_queue(
        obs,
        mask,
        rows,
        order,
        norder,
        view.waiting_buffer,
        view.n_waiting,
        view.running_buffer,
        view.n_running,
        view.finished_buffer,
        view.n_finished,
        view.submit,
        view.request,
        view.estimate,
        view.procs,
        view.start,
        view.running_estimate,
        view.now,
        view.free,
        view.machine_size,
        qf.user,
        qf.ratio,
        qf.hist,
        qf.count,
        qf.scratch,
        qf.pop,
        qf.seen,
        _den(est_scale, tau),
        _den(wait_scale, tau),
        tau,
    )
    return obs, mask, rows, norder


@njit(cache=True)
def _build_queue(  # pragma: no cover - numba
    obs,
    mask,
    rows,
    order,
    norder,
    waiting,
    nwait,
    running,
    nrun,
    fin,
    nfin,
    submit,
    request,
    est,
    procs,
    start,
    rest,
    now,
    free,
    m,
    user,
    ratio,
    hist,
    count,
    scratch,
    pop,
    seen,
    den_e,
    den_w,
    tau,
):
    # ---- completions since the last observation: the users' accuracy history
    for k in range(seen[0], nfin):
        j = fin[k]
        u = user[j]
        pop[0] += ratio[j]
        pop[1] += 1.0
        if u >= 0:
            hist[u, count[u] % hist.shape[1]] = ratio[j]
            count[u] += 1
    seen[0] = nfin
    prior = pop[0] / pop[1] if pop[1] > 0 else 1.0
    # ---- machine and queue state
    work = 0.0
    for k in range(nwait):
        j = waiting[k]
        work += procs[j] * est[j]
        if user[j] >= 0:
            scratch[1, user[j]] += 1
    for k in range(nrun):
        j = running[k]
        if user[j] >= 0:
            scratch[0, user[j]] += 1
    fm = float(m)
    c_free = free / fm
    c_qj = _cnt(float(nwait))
    c_qw = (work / fm) / (work / fm + DAY)
    c_rj = _cnt(float(nrun))
    kq = obs.shape[0]
    nrows = min(norder, kq)
    for r in range(nrows):
        j = order[r]
        w = now - submit[j]
        e = est[j]
        p = procs[j]
        o = obs[r]
        o[0] = 1.0
        o[1] = _dur(w, den_w, tau)
        o[2] = _dur(request[j], den_e, tau)
        o[3] = _dur(e, den_e, tau)
        o[4] = p / fm
        if p <= free:
            o[5] = 1.0
            o[6] = 0.0
        else:
            o[5] = 0.0
            avail = free
            t_fit = now
            for k in range(nrun):
                q = running[k]
                avail += procs[q]
                if avail >= p:
                    t_fit = start[q] + rest[q]
                    break
            o[6] = _dur(max(t_fit - now, 0.0), den_e, tau)
        b = max(e, 10.0)
        o[7] = 1.0 - b / (max(w, 0.0) + b)
        o[8] = r / max(nrows - 1, 1)
        u = user[j]
        if u >= 0 and count[u] > 0:
            nh = min(count[u], hist.shape[1])
            acc = 0.0
            for x in range(nh):
                acc += hist[u, x]
            o[9] = acc / nh
            o[10] = _cnt(float(scratch[0, u]))
            o[11] = _cnt(float(scratch[1, u] - 1))
        else:
            o[9] = prior
            if u >= 0:
                o[10] = _cnt(float(scratch[0, u]))
                o[11] = _cnt(float(scratch[1, u] - 1))
            else:
                o[10] = 0.0
                o[11] = 0.0
        o[12] = c_free
        o[13] = c_qj
        o[14] = c_qw
        o[15] = c_rj
        mask[r] = True
        rows[r] = j
    for r in range(nrows, kq):
        obs[r, :] = 0.0
        mask[r] = False
        rows[r] = -1
    # ---- leave the scratch counts at zero
    for k in range(nwait):
        j = waiting[k]
        if user[j] >= 0:
            scratch[1, user[j]] = 0
    for k in range(nrun):
        j = running[k]
        if user[j] >= 0:
            scratch[0, user[j]] = 0
