"""Several training seeds of one configuration (``train/ppo.py --seeds 1 2 3``).

Each seed is a normal, resumable run in a sub-folder of the seeds run, trained one after
the other, or ``--seed-jobs N`` at a time in N processes (one core each with the default
one torch thread)::

    <logdir>/<run-name>/
        seeds.json          the seeds, the options, per seed the final validation figures
                            and across the seeds their mean and spread
        seed-1/ seed-2/ ... one run folder per seed (train/rundir.py)

``tensorboard --logdir <logdir>/<run-name>`` shows the seeds side by side.
``--resume <logdir>/<run-name>`` resumes every unfinished seed (and starts the ones not
begun); a finished seed is only continued when a new length (``--total-steps`` /
``--epochs``) is given. What one seed's result says is only what its validation windows
say: the claim is the spread across seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hpcgym.evaluation.statistics import spread
from train.card import SEEDS_FILE  # the file of a seeds run
from train.config import ConfigError, TrainConfig
from train.rundir import RunDir, default_run_name, write_json
from train.summary import format_paired
from train.tasks import run_mode

__all__ = [
    "SEEDS_FILE",
    "is_seeds_run",
    "resume_seeds",
    "seed_status",
    "seeds_table",
    "spread",
    "start_seeds",
]


#: Stop reasons of a session that finished its run (a final model was saved).
_FINISHED = ("target reached", "time limit")

#: Options that make :func:`resume_seeds` continue finished seeds too.
_LENGTH_OPTIONS = ("total_steps", "epochs")


def seed_folder(root: Path, seed: int) -> Path:
    """The run folder of ``seed`` in the seeds run ``root``.

    :param root: the seeds run's folder
    :param seed: the seed
    """
    return root / f"seed-{int(seed)}"


def is_seeds_run(path: str | Path) -> bool:
    """Whether ``path`` is the folder of a seeds run (it holds ``seeds.json``).

    :param path: a folder
    """
    return (Path(path) / SEEDS_FILE).is_file()


def _last_stop(run: RunDir) -> str | None:
    """The stop reason of the seed's last session (``None``: no summary yet)."""
    sessions = (run.read_json(run.summary) or {}).get("sessions") or []
    return sessions[-1].get("stop_reason") if sessions else None


def seed_status(run: RunDir) -> str:
    """``not started`` (no ``config.json``), ``finished`` (its last session reached the
    target or the time limit and saved the final model) or ``unfinished``.

    :param run: a seed's run folder
    """
    if not run.holds_run():
        return "not started"
    if _last_stop(run) in _FINISHED and run.final_model.is_file():
        return "finished"
    return "unfinished"


def _check_seeds(seeds: Sequence[int], options: Mapping[str, Any]) -> list[int]:
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("--seeds: give at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds: each seed once, got {' '.join(map(str, seeds))}")
    if "seed" in options:
        raise ConfigError("--seed and --seeds exclude each other: give one")
    return seeds


def _stored_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of every seed as JSON values (without the folder and the seed)."""
    return {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in options.items()
        if k not in ("logdir", "run_name", "seed")
    }


def start_seeds(options: Mapping[str, Any], seeds: Sequence[int], jobs: int = 1) -> dict[str, Any]:
    """Train one run per seed in ``<logdir>/<run-name>/seed-<s>``; write ``seeds.json``,
    print the table and return ``seeds.json``'s contents.

    :param options: the options given (as for :meth:`TrainConfig.create`), without ``seed``
    :param seeds: the seeds
    :param jobs: seeds trained at the same time, each in its own process (1: one after
        the other in this process)
    :raises ConfigError: bad seeds or options, or the folder already holds a run
    """
    seeds = _check_seeds(seeds, options)
    cfg = TrainConfig.create(**options)  # every option checked before the first seed
    name = cfg.run_name or default_run_name(cfg.trace, cfg.policy, run_mode(cfg), seeds)
    root = Path(cfg.logdir) / name
    if is_seeds_run(root) or RunDir(root).holds_run():
        raise ConfigError(
            f"run folder {root} already holds a run: continue it with --resume {root}, "
            "or choose another --run-name"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the run folder {root}: {exc.strerror}") from None
    stored = {"seeds": seeds, "options": _stored_options(options), "seed_jobs": jobs}
    write_json(root / SEEDS_FILE, stored)
    return _train_seeds(root, {}, resume=False, jobs=jobs)


def resume_seeds(
    path: str | Path, options: Mapping[str, Any], jobs: int | None = None
) -> dict[str, Any]:
    """Continue a seeds run: resume every unfinished seed, start the ones not begun,
    continue finished ones when ``options`` set a new length, and the ones that stopped
    on their time limit when ``options`` give a (new) ``time_limit`` (as ``--resume`` of
    one run does).

    :param path: the seeds run's folder
    :param options: options given again (only :data:`~train.config.RESUME_OVERRIDABLE`
        ones may differ from the run's)
    :param jobs: seeds trained at the same time (see :func:`start_seeds`; ``None``: as
        many as the run was started with, its ``seed_jobs`` in ``seeds.json``)
    :raises ConfigError: not a seeds run, a conflicting option, a user error of set-up
    """
    root = Path(path)
    if not is_seeds_run(root):
        raise ConfigError(f"--resume {root}: no {SEEDS_FILE} in it (not a --seeds run)")
    if "seed" in options:
        raise ConfigError("--seed cannot be given when resuming a --seeds run")
    if jobs is None:
        jobs = int((RunDir(root).read_json(root / SEEDS_FILE) or {}).get("seed_jobs") or 1)
    return _train_seeds(root, options, resume=True, jobs=jobs)


def _train_seeds(
    root: Path, options: Mapping[str, Any], resume: bool, jobs: int = 1
) -> dict[str, Any]:
    """Train (or continue) every seed of ``root``, ``jobs`` at a time, then write
    ``seeds.json`` and print the table; an interruption writes ``seeds.json`` first and
    says to resume ``root``."""
    from train import session

    data = RunDir(root).read_json(root / SEEDS_FILE) or {}
    todo = [s for s in data["seeds"] if _seed_action(root, s, options, resume) is not None]
    if resume and not todo:
        print(
            f"every seed of {root} is finished: give --time-limit to continue the seeds that "
            "stopped on their time limit, or a larger --total-steps / --epochs"
        )
    try:
        if jobs <= 1 or len(todo) <= 1:
            for seed in todo:
                _train_seed(root, seed, options, resume)
        else:
            _train_parallel(root, todo, options, resume, jobs)
    except session.Interrupted as exc:
        _write_results(root, data)
        raise exc.continue_with(root) from None
    results = _write_results(root, data)
    print(seeds_table(results))
    return results


def _seed_action(root: Path, seed: int, options: Mapping[str, Any], resume: bool) -> str | None:
    """``start``, ``resume`` or ``None`` (nothing to do) for one seed of ``root``.

    :raises ConfigError: the seed must be resumed and has no checkpoint
    """
    run = RunDir(seed_folder(root, seed))
    status = seed_status(run)
    if status == "not started":
        return "start"
    more_time = "time_limit" in options and _last_stop(run) == "time limit"
    if resume and (status == "unfinished" or more_time or set(_LENGTH_OPTIONS) & set(options)):
        if run.latest_checkpoint() is None:
            raise ConfigError(
                f"--resume {root}: seed {seed} was stopped before its first checkpoint "
                f"({run.checkpoint_dir} is empty); delete {run.path} to train it anew"
            )
        return "resume"
    return None


def _train_seed(root: Path, seed: int, options: Mapping[str, Any], resume: bool) -> None:
    """Start or continue one seed of ``root`` in this process (see :func:`_seed_action`)."""
    from train import session

    run = RunDir(seed_folder(root, seed))
    action = _seed_action(root, seed, options, resume)
    if action == "start":
        stored = dict((RunDir(root).read_json(root / SEEDS_FILE) or {}).get("options") or {})
        cfg = TrainConfig.create(**stored, seed=seed).for_resume(options)
        session.start(cfg.replace(logdir=str(root), run_name=run.path.name))
    elif action == "resume":
        session.resume(str(run.path), options)


def _idle_worker() -> None:
    """Pool initializer: an idle worker ignores Ctrl-C and SIGTERM (one dying would break
    the pool and end the seeds still running in the other workers), and the parent's
    passed-on signals (:data:`train.stopping.PASS_ON`), which it will take as such."""
    import signal

    from train import stopping

    stopping.passed_on = {v: k for k, v in stopping.PASS_ON.items()}
    for s in (signal.SIGINT, signal.SIGTERM, *stopping.passed_on):
        signal.signal(s, signal.SIG_IGN)


def _seed_worker(
    root: str, seed: int, options: dict[str, Any], resume: bool
) -> tuple[str, int] | None:
    """One seed in a worker process; an interruption comes back as ``(signal, steps)``
    (exceptions of other kinds travel back as themselves). While the seed trains, the
    session catches Ctrl-C and SIGTERM and stops with a checkpoint; before and after,
    they interrupt the seed. A signal passed on by the parent never interrupts: before
    the session it is kept (:data:`stopping.pending`) and the session stops on it at once."""
    import signal

    from train import session, stopping

    caught: list[str] = []

    def interrupt(signum: int, _frame: object) -> None:
        if not caught:
            caught.append(signal.Signals(signum).name)
            raise KeyboardInterrupt

    def passed(signum: int, _frame: object) -> None:
        # never raises: it may come after the session has stopped on the group's signal
        # (and be writing its summary); before the session, the session honours it
        stopping.pending = stopping.pending or stopping.passed_on[signum]

    stopping.pending = None
    old = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    old.update({s: signal.signal(s, passed) for s in stopping.passed_on})
    try:
        _train_seed(Path(root), seed, options, resume)
    except session.Interrupted as exc:
        return exc.signal, exc.timesteps
    except KeyboardInterrupt:  # during the seed's set-up: nothing saved
        return (caught or ["SIGINT"])[0], 0
    finally:
        stopping.pending = None
        for s, h in old.items():
            signal.signal(s, h)
    return None


def _train_parallel(
    root: Path, seeds: Sequence[int], options: Mapping[str, Any], resume: bool, jobs: int
) -> None:
    """Train ``seeds`` in ``jobs`` worker processes (``spawn``: a fresh interpreter each,
    as torch wants). Ctrl-C reaches every worker (same process group): each saves a
    checkpoint; the first interruption is raised here once every worker has stopped. A
    SIGTERM to the whole process group (a batch system stopping the job) does the same,
    and so does a signal to this process alone (it is passed on to the workers).

    Here the signals only set a flag (seeds not begun are then cancelled): an exception
    raised inside the pool's locks and queues could leave them inconsistent.

    :raises session.Interrupted: a seed was interrupted (resume ``root``)
    """
    import multiprocessing as mp
    import signal
    import threading

    from train import session

    caught: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        caught.append(signal.Signals(signum).name)

    stopped: list[tuple[int, tuple[str, int]]] = []
    ctx = mp.get_context("spawn")
    sigs = (signal.SIGINT, signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, on_signal) for s in sigs} if main else {}
    try:
        _wait_workers(root, seeds, options, resume, jobs, ctx, stopped, caught)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if stopped:
        seed, (name, steps) = stopped[0]
        raise session.Interrupted(RunDir(seed_folder(root, seed)), steps, name)


def _wait_workers(
    root: Path,
    seeds: Sequence[int],
    options: Mapping[str, Any],
    resume: bool,
    jobs: int,
    ctx: Any,
    stopped: list[tuple[int, tuple[str, int]]],
    caught: Sequence[str] = (),
) -> None:
    """Run the seeds in the pool and wait for all; interruptions go to ``stopped``. Once
    ``caught`` (filled by a signal handler) is not empty, seeds not begun are cancelled
    (they stay "not started"); the running ones stop by themselves (they got the signal)."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(
        max_workers=min(jobs, len(seeds)), mp_context=ctx, initializer=_idle_worker
    ) as pool:
        futures = {s: pool.submit(_seed_worker, str(root), s, dict(options), resume) for s in seeds}
        cancelled = False
        pending = set(futures.values())
        while pending:
            _done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            if caught and not cancelled:
                for f in pending:
                    f.cancel()
                cancelled = True
                _pass_on(caught[0])
        for seed, fut in futures.items():
            out = None if fut.cancelled() else fut.result()
            if out is not None:
                stopped.append((seed, out))


def _pass_on(name: str) -> None:
    """Pass the signal ``name`` on to the worker processes (:data:`stopping.PASS_ON`): a
    signal sent to this process alone — a container runtime or batch system that signals
    only the job's leader — then stops the seeds too. A worker that got the signal itself
    (sent to the process group) takes the copy as the same request; an idle one ignores it.
    """
    import multiprocessing as mp
    import os

    from train import stopping

    sig = stopping.PASS_ON.get(name)
    if sig is None:
        return
    for child in mp.active_children():
        if child.pid is not None:
            try:
                os.kill(child.pid, sig)
            except ProcessLookupError:  # ended meanwhile
                pass


def _seed_row(seed: int, run: RunDir) -> dict[str, Any]:
    """One seed's entry of ``seeds.json``: its status and final validation figures."""
    summary = run.read_json(run.summary) if run.holds_run() else None
    row: dict[str, Any] = {"seed": seed, "run": str(run.path), "status": seed_status(run)}
    ev = (summary or {}).get("eval") or {}
    final, best = ev.get("final") or {}, ev.get("best") or {}
    row.update(
        timesteps=(summary or {}).get("timesteps"),
        avg_bsld=final.get("avg_bsld"),
        best_avg_bsld=best.get("avg_bsld"),
        paired=final.get("paired"),
        best_paired=best.get("paired"),
    )
    return row


def _write_results(root: Path, data: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``seeds.json`` with every seed's row and the spread across seeds; return it."""
    rows = [_seed_row(s, RunDir(seed_folder(root, s))) for s in data["seeds"]]
    done = [r for r in rows if r["status"] == "finished"]
    ratios = [(r["paired"] or {}).get("geo_ratio") for r in done]
    out = {
        "seeds": list(data["seeds"]),
        "options": data.get("options", {}),
        "seed_jobs": data.get("seed_jobs", 1),
        "reference": next((r["paired"]["reference"] for r in done if r["paired"]), None),
        "runs": rows,
        "across": {
            "geo_ratio": spread(ratios),
            "avg_bsld": spread([r["avg_bsld"] for r in done]),
            "best_avg_bsld": spread([r["best_avg_bsld"] for r in done]),
        },
    }
    write_json(root / SEEDS_FILE, out)
    return out


def _fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _spread_text(s: Mapping[str, Any] | None, digits: int) -> str:
    if not s:
        return "-"
    return (
        f"mean {s['mean']:.{digits}f}, std {s['std']:.{digits}f} "
        f"(min {s['min']:.{digits}f} - max {s['max']:.{digits}f}, {s['n']} seeds)"
    )


def seeds_table(results: Mapping[str, Any]) -> str:
    """The text printed at the end of a seeds run: per seed the final validation AVEbsld,
    the best one and the paired ratio vs the reference with its interval; across the
    finished seeds the mean and spread of the ratio and of the validation AVEbsld.

    :param results: the contents of ``seeds.json`` (:func:`start_seeds`)
    """
    ref = results.get("reference") or "the reference"
    head = f"{'seed':>6} {'status':>12} {'steps':>10} {'AVEbsld':>9} {'best':>9}  ratio vs {ref}"
    lines = ["", "validation windows, final model of each seed:", head, "-" * len(head)]
    for r in results["runs"]:
        lines.append(
            f"{r['seed']:>6} {r['status']:>12} {r['timesteps'] or 0:>10} "
            f"{_fmt(r['avg_bsld']):>9} {_fmt(r['best_avg_bsld']):>9}  {format_paired(r['paired'])}"
        )
    across = results["across"]
    lines += [
        "-" * len(head),
        f"geo-mean ratio vs {ref}: {_spread_text(across['geo_ratio'], 3)}",
        f"validation AVEbsld (final): {_spread_text(across['avg_bsld'], 2)}",
        f"validation AVEbsld (best): {_spread_text(across['best_avg_bsld'], 2)}",
    ]
    return "\n".join(lines)
