"""User errors of every command line (``hpcgym ...`` and ``eval/*.py``): one line on
stderr and exit status 2, never a traceback, never a silent ignore.

* :class:`Parser` — an :class:`argparse.ArgumentParser` whose errors are one line
  (``prog: error: message (see --help)``) instead of the usage block plus the message;
* :class:`UsageError` — raised by a command for a bad combination or value that argparse
  cannot see (window bounds, conflicting options, unwritable outputs);
* :func:`run_command` — runs a command's body and turns user errors (``UsageError``,
  ``ValueError``, ``KeyError``, ``IndexError``, ``FileNotFoundError``, ``OSError``) into the
  one line and status 2;
* checks shared by the commands: :func:`writable_dir`, :func:`refuse_together`,
  :func:`check_schedulers`, :func:`check_trace_name`, :data:`TRACE_LENIENT_HELP`.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from hpcgym.suggest import did_you_mean

__all__ = [
    "EXIT_USAGE",
    "TRACE_LENIENT_HELP",
    "Parser",
    "UsageError",
    "check_choice",
    "check_schedulers",
    "check_trace_name",
    "fail",
    "one_line",
    "refuse_together",
    "refuse_window_conflicts",
    "run_command",
    "writable_dir",
    "writable_file",
]

#: Exit status of every user error (argparse's convention).
EXIT_USAGE = 2

#: Help of ``--lenient`` (every command that reads a trace has it).
TRACE_LENIENT_HELP = "skip (and count) malformed job lines of an SWF trace instead of failing"


class UsageError(ValueError):
    """A bad command line that argparse cannot detect; its message is the one line shown."""


def one_line(message: str) -> str:
    """``message`` on one line (newlines and runs of blanks become one space).

    :param message: any error text
    """
    return " ".join(str(message).split())


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are ONE line on stderr and exit status 2.

    argparse prints the whole usage block before ``error: ...``; here the usage is only a
    hint (``see --help``). Sub-parsers made with ``add_subparsers`` are of this class too.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``prog: error: message (see prog --help)`` and exit with status 2.

        :param message: what is wrong (argparse's ``invalid choice: 'x' (choose from ...)``
            gets the nearest choice: ``did you mean``)
        """
        fail(self.prog, f"{_suggest_choice(message)} (see {self.prog} --help)")


_INVALID_CHOICE = re.compile(
    r"invalid choice: '?(?P<value>[^']*?)'? \(choose from (?P<choices>.*)\)"
)


def _suggest_choice(message: str) -> str:
    """argparse's invalid-choice message with the nearest valid choice after the value."""
    m = _INVALID_CHOICE.search(message)
    if m is None:
        return message
    choices = [c.strip().strip("'\"") for c in m["choices"].split(",")]
    hint = did_you_mean(m["value"], choices)
    if not hint:
        return message
    cut = message.rindex(" (choose from ", 0, m.end())
    return f"{message[:cut]}{hint}{message[cut:]}"


def fail(prog: str, message: str) -> NoReturn:
    """Print ``prog: error: message`` as one line on stderr and exit with status 2.

    :param prog: the command's name (``hpcgym simulate``, ``python eval/compare.py``)
    :param message: what is wrong
    """
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    sys.stderr.flush()
    raise SystemExit(EXIT_USAGE)


#: Exceptions that are the user's input, not a bug: shown as one line.
USER_ERRORS: tuple[type[BaseException], ...] = (
    UsageError,
    ValueError,
    KeyError,
    IndexError,
    FileNotFoundError,
    NotADirectoryError,
    PermissionError,
    IsADirectoryError,
)


def _message(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def run_command(prog: str, body: Callable[[], int | None]) -> int:
    """Run ``body``; a user error becomes one line on stderr and status 2.

    A broken pipe on stdout (``| head``) is not an error (status 0).

    :param prog: the command's name, first word of the error line
    :param body: the command (returns its exit status)
    :return: the exit status
    """
    try:
        return int(body() or 0)
    except BrokenPipeError:  # output piped into e.g. `head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except USER_ERRORS as exc:
        sys.stderr.write(f"{prog}: error: {one_line(_message(exc))}\n")
        return EXIT_USAGE
    except OSError as exc:  # e.g. disk full, read-only file system while writing outputs
        if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EACCES, errno.ENOTDIR, errno.EEXIST):
            sys.stderr.write(f"{prog}: error: {one_line(_message(exc))}\n")
            return EXIT_USAGE
        raise


def writable_dir(path: str | os.PathLike[str] | None, flag: str) -> Path | None:
    """Check, before any long computation, that ``path`` is (or can become) a writable
    folder; creates it.

    :param path: the output folder (``None``: nothing to check)
    :param flag: the option that gave it (``--out``), named in the error
    :raises UsageError: naming the option, the path and why
    """
    if path is None:
        return None
    why = _unwritable(Path(path))
    if why:
        raise UsageError(f"{flag} {path}: cannot write there ({why})")
    return Path(path)


def _unwritable(p: Path) -> str | None:
    """Why the folder ``p`` cannot be created or written (``None``: it can; created)."""
    for anc in (p, *p.parents):
        if anc.exists():
            if not anc.is_dir():
                return f"{anc} is not a folder"
            break
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=p, prefix=".hpcgym-write-test-"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def writable_file(path: str | os.PathLike[str] | None, flag: str) -> Path | None:
    """Check that the folder of the output file ``path`` is writable (see
    :func:`writable_dir`) and that ``path`` is not a folder.

    :param path: the output file (``None``: nothing to check)
    :param flag: the option that gave it, named in the error
    :raises UsageError: naming the option, the path and why
    """
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{flag} {path}: is a folder, expected a file name")
    why = _unwritable(p.parent)
    if why:
        raise UsageError(f"{flag} {path}: cannot write there ({why})")
    return p


def refuse_together(given: dict[str, bool], why: str = "") -> None:
    """Refuse options that exclude each other (a silent ignore is never an answer).

    :param given: option name -> whether it was given, the first is the deciding one
    :param why: explanation appended to the message
    :raises UsageError: the first option was given together with any other
    """
    names = list(given)
    if not given[names[0]]:
        return
    clash = [n for n in names[1:] if given[n]]
    if clash:
        raise UsageError(
            f"{names[0]} cannot be combined with {', '.join(clash)}" + (f": {why}" if why else "")
        )


def refuse_window_conflicts(
    *, starts: bool, full_trace: bool, windows: bool, seed: bool, split: bool, length: bool
) -> None:
    """Refuse window options that the chosen way of choosing windows would ignore:
    ``--starts`` with ``--windows``/``--seed``/``--split``; ``--full-trace`` with
    ``--starts``/``--windows``/``--seed``/``--length``. Each argument says whether that
    option was given.

    :raises UsageError: the first conflicting combination
    """
    sampling = {"--windows": windows, "--seed": seed}
    refuse_together(
        {"--full-trace": full_trace, "--starts": starts, "--length": length, **sampling},
        "--full-trace is one window covering the --split range",
    )
    refuse_together(
        {"--starts": starts, **sampling, "--split": split},
        "--starts gives the windows (their length is --length)",
    )


def check_schedulers(names: Iterable[str], flag: str) -> None:
    """Every name must be a scheduler spec of :func:`hpcgym.sim.get_scheduler`.

    :param names: scheduler names / specs
    :param flag: the option that gave them, named in the error
    :raises UsageError: the first unknown one, with the valid names
    """
    from hpcgym.sim.schedulers import get_scheduler

    for n in names:
        try:
            get_scheduler(n)
        except (KeyError, ValueError) as exc:
            raise UsageError(f"{flag} {n}: {_message(exc)}") from None


def check_choice(value: str, valid: Sequence[str], flag: str, what: str) -> str:
    """``value`` if it is one of ``valid`` (case-insensitively: the valid spelling).

    :param value: the given value
    :param valid: the valid values
    :param flag: the option, named in the error
    :param what: what the values are (``policy``)
    :raises UsageError: listing the valid values
    """
    for v in valid:
        if v.lower() == value.lower():
            return v
    hint = did_you_mean(value, valid)
    raise UsageError(f"{flag} {value}: unknown {what}{hint}; valid: {', '.join(valid)}")


def check_trace_name(name: str | None, flag: str = "--trace") -> None:
    """A trace must be ``synthetic``, a generated workload ``synthetic:KEY=VALUE,...``
    (generated here, so that a bad key fails now), an existing file or a registered name
    (a registered trace that is missing locally is fine here: it may be downloaded or
    noted later).

    :param name: the given trace
    :param flag: the option, named in the error
    :raises UsageError: with the registered names, or what is wrong with a generated
        workload's arguments
    """
    if name is None or name.strip().lower() == "synthetic" or Path(name).expanduser().is_file():
        return
    from hpcgym.workload.traces import get_trace, load, synthetic_params

    try:
        if synthetic_params(name) is not None:
            load(name)  # cached: the run that follows loads it for free
            return
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{flag} {name}: {_message(exc)}") from None

    try:
        get_trace(name)
    except (KeyError, ValueError) as exc:
        raise UsageError(f"{flag} {name}: {_message(exc)}") from None
