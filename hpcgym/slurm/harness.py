"""A private Slurm on this host: configuration, daemons, replay of a workload, accounting.

Quick use (as root, with Debian's ``slurmctld slurmd slurm-client munge`` installed)::

    from hpcgym.slurm import LocalSlurm, slurm_unavailable

    if (why := slurm_unavailable()) is None:
        with LocalSlurm(cpus=128) as slurm:        # munge + slurmctld + slurmd, free ports
            res = slurm.replay(workload, time_scale=60.0)   # 1 trace minute -> 1 s
        res.start, res.end                          # seconds since res.t0, per workload row

Everything lives in a fresh temporary directory (configuration, munge key and socket,
state, spool, logs, the ``jobcomp/filetxt`` log); the ports are chosen free, so several
instances run side by side. Every daemon is started in the foreground as a child process
and stopped by its PID (SIGTERM, then SIGKILL) when the ``with`` block ends, also on an
exception. Clients (``sbatch``, ``squeue``, ``scontrol``, ``sacct``) reach this instance
through :attr:`LocalSlurm.env` (``SLURM_CONF``); :meth:`LocalSlurm.run` runs one.

Time: daemons and clients run with ``TZ=UTC``, so every time stamp of the accounting is
UTC. Slurm's time limits have a granularity of one minute: :meth:`LocalSlurm.replay`
rounds each scaled request *up* to whole minutes and reports the limits it used.

Accounting: ``accounting="jobcomp"`` (default) writes Slurm's ``jobcomp/filetxt`` log
(no database; start and end to the second). ``accounting="slurmdbd"`` also starts a
private MariaDB server and slurmdbd, so that ``sacct`` works (:meth:`LocalSlurm.sacct`).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpcgym.slurm.replay import ReplayResult

from hpcgym.slurm.host import (
    REQUIRED,
    SlurmError,
    SlurmUnavailable,
    free_ports,
    port_open,
    slurm_unavailable,
    stop_with_parent,
    terminate,
    which,
)
from hpcgym.slurm.records import SACCT_FIELDS, JobRecord, parse_jobcomp, parse_sacct, parse_time
from hpcgym.workload.core import Workload

__all__ = [
    "DEFAULT_SCHEDULER_PARAMETERS",
    "EASY_SCHEDULER_PARAMETERS",
    "JobRecord",
    "LocalSlurm",
    "SlurmError",
    "SlurmUnavailable",
    "parse_jobcomp",
    "parse_sacct",
    "slurm_unavailable",
]

#: sched/backfill every second, at a one-second resolution (the default 60 s would blur a
#: time-scaled replay), with a window of a week and a test depth that covers the queue;
#: the main scheduler also runs every second.
DEFAULT_SCHEDULER_PARAMETERS = (
    "bf_interval=1,bf_resolution=1,bf_window=10080,bf_max_job_test=1000,"
    "bf_continue,sched_interval=1,default_queue_depth=1000"
)
#: :data:`DEFAULT_SCHEDULER_PARAMETERS` with a reservation for the first pending job only
#: (``bf_job_part_count_reserve=1``), planned on busy nodes first (``bf_busy_nodes``): with
#: one node per core, EASY backfilling, which the engine's ``SLURM-EASY`` reproduces
#: (docs/engine.md, "Against a real Slurm")
EASY_SCHEDULER_PARAMETERS = (
    DEFAULT_SCHEDULER_PARAMETERS + ",bf_job_part_count_reserve=1,bf_busy_nodes"
)


class LocalSlurm:
    """A private single-node Slurm (munge, slurmctld, slurmd[, MariaDB, slurmdbd]).

    :param cpus: virtual cores in all (``NodeName=<host> CPUs=cpus`` for one node)
    :param nodes: number of nodes sharing the cores equally (default 1). Slurm's backfill
        plans reservations per *node* (a pending job's reservation holds whole nodes), so
        a replay that must match processor-level backfilling uses one node per core
        (``nodes=cpus``): one slurmd per node, all on this host, each on its own port
    :param accounting: ``"jobcomp"`` (``jobcomp/filetxt`` log, no database) or
        ``"slurmdbd"`` (also MariaDB and slurmdbd, for ``sacct``)
    :param scheduler_parameters: ``SchedulerParameters`` (default
        :data:`DEFAULT_SCHEDULER_PARAMETERS`)
    :param priority_type: ``PriorityType`` (default ``priority/basic``: FIFO by job id)
    :param extra_conf: more ``slurm.conf`` lines (they come before the node and partition)
    :param workdir: where to put the instance (default: a fresh temporary directory,
        removed at stop unless ``keep``)
    :param keep: keep the directory (configuration, logs, accounting) after stop
    :param start_timeout: seconds to wait for the daemons to come up
    """

    def __init__(
        self,
        cpus: int = 16,
        *,
        nodes: int = 1,
        accounting: str = "jobcomp",
        scheduler_parameters: str = DEFAULT_SCHEDULER_PARAMETERS,
        priority_type: str = "priority/basic",
        extra_conf: Sequence[str] = (),
        workdir: str | os.PathLike[str] | None = None,
        keep: bool = False,
        start_timeout: float = 60.0,
    ) -> None:
        if accounting not in REQUIRED:
            raise ValueError(f"accounting must be one of {sorted(REQUIRED)}, not {accounting!r}")
        if int(cpus) < 1:
            raise ValueError(f"cpus must be >= 1, not {cpus}")
        if int(nodes) < 1 or int(cpus) % int(nodes):
            raise ValueError(f"nodes must be >= 1 and divide cpus={cpus}, not {nodes}")
        self.cpus = int(cpus)
        self.nodes = int(nodes)
        self.accounting = accounting
        self.scheduler_parameters = scheduler_parameters
        self.priority_type = priority_type
        self.extra_conf = list(extra_conf)
        self._workdir_arg = Path(workdir) if workdir is not None else None
        self.keep = keep
        self.start_timeout = float(start_timeout)
        self.hostname = socket.gethostname().split(".")[0]
        self.dir: Path = Path()
        self.cluster = ""
        self.ports: dict[str, int] = {}
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._argv: dict[str, tuple[list[str], dict[str, Any]]] = {}
        self._started = False

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> LocalSlurm:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def conf(self) -> Path:
        """The ``slurm.conf`` of this instance."""
        return self.dir / "etc" / "slurm.conf"

    @property
    def jobcomp_log(self) -> Path:
        """The ``jobcomp/filetxt`` log (one line per finished job)."""
        return self.dir / "jobcomp.txt"

    @property
    def node_names(self) -> list[str]:
        """The node names: the host name for one node, else ``n1`` ... ``nN``."""
        if self.nodes == 1:
            return [self.hostname]
        return [f"n{i + 1}" for i in range(self.nodes)]

    @property
    def pids(self) -> dict[str, int]:
        """PID of every daemon this instance started and that still runs."""
        return {name: p.pid for name, p in self._procs if p.poll() is None}

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm clients of this instance (``SLURM_CONF``, ``TZ=UTC``)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))}
        env.update(SLURM_CONF=str(self.conf), TZ="UTC")
        return env

    def start(self) -> None:
        """Write the configuration and start the daemons (raises :class:`SlurmUnavailable`
        where Slurm cannot run, :class:`SlurmError` where a daemon does not come up)."""
        why = slurm_unavailable(self.accounting)
        if why is not None:
            raise SlurmUnavailable(why)
        if self._started:
            raise SlurmError("this LocalSlurm is already started")
        self._started = True
        try:
            if self._workdir_arg is None:
                self.dir = Path(tempfile.mkdtemp(prefix="hpcgym-slurm-"))
            else:
                self.dir = self._workdir_arg
                self.dir.mkdir(parents=True, exist_ok=True)
            os.chmod(self.dir, 0o755)
            for sub in ("etc", "state", "spool", "log", "munge", "jobs"):
                (self.dir / sub).mkdir(exist_ok=True)
            os.chmod(self.dir / "munge", 0o700)
            names = (
                ["slurmctld"]
                + [f"slurmd{i}" for i in range(self.nodes)]
                + (["slurmdbd", "mysql"] if self.accounting == "slurmdbd" else [])
            )
            self.ports = dict(zip(names, free_ports(len(names)), strict=True))
            self.cluster = f"hpcgym{os.getpid()}x{self.ports['slurmctld']}"
            self._start_munge()
            if self.accounting == "slurmdbd":
                self._start_database()
                self._start_slurmdbd()
            self._write_conf()
            self._spawn(
                "slurmctld", [which("slurmctld") or "slurmctld", "-D", "-i", "-f", str(self.conf)]
            )
            self._wait_for(self._controller_up, "slurmctld")
            for name in self.node_names:
                self._spawn(
                    "slurmd" if self.nodes == 1 else f"slurmd-{name}",
                    [which("slurmd") or "slurmd", "-D", "-f", str(self.conf), "-N", name],
                )
            self._wait_for(self._node_idle, "slurmd (node idle)")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Cancel the jobs, stop every daemon this instance started (by PID, in reverse
        order of start) and remove the directory unless ``keep``. Safe to call twice."""
        if any(name == "slurmctld" and p.poll() is None for name, p in self._procs):
            with contextlib.suppress(Exception):
                self.run(["scancel", "--full", "--user=root"], check=False, timeout=10)
                self._wait_for(lambda: not self.queue_ids(), "jobs to end", timeout=15, fail=False)
        for name, proc in reversed(self._procs):
            terminate(proc, name)
        self._procs.clear()
        self._stop_by_pid_files()
        if self._started and not self.keep and self._workdir_arg is None and self.dir != Path():
            shutil.rmtree(self.dir, ignore_errors=True)

    def restart(
        self, name: str = "slurmctld", *, sig: int = signal.SIGTERM, down: float = 0.0
    ) -> None:
        """Stop one daemon of this instance by its PID and start it again (fault tests: a
        slurmctld restart keeps its state, the jobs and their priorities).

        :param name: a key of :attr:`pids` (``slurmctld``, ``slurmd``, ``slurmd-n3``, ...)
        :param sig: the signal that stops it (``signal.SIGKILL`` for a crash)
        :param down: seconds to stay down before the start
        """
        match = [(i, p) for i, (n, p) in enumerate(self._procs) if n == name]
        if not match:
            raise SlurmError(f"no daemon {name!r} in this instance; running: {sorted(self.pids)}")
        i, proc = match[-1]
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        del self._procs[i]
        if down > 0:
            time.sleep(down)
        argv, kw = self._argv[name]
        self._spawn(name, argv, **kw)
        if name == "slurmctld":
            self._wait_for(self._controller_up, "slurmctld (restarted)")
        elif name.startswith("slurmd"):
            self._wait_for(self._node_idle_or_busy, f"{name} (restarted)")

    def _stop_by_pid_files(self) -> None:
        """Stop any daemon of this instance still alive by the PID in its own PID file
        (a launcher that forks, such as ``faketime``, hides the daemon from its child
        process): only a process whose command line names this instance's directory."""
        if not self._started or self.dir == Path():
            return
        files = [*self.dir.glob("*.pid"), *(self.dir / "munge").glob("*.pid")]
        for f in files:
            with contextlib.suppress(OSError, ValueError):
                pid = int(f.read_text().split()[0])
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                if str(self.dir).encode() not in cmd:
                    continue  # a stale file: the PID is someone else's now
                os.kill(pid, signal.SIGTERM)
                for _ in range(50):
                    time.sleep(0.2)
                    if not Path(f"/proc/{pid}").exists():
                        break
                else:
                    os.kill(pid, signal.SIGKILL)

    # ------------------------------------------------------------------ daemons
    def _spawn(self, name: str, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        self._argv[name] = (list(argv), dict(kw))
        kw = dict(kw)
        log = open(self.dir / "log" / f"{name}.out", "ab")  # noqa: SIM115 (kept by the child)
        try:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**self.env, **kw.pop("env", {})},
                start_new_session=True,  # a Ctrl-C of the caller reaches us, not the daemons
                preexec_fn=stop_with_parent,  # ...but the caller's death reaches them
                **kw,
            )
        finally:
            log.close()
        self._procs.append((name, proc))
        return proc

    def _start_munge(self) -> None:
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        m = self.dir / "munge"
        self._spawn(
            "munged",
            [
                which("munged") or "munged",
                "-F",
                "--force",
                f"--socket={m / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={m / 'munged.pid'}",
                f"--log-file={self.dir / 'log' / 'munged.log'}",
                f"--seed-file={m / 'munged.seed'}",
            ],
        )
        self._wait_for(lambda: (m / "munge.socket").exists(), "munged")

    def _start_database(self) -> None:
        db = self.dir / "db"
        db.mkdir(exist_ok=True)
        install = which("mariadb-install-db|mysql_install_db") or "mysql_install_db"
        out = subprocess.run(
            [
                install,
                "--no-defaults",
                f"--datadir={db}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if out.returncode != 0:
            raise SlurmError(f"{install} failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        sock = self.dir / "db.sock"
        self._spawn(
            "mariadbd",
            [
                which("mariadbd|mysqld") or "mysqld",
                "--no-defaults",
                f"--datadir={db}",
                f"--socket={sock}",
                "--bind-address=127.0.0.1",
                f"--port={self.ports['mysql']}",
                f"--pid-file={self.dir / 'db.pid'}",
                f"--log-error={self.dir / 'log' / 'mariadb.log'}",
                "--user=root",
                "--innodb-buffer-pool-size=64M",
                "--skip-log-bin",
            ],
        )
        client = which("mariadb|mysql") or "mysql"

        def _ready() -> bool:
            r = subprocess.run(
                [client, "--no-defaults", f"--socket={sock}", "-uroot", "-e", "select 1"],
                capture_output=True,
                timeout=20,
            )
            return r.returncode == 0

        self._wait_for(_ready, "mariadbd", timeout=max(self.start_timeout, 120))
        sql = (
            "CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
            "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'hpcgym'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
        )
        r = subprocess.run(
            [client, "--no-defaults", f"--socket={sock}", "-uroot", "-e", sql],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode != 0:
            raise SlurmError(f"creating the accounting database failed: {r.stderr.strip()}")

    def _start_slurmdbd(self) -> None:
        conf = self.dir / "etc" / "slurmdbd.conf"
        conf.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.dir / 'munge' / 'munge.socket'}",
                    "DbdHost=localhost",
                    "DbdAddr=127.0.0.1",
                    f"DbdPort={self.ports['slurmdbd']}",
                    "SlurmUser=root",
                    f"LogFile={self.dir / 'log' / 'slurmdbd.log'}",
                    f"PidFile={self.dir / 'slurmdbd.pid'}",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={self.ports['mysql']}",
                    "StorageUser=slurm",
                    "StoragePass=hpcgym",
                    "StorageLoc=slurm_acct_db",
                    "",
                ]
            )
        )
        os.chmod(conf, 0o600)
        self._spawn(
            "slurmdbd",
            [which("slurmdbd") or "slurmdbd", "-D"],
            env={"SLURM_CONF": str(self.conf)},
        )
        # slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF
        self._wait_for(
            lambda: port_open(self.ports["slurmdbd"]),
            "slurmdbd",
            timeout=max(self.start_timeout, 120),
        )

    def _write_conf(self) -> None:
        d = self.dir
        lines = [
            f"ClusterName={self.cluster}",
            f"SlurmctldHost={self.hostname}(127.0.0.1)",
            f"SlurmctldPort={self.ports['slurmctld']}",
            f"SlurmdPort={self.ports['slurmd0']}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={d / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool' / '%n'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd-%n.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "SlurmdParameters=config_overrides",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "SwitchType=switch/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            f"SchedulerParameters={self.scheduler_parameters}",
            f"PriorityType={self.priority_type}",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={self.jobcomp_log}",
            "ReturnToService=2",
            "MinJobAge=600",
            "MaxJobCount=200000",
            "KillWait=2",
            "OverTimeLimit=0",
            "InactiveLimit=0",
            "SlurmctldTimeout=300",
            "SlurmdTimeout=300",
            "MessageTimeout=30",
        ]
        if self.accounting == "slurmdbd":
            lines += [
                "AccountingStorageType=accounting_storage/slurmdbd",
                "AccountingStorageHost=127.0.0.1",
                f"AccountingStoragePort={self.ports['slurmdbd']}",
                # the munge socket for slurmdbd (else the default /run/munge one)
                f"AccountingStoragePass={d / 'munge' / 'munge.socket'}",
            ]
        else:
            lines.append("AccountingStorageType=accounting_storage/none")
        lines += self.extra_conf
        if self.nodes == 1:
            lines.append(
                f"NodeName={self.hostname} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN"
            )
        else:
            per = self.cpus // self.nodes
            lines += [
                f"NodeName={name} NodeHostname={self.hostname} NodeAddr=127.0.0.1 "
                f"Port={self.ports[f'slurmd{i}']} CPUs={per} State=UNKNOWN"
                for i, name in enumerate(self.node_names)
            ]
        lines += [
            "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
        self.conf.write_text("\n".join(lines))

    def _check_alive(self) -> None:
        for name, p in self._procs:
            if p.poll() is not None:
                raise SlurmError(
                    f"{name} exited with status {p.returncode}; its log:\n{self.log_tail(name)}"
                )

    def _wait_for(
        self, ok: Callable[[], bool], what: str, *, timeout: float | None = None, fail: bool = True
    ) -> bool:
        deadline = time.monotonic() + (self.start_timeout if timeout is None else timeout)
        while time.monotonic() < deadline:
            if fail:
                self._check_alive()
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                if ok():
                    return True
            time.sleep(0.2)
        if fail:
            raise SlurmError(f"timed out waiting for {what}; logs:\n{self.log_tail()}")
        return False

    def _controller_up(self) -> bool:
        return self.run(["scontrol", "ping"], check=False, timeout=10).returncode == 0 and (
            "UP" in self.run(["scontrol", "ping"], check=False, timeout=10).stdout
        )

    def _node_idle_or_busy(self) -> bool:
        out = self.run(["sinfo", "-h", "-N", "-o", "%t"], check=False, timeout=10).stdout.split()
        return bool(out) and all(s.rstrip("*~#") in ("idle", "mix", "alloc") for s in out)

    def _node_idle(self) -> bool:
        out = self.run(["sinfo", "-h", "-N", "-o", "%t"], check=False, timeout=10).stdout.split()
        return bool(out) and all(s.rstrip("*~#") == "idle" for s in out)

    def log_tail(self, name: str | None = None, lines: int = 30) -> str:
        """The last ``lines`` lines of a daemon's log (or of every log)."""
        logs = (
            sorted((self.dir / "log").glob(f"{name}*" if name else "*"))
            if self.dir != Path()
            else []
        )
        parts = []
        for p in logs:
            with contextlib.suppress(OSError):
                text = p.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"== {p.name}\n" + "\n".join(text))
        return "\n".join(parts)

    # ------------------------------------------------------------------ clients
    def run(
        self, argv: Sequence[str], *, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command of this instance (``SLURM_CONF`` set).

        :param argv: e.g. ``["squeue", "-h"]``
        :param check: raise :class:`SlurmError` on a non-zero exit
        :param timeout: seconds
        """
        argv = list(argv)
        exe = which(argv[0])
        if exe is not None:
            argv[0] = exe
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and r.returncode != 0:
            raise SlurmError(
                f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip() or r.stdout.strip()}"
            )
        return r

    def sbatch(
        self,
        seconds: float,
        procs: int = 1,
        *,
        time_limit_min: int | None = None,
        begin: float | None = None,
        name: str = "hpcgym",
        extra: Sequence[str] = (),
    ) -> int:
        """Submit ``sleep seconds`` on ``procs`` cores; return Slurm's job id.

        :param seconds: run time (``sleep``; fractions allowed)
        :param procs: cores (``-n``)
        :param time_limit_min: ``--time`` in whole minutes (default: the run time, rounded up)
        :param begin: Unix time before which the job is not eligible (``--begin``, whole
            seconds), or ``None``
        :param name: job name
        :param extra: more ``sbatch`` options
        """
        if time_limit_min is None:
            time_limit_min = max(1, math.ceil(seconds / 60.0))
        argv = [
            "sbatch",
            "--parsable",
            f"--job-name={name}",
            f"--ntasks={int(procs)}",
            f"--time={int(time_limit_min)}",
            f"--chdir={self.dir / 'jobs'}",
            "--output=/dev/null",
            "--error=/dev/null",
        ]
        if begin is not None:
            argv.append("--begin=" + _slurm_time(begin))
        argv += list(extra)
        argv.append(f"--wrap=exec sleep {seconds:.3f}")
        out = self.run(argv, timeout=60).stdout.strip()
        return int(out.split(";")[0])

    def queue_ids(self) -> list[int]:
        """Job ids in the queue (pending or running)."""
        out = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=20)
        return [int(x) for x in out.stdout.split() if x.isdigit()]

    def pending_ids(self) -> list[int]:
        """Job ids pending in the queue."""
        out = self.run(["squeue", "-h", "-t", "PD", "-o", "%i"], check=False, timeout=20)
        if out.returncode != 0:
            raise SlurmError(f"squeue failed: {out.stderr.strip()}")
        return [int(x) for x in out.stdout.split() if x.isdigit()]

    def jobcomp(self) -> list[JobRecord]:
        """The ``jobcomp/filetxt`` records so far (see :func:`parse_jobcomp`)."""
        if not self.jobcomp_log.exists():
            return []
        return parse_jobcomp(self.jobcomp_log)

    def sacct(self, fields: Sequence[str] | None = None, extra: Sequence[str] = ()) -> str:
        """``sacct --parsable2`` output for every job of this instance (needs
        ``accounting="slurmdbd"``).

        :param fields: the ``--format`` fields (default: those of :func:`parse_sacct`)
        :param extra: more ``sacct`` options
        """
        if self.accounting != "slurmdbd":
            raise SlurmError('sacct needs LocalSlurm(accounting="slurmdbd")')

        fmt = ",".join(fields or SACCT_FIELDS)
        argv = [
            "sacct",
            "--parsable2",
            "--allusers",
            "--duplicates",
            f"--format={fmt}",
            "--starttime=1970-01-01T00:00:00",
            "--endtime=now",
            *extra,
        ]
        return self.run(argv, timeout=60).stdout

    # ------------------------------------------------------------------ replay
    def replay(self, workload: Workload, **kw: Any) -> ReplayResult:
        """Run ``workload`` as ``sleep`` jobs at their scaled submit times, wait, collect:
        :func:`hpcgym.slurm.replay.replay` on this instance (see there for the options)."""
        from hpcgym.slurm.replay import replay

        return replay(self, workload, **kw)


def _slurm_time(t: float) -> str:
    """A Unix time as Slurm's ``YYYY-MM-DDTHH:MM:SS`` (UTC; the clients run with TZ=UTC)."""
    return datetime.fromtimestamp(int(t), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


__all__ += ["parse_time"]
