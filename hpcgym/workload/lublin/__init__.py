"""Synthetic rigid-job workloads: the Lublin-Feitelson model and user runtime estimates.

This package implements

* the rigid-job workload model of U. Lublin and D. G. Feitelson, "The workload on parallel
  supercomputers: modeling the characteristics of rigid jobs", JPDC 63(11):1105-1122, 2003,
  with the parameter values of the authors' reference program ``m_lublin99.c`` (Parallel
  Workloads Archive): job sizes (serial fraction, power-of-two fraction, two-stage
  log-uniform sizes), runtimes correlated with size (a hyper-gamma distribution of
  ``ln(runtime)`` whose mixing probability is linear in the job size), arrivals with a
  daily cycle (gamma-distributed ``ln`` inter-arrival times at rush hours, spread over the
  day by the gamma-shaped daily cycle of arrivals per 30-minute slot), and separate batch
  and interactive job streams;
* the user runtime-estimate model of D. Tsafrir, Y. Etsion and D. G. Feitelson, "Modeling
  user runtime estimates", JSSPP 2005 (LNCS 3834), with the parameters of the authors'
  reference implementation (``m_tsafrir05``), plus two simpler request models.

Everything is vectorised with numpy except the estimate assignment loop (one cheap pass),
and every random choice goes through seeded :class:`numpy.random.Generator` objects.
:func:`generate` returns a :class:`~hpcgym.workload.core.Workload` directly; write it as
SWF with :func:`hpcgym.workload.swf.write_swf`. :func:`default_workload` is the embedded
default workload of hpcgym. See ``docs/lublin.md`` for the parameter provenance and the
measured statistics.

Modules: :mod:`~hpcgym.workload.lublin.params` (job classes, parameters, options),
:mod:`~hpcgym.workload.lublin.distributions` (gamma CDF, daily cycle, exact size
distribution), :mod:`~hpcgym.workload.lublin.tsafrir` (request models) and
:mod:`~hpcgym.workload.lublin.generator` (:func:`generate`, :func:`default_workload`).
Every name is importable from ``hpcgym.workload.lublin``.
"""

from __future__ import annotations

from hpcgym.workload.lublin.distributions import (
    daily_cycle_weights,
    expected_pow2_fraction,
    gamma_cdf,
    scaled_type_params,
    size_pmf,
)
from hpcgym.workload.lublin.generator import default_workload, generate
from hpcgym.workload.lublin.params import (
    BATCH,
    BATCH_PARAMS,
    DEFAULT_WORKLOAD_KWARGS,
    INTERACTIVE,
    INTERACTIVE_PARAMS,
    OPTIONS,
    REFERENCE_MACHINE_SIZE,
    REQUEST_MODELS,
    TYPELESS_PARAMS,
    LublinTypeParams,
)
from hpcgym.workload.lublin.tsafrir import (
    _binnum,  # noqa: F401 (private, used by tests and bench/lublin_stats.py)
    _head_times,  # noqa: F401 (private, used by tests)
    _tsafrir,  # noqa: F401 (private, used by tests)
    synthesize_requests,
    tsafrir_histogram,
)

__all__ = [
    "BATCH",
    "INTERACTIVE",
    "LublinTypeParams",
    "BATCH_PARAMS",
    "INTERACTIVE_PARAMS",
    "TYPELESS_PARAMS",
    "REFERENCE_MACHINE_SIZE",
    "REQUEST_MODELS",
    "OPTIONS",
    "DEFAULT_WORKLOAD_KWARGS",
    "generate",
    "default_workload",
    "synthesize_requests",
    "tsafrir_histogram",
    "scaled_type_params",
    "daily_cycle_weights",
    "expected_pow2_fraction",
    "size_pmf",
    "gamma_cdf",
]
