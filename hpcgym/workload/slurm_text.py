"""Slurm's text forms: durations (time limits, ``Elapsed``), memory sizes, TRES strings and
local times in a given zone. The one parser of each: used by :mod:`hpcgym.workload.sacct`
and by the Slurm harness and bridge (:mod:`hpcgym.slurm`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone, tzinfo

__all__ = [
    "NO_LIMIT",
    "parse_duration",
    "parse_limit",
    "parse_memory_mb",
    "tres_value",
    "tres_gpus",
    "cached_duration",
    "cached_memory_mb",
    "time_parser",
]

_NO_TIME = {"", "UNKNOWN", "NONE", "N/A", "(NULL)", "0"}  # 0: unset with SLURM_TIME_FORMAT=%s
#: The words Slurm writes for "no time limit" (upper case; empty: none given).
NO_LIMIT = frozenset({"UNLIMITED", "PARTITION_LIMIT", "INFINITE", "NONE", "NOT_SET", "N/A", ""})
_DUR_RE = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+(?:\.\d*)?))?")
_MEM_RE = re.compile(r"(\d+(?:\.\d*)?)([KMGTP]?)([cn]?)", re.IGNORECASE)
_MEM_UNIT = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_OFFSET_RE = re.compile(r"(?:UTC)?([+-])(\d{1,2})(?::?(\d{2}))?")


def parse_duration(text: str) -> float:
    """Seconds of a Slurm duration: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS`` (time limits, ``Elapsed``; jobcomp's ``TimeLimit`` is ``MM``).

    :param text: the duration
    :raises ValueError: any other form
    """
    m = _DUR_RE.fullmatch(text.strip())
    if m is None:
        raise ValueError(
            f"not a Slurm duration: {text!r} (valid: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
            "D-HH:MM:SS)"
        )
    days, a, b, c = m.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        return int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + float(c or 0)
    if c is not None:  # HH:MM:SS
        return int(a) * 3600 + int(b) * 60 + float(c)
    return int(a) * 60 + int(b or 0)  # MM or MM:SS


def parse_limit(text: str) -> float | None:
    """Seconds of a Slurm time limit (:func:`parse_duration`'s forms); ``None`` for no limit
    (:data:`NO_LIMIT`: ``UNLIMITED``, ``Partition_Limit``, ``INFINITE``, ``NOT_SET`` ...).

    :param text: the limit (``sacct`` ``Timelimit``, jobcomp ``TimeLimit``, ``squeue %l``)
    :raises ValueError: any other form
    """
    t = text.strip()
    return None if t.upper() in NO_LIMIT else parse_duration(t)


def parse_memory_mb(text: str, cpus: int = 0, nodes: int = 0) -> float:
    """MiB of a Slurm memory size (``4000M``, ``2G``, ``512K``; no unit: MiB) for the whole
    job; the old ``ReqMem`` suffixes ``c`` (per CPU) and ``n`` (per node) multiply by
    ``cpus`` and ``nodes`` (``nan`` when that count is unknown). Empty: ``nan``.

    :raises ValueError: not a memory size
    """
    t = text.strip()
    if not t:
        return float("nan")
    m = _MEM_RE.fullmatch(t)
    if m is None:
        raise ValueError(f"not a memory size: {text!r} (e.g. 4000M, 2G, 100Mc)")
    mb = float(m.group(1)) * _MEM_UNIT[m.group(2).upper()]
    per = m.group(3).lower()
    if per:
        count = cpus if per == "c" else nodes
        return mb * count if count > 0 else float("nan")
    return mb


def _tres(text: str) -> dict[str, str]:
    """``billing=4,cpu=4,gres/gpu=2,mem=500M,node=1`` as a dict."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if eq:
            out[key.strip()] = value.strip()
    return out


def tres_value(text: str, key: str) -> str:
    """The value of ``key`` in a TRES string (``""``: absent)."""
    if key not in text:
        return ""
    return _tres(text).get(key, "")


def tres_gpus(text: str) -> int | None:
    """GPUs of a TRES string: ``gres/gpu``, else the sum of the typed ``gres/gpu:TYPE``."""
    if "gres/gpu" not in text:
        return None
    tres = _tres(text)
    if "gres/gpu" in tres:
        return int(tres["gres/gpu"])
    typed = [int(v) for k, v in tres.items() if k.startswith("gres/gpu:")]
    return sum(typed) if typed else None


@functools.lru_cache(maxsize=65536)
def cached_duration(text: str) -> float:
    """:func:`parse_duration`, remembered (exports repeat the same limits)."""
    return parse_duration(text)


@functools.lru_cache(maxsize=4096)
def cached_memory_mb(text: str, cpus: int, nodes: int) -> float:
    """:func:`parse_memory_mb`, remembered."""
    return parse_memory_mb(text, cpus, nodes)


def _zone(tz: str) -> tzinfo | None:
    """The zone of ``tz`` (``None``: this machine's local zone)."""
    t = tz.strip()
    if t.lower() == "local":
        return None
    if t.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    m = _OFFSET_RE.fullmatch(t)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0)))
    try:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    except ImportError:  # pragma: no cover - Python >= 3.9 has zoneinfo
        raise ValueError(f"tz={tz!r}: no zoneinfo; use UTC or an offset like +02:00") from None
    try:
        return ZoneInfo(t)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"tz={tz!r}: unknown time zone; valid: UTC, local, an offset like +02:00 or "
            "-0500, or an IANA name like Europe/Berlin"
        ) from None


def time_parser(tz: str) -> Callable[[str], float | None]:
    """A parser of Slurm time stamps for zone ``tz`` (see ``_zone``: ``UTC``, ``local``, an
    offset, an IANA name): epoch seconds of a local time (``2026-03-01T14:05:09``; one
    with an offset is read as such) or of an integer (``SLURM_TIME_FORMAT=%s``); ``None``
    for ``Unknown``, ``None``, ``N/A``, empty or ``0``. The parser raises ``ValueError``
    on anything else."""
    zone = _zone(tz)
    cache: dict[str, float | None] = {}

    def parse(text: str) -> float | None:
        hit = cache.get(text)
        if hit is not None or text in cache:
            return hit
        if len(cache) > 65536:  # jobs of one period share their times; keep memory flat
            cache.clear()
        t = text.strip()
        if t.upper() in _NO_TIME:
            value = None
        elif t.lstrip("-").isdigit():  # epoch seconds (SLURM_TIME_FORMAT=%s)
            value = float(t)
        else:
            try:
                dt = datetime.fromisoformat(t)
            except ValueError:
                raise ValueError(f"not a time: {text!r} (expected YYYY-MM-DDTHH:MM:SS)") from None
            if dt.tzinfo is None:
                dt = dt if zone is None else dt.replace(tzinfo=zone)
            value = dt.timestamp()
        cache[text] = value
        return value

    return parse
