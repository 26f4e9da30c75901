"""Fairness columns of a comparison: the tail that an SJF-like order can starve.

AVEbsld rewards orders that run short jobs first, and such orders can starve large jobs.
So every comparison reports, per method, the mean over windows of the **maximum wait** and
of the **99th-percentile bounded slowdown** of each window. Against the comparison's ratio
reference it also gives the upper end of the 95% bootstrap interval of the paired
geometric-mean ratio of each tail metric. The max wait is floored at
:data:`MAX_WAIT_FLOOR` seconds, so that windows in which nobody waits stay comparable.

A method's ``tail`` is ``"not worse"`` when both upper ends are at most
:data:`TAIL_TOLERANCE` (a tail up to 10% longer is within the noise of a maximum);
otherwise it is ``"worse"``. A method is called better than the reference only when its
AVEbsld interval lies below 1 **and** its tail is not worse (``docs/schedule_env.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hpcgym.evaluation.results import EvalResult

__all__ = [
    "FAIRNESS_COLUMNS",
    "MAX_WAIT_FLOOR",
    "TAIL_TOLERANCE",
    "fair_verdict",
    "fairness",
    "tail_cell",
]

#: Summary columns of :func:`fairness`.
FAIRNESS_COLUMNS: tuple[str, ...] = (
    "mean_max_wait",
    "mean_p99_bsld",
    "tail_max_wait",
    "tail_p99_bsld",
    "tail",
)
#: the largest upper 95% bound of a tail ratio that still counts as "not worse"
TAIL_TOLERANCE = 1.10
#: seconds: the floor of the per-window maximum wait in the paired ratio
MAX_WAIT_FLOOR = 60.0


def _per_window(result: EvalResult, label: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-window ``(max_wait, p99_bsld)`` of a method: from the rows, or from the job
    start times of results recorded before the rows held them; ``None`` without either."""
    rows = [r for r in result.rows if r["method"] == label]
    if rows and all(r.get("p99_bsld") is not None for r in rows):
        return (
            np.array([float(r["max_wait"]) for r in rows]),
            np.array([float(r["p99_bsld"]) for r in rows]),
        )
    start = (result.job_start or {}).get(label)
    if start is None:
        return None
    return result.job_wait(label).max(axis=1), np.percentile(result.job_bsld(label), 99, axis=1)


def fairness(result: EvalResult, label: str) -> dict[str, Any]:
    """:data:`FAIRNESS_COLUMNS` of one method (``None`` where not measurable).

    :param result: the comparison
    :param label: the method
    """
    from hpcgym.evaluation.statistics import paired_comparison

    out: dict[str, Any] = dict.fromkeys(FAIRNESS_COLUMNS)
    mine = _per_window(result, label)
    if mine is None:
        return out
    out["mean_max_wait"] = float(mine[0].mean())
    out["mean_p99_bsld"] = float(mine[1].mean())
    ref = result.ratio_reference
    theirs = _per_window(result, ref) if ref in result.labels else None
    if theirs is None:
        return out
    hi = []
    for a, b in zip(mine, theirs, strict=True):
        pc = paired_comparison(
            np.maximum(a, MAX_WAIT_FLOOR) if a is mine[0] else a,
            np.maximum(b, MAX_WAIT_FLOOR) if b is theirs[0] else b,
        )
        hi.append(float(pc.ci_high))
    out["tail_max_wait"], out["tail_p99_bsld"] = hi
    out["tail"] = "not worse" if max(hi) <= TAIL_TOLERANCE else "worse"
    return out


def fair_verdict(summary: dict[str, Any]) -> str | None:
    """The verdict with the tail in it: ``"better"`` stays only when the tail is not worse.

    A lower mean AVEbsld bought with a longer tail (a starved job, a heavier p99) is no
    claim either way: it reads ``"inconclusive (longer tail)"``. Every other verdict is
    the AVEbsld verdict of :func:`hpcgym.evaluation.statistics.verdict` (recomputed from
    the statistics when they are there, so that every table reads the same rule).
    """
    from hpcgym.evaluation.statistics import verdict as _verdict

    word = _verdict(summary) or summary.get("verdict")
    if word == "better" and summary.get("tail") not in (None, "not worse"):
        return "inconclusive (longer tail)"
    return word


def tail_cell(summary: dict[str, Any]) -> str:
    """The report's cell of a method's tail test: the two upper bounds and the verdict."""
    if summary.get("tail") is None:
        return "—"
    return f"{summary['tail_max_wait']:.2f} / {summary['tail_p99_bsld']:.2f}: {summary['tail']}"
