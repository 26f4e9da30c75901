"""Parameters and options of the Lublin-Feitelson model.

The job classes (:data:`INTERACTIVE`, :data:`BATCH`), the per-class parameters of
``m_lublin99.c`` (:class:`LublinTypeParams`, :data:`BATCH_PARAMS`,
:data:`INTERACTIVE_PARAMS`, :data:`TYPELESS_PARAMS`), the request models, the options
of :func:`~hpcgym.workload.lublin.generate` and the arguments of the default workload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "BATCH",
    "BATCH_PARAMS",
    "DEFAULT_WORKLOAD_KWARGS",
    "INTERACTIVE",
    "INTERACTIVE_PARAMS",
    "LublinTypeParams",
    "OPTIONS",
    "REFERENCE_MACHINE_SIZE",
    "REQUEST_MODELS",
    "TYPELESS_PARAMS",
]

#: ``queue`` value of interactive jobs (the reference program writes the job type to SWF
#: field 15; 0 is also the SWF convention for "interactive").
INTERACTIVE = 0
#: ``queue`` value of batch jobs.
BATCH = 1

#: The published size parameters (``ULOW``/``UMED``/``UHI``) describe a machine of
#: 2**7 = 128 nodes; other sizes shift ``UMED`` and ``UHI`` by ``log2(m) - 7``.
REFERENCE_MACHINE_SIZE = 128
_REF_LOG2 = 7.0

_BUCKETS = 48  # 30-minute slots of a day
_SECONDS_IN_BUCKET = 1800.0
_SECONDS_IN_DAY = 86400.0
_CYCLIC_DAY_START = 11  # first slot index of the cyclic day in the daily-cycle fit


@dataclass(frozen=True)
class LublinTypeParams:
    """Parameters of one job class of the Lublin-Feitelson model.

    Values are those of ``m_lublin99.c`` (Lublin & Feitelson 2003); size parameters are
    log2 node counts for the 128-node reference machine (see :func:`scaled_type_params`).

    :param serial_prob: probability that a job is serial (1 processor)
    :param pow2_prob: probability that a job is parallel with a power-of-two size (of
        *all* jobs: a uniform ``u <= serial_prob`` is serial, ``u <= serial_prob +
        pow2_prob`` is power-of-two, the rest are other parallel sizes)
    :param ulow: lower bound of the two-stage uniform distribution of ``log2(size)``
    :param umed: breakpoint of the two-stage uniform
    :param uhi: upper bound (log2 of the largest job)
    :param uprob: probability of the first stage ``U(ulow, umed)``
    :param a1, b1, a2, b2: shape/scale of the two gamma components of ``ln(runtime)``
    :param pa, pb: mixing probability ``p = pa * size + pb`` (clipped to [0, 1]) of the
        first (short) component
    :param aarr, barr: shape/scale of the gamma distribution of ``ln(inter-arrival time)``
        at rush hours
    :param anum, bnum: shape/scale of the gamma distribution that gives the daily cycle of
        arrivals per 30-minute slot
    :param arar: "arrive-rush-to-all ratio", multiplies ``aarr``
    """

    serial_prob: float
    pow2_prob: float
    ulow: float
    umed: float
    uhi: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float

    def validate(self, label: str) -> None:
        """Raise :class:`ValueError` when a value is outside its domain."""
        for name in ("serial_prob", "pow2_prob", "uprob"):
            v = getattr(self, name)
            if not (0.0 <= v <= 1.0):
                raise ValueError(f"{label}: {name}={v} must be in [0, 1]")
        if self.serial_prob + self.pow2_prob > 1.0 + 1e-12:
            raise ValueError(
                f"{label}: serial_prob + pow2_prob = {self.serial_prob + self.pow2_prob} > 1"
            )
        for name in ("a1", "b1", "a2", "b2", "aarr", "barr", "anum", "bnum", "arar"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{label}: {name}={v} must be a positive number")
        for name in ("ulow", "umed", "uhi", "pa", "pb"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{label}: {name} must be finite")
        if not (0.0 <= self.ulow <= self.umed <= self.uhi):
            raise ValueError(
                f"{label}: need 0 <= ulow <= umed <= uhi, got ulow={self.ulow}, "
                f"umed={self.umed}, uhi={self.uhi}"
            )


#: Batch jobs (``*_BATCH`` constants of ``m_lublin99.c``).
BATCH_PARAMS = LublinTypeParams(
    serial_prob=0.2927,
    pow2_prob=0.6686,
    ulow=1.2,
    umed=5.0,
    uhi=7.0,
    uprob=0.875,
    a1=6.57,
    b1=0.823,
    a2=639.1,
    b2=0.0156,
    pa=-0.003,
    pb=0.6986,
    aarr=6.0415,
    barr=0.8531,
    anum=6.1271,
    bnum=5.2740,
    arar=1.0519,
)

#: Interactive jobs (``*_ACTIVE`` constants of ``m_lublin99.c``).
INTERACTIVE_PARAMS = LublinTypeParams(
    serial_prob=0.1541,
    pow2_prob=0.625,
    ulow=1.0,
    umed=3.0,
    uhi=5.5,
    uprob=0.705,
    a1=3.8351,
    b1=0.6605,
    a2=7.073,
    b2=0.6856,
    pa=-0.0118,
    pb=0.9156,
    aarr=6.5510,
    barr=0.6621,
    anum=8.9186,
    bnum=3.6680,
    arar=0.9797,
)

#: The "whole sample" parameters (no batch/interactive distinction), used with
#: ``job_types=False``; all jobs then get ``queue = 0`` as in the reference program.
TYPELESS_PARAMS = LublinTypeParams(
    serial_prob=0.244,
    pow2_prob=0.576,
    ulow=0.8,
    umed=4.5,
    uhi=7.0,
    uprob=0.86,
    a1=4.2,
    b1=0.94,
    a2=312.0,
    b2=0.03,
    pa=-0.0054,
    pb=0.78,
    aarr=10.2303,
    barr=0.4871,
    anum=8.1737,
    bnum=3.9631,
    arar=1.0225,
)

_TYPE_FIELDS = tuple(f.name for f in fields(LublinTypeParams))

#: Request (user estimate) models accepted by :func:`generate`.
REQUEST_MODELS: dict[str, str] = {
    "tsafrir": "Tsafrir-Etsion-Feitelson 2005 model: modal round estimates >= runtime",
    "factor": "request = ceil(runtime * U(1, factor_max))",
    "none": "request = runtime (perfect estimates)",
}

#: Options of :func:`generate` (besides per-class model parameters) and their defaults.
OPTIONS: dict[str, Any] = {
    "job_types": True,  # separate batch/interactive streams (reference default)
    "start_hour": 0,  # hour of day of time 0 (reference START = 0, midnight)
    "max_log_runtime": 12.0,  # TOO_MUCH_TIME: ln(runtime) <= 12 (about 45 h), redrawn
    "max_log_interarrival": 13.0,  # TOO_MUCH_ARRIVE_TIME: ln(inter-arrival) <= 13
    "n_users": 100,  # synthetic user population (0: user = -1)
    "user_zipf": 1.0,  # P(user k) ~ k**-user_zipf
    "max_estimate": None,  # tsafrir: maximal estimate (s); None -> 48 h (see docs)
    "factor_max": 5.0,  # factor: request = runtime * U(1, factor_max)
}

#: Arguments of :func:`default_workload` (the embedded default workload of hpcgym).
#: 200,000 jobs (about 23 months at load 0.85, generated in well under a second) make every
#: default split hold every default evaluation without overlapping windows: the
#: validation split (jobs 126,000..139,999) holds 10 windows of 1,024 jobs (training's
#: default evaluation) and 30 of 256 (the fast preset's), the test split (jobs
#: 140,000..199,999) 30 of 1,024 (eval/'s default). The 10,000-job default of versions
#: before 1.0 is ``synthetic:n_jobs=10000`` (same arguments, same jobs).
DEFAULT_WORKLOAD_KWARGS: dict[str, Any] = {
    "n_jobs": 200_000,
    "machine_size": 256,
    "load": 0.85,
    "seed": 0,
    "request_model": "tsafrir",
}
