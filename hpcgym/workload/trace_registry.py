"""The trace registry: the registered traces (:class:`TraceInfo`: name, file, source URL,
SHA-256 of the uncompressed content, machine size), registering more
(:func:`register_trace`), and the places a trace's file is looked for
(:func:`trace_search_dirs`).

:mod:`hpcgym.workload.traces` finds, verifies, downloads and loads the files, and
re-exports every public name of this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hpcgym.suggest import did_you_mean

__all__ = [
    "TRACE_DIR_ENV",
    "TRACE_URL_ENV_PREFIX",
    "TRACES",
    "TraceChecksumError",
    "TraceInfo",
    "TraceNotFoundError",
    "UnknownTraceError",
    "cache_dir",
    "get_trace",
    "register_trace",
    "trace_names",
    "trace_search_dirs",
    "trace_url",
]

#: Environment variable with extra trace directories (os.pathsep-separated).
TRACE_DIR_ENV = "HPCGYM_TRACE_DIR"
#: Prefix of the per-trace download URL override variables.
TRACE_URL_ENV_PREFIX = "HPCGYM_TRACE_URL_"

_PWA = "https://www.cs.huji.ac.il/labs/parallel/workload"
_DIRLAB = "https://raw.githubusercontent.com/DIR-LAB/deep-batch-scheduler/master/data"


@dataclass(frozen=True)
class TraceInfo:
    """A registered trace.

    :param name: short name (``"SDSC-SP2"``); look-ups are case-insensitive
    :param file: file name of the uncompressed SWF file
    :param url: download URL (may serve the file gzip-compressed)
    :param machine_size: processors (the header's ``MaxProcs``, else ``MaxNodes``)
    :param sha256: SHA-256 of the uncompressed content
    :param jobs: jobs kept by :func:`~hpcgym.workload.swf.read_swf` (after cleaning)
    :param description: one line
    """

    name: str
    file: str
    url: str
    machine_size: int
    sha256: str
    jobs: int
    description: str

    @property
    def file_names(self) -> tuple[str, ...]:
        """Accepted local file names: ``<file>`` and ``<file>.gz`` (and, for a file
        name without the ``.swf`` extension, ``<file>.swf`` and ``<file>.swf.gz``)."""
        names: tuple[str, ...] = (self.file, self.file + ".gz")
        if not self.file.lower().endswith(".swf"):
            names += (self.file + ".swf", self.file + ".swf.gz")
        return names

    def env_var(self) -> str:
        """Name of the environment variable that overrides :attr:`url`."""
        return TRACE_URL_ENV_PREFIX + re.sub(r"[^A-Z0-9]", "_", self.name.upper())


def _pwa(site: str, file: str) -> str:
    return f"{_PWA}/{site}/{file}.gz"


_REGISTRY: list[TraceInfo] = [
    TraceInfo(
        "SDSC-SP2", "SDSC-SP2-1998-4.2-cln.swf", _pwa("l_sdsc_sp2", "SDSC-SP2-1998-4.2-cln.swf"),
        128, "2bb635f4b5793f52bd49ccb8fd913d95f9c5be6346925162cadcaf0117e28cf2", 54034,
        "IBM SP2, San Diego Supercomputer Center, May 1998 - Apr 2000 (cleaned log)",
    ),
    TraceInfo(
        "HPC2N", "HPC2N-2002-2.2-cln.swf", _pwa("l_hpc2n", "HPC2N-2002-2.2-cln.swf"),
        240, "77b8993c73ae438385f6c0015708251f52dc316267b03ac19a406fbea2802afa", 202871,
        "Linux cluster Seth, HPC2N Umea (Sweden), Jul 2002 - Jan 2006 (cleaned log)",
    ),
    TraceInfo(
        "CTC-SP2", "CTC-SP2-1996-3.1-cln.swf", _pwa("l_ctc_sp2", "CTC-SP2-1996-3.1-cln.swf"),
        338, "8e33a9b597e1ddda2d2164347bac08c9444e1a2620a7947df52f0a1622ec4cde", 77205,
        "IBM SP2 batch partition, Cornell Theory Center, Jun 1996 - May 1997 (cleaned log)",
    ),
    TraceInfo(
        "KTH-SP2", "KTH-SP2-1996-2.1-cln.swf", _pwa("l_kth_sp2", "KTH-SP2-1996-2.1-cln.swf"),
        100, "fba36494c4e4257f72182e8b629ebb0bcb054b3b82851ef957445bd627adcc87", 28467,
        "IBM SP2, KTH Stockholm, Sep 1996 - Aug 1997 (cleaned log)",
    ),
    TraceInfo(
        "SDSC-BLUE", "SDSC-BLUE-2000-4.2-cln.swf",
        _pwa("l_sdsc_blue", "SDSC-BLUE-2000-4.2-cln.swf"),
        1152, "13892839f430583231a14bb811fd50a31b5b529eb37faacdbbefb71e73390e3e", 232536,
        "IBM SP Blue Horizon, San Diego Supercomputer Center, Apr 2000 - Jan 2003 (cleaned)",
    ),
    TraceInfo(
        "LANL-CM5", "LANL-CM5-1994-4.1-cln.swf", _pwa("l_lanl_cm5", "LANL-CM5-1994-4.1-cln.swf"),
        1024, "4766a62dabcc7403ec0a55534aff297203e692ddbf6637bd40100a3800f6354a", 122055,
        "Thinking Machines CM-5, Los Alamos, Oct 1994 - Sep 1996 (cleaned log)",
    ),
    TraceInfo(
        "CEA-Curie", "CEA-Curie-2011-2.1-cln.swf",
        _pwa("l_cea_curie", "CEA-Curie-2011-2.1-cln.swf"),
        93312, "b732a04aea71e2f154c8feee580be549d0bba1462bc91ec581944cb3dd6d442d", 295540,
        "Curie petascale cluster, CEA (France), Slurm, Feb - Oct 2012 (cleaned log)",
    ),
    TraceInfo(
        "Lublin-1", "lublin_256.swf", f"{_DIRLAB}/lublin_256.swf",
        256, "a394ab3d81179ebcf645a1cbd593a60b6dff7f11a510e1e6285c45f43310c962", 10000,
        "synthetic Lublin-Feitelson workload, 10,000 jobs on 256 processors (RLBackfilling)",
    ),
    TraceInfo(
        "Lublin-2", "lublin_256_new2", f"{_DIRLAB}/lublin_256_new2",
        256, "bee7e959a6b85844eafe7989d62c55ae43e096fd617cddf37423327967a1ed2d", 10000,
        "synthetic Lublin-Feitelson workload, 10,000 jobs on 256 processors, higher load",
    ),
    TraceInfo(
        "Lublin-aaroh", "lublin-aaroh.swf", f"{_DIRLAB}/lublin-aaroh.swf",
        256, "f575561c991fc4da6b212b0d76115eb38fd0d83cb6437803f6298470f684479c", 10000,
        "synthetic Lublin-Feitelson workload, 10,000 jobs on 256 processors, very light load",
    ),
    TraceInfo(
        "NASA-iPSC", "NASA-iPSC-1993-3.1-cln.swf",
        _pwa("l_nasa_ipsc", "NASA-iPSC-1993-3.1-cln.swf"),
        128, "9d997a2c20a7f7b0b6d81638d756ce8b2c524c4f2e9ec78da36001743ca33d76", 18066,
        "Intel iPSC/860 hypercube, NASA Ames, Oct - Dec 1993 (cleaned log)",
    ),
    TraceInfo(
        "SDSC-Par", "SDSC-Par-1996-3.1-cln.swf", _pwa("l_sdsc_par", "SDSC-Par-1996-3.1-cln.swf"),
        400, "fcb46fa6462b7ac460963025749f604f28b2e813101edd082a720842e80a7aa8", 32128,
        "Intel Paragon, San Diego Supercomputer Center, 1996 (cleaned log)",
    ),
    TraceInfo(
        "OSC-Clust", "OSC-Clust-2000-3.1-cln.swf", _pwa("l_osc", "OSC-Clust-2000-3.1-cln.swf"),
        178, "0ed54b81ccb10b11fbead557af8a37dd135e07e27756f1016c80ebceb7c8f79a", 35592,
        "Linux cluster, Ohio Supercomputer Center, Jan 2000 - Nov 2001 (cleaned log)",
    ),
    TraceInfo(
        "Sandia-Ross", "Sandia-Ross-2001-1.1-cln.swf",
        _pwa("l_sandia_ross", "Sandia-Ross-2001-1.1-cln.swf"),
        1524, "acee6b96aa76f815d9a6a81ee6d3e3026f462b6e0c340f9f4ef465e05b3c22b3", 55595,
        "CPlant/Ross cluster, Sandia National Laboratories, Nov 2001 - Jan 2005 (cleaned)",
    ),
    TraceInfo(
        "SDSC-DS", "SDSC-DS-2004-2.1-cln.swf", _pwa("l_sdsc_ds", "SDSC-DS-2004-2.1-cln.swf"),
        1664, "76814a412fa415e68ffb8cc0ae801c870988e5577e60275588050332f6b1e690", 84893,
        "IBM DataStar, San Diego Supercomputer Center, 2004 - 2005 (cleaned log)",
    ),
    TraceInfo(
        "LLNL-Atlas", "LLNL-Atlas-2006-2.1-cln.swf",
        _pwa("l_llnl_atlas", "LLNL-Atlas-2006-2.1-cln.swf"),
        9216, "8b3aaab739fa0bda8abaccc37c207d0b19d9d147b19e7f47a1641133a56fd07f", 36600,
        "Atlas Linux cluster, Lawrence Livermore National Laboratory, 2006 - 2007 (cleaned)",
    ),
    TraceInfo(
        "LLNL-Thunder", "LLNL-Thunder-2007-1.1-cln.swf",
        _pwa("l_llnl_thunder", "LLNL-Thunder-2007-1.1-cln.swf"),
        4008, "aad5a3120a6adf0342d46fb4830e022121cdfbd3de9ecdd9cf10145b8864b6a5", 113613,
        "Thunder Linux cluster, Lawrence Livermore National Laboratory, 2007 (cleaned log)",
    ),
]  # fmt: skip

#: All registered traces by name, in registration order.
TRACES: dict[str, TraceInfo] = {t.name: t for t in _REGISTRY}


# ----------------------------------------------------------------- exceptions
class TraceNotFoundError(FileNotFoundError):
    """A registered trace is neither available locally nor downloadable."""

    def __str__(self) -> str:  # FileNotFoundError would prefix "[Errno ...]"
        return str(self.args[0]) if self.args else ""


class TraceChecksumError(ValueError):
    """A trace file's uncompressed SHA-256 is not the registered one."""


class UnknownTraceError(ValueError):
    """A trace spec is neither an existing file nor a registered name."""


# ------------------------------------------------------------------- registry
def trace_names() -> list[str]:
    """Registered trace names, in registration order."""
    return list(TRACES)


def get_trace(name: str) -> TraceInfo:
    """The registered trace called ``name`` (case-insensitive; its file name works too).

    :raises UnknownTraceError: listing the registered names
    """
    key = name.strip().lower()
    for info in TRACES.values():
        if key == info.name.lower() or key in (f.lower() for f in info.file_names):
            return info
    raise UnknownTraceError(
        f"unknown trace {name!r}{did_you_mean(name, TRACES)}; registered traces: "
        f"{', '.join(TRACES)} "
        "(or give the path of an SWF file)"
    )


def register_trace(info: TraceInfo, overwrite: bool = False) -> None:
    """Add a trace to the registry (e.g. a site's own log).

    :param info: the trace
    :param overwrite: replace an existing trace of the same (case-insensitive) name
    """
    for existing in list(TRACES):
        if existing.lower() == info.name.lower():
            if not overwrite:
                raise ValueError(f"trace {existing!r} is already registered")
            del TRACES[existing]
    TRACES[info.name] = info


def trace_url(info: TraceInfo) -> str:
    """Download URL of ``info``, honouring ``HPCGYM_TRACE_URL_<NAME>``."""
    return os.environ.get(info.env_var()) or info.url


# ----------------------------------------------------------------- locations
def cache_dir() -> Path:
    """User cache root of hpcgym: ``$XDG_CACHE_HOME/hpcgym`` or ``~/.cache/hpcgym``."""
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "hpcgym"


def _repo_traces_dir() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "hpcgym").is_dir():
        return root / "traces"
    return None


def trace_search_dirs() -> list[tuple[Path, str]]:
    """Directories searched for registered traces, in order, with a label each."""
    dirs: list[tuple[Path, str]] = []
    for entry in os.environ.get(TRACE_DIR_ENV, "").split(os.pathsep):
        if entry.strip():
            dirs.append((Path(entry.strip()).expanduser(), f"${TRACE_DIR_ENV}"))
    repo = _repo_traces_dir()
    if repo is not None:
        dirs.append((repo, "repository traces/ folder"))
    dirs.append((cache_dir() / "traces", "user cache"))
    return dirs


def trace_candidates(info: TraceInfo) -> Iterator[tuple[Path, str]]:
    for d, label in trace_search_dirs():
        for fname in info.file_names:
            yield d / fname, label
