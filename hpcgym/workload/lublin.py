"""Synthetic rigid-job workloads: the Lublin-Feitelson model and user runtime estimates.

This module implements

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
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from hpcgym.workload.core import CleaningReport, Workload

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

# --------------------------------------------------------------------------- constants
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
DEFAULT_WORKLOAD_KWARGS: dict[str, Any] = {
    "n_jobs": 10_000,
    "machine_size": 256,
    "load": 0.85,
    "seed": 0,
    "request_model": "tsafrir",
}


# ------------------------------------------------------------------ special functions
def _gamma_p(a: float, x: float) -> float:
    """Regularised lower incomplete gamma function P(a, x) (series / continued fraction)."""
    if a <= 0:
        raise ValueError(f"gamma shape must be positive, got {a}")
    if x <= 0.0:
        return 0.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        # P(a, x) = e^-x x^a / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n))
        term = 1.0 / a
        total = term
        ap = a
        for _ in range(10_000):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return min(1.0, total * math.exp(log_front))
    # Q(a, x) by the modified Lentz evaluation of its continued fraction
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """CDF of the gamma distribution with the given shape and scale at ``x``."""
    return _gamma_p(shape, x / scale)


# ------------------------------------------------------------------ model pieces
def daily_cycle_weights(anum: float, bnum: float) -> np.ndarray:
    """Relative arrival rate of each 30-minute slot of the day (mean 1), as in the model.

    Slot ``i`` (``i = 11 .. 58`` of the cyclic day that starts at slot 11) gets the gamma
    probability mass ``cdf(i + 0.5) - cdf(i - 0.5)`` and is stored at slot ``(i - 1) % 48``
    of the clock day (slot 0 is 00:00-00:30).

    :param anum: gamma shape of the daily cycle
    :param bnum: gamma scale of the daily cycle
    :return: array of 48 weights with mean 1
    """
    w = np.zeros(_BUCKETS)
    for i in range(_CYCLIC_DAY_START, _BUCKETS + _CYCLIC_DAY_START):
        w[(i - 1) % _BUCKETS] = gamma_cdf(i + 0.5, anum, bnum) - gamma_cdf(i - 0.5, anum, bnum)
    if not np.all(w > 0):
        raise ValueError(
            f"daily cycle gamma(anum={anum}, bnum={bnum}) gives an empty 30-minute slot"
        )
    return w / w.mean()


def scaled_type_params(tp: LublinTypeParams, machine_size: int) -> LublinTypeParams:
    """Adapt the size parameters of a job class to a machine of ``machine_size`` nodes.

    ``umed`` and ``uhi`` are shifted by ``log2(machine_size) - 7`` (the published values
    are for 128 nodes; the model's documentation: ``uhi`` is log2 of the system size,
    ``umed = uhi - 2.5`` give or take 1); ``uhi`` is kept within ``[1, log2(machine_size)]``
    (``0`` on a 1-processor machine) and ``ulow <= umed <= uhi`` is restored by clamping for
    very small machines.
    """
    top = math.log2(machine_size)
    shift = top - _REF_LOG2
    uhi = min(max(tp.uhi + shift, min(1.0, top)), top)
    ulow = min(tp.ulow, uhi)
    umed = min(max(tp.umed + shift, ulow), uhi)
    return replace(tp, ulow=ulow, umed=umed, uhi=uhi)


def _par_below(tp: LublinTypeParams, x: np.ndarray) -> np.ndarray:
    """P(par < x) for the two-stage uniform ``par`` of log2 sizes (``tp`` scaled)."""
    x = np.asarray(x, dtype=np.float64)
    if tp.umed > tp.ulow:
        first = np.clip((x - tp.ulow) / (tp.umed - tp.ulow), 0.0, 1.0)
    else:  # degenerate first stage: a point mass at ulow
        first = (x > tp.ulow).astype(np.float64)
    if tp.uhi > tp.umed:
        second = np.clip((x - tp.umed) / (tp.uhi - tp.umed), 0.0, 1.0)
    else:
        second = (x > tp.umed).astype(np.float64)
    return tp.uprob * first + (1.0 - tp.uprob) * second


def size_pmf(tp: LublinTypeParams, machine_size: int) -> np.ndarray:
    """Exact distribution of the job size of class ``tp`` on ``machine_size`` processors.

    Serial jobs have size 1; power-of-two jobs ``2**round(par)`` (at most the largest
    power of two <= ``machine_size``); the other parallel jobs ``round(2**par)``, where
    ``par`` is the two-stage uniform. ``tp`` must already be scaled
    (:func:`scaled_type_params`).

    :return: array ``pmf`` of length ``machine_size + 1``; ``pmf[s]`` = P(size = s)
    """
    m = int(machine_size)
    pmf = np.zeros(m + 1)
    pmf[1] += tp.serial_prob
    max_k = math.floor(math.log2(m) + 1e-12)
    j = np.arange(max_k + 1, dtype=np.float64)
    pk = _par_below(tp, j + 0.5) - _par_below(tp, j - 0.5)
    pk[-1] = 1.0 - float(_par_below(tp, np.array(max_k - 0.5)))
    np.add.at(pmf, (2 ** j.astype(np.int64)), tp.pow2_prob * pk)
    sizes = np.arange(1, m + 1, dtype=np.float64)
    hi = _par_below(tp, np.log2(sizes + 0.5))
    lo = _par_below(tp, np.log2(sizes - 0.5))
    hi[-1] = 1.0  # round(2**par) never exceeds the machine (par <= log2 m)
    pmf[1:] += (1.0 - tp.serial_prob - tp.pow2_prob) * (hi - lo)
    return pmf


def expected_pow2_fraction(tp: LublinTypeParams, machine_size: int) -> float:
    """Exact probability that a job of class ``tp`` has a power-of-two size > 1.

    Power-of-two draws (of size > 1) always do; the other parallel draws do when
    ``round(2**par)`` happens to be a power of two. ``tp`` must already be scaled.
    """
    pmf = size_pmf(tp, machine_size)
    k = 2 ** np.arange(1, math.floor(math.log2(machine_size) + 1e-12) + 1)
    return float(pmf[k].sum())


def _redraw_gamma(
    rng: np.random.Generator, shape: np.ndarray, scale: np.ndarray, limit: float
) -> np.ndarray:
    """Gamma variates, each redrawn until it is <= limit (the model's rejection rule)."""
    g = rng.gamma(shape, scale)
    bad = np.flatnonzero(g > limit)
    while bad.size:
        g[bad] = rng.gamma(shape[bad], scale[bad])
        bad = bad[g[bad] > limit]
    return g


def _sizes(rng: np.random.Generator, tp: LublinTypeParams, n: int, m: int) -> np.ndarray:
    """Job sizes: serial, power-of-two or other parallel (two-stage log-uniform)."""
    u = rng.random(n)
    stage = rng.random(n)
    first = rng.uniform(tp.ulow, tp.umed, n) if tp.umed > tp.ulow else np.full(n, tp.ulow)
    second = rng.uniform(tp.umed, tp.uhi, n) if tp.uhi > tp.umed else np.full(n, tp.umed)
    par = np.where(stage <= tp.uprob, first, second)
    pow2 = u <= tp.serial_prob + tp.pow2_prob
    max_k = math.floor(math.log2(m) + 1e-12)
    k = np.minimum(np.floor(par + 0.5), max_k)  # round(par), kept within the machine
    procs = np.where(pow2, np.exp2(k), np.floor(np.exp2(par) + 0.5))
    procs = np.clip(procs, 1, m)
    procs[u <= tp.serial_prob] = 1
    return procs.astype(np.int64)


def _runtimes(
    rng: np.random.Generator, tp: LublinTypeParams, procs: np.ndarray, max_log: float
) -> np.ndarray:
    """Hyper-gamma ``ln(runtime)``, mixing probability ``p = pa * procs + pb``."""
    n = procs.shape[0]
    p = np.clip(tp.pa * procs + tp.pb, 0.0, 1.0)
    hg = np.empty(n)
    todo = np.arange(n)
    while todo.size:  # the whole hyper-gamma draw is repeated when ln(runtime) > max_log
        first = rng.random(todo.size) <= p[todo]
        shape = np.where(first, tp.a1, tp.a2)
        scale = np.where(first, tp.b1, tp.b2)
        g = rng.gamma(shape, scale)
        ok = g <= max_log
        hg[todo[ok]] = g[ok]
        todo = todo[~ok]
    # exp(hg) > 1 because hg > 0, so the truncated runtime is at least 1 second
    return np.floor(np.exp(hg))


def _warp(points: np.ndarray, weights: np.ndarray, start_bucket: int) -> np.ndarray:
    """Seconds since time 0 at which the cumulative arrival "points" are reached.

    A 30-minute slot ``b`` costs ``weights[b]`` points, linearly within the slot; the
    simulation starts at the beginning of slot ``start_bucket``.
    """
    w = np.roll(weights, -start_bucket)
    cum = np.concatenate(([0.0], np.cumsum(w)))
    per_day = cum[-1]
    days = np.floor(points / per_day)
    rest = points - days * per_day
    tau = np.arange(_BUCKETS + 1) * _SECONDS_IN_BUCKET
    return days * _SECONDS_IN_DAY + np.interp(rest, cum, tau)


@dataclass
class _Stream:
    """One arrival stream (a job class) with its pre-drawn jobs."""

    queue: int
    points: np.ndarray  # cumulative arrival points at native rate
    weights: np.ndarray  # daily cycle
    procs: np.ndarray
    runtime: np.ndarray


def _merge(streams: list[_Stream], scale: float, start_bucket: int, n: int) -> tuple:
    """Arrival times of the first ``n`` jobs of the merged streams at rate ``1/scale``.

    Returns ``(times, stream index, index within the stream)``; on equal times the earlier
    stream in ``streams`` (interactive) wins, as in the reference program.
    """
    times = [_warp(s.points * scale, s.weights, start_bucket) for s in streams]
    if len(streams) == 1:
        return times[0][:n], np.zeros(n, dtype=np.int64), np.arange(n)
    allt = np.concatenate(times)
    which = np.concatenate([np.full(t.shape[0], i, dtype=np.int64) for i, t in enumerate(times)])
    local = np.concatenate([np.arange(t.shape[0]) for t in times])
    order = np.argsort(allt, kind="stable")[:n]
    return allt[order], which[order], local[order]


def _work(streams: list[_Stream], which: np.ndarray, local: np.ndarray) -> float:
    total = 0.0
    for i, s in enumerate(streams):
        idx = local[which == i]
        total += float(np.dot(s.runtime[idx], s.procs[idx].astype(np.float64)))
    return total


def _calibrate_scale(
    streams: list[_Stream], start_bucket: int, n: int, m: int, target: float
) -> tuple[float, float]:
    """Inter-arrival multiplier ``c`` such that the offered load equals ``target``.

    Offered load = sum(runtime * procs) / (m * (last submit - first submit)). It falls as
    ``c`` grows (about as ``1/c``); a fixed-point iteration ``c <- c * load(c) / target``
    usually converges in a few steps, with a bisection on ``log c`` as the safeguard.
    Returns ``(c, load at c)``.
    """

    def load_at(c: float) -> float:
        t, which, local = _merge(streams, c, start_bucket, n)
        span = float(t[-1] - t[0])
        if span <= 0:
            return math.inf
        return _work(streams, which, local) / (m * span)

    best_c, best_err, best_load = 1.0, math.inf, math.nan
    lo: float | None = None  # largest log c seen with load >= target
    hi: float | None = None  # smallest log c seen with load <= target
    logc = 0.0
    for it in range(100):
        ld = load_at(math.exp(logc))
        err = abs(math.log(ld / target)) if math.isfinite(ld) and ld > 0 else math.inf
        if err < best_err:
            best_c, best_err, best_load = math.exp(logc), err, ld
        if err < 1e-6:
            break
        if ld >= target and (lo is None or logc > lo):
            lo = logc
        if ld <= target and (hi is None or logc < hi):
            hi = logc
        if math.isfinite(ld) and ld > 0:
            nxt = logc + math.log(ld / target)  # fixed point of load ~ 1/c
        else:
            nxt = logc + 1.0
        if lo is not None and hi is not None:
            a, b = min(lo, hi), max(lo, hi)
            if it >= 8 or not (a < nxt < b):
                nxt = 0.5 * (a + b)
            if b - a < 1e-12:
                break
        logc = nxt
    return best_c, best_load


# ------------------------------------------------------------------ Tsafrir estimates
_MIN = 60
_HOUR = 3600
_TOP = 20  # the head of the estimate distribution: the 20 most popular values
_HEAD_SUM = 89.0  # percent of jobs using one of the head values
_HEAD_PARAMS = (14.0491, -0.177531, 0.462513)  # size(rank) = a e^(b rank) + c, ranks 2..20
_TAIL_PARAMS = (795.6, -2.267)  # size(rank) = a rank^b, ranks 21..
_BINTIM_PARAMS = (12.1039, -0.6026)  # tail times: a = 1 + p K^q
# the 15 estimates that are in the top 20 of all four traces the model was fitted to
_EST_JOINT = tuple(
    x * _MIN for x in (5, 15, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 720, 1080)
)
# round multiples used to complete the head below the maximal estimate
_EST_ROUND = tuple(
    x * _MIN for x in (200 * 60, 100 * 60, 50 * 60, 10 * 60, 5 * 60, 2 * 60, 60, 20, 10, 5)
)
# number of estimate values as a function of the number of jobs (piecewise linear)
_BINNUM_LINEAR = ((0, 0), (20, 10), (200, 20), (1000, 35), (10000, 90), (70000, 340), (250000, 565))
# popularity rank of the k-th shortest head value (row 0: the maximum) in the four traces
# the model was fitted to (SDSC-SP2, CTC-SP2, KTH-SP2, SDSC-BLUE)
_TIMRNK_TO_POPRNK = (
    (3, 1, 1, 1),
    (1, 3, 4, 6),
    (4, 4, 10, 5),
    (17, 2, 14, 3),
    (13, 12, 20, 7),
    (7, 9, 2, 2),
    (8, 8, 3, 18),
    (18, 18, 7, 19),
    (2, 6, 12, 4),
    (6, 7, 6, 11),
    (16, 11, 19, 20),
    (10, 20, 5, 9),
    (5, 16, 18, 10),
    (15, 5, 16, 14),
    (14, 14, 9, 13),
    (19, 13, 17, 16),
    (11, 10, 15, 15),
    (12, 15, 13, 17),
    (9, 17, 8, 8),
    (20, 19, 11, 12),
)


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _binnum(n_jobs: int) -> int:
    """Number of distinct estimate values for ``n_jobs`` jobs (linear model)."""
    pts = _BINNUM_LINEAR
    if n_jobs > pts[-1][0]:
        return pts[-1][1]
    for k in range(1, len(pts)):
        if n_jobs <= pts[k][0]:
            (x0, y0), (x1, y1) = pts[k - 1], pts[k]
            return y0 + _round_half_up((n_jobs - x0) * (y1 - y0) / (x1 - x0))
    raise AssertionError("unreachable")


def _head_times(max_est: int) -> list[int]:
    """The head estimate values: the maximum first, then the others ascending."""
    v = [max_est] + [e for e in _EST_JOINT if e < max_est]
    missing = max(0, _TOP - len(v))
    for mul in _EST_ROUND:
        if missing == 0:
            break
        start = (max_est // mul) * mul
        j = 0
        while start - j * mul > 0 and missing > 0:
            est = start - j * mul
            if est not in v:
                v.append(est)
                missing -= 1
            j += 1
    return [v[0]] + sorted(v[1:])


def _head_sizes(ntop: int) -> list[float]:
    """Percent of jobs of popularity ranks 1..ntop (descending)."""
    a, b, c = _HEAD_PARAMS
    rest = [a * math.exp(b * r) + c for r in range(2, ntop + 1)]
    first = _HEAD_SUM - sum(rest)
    return sorted([first, *rest], reverse=True)


def _timrnk_to_poprnk(rng: np.random.Generator) -> list[int]:
    """Popularity rank of each head value (index 0 = maximum, then ascending times).

    The procedure of the reference implementation: the maximum is the most popular; a
    popularity rank becomes due once the time rank passes the largest rank at which it
    appears in any of the four fitted traces; otherwise a rank is drawn from the pool of
    ranks seen so far (with multiplicity), the smaller of two draws.
    """
    table = _TIMRNK_TO_POPRNK
    bound: dict[int, int] = {}
    for ttr in range(_TOP - 1, -1, -1):
        for pr in table[ttr]:
            bound.setdefault(pr, ttr)
    chosen: set[int] = set()
    pool: list[int] = []
    mapping: list[int] = []
    for ttr in range(_TOP):
        pool.extend(pr for pr in table[ttr] if pr not in chosen)
        poprnk = -1
        if ttr == 0:
            poprnk = 1
        else:
            for pr in range(1, _TOP + 1):
                if bound[pr] <= ttr and pr not in chosen:
                    poprnk = pr
                    break
        if poprnk == -1:
            if pool:
                draws = rng.integers(len(pool), size=2)
                poprnk = min(pool[int(draws[0])], pool[int(draws[1])])
            else:  # not reached with the published table; keep the result well defined
                poprnk = min(set(range(1, _TOP + 1)) - chosen)
        mapping.append(poprnk)
        chosen.add(poprnk)
        pool = [pr for pr in pool if pr != poprnk]
    return mapping


def _adjust_counts(counts: dict[int, int], n_jobs: int) -> dict[int, int]:
    """Make the bin counts sum to ``n_jobs`` (the heuristics of the reference code:
    proportional, then +-1, then down to 1, then down to 0, largest bins first)."""
    diff = n_jobs - sum(counts.values())
    if diff == 0:
        return counts
    sign = 1 if diff > 0 else -1
    diff = abs(diff)
    for attempt in range(4):
        if diff == 0:
            break
        order = sorted(counts, key=lambda t: (-counts[t], t))
        total = sum(counts.values())
        f = diff / total if total else 0.0
        for t in order:
            nj = counts[t]
            if nj == 0:
                continue
            adjust = (math.ceil(f * nj), 1, nj - 1, nj)[attempt]
            if sign < 0:
                adjust = min(adjust, nj)
                if adjust == nj and attempt != 3:
                    adjust -= 1
            adjust = min(adjust, diff)
            counts[t] += sign * adjust
            diff -= adjust
            if diff == 0:
                break
    return counts


def tsafrir_histogram(
    n_jobs: int, max_estimate: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The estimate histogram of the Tsafrir-Etsion-Feitelson (2005) model.

    :param n_jobs: number of jobs the histogram is for (sets the number of values)
    :param max_estimate: the maximal estimate in seconds (>= 3600)
    :param rng: random source (popularity of the head values, matching of the tail)
    :return: ``(times, counts)``: estimate values in seconds (ascending, the maximal
        estimate last) and the number of jobs using each; ``counts.sum() == n_jobs`` (with
        fewer jobs than values, some counts are 0)
    """
    if max_estimate < _HOUR:
        raise ValueError(f"max_estimate={max_estimate} s must be at least one hour (3600 s)")
    binnum = _binnum(n_jobs)
    bintim_a = 1.0 + _BINTIM_PARAMS[0] * binnum ** _BINTIM_PARAMS[1]
    # head: times, sizes, and the time-rank -> popularity-rank mapping
    head_t = _head_times(max_estimate)
    ntop = len(head_t)
    sizes = _head_sizes(ntop)
    pop = _timrnk_to_poprnk(rng)[:ntop]
    if ntop < _TOP:  # fewer than 20 head values: re-rank the popularity ranks densely
        ranks = sorted(pop)
        pop = [ranks.index(p) + 1 for p in pop]
    time2p = {t: sizes[p - 1] for t, p in zip(head_t, pop, strict=True)}
    # tail: times y = (a - 1) x / (a - x) of the maximum, sizes a rank^b (ranks 21..)
    tail_n = binnum - ntop
    tail_t: list[int] = []
    if tail_n > 0:
        seen = set(time2p)
        for i in range(1, tail_n + 1):
            x = i / tail_n
            y = (bintim_a - 1.0) * x / (bintim_a - x)
            sec = _round_half_up(y * max_estimate / 60.0) * 60
            for off in (0, 30, -30, 20, -20, 10, -10):
                s = sec + off
                if s not in seen and 0 < s < max_estimate:
                    tail_t.append(s)
                    seen.add(s)
                    break
    if tail_t:
        a, b = _TAIL_PARAMS
        ts = np.array([a * float(r) ** b for r in range(_TOP + 1, _TOP + 1 + len(tail_t))])
        ts *= (100.0 - _HEAD_SUM) / ts.sum()
        for t, p in zip(rng.permutation(sorted(tail_t)), ts, strict=True):
            time2p[int(t)] = float(p)
    else:  # no tail (very few jobs): the head takes all the jobs
        f = 100.0 / sum(time2p.values())
        time2p = {t: p * f for t, p in time2p.items()}
    counts = {t: max(1, _round_half_up(p * n_jobs / 100.0)) for t, p in time2p.items()}
    counts = _adjust_counts(counts, n_jobs)
    times = np.array(sorted(counts), dtype=np.int64)
    return times, np.array([counts[int(t)] for t in times], dtype=np.int64)


def _feasible(rt_desc: np.ndarray, times: np.ndarray, counts: np.ndarray) -> bool:
    est_desc = np.repeat(times[::-1], counts[::-1])
    return bool(np.all(rt_desc <= est_desc))


def _raise_max_share(times: np.ndarray, counts: np.ndarray, n_max: int) -> np.ndarray:
    """Counts with ``n_max`` jobs at the maximal estimate, the other bins scaled."""
    other = counts[:-1].astype(np.float64)
    if other.sum() <= 0:
        other = np.ones_like(other)
    share = other / other.sum() * float(counts.sum() - n_max)
    base = np.floor(share).astype(np.int64)
    left = int(counts.sum() - n_max - base.sum())
    if left > 0:  # largest remainders
        base[np.argsort(-(share - base), kind="stable")[:left]] += 1
    return np.concatenate((base, [n_max]))


def _tsafrir(
    runtime: np.ndarray, rng: np.random.Generator, max_estimate: int
) -> tuple[np.ndarray, dict[str, str]]:
    n = runtime.shape[0]
    if max_estimate < _HOUR:
        raise ValueError(f"max_estimate={max_estimate} s must be at least one hour (3600 s)")
    if float(runtime.max()) > max_estimate:
        raise ValueError(
            f"max_estimate={max_estimate} s is below the longest runtime "
            f"({float(runtime.max()):.0f} s); requests must be >= runtimes"
        )
    times, counts = tsafrir_histogram(n, max_estimate, rng)
    order = np.argsort(-runtime, kind="stable")
    rt_desc = runtime[order]
    natural = int(counts[-1])
    if not _feasible(rt_desc, times, counts):
        # The model's remedy: give more jobs the maximal estimate (the other values
        # scaled down proportionally); the smallest feasible count, by bisection.
        lo, hi = natural, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _feasible(rt_desc, times, _raise_max_share(times, counts, mid)):
                hi = mid
            else:
                lo = mid
        counts = _raise_max_share(times, counts, hi)
    est = np.repeat(times[::-1], counts[::-1]).astype(np.float64).tolist()
    rts = rt_desc.tolist()
    u = rng.random(n).tolist()
    out = [0.0] * n
    hi_i = 0
    for j in range(n):
        # each job (longest first) gets a random one of the remaining estimates >= runtime
        r = rts[j]
        hi_i = max(hi_i, j)
        while hi_i < n - 1 and r <= est[hi_i + 1]:
            hi_i += 1
        k = j + int(u[j] * (hi_i - j + 1))
        out[j] = est[k]
        est[k] = est[j]
    request = np.empty(n)
    request[order] = out
    info = {
        "TsafrirMaxEstimate": str(int(max_estimate)),
        "TsafrirValues": str(int(np.count_nonzero(counts))),
        "TsafrirMaxEstimateJobs": f"{int(counts[-1])} (model: {natural})",
    }
    return request, info


def synthesize_requests(
    runtime: np.ndarray,
    request_model: str = "tsafrir",
    rng: np.random.Generator | int = 0,
    *,
    max_estimate: float | None = None,
    factor_max: float = 5.0,
) -> np.ndarray:
    """Synthetic requested times (user estimates) for the given runtimes.

    :param runtime: actual runtimes in seconds (> 0)
    :param request_model: ``"tsafrir"``, ``"factor"`` or ``"none"`` (see
        :data:`REQUEST_MODELS`)
    :param rng: a :class:`numpy.random.Generator` or an integer seed
    :param max_estimate: ``tsafrir`` only: the maximal estimate in seconds; ``None`` uses
        the longest runtime rounded up to a whole hour (at least one hour)
    :param factor_max: ``factor`` only: upper bound of the uniform overestimation factor
    :return: requests in seconds, ``>= runtime`` element-wise
    """
    if request_model not in REQUEST_MODELS:
        raise ValueError(
            f"unknown request_model {request_model!r}; valid: {', '.join(REQUEST_MODELS)}"
        )
    rt = np.asarray(runtime, dtype=np.float64)
    if rt.ndim != 1 or rt.size == 0:
        raise ValueError("runtime must be a non-empty 1-d array")
    if not np.all(np.isfinite(rt)) or np.any(rt <= 0):
        raise ValueError("runtimes must be finite and positive")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    if request_model == "none":
        return rt.copy()
    if request_model == "factor":
        if not (math.isfinite(factor_max) and factor_max >= 1.0):
            raise ValueError(f"factor_max={factor_max} must be a finite number >= 1")
        return np.maximum(np.ceil(rt * gen.uniform(1.0, factor_max, rt.shape[0])), rt)
    if max_estimate is None:
        max_estimate = max(_HOUR, math.ceil(float(rt.max()) / _HOUR) * _HOUR)
    if not (math.isfinite(max_estimate) and max_estimate == int(max_estimate)):
        raise ValueError(f"max_estimate={max_estimate} must be a whole number of seconds")
    return _tsafrir(rt, gen, int(max_estimate))[0]


# ------------------------------------------------------------------ the generator
def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _resolve_params(
    job_types: bool, params: dict[str, Any], machine_size: int
) -> dict[int, LublinTypeParams]:
    """Per-queue class parameters after machine scaling and user overrides."""
    if job_types:
        classes = {INTERACTIVE: INTERACTIVE_PARAMS, BATCH: BATCH_PARAMS}
    else:
        classes = {INTERACTIVE: TYPELESS_PARAMS}
    labels = {q: _class_label(q, job_types) for q in classes}
    out: dict[int, LublinTypeParams] = {}
    for q, tp in classes.items():
        scaled = scaled_type_params(tp, machine_size)
        over: dict[str, float] = {}
        for f in _TYPE_FIELDS:
            for key in (f, f"{f}_{labels[q]}"):  # the per-class name wins
                if key in params:
                    v = params[key]
                    if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                        raise ValueError(f"Lublin parameter {key} must be a number, got {v!r}")
                    over[f] = float(v)
        tp2 = replace(scaled, **over)
        tp2.validate(f"Lublin {labels[q]} parameters")
        if tp2.uhi > math.log2(machine_size) + 1e-12:
            raise ValueError(
                f"Lublin {labels[q]} parameters: uhi={tp2.uhi} exceeds "
                f"log2(machine_size)={math.log2(machine_size):.4f}"
            )
        out[q] = tp2
    return out


def _class_label(queue: int, job_types: bool) -> str:
    if not job_types:
        return "typeless"
    return "interactive" if queue == INTERACTIVE else "batch"


def _valid_param_names(job_types: bool) -> list[str]:
    names = list(OPTIONS) + list(_TYPE_FIELDS)
    if job_types:
        names += [f"{f}_{s}" for s in ("batch", "interactive") for f in _TYPE_FIELDS]
    else:
        names += [f"{f}_typeless" for f in _TYPE_FIELDS]
    return names


def generate(
    n_jobs: int = 10_000,
    machine_size: int = 256,
    load: float | None = None,
    seed: int = 0,
    request_model: str = "tsafrir",
    **params: Any,
) -> Workload:
    """Generate a synthetic workload with the Lublin-Feitelson (2003) model.

    :param n_jobs: number of jobs (>= 1)
    :param machine_size: number of processors ``m`` (>= 1); sizes are scaled from the
        published 128-node parameters (see :func:`scaled_type_params`)
    :param load: target offered load ``sum(runtime * procs) / (m * (last - first submit))``;
        all inter-arrival times are multiplied by the one constant that makes this
        sample's offered load equal ``load``. ``None`` keeps the model's native arrivals.
    :param seed: seed of the random generators (>= 0); same arguments, same workload
    :param request_model: how the requested time is synthesised: ``"tsafrir"``,
        ``"factor"`` or ``"none"`` (see :data:`REQUEST_MODELS`)
    :param params: options of :data:`OPTIONS` (``job_types``, ``start_hour``,
        ``max_log_runtime``, ``max_log_interarrival``, ``n_users``, ``user_zipf``,
        ``max_estimate``, ``factor_max``) and model parameter overrides: a field of
        :class:`LublinTypeParams` (all classes) or ``<field>_batch`` /
        ``<field>_interactive`` (``<field>_typeless`` with ``job_types=False``). Size
        overrides (``ulow``, ``umed``, ``uhi``) are log2 node counts for this machine.
    :return: the workload, ordered by submit time (first submit 0), job ids ``1..n``;
        ``queue`` holds the job class (0 interactive, 1 batch), ``user`` a synthetic
        Zipf-distributed user id, ``group``/``executable`` are -1
    """
    n = _check_int("n_jobs", n_jobs, 1)
    m = _check_int("machine_size", machine_size, 1)
    s = _check_int("seed", seed, 0)
    if request_model not in REQUEST_MODELS:
        raise ValueError(
            f"unknown request_model {request_model!r}; valid: {', '.join(REQUEST_MODELS)}"
        )
    if load is not None:
        if isinstance(load, bool) or not isinstance(load, (int, float, np.number)):
            raise ValueError(f"load must be a positive number or None, got {load!r}")
        if not (math.isfinite(load) and load > 0):
            raise ValueError(f"load must be a positive finite number or None, got {load!r}")
        if n < 2:
            raise ValueError("a target load needs n_jobs >= 2 (the load uses the submit span)")
    opts = dict(OPTIONS)
    job_types = params.get("job_types", OPTIONS["job_types"])
    if not isinstance(job_types, bool):
        raise ValueError(f"job_types must be True or False, got {job_types!r}")
    valid = _valid_param_names(job_types)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown Lublin parameter(s) {', '.join(map(repr, unknown))}; valid: "
            f"{', '.join(valid)}"
        )
    opts.update({k: v for k, v in params.items() if k in OPTIONS})
    start_hour = _check_int("start_hour", opts["start_hour"], 0)
    if start_hour > 23:
        raise ValueError(f"start_hour must be in 0..23, got {start_hour}")
    max_log_rt = float(opts["max_log_runtime"])
    max_log_ia = float(opts["max_log_interarrival"])
    for name, v in (("max_log_runtime", max_log_rt), ("max_log_interarrival", max_log_ia)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number, got {v}")
    n_users = _check_int("n_users", opts["n_users"], 0)
    user_zipf = float(opts["user_zipf"])
    if not (math.isfinite(user_zipf) and user_zipf >= 0):
        raise ValueError(f"user_zipf must be a finite number >= 0, got {user_zipf}")
    classes = _resolve_params(job_types, params, m)

    # independent random streams: changing one part (e.g. the request model) leaves the
    # others unchanged
    g_arr, g_job, g_req, g_usr = (
        np.random.default_rng(c) for c in np.random.SeedSequence(s).spawn(4)
    )
    streams: list[_Stream] = []
    for q, tp in classes.items():  # interactive first: it wins ties, as in the reference
        k = np.full(n, tp.aarr * tp.arar)
        ln_ia = _redraw_gamma(g_arr, k, np.full(n, tp.barr), max_log_ia)
        points = np.cumsum(np.exp(ln_ia)) / _SECONDS_IN_BUCKET
        streams.append(
            _Stream(q, points, daily_cycle_weights(tp.anum, tp.bnum), np.empty(0), np.empty(0))
        )
    for st in streams:
        tp = classes[st.queue]
        st.procs = _sizes(g_job, tp, n, m)
        st.runtime = _runtimes(g_job, tp, st.procs, max_log_rt)

    start_bucket = start_hour * _BUCKETS // 24
    scale, achieved = 1.0, math.nan
    if load is not None:
        scale, _ = _calibrate_scale(streams, start_bucket, n, m, float(load))
    t, which, local = _merge(streams, scale, start_bucket, n)
    abs_sec = np.floor(t)
    submit = abs_sec - abs_sec[0]
    procs = np.empty(n, dtype=np.int64)
    runtime = np.empty(n)
    queue = np.empty(n, dtype=np.int64)
    for i, st in enumerate(streams):
        sel = which == i
        procs[sel] = st.procs[local[sel]]
        runtime[sel] = st.runtime[local[sel]]
        queue[sel] = st.queue
    if n >= 2 and submit[-1] > 0:
        achieved = float(np.dot(runtime, procs)) / (m * float(submit[-1]))

    max_estimate = opts["max_estimate"]
    info: dict[str, str] = {}
    if request_model == "tsafrir":
        if max_estimate is None:  # the model's runtime cap: "no more than two days"
            cap = math.exp(max_log_rt)
            max_estimate = max(48 * _HOUR, math.ceil(cap / _HOUR) * _HOUR)
        if not (
            isinstance(max_estimate, (int, float, np.integer, np.floating))
            and math.isfinite(max_estimate)
            and max_estimate == int(max_estimate)
        ):
            raise ValueError(
                f"max_estimate must be a whole number of seconds, got {max_estimate!r}"
            )
        request, info = _tsafrir(runtime, g_req, int(max_estimate))
    else:
        request = synthesize_requests(
            runtime, request_model, g_req, factor_max=float(opts["factor_max"])
        )

    if n_users > 0:
        w = np.arange(1, n_users + 1, dtype=np.float64) ** -user_zipf
        user = g_usr.choice(n_users, size=n, p=w / w.sum()).astype(np.int64) + 1
    else:
        user = np.full(n, -1, dtype=np.int64)

    overrides = {k: params[k] for k in sorted(params)}
    spec = ", ".join(
        [
            f"n_jobs={n}",
            f"machine_size={m}",
            f"load={load!r}",
            f"seed={s}",
            f"request_model={request_model!r}",
            *(f"{k}={v!r}" for k, v in overrides.items()),
        ]
    )
    source = f"hpcgym.workload.lublin.generate({spec})"
    meta = {
        "Computer": f"synthetic, Lublin-Feitelson 2003 model, {m} processors",
        "Acknowledge": "Uri Lublin, Hebrew University (workload model)",
        "Information": "https://www.cs.huji.ac.il/labs/parallel/workload/m_lublin99/",
        "UnixStartTime": str(int(start_hour * 3600 + abs_sec[0])),
        "TimeZoneString": "UTC",
        "MaxRuntime": str(int(runtime.max())),
        "Generator": source,
        "LublinParams": "\n".join(
            f"{_class_label(q, job_types)}: "
            + " ".join(f"{k}={v:g}" for k, v in asdict(tp).items())
            for q, tp in classes.items()
        ),
        "LublinArrivalScale": f"{scale:.6g}",
        "TargetLoad": "native (load=None)" if load is None else f"{float(load):g}",
        "OfferedLoad": f"{achieved:.6f}",
        "RequestModel": f"{request_model}: {REQUEST_MODELS[request_model]}",
        **info,
    }
    return Workload(
        name=f"lublin-{m}-seed{s}",
        machine_size=m,
        job_id=np.arange(1, n + 1, dtype=np.int64),
        submit=submit,
        runtime=runtime,
        procs=procs,
        request=request,
        user=user,
        group=np.full(n, -1, dtype=np.int64),
        executable=np.full(n, -1, dtype=np.int64),
        queue=queue,
        report=CleaningReport(records=n, kept=n),
        source=source,
        meta=meta,
    )


@functools.lru_cache(maxsize=1)
def default_workload() -> Workload:
    """The embedded default workload of hpcgym (cached; its arrays are read-only).

    ``generate(n_jobs=10_000, machine_size=256, load=0.85, seed=0,
    request_model="tsafrir")`` -- see :data:`DEFAULT_WORKLOAD_KWARGS` and
    ``docs/lublin.md``. Copy a column before modifying it.
    """
    w = generate(**DEFAULT_WORKLOAD_KWARGS)
    w.name = "lublin-default"
    for col in (
        "job_id",
        "submit",
        "runtime",
        "procs",
        "request",
        "user",
        "group",
        "executable",
        "queue",
    ):
        getattr(w, col).setflags(write=False)
    return w
