"""Windows of consecutive jobs, train/test time splits and a seeded window sampler.

Episodes and evaluations run on *windows*: ``length`` consecutive jobs of a cleaned,
submit-ordered trace, starting at job index ``start``. A :class:`Window` is addressed
by ``(trace, start, length)``, so any result can be reproduced exactly with
``window.workload()``.

Traces are split **in time** (by job order): by default the first 70 % of the jobs
form the *training range* and the last 30 % the ``test`` split. The last 10 % of the
training range is held back as the ``validation`` split (training-time evaluation,
model selection, early stopping); training episodes come from the ``train`` split, the
rest of the training range. A window never crosses a boundary, so no validation or test
job is ever seen while training, and no test job while selecting a model::

    |<------------------ training range (70 %) ------------------>|<-- test (30 %) -->|
    |<------------- train (63 %) ------------>|<- validation (7 %) ->|                 |

Window starts are drawn uniformly, or (``load_weighting=p > 0``, a training option) with
probability proportional to ``load ** p``, ``load`` being the window's offered load
(:func:`window_loads`), so that heavily loaded windows are drawn more often.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from hpcgym.workload.core import Workload

__all__ = [
    "SPLITS",
    "VALIDATION_FRACTION",
    "Split",
    "Window",
    "WindowSampler",
    "split_range",
    "window_loads",
]

Split = Literal["train", "validation", "test", "all"]

#: Valid split names.
SPLITS: tuple[str, ...] = ("train", "validation", "test", "all")

#: Default share of the training range held back as the validation split.
VALIDATION_FRACTION = 0.1


@dataclass(frozen=True)
class Window:
    """``length`` consecutive jobs of ``trace`` starting at job index ``start``.

    :param trace: what :func:`hpcgym.workload.load` accepts (registered name or path)
    :param start: index of the first job in the cleaned, submit-ordered trace
    :param length: number of jobs
    """

    trace: str
    start: int
    length: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.length <= 0:
            raise ValueError(
                f"invalid window start={self.start} length={self.length}: "
                "start must be >= 0 and length > 0"
            )

    @property
    def stop(self) -> int:
        """Index one past the last job."""
        return self.start + self.length

    def of(self, workload: Workload) -> Workload:
        """The window's jobs cut out of an already loaded ``workload`` (views)."""
        return workload.window(self.start, self.length)

    def workload(self, machine_size: int | None = None) -> Workload:
        """Load the trace (cached by :func:`hpcgym.workload.load`) and cut the window."""
        from hpcgym.workload.traces import load

        return load(self.trace, machine_size=machine_size).window(self.start, self.length)

    def __str__(self) -> str:
        return f"{self.trace}[{self.start}:{self.stop}]"


def _check_fraction(train_fraction: float) -> float:
    f = float(train_fraction)
    if not (0.0 < f < 1.0) or math.isnan(f):
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    return f


def split_range(
    n_jobs: int,
    split: str = "train",
    train_fraction: float = 0.7,
    validation_fraction: float = VALIDATION_FRACTION,
) -> tuple[int, int]:
    """Job index range ``[lo, hi)`` of a split.

    The test boundary is ``b = round(train_fraction * n_jobs)`` and the validation
    boundary ``v = b - round(validation_fraction * b)``: ``"train"`` is ``[0, v)``,
    ``"validation"`` is ``[v, b)``, ``"test"`` is ``[b, n_jobs)`` and ``"all"`` is
    ``[0, n_jobs)``.

    :param n_jobs: jobs in the (cleaned) trace
    :param split: one of :data:`SPLITS`
    :param train_fraction: share of the jobs in the training range, in (0, 1)
    :param validation_fraction: share of the training range held back for validation,
        in [0, 1) (0: no validation split; ``train`` is then the whole training range)
    """
    n = int(n_jobs)
    if n < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    f = _check_fraction(train_fraction)
    vf = float(validation_fraction)
    if not 0.0 <= vf < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    boundary = round(f * n)
    val = boundary - round(vf * boundary)
    if split == "train":
        return 0, val
    if split == "validation":
        return val, boundary
    if split == "test":
        return boundary, n
    if split == "all":
        return 0, n
    raise ValueError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")


class WindowSampler:
    """Seeded sampler of window starts inside one split of a trace.

    :param jobs: the workload, or its number of jobs
    :param length: window length (jobs)
    :param split: ``"train"`` (default), ``"validation"``, ``"test"`` or ``"all"``
    :param train_fraction: share of the jobs in the training range
    :param validation_fraction: share of the training range held back for validation
    :param seed: ``None``, an int or a :class:`numpy.random.Generator`
    :param trace: trace spec recorded in :meth:`window` (default: the workload's name
        if it is a registered trace, else its source file)
    :param load_weighting: ``p >= 0``: a start is drawn with probability proportional to
        ``min(load, cap) ** p``, ``load`` = the offered load of its window
        (:func:`window_loads`), ``cap`` = the 99th percentile of the split's window loads
        (a burst of jobs submitted within seconds has an unbounded load); ``0`` (default)
        draws uniformly. Needs ``jobs`` to be the workload.
    :raises ValueError: the split has fewer jobs than ``length``; a negative or
        non-finite ``load_weighting``; ``load_weighting > 0`` without the workload
    """

    def __init__(
        self,
        jobs: int | Workload,
        length: int,
        split: str = "train",
        train_fraction: float = 0.7,
        seed: int | np.random.Generator | None = None,
        trace: str | None = None,
        validation_fraction: float = VALIDATION_FRACTION,
        load_weighting: float = 0.0,
    ) -> None:
        if isinstance(jobs, Workload):
            n_jobs = len(jobs)
            if trace is None:
                trace = _trace_spec(jobs)
        else:
            n_jobs = int(jobs)
        self.n_jobs = n_jobs
        self.length = int(length)
        self.split = split
        self.train_fraction = float(train_fraction)
        self.validation_fraction = float(validation_fraction)
        self.trace = trace
        if self.length <= 0:
            raise ValueError(f"window length must be positive, got {length}")
        self.lo, self.hi = split_range(n_jobs, split, train_fraction, validation_fraction)
        if self.hi - self.lo < self.length:
            raise ValueError(
                f"the {split!r} split of {trace or 'the trace'} has {self.hi - self.lo} jobs "
                f"(indices {self.lo}..{self.hi - 1} of {n_jobs}, train_fraction="
                f"{self.train_fraction}, validation_fraction={self.validation_fraction}), "
                f"fewer than the window length {self.length}; "
                "use a shorter window, another split or a longer trace"
            )
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.load_weighting = float(load_weighting)
        if not (math.isfinite(self.load_weighting) and self.load_weighting >= 0):
            raise ValueError(
                f"load_weighting must be a finite number >= 0 (0 = uniform), got {load_weighting}"
            )
        #: cumulative draw weights of the valid starts (``None``: uniform)
        self._cdf: np.ndarray | None = None
        if self.load_weighting > 0:
            if not isinstance(jobs, Workload):
                raise ValueError("load_weighting > 0 needs the workload, not its number of jobs")
            loads = window_loads(jobs, self.length, self.lo, self.hi)
            finite = loads[np.isfinite(loads)]
            cap = float(np.percentile(finite, 99)) if finite.size else 1.0
            weights = np.minimum(loads, cap) ** self.load_weighting  # inf -> cap
            if weights.sum() > 0:  # else (no work at all): uniform
                self._cdf = np.cumsum(weights / weights.sum())

    @property
    def fractions(self) -> tuple[float, float]:
        """``(train_fraction, validation_fraction)`` of the split."""
        return self.train_fraction, self.validation_fraction

    @property
    def n_starts(self) -> int:
        """Number of valid window starts."""
        return self.hi - self.length + 1 - self.lo

    @property
    def valid_starts(self) -> np.ndarray:
        """All valid window starts, ascending."""
        return np.arange(self.lo, self.hi - self.length + 1, dtype=np.int64)

    def sample(self) -> int:
        """One window start drawn with the sampler's generator."""
        return self.draw(self.rng)

    def draw(self, rng: np.random.Generator) -> int:
        """One window start drawn with ``rng`` (uniformly, or by load: ``load_weighting``).

        :param rng: the generator (e.g. an env's ``np_random``); a uniform draw is one
            ``rng.integers`` call, a weighted one one ``rng.random`` call
        """
        if self._cdf is None:
            return int(rng.integers(self.lo, self.hi - self.length + 1))
        return int(self._weighted(rng.random()))

    def _weighted(self, u: float | np.ndarray) -> np.ndarray:
        """The starts of uniform numbers ``u`` in [0, 1) under the load weights."""
        assert self._cdf is not None
        i = np.searchsorted(self._cdf, np.asarray(u) * self._cdf[-1], side="right")
        return self.lo + np.minimum(i, len(self._cdf) - 1).astype(np.int64)

    def sample_many(self, k: int) -> np.ndarray:
        """``k`` window starts drawn with replacement (uniformly, or by load)."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if self._cdf is None:
            return self.rng.integers(
                self.lo, self.hi - self.length + 1, size=int(k), dtype=np.int64
            )
        return self._weighted(self.rng.random(int(k)))

    def evenly_spaced(self, k: int) -> np.ndarray:
        """``k`` deterministic starts spread evenly from the first to the last valid start.

        Does not use the random generator. With ``k == 1`` the first valid start.
        """
        k = int(k)
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        if k > self.n_starts:
            raise ValueError(
                f"cannot place {k} distinct windows of {self.length} jobs in the {self.split!r} "
                f"split ({self.n_starts} valid starts)"
            )
        if k == 1:
            return np.array([self.lo], dtype=np.int64)
        last = self.hi - self.length
        starts = np.floor(np.linspace(self.lo, last, k) + 0.5).astype(np.int64)
        return starts

    def window(self, start: int | None = None) -> Window:
        """The :class:`Window` at ``start`` (default: a sampled start)."""
        if self.trace is None:
            raise ValueError("this sampler has no trace name; pass trace=... to WindowSampler")
        if start is None:
            start = self.sample()
        start = int(start)
        if not (self.lo <= start <= self.hi - self.length):
            raise ValueError(
                f"start {start} is outside the {self.split!r} split: valid starts are "
                f"{self.lo}..{self.hi - self.length}"
            )
        return Window(self.trace, start, self.length)

    def __repr__(self) -> str:
        return (
            f"WindowSampler(n_jobs={self.n_jobs}, length={self.length}, split={self.split!r}, "
            f"range=[{self.lo}, {self.hi}), train_fraction={self.train_fraction}"
            + (f", load_weighting={self.load_weighting}" if self.load_weighting else "")
            + ")"
        )


def window_loads(workload: Workload, length: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """Offered load of every window of ``length`` jobs starting at ``lo .. hi - length``:
    its work (runtime x processors) over the machine's capacity during its submit span,
    :attr:`Workload.offered_load` of each window (``inf`` for a window whose jobs were all
    submitted at the same instant).

    :param workload: the trace
    :param length: jobs per window
    :param lo: first job of the range
    :param hi: end of the range (default: the whole trace)
    :return: float64 ``(hi - length + 1 - lo,)``
    """
    hi = len(workload) if hi is None else int(hi)
    starts = np.arange(int(lo), hi - int(length) + 1)
    work = np.concatenate(([0.0], np.cumsum(workload.runtime * workload.procs.astype(np.float64))))
    span = (workload.submit[starts + length - 1] - workload.submit[starts]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        loads = (work[starts + length] - work[starts]) / (workload.machine_size * span)
    return np.where(span > 0, loads, np.inf)


def _trace_spec(workload: Workload) -> str:
    """A spec :func:`hpcgym.workload.load` resolves back to ``workload``'s trace."""
    from hpcgym.workload.traces import TRACES

    if workload.name in TRACES:
        return workload.name
    return workload.source or workload.name
