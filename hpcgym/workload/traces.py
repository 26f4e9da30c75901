"""Trace resolution and downloads, and :func:`load`, the one loader (the registry of
traces: :mod:`hpcgym.workload.trace_registry`, re-exported here).

A registered trace (:class:`TraceInfo`) is found, in this order, in

1. every directory of ``$HPCGYM_TRACE_DIR`` (an :data:`os.pathsep`-separated list),
2. the repository's ``traces/`` folder (source checkouts only),
3. the user cache ``$XDG_CACHE_HOME/hpcgym/traces`` (default ``~/.cache/hpcgym/traces``),

each place accepting ``<file>`` and ``<file>.gz``. If it is in none of them it is
downloaded into the user cache (progress bar, atomic write, SHA-256 check). The
SHA-256 is always that of the *uncompressed* content, so plain and gzip copies are
equivalent. Local files are verified too; a verified ``(path, size, mtime)`` is
remembered in ``<cache>/hpcgym/verified.json`` so the hash is computed once per file.

The download URL of trace ``NAME`` can be overridden with the environment variable
``HPCGYM_TRACE_URL_<NAME>`` (``NAME`` upper-cased, every non-alphanumeric character
replaced by ``_``: ``HPCGYM_TRACE_URL_SDSC_SP2``), e.g. to point at a mirror or a
``file://`` URL.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
import warnings
import zlib
from pathlib import Path
from typing import Any

from hpcgym.workload.core import COLUMNS, Workload
from hpcgym.workload.sacct import ACCOUNTING_DEFAULTS, READER_OPTIONS, read_trace_file
from hpcgym.workload.trace_registry import (
    TRACE_DIR_ENV,
    TRACE_URL_ENV_PREFIX,
    TRACES,
    TraceChecksumError,
    TraceInfo,
    TraceNotFoundError,
    UnknownTraceError,
    cache_dir,
    get_trace,
    register_trace,
    trace_candidates,
    trace_names,
    trace_search_dirs,
    trace_url,
)

__all__ = [
    "TraceInfo",
    "TRACES",
    "TraceNotFoundError",
    "TraceChecksumError",
    "UnknownTraceError",
    "get_trace",
    "trace_names",
    "register_trace",
    "trace_url",
    "trace_search_dirs",
    "cache_dir",
    "find_local",
    "resolve_trace",
    "fetch_trace",
    "sha256_uncompressed",
    "load",
    "trace_spec",
    "trace_past",
    "synthetic_params",
    "SYNTHETIC_PREFIX",
    "clear_cache",
    "TRACE_DIR_ENV",
    "TRACE_URL_ENV_PREFIX",
]


# ------------------------------------------------------------------ checksums
def sha256_uncompressed(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of the content of ``path``, decompressed if it is gzip."""
    p = Path(path)
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    try:
        opener = gzip.open if gz else open
        with opener(p, "rb") as fh:  # type: ignore[operator]
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise TraceChecksumError(f"{p}: corrupt or truncated gzip file ({exc})") from exc
    return h.hexdigest()


def _verified_db() -> Path:
    return cache_dir() / "verified.json"


def _read_db() -> dict[str, Any]:
    try:
        data = json.loads(_verified_db().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember(path: Path, digest: str) -> None:
    """Record a verified file (best effort: an unwritable cache only costs a re-hash)."""
    db = _read_db()
    st = path.stat()
    db[str(path)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    target = _verified_db()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".verified.", suffix=".json", dir=target.parent)
        with os.fdopen(fd, "w") as fh:
            json.dump(db, fh, indent=0, sort_keys=True)
        os.replace(tmp, target)
    except OSError:
        pass


def _is_verified(path: Path, sha256: str) -> bool:
    entry = _read_db().get(str(path))
    if not isinstance(entry, dict):
        return False
    st = path.stat()
    return (
        entry.get("size") == st.st_size
        and entry.get("mtime_ns") == st.st_mtime_ns
        and entry.get("sha256") == sha256
    )


def _verify(path: Path, info: TraceInfo) -> None:
    """Check the uncompressed SHA-256 of ``path`` (cached by path, size and mtime)."""
    path = path.resolve()
    if _is_verified(path, info.sha256):
        return
    digest = sha256_uncompressed(path)
    if digest != info.sha256:
        raise TraceChecksumError(
            f"{path}: checksum mismatch for trace {info.name!r}: the uncompressed SHA-256 is "
            f"{digest}, expected {info.sha256}. The file is damaged or a different version; "
            f"replace it with the file from {trace_url(info)}"
        )
    _remember(path, digest)


# ----------------------------------------------------------------- resolution
def find_local(info: TraceInfo, verify: bool = True) -> tuple[Path, str] | None:
    """First local copy of ``info`` (path and place label), or ``None``.

    :param verify: check the SHA-256 of the copy found (raises
        :class:`TraceChecksumError` on mismatch)
    """
    for path, label in trace_candidates(info):
        if path.is_file():
            if verify:
                _verify(path, info)
            return path, label
    return None


def _not_found(info: TraceInfo, url: str, reason: str) -> TraceNotFoundError:
    places = "\n".join(f"    {d}  ({label})" for d, label in trace_search_dirs())
    return TraceNotFoundError(
        f"trace {info.name!r} is not available: {reason}\n"
        f"  download URL: {url}\n"
        f"  expected file: {' or '.join(info.file_names)} "
        f"(uncompressed SHA-256 {info.sha256})\n"
        f"  searched:\n{places}\n"
        f"  Put the file in one of these directories, or set {TRACE_DIR_ENV} to the "
        f"directory that holds it (several directories: separated by {os.pathsep!r}); "
        f"to use a mirror set {info.env_var()}=URL or run "
        f"'hpcgym traces fetch {info.name} --url URL'."
    )


def resolve_trace(
    spec: str | os.PathLike[str],
    download: bool = True,
    *,
    url: str | None = None,
    verify: bool = True,
) -> Path:
    """The local file of a trace spec: an existing path, or a registered trace name.

    A registered trace is looked up in the places of :func:`trace_search_dirs`; if it
    is missing everywhere it is downloaded into the user cache (``download=True``).

    :param spec: path of an SWF file, or a registered name (case-insensitive)
    :param download: download a missing registered trace
    :param url: download URL (default: ``HPCGYM_TRACE_URL_<NAME>``, else the registry's)
    :param verify: check the SHA-256 of a registered trace's local copy
    :raises TraceNotFoundError: registered but not found and not downloadable
    :raises UnknownTraceError: neither a file nor a registered name
    :raises TraceChecksumError: a local copy or the download has the wrong content
    """
    p = Path(spec).expanduser()
    if p.is_file():
        return p
    s = str(spec)
    try:
        info = get_trace(s)
    except UnknownTraceError:
        if os.sep in s or "/" in s or s.lower().endswith((".swf", ".gz")):
            raise FileNotFoundError(
                f"no such file: {s!r} (and it is not a registered trace name; "
                f"registered: {', '.join(TRACES)})"
            ) from None
        raise
    for path, label in trace_candidates(info):
        if not path.is_file():
            continue
        if verify:
            try:
                _verify(path, info)
            except TraceChecksumError as exc:
                if label != "user cache" or not download:
                    raise
                # our own cache: a damaged download is replaced, not a user's file
                warnings.warn(f"{exc}; deleting it and downloading again", stacklevel=2)
                path.unlink(missing_ok=True)
                continue
        return path
    src = url or trace_url(info)
    if not download:
        raise _not_found(info, src, "not found locally and downloading is disabled")
    return _download(info, src, cache_dir() / "traces")


def fetch_trace(
    name: str,
    dest: str | os.PathLike[str] | None = None,
    url: str | None = None,
    force: bool = False,
) -> Path:
    """Make sure a registered trace is in ``dest`` (default: the user cache).

    An existing, verified copy in ``dest`` is kept; otherwise the trace is downloaded.

    :param name: registered trace name
    :param dest: target directory
    :param url: download URL (default: ``HPCGYM_TRACE_URL_<NAME>``, else the registry's)
    :param force: download even if ``dest`` already has a valid copy
    :return: path of the file in ``dest`` (``<file>`` or ``<file>.gz``, as downloaded)
    """
    info = get_trace(name)
    target = Path(dest).expanduser() if dest is not None else cache_dir() / "traces"
    if not force:
        for fname in info.file_names:
            p = target / fname
            if p.is_file():
                _verify(p, info)
                return p
    return _download(info, url or trace_url(info), target)


def _download(info: TraceInfo, url: str, dest: Path) -> Path:
    """Download ``url`` into ``dest`` atomically, verify it and return its path."""
    from tqdm.auto import tqdm

    from hpcgym._version import __version__

    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _not_found(info, url, f"cannot create {dest}: {exc}") from exc
    fd, tmp_name = tempfile.mkstemp(prefix=f".{info.file}.", suffix=".part", dir=dest)
    tmp = Path(tmp_name)
    try:
        req = urllib.request.Request(url, headers={"User-Agent": f"hpcgym/{__version__}"})
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(req, timeout=60) as resp:
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            with tqdm(
                total=total, unit="B", unit_scale=True, desc=f"download {info.name}",
                disable=None, leave=False,
            ) as bar:  # fmt: skip
                while chunk := resp.read(1 << 16):
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, urllib.error.HTTPError):
            reason: object = f"HTTP {exc.code} {exc.reason}"
        else:
            reason = getattr(exc, "reason", None) or exc
        raise _not_found(info, url, f"not found locally and the download failed ({reason})") from (
            exc
        )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:
        digest = sha256_uncompressed(tmp)
    except TraceChecksumError as exc:
        tmp.unlink(missing_ok=True)
        raise TraceChecksumError(f"download of {info.name!r} from {url} is corrupt: {exc}") from (
            exc
        )
    if digest != info.sha256:
        tmp.unlink(missing_ok=True)
        raise TraceChecksumError(
            f"download of trace {info.name!r} from {url} has uncompressed SHA-256 {digest}, "
            f"expected {info.sha256}; the file was deleted. Check the URL (or "
            f"{info.env_var()})."
        )
    with open(tmp, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    final = dest / (info.file + ".gz" if gz else info.file)
    os.replace(tmp, final)
    _remember(final.resolve(), digest)
    return final


# --------------------------------------------------------------------- loader
_LOAD_CACHE_SIZE = 8


def _freeze(w: Workload) -> Workload:
    """Make the columns read-only: a cached workload is shared by every caller."""
    for arr in (*(getattr(w, col) for col in COLUMNS), *w.extra.values()):
        arr.flags.writeable = False
    if w.recorded_wait is not None:
        w.recorded_wait.flags.writeable = False
    return w


@functools.lru_cache(maxsize=_LOAD_CACHE_SIZE)
def _load_file(
    path: str,
    size: int,
    mtime_ns: int,
    machine_size: int | None,
    lenient: bool,
    name: str | None,
    options: tuple[tuple[str, Any], ...] = (),
) -> Workload:
    opts = {k: dict(v) if k == "partition_limits" else v for k, v in options}
    return _freeze(read_trace_file(path, machine_size, lenient, name, **opts))


@functools.lru_cache(maxsize=_LOAD_CACHE_SIZE)
def _load_synthetic(machine_size: int | None, items: tuple[tuple[str, Any], ...]) -> Workload:
    from hpcgym.workload import lublin

    if machine_size is None and not items:
        return _freeze(lublin.default_workload())
    # the default workload's arguments, with the given ones replacing them
    kw: dict[str, Any] = {**getattr(lublin, "DEFAULT_WORKLOAD_KWARGS", {}), **dict(items)}
    if machine_size is not None:
        kw["machine_size"] = machine_size
    return _freeze(lublin.generate(**kw))


def clear_cache() -> None:
    """Forget the workloads cached by :func:`load`."""
    _load_file.cache_clear()
    _load_synthetic.cache_clear()


def trace_past(window: Workload, jobs: int | None = None) -> Workload | None:
    """The jobs of the trace before ``window`` (a window cut from a loadable trace).

    The trace is the window's :attr:`~hpcgym.workload.core.Workload.parent` (the workload
    it was cut from), else it is loaded from its
    :attr:`~hpcgym.workload.core.Workload.source` (cached, never downloaded); its job
    ``window.offset`` must be the window's first job. Used by the online lookahead (past
    arrivals) and by the estimators' warm start from the accounting log
    (:mod:`hpcgym.sim.warmstart`).

    :param window: a workload made by :meth:`~hpcgym.workload.core.Workload.window`
    :param jobs: at most this many jobs just before the window (``None``: all of them)
    :return: the past jobs, or ``None`` when there are none (a whole trace, a generated
        workload, the trace's first window, or ``jobs == 0``)
    :raises ValueError: when the trace cannot be loaded, or is not the one ``window``
        was cut from
    """
    off = int(window.offset)
    if off <= 0 or (jobs is not None and jobs <= 0):
        return None
    full = window_trace(window)
    assert full is not None
    lo = 0 if jobs is None else max(0, off - int(jobs))
    return full.window(lo, off - lo)


def window_trace(window: Workload) -> Workload | None:
    """The whole trace ``window`` was cut from (its
    :attr:`~hpcgym.workload.core.Workload.parent`, else loaded from its ``source``,
    cached, never downloaded), or ``None`` for a workload that starts at job 0.

    :raises ValueError: when the trace cannot be loaded, or is not the one ``window``
        was cut from (:func:`trace_past`)
    """
    off = int(window.offset)
    if off <= 0:
        return None
    where = window.source or window.name
    full = window.parent
    if full is None:
        try:
            opts = json.loads(window.meta.get(READER_OPTIONS, "{}"))  # Slurm accounting
            full = load(where, download=False, **opts)
        except Exception as e:  # noqa: BLE001 - reported with what was tried
            raise ValueError(
                f"cannot load the trace of window {window.name!r} (offset {off}) from "
                f"{where!r} to find the jobs before it: {e}"
            ) from e
    if len(full) < off + len(window) or (
        len(window) and float(full.submit[off]) != float(window.submit[0])
    ):
        raise ValueError(
            f"workload {window.name!r} is not a window of {where!r} at offset {off} "
            f"(the trace has {len(full)} jobs, and its job {off} is not the window's first)"
        )
    return full


def trace_spec(
    name: str | os.PathLike[str] | Workload | None,
) -> str | os.PathLike[str] | Workload | None:
    """``name`` as :func:`load`'s ``spec``: ``None`` for the names of the embedded synthetic
    workload on a command line or in a model card (``None``, ``"synthetic"``, ``"none"``,
    any case), else ``name`` unchanged.

    :param name: a trace name, a path, a workload or ``None``
    """
    if name is None or (isinstance(name, str) and name.strip().lower() in ("synthetic", "none")):
        return None
    return name


#: Prefix of a named generated workload: ``synthetic:KEY=VALUE,...`` (:func:`synthetic_params`).
SYNTHETIC_PREFIX = "synthetic:"

_WORDS = {"true": True, "false": False, "none": None}
#: Keys of generate() whose values are words (``request_model=none`` is the word "none").
_WORD_KEYS = ("request_model",)


def synthetic_params(name: object) -> dict[str, Any] | None:
    """The :func:`hpcgym.workload.lublin.generate` arguments of a named generated
    workload, ``synthetic:KEY=VALUE,...`` (any case for the prefix), or ``None`` when
    ``name`` is not such a name.

    The name makes a generated workload usable wherever a trace name is (``--trace``,
    ``--mix-traces``, model cards, ``gymnasium.make(..., trace=...)``): for example
    ``synthetic:job_types=false,request_model=none,load=1.06,seed=3,n_jobs=50000`` is a
    Lublin-1-like workload (docs/lublin.md). Values read as ``true``/``false``/``none``
    (any case; ``load=none``: the model's own arrival rate), integers, floats, else
    strings (``request_model`` is always a word); the keys are :func:`generate`'s arguments
    and are checked when the workload is generated (:func:`load`), starting from the
    default workload's arguments (``n_jobs=200000, machine_size=256, load=0.85, seed=0,
    request_model=tsafrir``); ``synthetic:n_jobs=10000`` is the 10,000-job workload of
    the same arguments (the default of versions before 1.0; smaller and faster).

    :param name: a trace name (anything else gives ``None``)
    :raises ValueError: a ``synthetic:`` name whose parts are not ``KEY=VALUE`` or that
        gives a key twice
    """
    if not isinstance(name, str) or not name.strip().lower().startswith(SYNTHETIC_PREFIX):
        return None
    body = name.strip()[len(SYNTHETIC_PREFIX) :]
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, eq, text = (x.strip() for x in part.partition("="))
        if not eq or not key.isidentifier() or not text:
            raise ValueError(
                f"{name!r}: {part!r} is not KEY=VALUE; a generated workload is named "
                "synthetic:KEY=VALUE,... (e.g. synthetic:load=1.06,seed=3,n_jobs=50000)"
            )
        if key in out:
            raise ValueError(f"{name!r}: {key} is given twice")
        out[key] = text if key in _WORD_KEYS else _value(text)
    return out


def _value(text: str) -> Any:
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def load(
    spec: str | os.PathLike[str] | Workload | None = None,
    machine_size: int | None = None,
    **kw: Any,
) -> Workload:
    """Load a workload: the one entry point used by the simulator, the env and training.

    * ``None``, ``"synthetic"`` or ``"none"`` (:func:`trace_spec`): the default
      Lublin-Feitelson workload
      (:func:`hpcgym.workload.lublin.default_workload`); with ``machine_size`` or
      keyword arguments, :func:`hpcgym.workload.lublin.generate` with the default
      workload's arguments updated by them (``load("synthetic", n_jobs=500, seed=1)``);
    * ``"synthetic:KEY=VALUE,..."`` (:func:`synthetic_params`): the same with those
      arguments (``load("synthetic:n_jobs=500,seed=1")``; keyword arguments win);
    * a :class:`~hpcgym.workload.core.Workload`: returned as is (moved to
      ``machine_size`` if given);
    * an existing file: SWF (:func:`~hpcgym.workload.swf.read_swf`) or Slurm accounting,
      a ``sacct --parsable2`` export or a jobcomp log
      (:func:`~hpcgym.workload.sacct.read_accounting`), told apart by the content;
    * a registered trace name: :func:`resolve_trace` (may download) then ``read_swf``.

    Loaded workloads are cached in-process (by resolved path, size, modification time
    and options), so loading the same trace again is free; their columns are read-only.

    :param spec: what to load
    :param machine_size: override the machine size
    :param kw: for files and traces, ``lenient`` (see ``read_swf``; accepted and
        meaningless for synthetic workloads, so that every command can pass ``--lenient``),
        ``download`` and ``url`` (see ``resolve_trace``); for Slurm accounting files also
        ``format``, ``tz``, ``partition_limits``, ``unlimited``, ``arrival`` (see
        ``read_accounting``); for synthetic workloads, ``generate``'s arguments
    """
    if isinstance(spec, Workload):
        if machine_size is not None and machine_size != spec.machine_size:
            return spec.with_machine_size(machine_size)
        return spec
    named = synthetic_params(spec)
    if named is not None:
        spec, kw = None, {**named, **kw}
    if trace_spec(spec) is None:
        kw.pop("lenient", None)  # generated, not parsed: nothing to be lenient about
        items = tuple(sorted(kw.items()))
        try:
            hash(items)
        except TypeError:  # unhashable generator arguments: not cached
            return _load_synthetic.__wrapped__(machine_size, items)
        return _load_synthetic(machine_size, items)
    lenient = bool(kw.pop("lenient", False))
    download = bool(kw.pop("download", True))
    url = kw.pop("url", None)
    acct = {k: kw.pop(k) for k in list(kw) if k in ACCOUNTING_DEFAULTS}
    if kw:
        raise TypeError(
            f"load() got unexpected keyword argument(s) {', '.join(kw)} for {spec!r}; "
            f"valid for files and traces: lenient, download, url, {', '.join(ACCOUNTING_DEFAULTS)}"
        )
    if isinstance(acct.get("partition_limits"), dict):
        acct["partition_limits"] = tuple(sorted(acct["partition_limits"].items()))
    options = tuple(sorted(acct.items()))
    assert spec is not None  # trace_spec(None) is None: generated above
    path = resolve_trace(spec, download=download, url=url)
    name = None if Path(spec).expanduser().is_file() else get_trace(str(spec)).name
    st = path.stat()
    return _load_file(
        str(path.resolve()), st.st_size, st.st_mtime_ns, machine_size, lenient, name, options
    )
