"""Running methods on windows: engine schedulers (baselines) and agents, in a process pool.

* :func:`evaluate` / :func:`evaluate_many`: every (method, window) is one task; results
  are gathered by task index, so they do not depend on ``jobs``;
* :func:`simulate_window` / :func:`run_baselines`: engine schedulers on windows (the one
  baseline runner, also used by the training-time evaluation);
* :func:`parallel_map`: ``[fn(t) for t in tasks]`` in a ``forkserver`` pool with a shared
  per-worker context, one torch thread per worker;
* agents are played with :func:`hpcgym.evaluation.play.play_window` in the env of their
  task (``Method.task``); agents named by a string come from the caller's
  ``agent_loader`` (``Callable[[str], Policy]``, e.g. the agents package's
  ``load_agent``, else the installed one; :mod:`hpcgym.evaluation.loaders`). Workers get
  the loader pickled by reference, so it must be a module-level function. Agent objects
  given in Python (:func:`~hpcgym.evaluation.methods.object_method`) are played in the
  calling process.

Worker processes (``forkserver`` / ``spawn``) import the main script again: a script that
evaluates at import time (no ``if __name__ == "__main__":``) is refused before any
process starts, with the fix (:func:`parallel_map`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from hpcgym.evaluation.loaders import AgentLoader, LoaderUnavailable, resolve_agent_loader
from hpcgym.evaluation.methods import (
    AGENT_HEURISTICS,
    Method,
    MethodUnavailable,
    scheduler_method,
    unique_labels,
)
from hpcgym.evaluation.play import (
    AGENT_COUNTERS,
    HEAD_DELAY_METRICS,
    WINDOW_METRICS,
    play_window,
)
from hpcgym.evaluation.results import EvalResult
from hpcgym.evaluation.windows import WindowSet
from hpcgym.evaluation.workers import CONTEXT as _CTX
from hpcgym.evaluation.workers import TORCH_THREADS as _TORCH_THREADS
from hpcgym.evaluation.workers import init_worker as _init_worker
from hpcgym.evaluation.workers import limit_torch_threads as _limit_torch_threads
from hpcgym.evaluation.workers import worker_context
from hpcgym.sim.metrics import head_delay_summary, request_reservation_delays
from hpcgym.tasks import DEFAULT_TASK, card_task
from hpcgym.workload.core import Workload

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hpcgym.sim.engine import SimResult

__all__ = [
    "EvaluateOptions",
    "default_jobs",
    "evaluate",
    "evaluate_many",
    "parallel_map",
    "run_baselines",
    "simulate_window",
    "worker_context",
]


_MODELS: dict[tuple[str, int, int], Any] = {}
_ENVS: dict[tuple[Any, ...], Any] = {}
_CACHE_SIZE = 32  # envs / models kept per process


def default_jobs() -> int:
    """Cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def parallel_map(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    jobs: int | None = None,
    progress: bool = True,
    desc: str = "",
    context: dict[str, Any] | None = None,
    preload: Sequence[str] = (),
    backend: str = "local",
) -> list[Any]:
    """``[fn(t) for t in tasks]`` in a process pool (or on Ray), in task order.

    :param fn: a module-level (picklable) function of one task
    :param jobs: worker processes (``None``: :func:`default_jobs`); ``<= 1`` runs inline
    :param progress: tqdm progress bar on stderr
    :param context: data every worker needs (pickled once per worker, not per task);
        ``fn`` reads it from :data:`_CTX`
    :param preload: modules the workers import once (Linux: in the ``forkserver`` the
        workers are forked from, e.g. torch for models: ~4 s saved per worker)
    :param backend: ``local`` (this machine's process pool) or ``ray`` (Ray tasks on an
        embedded local Ray or the cluster joined by
        :func:`~hpcgym.evaluation.ray_backend.init_ray`; same results)
    """
    from tqdm.auto import tqdm

    # -- backend="ray" (the ray-backend helper's edit; see hpcgym/evaluation/ray_backend.py)
    if backend == "ray":
        from hpcgym.evaluation.ray_backend import ray_map

        return ray_map(fn, tasks, jobs=jobs, progress=progress, desc=desc, context=context)
    if backend != "local":
        raise ValueError(f"unknown backend {backend!r}; valid: local, ray")
    # -- end of the ray-backend edit
    n = len(tasks)
    jobs = default_jobs() if jobs is None else int(jobs)
    context = context or {}
    bar = tqdm(total=n, desc=desc, disable=not progress, file=sys.stderr, leave=False)
    try:
        if jobs <= 1 or n <= 1:
            saved = dict(_CTX)
            _CTX.clear()
            _CTX.update(context)
            prev = _limit_torch_threads()
            try:
                out = []
                for t in tasks:
                    out.append(fn(t))
                    bar.update(1)
                return out
            finally:
                _CTX.clear()
                _CTX.update(saved)
                th = sys.modules.get("torch")
                if th is not None:  # restore (torch may have been imported meanwhile)
                    th.set_num_threads(prev if prev is not None else _TORCH_THREADS[0])
        results: list[Any] = [None] * n
        _refuse_unguarded_main(jobs)
        ctx = _pool_context(preload)
        with ProcessPoolExecutor(
            max_workers=min(jobs, n), mp_context=ctx, initializer=_init_worker, initargs=(context,)
        ) as ex:
            futs = {ex.submit(fn, t): i for i, t in enumerate(tasks)}
            try:
                for f in as_completed(futs):
                    results[futs[f]] = f.result()
                    bar.update(1)
            except BrokenProcessPool as exc:
                for f in futs:
                    f.cancel()
                raise BrokenProcessPool(
                    f"an evaluation worker process died ({exc}); if this ran from a script, "
                    f"{_GUARD_FIX}"
                ) from exc
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
        return results
    finally:
        bar.close()


_GUARD_FIX = (
    "put the script's code under 'if __name__ == \"__main__\":' (worker processes import "
    "the main script again, and must not start the evaluation themselves), or pass jobs=1"
)


def _main_guarded_line(path: str, line: int) -> bool | None:
    """Whether ``line`` of the script ``path`` lies inside an ``if __name__ ==
    "__main__":`` block (``None``: the source cannot be read)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        consts = {n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant)}
        if "__name__" in names and "__main__" in consts:
            end = node.body[-1].end_lineno or node.body[-1].lineno
            if node.body[0].lineno <= line <= end:
                return True
    return False


def _refuse_unguarded_main(jobs: int) -> None:
    """Refuse to start worker processes from the top level of a main script without the
    ``__main__`` guard: ``forkserver`` / ``spawn`` workers import the script again and
    would start the evaluation themselves (a ``BrokenPipeError`` deep in
    multiprocessing). Also refuses inside such a worker re-importing the script.

    :raises RuntimeError: with the fix (:data:`_GUARD_FIX`)
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(f"a starting worker process re-ran the evaluation: {_GUARD_FIX}")
    main = sys.modules.get("__main__")
    if main is None:
        return
    path = getattr(main, "__file__", None)
    if not path:  # an interactive session, python -c: nothing to re-import
        return
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>":
            if _main_guarded_line(path, frame.f_lineno) is False:
                raise RuntimeError(
                    f"{path}, line {frame.f_lineno}: evaluating with jobs={jobs} starts worker "
                    f"processes while the script is still being imported: {_GUARD_FIX}"
                )
            return
        frame = frame.f_back  # type: ignore[assignment]


#: modules every evaluation worker needs (plus the agent loader's module)
_BASE_PRELOAD: tuple[str, ...] = ("hpcgym.evaluation", "hpcgym.envs.backfill_env")
#: modules of trained models (torch._dynamo is imported by the first optimizer SB3 builds)
_MODEL_PRELOAD: tuple[str, ...] = ("sb3_contrib", "torch._dynamo")


def _pool_context(preload: Sequence[str]) -> Any:
    """Linux: a ``forkserver`` (a clean single-threaded server, started once per process,
    that imports ``preload`` once; workers are forked from it). Elsewhere: ``spawn``.
    Never a plain fork of this process, which may hold torch / tqdm threads. The preload
    list only applies if the server is not running yet (later pools import on demand)."""
    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        from multiprocessing import forkserver

        if getattr(forkserver._forkserver, "_forkserver_pid", None) is None:  # not started
            ctx.set_forkserver_preload([*_BASE_PRELOAD, *preload])
        return ctx
    return multiprocessing.get_context("spawn")


# --------------------------------------------------------------------------- agent loaders
def _need_loader(methods: Sequence[Method], loader: AgentLoader | None) -> AgentLoader | None:
    """The loader of the agents named by strings: ``loader``, else the installed one.

    :raises MethodUnavailable: agents to load and no loader installed
    """
    agents = [m.label for m in methods if m.kind == "agent" and m.agent is None]
    if not agents or loader is not None:
        return loader
    try:
        return resolve_agent_loader()
    except LoaderUnavailable as exc:
        raise MethodUnavailable(
            f"evaluating the agent(s) {', '.join(agents)} needs an agent loader: pass "
            "agent_loader=load_agent of the agents package (as eval/*.py do), or give the "
            f"agent objects themselves (agent_method(model)): {exc}"
        ) from None


def _loader_preload(loader: AgentLoader | None) -> tuple[str, ...]:
    """The loader's module and its optional ``preload`` attribute (module names)."""
    if loader is None:
        return ()
    mod = getattr(loader, "__module__", None)
    extra = tuple(getattr(loader, "preload", ()))
    return ((mod,) if mod and mod != "__main__" else ()) + extra


# --------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class _Task:
    trace: str  # key in _CTX["traces"]
    method: Method
    start: int
    length: int
    skip_errors: bool


def _load_model(path: str) -> Any:
    """The model at ``path`` from the context's agent loader (cached per process)."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    model = _MODELS.get(key)
    if model is None:
        if len(_MODELS) >= _CACHE_SIZE:
            _MODELS.clear()
        _limit_torch_threads()
        model = _CTX["agent_loader"](path)
        _limit_torch_threads()
        _MODELS[key] = model
    return model


def _make_agent(method: Method, start: int) -> Any:
    """A heuristic agent of the context's loader; a random one is seeded per window from
    ``(agent_seed, start)`` through its ``reset(seed)``."""
    if method.spec not in AGENT_HEURISTICS:
        return _load_model(method.spec)
    agent = _CTX["agent_loader"](method.spec)
    reset = getattr(agent, "reset", None)
    if callable(reset):
        seq = np.random.SeedSequence([int(method.agent_seed), int(start)])
        reset(seed=int(seq.generate_state(1)[0]))
    return agent


def _get_env(trace_key: str, method: Method, length: int, model: Any | None) -> Any:
    """The (cached) env of an agent method on a trace of the context."""
    from hpcgym.envs import task_env

    kw = dict(method.env)
    env_cls = task_env(kw.pop("task", DEFAULT_TASK))
    if getattr(model, "observation_space", None) is None:
        model = None  # a callable agent: no space to check
    if model is not None:
        shape = tuple(model.observation_space.shape)
        if kw.get("max_queue") is None:
            kw["max_queue"] = int(shape[0])
    if kw.get("max_queue") is None:
        kw["max_queue"] = 128
    if method.wait_scale is not None:
        kw["wait_scale"] = method.wait_scale
    key = (
        trace_key,
        length,
        method.task,
        json.dumps(kw, sort_keys=True, default=str),
        method.est_scale,
    )
    env = _ENVS.get(key)
    if env is None:
        if len(_ENVS) >= _CACHE_SIZE:
            _ENVS.clear()
        if method.est_scale is not None:
            kw["est_scale"] = float(method.est_scale)
        env = env_cls(
            trace=_CTX["traces"][trace_key],
            window_length=length,
            split="all",
            reference=None,
            **kw,
        )
        _ENVS[key] = env
    if model is not None and tuple(model.observation_space.shape) != env.observation_space.shape:
        raise MethodUnavailable(
            f"model {method.spec} expects observations of shape "
            f"{tuple(model.observation_space.shape)}, the {method.task} env gives "
            f"{env.observation_space.shape} (max_queue, features): give the model's "
            "max_queue / feature_predictor in its model card"
        )
    return env


def _play_task(trace_key: str, method: Method, start: int, length: int) -> dict[str, Any]:
    model = _load_model(method.spec) if method.is_model else method.agent
    env = _get_env(trace_key, method, length, model)
    agent = model if model is not None else _make_agent(method, start)
    reset_counts = getattr(agent, "reset_counts", None)
    if callable(reset_counts):  # a gated agent counts its departures from the fallback
        reset_counts()
    row = play_window(env, agent, start, seed=method.env_seed, job_start=True)
    out = {k: row[k] for k in (*WINDOW_METRICS, *AGENT_COUNTERS)}
    out["job_start"] = row["job_start"]
    out.update(_reservation_record(env.simulation.result()))
    if getattr(agent, "departures", None) is not None:
        out["departures"] = int(agent.departures)
    return out


def simulate_window(workload: Workload, scheduler: Any, start: int, length: int) -> dict[str, Any]:
    """An engine scheduler on ``workload.window(start, length)`` (engine seed 0).

    :param workload: the whole trace
    :param scheduler: a scheduler spec (``EASY``...) or a
        :class:`~hpcgym.sim.schedulers.SchedulerSpec`
    :param start: the window's first job
    :param length: jobs per window
    :return: :data:`~hpcgym.evaluation.play.WINDOW_METRICS`, the agent counters as
        ``None`` and ``job_start`` (every job's start time)
    """
    from hpcgym.sim import get_scheduler

    spec = get_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    res = spec.simulate(workload.window(int(start), int(length)), seed=0)
    out: dict[str, Any] = {k: res.metrics[k] for k in WINDOW_METRICS}
    out.update({k: None for k in AGENT_COUNTERS})
    out["job_start"] = np.asarray(res.start, dtype=np.float64)
    out.update(_reservation_record(res))
    return out


def _reservation_record(res: SimResult) -> dict[str, Any]:
    """The engine's record of the reservations a window's jobs started under
    (``job_head_since``, ``job_backfilled``; see :func:`request_reservation_delays`)."""
    return {"job_head_since": res.head_since, "job_backfilled": res.backfilled}


def _run_task(task: _Task) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        if task.method.kind == "scheduler":
            wl: Workload = _CTX["traces"][task.trace]
            out = simulate_window(wl, task.method.spec, task.start, task.length)
        else:
            out = _play_task(task.trace, task.method, task.start, task.length)
    except Exception as exc:
        if not task.skip_errors:
            raise
        return {"error": f"{type(exc).__name__}: {exc}", "unavailable": True}
    out.update(_head_delays(task, out))
    out["seconds"] = time.perf_counter() - t0
    return out


def _head_delays(task: _Task, out: dict[str, Any]) -> dict[str, Any]:
    """:data:`HEAD_DELAY_METRICS` of a window: from the schedule alone for the FCFS queue
    (as recorded since they were first reported), from the engine's record of when each
    job became the reserved head for any other queue policy (``None`` without that
    record: conservative backfilling)."""
    wl: Workload = _CTX["traces"][task.trace]
    window = wl.window(int(task.start), int(task.length))
    orders_queue = card_task(task.method.env).orders_queue  # the agent's queue, not FCFS
    if task.method.policy == "FCFS" and not orders_queue:
        return head_delay_summary(request_reservation_delays(window, out["job_start"]))
    if out["job_head_since"] is None:  # conservative backfilling: no record
        return dict.fromkeys(HEAD_DELAY_METRICS)
    delays = request_reservation_delays(
        window, out["job_start"], out["job_head_since"], out["job_backfilled"]
    )
    return head_delay_summary(delays)


def run_baselines(
    workload: Workload,
    starts: Sequence[int],
    length: int,
    names: Sequence[str],
    policy: str = "FCFS",
    warn: Callable[[str], None] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """AVEbsld of named schedulers on the windows ``workload.window(s, length)`` (inline).

    A named scheduler with the FCFS queue policy is run with ``policy`` when that is not
    FCFS (``SJF+EASY`` for ``EASY`` under ``policy="SJF"``), like the env's reference, so
    that it differs from the agent in the backfilling only. Others (``SAF``, ``POLICY+NAME``
    specs) run as given. A scheduler that cannot run (e.g. its runtime predictor is not
    available) is skipped.

    :param workload: the whole trace
    :param starts: window starts
    :param length: window length (jobs)
    :param names: scheduler names / specs of :func:`hpcgym.sim.get_scheduler`
    :param policy: the agent's base queue policy
    :param warn: called with the message of every skipped scheduler
    :return: ``(results by name, skipped: name -> reason)``; a result is ``{"name",
        "spec", "per_window": [avg_bsld...], "mean", "seconds"}``
    """
    from hpcgym.sim import NAMED, get_scheduler

    named = {k.lower() for k in NAMED}
    out: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            spec = get_scheduler(name)
            if name.strip().lower() in named and spec.policy == "FCFS" and policy != "FCFS":
                spec = spec.with_policy(policy)
            values = [
                float(simulate_window(workload, spec, int(s), length)["avg_bsld"]) for s in starts
            ]
        except (ImportError, ValueError, KeyError, RuntimeError, NotImplementedError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            skipped[name] = reason
            if warn is not None:
                warn(f"baseline {name!r} skipped ({reason})")
            continue
        out[name] = {
            "name": spec.name,
            "spec": spec.to_dict(),
            "per_window": values,
            "mean": float(np.mean(values)),
            "seconds": time.perf_counter() - t0,
        }
    return out, skipped


# --------------------------------------------------------------------------- evaluate
def _workload_key(w: Workload) -> str:
    """Content hash of a workload's scheduling columns (key of the worker caches)."""
    h = hashlib.blake2b(digest_size=12)
    h.update(f"{w.name}|{w.machine_size}|{len(w)}|{w.offset}".encode())
    for col in (w.submit, w.runtime, w.procs, w.request, w.user, w.group, w.executable):
        h.update(np.asarray(col).tobytes())  # the raw bytes, in C order
    return h.hexdigest()


@dataclass
class _Request:
    key: str
    workload: Workload
    methods: list[Method]
    windows: WindowSet
    reference: str | None
    ratio_reference: str | None = None
    ratio_method: Method | None = None  # one of `methods`, or a hidden extra task


def _as_workload(trace: str | os.PathLike[str] | Workload | None) -> Workload:
    from hpcgym.workload import load

    return load(trace)


def _ratio_values(
    r: _Request, hidden: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> list[float] | str | None:
    """The reference's AVEbsld per window (``None``: no reference; a string: its error)."""
    if r.ratio_method is None:
        return None
    if r.ratio_method in r.methods:
        return [
            float(row["avg_bsld"]) for row in rows if row["method"] == r.ratio_method.label
        ] or "the reference method failed (see above)"
    errs = [o["error"] for o in hidden if o.get("error")]
    if errs:
        return str(errs[0])
    return [float(o["avg_bsld"]) for o in hidden]


class EvaluateOptions(TypedDict, total=False):
    """The keyword arguments of :func:`evaluate` (meanings and defaults:
    :func:`evaluate_many`)."""

    jobs: int | None
    progress: bool
    skip_unavailable: bool
    reference: str | None
    agent_loader: AgentLoader | None
    ratio_reference: str | None
    backend: str


def evaluate(
    trace: str | os.PathLike[str] | Workload | None,
    methods: Sequence[Method],
    windows: WindowSet,
    **options: Unpack[EvaluateOptions],
) -> EvalResult:
    """Every method on every window of one trace (see :func:`evaluate_many`).

    :param trace: registered name, SWF path, workload, or ``None`` (synthetic)
    :param methods: the methods
    :param windows: the windows (:func:`~hpcgym.evaluation.windows.select_windows`)
    :param options: ``jobs``, ``progress``, ``skip_unavailable``, ``reference``,
        ``agent_loader``, ``ratio_reference``, ``backend`` of :func:`evaluate_many`
    """
    return evaluate_many([(trace, methods, windows)], **options)[0]


def evaluate_many(
    requests: Sequence[
        tuple[str | os.PathLike[str] | Workload | None, Sequence[Method], WindowSet]
    ],
    *,
    jobs: int | None = None,
    progress: bool = True,
    skip_unavailable: bool = False,
    reference: str | None = "EASY",
    agent_loader: AgentLoader | None = None,
    ratio_reference: str | None = None,
    backend: str = "local",
) -> list[EvalResult]:
    """Evaluate several ``(trace, methods, windows)`` requests in one process pool.

    Every (method, window) is one task; engine schedulers run ``scheduler.simulate(
    workload.window(start, length), seed=0)``, agents play the window in the env of their
    task (:class:`~hpcgym.envs.backfill_env.BackfillEnv` or
    :class:`~hpcgym.envs.schedule_env.ScheduleEnv`; ``split="all"``, no reward
    reference, reset with ``options={"start": start}`` and seed ``env_seed``) with
    ``predict(obs, action_masks=env.action_masks(), deterministic=True)``
    (:func:`~hpcgym.evaluation.play.act`: also stock SB3 models and callables). Agent
    objects (:func:`~hpcgym.evaluation.methods.object_method`) play in this process,
    everything else in the pool.

    :param jobs: worker processes (``None``: all cores; ``1``: inline)
    :param skip_unavailable: a method that fails (unknown scheduler, model that does not
        load, predictor error...) is dropped from the result with its reason in
        ``EvalResult.skipped`` instead of raising. Unknown scheduler names and missing
        agents are resolved before (:func:`scheduler_method`, :func:`agent_method`).
    :param reference: label of the reference of ``vs_reference_pct`` (default ``EASY``)
    :param agent_loader: turns an agent spec (heuristic name, model ``.zip`` path) into a
        policy (:mod:`hpcgym.evaluation.loaders`); ``None``: the installed one
        (:func:`~hpcgym.evaluation.loaders.resolve_agent_loader`) when agents are named
        by strings. A module-level function (the workers get it pickled by reference).
    :param ratio_reference: scheduler the paired statistics of the summaries are against
        (:mod:`hpcgym.evaluation.statistics`: ``geo_ratio, ci_low, ci_high, wins``), e.g.
        ``EASY-SJBF``; a scheduler method of that spec is used, else it runs on the same windows
        without being shown as a method. ``None``: no statistics
    :param backend: ``local`` (process pool) or ``ray`` (:func:`parallel_map`)
    :raises MethodUnavailable: agents without ``agent_loader``, unknown ``ratio_reference``
    """
    reqs: list[_Request] = []
    traces: dict[str, Workload] = {}
    for trace, methods, windows in requests:
        wl = _as_workload(trace)
        key = _workload_key(wl)  # content hash: worker caches never mix two traces
        traces[key] = wl
        ms = [Method(**vars(m)) for m in methods]  # copies: labels may be made unique
        unique_labels(ms)
        for s in windows.starts:
            if s < 0 or s + windows.length > len(wl):
                raise ValueError(
                    f"window [{s}:{s + windows.length}] is outside {wl.name} ({len(wl)} jobs)"
                )
        ratio_method = None
        if ratio_reference is not None:
            same = [m for m in ms if m.kind == "scheduler" and m.spec == ratio_reference]
            ratio_method = same[0] if same else scheduler_method(ratio_reference)
        reqs.append(_Request(key, wl, ms, windows, reference, ratio_reference, ratio_method))
        agent_loader = _need_loader(ms, agent_loader)
    tasks: list[_Task] = []
    index: list[tuple[int, int, int]] = []  # (request, method, window)
    # agents first: they are the long tasks (better load balance); order of results is
    # by index, so it does not change the outputs
    for agent_pass in (True, False):
        for ri, r in enumerate(reqs):
            for mi, m in enumerate(r.methods):
                if (m.kind == "agent") != agent_pass:
                    continue
                for wi, s in enumerate(r.windows.starts):
                    tasks.append(_Task(r.key, m, int(s), r.windows.length, skip_unavailable))
                    index.append((ri, mi, wi))
    for ri, r in enumerate(reqs):  # hidden references last (index -1)
        if r.ratio_method is not None and r.ratio_method not in r.methods:
            for wi, s in enumerate(r.windows.starts):
                tasks.append(
                    _Task(r.key, r.ratio_method, int(s), r.windows.length, skip_unavailable)
                )
                index.append((ri, -1, wi))
    models = any(t.method.is_model for t in tasks)
    context = {"traces": traces, "agent_loader": agent_loader}
    here = [i for i, t in enumerate(tasks) if t.method.agent is not None]
    pool = [i for i, t in enumerate(tasks) if t.method.agent is None]
    outs: list[dict[str, Any]] = [{}] * len(tasks)
    pool_outs = parallel_map(
        _run_task,
        [tasks[i] for i in pool],
        jobs=jobs,
        progress=progress,
        desc="evaluating",
        context=context,
        preload=_loader_preload(agent_loader) + (_MODEL_PRELOAD if models else ()),
        backend=backend,
    )
    here_outs = parallel_map(  # agent objects: in this process, never pickled
        _run_task,
        [tasks[i] for i in here],
        jobs=1,
        progress=progress,
        desc="agent objects",
        context=context,
    )
    for i, o in zip(pool, pool_outs, strict=True):
        outs[i] = o
    for i, o in zip(here, here_outs, strict=True):
        outs[i] = o
    grid: dict[tuple[int, int, int], dict[str, Any]] = dict(zip(index, outs, strict=True))
    results: list[EvalResult] = []
    for ri, r in enumerate(reqs):
        nwin = len(r.windows.starts)
        skipped: dict[str, str] = {}
        kept: list[tuple[int, Method]] = []
        for mi, m in enumerate(r.methods):
            errs = [e for e in (grid[(ri, mi, wi)].get("error") for wi in range(nwin)) if e]
            if errs:
                skipped[m.label] = errs[0]
            else:
                kept.append((mi, m))
        rows: list[dict[str, Any]] = []
        job_start: dict[str, np.ndarray] = {}
        timings: dict[str, list[float]] = {}
        for mi, m in kept:
            js = []
            timings[m.label] = []
            for wi, s in enumerate(r.windows.starts):
                o = grid[(ri, mi, wi)]
                row: dict[str, Any] = {
                    "trace": r.workload.name,
                    "method": m.label,
                    "kind": m.kind,
                    "window": wi,
                    "start": int(s),
                    "length": r.windows.length,
                }
                for k in WINDOW_METRICS:
                    v = o[k]
                    row[k] = int(v) if k == "backfilled" else float(v)
                for k in (*AGENT_COUNTERS, *HEAD_DELAY_METRICS):
                    row[k] = o[k]
                if o.get("departures") is not None:  # gated agents only
                    row["departures"] = o["departures"]
                rows.append(row)
                js.append(o["job_start"])
                timings[m.label].append(float(o["seconds"]))
            job_start[m.label] = np.stack(js)
        ratio_values = _ratio_values(r, [grid.get((ri, -1, wi), {}) for wi in range(nwin)], rows)
        if isinstance(ratio_values, str):
            skipped[f"{r.ratio_reference} (reference)"] = ratio_values
            ratio_values = None
        wl = r.workload
        submit = np.stack([wl.submit[s : s + r.windows.length] for s in r.windows.starts])
        runtime = np.stack([wl.runtime[s : s + r.windows.length] for s in r.windows.starts])
        results.append(
            EvalResult(
                trace=wl.name,
                jobs=len(wl),
                machine_size=int(wl.machine_size),
                windows=r.windows,
                methods=[m for _, m in kept],
                rows=rows,
                job_start=job_start,
                submit=submit,
                runtime=runtime,
                skipped=skipped,
                timings=timings,
                reference=r.reference,
                ratio_reference=r.ratio_reference if ratio_values is not None else None,
                ratio_values=ratio_values,
            )
        )
    return results
