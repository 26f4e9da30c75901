"""Windows: the same job windows for every evaluated method (:func:`select_windows`, the
one selector; the sampling itself is :class:`hpcgym.workload.WindowSampler`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcgym.workload.sequences import VALIDATION_FRACTION

if TYPE_CHECKING:
    from hpcgym.workload import Workload

__all__ = [
    "PAPER_LENGTH",
    "PAPER_WINDOWS",
    "WindowSet",
    "distinct_jobs",
    "load_quartiles",
    "load_quartiles_text",
    "select_windows",
]

#: The paper's evaluation protocol (section 4.3): 10 random sequences of 1024 jobs.
PAPER_WINDOWS, PAPER_LENGTH = 10, 1024


@dataclass(frozen=True)
class WindowSet:
    """The windows every method runs on: ``workload.window(s, length)`` for each start.

    :param starts: window start indices (cleaned, submit-ordered trace)
    :param length: jobs per window
    :param how: ``sampled`` (seeded uniform draws), ``evenly`` (evenly spaced),
        ``explicit`` (given) or ``full`` (the whole split as one window)
    :param split: ``train``, ``validation``, ``test`` or ``all``
    :param seed: sampler seed (``sampled``)
    :param train_fraction: share of the jobs in the training range (the test split
        begins after it)
    :param prefix: only the first ``prefix`` jobs of the trace were considered
    :param validation_fraction: share of the training range held back as the validation
        split (:func:`hpcgym.workload.split_range`)
    """

    starts: tuple[int, ...]
    length: int
    how: str = "explicit"
    split: str = "all"
    seed: int | None = None
    train_fraction: float = 0.7
    prefix: int | None = None
    validation_fraction: float = VALIDATION_FRACTION

    def to_dict(self) -> dict[str, Any]:
        """The windows as the JSON of ``results.json`` (``windows``)."""
        return {
            "starts": list(self.starts),
            "length": self.length,
            "how": self.how,
            "split": self.split,
            "seed": self.seed,
            "train_fraction": self.train_fraction,
            "prefix": self.prefix,
            "validation_fraction": self.validation_fraction,
        }


def select_windows(
    n_jobs: int,
    length: int = PAPER_LENGTH,
    count: int = PAPER_WINDOWS,
    split: str = "test",
    seed: int | None = 1,
    train_fraction: float = 0.7,
    starts: Sequence[int] | None = None,
    full_trace: bool = False,
    prefix: int | None = None,
    validation_fraction: float = VALIDATION_FRACTION,
) -> WindowSet:
    """Choose evaluation windows.

    * ``starts``: exactly these (replay), each checked against the trace;
    * ``full_trace``: one window covering the whole ``split`` range (``all``: the trace);
    * otherwise ``count`` starts of ``length``-job windows inside ``split``: drawn
      uniformly with replacement by :class:`hpcgym.workload.WindowSampler` seeded with
      ``seed`` (as ``hpcgym compare``), or evenly spaced when ``seed`` is ``None`` (as the
      training script's evaluation).

    :param n_jobs: jobs in the trace
    :param prefix: consider only the first ``prefix`` jobs (the paper used the first
        10,000 jobs of each trace); the split is taken inside the prefix
    :param validation_fraction: share of the training range that is the validation split
    """
    from hpcgym.workload import WindowSampler, split_range

    vf = float(validation_fraction)

    n = int(n_jobs)
    if prefix is not None:
        if prefix <= 0:
            raise ValueError(f"prefix must be positive, got {prefix}")
        n = min(n, int(prefix))
    if starts:
        st = tuple(int(s) for s in starts)
        for s in st:
            if s < 0 or s + length > n:
                raise ValueError(
                    f"window start {s} with length {length} is outside the trace "
                    f"({n} jobs): valid starts are 0..{n - length}"
                )
        return WindowSet(st, int(length), "explicit", "all", None, train_fraction, prefix, vf)
    if full_trace:
        lo, hi = split_range(n, split, train_fraction, vf)
        if hi <= lo:
            raise ValueError(f"the {split!r} split of the trace is empty")
        return WindowSet((lo,), hi - lo, "full", split, None, train_fraction, prefix, vf)
    if count <= 0:
        raise ValueError(f"the number of windows must be positive, got {count}")
    sampler = WindowSampler(
        n, length, split=split, train_fraction=train_fraction, seed=seed, validation_fraction=vf
    )
    if seed is None:
        st = tuple(int(s) for s in sampler.evenly_spaced(count))
        return WindowSet(st, int(length), "evenly", split, None, train_fraction, prefix, vf)
    st = tuple(int(s) for s in sampler.sample_many(count))
    return WindowSet(st, int(length), "sampled", split, int(seed), train_fraction, prefix, vf)


def distinct_jobs(starts: Sequence[int], length: int) -> int:
    """How many different jobs the windows ``[s, s + length)`` hold together.

    Windows drawn from a short split overlap: 30 windows of 1,024 jobs from the Lublin
    traces' 3,000-job test split hold about 3,000 different jobs, from SDSC-SP2's
    16,210-job one about 14,000. The paired interval is about the mean over the windows
    of that range; how far a result carries beyond the period it covers rests on how
    long that period is (docs/evaluation.md, *What a test interval covers*).

    :param starts: window start indices
    :param length: jobs per window
    :raises ValueError: ``length`` is negative
    """
    if int(length) < 0:
        raise ValueError(f"the window length must be >= 0, got {length}")
    total, end = 0, None
    for s in sorted(int(x) for x in starts):
        lo, hi = s if end is None else max(s, end), s + int(length)
        total += max(0, hi - lo)
        end = hi if end is None else max(end, hi)
    return total


def load_quartiles(workload: Workload, windows: WindowSet) -> dict[str, float] | None:
    """Quartiles of the offered load of the windows (:attr:`Workload.offered_load` of
    each: work over the machine's capacity during its submit span), recorded next to
    every ratio measured on them: a backfilling agent gains most on loaded windows, so a
    validation ratio measured on more loaded windows than the test ones overstates the
    test (docs/research/findings.md).

    :param workload: the trace the windows are cut from
    :param windows: the windows
    :return: ``{"q1", "median", "q3"}``, or ``None`` when no window has a load (every
        window's jobs were submitted at one instant)
    """
    loads = np.array(
        [workload.window(s, windows.length).offered_load for s in windows.starts], dtype=float
    )
    loads = loads[np.isfinite(loads)]
    if loads.size == 0:
        return None
    q1, median, q3 = np.percentile(loads, [25, 50, 75])
    return {"q1": float(q1), "median": float(median), "q3": float(q3)}


def load_quartiles_text(quartiles: dict[str, float] | None) -> str:
    """``offered load 1.02 / 1.25 / 1.45 (quartiles)`` for a report line ("" without)."""
    if not quartiles:
        return ""
    return (
        f"offered load {quartiles['q1']:.2f} / {quartiles['median']:.2f} / "
        f"{quartiles['q3']:.2f} (quartiles)"
    )
