"""The command line of ``train/ppo.py``, generated from :class:`train.config.TrainConfig`.

Every flag comes from a field's :class:`train.config.Option`; the parser has no defaults of
its own (``argparse.SUPPRESS``), so :func:`parse_args` returns exactly the options the user
gave and :meth:`TrainConfig.create` fills in the preset and the defaults. ``--help`` shows
the options of :data:`SHOWN` with the dataclass defaults; every option is also set by name
from a config file (``--config FILE``) or ``--set KEY=VALUE`` (:mod:`train.overrides`).
The flags of the other options still work, hidden from ``--help``, with a
``FutureWarning`` naming their ``--set`` form. Old flag names (``--seq-len``,
``--normalizer``) are accepted as hidden aliases.
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, NoReturn

from hpcgym.argtypes import positive_int
from train.config import ConfigError, TrainConfig
from train.options import Option
from train.overrides import option_keys, parse_set, read_config_file, set_text

__all__ = ["SHOWN", "OneLineParser", "ParsedArgs", "build_parser", "parse_args"]

DESCRIPTION = """\
Train the kernel policy with MaskablePPO on a decision task (--task: backfill, schedule,
inspect; hpcgym.tasks), evaluated on validation windows beside the classic schedulers
(the test split is never read). One folder per run, <logdir>/<run-name>/, whose
config.json records every option; TensorBoard: tensorboard --logdir runs/.
Every option not shown: --set KEY=VALUE or --config FILE (docs/training.md, "Arguments").
"""

#: The options ``--help`` shows (field names); the others: ``--config`` / ``--set``.
SHOWN: frozenset[str] = frozenset(
    (
        "trace task policy reference mode features preset total_steps epochs time_limit "
        "n_envs algo seed device torch_threads eval_every eval_windows checkpoint_every "
        "keep_checkpoints logdir run_name progress verbose"
    ).split()
)

EPILOG = """\
Defaults: the RLBackfilling paper's hyperparameters (docs/training.md).
"""

#: Short placeholders of the shown options in ``--help`` (the choices are in the line).
METAVARS: dict[str, str] = {
    "task": "TASK",
    "mode": "MODE",
    "features": "COLUMNS",
    "preset": "PRESET",
    "total_steps": "N",
    "epochs": "N",
    "n_envs": "N",
    "algo": "ALGO",
    "torch_threads": "N",
    "eval_every": "N",
    "eval_windows": "N",
    "checkpoint_every": "N",
    "run_name": "NAME",
    "reference": "NAME",
    "device": "DEV",
}

#: One line of ``--help`` per shown option (the full text: docs/training.md, "Arguments").
BRIEF: dict[str, str] = {
    "trace": "trace name, SWF path or synthetic[:KEY=VALUE,...]",
    "task": "the decision learned",
    "policy": "queue policy (the rows' order)",
    "reference": "the reward's reference scheduler (default: the task's)",
    "mode": "backfill candidates",
    "features": "Backfill-v0's columns",
    "preset": "paper (hours of CPU) or fast (30 min on 2 cores)",
    "total_steps": "environment steps to train for",
    "epochs": "PPO updates to train for",
    "time_limit": "minutes of wall time, then the run finishes",
    "n_envs": "parallel training envs",
    "algo": "sb3 or lean (the same loss, ~2x faster)",
    "torch_threads": "torch threads while collecting rollouts",
    "seed": "seed of everything",
    "device": "torch device: cpu, cuda, mps, auto",
    "eval_every": "updates between evaluations",
    "eval_windows": "validation windows per evaluation",
    "checkpoint_every": "updates between checkpoints",
    "keep_checkpoints": "checkpoints kept, the newest N; 0 = all",
    "logdir": "parent folder of the runs",
    "run_name": "run folder name",
    "progress": "no progress bar",
    "verbose": "print SB3's log tables",
}

GROUPS: dict[str, str] = {
    "workload": "workload and env",
    "length": "training length and parallelism",
    "hyper": "hyperparameters",
    "eval": "evaluation, logging, checkpoints",
    "more": "every other option (docs/training.md, 'Arguments')",
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
        usage="%(prog)s [--trace TRACE] [--task TASK] [--preset {paper,fast}] [options]",
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
        help_text = BRIEF.get(f.name, opt.help)
        if opt.metavar is not None and opt.choices is not None and f.name not in BRIEF:
            help_text += "; one of: " + ", ".join(opt.choice_list() or ())
        elif f.name in METAVARS and opt.choice_list() is not None:
            help_text += ": " + ", ".join(opt.choice_list() or ())
        if opt.show_default and default is not None and f.name != "reference":
            help_text += f" (default: {_default_text(default)})"
        help_text = help_text.replace("%", "%%")
        if f.name not in SHOWN:
            help_text = argparse.SUPPRESS  # deprecated flag: --set / --config
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
            if f.name in METAVARS:
                kw["metavar"] = METAVARS[f.name]
        target.add_argument(flag, **kw)
        for alias in opt.aliases:
            target.add_argument(alias, **{**kw, "help": argparse.SUPPRESS})
    groups["length"].add_argument(
        "--seeds",
        nargs="+",
        type=int,
        metavar="SEED",
        help="one run per seed in <run>/seed-<s>, and their spread",
    )
    groups["length"].add_argument(
        "--seed-jobs",
        type=positive_int,
        metavar="N",
        help="with --seeds: N seeds at a time (default: 1)",
    )
    groups["more"].add_argument(
        "--config",
        dest="config_file",
        metavar="FILE",
        help="options from a TOML, JSON or YAML file",
    )
    groups["more"].add_argument(
        "--set",
        dest="set_pairs",
        action="append",
        metavar="KEY=VALUE",
        help="any option by name (repeatable)",
    )
    groups["eval"].add_argument(
        "--resume",
        metavar="PATH",
        help="continue a run (its folder) or a checkpoint .zip",
    )
    return p


def _flag(key: str) -> str:
    f = {f.name: f for f in dataclasses.fields(TrainConfig)}[key]
    return f.metadata["cli"].flag_of(key)


def parse_args(argv: list[str], parser: argparse.ArgumentParser | None = None) -> ParsedArgs:
    """Parse ``argv`` (exits with status 2 on bad input, like argparse).

    :param argv: command-line arguments
    :param parser: the parser (default :func:`build_parser`)
    """
    parser = parser or build_parser()
    given = vars(parser.parse_args(argv))
    config_file = given.pop("config_file", None)
    pairs = given.pop("set_pairs", None) or []
    for key in sorted(set(given) & set(option_keys()) - SHOWN):
        warnings.warn(
            f"{_flag(key)} is no longer listed by --help and will be removed in a future "
            f"version; use --set {set_text(key, given[key])} (or a --config file)",
            FutureWarning,
            stacklevel=2,
        )
    try:
        from_file = read_config_file(config_file) if config_file is not None else {}
        from_set: dict[str, Any] = {}
        for pair in pairs:
            key, value = parse_set(pair)
            if key in given:
                raise ConfigError(f"--set {key}: also given as {_flag(key)}; give one")
            from_set[key] = value
    except ConfigError as exc:
        parser.error(str(exc))
    given = {**from_file, **given, **from_set}
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
