"""Workloads: SWF traces, the trace registry, synthetic workloads and job windows.

* :func:`load` is the one loader every layer uses: a registered trace name, an SWF
  path, ``"synthetic"``/``None`` (Lublin-Feitelson) or a :class:`Workload`.
* :func:`read_accounting`: Slurm accounting (``sacct --parsable2`` exports, jobcomp
  logs), cleaned with the same kind of report (``load`` tells the formats apart);
* :func:`read_swf` / :func:`write_swf`: the Standard Workload Format, with an explicit
  :class:`CleaningReport`; :func:`read_swf_fields` / :func:`workload_fields`: the raw
  fields the cleaned workload does not keep (requested memory, status ...).
* :data:`TRACES`, :func:`resolve_trace`, :func:`fetch_trace`: the trace registry.
* :class:`Window`, :func:`split_range`, :class:`WindowSampler`: windows of consecutive
  jobs and the train/test time split.

See ``docs/workloads.md``.
"""

from __future__ import annotations

from hpcgym.workload.core import COLUMNS, CleaningReport, Workload
from hpcgym.workload.sacct import (
    AccountingFormatError,
    AccountingRecord,
    accounting_records,
    detect_format,
    read_accounting,
)
from hpcgym.workload.sequences import (
    SPLITS,
    VALIDATION_FRACTION,
    Window,
    WindowSampler,
    split_range,
)
from hpcgym.workload.swf import (
    DROP_RULES,
    PATCH_RULES,
    SWFFormatError,
    read_swf,
    read_swf_fields,
    workload_fields,
    write_swf,
)
from hpcgym.workload.traces import (
    TRACE_DIR_ENV,
    TRACES,
    TraceChecksumError,
    TraceInfo,
    TraceNotFoundError,
    UnknownTraceError,
    cache_dir,
    clear_cache,
    fetch_trace,
    find_local,
    get_trace,
    load,
    register_trace,
    resolve_trace,
    sha256_uncompressed,
    synthetic_params,
    trace_names,
    trace_past,
    trace_search_dirs,
    trace_spec,
    trace_url,
)

__all__ = [
    "COLUMNS",
    "CleaningReport",
    "Workload",
    "read_swf",
    "read_swf_fields",
    "workload_fields",
    "write_swf",
    "SWFFormatError",
    "read_accounting",
    "detect_format",
    "AccountingFormatError",
    "AccountingRecord",
    "accounting_records",
    "DROP_RULES",
    "PATCH_RULES",
    "load",
    "synthetic_params",
    "trace_past",
    "trace_spec",
    "clear_cache",
    "TraceInfo",
    "TRACES",
    "TRACE_DIR_ENV",
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
    "Window",
    "WindowSampler",
    "split_range",
    "SPLITS",
    "VALIDATION_FRACTION",
]
