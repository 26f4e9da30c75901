"""A queue policy's order for plain arrays of jobs, outside a simulation.

The engine orders its queue with the compiled key of every policy
(:func:`hpcgym.sim._core.policy_key`, the one implementation of the formulas of
:data:`hpcgym.sim.engine.POLICIES`). :func:`policy_order` applies the same key, the same
stable sort and the same starvation rule to jobs described by arrays, for code that
schedules jobs the engine does not hold -- e.g. the jobs of a live Slurm
(:mod:`hpcgym.slurm.bridge`)::

    order = policy_order("SAF", submit, procs, estimate, now)
    submit[order[0]]  # the job SAF runs first

Jobs are given in submission order (index order breaks ties, as the engine's position in
the trace does).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hpcgym.sim._core import policy_key
from hpcgym.sim.engine import policy_id

__all__ = ["policy_keys", "policy_order"]


@njit(cache=True)
def _keys(policy, submit, procs, est, now, out):  # pragma: no cover - numba
    for j in range(submit.shape[0]):
        out[j] = policy_key(policy, submit[j], procs[j], est[j], now - submit[j])


def _arrays(
    submit: np.ndarray, procs: np.ndarray, estimate: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.ascontiguousarray(submit, dtype=np.float64)
    n = np.ascontiguousarray(procs, dtype=np.int64)
    r = np.ascontiguousarray(estimate, dtype=np.float64)
    if not (s.ndim == n.ndim == r.ndim == 1) or not (len(s) == len(n) == len(r)):
        raise ValueError(
            f"submit, procs and estimate must be 1-d arrays of one length, got shapes "
            f"{s.shape}, {n.shape}, {r.shape}"
        )
    return s, n, r


def policy_keys(
    policy: str, submit: np.ndarray, procs: np.ndarray, estimate: np.ndarray, now: float
) -> np.ndarray:
    """The engine's key of queue ``policy`` for every job (smaller runs first).

    :param policy: a queue policy name of :data:`hpcgym.sim.engine.POLICIES` (any case)
    :param submit: submit time of every job (seconds; the F1-F4 keys read it as trace
        seconds: the time since the workload's origin)
    :param procs: processors of every job
    :param estimate: the runtime estimate of every job (seconds; ``r`` of the keys)
    :param now: the current time (``w = now - submit``)
    :return: float64 keys, one per job
    :raises ValueError: an unknown policy (the message lists the valid ones) or arrays of
        different lengths
    """
    pol = policy_id(policy)
    if policy.strip().lower() == "external":
        raise ValueError("policy_keys takes a built-in queue policy, not 'external'")
    s, n, r = _arrays(submit, procs, estimate)
    out = np.empty(len(s), dtype=np.float64)
    _keys(pol, s, n, r, float(now), out)
    return out


def policy_order(
    policy: str,
    submit: np.ndarray,
    procs: np.ndarray,
    estimate: np.ndarray,
    now: float,
    starvation: float | None = None,
) -> np.ndarray:
    """The jobs in the order queue ``policy`` starts them at time ``now``, as the engine's
    scheduling pass orders its queue: ascending key, ties by index (a stable sort); with a
    starvation threshold, the jobs that have waited longer than it first, in index order.

    :param policy: a queue policy name of :data:`hpcgym.sim.engine.POLICIES`
    :param submit: submit time of every job, in submission order (seconds)
    :param procs: processors of every job
    :param estimate: runtime estimate of every job (seconds)
    :param now: the time of the pass
    :param starvation: the engine's starvation threshold in seconds, or ``None`` (off)
    :return: int64 indices into the arrays, the first job first
    """
    keys = policy_keys(policy, submit, procs, estimate, now)
    idx = np.argsort(keys, kind="mergesort")
    if starvation is None:
        return idx.astype(np.int64)
    if float(starvation) <= 0:
        raise ValueError(f"starvation threshold must be > 0 seconds, got {starvation}")
    wait = float(now) - np.asarray(submit, dtype=np.float64)
    starving = wait > float(starvation)
    first = np.flatnonzero(starving)
    rest = idx[~starving[idx]]
    return np.concatenate([first, rest]).astype(np.int64)
