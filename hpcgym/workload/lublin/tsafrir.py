"""User runtime estimates: the Tsafrir-Etsion-Feitelson (2005) model and simpler ones.

The estimate histogram of the model (:func:`tsafrir_histogram`), its assignment of
estimates to jobs (``_tsafrir``, parameters of the reference ``m_tsafrir05``) and
:func:`synthesize_requests`, which also offers the ``factor`` and ``none`` models.
"""

from __future__ import annotations

import math

import numpy as np

from hpcgym.workload.lublin.params import REQUEST_MODELS

__all__ = ["synthesize_requests", "tsafrir_histogram"]

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
    n = int(runtime.shape[0])
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
