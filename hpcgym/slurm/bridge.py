"""A queue policy or a Schedule-v0 agent inside a live Slurm: job priorities from hpcgym.

:class:`Bridge` runs beside ``slurmctld``. At every pass it reads the pending and running
jobs (``squeue``) and the machine (``sinfo``), orders the pending jobs with hpcgym's
queue policy (the engine's own keys: :func:`hpcgym.sim.ordering.policy_order`) or with a
Schedule-v0 agent (the env's own observation rows:
:func:`hpcgym.envs.queue_observation.build_queue`), and gives the jobs descending
priorities with ``scontrol update jobid=N priority=P``, so that Slurm's own scheduler
(main and backfill) starts them in that order. It never does anything else to a job.

Every Slurm command goes through a :class:`Runner` (``argv -> CommandResult``):
:class:`SubprocessRunner` runs the real commands; tests give recorded output instead.
Every pass writes one JSON line (:meth:`Bridge.pass_once`; fields in ``docs/slurm.md``).

Safety: only ``scontrol update jobid=N priority=P`` with ``P >= 1`` on pending jobs
whose priority is not 0 (a held job is never touched: a non-zero priority would release
it). A command that fails is logged and the pass ends; the next pass starts afresh, so
the bridge survives a ``slurmctld`` restart. A job that ended or was cancelled before
its priority was set is counted (``gone``), not an error.
"""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from hpcgym.sim.engine import POLICIES
from hpcgym.sim.ordering import policy_order
from hpcgym.slurm.harness import SlurmError  # a Slurm command failed (one error class)
from hpcgym.workload.slurm_text import parse_limit, time_parser

__all__ = [
    "DEFAULT_SPAN",
    "DEFAULT_TOP_PRIORITY",
    "SQUEUE_FIELDS",
    "Bridge",
    "CommandResult",
    "Machine",
    "Orderer",
    "QueuePolicyOrderer",
    "Runner",
    "SlurmError",
    "SlurmJob",
    "Snapshot",
    "SubprocessRunner",
    "parse_duration",
    "parse_sinfo",
    "parse_squeue",
    "parse_time",
    "priorities_for",
    "read_snapshot",
]

#: ``squeue -o`` fields, in order (``|``-separated): job id, state, user, submit time,
#: start time, end time, time limit, CPUs, priority, time used, reason, partition
SQUEUE_FIELDS: tuple[tuple[str, str], ...] = (
    ("job_id", "%i"),
    ("state", "%T"),
    ("user", "%u"),
    ("submit", "%V"),
    ("start", "%S"),
    ("end", "%e"),
    ("limit", "%l"),
    ("cpus", "%C"),
    ("priority", "%Q"),
    ("used", "%M"),
    ("reason", "%r"),
    ("partition", "%P"),
)
SQUEUE_FORMAT = "|".join(code for _, code in SQUEUE_FIELDS)
#: the highest priority the bridge sets by default; its range (``DEFAULT_SPAN`` values
#: below it) lies above priority/basic's priorities of new jobs (below 0xFFFF0000)
DEFAULT_TOP_PRIORITY = 0xFFFFFF00
#: how many priority values the bridge uses (its range ``(top - span, top]``)
DEFAULT_SPAN = 65000
#: the largest priority Slurm accepts (``0xFFFFFFFE`` and up are its special values)
MAX_PRIORITY = 0xFFFFFFFD
#: job states that are running (their CPUs are in use)
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING"})
#: job states of a finished job (its time used is its run time)
FINISHED_STATES = frozenset(
    {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}
)
#: what ``scontrol update`` says when the job is gone (ended, cancelled, purged)
GONE_MESSAGES = (
    "invalid job id",
    "already completing",
    "already completed",
    "job has already finished",
    "job is no longer pending",
    "job not pending",
    "is not pending",
)


@dataclass(frozen=True)
class CommandResult:
    """What a command returned: exit status, standard output and standard error."""

    returncode: int
    stdout: str = ""
    stderr: str = ""


class Runner(Protocol):
    """Runs one Slurm command (``["squeue", ...]``) and returns its result; never raises
    for a failing command (a missing program or a timeout is a non-zero status)."""

    def __call__(self, argv: Sequence[str]) -> CommandResult: ...


class SubprocessRunner:
    """Runs the real Slurm commands, with ``SLURM_TIME_FORMAT=%s`` (times as epoch seconds).

    :param env: extra environment variables (e.g. ``SLURM_CONF`` of a test cluster)
    :param timeout: seconds before a command is abandoned (status 124)
    """

    def __init__(self, env: dict[str, str] | None = None, timeout: float = 60.0) -> None:
        self.env = {**os.environ, **(env or {}), "SLURM_TIME_FORMAT": "%s"}
        self.timeout = float(timeout)

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        try:
            p = subprocess.run(
                list(argv),
                capture_output=True,
                text=True,
                env=self.env,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            return CommandResult(127, "", f"{argv[0]}: command not found")
        except subprocess.TimeoutExpired:
            return CommandResult(124, "", f"{argv[0]}: no answer in {self.timeout:g} s")
        return CommandResult(p.returncode, p.stdout, p.stderr)


# ------------------------------------------------------------------------ parsing
@dataclass(frozen=True)
class SlurmJob:
    """One job as ``squeue`` shows it (times in epoch seconds, durations in seconds).

    :param limit: the time limit; ``None`` for ``UNLIMITED``
    :param start: the start time (``None`` when not started or unknown)
    :param end: the end time of a finished job (``None`` otherwise)
    """

    job_id: str
    state: str
    user: str
    submit: float
    start: float | None
    end: float | None
    limit: float | None
    cpus: int
    priority: int
    used: float
    reason: str
    partition: str

    @property
    def sort_key(self) -> tuple[float, int, int, str]:
        """Submission order: submit time, then the job id (array tasks by task id)."""
        base, _, task = self.job_id.partition("_")
        try:
            return (self.submit, int(base), int(task) if task.isdigit() else -1, self.job_id)
        except ValueError:
            return (self.submit, sys.maxsize, -1, self.job_id)

    @property
    def held(self) -> bool:
        """Held (priority 0, or a hold reason): the bridge never touches it."""
        return self.priority == 0 or self.reason.startswith("JobHeld")


#: A Slurm time stamp as epoch seconds: ``%s`` epoch seconds (``SLURM_TIME_FORMAT=%s``) or
#: the default ISO form (this machine's local time); ``None`` for ``N/A``, ``Unknown``,
#: ``None``, 0 (the workload layer's :func:`~hpcgym.workload.slurm_text.time_parser`).
parse_time = time_parser("local")
#: A Slurm duration (``[days-][hours:]minutes:seconds``, or minutes alone) in seconds;
#: ``None`` for ``UNLIMITED`` / ``INFINITE`` / ``NOT_SET`` / ``N/A``
#: (:func:`hpcgym.workload.slurm_text.parse_limit`).
parse_duration = parse_limit


def parse_squeue(text: str, source: str = "squeue") -> tuple[list[SlurmJob], list[str]]:
    """The jobs of ``squeue -h -o`` :data:`SQUEUE_FORMAT` output, and one message per line
    that could not be read (``source:line: why``) -- such a job is left alone, and said.

    :param text: the command's output
    :param source: the name of the output in messages
    """
    jobs: list[SlurmJob] = []
    bad: list[str] = []
    names = [n for n, _ in SQUEUE_FIELDS]
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != len(names):
            bad.append(f"{source}:{no}: {len(parts)} fields, expected {len(names)}: {line!r}")
            continue
        f = dict(zip(names, (p.strip() for p in parts), strict=True))
        try:
            submit = parse_time(f["submit"])
            if submit is None:
                raise ValueError(f"no submit time ({f['submit']!r})")
            jobs.append(
                SlurmJob(
                    job_id=f["job_id"],
                    state=f["state"].upper(),
                    user=f["user"],
                    submit=submit,
                    start=parse_time(f["start"]),
                    end=parse_time(f["end"]),
                    limit=parse_duration(f["limit"]),
                    cpus=int(f["cpus"]),
                    priority=int(f["priority"]),
                    used=parse_duration(f["used"]) or 0.0,
                    reason=f["reason"],
                    partition=f["partition"],
                )
            )
        except ValueError as e:
            bad.append(f"{source}:{no}: {e}: {line!r}")
    return jobs, bad


@dataclass(frozen=True)
class Machine:
    """The CPUs of the cluster (or partition) as ``sinfo -o %C`` counts them."""

    allocated: int
    idle: int
    other: int
    total: int


def parse_sinfo(text: str) -> Machine:
    """``sinfo -h -N -o "%N|%C"`` output: one line per node and partition, with the node's
    CPUs ``allocated/idle/other/total``; a node in several partitions counts once (lines
    without the node name are added up as they come).

    :raises SlurmError: a line of another form, or no line
    """
    tot = [0, 0, 0, 0]
    seen: set[str] = set()
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    for k, line in enumerate(lines):
        node, _, cpus = line.rpartition("|")
        parts = cpus.split("/")
        if len(parts) != 4 or not all(p.isdigit() for p in parts):
            raise SlurmError(f"sinfo: expected allocated/idle/other/total CPUs, got {line!r}")
        key = node or f"#{k}"
        if key in seen:
            continue
        seen.add(key)
        tot = [a + int(b) for a, b in zip(tot, parts, strict=True)]
    if not seen:
        raise SlurmError("sinfo printed no CPU counts")
    return Machine(*tot)


@dataclass
class Snapshot:
    """What one pass read: the time, the jobs by state and the machine.

    :param pending: pending jobs in submission order (held ones included)
    :param running: running jobs
    :param finished: finished jobs slurmctld still lists
    :param unreadable: lines of the output that could not be read (see :func:`parse_squeue`)
    """

    now: float
    pending: list[SlurmJob]
    running: list[SlurmJob]
    finished: list[SlurmJob]
    machine: Machine | None
    unreadable: list[str] = field(default_factory=list)

    @property
    def orderable(self) -> list[SlurmJob]:
        """The pending jobs the bridge may order: every one that is not held."""
        return [j for j in self.pending if not j.held]


def _failed(what: str, r: CommandResult) -> SlurmError:
    msg = " ".join((r.stderr or r.stdout).split()) or "no message"
    return SlurmError(f"{what} failed (status {r.returncode}): {msg}")


def read_snapshot(
    runner: Runner, now: float, partition: str | None = None, machine: bool = True
) -> Snapshot:
    """Read the jobs (``squeue``) and, with ``machine``, the CPUs (``sinfo``).

    :raises SlurmError: a command failed
    """
    part = ["-p", partition] if partition else []
    argv = ["squeue", "-h", "-a", "-r", "-t", "all", "-o", SQUEUE_FORMAT, *part]
    r = runner(argv)
    if r.returncode != 0:
        raise _failed("squeue", r)
    jobs, bad = parse_squeue(r.stdout)
    mach = None
    if machine:
        s = runner(["sinfo", "-h", "-N", "-o", "%N|%C", *part])
        if s.returncode != 0:
            raise _failed("sinfo", s)
        mach = parse_sinfo(s.stdout)
    pending = sorted((j for j in jobs if j.state == "PENDING"), key=lambda j: j.sort_key)
    running = [j for j in jobs if j.state in RUNNING_STATES]
    finished = [j for j in jobs if j.state in FINISHED_STATES]
    return Snapshot(now, pending, running, finished, mach, bad)


# ----------------------------------------------------------------------- ordering
class Orderer(Protocol):
    """Orders the pending jobs of a pass: ``order(snapshot) -> job ids``, the first to
    start first (a subset of ``snapshot.orderable``); ``name`` names it in the log, and
    ``last_choices`` (if any) records the decisions of the last call."""

    name: str

    def order(self, snap: Snapshot) -> list[str]: ...


def limit_seconds(job: SlurmJob, unlimited: float) -> float:
    """A job's time limit as the runtime estimate (``unlimited`` for ``UNLIMITED``)."""
    return unlimited if job.limit is None else max(job.limit, 1.0)


class QueuePolicyOrderer:
    """A queue policy of the engine (:data:`hpcgym.sim.engine.POLICIES`) over the pending
    jobs: the engine's keys with the time limit as the estimate ``r`` and the time since
    ``origin`` as the submit time ``s`` of F1-F4.

    :param policy: the queue policy name
    :param origin: epoch seconds that count as time 0 of ``s``; ``None``: the earliest
        submit time of the jobs listed at the first pass
    :param starvation: the engine's starvation threshold (seconds) or ``None``
    :param unlimited: the estimate of a job without a time limit (seconds)
    """

    def __init__(
        self,
        policy: str,
        origin: float | None = None,
        starvation: float | None = None,
        unlimited: float = 365 * 86400.0,
    ) -> None:
        key = {k.lower(): k for k in POLICIES}.get(policy.strip().lower())
        if key is None:
            raise ValueError(f"unknown queue policy {policy!r}; valid: {', '.join(POLICIES)}")
        self.policy = key
        self.name = key
        self.origin = origin
        self.starvation = starvation
        self.unlimited = float(unlimited)
        self.last_choices: list[dict[str, Any]] = []

    def fix_origin(self, snap: Snapshot) -> float:
        """The origin of the submit times (set at the first pass when not given)."""
        if self.origin is None:
            jobs = snap.pending + snap.running
            self.origin = min((j.submit for j in jobs), default=snap.now)
        return self.origin

    def order(self, snap: Snapshot) -> list[str]:
        jobs = snap.orderable
        if not jobs:
            return []
        origin = self.fix_origin(snap)
        submit = np.array([j.submit - origin for j in jobs])
        procs = np.array([j.cpus for j in jobs], dtype=np.int64)
        est = np.array([limit_seconds(j, self.unlimited) for j in jobs])
        idx = policy_order(self.policy, submit, procs, est, snap.now - origin, self.starvation)
        return [jobs[i].job_id for i in idx]


def _longest_decreasing(values: Sequence[int | None], lo: int, hi: int) -> set[int]:
    """Indices of a longest strictly decreasing subsequence of ``values`` among the
    entries in ``[lo, hi]`` (``None`` and the others are skipped)."""
    tails: list[int] = []  # tails[k]: -value ending the best run of length k + 1
    ends: list[int] = []  # the index of that end
    prev: dict[int, int] = {}
    for i, v in enumerate(values):
        if v is None or not lo <= v <= hi:
            continue
        k = bisect.bisect_left(tails, -v)
        if k == len(tails):
            tails.append(-v)
            ends.append(i)
        else:
            tails[k], ends[k] = -v, i
        prev[i] = ends[k - 1] if k else -1
    keep: set[int] = set()
    i = ends[-1] if ends else -1
    while i >= 0:
        keep.add(i)
        i = prev[i]
    return keep


def _spread(hi: int, lo: int, m: int) -> list[int]:
    """``m`` strictly decreasing integers evenly inside ``(lo, hi)`` (needs ``hi - lo > m``)."""
    d = hi - lo
    return [hi - ((k + 1) * d) // (m + 1) for k in range(m)]


def priorities_for(
    order: Sequence[str],
    top: int = DEFAULT_TOP_PRIORITY,
    current: dict[str, int] | None = None,
    span: int = DEFAULT_SPAN,
) -> dict[str, int]:
    """Strictly decreasing priorities for the jobs of ``order`` (the first job highest),
    inside the bridge's range ``(top - span, top]``, changing as few of the ``current``
    priorities as it can: the longest run of jobs whose current priorities already
    decrease along ``order`` inside the range keeps them, and the other jobs get values
    spread between their neighbours'. Where there is no room left, every job gets a new,
    evenly spread value. So a job that starts or leaves costs no update, and a new job
    costs one.

    :param order: job ids, the first to start first
    :param top: the highest priority of the range
    :param current: the jobs' priorities now (``None``: set them all)
    :param span: the size of the range (its lowest value ``top - span + 1`` is reserved
        for jobs the bridge stops ordering, see :class:`Bridge`)
    :raises ValueError: ``top`` above :data:`MAX_PRIORITY`, or a range that does not hold
        the jobs with priorities >= 1 (0 would hold a job)
    """
    n = len(order)
    floor = top - span + 1
    if top > MAX_PRIORITY:
        raise ValueError(f"the top priority {top} is above Slurm's largest, {MAX_PRIORITY}")
    if floor < 1 or span - 1 < n:
        raise ValueError(
            f"the priorities {max(floor, 1)}..{top} leave no room for {n} jobs with priorities "
            ">= 1: raise the top priority or order fewer jobs"
        )
    cur = [None if current is None else current.get(j) for j in order]
    keep = _longest_decreasing(cur, floor + 1, top)
    out: dict[str, int] = {}
    hi, i = top + 1, 0
    while i < n:
        if i in keep:
            hi = int(cur[i])  # type: ignore[arg-type]
            out[order[i]] = hi
            i += 1
            continue
        j = i
        while j < n and j not in keep:
            j += 1
        lo = int(cur[j]) if j < n else floor  # type: ignore[arg-type]
        if hi - lo <= j - i:  # no room between the neighbours: start again, evenly
            return dict(zip(order, _spread(top + 1, floor, n), strict=True))
        out.update(zip(order[i:j], _spread(hi, lo, j - i), strict=True))
        i = j
    return out


# ------------------------------------------------------------------------- bridge
def _gone(r: CommandResult) -> bool:
    text = (r.stderr + " " + r.stdout).lower()
    return any(m in text for m in GONE_MESSAGES)


class Bridge:
    """Sets Slurm job priorities in the order of an hpcgym policy, pass after pass.

    :param orderer: the queue policy or agent (:class:`QueuePolicyOrderer`,
        :class:`hpcgym.slurm.bridge_agents.AgentOrderer`)
    :param runner: runs the Slurm commands (:class:`SubprocessRunner` by default)
    :param log: a file name or an open text file for the JSON lines (``None``: no log)
    :param dry_run: compute and log the order, print it, set nothing
    :param top: the highest priority of the bridge's range ``(top - span, top]``, with
        ``span = min(DEFAULT_SPAN, top)`` (see :func:`priorities_for`)
    :param max_jobs: order at most this many pending jobs (the first in the policy's
        order); the others keep their priority, except that a job holding a priority of
        the range from an earlier pass gets its lowest value (after every ordered job)
    :param partition: only the jobs and CPUs of this partition
    :param clock: the time source (epoch seconds)
    :param out: where dry-run mode prints (default standard output)
    :param warn: receives one line for every pass with errors (e.g. the controller is
        away); the log has the details
    """

    def __init__(
        self,
        orderer: Orderer,
        runner: Runner | None = None,
        log: str | os.PathLike[str] | IO[str] | None = None,
        dry_run: bool = False,
        top: int = DEFAULT_TOP_PRIORITY,
        max_jobs: int = 10000,
        partition: str | None = None,
        clock: Callable[[], float] = time.time,
        out: IO[str] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
        self.span = min(DEFAULT_SPAN, int(top))
        priorities_for([str(i) for i in range(max_jobs)], top, None, self.span)  # the range
        self.orderer = orderer
        self.runner: Runner = runner or SubprocessRunner()
        self.dry_run = bool(dry_run)
        self.top = int(top)
        self.max_jobs = int(max_jobs)
        self.partition = partition
        self.clock = clock
        self.out = out
        self.warn = warn
        self.passes = 0
        self._stop = threading.Event()
        self._own_log = False
        self._log: IO[str] | None
        if log is None or hasattr(log, "write"):
            self._log = log  # type: ignore[assignment]
        else:
            Path(log).parent.mkdir(parents=True, exist_ok=True)  # type: ignore[arg-type]
            self._log = open(log, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            self._own_log = True

    def close(self) -> None:
        """Close the log file if the bridge opened it."""
        if self._own_log and self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Bridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, record: dict[str, Any]) -> None:
        if record["errors"] and self.warn is not None:
            self.warn(f"pass {record['pass']}: {record['errors'][0]} (retrying at the next pass)")
        if self._log is not None:
            self._log.write(json.dumps(record, sort_keys=False) + "\n")
            self._log.flush()

    def pass_once(self) -> dict[str, Any]:
        """One pass: read, order, set the priorities that differ; returns the log record.

        Record fields: ``time``, ``pass``, ``policy``, ``dry_run``, ``pending`` (ids in
        submission order), ``running`` (count), ``held`` (ids left alone), ``order``,
        ``priorities`` (id -> priority wanted), ``set`` (ids updated, or that would be in a
        dry run), ``gone`` (ids ended before their update), ``errors`` (messages),
        ``unreadable`` (output lines not read), and ``choices`` for an agent.
        """
        self.passes += 1
        now = float(self.clock())
        rec: dict[str, Any] = {
            "time": round(now, 3),
            "pass": self.passes,
            "policy": self.orderer.name,
            "dry_run": self.dry_run,
        }
        errors: list[str] = []
        rec["errors"] = errors
        try:
            snap = read_snapshot(
                self.runner, now, self.partition, getattr(self.orderer, "needs_machine", False)
            )
        except SlurmError as e:
            errors.append(str(e))
            self._write(rec)
            return rec
        rec["pending"] = [j.job_id for j in snap.pending]
        rec["running"] = len(snap.running)
        rec["held"] = [j.job_id for j in snap.pending if j.held]
        rec["unreadable"] = snap.unreadable
        try:
            order = self.orderer.order(snap)[: self.max_jobs]
        except (SlurmError, ValueError) as e:
            errors.append(f"ordering failed: {e}")
            self._write(rec)
            return rec
        if getattr(self.orderer, "origin", None) is not None:
            rec["origin"] = self.orderer.origin  # type: ignore[attr-defined]
        choices = getattr(self.orderer, "last_choices", None)
        if choices:
            rec["choices"] = choices
        current = {j.job_id: j.priority for j in snap.pending}
        prio = priorities_for(order, self.top, current, self.span)
        floor = self.top - self.span + 1
        for j in snap.orderable:  # beyond max_jobs, but ranked by an earlier pass: last
            if j.job_id not in prio and floor < j.priority <= self.top:
                prio[j.job_id] = floor
        rec["order"] = order
        rec["priorities"] = prio
        todo = [j for j in prio if current.get(j) != prio[j]]
        done: list[str] = []
        gone: list[str] = []
        rec["set"], rec["gone"] = done, gone
        if self.dry_run:
            done.extend(todo)
            self._print(rec)
        else:
            for jid in todo:
                r = self.runner(["scontrol", "update", f"jobid={jid}", f"priority={prio[jid]}"])
                if r.returncode == 0:
                    done.append(jid)
                elif _gone(r):
                    gone.append(jid)
                else:  # the controller is away (or refuses): retry at the next pass
                    errors.append(str(_failed(f"scontrol update jobid={jid}", r)))
                    break
        self._write(rec)
        return rec

    def _print(self, rec: dict[str, Any]) -> None:
        out = self.out or sys.stdout
        t = datetime.fromtimestamp(rec["time"]).isoformat(timespec="seconds")
        order = rec["order"]
        head = ", ".join(f"{j}={rec['priorities'][j]}" for j in order[:20])
        more = f" (+{len(order) - 20} more)" if len(order) > 20 else ""
        out.write(
            f"{t} pass {rec['pass']} {rec['policy']}: {len(order)} pending jobs in order: "
            f"{head}{more}; would set {len(rec['set'])}\n"
        )
        out.flush()

    def stop(self) -> None:
        """Make :meth:`run` return after the pass in progress (from another thread)."""
        self._stop.set()

    def run(self, interval: float = 10.0, passes: int | None = None) -> int:
        """Pass every ``interval`` seconds, ``passes`` times (``None``: until :meth:`stop`
        or an interrupt).

        :return: the number of passes made
        """
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        made = 0
        try:
            while not self._stop.is_set() and (passes is None or made < passes):
                t0 = time.monotonic()
                self.pass_once()
                made += 1
                if passes is not None and made >= passes:
                    break
                self._stop.wait(max(interval - (time.monotonic() - t0), 0.0))
        except KeyboardInterrupt:
            pass
        return made
