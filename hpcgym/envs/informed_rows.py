"""The informed rows of ``hpcgym/Schedule-v0`` (``rows="informed"``): what a site knows.

A site that runs a scheduler has its accounting log: every job that finished before now,
with its user, request, size and run time. With ``rows="informed"`` each row of
:mod:`hpcgym.envs.queue_observation` (the 16 default columns, unchanged) is followed by
:data:`N_INFORMED` columns built from that knowledge (:data:`INFORMED_COLUMNS`). Every
value is in ``[0, 1]``; padding rows stay all zero. ``lg(x) = min(ln(1 + x / 10 s) /
ln(1 + est_scale / 10 s), 1)`` is the log duration scale of the env (whatever
``time_scale``), ``sat(x, t) = x / (x + t)``, ``cnt(x) = min(log2(1 + x) / 10, 1)``:

==  ==================  ==============================================================
 #  name                value
==  ==================  ==============================================================
16  rank_estimate       ``lg(the ranking estimate)``: the run time the row order ranks
                        by (the env's ``rank_estimator``; the reservation estimate
                        when there is none)
17  prediction          ``lg(the row predictor's estimate)``, predicted at the job's
                        submission (``row_predictor``; default: the log-ridge predictor
                        warmed on the log of the history, ``log-ridge:warm=log``)
18  like_count          ``cnt(L)``, ``L`` = the user's finished *like jobs* known now
                        (same user, same request, same processors)
19  like_last           ``lg(run time of the most recently finished like job)``; 0 when
                        ``L = 0``
20  like_mean           ``lg(mean run time of the last min(L, 4) like jobs)``; 0 when
                        ``L = 0``
21  like_ago            ``sat(now - end of the most recent like job, 1 h)``; 1 when
                        ``L = 0``
22  user_accuracy_long  mean ``actual / request`` (clipped to 1) of the user's last
                        :data:`LONG_HISTORY` (32) finished jobs; without any, the mean
                        over every finished job known (1 when there is none)
23  user_finished       ``cnt(the user's finished jobs known now)``
==  ==================  ==============================================================

**What is known now.** The history (columns 18-23) is, in the order of the ends: the
jobs of the trace before the window that the trace's recorded schedule (SWF field 3,
:attr:`~hpcgym.workload.core.Workload.recorded_wait`) shows finished by the window's first
submission ``t0`` (end = ``submit + recorded wait + run time``), then the window's jobs as
the simulation finishes them (end = start + run time). ``row_history`` sets how far back
the log goes: ``"log"`` (default) every job of the trace before the window (a site's whole
accounting log), ``N`` the last ``N`` jobs before the window, ``0`` none (the window's
finished jobs only). Jobs the log shows still running or waiting at ``t0`` are not in the
window's simulation and never enter the history (as in :mod:`hpcgym.sim.warmstart`), nor
do jobs without a recorded wait. A job's run time is read only once it has finished; the
rows read the future only through an estimator the env is given that reads it
(``estimator``, ``rank_estimator`` or ``row_predictor`` ``"actual"``: a clairvoyant
reference point). ``tests/test_informed_rows.py`` checks it: changing the run time of
every job not finished at a decision point leaves every row up to it unchanged.

Unknown users (negative ids) have no like jobs and no history of their own (columns 18-20
and 23 read 0, 21 reads 1, 22 the population's mean).

The state is kept in Python between the compiled calls, so the compiled batch step of the
vector env does not run these rows: ``gymnasium.make_vec`` steps such envs one by one in
Python (``compiled=True`` says so with an error).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from hpcgym.envs.observation import LOG_TAU, _cnt, _den, _dur
from hpcgym.envs.queue_observation import QueueFeatures, build_queue
from hpcgym.predictors.ave import dense_ids
from hpcgym.workload.core import Workload

__all__ = [
    "DEFAULT_ROW_PREDICTOR",
    "default_row_predictor",
    "INFORMED_COLUMNS",
    "LIKE_HISTORY",
    "LONG_HISTORY",
    "N_INFORMED",
    "ROW_SETS",
    "EpisodeHistory",
    "TraceHistory",
    "build_informed",
    "parse_history",
]

#: the observation rows of Schedule-v0: name -> what they are
ROW_SETS: dict[str, str] = {
    "default": "the 16 columns of hpcgym.envs.queue_observation",
    "informed": "the default columns, then what a site knows: the ranking estimate, a "
    "predictor warmed on the log, like-job history and the user's longer-term accuracy",
}
#: column name -> description (the table of the module docstring), in column order
INFORMED_COLUMNS: dict[str, str] = {
    "rank_estimate": "lg(the estimate the row order ranks by)",
    "prediction": "lg(the row predictor's estimate, at submission)",
    "like_count": "cnt(the user's finished jobs with the same request and processors)",
    "like_last": "lg(run time of the most recently finished like job); 0 without one",
    "like_mean": "lg(mean run time of the last 4 like jobs); 0 without one",
    "like_ago": "sat(now - end of the most recent like job, 1 h); 1 without one",
    "user_accuracy_long": "mean actual/request of the user's last 32 finished jobs",
    "user_finished": "cnt(the user's finished jobs known now)",
}
N_INFORMED = len(INFORMED_COLUMNS)
#: like jobs averaged in ``like_mean``
LIKE_HISTORY = 4
#: finished jobs per user averaged in ``user_accuracy_long``
LONG_HISTORY = 32
#: the row predictor of ``rows="informed"`` unless ``row_predictor`` is given (warmed on
#: the same log as the history: :func:`default_row_predictor`)
DEFAULT_ROW_PREDICTOR = "log-ridge"

_HISTORY_CHOICES = "'log' (every job before the window), a number of jobs N >= 0 (the last N)"


def default_row_predictor(warmup: int) -> str:
    """The default ``row_predictor``: log-ridge warmed on the log the history reads
    (``warm=log`` for the whole log, ``warm=N`` for the last ``N`` jobs, cold for none).

    :param warmup: :func:`parse_history`'s value
    """
    if warmup == 0:
        return DEFAULT_ROW_PREDICTOR
    return f"{DEFAULT_ROW_PREDICTOR}:warm={'log' if warmup < 0 else warmup}"


def parse_history(value: Any) -> int:
    """``row_history`` as a number of jobs before the window: ``-1`` for the whole log.

    :param value: ``"log"``, a number of jobs ``>= 0`` (``0``: no log, the window only)
    :raises ValueError: anything else, with the valid choices
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("log", "all"):
            return -1
        if text in ("none", "0"):
            return 0
        try:
            value = int(text)
        except ValueError:
            raise ValueError(
                f"row_history={value!r} is not valid; valid: {_HISTORY_CHOICES}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"row_history={value!r} is not valid; valid: {_HISTORY_CHOICES}")
    return int(value)


class TraceHistory:
    """Per-trace, read-only tables of the informed rows (shared by vector twins): the
    dense user and like-job key of every job and the accounting log's completions in the
    order of their recorded end.

    :param workload: the whole loaded trace (all splits)
    :param warmup: jobs of the log before the window (``-1``: all, ``0``: none)
    :raises ValueError: a log is asked of a workload without a recorded schedule
    """

    def __init__(self, workload: Workload, warmup: int) -> None:
        self.warmup = int(warmup)
        self.user, self.n_users = dense_ids(workload.user)
        n = len(workload)
        triples = np.stack(
            (
                self.user.astype(np.float64),
                np.asarray(workload.request, dtype=np.float64),
                np.asarray(workload.procs, dtype=np.float64),
            ),
            axis=1,
        )
        _, inv = np.unique(triples, axis=0, return_inverse=True)
        self.key = np.where(self.user >= 0, inv.reshape(-1), -1).astype(np.int64)
        self.n_keys = int(self.key.max()) + 1 if n else 0
        self.runtime = np.asarray(workload.runtime, dtype=np.float64)
        self.ratio = np.clip(self.runtime / np.maximum(workload.request, 1.0), 0.0, 1.0)
        #: jobs of the trace without a recorded wait (never in the history)
        self.log_unknown = 0
        self.log_idx = np.zeros(0, dtype=np.int64)
        self.log_end = np.zeros(0)
        if self.warmup == 0:
            return
        log = workload.recorded_completions()
        if log is None:
            raise ValueError(
                f"rows='informed' reads the accounting log before the window from the "
                f"trace's recorded schedule (SWF field 3, the wait time), and workload "
                f"{workload.name!r} has none (generated workloads have none); pass "
                f"row_history=0 (history from the window's finished jobs only, and a cold "
                f"default row_predictor)"
            )
        idx, end, self.log_unknown = log
        self.log_idx = np.ascontiguousarray(idx)
        self.log_end = np.ascontiguousarray(end)


class EpisodeHistory:
    """The informed rows' state of one episode: per like key of the window the last
    :data:`LIKE_HISTORY` run times (a ring), their count and the last end; per user of
    the window the last :data:`LONG_HISTORY` accuracies and their count; the population's
    sum and count; how many of the window's completions were read. Seeded from the log
    before the window (:class:`TraceHistory`) at ``t0``, the window's first submission.

    :param hist: the trace's tables
    :param start: index of the window's first job in the trace
    :param window: the episode's jobs
    """

    def __init__(self, hist: TraceHistory, start: int, window: Workload) -> None:
        n = len(window)
        keys = hist.key[start : start + n]
        users = hist.user[start : start + n]
        kmap = np.full(max(hist.n_keys, 1), -1, dtype=np.int64)
        wk = np.unique(keys[keys >= 0])
        kmap[wk] = np.arange(wk.shape[0])
        umap = np.full(max(hist.n_users, 1), -1, dtype=np.int64)
        wu = np.unique(users[users >= 0])
        umap[wu] = np.arange(wu.shape[0])
        self.jkey = np.where(keys >= 0, kmap[np.maximum(keys, 0)], -1)
        self.juser = np.where(users >= 0, umap[np.maximum(users, 0)], -1)
        nk, nu = max(wk.shape[0], 1), max(wu.shape[0], 1)
        self.like_rt = np.zeros((nk, LIKE_HISTORY))
        self.like_cnt = np.zeros(nk, dtype=np.int64)
        self.like_end = np.zeros(nk)
        self.acc = np.zeros((nu, LONG_HISTORY))
        self.acc_cnt = np.zeros(nu, dtype=np.int64)
        self.pop = np.zeros(2)
        self.seen = np.zeros(1, dtype=np.int64)
        self.runtime = np.asarray(window.runtime, dtype=np.float64)
        self.ratio = hist.ratio[start : start + n]
        #: log jobs seeded into the history
        self.log_jobs = 0
        if hist.warmup != 0 and n:
            t0 = float(window.submit[0])
            m = int(np.searchsorted(hist.log_end, t0, side="right"))
            lo = 0 if hist.warmup < 0 else max(start - hist.warmup, 0)
            idx = hist.log_idx[:m]
            keep = (idx >= lo) & (idx < start)
            sel, ends = idx[keep], hist.log_end[:m][keep]
            self.log_jobs = int(sel.shape[0])
            hk, hu = hist.key[sel], hist.user[sel]
            _seed(
                sel,
                ends,
                np.where(hk >= 0, kmap[np.maximum(hk, 0)], -1),
                np.where(hu >= 0, umap[np.maximum(hu, 0)], -1),
                hist.runtime,
                hist.ratio,
                self.like_rt,
                self.like_cnt,
                self.like_end,
                self.acc,
                self.acc_cnt,
                self.pop,
            )


@njit(cache=True)
def _push(k, u, rt, ratio, end, like_rt, like_cnt, like_end, acc, acc_cnt, pop):  # pragma: no cover
    """One finished job into the history: its like key ``k`` and user ``u`` (-1: none)."""
    if k >= 0:
        like_rt[k, like_cnt[k] % like_rt.shape[1]] = rt
        like_cnt[k] += 1
        like_end[k] = end
    if u >= 0:
        acc[u, acc_cnt[u] % acc.shape[1]] = ratio
        acc_cnt[u] += 1
    pop[0] += ratio
    pop[1] += 1.0


@njit(cache=True)
def _seed(
    sel, ends, lk, lu, runtime, ratio, like_rt, like_cnt, like_end, acc, acc_cnt, pop
):  # pragma: no cover
    for e in range(sel.shape[0]):
        j = sel[e]
        _push(
            lk[e],
            lu[e],
            runtime[j],
            ratio[j],
            ends[e],
            like_rt,
            like_cnt,
            like_end,
            acc,
            acc_cnt,
            pop,
        )


def build_informed(
    view: Any,
    order: np.ndarray,
    norder: int,
    qf: QueueFeatures,
    eh: EpisodeHistory,
    pred: np.ndarray,
    est_scale: float,
    wait_scale: float,
    kq: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    tau: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`~hpcgym.envs.queue_observation.build_queue` with the informed columns.

    :param eh: the episode's :class:`EpisodeHistory`
    :param pred: the row predictor's estimate of every job of the window
    :param out: batched ``(obs, mask, rows)`` slices (``obs`` of ``16 + N_INFORMED``
        columns), or ``None`` (fresh arrays)
    :return: observation, mask, row jobs and the number of waiting jobs
    """
    if out is None:
        from hpcgym.envs.queue_observation import QUEUE_COLUMNS

        out = (
            np.zeros((kq, len(QUEUE_COLUMNS) + N_INFORMED), dtype=np.float32),
            np.zeros(kq, dtype=bool),
            np.full(kq, -1, dtype=np.int64),
        )
    obs, mask, rows, ncand = build_queue(
        view, order, norder, qf, est_scale, wait_scale, kq, out, tau
    )
    _fill_informed(
        obs,
        rows,
        obs.shape[1] - N_INFORMED,
        view.finished_buffer,
        view.n_finished,
        view.start,
        view.rank_estimate,
        view.now,
        pred,
        eh.jkey,
        eh.juser,
        eh.runtime,
        eh.ratio,
        eh.like_rt,
        eh.like_cnt,
        eh.like_end,
        eh.acc,
        eh.acc_cnt,
        eh.pop,
        eh.seen,
        _den(est_scale, LOG_TAU),
        LOG_TAU,
    )
    return obs, mask, rows, ncand


@njit(cache=True)
def _fill_informed(  # pragma: no cover - numba
    obs,
    rows,
    c0,
    fin,
    nfin,
    start,
    rank,
    now,
    pred,
    jkey,
    juser,
    runtime,
    ratio,
    like_rt,
    like_cnt,
    like_end,
    acc,
    acc_cnt,
    pop,
    seen,
    den,
    tau,
):
    # ---- the window's completions since the last observation
    for k in range(seen[0], nfin):
        j = fin[k]
        _push(
            jkey[j],
            juser[j],
            runtime[j],
            ratio[j],
            start[j] + runtime[j],
            like_rt,
            like_cnt,
            like_end,
            acc,
            acc_cnt,
            pop,
        )
    seen[0] = nfin
    prior = pop[0] / pop[1] if pop[1] > 0 else 1.0
    for r in range(rows.shape[0]):
        j = rows[r]
        if j < 0:
            break
        o = obs[r]
        o[c0] = _dur(rank[j], den, tau)
        o[c0 + 1] = _dur(pred[j], den, tau)
        k = jkey[j]
        if k >= 0 and like_cnt[k] > 0:
            c = like_cnt[k]
            o[c0 + 2] = _cnt(float(c))
            o[c0 + 3] = _dur(like_rt[k, (c - 1) % like_rt.shape[1]], den, tau)
            nh = min(c, like_rt.shape[1])
            s = 0.0
            for x in range(nh):
                s += like_rt[k, x]
            o[c0 + 4] = _dur(s / nh, den, tau)
            ago = max(now - like_end[k], 0.0)
            o[c0 + 5] = ago / (ago + 3600.0)
        else:
            o[c0 + 2] = 0.0
            o[c0 + 3] = 0.0
            o[c0 + 4] = 0.0
            o[c0 + 5] = 1.0
        u = juser[j]
        if u >= 0 and acc_cnt[u] > 0:
            nh = min(acc_cnt[u], acc.shape[1])
            s = 0.0
            for x in range(nh):
                s += acc[u, x]
            o[c0 + 6] = s / nh
            o[c0 + 7] = _cnt(float(acc_cnt[u]))
        else:
            o[c0 + 6] = prior
            o[c0 + 7] = 0.0
