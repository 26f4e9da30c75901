"""The reference queue heuristic of each trace: the strongest of the thirteen built-in
queue policies (:data:`hpcgym.sim.engine.POLICIES`, with EASY-SJBF backfilling and the
requests as estimates) on the trace's train range.

"Strongest" is the lowest paired geometric-mean ratio of AVEbsld to FCFS + EASY-SJBF on
30 train windows of 1,024 jobs (window seed 5). ``bench/schedule_ceilings.py
--references`` measures it again and ``--check`` fails when this table disagrees. The
Schedule-v0 env normalizes its reward by this heuristic by default, and the schedule
lookahead schedulers roll out with it.
"""

from __future__ import annotations

__all__ = ["DEFAULT_REFERENCE", "REFERENCE_POLICY", "reference_policy", "schedule_order"]

#: trace name -> its reference queue policy (ratio to EASY-SJBF on the train windows)
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
    """The reference queue policy of ``trace`` (a registered name, any case; ``None`` or
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
    (the training command line's default) means the trace's reference policy."""
    if policy is None or str(policy).upper() == "FCFS":
        return reference_policy(trace)
    return str(policy).upper()
