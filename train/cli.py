"""The command line of ``train/ppo.py``, generated from :class:`train.config.TrainConfig`.

Every flag comes from a field's :class:`train.config.Option`; the parser has no defaults of
its own (``argparse.SUPPRESS``), so :func:`parse_args` returns exactly the options the user
gave and :meth:`TrainConfig.create` fills in the preset and the defaults. ``--help`` shows
the dataclass defaults. Old flag names (``--seq-len``, ``--normalizer``) are accepted as
hidden aliases.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any, NoReturn

from hpcgym.argtypes import positive_int
from train.config import TrainConfig
from train.options import Option

__all__ = ["OneLineParser", "ParsedArgs", "build_parser", "parse_args"]

DESCRIPTION = """\
Train the RLBackfilling kernel policy (hpcgym_agents.KernelPolicy) with sb3-contrib's
MaskablePPO on the hpcgym backfilling env (hpcgym/Backfill-v0), evaluating it on fixed
windows of the trace's validation split (the last 10% of the training range; the test
split is never read) next to the classic schedulers. Logs to TensorBoard
(tensorboard --logdir runs/); one folder per run: <logdir>/<run-name>/.
"""

EPILOG = """\
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

GROUPS: dict[str, str] = {
    "workload": "workload and env",
    "length": "training length and parallelism",
    "hyper": "hyperparameters (defaults: the paper's, see below)",
    "eval": "evaluation, logging, checkpoints",
}


@dataclass(frozen=True)
class ParsedArgs:
    """What the command line asked for.

    :param options: the options given explicitly (field name -> value)
    :param resume: ``--resume`` (a run folder or a checkpoint), or ``None``
    :param seeds: ``--seeds`` (one run per seed, :mod:`train.seeds`), or ``None``
    :param seed_jobs: ``--seed-jobs``, or ``None`` when not given (a new seeds run: 1; a
        resumed one: as many as it was started with)
    """

    options: dict[str, Any]
    resume: str | None
    seeds: list[int] | None = None
    seed_jobs: int | None = None


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Print ``prog: error: message`` on stderr and exit with status 2.

        :param message: what is wrong
        """
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _default_text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``train/ppo.py`` (no defaults: only given options are set)."""
    p = OneLineParser(
        prog="python train/ppo.py",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    groups = {key: p.add_argument_group(title) for key, title in GROUPS.items()}
    exclusive: dict[str, Any] = {}
    defaults = TrainConfig.create()
    for f in dataclasses.fields(TrainConfig):
        opt: Option | None = f.metadata.get("cli")
        if opt is None:
            continue
        target: Any = groups[opt.group]
        if opt.exclusive is not None:
            if opt.exclusive not in exclusive:
                exclusive[opt.exclusive] = target.add_mutually_exclusive_group()
            target = exclusive[opt.exclusive]
        flag = opt.flag_of(f.name)
        default = getattr(defaults, f.name) if f.name != "epochs" else None
        help_text = opt.help
        if opt.metavar is not None and opt.choices is not None:
            help_text += "; one of: " + ", ".join(opt.choice_list() or ())
        if opt.show_default:
            help_text += f" (default: {_default_text(default)})"
        help_text = help_text.replace("%", "%%")
        kw: dict[str, Any] = {"dest": f.name, "help": help_text}
        if isinstance(f.default, bool):
            kw["action"] = "store_false" if f.default else "store_true"
        else:
            if opt.parse is not None:
                kw["type"] = opt.parse
            choices = opt.choice_list()
            if choices is not None:
                kw["choices"] = choices
            if opt.metavar is not None:
                kw["metavar"] = opt.metavar
        target.add_argument(flag, **kw)
        for alias in opt.aliases:
            target.add_argument(alias, **{**kw, "help": argparse.SUPPRESS})
    groups["length"].add_argument(
        "--seeds",
        nargs="+",
        type=int,
        metavar="SEED",
        help="train one run per seed, one after the other, in <run>/seed-<s> (each a normal "
        "resumable run); writes <run>/seeds.json and prints per seed the final validation "
        "ratio vs the reference [95%% interval] and across seeds its mean and spread "
        "(excludes --seed; --resume <run> resumes every unfinished seed)",
    )
    groups["length"].add_argument(
        "--seed-jobs",
        type=positive_int,
        metavar="N",
        help="with --seeds (or resuming a seeds run): train N seeds at the same time, each "
        "in its own process (default 1: one after the other); give each its core "
        "(--torch-threads 1, the fast preset's default)",
    )
    groups["eval"].add_argument(
        "--resume",
        metavar="PATH",
        help="continue a run: its folder (latest checkpoint) or a checkpoint .zip; the run's "
        "config.json supplies the other options",
    )
    return p


def parse_args(argv: list[str], parser: argparse.ArgumentParser | None = None) -> ParsedArgs:
    """Parse ``argv`` (exits with status 2 on bad input, like argparse).

    :param argv: command-line arguments
    :param parser: the parser (default :func:`build_parser`)
    """
    parser = parser or build_parser()
    given = vars(parser.parse_args(argv))
    resume = given.pop("resume", None)
    seeds = given.pop("seeds", None)
    if seeds is not None and resume is not None:
        parser.error(
            "--seeds and --resume exclude each other (--resume <run> continues every seed)"
        )
    if seeds is not None and "seed" in given:
        parser.error("--seed and --seeds exclude each other: give one")
    seed_jobs = given.pop("seed_jobs", None)
    if seed_jobs is not None and seeds is None and resume is None:
        parser.error("--seed-jobs trains the seeds of --seeds (or of a resumed seeds run)")
    return ParsedArgs(options=given, resume=resume, seeds=seeds, seed_jobs=seed_jobs)
