"""Command-line value types and :class:`Option`, the command-line metadata of a
:class:`~train.config.TrainConfig` field (shared with :mod:`train.cli` and
:mod:`train.sweep`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hpcgym.argtypes import positive_float, positive_int

__all__ = [
    "Option",
    "auto_or_int",
    "fraction",
    "full_or_int",
    "library_names",
    "layer_widths",
    "name_weights",
    "names",
    "none_or_float",
    "none_or_name",
    "row_history_value",
]


# --------------------------------------------------------------------------- value types
def fraction(text: str) -> float:
    """A number in the open interval (0, 1) (``--train-fraction``).

    :param text: the command-line text
    """
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def auto_or_int(text: str) -> str | int:
    """``auto`` or a positive integer (``--n-steps``).

    :param text: the command-line text
    """
    return "auto" if text.lower() == "auto" else positive_int(text)


def full_or_int(text: str) -> str | int:
    """``full`` or a positive integer (``--batch-size``).

    :param text: the command-line text
    """
    return "full" if text.lower() == "full" else positive_int(text)


def none_or_float(text: str) -> float | None:
    """``none``/``off``/``0`` (no limit) or a positive number.

    :param text: the command-line text
    """
    return None if text.lower() in ("none", "off", "0") else positive_float(text)


def none_or_name(text: str) -> str | None:
    """``none`` (not set) or a name / path.

    :param text: the command-line text
    """
    return None if text.strip().lower() in ("", "none") else text.strip()


def row_history_value(text: str) -> str:
    """``log`` (the trace's whole accounting log before the window) or a number of jobs
    ``>= 0`` (``--row-history``), as text.

    :param text: the command-line text
    """
    import argparse

    value = text.strip().lower()
    if value in ("log", "all"):
        return "log"
    if value.isdigit():
        return str(int(value))
    raise argparse.ArgumentTypeError(f"expected log or a number of jobs >= 0, got {text!r}")


def library_names(module: str, attr: str, sort: bool = False) -> Callable[[], list[str]]:
    """The valid names ``module.attr`` (a mapping or sequence of the library), imported
    only when the choices are needed (``--help``, a check of a value)."""

    def names() -> list[str]:
        import importlib

        values = list(getattr(importlib.import_module(module), attr))
        return sorted(values) if sort else values

    return names


def layer_widths(text: str) -> tuple[int, ...]:
    """Comma-separated positive layer widths such as ``32,16,8``.

    :param text: the command-line text
    """
    import argparse

    try:
        arch = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated layer widths like 32,16,8, got {text!r}"
        ) from None
    if not arch or any(w <= 0 for w in arch):
        raise argparse.ArgumentTypeError(f"expected positive layer widths like 32,16,8: {text!r}")
    return arch


def name_weights(text: str) -> str | None:
    """``none`` or ``NAME=WEIGHT[,NAME=WEIGHT...]`` with finite, nonzero numbers and each
    name once (``--row-prior estimate=-50,wait=-2``); returned normalized.

    :param text: the command-line text
    """
    import argparse

    if text.strip().lower() in ("", "none"):
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, number = part.partition("=")
        try:
            weight = float(number)
        except ValueError:
            weight = math.nan
        if not sep or not name.strip() or not math.isfinite(weight) or weight == 0.0:
            raise argparse.ArgumentTypeError(
                "expected NAME=WEIGHT[,NAME=WEIGHT...] with nonzero numbers, e.g. "
                f"estimate=-50, got {text!r}"
            )
        if name.strip() in out:
            raise argparse.ArgumentTypeError(f"{name.strip()!r} given twice in {text!r}")
        out[name.strip()] = weight
    return ",".join(f"{k}={v:g}" for k, v in out.items())


def names(text: str) -> tuple[str, ...]:
    """Comma-separated names (``''``: none).

    :param text: the command-line text
    """
    return tuple(x.strip() for x in text.split(",") if x.strip())


def trace_list(text: str) -> tuple[str, ...]:
    """Comma-separated trace names (``''``: none), where a generated workload
    ``synthetic:KEY=VALUE,KEY=VALUE`` keeps its own commas: a ``KEY=VALUE`` part that
    follows a ``synthetic:`` name belongs to it.

    :param text: the command-line text
    """
    from hpcgym.workload.traces import SYNTHETIC_PREFIX

    out: list[str] = []
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        key = part.partition("=")[0].strip()
        if (
            "=" in part
            and key.isidentifier()
            and out
            and out[-1].lower().startswith(SYNTHETIC_PREFIX)
        ):
            out[-1] += f",{part}"
        else:
            out.append(part)
    return tuple(out)


# --------------------------------------------------------------------------- options
@dataclass(frozen=True)
class Option:
    """How a :class:`TrainConfig` field appears on the command line.

    :param group: help section (``workload``, ``length``, ``hyper``, ``eval``)
    :param help: help text, without the default (the parser appends it)
    :param parse: converts (and checks) the command-line text
    :param choices: the accepted values, or a function returning them (imported lazily)
    :param aliases: old flag names, accepted but hidden from ``--help``
    :param flag: the flag, when it is not ``--`` + the field name with dashes
    :param metavar: the value's name in ``--help``
    :param exclusive: fields with the same tag exclude each other on the command line
    :param show_default: append ``(default: ...)`` to the help
    """

    group: str
    help: str
    parse: Callable[[str], Any] | None = None
    choices: Sequence[str] | Callable[[], Sequence[str]] | None = None
    aliases: tuple[str, ...] = ()
    flag: str | None = None
    metavar: str | None = None
    exclusive: str | None = None
    show_default: bool = True

    def flag_of(self, name: str) -> str:
        """The flag of this option.

        :param name: the field's name
        """
        return self.flag or "--" + name.replace("_", "-")

    def choice_list(self) -> list[str] | None:
        """The accepted values (``None``: any)."""
        if self.choices is None:
            return None
        return list(self.choices() if callable(self.choices) else self.choices)
