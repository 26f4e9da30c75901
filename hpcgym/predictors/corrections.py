"""Correction of an under-estimated running job (Gaussier et al. SC'15, §5.2), as pure functions.

When a running job reaches its estimated end without finishing, the scheduler needs
a new estimate. Gaussier et al. ("First point", §5.2) consider three rules, always
"bounded by the requested running times":

* **requested** -- "Set the new prediction value to be the user requested running time".
* **incremental** -- "Use the corrective technique from [24] (Tsafrir et al.), i.e.
  increase at each correction by a fixed amount of time (1min, 5min, 15min, 30min,
  1h, 2h, 5h, 10h, 20h, 50h, 100h)".
* **doubling** (recursive doubling) -- "Increase the prediction value by the double of
  the elapsed running time".

Our reading (the engine, :mod:`hpcgym.sim._core`, implements the same rules):

* incremental (``variant="add"``, default): the k-th correction of a job
  (``count = k - 1`` earlier corrections) adds the k-th amount of
  :data:`INCREMENTS` to the *current* estimate, so after k corrections the estimate is
  the initial one plus the sum of the first k amounts; after the 11th, 100 h is added
  again each time. The amounts are increments ("increase ... by a fixed amount"), not
  offsets. The engine corrects a job exactly when its elapsed time reaches its
  current estimate, so adding to the current estimate and adding to the elapsed time
  are the same thing there; when a caller corrects late (elapsed > current estimate)
  the amount is added to the current estimate, and the safety rule below applies.
* incremental ``variant="offset"``: the authors' simulator (predictsim, corrector
  ``tsafrir``) sets the estimate to the *initial* estimate plus the k-th amount
  (replacing the previous amount: +1 min, then +5 min, then +15 min ... in total).
  predictsim stops growing after the 11th correction; we keep adding 100 h per
  correction so that the estimate never stalls below the request.
* doubling: the new estimate is twice the elapsed runtime. At the moment of the
  correction the elapsed time equals the current estimate, so this is "double the
  prediction" (as predictsim does); the literal "increase by the double of the elapsed
  time" (which would triple it) is not used.
* every result is capped at the request; if the capped result is not after the
  elapsed time (possible only for a late caller), the request is used, as the engine
  does (a job never runs past its request: request >= runtime).

The functions use only float arithmetic so they can be ported to numba as they are.
"""

from __future__ import annotations

__all__ = [
    "CORRECTIONS",
    "INCREMENTAL_VARIANTS",
    "INCREMENTS",
    "correct",
    "correct_doubling",
    "correct_incremental",
    "correct_requested",
    "increment_offset",
]

#: the incremental correction amounts, seconds (1 min ... 100 h)
INCREMENTS: tuple[float, ...] = (
    60.0,
    300.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    18000.0,
    36000.0,
    72000.0,
    180000.0,
    360000.0,
)

#: correction kinds (engine names) and accepted aliases
CORRECTIONS: dict[str, str] = {
    "requested": "requested",
    "request": "requested",
    "incremental": "incremental",
    "doubling": "doubling",
    "recursive-doubling": "doubling",
    "recursive_doubling": "doubling",
}

#: readings of the incremental rule (see the module docstring)
INCREMENTAL_VARIANTS: tuple[str, ...] = ("add", "offset")


def _finish(new: float, elapsed: float, request: float) -> float:
    if new > request:
        new = request
    if new <= elapsed:
        new = request
    return new


def correct_requested(elapsed: float, current_estimate: float, request: float) -> float:
    """REQUESTED TIME: the new estimate is the request."""
    return _finish(request, elapsed, request)


def increment_offset(k: int) -> float:
    """Total amount added to the initial estimate after ``k + 1`` corrections in the
    ``offset`` reading (``INCREMENTS[k]``, then +100 h per further correction); ``k = -1``
    gives 0."""
    if k < 0:
        return 0.0
    last = len(INCREMENTS) - 1
    if k <= last:
        return INCREMENTS[k]
    return INCREMENTS[last] * (k - last + 1)


def correct_incremental(
    elapsed: float, current_estimate: float, request: float, count: int = 0, variant: str = "add"
) -> float:
    """INCREMENTAL (Tsafrir et al. via Gaussier et al. §5.2).

    :param elapsed: time the job has run so far
    :param current_estimate: its current (running) estimate
    :param request: its request (upper bound of every estimate)
    :param count: corrections already applied to this job (0 for the first)
    :param variant: ``"add"`` (default; the engine's rule) or ``"offset"`` (predictsim)
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if variant == "add":
        k = count if count < len(INCREMENTS) else len(INCREMENTS) - 1
        new = current_estimate + INCREMENTS[k]
    elif variant == "offset":
        new = current_estimate - increment_offset(count - 1) + increment_offset(count)
    else:
        raise ValueError(
            f"unknown incremental variant {variant!r}; valid choices: "
            f"{', '.join(INCREMENTAL_VARIANTS)}"
        )
    return _finish(new, elapsed, request)


def correct_doubling(elapsed: float, current_estimate: float, request: float) -> float:
    """RECURSIVE DOUBLING: twice the elapsed runtime."""
    return _finish(2.0 * elapsed, elapsed, request)


def correct(
    kind: str,
    elapsed: float,
    current_estimate: float,
    request: float,
    count: int = 0,
    *,
    variant: str = "add",
) -> float:
    """New estimate of a running job that reached ``current_estimate`` without finishing.

    :param kind: one of :data:`CORRECTIONS` (``requested``, ``incremental``, ``doubling``)
    :param elapsed: time the job has run so far (>= current_estimate when called on time)
    :param current_estimate: its current estimate
    :param request: its request; the result is at most this
    :param count: corrections already applied to this job (incremental only)
    :param variant: incremental reading, one of :data:`INCREMENTAL_VARIANTS`
    """
    k = CORRECTIONS.get(str(kind).lower())
    if k is None:
        raise ValueError(
            f"unknown correction {kind!r}; valid choices: requested, incremental, doubling"
        )
    if k == "requested":
        return correct_requested(elapsed, current_estimate, request)
    if k == "incremental":
        return correct_incremental(elapsed, current_estimate, request, count, variant)
    return correct_doubling(elapsed, current_estimate, request)
