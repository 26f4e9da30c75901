"""The options of a training run: :class:`TrainConfig`, its presets and its validation.

One typed, frozen dataclass holds every option of ``train/ppo.py``. Each field carries its
command-line flag, help text and group (:class:`Option`, in the field's metadata), so the
parser (:mod:`train.cli`) and the defaults cannot drift apart. A config is validated when
it is built (:class:`ConfigError` names the flag and the accepted values), is written to
the run folder as ``config.json`` (:meth:`TrainConfig.to_json`) and read back on resume
(:meth:`TrainConfig.from_json`, which also reads the keys of older runs).

>>> cfg = TrainConfig.create(preset="fast", trace="SDSC-SP2")
>>> cfg.n_epochs, cfg.total_steps
(4, 1000000000)
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcgym.argtypes import nonneg_float, nonneg_int, positive_float, positive_int, unit_float
from hpcgym.workload.sequences import VALIDATION_FRACTION
from train.checks import baseline_problems, device_problems
from train.options import (
    Option,
    auto_or_int,
    fraction,
    full_or_int,
    layer_widths,
    library_names,
    name_weights,
    names,
    none_or_float,
    none_or_name,
    row_history_value,
    trace_list,
)
from train.tasks import TASKS, task_problems

__all__ = [
    "DEFAULT_BASELINES",
    "DEFAULT_EVAL_LENGTH",
    "PAPER_HYPERPARAMETERS",
    "PRESETS",
    "RESUME_OVERRIDABLE",
    "ConfigError",
    "TrainConfig",
]

#: Named schedulers evaluated next to the agent on the evaluation windows.
DEFAULT_BASELINES: tuple[str, ...] = ("EASY", "EASY-AR", "EASY-SJBF", "SAF", "EASY++")

#: RLBackfilling (paper 004 section 4 and its reference code) -> the defaults used here.
PAPER_HYPERPARAMETERS: dict[str, Any] = {
    "trajectories": 100,  # trajectories of 256 jobs per update ("epoch")
    "length": 256,
    "learning_rate": 3e-4,  # policy (pi_lr)
    "value_lr": 1e-3,  # value network (vf_lr)
    "gamma": 1.0,
    "gae_lambda": 0.97,
    "clip_range": 0.2,
    "n_epochs": 80,  # train_pi_iters = train_v_iters = 80 full-batch steps
    "target_kl": 0.01,
}

LR_SCHEDULES: tuple[str, ...] = ("constant", "linear")  #: ``--lr-schedule`` choices
#: The fast preset's step target: no target in practice (``--time-limit`` ends the run).
NO_TARGET = 10**9

#: Named settings (``--preset``); options given explicitly override them. ``paper`` is the
#: plain defaults (the paper's values mapped onto SB3). ``fast`` is what fits a CPU budget
#: of tens of minutes on a 2-core machine (docs/training.md: the measured runs): fewer
#: trajectories per update, 4 minibatch passes instead of 80 full-batch ones, no KL stop,
#: a STOP logit that starts at -3 so the argmax of a young policy backfills, and an
#: evaluation on 30 non-overlapping windows of 256 jobs instead of 10 of 1,024.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "fast": {
        "n_envs": 64,  # 64 sims stepped as one compiled batch (train/vecenv.py)
        "vec_env": "native",
        "algo": "lean",  # compact rollouts + lean update (train/lean_ppo.py)
        "trajectories": 20,
        "n_epochs": 4,
        "batch_size": 256,
        "target_kl": None,
        "stop_init": -3.0,
        "time_limit": 30.0,
        "total_steps": NO_TARGET,
        "eval_windows": 30,
        "eval_length": 256,
    },
}

#: Options that may be changed when resuming a run; every other option is taken from the
#: run's config.json (giving it with another value is an error).
RESUME_OVERRIDABLE: frozenset[str] = frozenset(
    (
        "total_steps epochs time_limit eval_every checkpoint_every keep_checkpoints keep_spread "
        "device progress verbose torch_threads train_threads vec_env env_step algo logdir run_name"
    ).split()
)

#: Jobs per evaluation window when ``--eval-length`` is not given and the split is long
#: enough (the paper evaluates on 1024-job sequences).
DEFAULT_EVAL_LENGTH = 1024

#: Default length of a run when neither ``total_steps`` nor ``epochs`` is given.
DEFAULT_EPOCHS = 100

#: Keys of older ``config.json`` files -> the current field names.
LEGACY_KEYS: dict[str, str] = {"seq_len": "length", "normalizer": "reference"}

#: Keys of ``config.json`` that are not options (the resolved rollout plan, old keys).
NON_OPTION_KEYS: frozenset[str] = frozenset(
    {
        "resume",
        "n_steps_resolved",
        "batch_size_resolved",
        "rollout_size",
        "target_timesteps",
        "calibration",
    }
)

VEC_ENVS: tuple[str, ...] = ("auto", "dummy", "subproc", "native")
ALGOS: tuple[str, ...] = ("sb3", "lean")
VALUE_HEADS: tuple[str, ...] = ("flat", "pooled")
STOP_SCORES: tuple[str, ...] = ("learned", "fixed", "pooled")
ROW_CONTEXTS: tuple[str, ...] = ("none", "pooled")


class ConfigError(ValueError):
    """An option has a value the run cannot use; the message names the flag."""


def _opt(default: Any, group: str, help: str, **kw: Any) -> Any:
    meta = {"cli": Option(group, help, **kw)}
    if callable(default):
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


def _cpu_count() -> int:
    return os.cpu_count() or 1


@dataclass(frozen=True)
class TrainConfig:
    """Every option of a training run (the command line of ``train/ppo.py``).

    Build one with :meth:`create` (preset + overrides, like the command line) or directly;
    the values are checked on construction (:class:`ConfigError`).
    """

    # -- workload and env
    trace: str = _opt(
        "synthetic",
        "workload",
        "registered trace name (e.g. SDSC-SP2, Lublin-1; found through HPCGYM_TRACE_DIR or "
        "the cache) or an SWF path; 'synthetic' = the embedded Lublin workload, "
        "'synthetic:KEY=VALUE,...' a generated one (docs/workloads.md)",
    )
    task: str = _opt(
        "backfill",
        "workload",
        "the decision learned: backfill (hpcgym/Backfill-v0) or schedule (the queue order, "
        "hpcgym/Schedule-v0; EASY-SJBF backfills inside)",
        choices=tuple(TASKS),
    )
    policy: str = _opt(
        "FCFS",
        "workload",
        "base queue policy (--task schedule: the rows' order and the plain reference's "
        "policy; FCFS = the trace's reference heuristic)",
        parse=str.upper,
        choices=library_names("hpcgym.sim.engine", "POLICIES", sort=True),
        metavar="POLICY",
    )
    reference: str = _opt(
        "ENV+EASY-SJBF",
        "workload",
        "scheduler the terminal reward is relative to ('none' = raw -AVEbsld); a name is what "
        "'hpcgym simulate --scheduler NAME' runs, ENV+NAME plays NAME's backfilling with the "
        "env's own queue order and starvation rule (the default: SJF+EASY-SJBF under "
        "--policy SJF; Schedule-v0's deployable reference)",
        aliases=("--normalizer",),
    )
    mode: str = _opt(
        "guarded",
        "workload",
        "backfill candidates: guarded (only what EASY allows), penalized (every fitting job, "
        "reservation delays penalized), free",
        choices=library_names("hpcgym.envs.backfill_env", "MODES", sort=True),
    )
    length: int = _opt(
        256,
        "workload",
        "jobs per training window (episode; paper: 256)",
        parse=positive_int,
        aliases=("--seq-len",),
    )
    max_queue: int = _opt(128, "workload", "K, rows of the observation", parse=positive_int)
    estimator: str = _opt(
        "request", "workload", "runtime estimator the engine schedules with (request = the user's)"
    )
    correction: str = _opt(
        "incremental",
        "workload",
        "correction of the engine's under-estimates (ELOSS and EASY++ use incremental-offset)",
        choices=library_names("hpcgym.sim", "CORRECTIONS"),
    )
    feature_predictor: str | None = _opt(
        None,
        "workload",
        "online predictor of the observation's 'prediction' column (e.g. eloss, ave2, "
        "log-ridge:lam=10); none = no such column",
        parse=none_or_name,
        show_default=False,
    )
    features: str = _opt(
        "paper",
        "workload",
        "observation columns: paper (the 12 of RLBackfilling), extended (+ online time of "
        "day, load, queue, user-history columns: hpcgym.envs.features) or extended-log (the "
        "same, user history seeded from the trace's recorded schedule before the window)",
        choices=library_names("hpcgym.envs.backfill_env", "FEATURE_SETS"),
    )
    rows: str = _opt(
        "default",
        "workload",
        "--task schedule: the observation's rows, default (16 columns) or informed (24: + "
        "what a site knows, its accounting log and a runtime prediction; "
        "hpcgym.envs.informed_rows; the vector env then steps in Python)",
        choices=library_names("hpcgym.envs.informed_rows", "ROW_SETS"),
    )
    row_predictor: str | None = _opt(
        None,
        "workload",
        "--rows informed: predictor of the 'prediction' column (default: log-ridge warmed "
        "on the log of --row-history)",
        parse=none_or_name,
        show_default=False,
    )
    row_history: str | None = _opt(
        None,
        "workload",
        "--rows informed: the accounting log before the window, log (the whole trace before "
        "it; the default) or N jobs (0: none; a workload without a recorded schedule)",
        parse=row_history_value,
        show_default=False,
        metavar="N|log",
    )
    rank_estimator: str | None = _opt(
        None,
        "workload",
        "run time the queue order ranks by (predictor name, e.g. log-ridge); default: --estimator",
        parse=none_or_name,
        show_default=False,
    )
    time_scale: str = _opt(
        "linear",
        "workload",
        "how the observation's duration columns (wait, estimate, shadow, prediction) read "
        "seconds: linear (the paper's, x / scale) or log (ln(1 + x / 10 s) / ln(1 + scale / "
        "10 s): short jobs and long waits stay apart)",
        choices=library_names("hpcgym.envs.observation", "TIME_SCALES"),
    )
    reward_mode: str = _opt(
        "terminal",
        "workload",
        "when the reward is paid: terminal (at the episode's end) or dense (the same total, "
        "job by job as jobs start, relative to the same job under the reference)",
        choices=library_names("hpcgym.envs.reward", "REWARD_MODES"),
    )
    reward_scale: str = _opt(
        "linear",
        "workload",
        "how the window's AVEbsld ratio r to the reference becomes the reward: linear (1 - r) "
        "or log (-ln r: the return then follows the geometric-mean ratio the evaluation reports)",
        choices=library_names("hpcgym.envs.reward", "REWARD_SCALES"),
    )
    load_weighting: float = _opt(
        0.0,
        "workload",
        "draw training windows with probability ~ load ** P, load = the window's offered load "
        "(capped at the 99th percentile; 0 = uniform; hpcgym.workload.WindowSampler): "
        "more of the heavily loaded windows",
        parse=nonneg_float,
        metavar="P",
    )
    mix_traces: tuple[str, ...] = _opt(
        (),
        "workload",
        "comma-separated more traces for the training envs (a trace mix: sub-env i of "
        "--n-envs runs on trace number i mod k of --trace and these, each in its train split, "
        "all in --trace's observation units); evaluations, checkpoint choice and the card's "
        "scales stay on --trace; a generated workload synthetic:KEY=VALUE,... counts as one",
        parse=trace_list,
        metavar="T1,T2",
        show_default=False,
    )
    init_from: str | None = _opt(
        None,
        "hyper",
        "start from the policy weights of this MaskablePPO .zip (e.g. a behaviour-cloned "
        "model of python -m research.imitation; same observation shape and policy options)",
        parse=none_or_name,
        show_default=False,
    )
    train_fraction: float = _opt(
        0.7, "workload", "share of the jobs in the training split (time split)", parse=fraction
    )
    validation_fraction: float = _opt(
        VALIDATION_FRACTION,
        "workload",
        "share of the training split held back as the validation split (evaluation during "
        "training, best model; eval/select_checkpoint.py); the test split does not change",
        parse=fraction,
    )
    lenient: bool = _opt(
        False,
        "workload",
        "skip (and count) malformed lines of an SWF trace instead of stopping at the first",
        show_default=False,
    )
    #: the split of the training-time evaluation, best-model selection and early stopping:
    #: never ``test`` -- test windows are for ``eval/`` only
    eval_split: str = field(default="validation")

    # -- training length and parallelism
    total_steps: int | None = _opt(
        None,
        "length",
        "environment steps (decisions) to train for, rounded up to whole updates (0 with "
        "init_from or row_prior: evaluate and keep that initial policy as a run)",
        parse=nonneg_int,
        exclusive="length",
    )
    epochs: int | None = _opt(
        None,
        "length",
        f"PPO updates ('epochs' in the paper) to train for ({DEFAULT_EPOCHS} when neither "
        "--epochs nor --total-steps is given)",
        parse=positive_int,
        exclusive="length",
        show_default=False,
    )
    preset: str = _opt(
        "paper",
        "length",
        "paper (the paper's hyperparameters, hours of CPU) or fast (fits a 30-minute budget "
        "on 2 cores: "
        + ", ".join(f"{k}={v}" for k, v in PRESETS["fast"].items() if k != "total_steps")
        + "); explicit options override the preset",
        choices=tuple(PRESETS),
    )
    time_limit: float | None = _opt(
        None,
        "length",
        "stop training within seconds after this many minutes of wall time; the run then "
        "finishes normally (final evaluation, final model, summary)",
        parse=positive_float,
        metavar="MINUTES",
    )
    n_envs: int = _opt(_cpu_count, "length", "parallel training envs", parse=positive_int)
    vec_env: str = _opt(
        "auto",
        "length",
        "auto: SubprocVecEnv for n-envs > 1, DummyVecEnv for 1; native: all envs in one "
        "batched BackfillVectorEnv (train/vecenv.py, the fastest on few cores)",
        choices=VEC_ENVS,
    )
    env_step: str = _opt(
        "compiled",
        "length",
        "--vec-env native: compiled (one compiled call steps every env, where the env's "
        "configuration allows) or python (one Python step per env: the same episodes)",
        choices=("compiled", "python"),
    )
    algo: str = _opt(
        "sb3",
        "length",
        "PPO implementation: sb3 (sb3-contrib's MaskablePPO) or lean (the same loss and "
        "gradients on rollouts of the valid rows only, ~2x faster; saves the same "
        "MaskablePPO zip; a run resumes with either)",
        choices=ALGOS,
    )
    torch_threads: int = _opt(
        1,
        "length",
        "torch threads while collecting rollouts (1: faster, see docs)",
        parse=positive_int,
    )
    train_threads: int | None = _opt(
        None,
        "length",
        "torch threads during the PPO update (default: --torch-threads)",
        parse=positive_int,
        show_default=False,
    )
    seed: int = _opt(0, "length", "seed of everything", parse=int)
    device: str = _opt("cpu", "length", "torch device (cpu, cuda, cuda:1, mps, auto)")

    # -- hyperparameters
    trajectories: int = _opt(
        100,
        "hyper",
        "trajectories per update, sizes the rollout with --n-steps auto",
        parse=positive_int,
    )
    n_steps: int | str = _opt(
        "auto",
        "hyper",
        "steps per env per update: 'auto' = ceil(trajectories x measured steps per "
        "trajectory / n-envs), or an integer",
        parse=auto_or_int,
    )
    calib_windows: int = _opt(
        32,
        "hyper",
        "training windows played to measure the steps per trajectory",
        parse=positive_int,
    )
    batch_size: int | str = _opt(
        "full",
        "hyper",
        "minibatch size: 'full' = the whole rollout (the paper's code)",
        parse=full_or_int,
    )
    n_epochs: int = _opt(80, "hyper", "passes over the rollout per update", parse=positive_int)
    learning_rate: float = _opt(3e-4, "hyper", "policy learning rate", parse=positive_float)
    value_lr: float = _opt(1e-3, "hyper", "value-network learning rate", parse=positive_float)
    lr_schedule: str = _opt(
        "constant",
        "hyper",
        "learning rates over the run: constant, or linear (policy and value rates fall "
        "linearly to 0 at the run's target, --total-steps or --epochs; SB3's "
        "LinearSchedule): a late policy that moves less between checkpoints",
        choices=LR_SCHEDULES,
    )
    gamma: float = _opt(1.0, "hyper", "discount", parse=unit_float)
    gae_lambda: float = _opt(0.97, "hyper", "GAE lambda", parse=unit_float)
    clip_range: float = _opt(0.2, "hyper", "PPO clip range", parse=positive_float)
    target_kl: float | None = _opt(
        0.01, "hyper", "stop an update at KL > 1.5 x target ('none' = off)", parse=none_or_float
    )
    ent_coef: float = _opt(0.0, "hyper", "entropy coefficient", parse=nonneg_float)
    vf_coef: float = _opt(0.5, "hyper", "value-loss coefficient", parse=positive_float)
    max_grad_norm: float | None = _opt(
        None,
        "hyper",
        "gradient clipping: 'none' (the paper's code) or a max norm",
        parse=none_or_float,
    )
    value_head: str = _opt(
        "flat", "hyper", "KernelPolicy critic: flat (the paper's) or pooled", choices=VALUE_HEADS
    )
    stop_score: str = _opt("learned", "hyper", "KernelPolicy STOP logit", choices=STOP_SCORES)
    row_context: str = _opt(
        "none",
        "hyper",
        "KernelPolicy row scores: none (each row alone, the paper's) or pooled (each row "
        "with the mean and max of all candidates' kernel features)",
        choices=ROW_CONTEXTS,
    )
    stop_init: float = _opt(
        0.0,
        "hyper",
        "initial STOP logit of KernelPolicy (e.g. -3 starts from a policy that prefers "
        "backfilling to waiting, see docs/training.md)",
        parse=float,
    )
    kernel_arch: tuple[int, ...] = _opt(
        (32, 16, 8), "hyper", "kernel network hidden widths (the paper's)", parse=layer_widths
    )
    row_prior: str | None = _opt(
        None,
        "hyper",
        "KernelPolicy score prior COLUMN=WEIGHT[,COLUMN=WEIGHT...]: every row's score "
        "gets WEIGHT x the observation column (learned weights; negative = small values "
        "preferred), so training starts at that heuristic, e.g. estimate=-50 starts at "
        "EASY-SJBF's shortest-first order (docs/training.md); none = no prior (the paper's)",
        parse=name_weights,
        show_default=False,
    )
    anchor_kl: float = _opt(
        0.0,
        "hyper",
        "KL penalty to the policy training started from (--row-prior, --init-from), "
        "x KL(policy || start) in the loss; 0 = none (--algo lean only; docs/training.md)",
        parse=nonneg_float,
    )

    # -- evaluation, logging, checkpoints
    eval_every: int = _opt(
        5,
        "eval",
        "updates between evaluations (0 = only at the start and the end)",
        parse=nonneg_int,
    )
    eval_windows: int = _opt(10, "eval", "evaluation windows", parse=positive_int)
    eval_length: int | None = _opt(
        None,
        "eval",
        f"jobs per evaluation window (default {DEFAULT_EVAL_LENGTH}, the paper's; "
        "--preset fast: 256; cut to half a too short evaluation split)",
        parse=positive_int,
        show_default=False,
    )
    eval_seed: int | None = _opt(
        None,
        "eval",
        "draw the evaluation windows with this seed (default: evenly spaced, no randomness)",
        parse=int,
        show_default=False,
    )
    baselines: tuple[str, ...] = _opt(
        DEFAULT_BASELINES,
        "eval",
        "comma-separated schedulers evaluated on the same windows; '' for none (NONE is "
        "the no-backfilling scheduler)",
        parse=names,
    )
    checkpoint_every: int = _opt(
        5, "eval", "updates between checkpoints (0 = only at the end)", parse=nonneg_int
    )
    keep_checkpoints: int = _opt(
        3,
        "eval",
        "checkpoints kept: the newest N (0 = all); the best model is best_model.zip",
        parse=nonneg_int,
        metavar="N",
    )
    keep_spread: bool = _opt(
        False,
        "eval",
        "keep the --keep-checkpoints checkpoints spread over the whole run (the oldest, "
        "the newest and, between, the most evenly spaced) instead of the newest N: "
        "candidates for eval/select_checkpoint.py from every stage of training",
        show_default=False,
    )
    logdir: str = _opt("runs", "eval", "parent folder of the runs")
    run_name: str | None = _opt(
        None,
        "eval",
        "run folder name (default <trace>_<policy>_<mode>_s<seed>_<date-time>)",
        show_default=False,
    )
    progress: bool = _opt(True, "eval", "no progress bar", flag="--no-progress", show_default=False)
    verbose: bool = _opt(False, "eval", "print SB3's log tables", show_default=False)

    def __post_init__(self) -> None:
        for name in _TUPLES:
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        problems = self.problems()
        if problems:
            raise ConfigError("; ".join(problems))

    # ------------------------------------------------------------------ validation
    def problems(self) -> list[str]:
        """Every invalid value, as ``--flag: expected ..., got ...`` messages.

        A value is checked by its option's own command-line parser (:attr:`Option.parse`)
        applied to its text, so the command line and Python accept the same values.
        """
        out: list[str] = []
        for name, f in _fields().items():
            opt: Option | None = f.metadata.get("cli")
            value = getattr(self, name)
            if opt is None or (value is None and f.default is None):
                continue
            if opt.parse is not None:
                problem = _parse_problem(opt.parse, value)
                if problem is not None:
                    out.append(f"{flag(name)}: {problem}")
                    continue
            choices = opt.choice_list()
            if choices is not None and value not in choices:
                out.append(f"{flag(name)}: expected one of {', '.join(choices)}, got {value!r}")
        if self.batch_size == 1:
            out.append("--batch-size must be > 1 (advantage normalization needs 2 samples)")
        if self.total_steps is not None and self.epochs is not None:
            out.append("--total-steps and --epochs exclude each other: give one")
        if self.total_steps == 0 and self.init_from is None and self.row_prior is None:
            out.append(
                "--total-steps 0 trains nothing: it only makes sense with --init-from or "
                "--row-prior (to evaluate and keep that initial policy as a run)"
            )
        if self.anchor_kl and self.algo != "lean":
            out.append("--anchor-kl needs --algo lean (the sb3 update has no anchor term)")
        if self.total_steps == 0 and self.lr_schedule == "linear":
            out.append(
                "--lr-schedule linear needs a run of at least one update, not --total-steps 0"
            )
        if (
            self.lr_schedule == "linear"
            and self.epochs is None
            and (self.total_steps or 0) >= NO_TARGET
        ):
            out.append(
                "--lr-schedule linear falls to 0 at the run's target: give --total-steps "
                f"(below {NO_TARGET:.0e}) or --epochs (a --time-limit alone has no step "
                "count to anneal over)"
            )
        out.extend(device_problems(self.device))
        out.extend(task_problems(self))
        out.extend(baseline_problems(self.baselines))
        if self.mix_traces and self.n_envs < 1 + len(self.mix_traces):
            out.append(
                f"--mix-traces: {1 + len(self.mix_traces)} training traces need --n-envs >= "
                f"{1 + len(self.mix_traces)} (one sub-env per trace at least), got {self.n_envs}"
            )
        from hpcgym.workload import SPLITS

        if self.eval_split in ("test", "all"):
            out.append(
                f"eval_split {self.eval_split!r}: training never evaluates on the test split "
                "(choosing the best model on it makes every test figure optimistic); use "
                "'validation' and evaluate test windows with eval/ after training"
            )
        elif self.eval_split not in SPLITS:
            out.append(f"eval_split: expected one of {', '.join(SPLITS)}, got {self.eval_split!r}")
        if self.run_name is not None and (
            not self.run_name or "/" in self.run_name or self.run_name in (".", "..")
        ):
            out.append(f"--run-name must be a plain folder name, got {self.run_name!r}")
        return out

    # ------------------------------------------------------------------ building
    @classmethod
    def create(cls, preset: str = "paper", **options: Any) -> TrainConfig:
        """A config as the command line builds it: the defaults, then ``preset``, then the
        explicitly given ``options`` (which win over the preset).

        ``--epochs`` given explicitly replaces a preset's ``total_steps``; with neither
        length, the run is :data:`DEFAULT_EPOCHS` updates long.

        :param preset: a name of :data:`PRESETS`
        :param options: field values (the options given explicitly)
        :raises ConfigError: an unknown preset or option, or an invalid value
        """
        if preset not in PRESETS:
            raise ConfigError(f"--preset: expected one of {', '.join(PRESETS)}, got {preset!r}")
        unknown = sorted(set(options) - set(_fields()))
        if unknown:
            raise ConfigError(f"unknown options: {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key, value in PRESETS[preset].items():
            if key == "total_steps" and "epochs" in options:
                continue  # --epochs sets the length instead
            values[key] = value
        values.update(options)
        if values.get("total_steps") is None and values.get("epochs") is None:
            values["epochs"] = DEFAULT_EPOCHS
        return cls(preset=preset, **values)

    def for_resume(self, explicit: Mapping[str, Any]) -> TrainConfig:
        """This (saved) config with the options given again when resuming.

        :param explicit: the options given on the resuming command line
        :raises ConfigError: an option outside :data:`RESUME_OVERRIDABLE` has another value
        """
        conflicts = []
        changes: dict[str, Any] = {}
        for key, value in explicit.items():
            if key in RESUME_OVERRIDABLE:
                changes[key] = value
            elif _normalized(key, value) != getattr(self, key):
                conflicts.append(f"{flag(key)} ({value!r}; the run has {getattr(self, key)!r})")
        if conflicts:
            raise ConfigError(
                "cannot change these options when resuming (they are fixed by the run's "
                f"config.json): {', '.join(conflicts)}. Start a new run (--run-name) instead."
            )
        if "total_steps" in explicit:
            changes["epochs"] = None
        elif "epochs" in explicit:
            changes["total_steps"] = None
        return dataclasses.replace(self, **changes)

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` (validated)."""
        return dataclasses.replace(self, **changes)

    @property
    def rollout_threads(self) -> int:
        """Torch threads while collecting rollouts and evaluating."""
        return self.torch_threads

    @property
    def update_threads(self) -> int:
        """Torch threads during the PPO update."""
        return self.train_threads or self.torch_threads

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """The options as JSON values (tuples as lists)."""
        out = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """The config of a ``config.json`` dict (also older runs' keys, see
        :data:`LEGACY_KEYS`; the resolved rollout keys are ignored).

        :param data: the parsed ``config.json``
        :raises ConfigError: unknown keys or invalid values
        """
        values: dict[str, Any] = {}
        for key, value in data.items():
            key = LEGACY_KEYS.get(key, key)
            if key not in NON_OPTION_KEYS:
                values[key] = value
        unknown = sorted(set(values) - set(_fields()))
        if unknown:
            raise ConfigError(f"unknown keys in the run's config: {', '.join(unknown)}")
        if values.get("eval_split") == "test":
            raise ConfigError(
                "the run's config has eval_split 'test': it predates the validation split "
                "(its evaluations and best model used test windows) and cannot be continued; "
                "start a new run"
            )
        return cls(**values)

    def to_json(self, path: str | os.PathLike[str], extra: Mapping[str, Any] | None = None) -> None:
        """Write the options to ``path`` as JSON, atomically.

        :param path: the file (a run's ``config.json``)
        :param extra: more keys to write next to the options (the resolved rollout)
        """
        p = Path(path)
        tmp = p.with_suffix(p.suffix + ".tmp")
        text = json.dumps({**self.to_dict(), **(extra or {})}, indent=2) + "\n"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(p)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> TrainConfig:
        """Read a ``config.json`` written by :meth:`to_json` (or by an older version).

        :param path: the file
        :raises ConfigError: not a JSON object, unknown keys, invalid values
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        return cls.from_dict(data)


def _fields() -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(TrainConfig)}


def flag(name: str) -> str:
    """The command-line flag of a :class:`TrainConfig` field.

    :param name: the field's name
    """
    f = _fields().get(name)
    opt = f.metadata.get("cli") if f is not None else None
    return opt.flag_of(name) if opt is not None else name


def _parse_problem(parse: Callable[[str], Any], value: Any) -> str | None:
    """Why ``value`` is not what ``parse`` returns for its text (``None``: it is)."""
    import argparse

    text = ",".join(str(v) for v in value) if isinstance(value, tuple) else str(value)
    try:
        parsed = parse(text)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        return (
            str(exc) if isinstance(exc, argparse.ArgumentTypeError) else f"invalid value {value!r}"
        )
    if isinstance(value, bool) or parsed != value or type(parsed) is not type(value):
        if not (isinstance(parsed, float) and type(value) is int and parsed == value):
            return f"expected a value like {parsed!r}, got {value!r}"
    return None


#: Options held as tuples (lists given in Python are converted).
_TUPLES = ("kernel_arch", "baselines", "mix_traces")


def _normalized(name: str, value: Any) -> Any:
    return tuple(value) if name in _TUPLES else value
