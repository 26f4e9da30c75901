"""Agents in the Slurm bridge: a Schedule-v0 agent orders a live queue as it orders the env's.

:class:`AgentOrderer` asks a Schedule-v0 agent for the queue order of a pass, with the
observation rows of the env (:func:`hpcgym.envs.queue_observation.build_queue`) built
from a :class:`LiveView`: the live jobs in the shape of the engine's public view. The
questions are those of the engine's queue decision (``docs/engine.md``): the agent names
the head; a head that fits starts (in the view) and the agent is asked again for the rest
of the queue, at the same time; a head that does not fit is reserved for, and the jobs
behind it follow in the row order's policy. Slurm's scheduler then does the starting,
reserving and backfilling.

:func:`make_orderer` turns what a user types after ``--policy`` into an orderer: a queue
policy, a Schedule-v0 agent (a model card with ``task: schedule``, a ``.zip`` whose
spaces are Schedule-v0's, or the heuristic agents ``first`` and ``random``), or a
Backfill-v0 agent of the zoo, which orders the queue with the queue policy it was trained
under (its backfilling decisions are Slurm's backfill scheduler's to make).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.envs.queue_observation import QUEUE_COLUMNS, QueueFeatures, build_queue
from hpcgym.sim.engine import POLICIES
from hpcgym.sim.ordering import policy_order
from hpcgym.slurm.bridge import QueuePolicyOrderer, SlurmJob, Snapshot, limit_seconds

__all__ = ["AgentOrderer", "LiveView", "make_orderer"]

#: the tau of the log time scale (as the env's ``time_scale="log"``)
LOG_TAU = 10.0
#: completed jobs the bridge remembers for the users' accuracy column
HISTORY = 4096
#: heuristic agents that answer Schedule-v0's question (the others are Backfill-v0's)
SCHEDULE_HEURISTICS = ("first", "random")


class LiveView:
    """The live jobs of one pass with the attributes of the engine's
    :class:`~hpcgym.sim.view.EngineView` that the Schedule-v0 rows read.

    Job indices: the pending jobs (submission order), then the running jobs, then the
    remembered finished jobs (completion order). :meth:`start_now` starts a pending job
    in the view (the engine's "a head that fits starts").

    :param pending: the orderable pending jobs, in submission order
    :param running: the running jobs
    :param finished: ``(job, run time, end)`` of finished jobs, in completion order
    :param now: the time of the pass (epoch seconds)
    :param free: idle CPUs
    :param machine_size: CPUs of the cluster
    :param unlimited: the estimate of a job without a time limit
    """

    def __init__(
        self,
        pending: list[SlurmJob],
        running: list[SlurmJob],
        finished: list[tuple[SlurmJob, float, float]],
        now: float,
        free: int,
        machine_size: int,
        unlimited: float,
    ) -> None:
        jobs = pending + running + [f[0] for f in finished]
        n = len(jobs)
        self.jobs = jobs
        self.now = float(now)
        self.free = int(free)
        self.machine_size = max(int(machine_size), 1)
        self.submit = np.array([j.submit for j in jobs], dtype=np.float64)
        self.request = np.array([limit_seconds(j, unlimited) for j in jobs], dtype=np.float64)
        self.estimate = self.request.copy()
        self.rank_estimate = self.estimate  # the engine view's ranking estimate: the same
        self.procs = np.array([max(j.cpus, 1) for j in jobs], dtype=np.int64)
        self.start = np.full(n, np.nan)
        self.running_estimate = self.request.copy()
        self.runtime = self.request.copy()
        p, r = len(pending), len(running)
        for k, j in enumerate(running):
            self.start[p + k] = now if j.start is None else j.start
        for k, (_, runtime, end) in enumerate(finished):
            self.runtime[p + r + k] = runtime
            self.start[p + r + k] = end - runtime
        self.waiting_buffer = np.arange(p, dtype=np.int64)
        self.n_waiting = p
        self.running_buffer = np.zeros(n, dtype=np.int64)
        self.n_running = 0
        for k in range(r):
            self._run_insert(p + k)
        self.finished_buffer = np.arange(p + r, n, dtype=np.int64)
        self.n_finished = n - p - r

    def _run_insert(self, j: int) -> None:
        """Insert into the running list, sorted by estimated end then index (the engine's)."""
        ends = self.start + self.running_estimate
        run = self.running_buffer[: self.n_running]
        k = 0
        while k < len(run) and (ends[run[k]], run[k]) <= (ends[j], j):
            k += 1
        self.running_buffer[k + 1 : self.n_running + 1] = self.running_buffer[k : self.n_running]
        self.running_buffer[k] = j
        self.n_running += 1

    def waiting(self) -> np.ndarray:
        return np.array(self.waiting_buffer[: self.n_waiting])

    def start_now(self, j: int) -> None:
        """Start waiting job ``j`` now (in the view only)."""
        w = self.waiting_buffer[: self.n_waiting]
        self.waiting_buffer[: self.n_waiting - 1] = w[w != j]
        self.n_waiting -= 1
        self.start[j] = self.now
        self.free -= int(self.procs[j])
        self._run_insert(j)


class AgentOrderer:
    """A Schedule-v0 agent (SB3's ``predict`` with ``action_masks``) orders the queue.

    :param agent: the agent
    :param name: its name in the log
    :param order: the queue policy of the observation rows (row 0 = its choice) and of
        the jobs behind a head that does not fit (the env's ``order``)
    :param est_scale: the observation's duration scale (seconds); ``None``: the largest
        time limit of the jobs of the pass
    :param wait_scale: the wait column's scale (``None``: ``est_scale``)
    :param time_scale: ``linear`` or ``log`` (as the agent was trained)
    :param max_queue: ``K``, the observation rows
    :param unlimited: the estimate of a job without a time limit (seconds)
    :param starvation: the env's starvation threshold (seconds, or ``auto``: 3 x the
        largest time limit of the pass): the oldest job past it is the head without a
        question, as in the env the agent was trained in
    """

    needs_machine = True

    def __init__(
        self,
        agent: Any,
        name: str,
        order: str = "FCFS",
        est_scale: float | None = None,
        wait_scale: float | None = None,
        time_scale: str = "linear",
        max_queue: int = 128,
        unlimited: float = 365 * 86400.0,
        starvation: float | str | None = None,
    ) -> None:
        if starvation is not None and starvation != "auto" and not float(starvation) > 0:
            raise ValueError(f"starvation must be seconds > 0 or 'auto', got {starvation!r}")
        self.starvation = starvation if starvation in (None, "auto") else float(starvation)
        self.agent = agent
        self.name = name
        self.rows = QueuePolicyOrderer(order, unlimited=unlimited)
        self.est_scale = est_scale
        self.wait_scale = wait_scale
        if time_scale not in ("linear", "log"):
            raise ValueError(f"time_scale must be 'linear' or 'log', got {time_scale!r}")
        self.tau = LOG_TAU if time_scale == "log" else 0.0
        self.max_queue = int(max_queue)
        self.unlimited = float(unlimited)
        self.origin: float | None = None
        self._finished: dict[str, tuple[SlurmJob, float, float]] = {}
        self.last_choices: list[dict[str, Any]] = []

    def _remember(self, snap: Snapshot) -> list[tuple[SlurmJob, float, float]]:
        for j in snap.finished:
            if j.job_id not in self._finished and j.end is not None:
                self._finished[j.job_id] = (j, float(j.used), float(j.end))
        if len(self._finished) > HISTORY:
            keep = sorted(self._finished.items(), key=lambda kv: kv[1][2])[-HISTORY:]
            self._finished = dict(keep)
        return sorted(self._finished.values(), key=lambda f: (f[2], f[0].sort_key))

    def _keys(self, view: LiveView, jobs: np.ndarray, theta: float | None = None) -> np.ndarray:
        """The row-order policy's order of ``jobs`` (view indices) at the pass's time
        (with ``theta``: the jobs waiting longer first, as the engine's queue)."""
        o = self.origin if self.origin is not None else 0.0
        idx = policy_order(
            self.rows.policy,
            view.submit[jobs] - o,
            view.procs[jobs],
            view.estimate[jobs],
            view.now - o,
            theta,
        )
        return jobs[idx]

    def _theta(self, view: LiveView) -> float | None:
        """The starvation threshold in seconds (``auto``: 3 x the largest time limit of
        the jobs of the pass, as the env's ``auto`` is 3 x the trace's largest request)."""
        if self.starvation is None:
            return None
        if self.starvation == "auto":
            return 3.0 * float(view.request.max())
        return float(self.starvation)

    def order(self, snap: Snapshot) -> list[str]:
        self.last_choices = []
        pending = snap.orderable
        finished = self._remember(snap)
        if not pending:
            return []
        if snap.machine is None:
            raise ValueError("an agent needs the machine's CPUs (sinfo)")
        self.origin = self.rows.fix_origin(snap)
        view = LiveView(
            pending,
            snap.running,
            finished,
            snap.now,
            snap.machine.idle,
            snap.machine.total,
            self.unlimited,
        )
        qf = QueueFeatures(_user_ids(view.jobs), view.runtime, view.request)
        est_scale = self.est_scale or float(view.request.max())
        wait_scale = self.wait_scale or est_scale
        theta = self._theta(view)
        out: list[int] = []
        while view.n_waiting:
            waiting = view.waiting()  # submission order: the first starving job is the oldest
            starving = waiting[view.now - view.submit[waiting] > theta] if theta else waiting[:0]
            if len(starving) or len(waiting) == 1:  # forced, as in the engine: no question
                j = int(starving[0] if len(starving) else waiting[0])
                if len(starving):
                    self.last_choices.append({"job": view.jobs[j].job_id, "forced": "starvation"})
            else:
                j = self._ask(view, self._keys(view, waiting), qf, est_scale, wait_scale)
            out.append(j)
            if view.procs[j] <= view.free:
                view.start_now(j)
                continue
            rest = view.waiting()
            rest = rest[rest != j]
            out.extend(int(x) for x in self._keys(view, rest, theta))
            break
        return [view.jobs[j].job_id for j in out]

    def _ask(
        self, view: LiveView, ref: np.ndarray, qf: QueueFeatures, est: float, wait: float
    ) -> int:
        """The agent's head among the waiting jobs ``ref`` (in the row order); logged."""
        obs, mask, rows, n = build_queue(
            view, ref, len(ref), qf, est, wait, self.max_queue, None, self.tau
        )
        action, _ = self.agent.predict(obs, action_masks=mask, deterministic=True)
        a = int(np.asarray(action).reshape(-1)[0])
        valid = 0 <= a < len(mask) and bool(mask[a])
        j = int(rows[a] if valid else rows[0])
        choice: dict[str, Any] = {"job": view.jobs[j].job_id, "row": a, "candidates": n}
        if not valid:
            choice["invalid_action"] = True
        self.last_choices.append(choice)
        return j


def _user_ids(jobs: list[SlurmJob]) -> np.ndarray:
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(j.user, len(ids)) for j in jobs], dtype=np.int64)


# ---------------------------------------------------------------------- loading
def _is_schedule_model(model: Any) -> bool | None:
    """``True``/``False`` from a model's spaces (Schedule-v0: ``(K, 16)`` rows and ``K``
    actions); ``None`` without spaces."""
    obs = getattr(model, "observation_space", None)
    act = getattr(model, "action_space", None)
    shape = getattr(obs, "shape", None)
    n = getattr(act, "n", None)
    if shape is None or n is None:
        return None
    return len(shape) == 2 and shape[1] == len(QUEUE_COLUMNS) and int(n) == shape[0]


def _find_card(spec: str) -> Path | None:
    """The model card of an agent spec: a ``.json`` path, or a zoo name's card."""
    p = Path(spec)
    if p.suffix.lower() == ".json":
        if not p.is_file():
            raise FileNotFoundError(f"model card {p} not found")
        return p
    if p.exists():
        return None
    from hpcgym.evaluation.loaders import default_agents_dir, resolve_agent_name

    zoo, replacement = resolve_agent_name(spec)
    if replacement is not None:
        raise ValueError(f"the agent {spec!r} left the model zoo: use {replacement!r}")
    folder = default_agents_dir()
    if zoo is not None and folder is not None and (folder / f"{zoo}.json").is_file():
        return folder / f"{zoo}.json"
    return None


def make_orderer(
    spec: str,
    *,
    origin: float | None = None,
    starvation: float | None = None,
    order: str | None = None,
    est_scale: float | None = None,
    unlimited: float = 365 * 86400.0,
    loader: Callable[[str], Any] | None = None,
    notice: Callable[[str], None] | None = None,
) -> QueuePolicyOrderer | AgentOrderer:
    """The orderer of ``--policy SPEC``.

    :param spec: a queue policy (``SAF``, ``F2``...), a zoo agent's name, a model card
        ``.json``, a model ``.zip``, or the heuristic agents ``first`` / ``random``
    :param origin: time 0 of the F1-F4 submit times (epoch seconds; see
        :class:`~hpcgym.slurm.bridge.QueuePolicyOrderer`)
    :param starvation: the starvation threshold in seconds (default: an agent's card's)
    :param order: an agent's row order (default: its card's, else FCFS)
    :param est_scale: an agent's duration scale (default: its card's, else the largest
        time limit of each pass)
    :param unlimited: the estimate of a job without a time limit
    :param loader: turns an agent spec into an agent (default: the installed agent loader
        of the ``hpcgym.agent_loaders`` entry point)
    :param notice: receives a one-line message when a Backfill-v0 agent is replaced by its
        queue policy
    :raises ValueError: the spec is neither (the message lists the queue policies), or an
        agent that cannot order a queue
    """
    text = str(spec).strip()
    if text.lower() in {k.lower() for k in POLICIES}:
        for value, flag in ((order, "--order"), (est_scale, "--est-scale")):
            if value is not None:
                raise ValueError(f"{flag} is an agent's option; {text} is a queue policy")
        return QueuePolicyOrderer(text, origin, starvation, unlimited)
    card_path = _find_card(text)
    card: dict[str, Any] = {}
    if card_path is not None:
        from hpcgym.evaluation.cards import load_model_card
        from hpcgym.tasks import card_task

        card = load_model_card(card_path).data
        if not card_task(card).orders_queue:
            policy = str(card.get("policy", "FCFS")).upper()
            for value, flag in ((order, "--order"), (est_scale, "--est-scale")):
                if value is not None:
                    raise ValueError(
                        f"{flag} is a Schedule-v0 agent's option; {text} is a Backfill-v0 "
                        f"agent, ordered by its queue policy {policy}"
                    )
            if notice is not None:
                notice(
                    f"{text} is a Backfill-v0 agent: its decisions are backfilling decisions, "
                    f"which Slurm's backfill scheduler makes; the queue is ordered by its "
                    f"queue policy {policy}"
                )
            theta = starvation if starvation is not None else card.get("starvation")
            if theta == "auto":
                raise ValueError(
                    f"{text} was trained with starvation='auto' (3 x its trace's largest "
                    "request): give --starvation in seconds for this cluster"
                )
            q = QueuePolicyOrderer(
                policy, origin, None if theta is None else float(theta), unlimited
            )
            q.name = f"{policy} (queue policy of the Backfill-v0 agent {text})"
            return q
    elif not Path(text).exists() and text.lower() not in SCHEDULE_HEURISTICS:
        raise ValueError(
            f"unknown policy or agent {text!r}: give a queue policy ({', '.join(POLICIES)}), "
            "a zoo agent's name, a model card .json, a Schedule-v0 model .zip, or the "
            f"heuristic agents {' / '.join(SCHEDULE_HEURISTICS)}"
        )
    if loader is None:
        from hpcgym.evaluation.loaders import resolve_agent_loader

        loader = resolve_agent_loader()
    agent = loader(str(card_path) if card_path is not None else text)
    kind = _is_schedule_model(agent)
    if kind is False:
        raise ValueError(
            f"{text} is not a Schedule-v0 agent (its observation is not the (K, "
            f"{len(QUEUE_COLUMNS)}) rows of the queue with K actions): give its model card, "
            "or a queue policy"
        )
    if kind is None and text.lower() not in SCHEDULE_HEURISTICS and card_path is None:
        raise ValueError(f"cannot tell whether {text} answers Schedule-v0's question")
    obs = getattr(agent, "observation_space", None)
    k = int(obs.shape[0]) if obs is not None else int(card.get("max_queue", 128))
    return AgentOrderer(
        agent,
        Path(text).stem if os.sep in text else text,
        order=order or str(card.get("policy", "FCFS")),
        est_scale=est_scale or card.get("est_scale"),
        wait_scale=card.get("wait_scale"),
        time_scale=str(card.get("time_scale", "linear")),
        max_queue=k,
        unlimited=unlimited,
        starvation=starvation if starvation is not None else card.get("starvation"),
    )
