"""The Ray backend of :func:`hpcgym.evaluation.runner.parallel_map` (an optional extra).

Ray (https://docs.ray.io) runs the evaluation tasks — every (method, window) — on the
cores of this machine or of a cluster. It is optional: ``pip install -e ".[ray]"``.
Nothing here imports Ray at module level, so the library and every ``--help`` work
without it; :func:`require_ray` turns a missing Ray into :class:`RayUnavailable` with a
one-line message.

* :func:`init_ray`: an **embedded local** Ray (started in this process, no dashboard)
  when no ``address`` is given, or a connection to a running cluster (``ray start
  --head`` prints its address; ``"auto"`` finds the local one);
* :func:`ray_map`: ``[fn(t) for t in tasks]`` as Ray tasks, in task order. The shared
  ``context`` (traces, the agent loader) goes to Ray's object store once and is installed
  in each worker process as :func:`~hpcgym.evaluation.runner.worker_context`, exactly
  like the process pool's initializer does, so results are identical to the local
  backend. Functions (``fn``, the agent loader) are pickled by reference: the cluster's
  nodes need hpcgym (and the agents package) installed.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "BACKENDS",
    "RAY_INSTALL_HINT",
    "RayUnavailable",
    "init_ray",
    "ray_map",
    "require_ray",
]

#: the backends of :func:`~hpcgym.evaluation.runner.parallel_map`
BACKENDS: tuple[str, ...] = ("local", "ray")
RAY_INSTALL_HINT = 'pip install -e ".[ray]"'


class RayUnavailable(ImportError):
    """Ray is not installed (or cannot be imported); the message says how to install it."""


def require_ray() -> Any:
    """The ``ray`` module.

    :raises RayUnavailable: Ray is not installed, with the command that installs it
    """
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(f"Ray is not installed ({exc}): {RAY_INSTALL_HINT}") from None
    return ray


def init_ray(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    quiet: bool = True,
) -> Any:
    """Start or join Ray once per process (a no-op when Ray is already initialized).

    :param address: ``None``: an embedded local Ray in this process (stopped at exit);
        ``"auto"`` or ``HOST:PORT`` (``ray start --head`` prints it) or
        ``ray://HOST:10001``: connect to that cluster
    :param num_cpus: CPUs of the embedded local Ray (default: all cores); ignored with an
        ``address`` (the cluster has its own)
    :param quiet: Ray's own log at WARNING level
    :return: the ``ray`` module
    :raises RayUnavailable: Ray is not installed
    :raises ConnectionError: no cluster at ``address``
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kw: dict[str, Any] = {
        "include_dashboard": False,
        "ignore_reinit_error": True,
        "logging_level": logging.WARNING if quiet else logging.INFO,
    }
    if address is None:
        if num_cpus is not None:
            kw["num_cpus"] = int(num_cpus)
        ray.init(**kw)
    else:
        kw.pop("include_dashboard")  # a property of the cluster, not of a client
        ray.init(address=address, **kw)
    return ray


#: in a Ray worker process: the object id of the context installed last
_INSTALLED: list[str] = []


def _install_context(ref_box: list[Any]) -> None:
    """Install the task's context in this worker (once per worker and context)."""
    from hpcgym.evaluation import workers

    ray = require_ray()
    key = ref_box[0].hex()
    if _INSTALLED and _INSTALLED[0] == key:
        workers.limit_torch_threads()
        return
    workers.init_worker(ray.get(ref_box[0]))
    _INSTALLED[:] = [key]


def _call(fn: Callable[[Any], Any], ref_box: list[Any], task: Any) -> Any:
    """One task in a Ray worker: the context of ``ref_box`` (an object ref in a list, so
    Ray does not fetch it for every task), then ``fn(task)``."""
    _install_context(ref_box)
    return fn(task)


def ray_map(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    jobs: int | None = None,
    progress: bool = True,
    desc: str = "",
    context: dict[str, Any] | None = None,
) -> list[Any]:
    """``[fn(t) for t in tasks]`` as Ray tasks (one CPU each), in task order.

    Joins the Ray of :func:`init_ray` (started with ``num_cpus=jobs`` if not running).

    :param fn: a module-level function of one task (pickled by reference)
    :param tasks: the tasks (picklable)
    :param jobs: CPUs of an embedded local Ray started here (``None``: all cores); a
        running Ray or a cluster keeps its own
    :param progress: tqdm progress bar on stderr
    :param desc: label of the progress bar
    :param context: data every task reads through
        :func:`~hpcgym.evaluation.runner.worker_context` (put in the object store once)
    :raises RayUnavailable: Ray is not installed
    """
    from tqdm.auto import tqdm

    ray = init_ray(num_cpus=jobs)
    remote = ray.remote(num_cpus=1, max_retries=0)(_call)
    ref_box = [ray.put(context or {})]
    refs = [remote.remote(fn, ref_box, t) for t in tasks]
    where = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    bar = tqdm(total=len(refs), desc=desc, disable=not progress, file=sys.stderr, leave=False)
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=min(len(pending), 64), timeout=1.0)
            for ref in done:
                results[where[ref]] = _unwrap(ray, ref)
            bar.update(len(done))
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        bar.close()
    return results


def _unwrap(ray: Any, ref: Any) -> Any:
    """The task's result; a task's exception is raised as itself (as the process pool
    does), not wrapped in Ray's ``RayTaskError``."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.as_instanceof_cause()
        if isinstance(cause, Exception) and getattr(exc, "cause", None) is not None:
            raise exc.cause from None
        raise
