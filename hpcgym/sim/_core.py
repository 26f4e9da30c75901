"""The compiled core of the one scheduling engine (numba, ``nopython``).

Everything here operates on five arrays that together are the complete, resumable
state of one simulation (see :class:`hpcgym.sim.engine.Simulation`):

``JF``  float64[NF, n] -- per-job float columns (rows ``F_*``)
``JI``  int64[NI, n]   -- per-job int columns and list storage (rows ``I_*``)
``S``   float64[NS]    -- float scalars (``S_*``)
``C``   int64[NC]      -- int scalars and configuration (``C_*``)
``PF``  float64[2, 2n+4] -- scratch profile for conservative backfilling

The entry point is :func:`advance`: it runs the event loop until the simulation is
done (``EV_DONE``), an online estimator must estimate newly arrived jobs
(``EV_ESTIMATE``), or -- with ``backfill = external`` -- a backfill decision is due
(``EV_DECISION``), or -- with the ``external`` queue policy -- the head of the queue
must be chosen (``EV_QUEUE``), or -- with inspection on (``C_INSPECT``) -- the start of the
queue policy's head awaits the inspector's verdict (``EV_INSPECT``), or the next event lies
after ``S_UNTIL`` (``EV_PAUSE``). The caller answers and calls :func:`advance` again; there
is only one loop. Built-in
backfillers (EASY, SJBF, conservative) decide inside the same pass, at the same
decision point, without leaving compiled code.

Semantics are documented in ``docs/engine.md``; keep the two in sync.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hpcgym.sim._inspect import _inspect  # the inspection decision (SchedInspector)
from hpcgym.sim._layout import *  # the state layout; re-exported for callers
from hpcgym.sim._willrun import slurm_shadow  # the reservation as Slurm plans it


# ------------------------------------------------------------------------- heaps
@njit(cache=True)
def _heap_push(ht, hj, size, t, j):
    i = size
    ht[i] = t
    hj[i] = j
    while i > 0:
        p = (i - 1) >> 1
        # order by (time, job)
        if ht[p] > ht[i] or (ht[p] == ht[i] and hj[p] > hj[i]):
            ht[p], ht[i] = ht[i], ht[p]
            hj[p], hj[i] = hj[i], hj[p]
            i = p
        else:
            break
    return size + 1


@njit(cache=True)
def _heap_pop(ht, hj, size):
    size -= 1
    ht[0] = ht[size]
    hj[0] = hj[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        r = left + 1
        if r < size and (ht[r] < ht[left] or (ht[r] == ht[left] and hj[r] < hj[left])):
            c = r
        if ht[c] < ht[i] or (ht[c] == ht[i] and hj[c] < hj[i]):
            ht[c], ht[i] = ht[i], ht[c]
            hj[c], hj[i] = hj[i], hj[c]
            i = c
        else:
            break
    return size


# ------------------------------------------------------------------ policy keys
@njit(cache=True)
def policy_key(policy, s, n, r, w):
    """Priority key of a waiting job (smaller runs first)."""
    if policy == POL_FCFS:
        return s
    if policy == POL_SJF:
        return r
    if policy == POL_SQF:
        return float(n)
    if policy == POL_SAF:
        return r * n
    if policy == POL_LJF:
        return -r
    if policy == POL_LQF:
        return -float(n)
    if policy == POL_LAF:
        return -r * n
    if policy == POL_WFP3:
        q = w / r
        return -(q * q * q) * n
    if policy == POL_UNICEF:
        return -w / (math.log2(max(n, 2)) * r)
    rr = max(r, 1.0)
    ss = max(s, 1.0)
    if policy == POL_F1:
        return math.log10(rr) * n + 870.0 * math.log10(ss)
    if policy == POL_F2:
        return math.sqrt(rr) * n + 25600.0 * math.log10(ss)
    if policy == POL_F3:
        return rr * n + 6.86e6 * math.log10(ss)
    if policy == POL_F4:
        return rr * math.sqrt(n) + 5.3e5 * math.log10(ss)
    return s


@njit(cache=True)
def rank_row(C):
    """The JF row the queue keys read the run time from: ``F_RANK`` when a separate
    ranking estimate is set (``C_RANKSEP``), else ``F_EST`` (one estimate for both)."""
    return F_RANK if C[C_RANKSEP] == 1 else F_EST


# ------------------------------------------------------------- running list
@njit(cache=True)
def _run_end(JF, j):
    return JF[F_START, j] + JF[F_REST, j]


@njit(cache=True)
def _run_insert(JF, JI, C, j):
    run = JI[I_RUN]
    k = C[C_RLEN]
    e = _run_end(JF, j)
    # insertion from the back: list sorted by (end, index)
    while k > 0:
        o = run[k - 1]
        eo = _run_end(JF, o)
        if eo > e or (eo == e and o > j):
            run[k] = o
            k -= 1
        else:
            break
    run[k] = j
    C[C_RLEN] += 1


@njit(cache=True)
def _run_remove(JI, C, j):
    run = JI[I_RUN]
    n = C[C_RLEN]
    k = 0
    while k < n and run[k] != j:
        k += 1
    while k < n - 1:
        run[k] = run[k + 1]
        k += 1
    C[C_RLEN] = n - 1


# --------------------------------------------------------------- starting jobs
@njit(cache=True)
def _start_job(JF, JI, S, C, j, backfilled):
    t = S[S_T]
    JF[F_START, j] = t
    JI[I_STATUS, j] = ST_RUNNING
    if C[C_RUN_REQUEST] == 1:
        JF[F_REST, j] = JF[F_REQUEST, j]
    else:
        JF[F_REST, j] = JF[F_EST, j]
    JF[F_INITEST, j] = JF[F_REST, j]
    C[C_FREE] -= JI[I_PROCS, j]
    _run_insert(JF, JI, C, j)
    C[C_HLEN] = _heap_push(JF[F_HEAPT], JI[I_HEAPJ], C[C_HLEN], t + JF[F_RUNTIME, j], j)
    if JF[F_REST, j] < JF[F_RUNTIME, j]:
        C[C_XLEN] = _heap_push(JF[F_XHEAPT], JI[I_XHEAPJ], C[C_XLEN], t + JF[F_REST, j], j)
    JI[I_STARTLOG, C[C_NSTART]] = j
    C[C_NSTART] += 1
    if backfilled:
        JI[I_BACKFILLED, j] = 1
        JF[F_BFSHADOW, j] = S[S_SHADOW]
        JI[I_BFHEAD, j] = C[C_HEAD]
        C[C_NBACKFILLED] += 1


@njit(cache=True)
def _remove_from_queue(JI, C, j):
    """Remove a started job from the queue storage and from the order scratch."""
    q = JI[I_QUEUE]
    n = C[C_QLEN]
    k = 0
    w = 0
    while k < n:
        if q[k] != j:
            q[w] = q[k]
            w += 1
        k += 1
    C[C_QLEN] = w
    o = JI[I_ORDER]
    n = C[C_OLEN]
    k = 0
    w = 0
    while k < n:
        if o[k] != j:
            o[w] = o[k]
            w += 1
        k += 1
    C[C_OLEN] = w


# ------------------------------------------------------------- corrections
@njit(cache=True)
def corrected_estimate(kind, elapsed, current, request, ncorr, initial):
    """New running estimate of a job that reached its estimate without finishing."""
    if kind == CORR_REQUEST:
        new = request
    elif kind == CORR_INCREMENTAL:
        k = min(ncorr, INCREMENTS.shape[0] - 1)
        new = current + INCREMENTS[k]
    elif kind == CORR_INCREMENTAL_OFFSET:
        # initial estimate + the k-th amount (then +100 h per further correction)
        last = INCREMENTS.shape[0] - 1
        if ncorr <= last:
            new = initial + INCREMENTS[ncorr]
        else:
            new = initial + INCREMENTS[last] * (ncorr - last + 1)
    else:  # recursive doubling: double the elapsed time
        new = 2.0 * elapsed
    if new > request:
        new = request
    return new


@njit(cache=True)
def _apply_correction(JF, JI, S, C, j):
    t = S[S_T]
    elapsed = t - JF[F_START, j]
    new = corrected_estimate(
        C[C_CORRECTION],
        elapsed,
        JF[F_REST, j],
        JF[F_REQUEST, j],
        JI[I_NCORR, j],
        JF[F_INITEST, j],
    )
    if new <= elapsed:  # safety: never an end in the past (request >= runtime > elapsed)
        new = JF[F_REQUEST, j]
    JI[I_NCORR, j] += 1
    C[C_CORRECTIONS] += 1
    _run_remove(JI, C, j)
    JF[F_REST, j] = new
    _run_insert(JF, JI, C, j)
    if new < JF[F_RUNTIME, j]:
        C[C_XLEN] = _heap_push(JF[F_XHEAPT], JI[I_XHEAPJ], C[C_XLEN], JF[F_START, j] + new, j)


# ------------------------------------------------------------------ ordering
@njit(cache=True)
def _order_queue(JF, JI, S, C):
    """Fill I_ORDER with the waiting jobs in queue order (policy key, then index)."""
    _order_by(JF, JI, S, C, C[C_POLICY], True)


@njit(cache=True)
def _order_by(JF, JI, S, C, policy, stored_keys):
    """I_ORDER := the waiting jobs in the order of ``policy`` (starving jobs first);
    ``stored_keys``: static keys come from F_KEY (computed at submission)."""
    qlen = C[C_QLEN]
    q = JI[I_QUEUE]
    order = JI[I_ORDER]
    t = S[S_T]
    theta = S[S_THETA]
    C[C_OLEN] = qlen
    if policy == POL_FCFS:
        for k in range(qlen):
            order[k] = q[k]
        return
    keys = np.empty(qlen)
    dynamic = policy == POL_WFP3 or policy == POL_UNICEF or not stored_keys
    rr = rank_row(C)
    for k in range(qlen):
        j = q[k]
        if dynamic:
            keys[k] = policy_key(
                policy,
                JF[F_SUBMIT, j],
                JI[I_PROCS, j],
                JF[rr, j],
                t - JF[F_SUBMIT, j],
            )
        else:
            keys[k] = JF[F_KEY, j]
    idx = np.argsort(keys, kind="mergesort")  # stable: ties keep index order
    if theta > 0.0:
        # starving jobs first, FCFS among them
        w = 0
        for k in range(qlen):
            j = q[k]
            if t - JF[F_SUBMIT, j] > theta:
                order[w] = j
                w += 1
        for k in range(qlen):
            j = q[idx[k]]
            if not (t - JF[F_SUBMIT, j] > theta):
                order[w] = j
                w += 1
    else:
        for k in range(qlen):
            order[k] = q[idx[k]]


@njit(cache=True)
def _compute_shadow(JF, JI, S, C, head):
    """Shadow time and extra processors of the reserved head job."""
    need = JI[I_PROCS, head]
    avail = C[C_FREE]
    run = JI[I_RUN]
    rlen = C[C_RLEN]
    k = 0
    shadow = INF
    extra = 0
    if S[S_WILLRUN_WIN] > 0.0:
        shadow, extra = slurm_shadow(JF, JI, S, rlen, avail, need, S[S_WILLRUN_WIN])
        k = rlen
    while k < rlen:
        e = _run_end(JF, run[k])
        # all jobs ending at the same instant free their processors together: the
        # shadow is the first end time at which the head fits, and extra counts every
        # processor available at that instant
        while k < rlen and _run_end(JF, run[k]) == e:
            avail += JI[I_PROCS, run[k]]
            k += 1
        if avail >= need:
            shadow = e
            extra = avail - need
            break
    S[S_SHADOW] = shadow
    C[C_EXTRA] = extra
    C[C_HEAD] = head


@njit(cache=True)
def easy_test(now, est, procs, free, shadow, extra):
    """EASY's test, written once: a job of ``procs`` processors and estimate ``est`` fits
    now and ends by the head's shadow time, or fits in the extra processors (the env's
    ``easy`` column reads it too, :mod:`hpcgym.envs.observation`)."""
    if procs > free:
        return False
    if now + est <= shadow:
        return True
    return procs <= extra


@njit(cache=True)
def easy_allows(JF, JI, S, C, j):
    """EASY's test (:func:`easy_test`) of waiting job ``j`` at the current decision."""
    return easy_test(S[S_T], JF[F_EST, j], JI[I_PROCS, j], C[C_FREE], S[S_SHADOW], C[C_EXTRA])


@njit(cache=True)
def easy_next(JF, JI, S, C, order, nb, k0):
    """EASY backfilling, written once: the position of the first job of ``order[k0:nb]``
    (a backfill order) that EASY allows now, or -1. The compiled EASY and SJBF passes start
    it and continue after it; :class:`hpcgym.sim.deciders.EasyDecider` starts it and is
    asked again (a start only lowers the free and extra processors, so a job EASY refused
    earlier in the order stays refused: both are the same single pass)."""
    for k in range(k0, nb):
        if C[C_FREE] <= 0:
            return -1
        if easy_allows(JF, JI, S, C, order[k]):
            return k
    return -1


@njit(cache=True)
def backfill_start(JF, JI, S, C, j):
    """Start waiting job ``j`` as a backfill at the current decision point.

    Returns 0 if EASY allowed it by the shadow clause, 1 by the extra clause and
    2 if it violates the head's reservation (then the reservation is recomputed).
    """
    p = JI[I_PROCS, j]
    t = S[S_T]
    if t + JF[F_EST, j] <= S[S_SHADOW]:
        kind = 0
    elif p <= C[C_EXTRA]:
        kind = 1
        C[C_EXTRA] -= p
    else:
        kind = 2
        C[C_VIOLATIONS] += 1
    _start_job(JF, JI, S, C, j, True)
    _remove_from_queue(JI, C, j)
    if kind == 2:
        _compute_shadow(JF, JI, S, C, C[C_HEAD])
    return kind


@njit(cache=True)
def _fill_backfill_order(JF, JI, C, sjbf):
    """I_BFORDER := waiting jobs except the head (ORDER[0]) in backfill order."""
    olen = C[C_OLEN]
    order = JI[I_ORDER]
    bf = JI[I_BFORDER]
    nb = olen - 1
    if not sjbf:
        for k in range(nb):
            bf[k] = order[k + 1]
        return nb
    ests = np.empty(nb)
    ids = np.empty(nb, dtype=np.int64)
    for k in range(nb):
        ids[k] = order[k + 1]
    ids.sort()  # index order => ties by submit, then position
    for k in range(nb):
        ests[k] = JF[F_EST, ids[k]]
    idx = np.argsort(ests, kind="mergesort")
    for k in range(nb):
        bf[k] = ids[idx[k]]
    return nb


@njit(cache=True)
def is_candidate(JF, JI, S, C, j):
    if C[C_CANDMODE] == CAND_EASY:
        return easy_allows(JF, JI, S, C, j)
    return JI[I_PROCS, j] <= C[C_FREE]


@njit(cache=True)
def has_candidate(JF, JI, S, C):
    if C[C_FREE] <= 0:
        return False
    order = JI[I_ORDER]
    for k in range(1, C[C_OLEN]):
        if is_candidate(JF, JI, S, C, order[k]):
            return True
    return False


# ------------------------------------------------------- conservative backfill
@njit(cache=True)
def _conservative_pass(JF, JI, S, C, PF):
    t = S[S_T]
    pt = PF[0]
    pf = PF[1]
    # profile: pf[i] free processors during [pt[i], pt[i+1]); last segment open-ended
    np_ = 1
    pt[0] = t
    pf[0] = C[C_FREE]
    run = JI[I_RUN]
    for k in range(C[C_RLEN]):
        j = run[k]
        e = _run_end(JF, j)
        if e > pt[np_ - 1]:
            pt[np_] = e
            pf[np_] = pf[np_ - 1] + JI[I_PROCS, j]
            np_ += 1
        else:
            pf[np_ - 1] += JI[I_PROCS, j]
    order = JI[I_ORDER]
    olen = C[C_OLEN]
    started_all_before = True
    k = 0
    while k < olen:
        j = order[k]
        p = JI[I_PROCS, j]
        d = JF[F_EST, j]
        # earliest segment i where the job fits for d seconds
        i = 0
        found = -1
        while i < np_:
            if pf[i] >= p:
                end = pt[i] + d
                ok = True
                m = i + 1
                while m < np_ and pt[m] < end:
                    if pf[m] < p:
                        ok = False
                        break
                    m += 1
                if ok:
                    found = i
                    break
                i = m  # the first too-full segment: no start before it ends can fit
            else:
                i += 1
        s = pt[found]
        end = s + d
        # split at end if needed, then subtract p on [s, end)
        m = found
        while m < np_ and pt[m] < end:
            m += 1
        if m == np_ or pt[m] > end:
            # insert breakpoint at index m with free level of segment m-1
            for x in range(np_, m, -1):
                pt[x] = pt[x - 1]
                pf[x] = pf[x - 1]
            pt[m] = end
            pf[m] = pf[m - 1]
            np_ += 1
        for x in range(found, m):
            pf[x] -= p
        if s == t:
            C[C_HEAD] = -1
            S[S_SHADOW] = INF
            _start_job(JF, JI, S, C, j, not started_all_before)
            _remove_from_queue(JI, C, j)
            olen -= 1
            continue  # order compacted: same k is the next job
        started_all_before = False
        k += 1


# -------------------------------------------------------- external queue policy
@njit(cache=True)
def _external_head(JF, JI, S, C, old_head):
    """The head under the external queue policy, or -1 when the caller must choose.

    No choice is asked when it is forced: a job past the starvation threshold goes
    first (the oldest such job, as for every policy), a single waiting job is the
    head, and with ``C_QCOMMIT`` a chosen head still waiting keeps its place.
    """
    q = JI[I_QUEUE]
    qlen = C[C_QLEN]
    theta = S[S_THETA]
    if theta > 0.0:
        t = S[S_T]
        for k in range(qlen):
            if t - JF[F_SUBMIT, q[k]] > theta:
                return q[k]
    if qlen == 1:
        return q[0]
    if C[C_QCOMMIT] == 1 and old_head >= 0 and JI[I_STATUS, old_head] == ST_WAITING:
        return old_head
    j = C[C_QCHOICE]
    if j >= 0 and JI[I_STATUS, j] == ST_WAITING:
        return j
    return -1


@njit(cache=True)
def _order_external(JF, JI, S, C, h):
    """I_ORDER := head ``h`` first, then the other waiting jobs in the order of policy
    ``C_QREST`` (the order plain EASY backfills in; FCFS by default)."""
    _order_by(JF, JI, S, C, C[C_QREST], False)
    order = JI[I_ORDER]
    k = 0
    while order[k] != h:
        k += 1
    while k > 0:
        order[k] = order[k - 1]
        k -= 1
    order[0] = h


# ------------------------------------------------------------ scheduling pass
@njit(cache=True)
def _schedule(JF, JI, S, C, PF):
    """One scheduling pass at S_T. Returns the event of a decision due (EV_DECISION,
    EV_QUEUE, EV_INSPECT), else -1."""
    old_head = C[C_HEAD]
    renew = False  # a job ahead of the head started: the head's reservation is new
    C[C_HEAD] = -1
    S[S_SHADOW] = INF
    if C[C_QLEN] == 0:
        C[C_QRENEW] = 0
        return -1
    bfmode = C[C_BACKFILL]
    order = JI[I_ORDER]
    if C[C_POLICY] == POL_EXTERNAL:
        # the caller chooses the head; it starts if it fits, and the choice is asked
        # again for the rest of the queue, at the same time (re-entering this pass)
        while True:
            if C[C_QLEN] == 0:
                C[C_QRENEW] = 0
                return -1
            h = _external_head(JF, JI, S, C, old_head)
            if h < 0:
                C[C_HEAD] = old_head  # kept for the bookkeeping of the re-entered pass
                C[C_PHASE] = P_QUEUE
                C[C_QDECISIONS] += 1
                return EV_QUEUE
            C[C_QCHOICE] = -1
            _order_external(JF, JI, S, C, h)
            if JI[I_PROCS, h] > C[C_FREE]:
                break
            _start_job(JF, JI, S, C, h, False)
            _remove_from_queue(JI, C, h)
            C[C_QRENEW] = 1
        renew = C[C_QRENEW] == 1
        C[C_QRENEW] = 0
        if bfmode == BF_NONE:
            return -1
    else:
        _order_queue(JF, JI, S, C)
        if bfmode == BF_CONSERVATIVE:
            _conservative_pass(JF, JI, S, C, PF)
            return -1
        inspect = C[C_INSPECT] != 0
        if inspect:  # a re-entered pass: a job started ahead of the head before
            renew = C[C_QRENEW] == 1
            C[C_QRENEW] = 0
        # start from the head while it fits
        while C[C_OLEN] > 0 and JI[I_PROCS, order[0]] <= C[C_FREE]:
            if inspect:
                verdict = _inspect(JI, C, order[0])
                if verdict == EV_INSPECT:
                    C[C_HEAD] = old_head  # kept for the bookkeeping of the re-entered pass
                    C[C_QRENEW] = 1 if renew else 0
                    return EV_INSPECT
                if verdict == 1:  # rejected: nothing more starts now; wait for an event
                    return -1
            _start_job(JF, JI, S, C, order[0], False)
            _remove_from_queue(JI, C, order[0])
            renew = True
        if C[C_OLEN] == 0 or bfmode == BF_NONE:
            return -1
    head = order[0]
    if head != old_head or renew:
        if old_head >= 0 and old_head != head and JI[I_STATUS, old_head] == ST_WAITING:
            JF[F_HEADSINCE, old_head] = math.nan  # overtaken: it holds no reservation
        JF[F_HEADSINCE, head] = S[S_T]
    _compute_shadow(JF, JI, S, C, head)
    if C[C_FREE] <= 0 or C[C_OLEN] < 2:
        return -1
    if bfmode == BF_EXTERNAL:
        if has_candidate(JF, JI, S, C):
            C[C_PHASE] = P_DECIDE
            C[C_DECISIONS] += 1
            return EV_DECISION
        return -1
    nb = _fill_backfill_order(JF, JI, C, bfmode == BF_SJBF)
    bf = JI[I_BFORDER]
    k = easy_next(JF, JI, S, C, bf, nb, 0)
    while k >= 0:
        backfill_start(JF, JI, S, C, bf[k])
        k = easy_next(JF, JI, S, C, bf, nb, k + 1)
    return -1


@njit(cache=True)
def _enqueue(JF, JI, C, lo, hi):
    policy = C[C_POLICY]
    q = JI[I_QUEUE]
    rr = rank_row(C)
    for j in range(lo, hi):
        JI[I_STATUS, j] = ST_WAITING
        q[C[C_QLEN]] = j
        C[C_QLEN] += 1
        JF[F_KEY, j] = policy_key(policy, JF[F_SUBMIT, j], JI[I_PROCS, j], JF[rr, j], 0.0)
    C[C_NEXT] = hi


@njit(cache=True)
def advance(JF, JI, S, C, PF):
    """Run the event loop to the next stop. Returns ``EV_DONE``, ``EV_ESTIMATE``,
    ``EV_DECISION`` (see module doc) or ``EV_PAUSE`` (the next event lies after
    ``S_UNTIL``; nothing of it was handled)."""
    n = C[C_N]
    while True:
        phase = C[C_PHASE]
        if phase == P_DONE:
            return EV_DONE
        if phase == P_DECIDE:
            if has_candidate(JF, JI, S, C):
                C[C_DECISIONS] += 1
                return EV_DECISION
            C[C_PHASE] = P_EVENTS
            continue
        if phase == P_QUEUE:
            if C[C_QCHOICE] < 0:
                C[C_QDECISIONS] += 1
                return EV_QUEUE
            C[C_PHASE] = P_EVENTS
            ev = _schedule(JF, JI, S, C, PF)
            if ev != -1:  # a decision is due
                return ev
            continue
        if phase == P_INSPECT:
            if C[C_IANSWER] < 0:
                return EV_INSPECT
            C[C_PHASE] = P_EVENTS
            ev = _schedule(JF, JI, S, C, PF)
            if ev != -1:  # a decision is due
                return ev
            continue
        if phase == P_ARRIVE:
            _enqueue(JF, JI, C, C[C_ARR_LO], C[C_ARR_HI])
            C[C_PHASE] = P_EVENTS
            ev = _schedule(JF, JI, S, C, PF)
            if ev != -1:  # a decision is due
                return ev
            continue
        # ---- P_EVENTS: next event time
        nxt = C[C_NEXT]
        t = INF
        if nxt < n:
            t = JF[F_SUBMIT, nxt]
        if C[C_HLEN] > 0 and JF[F_HEAPT, 0] < t:
            t = JF[F_HEAPT, 0]
        if C[C_XLEN] > 0 and JF[F_XHEAPT, 0] < t:
            t = JF[F_XHEAPT, 0]
        if t == INF:
            C[C_PHASE] = P_DONE
            return EV_DONE
        if t > S[S_UNTIL]:
            return EV_PAUSE
        S[S_T] = t
        # completions
        while C[C_HLEN] > 0 and JF[F_HEAPT, 0] == t:
            j = JI[I_HEAPJ, 0]
            C[C_HLEN] = _heap_pop(JF[F_HEAPT], JI[I_HEAPJ], C[C_HLEN])
            JI[I_STATUS, j] = ST_DONE
            C[C_FREE] += JI[I_PROCS, j]
            _run_remove(JI, C, j)
            JI[I_FIN, C[C_NFIN]] = j
            C[C_NFIN] += 1
        # estimated ends reached by jobs still running: corrections
        while C[C_XLEN] > 0 and JF[F_XHEAPT, 0] == t:
            j = JI[I_XHEAPJ, 0]
            C[C_XLEN] = _heap_pop(JF[F_XHEAPT], JI[I_XHEAPJ], C[C_XLEN])
            if JI[I_STATUS, j] == ST_RUNNING and _run_end(JF, j) == t:
                _apply_correction(JF, JI, S, C, j)
        # arrivals
        hi = nxt
        while hi < n and JF[F_SUBMIT, hi] == t:
            hi += 1
        if hi > nxt:
            if C[C_ONLINE] == 1:
                C[C_ARR_LO] = nxt
                C[C_ARR_HI] = hi
                C[C_PHASE] = P_ARRIVE
                return EV_ESTIMATE
            _enqueue(JF, JI, C, nxt, hi)
        ev = _schedule(JF, JI, S, C, PF)
        if ev != -1:  # a decision is due
            return ev


@njit(cache=True)
def candidates(JF, JI, S, C, out_jobs, out_flags):
    """Write the current decision point's candidates (FCFS = index order) to ``out_jobs``.

    ``out_flags`` bit 0: EASY allows it; bit 1: fits now. Returns the count.
    The head (reserved job) is never a candidate.
    """
    q = JI[I_QUEUE]
    head = C[C_HEAD]
    c = 0
    for k in range(C[C_QLEN]):
        j = q[k]
        if j == head:
            continue
        if not is_candidate(JF, JI, S, C, j):
            continue
        out_jobs[c] = j
        f = 0
        if easy_allows(JF, JI, S, C, j):
            f |= 1
        if JI[I_PROCS, j] <= C[C_FREE]:
            f |= 2
        out_flags[c] = f
        c += 1
    return c


@njit(cache=True)
def stop_backfilling(C):
    """The decision maker declines further backfilling at this time."""
    C[C_PHASE] = P_EVENTS
