"""hpcgym and a real Slurm: a private, single-host Slurm for tests and benchmarks.

:class:`LocalSlurm` (:mod:`hpcgym.slurm.harness`) writes a ``slurm.conf`` for one node
with virtual cores, starts munge, slurmctld and slurmd (and optionally slurmdbd with
MariaDB) in a temporary directory on free ports, replays a workload as time-scaled
``sleep`` jobs, collects the accounting and stops every daemon it started, by its PID.
:mod:`hpcgym.slurm.bridge` runs a policy beside a live Slurm (``hpcgym slurm prioritize``).

This layer sits above :mod:`hpcgym.evaluation` and below :mod:`hpcgym.cli`. See
``docs/slurm.md``.
"""

from __future__ import annotations

from hpcgym.slurm.harness import (
    JobRecord,
    LocalSlurm,
    SlurmError,
    SlurmUnavailable,
    parse_jobcomp,
    parse_sacct,
    slurm_unavailable,
)
from hpcgym.slurm.replay import ReplayResult, replay

__all__ = [
    "JobRecord",
    "LocalSlurm",
    "ReplayResult",
    "SlurmError",
    "SlurmUnavailable",
    "replay",
    "parse_jobcomp",
    "parse_sacct",
    "slurm_unavailable",
]
