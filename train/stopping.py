"""Stopping a session on time: the wall-time limit and SIGTERM, honoured within seconds.

* :class:`StopControl` -- when training must stop: the ``--time-limit`` deadline, or a
  signal (SIGTERM, how clusters stop jobs) caught while training (:meth:`StopControl.catching`);
* :class:`DeadlineRolloutBuffer` (and :class:`DeadlineDictRolloutBuffer`) -- sb3-contrib's
  masked rollout buffers whose ``get()`` stops yielding minibatches once the stop is due,
  so a PPO update in progress ends after its current minibatch instead of running all its
  epochs. ``MaskablePPO.train`` iterates ``for epoch: for batch in rollout_buffer.get()``;
  a cut update still makes at least one gradient step (SB3 logs its last loss).

The rollout side is checked at every environment step by
:class:`train.callbacks.StopCallback`. The buffer class is not saved with the model
(:data:`train.rundir.SAVE_EXCLUDE`), so saved models load without ``train/`` on the path.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any

from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer

__all__ = [
    "DeadlineDictRolloutBuffer",
    "DeadlineRolloutBuffer",
    "StopControl",
    "buffer_class_for",
]

#: Stop reasons written to ``summary.json`` (``sessions[i]["stop_reason"]``).
TARGET, TIME_LIMIT = "target reached", "time limit"

#: Signals a ``--seeds`` parent sends its workers to pass on a signal that reached it alone
#: (a container's or batch system's SIGTERM to the job's leader), by the name passed on.
#: They request a stop under that name and never escalate: a worker that got the original
#: too (a signal to the whole process group) just stops once. ``{}`` where they do not exist.
PASS_ON: dict[str, int] = (
    {"SIGTERM": signal.SIGUSR1, "SIGINT": signal.SIGUSR2} if hasattr(signal, "SIGUSR2") else {}
)

#: Which signals :meth:`StopControl.catching` also takes as passed-on ones (set by a seeds
#: worker process, :func:`train.seeds._seed_worker`; empty elsewhere).
passed_on: dict[int, str] = {}

#: A passed-on signal that came while no session was catching (the seed's set-up): the
#: next :meth:`StopControl.catching` honours it at once. A passed-on signal never raises.
pending: str | None = None


class StopControl:
    """When the training of a session must stop: a deadline, or a caught signal.

    :param seconds: the wall-time budget from :meth:`start` (``None``: no limit)
    """

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.t0: float | None = None
        self.deadline: float | None = None
        self.signal: str | None = None

    def start(self) -> None:
        """Start the clock (the deadline is ``seconds`` from now)."""
        self.t0 = time.perf_counter()
        self.deadline = None if self.seconds is None else self.t0 + self.seconds

    def elapsed(self) -> float:
        """Seconds since :meth:`start` (0 before)."""
        return 0.0 if self.t0 is None else time.perf_counter() - self.t0

    def request(self, name: str) -> None:
        """Ask training to stop as soon as possible.

        :param name: why (a signal name such as ``SIGTERM``)
        """
        self.signal = self.signal or name

    def due(self) -> bool:
        """Whether training must stop now."""
        if self.signal is not None:
            return True
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def reason(self) -> str | None:
        """Why training must stop (the signal, ``time limit``), or ``None``."""
        if self.signal is not None:
            return self.signal
        return TIME_LIMIT if self.due() else None

    @contextmanager
    def catching(self, signals: Sequence[int] = (signal.SIGTERM,)) -> Iterator[StopControl]:
        """While in the block, ``signals`` request a graceful stop (a second one of them
        raises ``KeyboardInterrupt``), and so do the signals of :data:`passed_on` (under
        the name they pass on; never escalating). A passed-on copy and the original of the
        same signal are one request in either order: with a signal to a whole process
        group, a worker may get the parent's copy before its own. Only in the main
        thread; previous handlers are restored.

        :param signals: the signals to catch
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        direct: list[str] = []  # the signals of ``signals`` received in the block

        def handler(signum: int, _frame: FrameType | None) -> None:
            name = signal.Signals(signum).name
            if direct or self.signal not in (None, name):
                raise KeyboardInterrupt
            direct.append(name)
            self.request(name)

        def passed(signum: int, _frame: FrameType | None) -> None:  # never escalates
            self.request(passed_on[signum])

        global pending
        if pending is not None:  # passed on before this session began
            self.request(pending)
            pending = None
        old = {s: signal.signal(s, handler) for s in signals}
        old.update({s: signal.signal(s, passed) for s in passed_on})
        try:
            yield self
        finally:
            for s, h in old.items():
                signal.signal(s, h)


class _DeadlineMixin:
    """``get()`` that stops yielding minibatches once ``stop`` is due (after at least one
    minibatch of the update: the rollout buffer is refilled, and ``reset``, per update)."""

    stop: StopControl | None = None
    #: minibatches yielded since the buffer was last filled, and whether the stop cut them
    batches: int = 0
    cut: bool = False
    #: ``(batches, cut)`` of the previous update (read after ``reset``)
    previous: tuple[int, bool] = (0, False)

    def reset(self) -> None:
        super().reset()  # type: ignore[misc]
        self.previous = (self.batches, self.cut)
        self.batches = 0
        self.cut = False

    def get(self, batch_size: int | None = None) -> Generator[Any, None, None]:
        for samples in super().get(batch_size):  # type: ignore[misc]
            if self.batches and self.stop is not None and self.stop.due():
                self.cut = True
                return
            self.batches += 1
            yield samples


class DeadlineRolloutBuffer(_DeadlineMixin, MaskableRolloutBuffer):
    """:class:`MaskableRolloutBuffer` whose minibatches stop when ``stop`` is due."""


class DeadlineDictRolloutBuffer(_DeadlineMixin, MaskableDictRolloutBuffer):
    """:class:`MaskableDictRolloutBuffer` whose minibatches stop when ``stop`` is due."""


def buffer_class_for(observation_space: Any) -> type[MaskableRolloutBuffer]:
    """The deadline buffer class for an observation space (``Dict`` or not).

    :param observation_space: the env's observation space
    """
    from gymnasium import spaces

    if isinstance(observation_space, spaces.Dict):
        return DeadlineDictRolloutBuffer
    return DeadlineRolloutBuffer
