"""Train the RLBackfilling kernel policy with sb3-contrib's MaskablePPO on hpcgym.

Usage (after ``pip install -e ".[train]"``, from a checkout)::

    python train/ppo.py --trace SDSC-SP2          # real trace (HPCGYM_TRACE_DIR or cache)
    python train/ppo.py                           # embedded synthetic workload, offline
    python train/ppo.py --resume runs/<run-name>  # continue a killed / finished run
    tensorboard --logdir runs/

Everything of a run goes to ``<logdir>/<run-name>/``: TensorBoard events, ``config.json``,
``checkpoints/``, ``best_model.zip`` (+ ``best_model.json``), ``final_model.zip``,
``evaluations.jsonl``, ``progress*.csv`` and ``summary.json``. See ``docs/training.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from hpcgym.argtypes import (  # noqa: E402
    nonneg_float,
    nonneg_int,
    positive_float,
    positive_int,
    unit_float,
)

__all__ = [
    "PAPER_HYPERPARAMETERS",
    "build_parser",
    "eval_window_starts",
    "main",
    "measure_steps_per_trajectory",
]

log = logging.getLogger("hpcgym.train")

#: Named schedulers evaluated next to the agent on the test windows.
DEFAULT_BASELINES: tuple[str, ...] = ("EASY", "EASY-AR", "EASY-SJBF", "SAF", "EASY++")

#: RLBackfilling (paper 004 section 4 and its reference code) -> the defaults used here.
PAPER_HYPERPARAMETERS: dict[str, Any] = {
    "trajectories": 100,  # trajectories of 256 jobs per update ("epoch")
    "seq_len": 256,
    "learning_rate": 3e-4,  # policy (pi_lr)
    "value_lr": 1e-3,  # value network (vf_lr)
    "gamma": 1.0,
    "gae_lambda": 0.97,
    "clip_range": 0.2,
    "n_epochs": 80,  # train_pi_iters = train_v_iters = 80 full-batch steps
    "target_kl": 0.01,
}

#: Named settings (``--preset``); options given explicitly override them. ``paper`` is the
#: plain defaults (the paper's values mapped onto SB3). ``fast`` is what fits a CPU budget
#: of tens of minutes on a 2-core machine (docs/training.md: the measured runs): fewer
#: trajectories per update, 4 minibatch passes instead of 80 full-batch ones, no KL stop,
#: and a STOP logit that starts at -3 so the argmax of a young policy backfills.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "fast": {
        "n_envs": 2,
        "vec_env": "dummy",
        "trajectories": 20,
        "n_epochs": 4,
        "batch_size": 256,
        "target_kl": None,
        "stop_init": -3.0,
        "time_limit": 30.0,
        "total_steps": 10**9,
    },
}

#: Options that may be changed when resuming a run; every other option is taken from the
#: run's config.json (giving it with another value is an error).
RESUME_OVERRIDABLE: frozenset[str] = frozenset(
    {
        "total_steps",
        "epochs",
        "time_limit",
        "eval_every",
        "checkpoint_every",
        "progress",
        "verbose",
        "torch_threads",
        "train_threads",
        "vec_env",
        "resume",
        "logdir",
        "run_name",
    }
)

_DESCRIPTION = """\
Train the RLBackfilling kernel policy (agents.KernelPolicy) with sb3-contrib's MaskablePPO
on the hpcgym backfilling env (hpcgym/Backfill-v0), evaluating it on fixed windows of the
trace's test split next to the classic schedulers. Logs to TensorBoard
(tensorboard --logdir runs/); one folder per run: <logdir>/<run-name>/.
"""

_EPILOG = """\
Paper -> SB3 mapping (RLBackfilling, paper 004 section 4, and its reference code):
  100 trajectories of 256 jobs per update -> n_steps = ceil(trajectories x mean decision
      steps of a 256-job window / n_envs); the mean is measured at start-up by playing the
      near-uniform initial policy (uniform random valid actions) on --calib-windows
      training windows (--n-steps INT to fix it). SB3 collects a fixed number of steps, not
      whole trajectories: the last, unfinished episode of each env is bootstrapped with the
      value function.
  80 policy / 80 value iterations, early stop at KL > 1.5 x 0.01 -> n_epochs=80,
      batch_size = the whole rollout (one gradient step per epoch, as in the reference
      code), target_kl=0.01. SB3 stops the policy AND the value updates together at the
      KL limit (the reference code keeps training the value net for all 80 iterations).
  pi_lr 3e-4, vf_lr 1e-3 (two Adam optimizers) -> learning_rate=3e-4 and KernelPolicy's
      value_lr_ratio = value_lr / learning_rate (one Adam, two parameter groups).
  gamma=1, lambda=0.97, clip 0.2 -> gamma, gae_lambda, clip_range.
  no gradient clipping -> --max-grad-norm none (SB3's default would be 0.5, on the global
      norm of policy + value gradients).
  SB3 normalizes advantages per minibatch (= per rollout with the full batch), like the
  reference code; ent_coef=0; vf_coef only scales the value loss (Adam makes it nearly
  irrelevant).
"""


# --------------------------------------------------------------------------- arguments
_positive_int = positive_int
_nonneg_int = nonneg_int
_positive_float = positive_float
_unit_float = unit_float
_nonneg_float = nonneg_float


def _auto_or_int(text: str) -> str | int:
    if text.lower() == "auto":
        return "auto"
    return _positive_int(text)


def _full_or_int(text: str) -> str | int:
    if text.lower() == "full":
        return "full"
    return _positive_int(text)


def _none_or_float(text: str) -> float | None:
    if text.lower() in ("none", "off", "0"):
        return None
    return _positive_float(text)


def _arch(text: str) -> list[int]:
    try:
        arch = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated layer widths like 32,16,8, got {text!r}"
        ) from None
    if not arch or any(w <= 0 for w in arch):
        raise argparse.ArgumentTypeError(f"expected positive layer widths like 32,16,8: {text!r}")
    return arch


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def build_parser(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    """The command-line parser (``suppress_defaults``: only explicitly given options)."""
    from hpcgym.envs.backfill_env import MODES
    from hpcgym.sim.engine import POLICIES

    def d(value: Any) -> Any:
        return argparse.SUPPRESS if suppress_defaults else value

    p = argparse.ArgumentParser(
        prog="python train/ppo.py",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("workload and env")
    g.add_argument(
        "--trace",
        default=d("synthetic"),
        help="registered trace name (e.g. SDSC-SP2, Lublin-1; found through HPCGYM_TRACE_DIR "
        "or the cache) or an SWF path; 'synthetic' (default) = the embedded Lublin workload",
    )
    g.add_argument(
        "--policy",
        default=d("FCFS"),
        type=str.upper,
        choices=sorted(POLICIES),
        metavar="POLICY",
        help="base queue policy (default FCFS); one of: " + ", ".join(sorted(POLICIES)),
    )
    g.add_argument(
        "--normalizer",
        default=d("EASY-SJBF"),
        help="scheduler of the terminal reward (default EASY-SJBF; 'none' = raw -AVEbsld)",
    )
    g.add_argument(
        "--mode",
        default=d("guarded"),
        choices=sorted(MODES),
        help="backfill candidates: guarded (default, only what EASY allows), penalized "
        "(every fitting job, reservation delays penalized), free",
    )
    g.add_argument(
        "--seq-len",
        type=_positive_int,
        default=d(256),
        help="jobs per training episode (paper: 256)",
    )
    g.add_argument("--max-queue", type=_positive_int, default=d(128), help="K rows (128)")
    g.add_argument(
        "--estimator",
        default=d("request"),
        help="runtime estimate used by the engine (default: the user request)",
    )
    g.add_argument(
        "--train-fraction",
        type=float,
        default=d(0.7),
        help="share of the jobs in the training split (time split; default 0.7)",
    )

    g = p.add_argument_group("training length and parallelism")
    x = g.add_mutually_exclusive_group()
    x.add_argument(
        "--total-steps",
        type=_positive_int,
        default=d(None),
        help="environment steps (decisions) to train for; rounded up to whole updates",
    )
    x.add_argument(
        "--epochs",
        type=_positive_int,
        default=d(None),
        help="PPO updates ('epochs' in the paper) to train for (default 100 when neither "
        "--epochs nor --total-steps is given)",
    )
    g.add_argument(
        "--preset",
        choices=tuple(PRESETS),
        default=d("paper"),
        help="paper (default: the paper's hyperparameters, hours of CPU) or fast (fits a "
        "30-minute budget on 2 cores: "
        + ", ".join(f"{k.replace('_', '-')}={v}" for k, v in PRESETS["fast"].items())
        + "); explicit options override the preset",
    )
    g.add_argument(
        "--time-limit",
        type=float,
        default=d(None),
        metavar="MINUTES",
        help="stop training after this many minutes of wall time (a CPU budget); the run "
        "then finishes normally: final evaluation, final model, summary",
    )
    g.add_argument(
        "--n-envs",
        type=_positive_int,
        default=d(os.cpu_count() or 1),
        help="parallel training envs (default: os.cpu_count() = %(default)s)",
    )
    g.add_argument(
        "--vec-env",
        choices=("auto", "dummy", "subproc"),
        default=d("auto"),
        help="auto (default): SubprocVecEnv for n-envs > 1, DummyVecEnv for 1",
    )
    g.add_argument(
        "--torch-threads",
        type=_positive_int,
        default=d(1),
        help="torch threads while collecting rollouts (default 1: faster, see docs)",
    )
    g.add_argument(
        "--train-threads",
        type=_positive_int,
        default=d(None),
        help="torch threads during the PPO update (default: --torch-threads; more threads "
        "were slower on the 2-core reference machine, see docs/training.md)",
    )
    g.add_argument("--seed", type=int, default=d(0), help="seed of everything (default 0)")
    g.add_argument("--device", default=d("cpu"), help="torch device (default cpu)")

    g = p.add_argument_group("hyperparameters (defaults: the paper's, see below)")
    g.add_argument(
        "--trajectories",
        type=_positive_int,
        default=d(100),
        help="trajectories per update used to size the rollout with --n-steps auto (100)",
    )
    g.add_argument(
        "--n-steps",
        type=_auto_or_int,
        default=d("auto"),
        help="steps per env per update: 'auto' (default) = ceil(trajectories x measured "
        "steps per trajectory / n-envs), or an integer",
    )
    g.add_argument(
        "--calib-windows",
        type=_positive_int,
        default=d(32),
        help="training windows played to measure the steps per trajectory (32)",
    )
    g.add_argument(
        "--batch-size",
        type=_full_or_int,
        default=d("full"),
        help="minibatch size: 'full' (default) = the whole rollout, as in the paper's code",
    )
    g.add_argument("--n-epochs", type=_positive_int, default=d(80), help="passes per update (80)")
    g.add_argument(
        "--learning-rate", type=_positive_float, default=d(3e-4), help="policy lr (3e-4)"
    )
    g.add_argument("--value-lr", type=_positive_float, default=d(1e-3), help="value lr (1e-3)")
    g.add_argument("--gamma", type=_unit_float, default=d(1.0), help="discount (1.0)")
    g.add_argument("--gae-lambda", type=_unit_float, default=d(0.97), help="GAE lambda (0.97)")
    g.add_argument("--clip-range", type=_positive_float, default=d(0.2), help="PPO clip (0.2)")
    g.add_argument(
        "--target-kl",
        type=_none_or_float,
        default=d(0.01),
        help="early stop of an update at KL > 1.5 x target (0.01; 'none' = off)",
    )
    g.add_argument("--ent-coef", type=_nonneg_float, default=d(0.0), help="entropy coef (0)")
    g.add_argument("--vf-coef", type=_positive_float, default=d(0.5), help="value coef (0.5)")
    g.add_argument(
        "--max-grad-norm",
        type=_none_or_float,
        default=d(None),
        help="gradient clipping: 'none' (default, as in the paper's code) or a max norm",
    )
    g.add_argument(
        "--value-head",
        choices=("flat", "pooled"),
        default=d("flat"),
        help="KernelPolicy critic: flat (default, the paper's) or pooled",
    )
    g.add_argument(
        "--stop-score",
        choices=("learned", "fixed", "pooled"),
        default=d("learned"),
        help="KernelPolicy STOP logit (default learned)",
    )
    g.add_argument(
        "--stop-init",
        type=float,
        default=d(0.0),
        help="initial STOP logit of KernelPolicy (default 0; e.g. -3 starts from a policy "
        "that prefers backfilling to waiting, see docs/training.md)",
    )
    g.add_argument(
        "--kernel-arch",
        type=_arch,
        default=d([32, 16, 8]),
        help="kernel hidden widths (default 32,16,8 = the paper's)",
    )

    g = p.add_argument_group("evaluation, logging, checkpoints")
    g.add_argument(
        "--eval-every",
        type=_nonneg_int,
        default=d(5),
        help="updates between evaluations on the test windows (default 5; 0 = only at the "
        "start and the end)",
    )
    g.add_argument(
        "--eval-windows",
        type=_positive_int,
        default=d(10),
        help="evaluation windows from the test split (default 10)",
    )
    g.add_argument(
        "--eval-length", type=_positive_int, default=d(1024), help="jobs per eval window (1024)"
    )
    g.add_argument(
        "--eval-seed",
        type=int,
        default=d(None),
        help="draw the eval windows with this seed (default: evenly spaced, no randomness)",
    )
    g.add_argument(
        "--baselines",
        type=_names,
        default=d(list(DEFAULT_BASELINES)),
        help="comma-separated schedulers evaluated on the same windows (default "
        + ",".join(DEFAULT_BASELINES)
        + "); '' for none (NONE is the no-backfilling scheduler)",
    )
    g.add_argument(
        "--checkpoint-every",
        type=_nonneg_int,
        default=d(5),
        help="updates between checkpoints (default 5; 0 = only at the end)",
    )
    g.add_argument("--logdir", default=d("runs"), help="parent folder of the runs (runs/)")
    g.add_argument(
        "--run-name",
        default=d(None),
        help="run folder name (default <trace>_<policy>_<mode>_s<seed>_<date-time>)",
    )
    g.add_argument(
        "--resume",
        default=d(None),
        metavar="PATH",
        help="continue a run: its folder (latest checkpoint) or a checkpoint .zip; the "
        "run's config.json supplies the other options",
    )
    g.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=d(True),
        help="no progress bar",
    )
    g.add_argument(
        "--verbose", action="store_true", default=d(False), help="print SB3's log tables"
    )
    return p


def _explicit_options(argv: list[str]) -> dict[str, Any]:
    """The options the user actually gave (``dest -> value``)."""
    return vars(build_parser(suppress_defaults=True).parse_args(argv))


# --------------------------------------------------------------------------- helpers
def env_kwargs(cfg: dict[str, Any], split: str, seq_len: int) -> dict[str, Any]:
    """Constructor arguments of :class:`hpcgym.envs.backfill_env.BackfillEnv`."""
    trace = cfg["trace"]
    normalizer = cfg["normalizer"]
    return {
        "trace": None if str(trace).lower() in ("synthetic", "none") else trace,
        "policy": cfg["policy"],
        "estimator": cfg["estimator"],
        "sequence_length": int(seq_len),
        "split": split,
        "train_fraction": float(cfg["train_fraction"]),
        "mode": cfg["mode"],
        "normalizer": None if str(normalizer).lower() == "none" else normalizer,
        "max_queue": int(cfg["max_queue"]),
    }


def eval_window_starts(
    n_jobs: int,
    length: int,
    k: int,
    train_fraction: float = 0.7,
    seed: int | None = None,
) -> list[int]:
    """Starts of ``k`` evaluation windows of ``length`` jobs in the test split: evenly
    spaced (``seed=None``) or drawn uniformly with a seeded generator. Deterministic."""
    from hpcgym.workload import WindowSampler

    sampler = WindowSampler(n_jobs, length, split="test", train_fraction=train_fraction, seed=seed)
    if seed is None:
        return [int(s) for s in sampler.evenly_spaced(k)]
    return [int(s) for s in sampler.sample_many(k)]


def measure_steps_per_trajectory(
    kwargs: dict[str, Any], n_windows: int, seed: int
) -> dict[str, float]:
    """Mean env steps of one training episode under the uniform random valid policy.

    The freshly initialised :class:`agents.KernelPolicy` is (nearly) uniform over the valid
    actions, STOP included, so this is the episode length of the first updates.
    """
    from agents.heuristic import RandomValid
    from hpcgym.envs.backfill_env import BackfillEnv

    env = BackfillEnv(**kwargs)
    agent = RandomValid(seed=seed, include_stop=True)
    rng = np.random.default_rng(seed)
    lengths = []
    t0 = time.perf_counter()
    for _ in range(n_windows):
        obs, _info = env.reset(seed=int(rng.integers(2**31)))
        done = False
        n = 0
        while not done:
            a, _ = agent.predict(obs, action_masks=env.action_masks())
            obs, _r, term, trunc, _info = env.step(a)
            done = term or trunc
            n += 1
        lengths.append(n)
    arr = np.asarray(lengths, dtype=np.float64)
    return {
        "mean": float(arr.mean()),
        "std": float(arr.std()),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "windows": int(n_windows),
        "seconds": time.perf_counter() - t0,
    }


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_json_default) + "\n", encoding="utf-8")
    tmp.replace(path)


_CKPT_RE = re.compile(r"model_(\d+)_steps\.zip$")


def _latest_checkpoint(run_dir: Path) -> Path | None:
    found = []
    for f in (run_dir / "checkpoints").glob("model_*_steps.zip"):
        m = _CKPT_RE.search(f.name)
        if m:
            found.append((int(m.group(1)), f))
    return max(found)[1] if found else None


def _default_run_name(cfg: dict[str, Any]) -> str:
    trace = Path(str(cfg["trace"])).name.split(".")[0] or "trace"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{trace}_{cfg['policy']}_{cfg['mode']}_s{cfg['seed']}_{stamp}"


def _versions() -> dict[str, str]:
    import gymnasium
    import sb3_contrib
    import stable_baselines3
    import torch

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
    }


def _format_table(
    starts: list[int],
    length: int,
    columns: dict[str, list[float]],
) -> str:
    names = list(columns)
    width = max(10, *(len(n) + 1 for n in names))
    head = f"{'window':>16}" + "".join(f"{n:>{width}}" for n in names)
    lines = [head, "-" * len(head)]
    for i, s in enumerate(starts):
        row = f"{f'[{s}:{s + length}]':>16}"
        row += "".join(f"{columns[n][i]:>{width}.2f}" for n in names)
        lines.append(row)
    lines.append("-" * len(head))
    lines.append(f"{'mean':>16}" + "".join(f"{np.mean(columns[n]):>{width}.2f}" for n in names))
    return "\n".join(lines)


# --------------------------------------------------------------------------- main
def _resolve_config(
    parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[dict[str, Any], Path, Path | None, dict[str, Any] | None]:
    """Parse; for ``--resume`` merge with the run's config. Returns ``(cfg, run_dir,
    checkpoint, previous summary)``."""
    args = parser.parse_args(argv)
    cfg = vars(args)
    if cfg["resume"] is None and cfg.get("preset") and cfg["preset"] != "paper":
        given = _explicit_options(argv)
        for key, value in PRESETS[cfg["preset"]].items():
            if key == "total_steps" and "epochs" in given:
                continue  # --epochs sets the length instead
            if key not in given:
                cfg[key] = value
    if cfg["resume"] is None:
        if not (0.0 < cfg["train_fraction"] < 1.0):
            parser.error(f"--train-fraction must be in (0, 1), got {cfg['train_fraction']}")
        if cfg["total_steps"] is None and cfg["epochs"] is None:
            cfg["epochs"] = 100
        cfg["run_name"] = cfg["run_name"] or _default_run_name(cfg)
        if "/" in cfg["run_name"] or cfg["run_name"] in (".", ".."):
            parser.error(f"--run-name must be a plain folder name, got {cfg['run_name']!r}")
        run_dir = Path(cfg["logdir"]) / cfg["run_name"]
        if (run_dir / "config.json").exists():
            parser.error(
                f"run folder {run_dir} already holds a run: continue it with "
                f"--resume {run_dir}, or choose another --run-name"
            )
        return cfg, run_dir, None, None

    # ---- resume
    explicit = _explicit_options(argv)
    path = Path(cfg["resume"])
    if path.is_dir():
        run_dir = path
        ckpt = _latest_checkpoint(run_dir)
        if ckpt is None:
            parser.error(
                f"--resume {path}: no checkpoint in {run_dir / 'checkpoints'} (a run saves "
                "one every --checkpoint-every updates and at the end)"
            )
    elif path.is_file() and path.suffix == ".zip":
        ckpt = path
        run_dir = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    else:
        parser.error(f"--resume {path}: not a run folder or a checkpoint .zip")
    cfg_file = run_dir / "config.json"
    if not cfg_file.exists():
        parser.error(f"--resume {path}: {cfg_file} not found (is {run_dir} a run folder?)")
    saved = json.loads(cfg_file.read_text(encoding="utf-8"))
    merged = dict(saved)
    conflicts = []
    for key, value in explicit.items():
        if key in RESUME_OVERRIDABLE:
            merged[key] = value
        elif saved.get(key) != value:
            opt = "--" + key.replace("_", "-")
            conflicts.append(f"{opt} ({value!r}; the run has {saved.get(key)!r})")
    if conflicts:
        parser.error(
            "cannot change these options when resuming (they are fixed by the run's "
            f"config.json): {', '.join(conflicts)}. Start a new run (--run-name) instead."
        )
    if "total_steps" in explicit:
        merged["epochs"] = None
    elif "epochs" in explicit:
        merged["total_steps"] = None
    merged["resume"] = str(path)
    merged["run_name"] = run_dir.name
    merged["logdir"] = str(run_dir.parent)
    prev = None
    if (run_dir / "summary.json").exists():
        prev = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return merged, run_dir, ckpt, prev


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the training script; returns the summary written to ``summary.json``.

    :param argv: command-line arguments (default ``sys.argv[1:]``)
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    cfg, run_dir, ckpt, prev_summary = _resolve_config(parser, argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    import torch as th
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import CSVOutputFormat, HParam, HumanOutputFormat, Logger
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from agents.kernel_policy import KernelPolicy
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.workload import TraceNotFoundError, UnknownTraceError
    from train.callbacks import (
        EpisodeMetricsCallback,
        EvalCheckpointCallback,
        PhaseCallback,
        PurgingTensorBoardFormat,
        TimeLimitCallback,
        TqdmProgressCallback,
        add_custom_scalars_layout,
        compute_baselines,
        tensorboard_writer,
    )

    t_start = time.time()
    warnings: list[str] = []

    def warn(msg: str) -> None:
        warnings.append(msg)
        log.warning(msg)

    resuming = ckpt is not None
    rollout_threads = int(cfg["torch_threads"])
    train_threads = int(cfg["train_threads"] or rollout_threads)
    th.set_num_threads(rollout_threads)

    # ---- envs (the first one loads the workload: trace errors surface here)
    train_kw = env_kwargs(cfg, "train", cfg["seq_len"])
    eval_kw = env_kwargs(cfg, "test", cfg["eval_length"])
    try:
        probe = BackfillEnv(**train_kw)
    except (TraceNotFoundError, UnknownTraceError, FileNotFoundError) as exc:
        parser.error(f"--trace {cfg['trace']!r}: {exc}")
    except ValueError as exc:
        parser.error(str(exc))
    workload = probe.workload
    try:
        starts = eval_window_starts(
            len(workload),
            cfg["eval_length"],
            cfg["eval_windows"],
            cfg["train_fraction"],
            cfg["eval_seed"],
        )
    except ValueError as exc:
        parser.error(f"evaluation windows (--eval-windows/--eval-length): {exc}")
    eval_envs = [BackfillEnv(**eval_kw) for _ in starts]

    # ---- rollout size
    calib = cfg.get("calibration")
    if cfg["n_steps"] == "auto" and not resuming:
        calib = measure_steps_per_trajectory(train_kw, cfg["calib_windows"], cfg["seed"])
        n_steps = max(1, math.ceil(cfg["trajectories"] * calib["mean"] / cfg["n_envs"]))
    elif resuming:
        n_steps = int(cfg["n_steps_resolved"])
    else:
        n_steps = int(cfg["n_steps"])
    rollout_size = n_steps * cfg["n_envs"]
    batch_size = rollout_size if cfg["batch_size"] == "full" else int(cfg["batch_size"])
    if batch_size > rollout_size:
        parser.error(f"--batch-size {batch_size} exceeds the rollout size {rollout_size}")
    if batch_size == 1:
        parser.error("--batch-size must be > 1 (advantage normalization needs 2 samples)")
    target = (
        int(cfg["total_steps"])
        if cfg["total_steps"] is not None
        else int(cfg["epochs"]) * rollout_size
    )
    cfg["n_steps_resolved"] = n_steps
    cfg["batch_size_resolved"] = batch_size
    cfg["rollout_size"] = rollout_size
    cfg["calibration"] = calib
    cfg["target_timesteps"] = target

    # ---- baselines (once, on the same windows)
    baselines, skipped = compute_baselines(
        workload, starts, cfg["eval_length"], cfg["baselines"], cfg["policy"], warn
    )

    # ---- training envs
    vec_cls: Any
    if cfg["vec_env"] == "subproc" or (cfg["vec_env"] == "auto" and cfg["n_envs"] > 1):
        vec_cls = SubprocVecEnv
    else:
        vec_cls = DummyVecEnv

    run_dir.mkdir(parents=True, exist_ok=True)

    model: Any
    start_steps = 0
    if resuming:
        assert ckpt is not None
        m = _CKPT_RE.search(ckpt.name)
        updates_done = (int(m.group(1)) if m else 0) // rollout_size
        env_seed = int(cfg["seed"]) + 7919 * (updates_done + 1)
        vec = make_vec_env(
            BackfillEnv,
            n_envs=cfg["n_envs"],
            seed=env_seed,
            env_kwargs=train_kw,
            vec_env_cls=vec_cls,
        )
        model = MaskablePPO.load(ckpt, env=vec, device=cfg["device"])
        start_steps = int(model.num_timesteps)
        if model.n_steps * model.n_envs != rollout_size:
            parser.error(
                f"checkpoint {ckpt} was trained with {model.n_steps} x {model.n_envs} steps per "
                f"update, the run's config says {rollout_size}"
            )
        model.set_random_seed(int(cfg["seed"]) + 7919 * (start_steps // rollout_size + 1))
        if start_steps >= target:
            vec.close()
            parser.error(
                f"the run is already at {start_steps} steps (target {target}): pass a larger "
                "--total-steps or --epochs to continue it"
            )
    else:
        vec = make_vec_env(
            BackfillEnv,
            n_envs=cfg["n_envs"],
            seed=int(cfg["seed"]),
            env_kwargs=train_kw,
            vec_env_cls=vec_cls,
        )
        model = MaskablePPO(
            KernelPolicy,
            vec,
            learning_rate=cfg["learning_rate"],
            n_steps=n_steps,
            batch_size=batch_size,
            n_epochs=cfg["n_epochs"],
            gamma=cfg["gamma"],
            gae_lambda=cfg["gae_lambda"],
            clip_range=cfg["clip_range"],
            ent_coef=cfg["ent_coef"],
            vf_coef=cfg["vf_coef"],
            max_grad_norm=math.inf if cfg["max_grad_norm"] is None else cfg["max_grad_norm"],
            target_kl=cfg["target_kl"],
            policy_kwargs={
                "kernel_arch": list(cfg["kernel_arch"]),
                "value_head": cfg["value_head"],
                "stop_score": cfg["stop_score"],
                "stop_init": float(cfg.get("stop_init") or 0.0),
                "value_lr_ratio": cfg["value_lr"] / cfg["learning_rate"],
            },
            seed=int(cfg["seed"]),
            device=cfg["device"],
            verbose=0,
        )

    # ---- logger: TensorBoard events straight in the run folder
    formats: list[Any] = [
        PurgingTensorBoardFormat(str(run_dir), purge_step=start_steps + 1 if resuming else None)
    ]
    csv_name = "progress.csv" if not resuming else f"progress_from_{start_steps}.csv"
    formats.append(CSVOutputFormat(str(run_dir / csv_name)))
    if cfg["verbose"]:
        formats.append(HumanOutputFormat(sys.stdout))
    logger = Logger(str(run_dir), formats)
    model.set_logger(logger)
    baseline_names = list(baselines)
    add_custom_scalars_layout(logger, baseline_names)
    if not resuming:
        hparams = {
            k: (v if isinstance(v, (int, float, str, bool)) else str(v))
            for k, v in cfg.items()
            if k not in ("calibration", "resume", "progress", "verbose", "logdir")
        }
        logger.record(
            "hparams",
            HParam(hparams, {"eval/avg_bsld/agent": 0.0, "rollout/avg_bsld": 0.0}),
            exclude=("stdout", "log", "json", "csv"),
        )
        writer = tensorboard_writer(logger)
        if writer is not None:
            writer.add_text(
                "config", "```\n" + json.dumps(cfg, indent=2, default=_json_default) + "\n```"
            )

    # ---- resume bookkeeping: evaluations and best model so far
    history: list[dict[str, Any]] = []
    best = math.inf
    if resuming:
        ev = run_dir / "evaluations.jsonl"
        if ev.exists():
            for line in ev.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    if rec["timesteps"] <= start_steps:
                        history.append(rec)
            # evaluations after the checkpoint belong to the lost part of the killed run
            ev.write_text("".join(json.dumps(r) + "\n" for r in history), encoding="utf-8")
        bm = run_dir / "best_model.json"
        if bm.exists() and (run_dir / "best_model.zip").exists():
            best = float(json.loads(bm.read_text(encoding="utf-8"))["avg_bsld"])

    episode_cb = EpisodeMetricsCallback()
    eval_cb = EvalCheckpointCallback(
        run_dir,
        rollout_size,
        eval_envs,
        starts,
        baselines,
        cfg["eval_every"],
        cfg["checkpoint_every"],
        best=best,
        history=history,
        eval_seed=0,
    )

    def postfix() -> dict[str, Any]:
        out: dict[str, Any] = {"upd": int(model.num_timesteps) // rollout_size}
        if episode_cb.last:
            out["train_bsld"] = f"{episode_cb.last['avg_bsld']:.1f}"
        if eval_cb.last_eval is not None:
            out["eval_bsld"] = f"{eval_cb.last_eval['avg_bsld']:.1f}"
        return out

    phase_cb = PhaseCallback(rollout_threads, train_threads, overhead=eval_cb)
    callbacks: list[Any] = [phase_cb, episode_cb, eval_cb]
    if cfg.get("time_limit"):
        callbacks.append(TimeLimitCallback(60.0 * float(cfg["time_limit"])))
    if cfg["progress"]:
        callbacks.append(TqdmProgressCallback(target, postfix))

    state = f"resuming at {start_steps} steps" if resuming else "new"
    print(
        f"run {run_dir} | trace {probe.trace_label} ({len(workload)} jobs, "
        f"{workload.machine_size} procs) | {state}"
        f" | {cfg['n_envs']} x {n_steps} steps/update"
        + (f" (measured {calib['mean']:.1f} steps per trajectory)" if calib else "")
        + f" | target {target} steps",
        flush=True,
    )
    # written once the set-up succeeded; on resume it keeps the new target and the other
    # overridable options for the next resume
    _write_json(run_dir / "config.json", {**cfg, "resume": None})
    t_learn = time.perf_counter()
    interrupted = False
    try:
        model.learn(
            total_timesteps=target - start_steps,
            callback=callbacks,
            reset_num_timesteps=not resuming,
            progress_bar=False,
        )
    except KeyboardInterrupt:
        interrupted = True
        print(
            f"\ninterrupted at {model.num_timesteps} steps; continue with --resume {run_dir} "
            "(from the last checkpoint)",
            file=sys.stderr,
        )
    finally:
        learn_seconds = time.perf_counter() - t_learn
        try:
            vec.close()
        except (BrokenPipeError, EOFError, ConnectionResetError):  # workers died (Ctrl-C)
            pass
    if interrupted:
        for fmt in logger.output_formats:
            fmt.close()
        raise SystemExit(130)

    final_path = run_dir / "final_model.zip"
    model.save(final_path)
    for fmt in logger.output_formats:
        fmt.close()

    # ---- summary and table
    final = eval_cb.last_eval
    assert final is not None
    bm = run_dir / "best_model.json"
    best_rec = json.loads(bm.read_text(encoding="utf-8")) if bm.exists() else None

    steps_done = int(model.num_timesteps) - start_steps
    sessions = list((prev_summary or {}).get("sessions", []))
    sessions.append(
        {
            "started": datetime.fromtimestamp(t_start).isoformat(timespec="seconds"),
            "resumed_from": str(ckpt) if ckpt else None,
            "timesteps_start": start_steps,
            "timesteps_end": int(model.num_timesteps),
            "wall_time_s": time.time() - t_start,
            "learn_time_s": learn_seconds,
            "eval_time_s": eval_cb.eval_seconds,
            "rollout_time_s": phase_cb.rollout_seconds,
            "update_time_s": phase_cb.update_seconds,
            "steps_per_s": steps_done / learn_seconds if learn_seconds > 0 else math.nan,
            "rollout_steps_per_s": phase_cb.rollout_steps / phase_cb.rollout_seconds
            if phase_cb.rollout_seconds > 0
            else math.nan,
        }
    )
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "args": cfg,
        "trace": probe.trace_label,
        "jobs": len(workload),
        "machine_size": int(workload.machine_size),
        "timesteps": int(model.num_timesteps),
        "updates": int(model.num_timesteps) // rollout_size,
        "n_steps": n_steps,
        "n_envs": cfg["n_envs"],
        "rollout_size": rollout_size,
        "batch_size": batch_size,
        "steps_per_trajectory_measured": calib,
        "wall_time_s": sum(s["wall_time_s"] for s in sessions),
        "sessions": sessions,
        "eval": {
            "split": "test",
            "length": cfg["eval_length"],
            "starts": starts,
            "final": {
                "timesteps": final["timesteps"],
                "avg_bsld": final["avg_bsld"],
                "per_window": final["per_window"],
            },
            "best": None
            if best_rec is None
            else {
                "timesteps": best_rec["timesteps"],
                "avg_bsld": best_rec["avg_bsld"],
                "per_window": best_rec.get("per_window"),
            },
            "history": [
                {k: r[k] for k in ("timesteps", "updates", "avg_bsld", "reward")}
                for r in eval_cb.history
            ],
        },
        "baselines": {k: dict(v) for k, v in baselines.items()},
        "skipped_baselines": skipped,
        "warnings": warnings,
        "paths": {
            "run_dir": str(run_dir),
            "tensorboard": str(run_dir),
            "config": str(run_dir / "config.json"),
            "final_model": str(final_path),
            "best_model": str(run_dir / "best_model.zip")
            if (run_dir / "best_model.zip").exists()
            else None,
            "last_checkpoint": str(eval_cb.last_checkpoint) if eval_cb.last_checkpoint else None,
            "checkpoints": sorted(str(p) for p in (run_dir / "checkpoints").glob("*.zip")),
            "evaluations": str(run_dir / "evaluations.jsonl"),
        },
        "versions": _versions(),
    }
    _write_json(run_dir / "summary.json", summary)

    columns: dict[str, list[float]] = {
        "agent": [w["avg_bsld"] for w in final["per_window"]],
    }
    if best_rec is not None and best_rec["timesteps"] != final["timesteps"]:
        columns["agent*"] = [w["avg_bsld"] for w in best_rec["per_window"]]
    for name, res in baselines.items():
        columns[name] = list(res["per_window"])
    print(
        f"\nAVEbsld on {len(starts)} test windows of {cfg['eval_length']} jobs "
        f"({probe.trace_label}, {cfg['policy']}, {cfg['mode']}; agent = final model at "
        f"{final['timesteps']} steps"
        + (f", agent* = best model at {best_rec['timesteps']} steps" if "agent*" in columns else "")
        + ")"
    )
    print(_format_table(starts, cfg["eval_length"], columns))
    if skipped:
        print("skipped baselines: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    sess = sessions[-1]
    print(
        f"\n{steps_done} steps in {learn_seconds:.0f} s: rollouts {sess['rollout_time_s']:.0f} s "
        f"({sess['rollout_steps_per_s']:.0f} steps/s), updates {sess['update_time_s']:.0f} s, "
        f"evaluations {sess['eval_time_s']:.0f} s; summary: {run_dir / 'summary.json'}"
    )
    return summary


if __name__ == "__main__":
    main()
