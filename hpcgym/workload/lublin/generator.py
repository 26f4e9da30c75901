"""The Lublin-Feitelson workload generator: :func:`generate` and :func:`default_workload`.

Per-class job sizes, runtimes and arrival streams with the daily cycle, merged and
scaled to a target offered load, with requests from :mod:`hpcgym.workload.lublin.tsafrir`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from hpcgym.workload.core import CleaningReport, Workload
from hpcgym.workload.lublin.distributions import daily_cycle_weights, scaled_type_params
from hpcgym.workload.lublin.params import (
    _BUCKETS,
    _SECONDS_IN_BUCKET,
    _SECONDS_IN_DAY,
    _TYPE_FIELDS,
    BATCH,
    BATCH_PARAMS,
    DEFAULT_WORKLOAD_KWARGS,
    INTERACTIVE,
    INTERACTIVE_PARAMS,
    OPTIONS,
    REQUEST_MODELS,
    TYPELESS_PARAMS,
    LublinTypeParams,
)
from hpcgym.workload.lublin.tsafrir import _HOUR, _tsafrir, synthesize_requests

__all__ = ["generate", "default_workload"]


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

    ``generate(n_jobs=200_000, machine_size=256, load=0.85, seed=0,
    request_model="tsafrir")`` -- see :data:`DEFAULT_WORKLOAD_KWARGS` and
    ``docs/lublin.md``; named ``lublin-default``. Copy a column before modifying it.
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
