"""Command-line interface: ``hpcgym <command> ...`` (also ``python -m hpcgym``).

Every ``hpcgym`` command lives here, one module each, adding itself through an
``add_parser(subparsers)`` function: ``traces`` (:mod:`.traces`), ``simulate``
(:mod:`.simulate`) and ``compare`` (:mod:`.compare`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``hpcgym`` parser with every sub-command."""
    from hpcgym import __version__
    from hpcgym.cli import compare, simulate, traces

    parser = argparse.ArgumentParser(
        prog="hpcgym",
        description="HPC batch scheduling simulator, trace registry and RL backfilling env.",
    )
    parser.add_argument("--version", action="version", version=f"hpcgym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    traces.add_parser(sub)
    simulate.add_parser(sub)
    compare.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hpcgym`` with ``argv`` (default: the process's arguments).

    :param argv: the arguments after the program name
    :return: the exit code (2 on user errors, with one line on stderr)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into e.g. `head`: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (FileNotFoundError, ValueError, KeyError) as exc:  # user errors: one clear line
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"hpcgym {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
