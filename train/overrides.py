"""Options beyond ``--help``: a config file (``--config FILE``) and ``--set KEY=VALUE``.

``python train/ppo.py --help`` shows the options most runs need (:data:`train.cli.SHOWN`);
every other field of :class:`~train.config.TrainConfig` is set by its name, from a file

.. code-block:: toml

    # fast.toml: TOML (stdlib), JSON (a run's config.json too) or YAML (with PyYAML)
    preset = "fast"
    anchor_kl = 0.1
    kernel_arch = [32, 16, 8]

or one at a time, ``--set anchor_kl=0.1 --set kernel_arch=32,16,8``. A value is converted
and checked by the same parser as its command-line flag, so a file, ``--set`` and the flag
accept the same values; an unknown key names the nearest valid one. The resolved config of
every run, whatever set it, is its ``config.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from train.config import LEGACY_KEYS, NON_OPTION_KEYS, ConfigError, TrainConfig
from train.options import Option

__all__ = [
    "FALSE_WORDS",
    "TRUE_WORDS",
    "expand_config_argv",
    "option_keys",
    "parse_set",
    "read_config_file",
    "set_text",
    "value_from_text",
]

TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def _options() -> dict[str, tuple[dataclasses.Field[Any], Option]]:
    out = {}
    for f in dataclasses.fields(TrainConfig):
        opt = f.metadata.get("cli")
        if opt is not None:
            out[f.name] = (f, opt)
    return out


def option_keys() -> list[str]:
    """Every key ``--set`` and a config file accept (the :class:`TrainConfig` fields that
    are options), sorted."""
    return sorted(_options())


def _key(name: str, where: str) -> str:
    key = LEGACY_KEYS.get(name.strip().replace("-", "_"), name.strip().replace("-", "_"))
    if key in _options():
        return key
    near = difflib.get_close_matches(key, option_keys(), n=1, cutoff=0.5)
    hint = f" (did you mean {near[0]}?)" if near else ""
    raise ConfigError(
        f"{where}: unknown option {name!r}{hint}; valid keys: {', '.join(option_keys())}"
    )


def value_from_text(key: str, text: str, where: str = "--set") -> Any:
    """The value of option ``key`` written as ``text``, converted and checked like its flag.

    :param key: a :class:`TrainConfig` field name (see :func:`option_keys`)
    :param text: the value as written on the command line
    :param where: what to name in an error (``--set``, the config file)
    :raises ConfigError: an invalid value
    """
    f, opt = _options()[key]
    if isinstance(f.default, bool):
        word = text.strip().lower()
        if word not in TRUE_WORDS + FALSE_WORDS:
            raise ConfigError(f"{where} {key}: expected true or false, got {text!r}")
        return word in TRUE_WORDS
    value: Any = text
    if opt.parse is not None:
        try:
            value = opt.parse(text)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            detail = (
                str(exc)
                if isinstance(exc, argparse.ArgumentTypeError)
                else f"invalid value {text!r}"
            )
            raise ConfigError(f"{where} {key}: {detail}") from None
    choices = opt.choice_list()
    if choices is not None and value not in choices:
        raise ConfigError(f"{where} {key}: expected one of {', '.join(choices)}, got {text!r}")
    return value


def parse_set(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set`` -> ``(field name, typed value)``.

    :param text: the argument of one ``--set`` (``anchor_kl=0.1``; dashes in the key are
        read as underscores)
    :raises ConfigError: no ``=``, an unknown key (naming the nearest) or an invalid value
    """
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"--set: expected KEY=VALUE (e.g. anchor_kl=0.1), got {text!r}")
    key = _key(name, "--set")
    return key, value_from_text(key, value)


def _file_value(key: str, value: Any, where: str) -> Any:
    f, _ = _options()[key]
    if value is None:
        if f.default is None:
            return None
        value = "none"
    if isinstance(f.default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or isinstance(value, dict):
        raise ConfigError(f"{where}: {key} expected a value like its flag's, got {value!r}")
    text = ",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
    return value_from_text(key, text, where=f"{where}:")


def _load(path: Path) -> Any:
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        return tomllib.loads(text)
    if suffix == ".json":
        return json.loads(text)
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ModuleNotFoundError:
            raise ConfigError(
                f"--config {path}: reading YAML needs PyYAML (pip install pyyaml); "
                "or write the file as TOML"
            ) from None
        return yaml.safe_load(text)
    raise ConfigError(f"--config {path}: expected a .toml, .json, .yaml or .yml file")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The options of a config file (TOML, JSON or YAML, by the suffix), typed and checked.

    Keys are :class:`TrainConfig` field names (dashes read as underscores). A run's
    ``config.json`` is a valid file: its resolved-rollout keys and ``eval_split`` are
    skipped.

    :param path: the file
    :raises ConfigError: a missing or unreadable file, not a table of options, an unknown
        key (naming the nearest) or an invalid value
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config {path}: no such file")
    try:
        data = _load(p)
    except ConfigError:
        raise
    except Exception as exc:  # the parsers' own errors carry the line
        raise ConfigError(f"--config {path}: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a table of options (key = value)")
    out: dict[str, Any] = {}
    for name, value in data.items():
        if name in NON_OPTION_KEYS or name == "eval_split":
            continue
        key = _key(str(name), f"--config {path}")
        out[key] = _file_value(key, value, f"--config {path}")
    return out


def set_text(key: str, value: Any) -> str:
    """``KEY=VALUE`` of ``--set`` that gives option ``key`` the (typed) ``value``.

    :param key: a :class:`TrainConfig` field name
    :param value: its value
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "none"
    elif isinstance(value, (list, tuple)):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    return f"{key}={text}"


def expand_config_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``--config FILE`` replaced by the file's ``--set`` pairs, so
    that the command recorded with a run repeats it without the file.

    :param argv: command-line arguments (a file that cannot be read is left as given)
    """
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        arg = items[i]
        path = None
        if arg == "--config" and i + 1 < len(items):
            path, i = items[i + 1], i + 2
        elif arg.startswith("--config="):
            path, i = arg.partition("=")[2], i + 1
        else:
            out.append(arg)
            i += 1
            continue
        try:
            options = read_config_file(path)
        except (ConfigError, OSError):
            out += ["--config", path]
            continue
        for key, value in options.items():
            out += ["--set", set_text(key, value)]
    return out
