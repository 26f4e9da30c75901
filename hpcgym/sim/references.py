"""The reference schedulers of each trace for the job-ordering task (Schedule-v0).

Two tables, both chosen on the trace's train range: the strongest of the thirteen built-in
queue policies (:data:`hpcgym.sim.engine.POLICIES`, with EASY-SJBF backfilling and the
requests as estimates) by the lowest paired geometric-mean ratio of AVEbsld to
FCFS + EASY-SJBF on 30 train windows of 1,024 jobs (window seed 5):

* :data:`DEPLOYABLE_REFERENCE` -- the strongest order **under the starvation guard** of
  Carastan-Santos et al. (a job that has waited longer than the threshold Θ goes first,
  FCFS among such jobs; Θ = three times the largest run time the platform allows,
  :func:`starvation_threshold`), as a full scheduler name (``SAF+EASY-SJBF,starvation=54h``).
  A site could run it: no job waits for ever behind a stream of small ones. Schedule-v0
  rewards against it by default and applies the same guard to the agent.
* :data:`REFERENCE_POLICY` -- the strongest order **without a guard** (the unguarded
  references; Schedule-v0's ``reference="unguarded"``). It can starve jobs: on SDSC-SP2's
  test windows SAF + EASY-SJBF's mean per-window maximum wait is 307.9 h.

``bench/schedule_reference_points.py --references`` measures both again and ``--check``
fails when a table disagrees. The schedule lookahead schedulers roll out with the queue
policy of the scheduler they are given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_REFERENCE",
    "DEPLOYABLE_REFERENCE",
    "REFERENCE_POLICY",
    "deployable_policy",
    "deployable_reference",
    "platform_limit",
    "reference_policy",
    "schedule_order",
    "starvation_threshold",
]

#: trace name -> its unguarded reference queue policy (ratio to EASY-SJBF on the train
#: windows)
REFERENCE_POLICY: dict[str, str] = {
    "SDSC-SP2": "SAF",  # 0.494
    "HPC2N": "SAF",  # 0.579
    "CTC-SP2": "F2",  # 0.416
    "KTH-SP2": "F3",  # 0.580
    "Lublin-1": "SAF",  # 0.163
    "Lublin-2": "F4",  # 0.335
    "SDSC-BLUE": "F4",  # 0.510
    "synthetic": "F2",  # 0.104
}

#: the reference of a trace not in the table: SAF, the strongest on most traces above
DEFAULT_REFERENCE = "SAF"


def reference_policy(trace: str | None) -> str:
    """The unguarded reference queue policy of ``trace`` (a registered name, any case; ``None`` or
    ``"synthetic"``: the package's synthetic default), :data:`DEFAULT_REFERENCE` for any
    other trace."""
    if trace is None:
        return REFERENCE_POLICY["synthetic"]
    key = str(trace).lower()
    for name, pol in REFERENCE_POLICY.items():
        if name.lower() == key:
            return pol
    return DEFAULT_REFERENCE


def schedule_order(policy: str | None, trace: str | None) -> str:
    """The row order of a Schedule-v0 run or card: ``policy``, where ``None`` or ``FCFS``
    (the training command line's default) means the order of the trace's deployable
    reference (:func:`deployable_policy`), the env's default ``order``."""
    if policy is None or str(policy).upper() == "FCFS":
        return deployable_policy(trace)
    return str(policy).upper()


#: trace name -> its deployable reference: the strongest order under the starvation guard
#: (ratio to EASY-SJBF on the train windows; max wait: mean per-window maximum, hours)
DEPLOYABLE_REFERENCE: dict[str, str] = {
    "SDSC-SP2": "SJF+EASY-SJBF,starvation=54h",  # 0.543, max wait 49.5 h (SAF: 89.0 h)
    "HPC2N": "SAF+EASY-SJBF,starvation=360h",  # 0.579, 15.4 h (the guard never binds)
    "CTC-SP2": "F2+EASY-SJBF,starvation=54h",  # 0.440, 47.4 h (unguarded F2: 60.8 h)
    "KTH-SP2": "F3+EASY-SJBF,starvation=180h",  # 0.579, 84.1 h (unguarded F3: 90.7 h)
    "Lublin-1": "WFP3+EASY-SJBF,starvation=60h",  # 0.570, 78.5 h (unguarded SAF: 217.8 h)
    "Lublin-2": "F4+EASY-SJBF,starvation=60h",  # 0.403, 62.8 h (unguarded F4: 72.0 h)
    "SDSC-BLUE": "F4+EASY-SJBF,starvation=108h",  # 0.510, 26.9 h (the guard never binds)
    "synthetic": "F2+EASY-SJBF,starvation=144h",  # 0.104, 74.9 h (unguarded: 75.5 h)
}

#: the share of a trace's jobs allowed to ask for more than its platform limit (records
#: above the limit exist: SDSC-SP2 asks up to 141.7 h once, its limit is 18 h)
_LIMIT_QUANTILE = 0.999


def platform_limit(request: Any) -> float:
    """The largest run time the platform allows, in seconds, read from the requests of a
    trace: their 99.9th percentile rounded to the hour (at least one hour). A few records
    exceed a platform's limit (SDSC-SP2: 18 h, but two requests of 141.7 h; HPC2N: 120 h,
    and one of 2,400 h), so the largest request is not the limit.

    :param request: the requests of the whole trace, seconds
    """
    q = float(np.quantile(np.asarray(request, dtype=np.float64), _LIMIT_QUANTILE))
    return 3600.0 * max(1.0, round(q / 3600.0))


def starvation_threshold(workload: Any) -> float:
    """The starvation threshold Θ of Carastan-Santos et al. for a trace, in seconds: three
    times the largest run time the platform allows (:func:`platform_limit`), "so that the
    slowdown of the largest jobs would be around three".

    :param workload: the whole trace (a :class:`~hpcgym.workload.core.Workload`), not a
        window: the limit is the platform's
    """
    return 3.0 * platform_limit(workload.request)


def _lookup(table: dict[str, str], trace: str | None) -> str | None:
    key = "synthetic" if trace is None else str(trace).lower()
    for name, value in table.items():
        if name.lower() == key:
            return value
    return None


def deployable_reference(trace: str | None) -> str | None:
    """The deployable reference scheduler of ``trace`` (:data:`DEPLOYABLE_REFERENCE`, any
    case; ``None``: the synthetic default), or ``None`` for a trace not in the table."""
    return _lookup(DEPLOYABLE_REFERENCE, trace)


def deployable_policy(trace: str | None) -> str:
    """The queue policy of ``trace``'s deployable reference; for a trace not in the table,
    :data:`DEFAULT_REFERENCE`."""
    name = deployable_reference(trace)
    if name is None:
        return DEFAULT_REFERENCE
    head = name.split(",")[0]
    return head.split("+")[0].upper() if "+" in head else "FCFS"
