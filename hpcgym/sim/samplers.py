"""Run-time samplers of the online lookahead (:class:`hpcgym.sim.lookahead.Lookahead`).

At every decision point the online ``LOOKAHEAD`` imagines futures in which the jobs
already submitted have run times drawn from what is known at that instant: the run
times of finished jobs (of the window and of the trace's past) and the jobs' requests.
A :class:`RuntimeSampler` draws them. Two are built in:

* :class:`UserHistorySampler` (``sampler=user-history``, the default): the same user's
  recently finished run times (or those of the same user with the same request);
* :class:`Ave2ResidualSampler` (``sampler=ave2-residual``): a point prediction, the mean
  of the user's last two finished run times (Tsafrir et al.'s AVE2; the request when the
  user has none), times a multiplicative error drawn from the errors that prediction
  made on the jobs finished most recently, heavy tails included.

``hpcgym.sim`` never imports ``hpcgym.predictors``; a predictor's own distribution
plugs in through the same protocol (``Lookahead(sampler=...)``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from hpcgym.sim import _core as K

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.sim.engine import Simulation
    from hpcgym.workload.core import Workload

__all__ = [
    "SAMPLERS",
    "Ave2ResidualSampler",
    "RuntimeSampler",
    "UserHistorySampler",
    "make_sampler",
]


def _int_option(name: str, value: Any, lo: int) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if v != float(value) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return v


@runtime_checkable
class RuntimeSampler(Protocol):
    """Draws run times of jobs whose run time is unknown, from what is known now.

    The online :class:`Lookahead` calls :meth:`bind` once per simulation, then
    :meth:`observe` at each decision (the simulation's finished jobs are the only
    run times it may learn from), then :meth:`sample`. An estimator-driven sampler
    (e.g. one drawing from a predictor's distribution) implements the same three
    methods; ``hpcgym.sim`` itself never imports ``hpcgym.predictors``.
    """

    def bind(self, sim: Simulation, past: Workload | None) -> None:
        """Start a new simulation; ``past``: jobs of the trace before the window."""
        ...

    def observe(self, sim: Simulation) -> None:
        """Learn from the jobs of ``sim`` finished since the previous call."""
        ...

    def sample(
        self,
        user: np.ndarray,
        request: np.ndarray,
        elapsed: np.ndarray,
        n: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``(n, len(user))`` run times, each in ``(elapsed, request]``."""
        ...


class _FromFinishedJobs:
    """What the built-in samplers share: they learn from finished jobs only, those of
    the trace's past that ended before the window's first submission (in the order they
    ended) and then the simulation's, as it finishes them. Subclasses reset their state
    in ``_reset`` and learn in ``_add``."""

    def _reset(self) -> None:
        raise NotImplementedError

    def _add(self, users: np.ndarray, requests: np.ndarray, runtimes: np.ndarray) -> None:
        raise NotImplementedError

    def bind(self, sim: Simulation, past: Workload | None) -> None:
        self._reset()
        self._seen = 0
        self._wl = sim.workload
        if past is not None and len(past):
            end = past.submit + past.runtime
            done = np.flatnonzero(end <= float(self._wl.submit[0]))
            done = done[np.argsort(end[done], kind="stable")]
            self._add(past.user[done], past.request[done], past.runtime[done])

    def observe(self, sim: Simulation) -> None:
        nfin = int(sim.C[K.C_NFIN])
        if nfin > self._seen:
            jobs = sim.JI[K.I_FIN, self._seen : nfin]
            wl = self._wl
            self._add(wl.user[jobs], wl.request[jobs], wl.runtime[jobs])
            self._seen = nfin


class UserHistorySampler(_FromFinishedJobs):
    """Run times drawn from the same user's recently finished jobs.

    The empirical distribution of a job is the actual run times (``kind="runtime"``,
    default; capped at the job's request) or the actual/requested ratios (``"ratio"``;
    times the job's request) of the last ``recent`` finished jobs of the same user
    (``match="user"``) -- or first of the same user with the same request
    (``match="user-request"``: a repeated submission of the same job), then of the same
    user -- using a level once it has at least ``min_user`` values; the last ``pool``
    finished jobs of all users are the fallback. A job that has already run ``elapsed``
    seconds is conditioned on it: only values above ``elapsed`` (ratios above
    ``elapsed / request``) are drawn, falling back level by level; if none is left,
    the job runs to its request. With ``recent=2`` and ``kind="runtime"`` this is a
    sampled version of Tsafrir et al.'s AVE2 predictor.

    Finished jobs are those of the simulation (exact completion times) and, from the
    ``past`` of the trace, jobs with ``submit + runtime <=`` the window's first
    submission (an approximation: their wait before the window is unknown).

    :param recent: values kept per user (and per user and request)
    :param min_user: fewest values a level needs to be used
    :param pool: values kept over all users
    :param kind: ``"runtime"`` (default) or ``"ratio"``
    :param match: ``"user"`` (default) or ``"user-request"``
    """

    def __init__(
        self,
        recent: int = 4,
        min_user: int = 2,
        pool: int = 1024,
        kind: str = "runtime",
        match: str = "user",
    ) -> None:
        if kind not in ("ratio", "runtime"):
            raise ValueError(f"kind must be 'ratio' or 'runtime', got {kind!r}")
        if match not in ("user", "user-request"):
            raise ValueError(f"match must be 'user' or 'user-request', got {match!r}")
        self.kind = kind
        self.match = match
        self.recent = _int_option("recent", recent, 1)
        self.min_user = _int_option("min_user", min_user, 1)
        self.pool = _int_option("pool", pool, 1)

    def _reset(self) -> None:
        self._hist: dict[tuple[int, ...], deque[float]] = {}
        self._all: deque[float] = deque(maxlen=self.pool)
        self._cache: dict[tuple[int, ...], np.ndarray] = {}
        self._all_arr: np.ndarray | None = None

    def _keys(self, u: int, req: float) -> list[tuple[int, ...]]:
        if self.match == "user-request":
            return [(u, int(round(req))), (u,)]
        return [(u,)]

    def _add(self, users: np.ndarray, requests: np.ndarray, runtimes: np.ndarray) -> None:
        vals = runtimes if self.kind == "runtime" else runtimes / requests
        for u, req, v in zip(users.tolist(), requests.tolist(), vals.tolist(), strict=True):
            for key in self._keys(u, req):
                d = self._hist.get(key)
                if d is None:
                    d = self._hist[key] = deque(maxlen=self.recent)
                d.append(v)
                self._cache.pop(key, None)
            self._all.append(v)
        if len(users):
            self._all_arr = None

    def _values(self, key: tuple[int, ...]) -> np.ndarray | None:
        a = self._cache.get(key)
        if a is None:
            d = self._hist.get(key)
            if d is None or len(d) < self.min_user:
                return None
            a = self._cache[key] = np.fromiter(d, dtype=np.float64, count=len(d))
        return a

    def sample(
        self,
        user: np.ndarray,
        request: np.ndarray,
        elapsed: np.ndarray,
        n: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        if self._all_arr is None:
            self._all_arr = np.fromiter(self._all, dtype=np.float64, count=len(self._all))
        out = np.empty((n, len(user)))
        scale = self.kind == "ratio"
        for i, (u, req, el) in enumerate(
            zip(user.tolist(), request.tolist(), elapsed.tolist(), strict=True)
        ):
            thr = el / req if scale else el
            pool = None
            for key in self._keys(u, req):
                a = self._values(key)
                if a is not None and thr > 0.0:
                    a = a[a > thr]
                if a is not None and len(a):
                    pool = a
                    break
            if pool is None:
                a = self._all_arr
                pool = a[a > thr] if thr > 0.0 else a
            if len(pool) == 0:
                out[:, i] = req
            else:
                out[:, i] = pool[rng.integers(len(pool), size=n)] * (req if scale else 1.0)
        np.minimum(out, request, out=out)
        np.maximum(out, np.nextafter(elapsed, np.inf), out=out)
        return out


class Ave2ResidualSampler(_FromFinishedJobs):
    """Run times as an AVE2 point prediction times a recently observed error.

    The prediction of a job of user ``u`` is the mean of ``u``'s last ``recent`` (2:
    AVE2, Tsafrir, Etsion and Feitelson 2007) finished run times, capped at the request;
    a user with no finished job is predicted at the request. When a job finishes, the
    log error ``ln(run time / prediction)`` of the prediction its user's history gave
    just before (all of it known by then) joins one of two pools of the last ``pool``
    errors: that of history-based predictions, or that of request-based ones. A draw is
    the prediction times ``exp(r)``, ``r`` drawn from the job's pool: the errors' whole
    empirical distribution, the jobs killed at once and the overruns included. A job
    that has already run ``elapsed`` seconds draws only among the errors that put it
    above ``elapsed``; if none does, it runs to its request. Draws are capped at the
    request. An empty pool (no finished job yet) gives the prediction itself.

    Finished jobs are those of the simulation and, from the ``past`` of the trace,
    jobs with ``submit + runtime <=`` the window's first submission.

    :param recent: finished run times averaged per user (default 2: AVE2)
    :param pool: errors kept per pool (default 1024)
    """

    def __init__(self, recent: int = 2, pool: int = 1024) -> None:
        self.recent = _int_option("recent", recent, 1)
        self.pool = _int_option("pool", pool, 1)

    def _reset(self) -> None:
        self._hist: dict[int, deque[float]] = {}
        self._err: dict[bool, deque[float]] = {
            True: deque(maxlen=self.pool),
            False: deque(maxlen=self.pool),
        }
        self._err_arr: dict[bool, np.ndarray | None] = {True: None, False: None}

    def _point(self, user: int, request: float) -> tuple[float, bool]:
        """One job's prediction (at least 1 s) and whether the user's history gave it."""
        d = self._hist.get(user)
        if d:
            return max(min(sum(d) / len(d), request), 1.0), True
        return max(request, 1.0), False

    def predict(self, user: np.ndarray, request: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The point predictions of jobs of ``user`` with ``request``, and whether each
        came from the user's history (else it is the request)."""
        pairs = [
            self._point(u, r)
            for u, r in zip(np.asarray(user).tolist(), np.asarray(request).tolist(), strict=True)
        ]
        pred = np.array([p for p, _ in pairs], dtype=np.float64)
        return pred, np.array([k for _, k in pairs], dtype=bool)

    def _add(self, users: np.ndarray, requests: np.ndarray, runtimes: np.ndarray) -> None:
        for u, req, rt in zip(users.tolist(), requests.tolist(), runtimes.tolist(), strict=True):
            pred, known = self._point(u, req)
            self._err[known].append(float(np.log(max(min(rt, req), 1.0) / pred)))
            self._err_arr[known] = None
            d = self._hist.get(u)
            if d is None:
                d = self._hist[u] = deque(maxlen=self.recent)
            d.append(float(rt))

    def _errors(self, known: bool) -> np.ndarray:
        a = self._err_arr[known]
        if a is None:
            d = self._err[known]
            a = self._err_arr[known] = np.fromiter(d, dtype=np.float64, count=len(d))
        return a

    def sample(
        self,
        user: np.ndarray,
        request: np.ndarray,
        elapsed: np.ndarray,
        n: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        pred, known = self.predict(user, request)
        out = np.empty((n, len(pred)))
        for i, (p, k, el) in enumerate(
            zip(pred.tolist(), known.tolist(), elapsed.tolist(), strict=True)
        ):
            errs = self._errors(k)
            if el > 0.0 and len(errs):
                errs = errs[errs > np.log(el / p)]
                if not len(errs):
                    out[:, i] = request[i]
                    continue
            out[:, i] = p * np.exp(errs[rng.integers(len(errs), size=n)]) if len(errs) else p
        np.minimum(out, request, out=out)
        np.maximum(out, np.nextafter(elapsed, np.inf), out=out)
        return out


#: built-in samplers: ``LOOKAHEAD,sampler=<name>``
SAMPLERS: dict[str, type] = {
    "user-history": UserHistorySampler,
    "ave2-residual": Ave2ResidualSampler,
}


def make_sampler(name: str, **options: Any) -> RuntimeSampler:
    """A built-in sampler by name (see :data:`SAMPLERS`) with its options."""
    cls = SAMPLERS.get(str(name).lower())
    if cls is None:
        raise ValueError(f"unknown sampler {name!r}; valid: {', '.join(SAMPLERS)}")
    return cls(**options)
