"""The per-process context of the evaluation tasks of
:func:`hpcgym.evaluation.runner.parallel_map` (in a process pool or in Ray workers,
:mod:`hpcgym.evaluation.ray_backend`): what every task reads (the traces, the agent loader),
and one torch thread per worker."""

from __future__ import annotations

import sys
from typing import Any

__all__ = [
    "CONTEXT",
    "TORCH_THREADS",
    "init_worker",
    "limit_torch_threads",
    "worker_context",
]

#: worker-process context: {"traces": {key: Workload}}
CONTEXT: dict[str, Any] = {}


def init_worker(context: dict[str, Any]) -> None:
    """Install ``context`` as this process's :data:`CONTEXT` (a pool's initializer)."""
    CONTEXT.clear()
    CONTEXT.update(context)
    limit_torch_threads()


def worker_context() -> dict[str, Any]:
    """The context of the current :func:`parallel_map` task (its ``context`` argument)."""
    return CONTEXT


TORCH_THREADS: list[int] = []  # torch's thread count when evaluation first saw it


def limit_torch_threads() -> int | None:
    """One torch thread (same floating point whatever ``jobs``; no oversubscription).
    Returns the previous count (``None`` if torch is not imported)."""
    th = sys.modules.get("torch")
    if th is None:
        return None
    prev = int(th.get_num_threads())
    if not TORCH_THREADS:
        TORCH_THREADS.append(prev)
    th.set_num_threads(1)
    return prev
