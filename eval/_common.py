"""Shared command-line pieces of the ``eval/`` scripts."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpcgym.argtypes import nonneg_int, positive_int
from hpcgym.cli.errors import (
    TRACE_LENIENT_HELP,
    Parser,
    refuse_window_conflicts,
    run_command,
    writable_dir,
)

#: Default windows of a claim (docs/evaluation.md: ``--windows 10`` is the paper's protocol).
DEFAULT_WINDOWS = 30
#: Default jobs per window (the paper's).
DEFAULT_LENGTH = 1024
#: Default sampler seed of the windows.
DEFAULT_SEED = 1


#: Default of options whose absence matters (``None`` is a valid value of ``--seed``).
_UNSET: Any = object()


def make_parser(prog: str, description: str, epilog: str | None = None) -> Parser:
    """The parser of an ``eval/`` script: its errors are one line and exit status 2
    (:class:`hpcgym.cli.errors.Parser`).

    :param prog: ``python eval/<name>.py``
    :param description: the first paragraph of the help
    :param epilog: text after the options
    """
    return Parser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def run(parser: argparse.ArgumentParser, body: Callable[[], int | None]) -> int:
    """Run a script's body; user errors become one line on stderr and exit status 2
    (:func:`hpcgym.cli.errors.run_command`).

    :param parser: the script's parser (its ``prog`` starts the error line)
    :param body: the script (returns its exit status)
    """
    return run_command(parser.prog, body)


def add_lenient_arg(p: argparse.ArgumentParser) -> None:
    """``--lenient``: skip (and count) malformed SWF lines (every script reading a trace).

    :param p: the parser
    """
    p.add_argument("--lenient", action="store_true", help=TRACE_LENIENT_HELP)


def check_outputs(**flags: str | None) -> None:
    """Every output folder must be writable before anything runs (``out="results/x"``
    checks ``--out``; underscores become dashes).

    :param flags: option name (without dashes) -> folder (``None``: not given)
    :raises UsageError: naming the option and the folder
    """
    for name, path in flags.items():
        writable_dir(path, "--" + name.replace("_", "-"))


def write_or_print(text: str, out: str | None) -> None:
    """A script's Markdown: into ``out`` (ending with a newline; says so) or on stdout.

    :param text: the Markdown
    :param out: the ``--out`` file (``None``: print)
    """
    if out:
        Path(out).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        print(f"wrote {out}")
    else:
        print(text.rstrip("\n"))


def cards_markdown_main(
    prog: str,
    doc: str | None,
    render: Callable[[list[dict[str, Any]]], str],
    argv: list[str] | None,
) -> int:
    """The command line of a script that renders the shipped agents' cards as Markdown
    (``--agents DIR``, ``--out FILE``); returns the exit code (2 on user errors).

    :param prog: the script's name in usage lines
    :param doc: the script's docstring (its first paragraph is the description)
    :param render: model card dicts -> Markdown
    :param argv: the arguments (default: the process's)
    """
    p = make_parser(prog, (doc or "").split("\n\n")[0])
    p.add_argument(
        "--agents", default=None, help="folder of model cards (default agents/pretrained)"
    )
    p.add_argument("--out", default=None, help="Markdown file (default: print)")
    args = p.parse_args(argv)

    def body() -> int:
        from hpcgym.cli.errors import writable_file
        from hpcgym.evaluation import find_model_cards

        writable_file(args.out, "--out")
        cards = [card.to_dict() for card in find_model_cards(agents_dir(args.agents))]
        write_or_print(render(cards), args.out)
        return 0

    return run(p, body)


def open_unit(text: str) -> float:
    """``--train-fraction``: a number strictly between 0 and 1."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(
            f"expected a number strictly between 0 and 1, got {text!r}"
        )
    return v


def agent_loader() -> Any:
    """The agents package's loader (``hpcgym_agents.load_agent``), handed to
    :mod:`hpcgym.evaluation` (which never imports the agents package itself)."""
    from hpcgym_agents import load_agent

    return load_agent


def policy_class() -> str:
    """The import path of the agents' policy class (written into model cards)."""
    return "hpcgym_agents.kernel_policy.KernelPolicy"


def agents_dir(given: str | None) -> Path:
    """``--agents-dir``, or the shipped agents' folder of the agents package."""
    if given is not None:
        return Path(given)
    from hpcgym_agents import pretrained_dir

    return pretrained_dir()


def seed_or_none(text: str) -> int | None:
    if text.lower() in ("none", "even", "evenly"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer seed or 'none' (evenly spaced windows), got {text!r}"
        ) from None


def add_window_args(p: argparse.ArgumentParser, full_trace: bool = True) -> None:
    """``--windows --length --split --seed --train-fraction --prefix`` (+ ``--starts``,
    ``--full-trace``); call :func:`resolve_windows` after parsing.

    :param p: the parser
    :param full_trace: also add ``--starts`` and ``--full-trace``
    """
    from hpcgym.workload import SPLITS

    g = p.add_argument_group("windows (the same for every method)")
    g.add_argument(
        "--windows",
        type=positive_int,
        default=None,
        help=f"number of windows ({DEFAULT_WINDOWS}; 10 = the paper's protocol)",
    )
    g.add_argument(
        "--length", type=positive_int, default=None, help=f"jobs per window ({DEFAULT_LENGTH})"
    )
    g.add_argument("--split", default=None, choices=SPLITS, help="time split (test)")
    g.add_argument(
        "--seed",
        type=seed_or_none,
        default=_UNSET,
        help=f"seed of the window sampler ({DEFAULT_SEED}); 'none' = evenly spaced windows",
    )
    g.add_argument(
        "--train-fraction", type=open_unit, default=0.7, help="share of the training split (0.7)"
    )
    g.add_argument(
        "--prefix",
        type=positive_int,
        default=None,
        help="use only the first N jobs of each trace (the paper used the first 10000)",
    )
    if full_trace:
        g.add_argument(
            "--starts", type=nonneg_int, nargs="+", help="explicit window starts (replay)"
        )
        g.add_argument(
            "--full-trace",
            action="store_true",
            help="one window: the whole --split range (--split all: the whole trace)",
        )


def resolve_windows(args: argparse.Namespace) -> None:
    """Refuse window options that the chosen way ignores (``--starts`` with
    ``--windows``/``--seed``/``--split``; ``--full-trace`` with ``--starts``/``--windows``/
    ``--seed``/``--length``), then fill in the defaults.

    :param args: the parsed arguments (changed in place)
    :raises UsageError: a conflicting combination
    """
    refuse_window_conflicts(
        starts=bool(getattr(args, "starts", None)),
        full_trace=bool(getattr(args, "full_trace", False)),
        windows=args.windows is not None,
        seed=args.seed is not _UNSET,
        split=args.split is not None,
        length=args.length is not None,
    )
    args.windows = DEFAULT_WINDOWS if args.windows is None else args.windows
    args.length = DEFAULT_LENGTH if args.length is None else args.length
    args.split = "test" if args.split is None else args.split
    args.seed = DEFAULT_SEED if args.seed is _UNSET else args.seed


def add_reference_arg(p: argparse.ArgumentParser) -> None:
    """``--reference`` (default EASY-SJBF): the scheduler of the paired statistics;
    ``none`` turns them off. ``--normalizer`` is a hidden old name."""
    p.add_argument(
        "--reference",
        type=_reference,
        default="EASY-SJBF",
        help="scheduler of the paired ratio, its 95%% bootstrap interval and the wins "
        "(EASY-SJBF); 'none': no statistics",
    )
    p.add_argument("--normalizer", dest="reference", type=_reference, help=argparse.SUPPRESS)


def add_choice_args(p: argparse.ArgumentParser, seed: int, reference_of: str) -> None:
    """The arguments of a choice made on validation windows (``eval/select_checkpoint.py``,
    ``eval/gate.py``): ``--windows --length --seed --reference --workload``.

    :param seed: the default window seed
    :param reference_of: whose reward reference is the default (``run``, ``card``)
    """
    p.add_argument("--windows", type=positive_int, default=30, help="validation windows (30)")
    p.add_argument("--length", type=positive_int, default=1024, help="jobs per window (1024)")
    p.add_argument("--seed", type=int, default=seed, help=f"window seed ({seed})")
    p.add_argument(
        "--reference",
        default=None,
        help=f"scheduler of the ratio (default: the {reference_of}'s reference)",
    )
    p.add_argument(
        "--workload",
        default=None,
        metavar="SPEC",
        help="choose on windows of this generated workload (synthetic:KEY=VALUE,...) instead "
        "of the validation split: more, independent windows of the model a synthetic trace "
        "was drawn from (docs/evaluation.md)",
    )


def _reference(text: str) -> str | None:
    return None if text.lower() == "none" else text


def add_run_args(p: argparse.ArgumentParser) -> None:
    """``--jobs --no-progress --no-plots --tb-dir --tb-step``."""
    from hpcgym.evaluation import default_jobs

    g = p.add_argument_group("execution and outputs")
    g.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help=f"worker processes (default: all cores = {default_jobs()}); 1 = no pool",
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    g.add_argument("--no-plots", dest="plots", action="store_false", help="no PNG figures")
    g.add_argument(
        "--tb-dir",
        default=None,
        help="also write the scalars as TensorBoard events here (e.g. runs/<name>)",
    )
    g.add_argument(
        "--tb-step",
        type=nonneg_int,
        default=None,
        help="TensorBoard step of the scalars (default: the model's training steps, else 0)",
    )


# -- --backend / --address (the ray-backend helper's addition; see docs/scaling.md)
def add_backend_args(p: argparse.ArgumentParser) -> None:
    """``--backend {local,ray}`` and ``--address`` (where the evaluation tasks run).

    :param p: the parser
    """
    g = p.add_argument_group("backend (docs/scaling.md)")
    g.add_argument(
        "--backend",
        default="local",
        choices=("local", "ray"),
        help="local: a process pool on this machine (default); ray: Ray tasks, on an "
        'embedded local Ray or the cluster of --address (pip install -e ".[ray]"); '
        "the results are identical",
    )
    g.add_argument(
        "--address",
        default=None,
        help="with --backend ray: the Ray cluster to join (HOST:PORT printed by 'ray start "
        "--head', 'auto', or ray://HOST:10001); default: an embedded local Ray with --jobs CPUs",
    )


def start_backend(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Start or join Ray for ``--backend ray`` (nothing for ``local``); a missing Ray or an
    unreachable cluster ends like an argparse error (one line, exit status 2).

    :param args: the parsed arguments (``backend``, ``address``, ``jobs``)
    :param parser: the parser reporting errors
    """
    if args.backend != "ray":
        if args.address is not None:
            parser.error("--address needs --backend ray")
        return
    from hpcgym.evaluation.ray_backend import RayUnavailable, init_ray

    try:
        init_ray(args.address, num_cpus=args.jobs)
    except RayUnavailable as exc:
        parser.error(f"--backend ray: {exc}")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        parser.error(f"--address {args.address}: cannot join the Ray cluster ({exc})")
