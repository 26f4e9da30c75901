"""The head's reservation as Slurm plans it (:func:`slurm_shadow`), called by
:func:`hpcgym.sim._core._compute_shadow` when the simulation has a will-run window
(``Simulation(shadow_window=...)``).

Slurm's backfill (``sched/backfill``) asks its node selection (``select/cons_tres``) when a
pending job could start. That *will-run test* does not release the running jobs one at a
time: it releases the first job to end together with every job that ends up to one window
after the next multiple of the window (30 s, aligned on Unix time), tests whether the job
fits, and if not doubles the window and releases the next batch; the planned start is the
end of the last job released. The reservation then starts later than the first instant at
which the job fits, and backfilling may use the processors of every job released with it.
With ``bf_busy_nodes`` the reservation takes the released (busy) nodes first, so the idle
processors left to backfilling are those beyond the job's size: EASY's *extra* processors.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hpcgym.sim._layout import F_REST, F_START, I_PROCS, I_RUN, S_WILLRUN_ORIGIN


@njit(cache=True)
def slurm_shadow(JF, JI, S, rlen, free, need, window):
    """``(shadow, extra)`` of a head of ``need`` processors, ``free`` free now, with the
    running jobs (``JI[I_RUN][:rlen]``, by estimated end) released in Slurm's windows of
    ``window`` seconds, doubling; ``(inf, 0)`` when the head never fits."""
    run = JI[I_RUN]
    avail = free
    tw = window
    first = True
    end_t = 0.0
    k = 0
    while k < rlen:
        last = 0.0
        while True:  # one batch: the next job, and every job ending within the window
            e = JF[F_START, run[k]] + JF[F_REST, run[k]]
            if first:  # the windows are aligned on the clock (Slurm: Unix time)
                end_t = e + (tw - (S[S_WILLRUN_ORIGIN] + e) % tw)
                first = False
            avail += JI[I_PROCS, run[k]]
            last = e
            k += 1
            if k >= rlen:
                break
            if JF[F_START, run[k]] + JF[F_REST, run[k]] > end_t + tw:
                break
        tw = 2.0 * tw  # at least once, then until the next job's end is within reach
        while k < rlen and JF[F_START, run[k]] + JF[F_REST, run[k]] > end_t + tw:
            tw = 2.0 * tw
        if avail >= need:
            return last, avail - need
    return np.inf, 0
