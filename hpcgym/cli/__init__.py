"""Command-line interface: ``hpcgym <command> ...`` (also ``python -m hpcgym``).

Every ``hpcgym`` command lives here, one module each, adding itself through an
``add_parser(subparsers)`` function: ``traces`` (:mod:`.traces`), ``simulate``
(:mod:`.simulate`), ``compare`` (:mod:`.compare`) and ``heuristics`` (:mod:`.heuristics`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hpcgym.cli.errors import Parser, run_command

__all__ = ["build_parser", "main"]


def build_parser() -> Parser:
    """The ``hpcgym`` parser with every sub-command."""
    from hpcgym import __version__
    from hpcgym.cli import compare, heuristics, simulate, slurm, traces

    parser = Parser(
        prog="hpcgym",
        description="HPC batch scheduling simulator, trace registry and RL backfilling env.",
    )
    parser.add_argument("--version", action="version", version=f"hpcgym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    traces.add_parser(sub)
    simulate.add_parser(sub)
    compare.add_parser(sub)
    heuristics.add_parser(sub)
    slurm.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hpcgym`` with ``argv`` (default: the process's arguments).

    :param argv: the arguments after the program name
    :return: the exit code (2 on user errors, with one line on stderr: see
        :mod:`hpcgym.cli.errors`)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run_command(f"hpcgym {args.command}", lambda: args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
