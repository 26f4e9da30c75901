"""The inspection decision's kernel (:mod:`hpcgym.sim.inspection`): called by the
scheduling pass of :mod:`hpcgym.sim._core` before each start of the queue policy's pick."""

from __future__ import annotations

from numba import njit

from hpcgym.sim._layout import (
    C_HLEN,
    C_IANSWER,
    C_IDECISIONS,
    C_IJOB,
    C_IMAXREJ,
    C_INSPECT,
    C_IREJECTS,
    C_N,
    C_NEXT,
    C_PHASE,
    EV_INSPECT,
    I_NREJECT,
    P_INSPECT,
)


@njit(cache=True)
def _inspect(JI, C, h):
    """The inspector's verdict on starting head ``h`` now: 0 accept, 1 reject, or
    ``EV_INSPECT`` when the caller must give it (the pass is re-entered then).

    The guard: no verdict is asked -- the start is accepted -- when a reject would leave
    no event to wait for (nothing running, no job left to arrive) or when ``h`` was
    rejected ``C_IMAXREJ`` times already.
    """
    if C[C_IJOB] == h and C[C_IANSWER] >= 0:
        verdict = C[C_IANSWER]
        C[C_IJOB] = -1
        C[C_IANSWER] = -1
        if verdict == 1:
            JI[I_NREJECT, h] += 1
            C[C_IREJECTS] += 1
        return verdict
    C[C_IJOB] = -1
    C[C_IANSWER] = -1
    if C[C_INSPECT] != 1:  # switched off with a verdict pending: that one was the last
        C[C_INSPECT] = 0
        return 0
    if C[C_HLEN] == 0 and C[C_NEXT] >= C[C_N]:
        return 0
    if JI[I_NREJECT, h] >= C[C_IMAXREJ]:
        return 0
    C[C_IJOB] = h
    C[C_PHASE] = P_INSPECT
    C[C_IDECISIONS] += 1
    return EV_INSPECT
