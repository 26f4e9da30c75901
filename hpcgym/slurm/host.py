"""What a private Slurm needs from this host: its programs (:func:`slurm_unavailable` says
why one cannot run), free TCP ports, and child daemons that stop with their parent and
are stopped by their PID. :mod:`hpcgym.slurm.harness` (the :class:`LocalSlurm` harness)
re-exports the public names.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

__all__ = ["REQUIRED", "SlurmError", "SlurmUnavailable", "slurm_unavailable"]

try:  # Linux: a daemon is told to stop when the Python process that started it dies
    import ctypes

    _LIBC: Any = ctypes.CDLL(None, use_errno=True)
    _PR_SET_PDEATHSIG = 1
except (ImportError, OSError):  # pragma: no cover - not Linux
    _LIBC = None


def stop_with_parent() -> None:
    """In a daemon's child process, before exec: SIGTERM when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``), so that a test or script killed without running the context
    manager's exit (a time-out, SIGKILL) leaves no daemon behind."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


#: the binaries each accounting mode needs (searched on PATH, then in /usr/sbin, /sbin)
REQUIRED = {
    "jobcomp": ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel"),
    "slurmdbd": (
        "slurmdbd",
        "sacct",
        "sacctmgr",
        "mariadbd|mysqld",
        "mariadb-install-db|mysql_install_db",
        "mariadb|mysql",
    ),
}


_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot run here (the message says why: a missing binary, not root)."""


class SlurmError(RuntimeError):
    """A daemon did not start, or a client command failed (the message has its output)."""


def which(name: str) -> str | None:
    for alt in name.split("|"):
        found = shutil.which(alt)
        if found is None:
            for d in _SBIN:
                p = Path(d) / alt
                if p.is_file() and os.access(p, os.X_OK):
                    found = str(p)
                    break
        if found is not None:
            return found
    return None


def slurm_unavailable(accounting: str = "jobcomp") -> str | None:
    """Why :class:`~hpcgym.slurm.harness.LocalSlurm` cannot run here, or ``None`` if it can.

    :param accounting: ``"jobcomp"`` or ``"slurmdbd"`` (also needs slurmdbd and MariaDB)
    :return: a one-line reason (for ``pytest.skip``), or ``None``
    """
    if accounting not in REQUIRED:
        raise ValueError(f"accounting must be one of {sorted(REQUIRED)}, not {accounting!r}")
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "a private Slurm needs root (slurmd runs jobs as their user)"
    names = list(REQUIRED["jobcomp"])
    if accounting == "slurmdbd":
        names += REQUIRED["slurmdbd"]
    missing = [n for n in names if which(n) is None]
    if missing:
        return (
            f"Slurm binaries missing: {', '.join(missing)} (Debian: apt-get install slurmctld "
            "slurmd slurm-client munge"
            + (" slurmdbd mariadb-server" if accounting == "slurmdbd" else "")
            + ")"
        )
    return None


#: ports handed out by this process (a second instance never gets the same one)
_GIVEN: set[int] = set()
_GIVEN_LOCK = threading.Lock()
#: below Linux's ephemeral range (32768-60999), so no outgoing connection holds them
_PORT_RANGE = (12000, 32000)


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports, free on 127.0.0.1 now and not handed out before by this
    process, drawn at random below the ephemeral range."""
    rng = random.Random()
    ports: list[int] = []
    with _GIVEN_LOCK:
        while len(ports) < n:
            port = rng.randrange(*_PORT_RANGE)
            if port in _GIVEN or port in ports:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            ports.append(port)
        _GIVEN.update(ports)
    return ports


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def terminate(proc: subprocess.Popen[bytes], name: str, grace: float = 10.0) -> None:
    """Stop one child daemon by its PID: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
