"""Building what a run trains: env arguments, the rollout size, the vector env and the model.

* :func:`env_kwargs` -- a :class:`TrainConfig` as :class:`~hpcgym.envs.backfill_env.BackfillEnv`
  arguments;
* :func:`measure_steps_per_trajectory` and :func:`plan_rollout` -- the rollout size of
  ``--n-steps auto`` (:class:`RolloutPlan`, written to ``config.json``);
* :func:`make_training_envs`, :func:`new_model`, :func:`load_checkpoint`.
"""

from __future__ import annotations

import functools
import math
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.workload import trace_spec
from train.config import ConfigError, TrainConfig
from train.tasks import env_class, task_env_kwargs

__all__ = [
    "ANCHOR_FILE",
    "RolloutPlan",
    "attach_anchor",
    "env_kwargs",
    "load_checkpoint",
    "make_training_envs",
    "measure_steps_per_trajectory",
    "new_model",
    "plan_rollout",
    "policy_kwargs",
]

#: Env reseeding stride per update on resume (a resumed run is reproducible too).
_RESEED_STRIDE = 7919


def _monitored(kwargs: dict[str, Any], seed: int, task: str = "backfill") -> Any:
    """One ``Monitor``-wrapped training env (what ``make_vec_env`` builds per rank)."""
    from stable_baselines3.common.monitor import Monitor

    env = env_class(task)(**kwargs)
    env.action_space.seed(seed)
    return Monitor(env)


def env_kwargs(cfg: TrainConfig, split: str, length: int) -> dict[str, Any]:
    """Constructor arguments of the run's env: :class:`~hpcgym.envs.backfill_env.BackfillEnv`
    (``--task backfill``) or :class:`~hpcgym.envs.schedule_env.ScheduleEnv` (``--task
    schedule``; :func:`train.tasks.task_env_kwargs`).

    :param cfg: the run's options
    :param split: ``train``, ``test``...
    :param length: jobs per window
    """
    trace = trace_spec(cfg.trace)
    reference = cfg.reference
    weighted = split == "train" and cfg.load_weighting > 0
    return task_env_kwargs(cfg, {
        "trace": trace,
        "policy": cfg.policy,
        "estimator": cfg.estimator,
        "correction": cfg.correction,
        "feature_predictor": cfg.feature_predictor,
        "features": cfg.features,
        "time_scale": cfg.time_scale,
        "reward_mode": cfg.reward_mode,
        "reward_scale": cfg.reward_scale,
        "window_length": int(length),
        "split": split,
        "train_fraction": float(cfg.train_fraction),
        "validation_fraction": float(cfg.validation_fraction),
        "mode": cfg.mode,
        "reference": None if str(reference).lower() == "none" else reference,
        "max_queue": int(cfg.max_queue),
        # training windows only: evaluations play fixed windows
        **({"load_weighting": cfg.load_weighting} if weighted else {}),
        **({"trace_kwargs": {"lenient": True}} if cfg.lenient and trace is not None else {}),
    })  # fmt: skip


def measure_steps_per_trajectory(
    kwargs: dict[str, Any], n_windows: int, seed: int, task: str = "backfill"
) -> dict[str, float]:
    """Mean env steps of one training episode under the uniform random valid policy.

    The freshly initialised kernel policy is (nearly) uniform over the valid actions,
    STOP included, so this is the episode length of the first updates. Window ``i`` is the
    one the env draws on ``reset(seed=s_i)`` (``s_i`` from a generator seeded with
    ``seed``, as training episodes are drawn); it is played by
    :func:`hpcgym.evaluation.play.play_window`.

    :param kwargs: env arguments (:func:`env_kwargs` of the training split)
    :param n_windows: windows to play
    :param seed: seed of the window draw and of the random agent
    :param task: ``backfill`` or ``schedule`` (:data:`train.tasks.TASKS`)
    :return: ``mean``, ``std``, ``min``, ``max`` steps, ``windows``, ``seconds``
    """
    from hpcgym.evaluation.play import play_window
    from hpcgym_agents.heuristic import RandomValid

    t0 = time.perf_counter()
    env = env_class(task)(**kwargs)
    agent = RandomValid(seed=seed, include_stop=True)
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(n_windows):
        reset_seed = int(rng.integers(2**31))
        _obs, info = env.reset(seed=reset_seed)  # the env draws the window
        steps.append(play_window(env, agent, int(info["start"]), seed=reset_seed)["steps"])
    arr = np.asarray(steps, dtype=np.float64)
    return {
        "mean": float(arr.mean()),
        "std": float(arr.std()),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "windows": int(n_windows),
        "seconds": time.perf_counter() - t0,
    }


@dataclass(frozen=True)
class RolloutPlan:
    """The resolved size of a run's updates (written to ``config.json``).

    :param n_steps: steps per env per update
    :param batch_size: minibatch size
    :param rollout_size: ``n_steps * n_envs``, environment steps per update
    :param target_timesteps: the step count at which training ends
    :param calibration: the measured steps per trajectory (``--n-steps auto``), or ``None``
    """

    n_steps: int
    batch_size: int
    rollout_size: int
    target_timesteps: int
    calibration: dict[str, float] | None = None

    def to_config(self) -> dict[str, Any]:
        """The keys of ``config.json`` (next to the options)."""
        return {
            "n_steps_resolved": self.n_steps,
            "batch_size_resolved": self.batch_size,
            "rollout_size": self.rollout_size,
            "calibration": self.calibration,
            "target_timesteps": self.target_timesteps,
        }


def plan_rollout(cfg: TrainConfig, saved: Mapping[str, Any] | None = None) -> RolloutPlan:
    """Size the updates: ``n_steps`` (measured for ``auto``, or the saved value of a
    resumed run), the minibatch and the target step count.

    :param cfg: the run's options
    :param saved: a resumed run's ``config.json`` (its ``n_steps_resolved`` is kept)
    :raises ConfigError: the minibatch does not fit the rollout
    """
    calib = saved.get("calibration") if saved else None
    if saved is not None:
        n_steps = int(saved["n_steps_resolved"])
    elif cfg.n_steps == "auto":
        kw = env_kwargs(cfg, "train", cfg.length)
        calib = measure_steps_per_trajectory(kw, cfg.calib_windows, cfg.seed, cfg.task)
        n_steps = max(1, math.ceil(cfg.trajectories * calib["mean"] / cfg.n_envs))
    else:
        n_steps = int(cfg.n_steps)
    rollout_size = n_steps * cfg.n_envs
    batch_size = rollout_size if cfg.batch_size == "full" else int(cfg.batch_size)
    if batch_size > rollout_size:
        per = f" ({calib['mean']:.1f} decisions per window)" if calib else ""
        raise ConfigError(
            f"--batch-size {batch_size} exceeds the rollout size {rollout_size} "
            f"({n_steps} steps x {cfg.n_envs} envs{per}): raise --trajectories or --n-steps, "
            "or lower --batch-size"
        )
    if batch_size == 1:
        raise ConfigError("--batch-size must be > 1 (advantage normalization needs 2 samples)")
    if cfg.total_steps is not None:
        target = int(cfg.total_steps)
    else:
        target = int(cfg.epochs or 0) * rollout_size
    return RolloutPlan(n_steps, batch_size, rollout_size, target, calib)


def make_training_envs(
    cfg: TrainConfig, seed: int, extra_env: Mapping[str, Any] | None = None
) -> Any:
    """The ``cfg.n_envs`` training envs as an SB3 vector env (``--vec-env``; ``native``:
    :class:`train.vecenv.NativeVecEnv`, same episodes as ``dummy``, one batched step).

    :param cfg: the run's options
    :param seed: seed of the first env (SB3 adds the env index)
    :param extra_env: more :class:`~hpcgym.envs.backfill_env.BackfillEnv` arguments,
        over :func:`env_kwargs` (Python callers such as ``research/imitation/imitate.py``)
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    kw = {**env_kwargs(cfg, "train", cfg.length), **(extra_env or {})}
    if cfg.mix_traces:  # a trace mix: sub-env i on trace i mod k (hpcgym.envs.vector)
        kw["trace"] = [kw["trace"], *(trace_spec(t) for t in cfg.mix_traces)]

    # -- speed helper: --vec-env native, N sims stepped as one batch
    if cfg.vec_env == "native":
        from train.vecenv import NativeVecEnv

        native = NativeVecEnv(
            cfg.n_envs, task=cfg.task, compiled=False if cfg.env_step == "python" else None, **kw
        )
        native.seed(seed)
        return native
    # -- end speed helper
    subproc = cfg.vec_env == "subproc" or (cfg.vec_env == "auto" and cfg.n_envs > 1)
    from hpcgym.envs.vector import trace_mix

    # what make_vec_env builds (Monitor, action space seeded seed + rank, vec seeded), with
    # one env keyword set per rank so that a trace mix works with every vec env kind
    per_trace = trace_mix(kw, env_class(cfg.task))
    fns = [
        functools.partial(_monitored, per_trace[i % len(per_trace)], seed + i, cfg.task)
        for i in range(cfg.n_envs)
    ]
    venv = (SubprocVecEnv if subproc else DummyVecEnv)(fns)
    venv.seed(seed)
    return venv


def learning_rate(cfg: TrainConfig) -> Any:
    """The policy learning rate SB3 is given: ``cfg.learning_rate``, or with
    ``--lr-schedule linear`` SB3's :class:`~stable_baselines3.common.utils.LinearSchedule`
    from it to 0 over the run's progress (``1 - steps / target``, so a resumed run goes on
    where it stopped). The value network's rate is a fixed multiple of it
    (``value_lr_ratio``), so it falls with it.

    :param cfg: the run's options
    """
    if cfg.lr_schedule == "constant":
        return cfg.learning_rate
    from stable_baselines3.common.utils import LinearSchedule

    return LinearSchedule(cfg.learning_rate, 0.0, 1.0)


def row_prior(cfg: TrainConfig) -> tuple[tuple[int, float], ...] | None:
    """``--row-prior NAME=WEIGHT[,...]`` as KernelPolicy's ``row_prior``, ``(column,
    weight)`` pairs: the columns of those names in the run's observation (``None``
    without the option).

    :param cfg: the run's options
    :raises ConfigError: a name is not an observation column of the run (the valid names
        depend on ``--features`` and ``--feature-predictor``; for ``--task schedule`` on
        ``--rows``)
    """
    if cfg.row_prior is None:
        return None
    from hpcgym.tasks import get_task

    task = get_task(cfg.task)
    config = vars(cfg)
    names = task.column_names(config)  # they depend on the task's options of the run
    given = [k for k in task.options if config.get(k) is not None]
    which = " ".join(f"--{k.replace('_', '-')} {config[k]}" for k in ["task", *given])
    pairs = []
    for part in cfg.row_prior.split(","):
        name, _, weight = part.partition("=")
        if name not in names[1:]:
            raise ConfigError(
                f"--row-prior: {name!r} is not an observation column of this run ({which}); "
                f"expected one of {', '.join(names[1:])}"
            )
        pairs.append((names.index(name), float(weight)))
    return tuple(pairs)


def policy_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """The :class:`~hpcgym_agents.kernel_policy.KernelPolicy` options of the run (its
    network: ``--kernel-arch``, ``--value-head``, ``--stop-score``, ``--stop-init``,
    ``--row-context``, ``--row-prior``).

    :param cfg: the run's options
    :raises ConfigError: a ``--row-prior`` name that is not an observation column
    """
    return {
        "kernel_arch": list(cfg.kernel_arch),
        "value_head": cfg.value_head,
        "stop_score": cfg.stop_score,
        "stop_init": float(cfg.stop_init or 0.0),
        "row_context": cfg.row_context,
        "row_prior": row_prior(cfg),
        "value_lr_ratio": cfg.value_lr / cfg.learning_rate,
    }


def new_model(
    cfg: TrainConfig, plan: RolloutPlan, extra_env: Mapping[str, Any] | None = None
) -> Any:
    """A fresh ``MaskablePPO`` (``--algo sb3``) or :class:`train.lean_ppo.LeanMaskablePPO`
    (``--algo lean``) with :class:`~hpcgym_agents.kernel_policy.KernelPolicy` on
    new training envs (seeded with ``cfg.seed``), with the rollout buffer of
    :mod:`train.stopping` (its minibatches stop at the time limit).

    :param cfg: the run's options (hyperparameters, kernel network)
    :param plan: the rollout size
    """
    from hpcgym_agents.kernel_policy import KernelPolicy
    from train.lean_ppo import algo_class
    from train.stopping import buffer_class_for

    env = make_training_envs(cfg, cfg.seed, extra_env)
    # --algo lean: LeanMaskablePPO (compact rollouts, lean update; ignores the buffer class)
    lean = {"anchor_kl": cfg.anchor_kl} if cfg.algo == "lean" else {}
    model = algo_class(cfg.algo)(
        KernelPolicy,
        env,
        learning_rate=learning_rate(cfg),
        n_steps=plan.n_steps,
        batch_size=plan.batch_size,
        n_epochs=cfg.n_epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=math.inf if cfg.max_grad_norm is None else cfg.max_grad_norm,
        target_kl=cfg.target_kl,
        policy_kwargs=policy_kwargs(cfg),
        seed=cfg.seed,
        device=cfg.device,
        verbose=0,
        rollout_buffer_class=buffer_class_for(env.observation_space),
        **lean,
    )
    if cfg.init_from is not None:
        init_policy_from(model, cfg.init_from)
    return model


#: The anchor of ``--anchor-kl`` in a run folder: the policy weights the run started from.
ANCHOR_FILE = "anchor.pt"


def attach_anchor(model: Any, cfg: TrainConfig, run_path: Path, fresh: bool) -> None:
    """Give a ``--anchor-kl`` run's model its anchor: a new run freezes its starting policy
    (after ``--init-from``) and writes it to ``run_path / anchor.pt``; a resumed run reads
    it back, so the anchor stays the start of the run, not the checkpoint. Nothing
    without ``--anchor-kl``.

    :param model: the run's :class:`train.lean_ppo.LeanMaskablePPO`
    :param cfg: the run's options
    :param run_path: the run folder
    :param fresh: a new run (``False``: resumed from a checkpoint)
    :raises ConfigError: a resumed run's ``anchor.pt`` is missing or does not fit
    """
    import torch as th

    if not cfg.anchor_kl:
        return
    model.anchor_kl = float(cfg.anchor_kl)
    path = run_path / ANCHOR_FILE
    if fresh:
        model.set_anchor()
        th.save(model.anchor_policy.state_dict(), path)
        return
    try:
        state = th.load(path, map_location=model.device, weights_only=True)
        model.set_anchor(state)
    except FileNotFoundError:
        raise ConfigError(
            f"--anchor-kl: the run's starting policy {path} is missing, so the resumed run "
            "has no anchor (start a new run)"
        ) from None
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"--anchor-kl: cannot load {path}: {exc}") from None


def init_policy_from(model: Any, path: str) -> None:
    """Copy the policy weights (kernel network, STOP score, value head) of the MaskablePPO
    ``.zip`` at ``path`` into ``model`` (``--init-from``, e.g. a behaviour-cloned start).

    :param model: the new model
    :param path: a ``.zip`` saved by MaskablePPO (or research/imitation/imitate.py)
    :raises ConfigError: the file does not load, or its observation space or network
        differs from the run's
    """
    from sb3_contrib import MaskablePPO

    try:
        src = MaskablePPO.load(path, device=model.device)
    except (OSError, ValueError, KeyError, RuntimeError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"--init-from: cannot load {path}: {exc}") from None
    want, got = model.observation_space.shape, src.observation_space.shape
    if want != got:
        raise ConfigError(
            f"--init-from: {path} observes {got} (max_queue, features), the run's env gives "
            f"{want}: use the same --max-queue, --features and --feature-predictor"
        )
    try:
        model.policy.load_state_dict(src.policy.state_dict())
    except RuntimeError as exc:
        raise ConfigError(
            f"--init-from: {path} has another network than the run's (--kernel-arch, "
            f"--value-head, --stop-score, --row-context, --row-prior): {str(exc).splitlines()[0]}"
        ) from None


def load_checkpoint(cfg: TrainConfig, plan: RolloutPlan, checkpoint: Path) -> Any:
    """A checkpoint of the run, on new training envs, ready to continue.

    The envs and the model's random generators are seeded from ``cfg.seed`` and the
    number of updates done, so a resumed run is reproducible.

    :param cfg: the run's options
    :param plan: the run's rollout size and target
    :param checkpoint: the ``.zip`` to continue from

    :raises ConfigError: the checkpoint's rollout size differs from the run's, or the run
        already reached its target
    """
    from train.lean_ppo import algo_class
    from train.rundir import checkpoint_steps
    from train.stopping import buffer_class_for

    updates_done = (checkpoint_steps(checkpoint) or 0) // plan.rollout_size
    vec = make_training_envs(cfg, cfg.seed + _RESEED_STRIDE * (updates_done + 1))
    try:
        model = algo_class(cfg.algo).load(
            checkpoint,
            env=vec,
            device=cfg.device,
            rollout_buffer_class=buffer_class_for(vec.observation_space),
        )
    except (OSError, ValueError, KeyError, RuntimeError, zipfile.BadZipFile) as exc:
        vec.close()
        raise ConfigError(f"--resume: cannot load the checkpoint {checkpoint}: {exc}") from None
    start = int(model.num_timesteps)
    try:
        if model.n_steps * model.n_envs != plan.rollout_size:
            raise ConfigError(
                f"checkpoint {checkpoint} was trained with {model.n_steps} x {model.n_envs} "
                f"steps per update, the run's config says {plan.rollout_size}"
            )
        if start >= plan.target_timesteps:
            raise ConfigError(
                f"the run is already at {start} steps (target {plan.target_timesteps}): pass "
                "a larger --total-steps or --epochs to continue it"
            )
    except ConfigError:
        vec.close()
        raise
    model.set_random_seed(cfg.seed + _RESEED_STRIDE * (start // plan.rollout_size + 1))
    return model
