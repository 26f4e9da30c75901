"""Kernels built on the engine core (:mod:`hpcgym.sim._core`): rollout helpers and the
queue decision helpers. They use the core's layout and never run a loop of their own
(a rollout calls the core's :func:`~hpcgym.sim._core.advance`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hpcgym.sim._core import (
    C_HLEN,
    C_PHASE,
    C_POLICY,
    C_QCHOICE,
    C_QLEN,
    C_RANKSEP,
    C_RLEN,
    C_RUN_REQUEST,
    C_XLEN,
    EV_QUEUE,
    F_EST,
    F_HEAPT,
    F_KEY,
    F_RANK,
    F_REST,
    F_RUNTIME,
    F_START,
    F_SUBMIT,
    F_XHEAPT,
    I_HEAPJ,
    I_PROCS,
    I_QUEUE,
    I_RUN,
    I_STATUS,
    I_XHEAPJ,
    P_EVENTS,
    P_QUEUE,
    S_T,
    ST_DONE,
    ST_RUNNING,
    ST_WAITING,
    _heap_push,
    _run_insert,
    _schedule,
    advance,
    policy_key,
    rank_row,
)


# ------------------------------------------------------ rollouts (lookahead)
@njit(cache=True)
def rerun_pass(JF, JI, S, C, PF):
    """Leave a decision point and run one scheduling pass at the current time with the
    configured (built-in) backfiller: it finishes the interrupted pass. Returns what
    :func:`_schedule` returns (``EV_DECISION`` only for external backfilling)."""
    C[C_PHASE] = P_EVENTS
    return _schedule(JF, JI, S, C, PF)


@njit(cache=True)
def set_estimates(JF, JI, S, C, est):
    """Replace the (reservation) estimates of every job not yet done by ``est[j]``.

    Waiting jobs get new policy keys when the queue ranks by this estimate (no separate
    ranking estimate, ``C_RANKSEP`` 0); running jobs (unless ``C_RUN_REQUEST``) get
    ``est`` as their running estimate when it still lies in the future, and the
    running list and the expiry heap are rebuilt. The caller recomputes any pending
    reservation.
    """
    n = JF.shape[1]
    t = S[S_T]
    policy = C[C_POLICY]
    rr = rank_row(C)
    for j in range(n):
        st = JI[I_STATUS, j]
        if st == ST_DONE:
            continue
        JF[F_EST, j] = est[j]
        if st == ST_WAITING:
            JF[F_KEY, j] = policy_key(policy, JF[F_SUBMIT, j], JI[I_PROCS, j], JF[rr, j], 0.0)
        elif st == ST_RUNNING and C[C_RUN_REQUEST] == 0 and JF[F_START, j] + est[j] > t:
            JF[F_REST, j] = est[j]
    rebuild_running(JF, JI, C)


@njit(cache=True)
def set_rank_estimates(JF, JI, C, rank):
    """Rank the queue by ``rank[j]`` from now on (a separate ranking estimate,
    ``C_RANKSEP`` 1): every job not yet done gets it, waiting jobs get new policy keys.
    The reservation estimates are not touched."""
    n = JF.shape[1]
    policy = C[C_POLICY]
    C[C_RANKSEP] = 1
    for j in range(n):
        st = JI[I_STATUS, j]
        if st == ST_DONE:
            continue
        JF[F_RANK, j] = rank[j]
        if st == ST_WAITING:
            JF[F_KEY, j] = policy_key(policy, JF[F_SUBMIT, j], JI[I_PROCS, j], rank[j], 0.0)


@njit(cache=True)
def rebuild_running(JF, JI, C):
    """Re-sort the running list and rebuild the completion and expiry heaps from the
    running jobs' start, runtime and running estimate (after either was changed)."""
    rlen = C[C_RLEN]
    run = JI[I_RUN, :rlen].copy()
    C[C_RLEN] = 0
    C[C_HLEN] = 0
    C[C_XLEN] = 0
    for k in range(rlen):
        j = run[k]
        _run_insert(JF, JI, C, j)
        s = JF[F_START, j]
        C[C_HLEN] = _heap_push(JF[F_HEAPT], JI[I_HEAPJ], C[C_HLEN], s + JF[F_RUNTIME, j], j)
        if JF[F_REST, j] < JF[F_RUNTIME, j]:
            C[C_XLEN] = _heap_push(JF[F_XHEAPT], JI[I_XHEAPJ], C[C_XLEN], s + JF[F_REST, j], j)


# ------------------------------------------------------------- queue decisions
@njit(cache=True)
def policy_order(JF, JI, S, C, policy, out):
    """Write the waiting jobs in the order of queue ``policy`` (smaller key first, ties
    by index; no starvation rule: the engine applies it) to ``out``; return the count.

    With the external queue policy this is how a heuristic answers a queue decision:
    choosing ``out[0]`` at every decision reproduces the built-in policy exactly.
    """
    q = JI[I_QUEUE]
    qlen = C[C_QLEN]
    t = S[S_T]
    rr = rank_row(C)
    keys = np.empty(qlen)
    for k in range(qlen):
        j = q[k]
        keys[k] = policy_key(
            policy, JF[F_SUBMIT, j], JI[I_PROCS, j], JF[rr, j], t - JF[F_SUBMIT, j]
        )
    idx = np.argsort(keys, kind="mergesort")
    for k in range(qlen):
        out[k] = q[idx[k]]
    return qlen


@njit(cache=True)
def set_policy(JF, JI, S, C, PF, policy):
    """Continue under the built-in queue ``policy`` (rollouts of a queue decider): the
    waiting jobs get its keys; at a pending queue decision the interrupted pass is run
    again at the current time by the policy. Returns what that pass returns (-1 if none
    ran)."""
    C[C_POLICY] = policy
    q = JI[I_QUEUE]
    rr = rank_row(C)
    for k in range(C[C_QLEN]):
        j = q[k]
        JF[F_KEY, j] = policy_key(policy, JF[F_SUBMIT, j], JI[I_PROCS, j], JF[rr, j], 0.0)
    C[C_QCHOICE] = -1
    if C[C_PHASE] == P_QUEUE:
        return rerun_pass(JF, JI, S, C, PF)
    return -1


@njit(cache=True)
def rollout_choice(JF, JI, S, C, PF, choice, policy):
    """Apply the queue decision ``choice`` (a waiting job), then run to the end with the
    built-in queue ``policy`` and the configured built-in backfiller."""
    C[C_QCHOICE] = choice
    ev = advance(JF, JI, S, C, PF)
    if ev == EV_QUEUE:
        set_policy(JF, JI, S, C, PF, policy)
        ev = advance(JF, JI, S, C, PF)
    return ev
