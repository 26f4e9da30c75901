"""One training session: set up (or resume) a run, learn, save, summarise.

:func:`start` begins a new run from a :class:`~train.config.TrainConfig`; :func:`resume`
continues one from its folder or a checkpoint. Both end in :func:`run_session`. User
errors (an unknown trace, windows that do not fit, a run that already reached its target)
raise :class:`~train.config.ConfigError`, which ``train/ppo.py`` reports like argparse.
"""

from __future__ import annotations

import logging
import math
import os
import shlex
import signal
import sys
import time
import warnings as warnings_module
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from train.build import (
    RolloutPlan,
    attach_anchor,
    env_kwargs,
    load_checkpoint,
    new_model,
    plan_rollout,
)
from train.config import ConfigError, TrainConfig
from train.rundir import RunDir, default_run_name, resolve_resume, write_json
from train.stopping import TARGET, StopControl
from train.summary import Session, build_summary
from train.tasks import queue_policy, run_mode

__all__ = ["Interrupted", "resume", "run_session", "start"]

log = logging.getLogger("hpcgym.train")


class Interrupted(Exception):
    """Training was interrupted (Ctrl-C or SIGTERM) after saving a checkpoint and
    ``summary.json``; the run continues with ``--resume``.

    :param run: the run folder
    :param timesteps: the step counter of the checkpoint
    :param signal: ``SIGINT`` (Ctrl-C) or ``SIGTERM``
    :param checkpoint: the checkpoint saved
    """

    def __init__(
        self, run: RunDir, timesteps: int, signal: str = "SIGINT", checkpoint: Path | None = None
    ) -> None:
        saved = f"checkpoint {checkpoint}" if checkpoint else "the last checkpoint"
        super().__init__(
            f"{signal}: stopped at {timesteps} steps, saved {saved} and {run.summary}; "
            f"continue with --resume {run.path}"
        )
        self.run = run
        self.timesteps = timesteps
        self.signal = signal

    def continue_with(self, path: str | Path) -> Interrupted:
        """This interruption, saying to continue with ``--resume path`` (the folder of a
        ``--seeds`` run, which resumes its unfinished seeds).

        :param path: what to resume
        """
        self.args = (str(self).replace(f"--resume {self.run.path}", f"--resume {path}"),)
        return self

    @property
    def exit_status(self) -> int:
        """The shell's convention: 128 + the signal number (130 Ctrl-C, 143 SIGTERM)."""
        return 128 + int(signal.Signals[self.signal])


def start(cfg: TrainConfig) -> dict[str, Any]:
    """Train a new run; returns its summary (also written to ``summary.json``).

    :param cfg: the run's options (``run_name`` ``None``: a name from the trace, policy,
        mode, seed and the time)
    :raises ConfigError: the run folder already holds a run, or a user error of set-up
    """
    if cfg.run_name is None:
        cfg = cfg.replace(run_name=default_run_name(cfg.trace, cfg.policy, run_mode(cfg), cfg.seed))
    assert cfg.run_name is not None
    run = RunDir(Path(cfg.logdir) / cfg.run_name)
    if run.holds_run():
        raise ConfigError(
            f"run folder {run.path} already holds a run: continue it with --resume {run.path}, "
            "or choose another --run-name"
        )
    return run_session(cfg, run)


def resume(path: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Continue a run; returns its summary.

    :param path: the run folder (its latest checkpoint) or a checkpoint ``.zip``
    :param options: options given again (only :data:`~train.config.RESUME_OVERRIDABLE`
        ones may differ from the run's)
    :raises ConfigError: a bad path, a conflicting option, a user error of set-up
    """
    try:
        run, checkpoint = resolve_resume(path)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:
        saved = run.read_json(run.config) or {}
    except (OSError, ValueError) as exc:  # unreadable or not JSON
        raise ConfigError(f"--resume {path}: cannot read {run.config}: {exc}") from None
    cfg = TrainConfig.from_dict(saved).for_resume(options)
    cfg = cfg.replace(run_name=run.path.name, logdir=str(run.path.parent))
    return run_session(cfg, run, checkpoint=checkpoint, saved=saved)


def _load_workload(cfg: TrainConfig) -> Any:
    """The training env's workload (trace errors surface here as :class:`ConfigError`)."""
    from hpcgym.workload import TraceNotFoundError, UnknownTraceError
    from train.tasks import env_class

    env_cls = env_class(cfg.task)
    kw = env_kwargs(cfg, "train", cfg.length)
    try:
        probe = env_cls(**kw)
    except (TraceNotFoundError, UnknownTraceError, FileNotFoundError) as exc:
        raise ConfigError(f"--trace {cfg.trace!r}: {exc}") from None
    except ValueError as exc:
        hint = "; on the command line: --row-history 0" if "row_history=0" in str(exc) else ""
        raise ConfigError(f"{exc}{hint}") from None
    for name in cfg.mix_traces:  # loaded once here (cached): errors before any env starts
        try:
            env_cls(**{**kw, "trace": name, "est_scale": probe.est_scale})
        except (TraceNotFoundError, UnknownTraceError, FileNotFoundError, ValueError) as exc:
            raise ConfigError(f"--mix-traces {name!r}: {exc}") from None
    return probe


def run_session(
    cfg: TrainConfig,
    run: RunDir,
    checkpoint: Path | None = None,
    saved: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Set up, learn, save the final model and write the summary.

    Training stops at the target, at ``--time-limit`` (the run then finishes normally)
    or on Ctrl-C / SIGTERM: then a checkpoint and ``summary.json`` are written (no final
    evaluation, no final model) and :class:`Interrupted` is raised.

    :param cfg: the run's options
    :param run: the run folder
    :param checkpoint: the checkpoint to continue from (``None``: a fresh run)
    :param saved: the resumed run's ``config.json`` (its resolved rollout is kept)
    :raises ConfigError: a user error found during set-up
    :raises Interrupted: Ctrl-C or SIGTERM during training
    """
    import torch as th

    from train.callbacks import (
        EpisodeMetricsCallback,
        EvalCheckpointCallback,
        PhaseCallback,
        StopCallback,
        TqdmProgressCallback,
    )
    from train.evaluator import Evaluator
    from train.logs import (
        add_custom_scalars_layout,
        close_logger,
        make_logger,
        write_config_text,
        write_hparams,
    )
    from train.summary import final_table

    t_start = time.time()
    warnings: list[str] = []

    def warn(msg: str) -> None:
        warnings.append(msg)
        log.warning(msg)

    th.set_num_threads(cfg.rollout_threads)
    probe = _load_workload(cfg)
    evaluator = Evaluator.for_config(cfg, probe.workload, warn)
    plan = plan_rollout(cfg, saved if checkpoint is not None else None)
    try:
        run.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the run folder {run.path}: {exc.strerror}") from None
    if checkpoint is None:
        model = new_model(cfg, plan)
    else:
        model = load_checkpoint(cfg, plan, checkpoint)
    attach_anchor(model, cfg, run.path, fresh=checkpoint is None)
    start_steps = int(model.num_timesteps) if checkpoint is not None else 0
    config = {**cfg.to_dict(), **plan.to_config()}

    logger = make_logger(run, start_steps, cfg.verbose)
    model.set_logger(logger)
    add_custom_scalars_layout(logger, evaluator.reference)
    if checkpoint is None:
        write_config_text(logger, config)

    stop = StopControl(None if cfg.time_limit is None else 60.0 * cfg.time_limit)
    best = run.best() if checkpoint is not None else None
    episode_cb = EpisodeMetricsCallback()
    eval_cb = EvalCheckpointCallback(
        run,
        plan.rollout_size,
        evaluator,
        cfg.eval_every,
        cfg.checkpoint_every,
        history=run.evaluations_until(start_steps) if checkpoint is not None else [],
        best=float(best["avg_bsld"]) if best else math.inf,
        keep_checkpoints=cfg.keep_checkpoints,
        keep_spread=cfg.keep_spread,
        stop=stop,
    )
    phase_cb = PhaseCallback(cfg.rollout_threads, cfg.update_threads, overhead=eval_cb)
    callbacks: list[Any] = [StopCallback(stop), phase_cb, episode_cb, eval_cb]
    if cfg.progress:
        postfix = _postfix(model, plan, episode_cb, eval_cb)
        callbacks.append(TqdmProgressCallback(plan.target_timesteps, postfix, stop))

    print(_banner(run, probe, cfg, plan, start_steps, checkpoint is not None), flush=True)
    # written once the set-up succeeded; on resume it keeps the new target and the other
    # overridable options for the next resume
    cfg.to_json(run.config, extra=plan.to_config())
    t_learn = time.perf_counter()
    interrupted = False
    # Ctrl-C and SIGTERM set a flag that the callbacks and the update honour within seconds
    # (a second one raises KeyboardInterrupt): no exception lands inside torch, the
    # logger or a checkpoint being written
    with stop.catching((signal.SIGINT, signal.SIGTERM)), _quiet_cut_updates():
        try:
            model.learn(
                total_timesteps=plan.target_timesteps - start_steps,
                callback=callbacks,
                reset_num_timesteps=checkpoint is None,
                progress_bar=False,
            )
        except KeyboardInterrupt:
            stop.request("SIGINT")
            interrupted = True
        except (BrokenPipeError, EOFError, ConnectionResetError):
            if stop.signal is None:  # subprocess envs died without a signal to us
                raise
            interrupted = True  # the signal reached the env workers too
        finally:
            learn_seconds = time.perf_counter() - t_learn
            try:
                model.get_env().close()
            except (BrokenPipeError, EOFError, ConnectionResetError):  # workers died
                pass
    if interrupted:  # stopped by an exception: the callbacks' end hooks did not run
        phase_cb.discard_partial_rollout()
        if getattr(eval_cb, "model", None) is None:  # before learn() set the callbacks up
            eval_cb.init_callback(model)
        if not eval_cb.checkpointed_now():
            eval_cb.checkpoint()
        eval_cb.flush()
    if stop.signal is None:
        run.save_model(model, run.final_model)

    steps = int(model.num_timesteps)
    reason = stop.reason() if steps < plan.target_timesteps else TARGET
    session = Session(
        started=t_start,
        ended=time.time(),
        resumed_from=str(checkpoint) if checkpoint else None,
        timesteps_start=start_steps,
        timesteps_end=steps,
        stop_reason=reason or "stopped",
        learn_time_s=learn_seconds,
        eval_time_s=eval_cb.eval_seconds,
        rollout_time_s=phase_cb.rollout_seconds,
        update_time_s=phase_cb.update_seconds,
        rollout_steps=phase_cb.rollout_steps,
        discarded_steps=phase_cb.discarded_steps,
        command=command_line(),
    )
    summary = _write_summary(
        run, cfg, plan, probe, session, checkpoint, evaluator, eval_cb.history, warnings
    )
    write_hparams(logger, config, summary, steps)  # the final metrics of the run
    close_logger(logger)
    if stop.signal is not None:
        raise Interrupted(run, steps, stop.signal, eval_cb.last_checkpoint)
    print(final_table(summary, queue_policy(cfg), run_mode(cfg)))
    return summary


def command_line() -> str | None:
    """``python train/ppo.py ...`` as this process was started (``None`` when training was
    started from Python rather than from the script); a ``--config FILE`` is written out
    as the file's ``--set`` pairs, so that the command repeats the run without the file."""
    if not sys.argv or not sys.argv[0].endswith("ppo.py"):
        return None
    from train.overrides import expand_config_argv

    argv = expand_config_argv(sys.argv[1:])
    return shlex.join(["python", os.path.relpath(sys.argv[0]), *argv])


@contextmanager
def _quiet_cut_updates() -> Iterator[None]:
    """Silence numpy's warnings about the empty epochs of an update cut at the deadline
    (SB3 logs the mean of the last epoch's empty lists as NaN)."""
    with warnings_module.catch_warnings():
        for message in (
            "Mean of empty slice",
            "invalid value encountered in scalar divide",
            "invalid value encountered in double_scalars",
        ):
            warnings_module.filterwarnings("ignore", message, RuntimeWarning)
        yield


def _write_summary(
    run: RunDir,
    cfg: TrainConfig,
    plan: RolloutPlan,
    probe: Any,
    session: Session,
    checkpoint: Path | None,
    evaluator: Any,
    history: list[dict[str, Any]],
    warnings: list[str],
) -> dict[str, Any]:
    """Build the run's summary with every session (a resume keeps the earlier ones),
    write ``summary.json`` and return it."""
    previous = (run.read_json(run.summary) or {}).get("sessions", []) if checkpoint else []
    previous = [s for s in previous if s.get("timesteps_end", 0) <= session.timesteps_start]
    summary = build_summary(
        run=run,
        config={**cfg.to_dict(), **plan.to_config()},
        workload={
            "trace": probe.trace_label,
            "jobs": len(probe.workload),
            "machine_size": int(probe.workload.machine_size),
        },
        timesteps=session.timesteps_end,
        rollout={
            "n_steps": plan.n_steps,
            "n_envs": cfg.n_envs,
            "rollout_size": plan.rollout_size,
            "batch_size": plan.batch_size,
            "calibration": plan.calibration,
        },
        sessions=[*previous, session.to_dict()],
        evaluation=evaluator.describe(),
        history=history,
        baselines=evaluator.baselines,
        skipped=evaluator.skipped,
        warnings=warnings,
    )
    write_json(run.summary, summary)
    return summary


def _postfix(model: Any, plan: RolloutPlan, episode_cb: Any, eval_cb: Any) -> Any:
    def postfix() -> dict[str, Any]:
        out: dict[str, Any] = {"upd": int(model.num_timesteps) // plan.rollout_size}
        if episode_cb.last:
            out["train_bsld"] = f"{episode_cb.last['avg_bsld']:.1f}"
        if eval_cb.last_eval is not None:
            out["eval_bsld"] = f"{eval_cb.last_eval['avg_bsld']:.1f}"
        return out

    return postfix


def _banner(
    run: RunDir, probe: Any, cfg: TrainConfig, plan: RolloutPlan, start_steps: int, resuming: bool
) -> str:
    state = f"resuming at {start_steps} steps" if resuming else "new"
    calib = plan.calibration
    return (
        f"run {run.path} | trace {probe.trace_label} ({len(probe.workload)} jobs, "
        f"{probe.workload.machine_size} procs)"
        + "".join(f" + mix {t}" for t in cfg.mix_traces)
        + f" | {state}"
        f" | {cfg.n_envs} x {plan.n_steps} steps/update"
        + (f" (measured {calib['mean']:.1f} steps per trajectory)" if calib else "")
        + f" | target {plan.target_timesteps} steps"
    )


def report_interrupt(exc: Interrupted) -> None:
    """Print how to continue an interrupted run (on stderr).

    :param exc: the interruption
    """
    print(f"\n{exc}", file=sys.stderr)
