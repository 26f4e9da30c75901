"""Conformance: does hpcgym's engine schedule as a real Slurm does?

Replays windows of real traces, scaled in time, through a private Slurm 22.05
(:class:`hpcgym.slurm.LocalSlurm`: ``sched/backfill``, ``priority/basic`` = FIFO, one node
per processor, since Slurm's backfill reserves whole nodes) and through hpcgym's engine,
and compares the per-job start times and the order of starts (docs/engine.md, "Slurm
conformance"; docs/slurm.md).

Each window runs on its own Slurm, all windows at once (real time: the span of the
longest window divided by its time scale). Jobs are ``sleep`` jobs; each limit is the
trace's request scaled and rounded *up* to whole minutes (Slurm's granularity); the
engine gets the same limits as requests and, as run times, the occupancy Slurm recorded
(:func:`hpcgym.slurm.conformance.engine_workload`). Once every job of a window has
started, the jobs still running are cancelled (only starts are compared).

    python bench/slurm_conformance.py                       # the table of docs/engine.md
    python bench/slurm_conformance.py --from-raw results/slurm-conformance   # re-analyse

Writes ``<out>/raw-<trace>.json`` (every job: trace row, submit, limit, procs, Slurm's
start/end/state, its job id) and ``<out>/table.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.slurm import LocalSlurm, ReplayResult, slurm_unavailable
from hpcgym.slurm.conformance import KINDS, anchored, classify, compare
from hpcgym.slurm.harness import DEFAULT_SCHEDULER_PARAMETERS, EASY_SCHEDULER_PARAMETERS
from hpcgym.workload import load
from hpcgym.workload.core import Workload

#: (trace, first job of the window, jobs, time scale: trace seconds per real second)
DEFAULT_WINDOWS = ("SDSC-SP2:20000:160:120", "HPC2N:60500:170:60", "KTH-SP2:14000:160:120")
SCHEDULERS = ("SLURM-EASY", "EASY", "CONSERVATIVE", "NONE")
#: Slurm's configurations: its own (a reservation for every pending job) and the one that
#: reserves for the first pending job only, on busy nodes first (EASY, ``SLURM-EASY``)
SLURM_CONFIGS = {"easy": EASY_SCHEDULER_PARAMETERS, "reserve-all": DEFAULT_SCHEDULER_PARAMETERS}


def _window(spec: str) -> tuple[str, int, int, float]:
    name, start, jobs, scale = spec.split(":")
    return name, int(start), int(jobs), float(scale)


def run_window(
    spec: str,
    out: Path,
    log: Any,
    extra_conf: list[str] | None = None,
    sched_params: str = "",
    keep: bool = False,
) -> ReplayResult:
    name, start, jobs, scale = _window(spec)
    wl = load(name).window(start, jobs)
    log(f"{name}: jobs {start}..{start + jobs - 1}, {wl.machine_size} procs, scale {scale:g}")
    with LocalSlurm(
        cpus=wl.machine_size,
        nodes=wl.machine_size,
        extra_conf=extra_conf or (),
        keep=keep,
        scheduler_parameters=sched_params or DEFAULT_SCHEDULER_PARAMETERS,
    ) as slurm:
        log(f"{name}: Slurm in {slurm.dir}")
        res = slurm.replay(
            wl, time_scale=scale, lead=30.0, until="started", progress=lambda s: log(f"{name}: {s}")
        )
    save_raw(res, spec, out / f"raw-{name}.json", sched_params or DEFAULT_SCHEDULER_PARAMETERS)
    log(f"{name}: done ({sum(np.isfinite(res.start))}/{jobs} started)")
    return res


def save_raw(res: ReplayResult, spec: str, path: Path, sched_params: str = "") -> None:
    w = res.workload
    rows = [
        {
            "trace_job": int(w.job_id[i]),
            "slurm_job": int(res.slurm_ids[i]),
            "submit": float(w.submit[i]),
            "sleep": float(w.runtime[i]),
            "procs": int(w.procs[i]),
            "limit_min": int(w.request[i] // 60),
            "slurm_submit": _num(res.submit[i]),
            "start": _num(res.start[i]),
            "end": _num(res.end[i]),
            "state": res.state[i],
        }
        for i in range(len(w))
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "window": spec,
                "scheduler_parameters": sched_params,
                "machine_size": w.machine_size,
                "time_scale": res.time_scale,
                "t0": res.t0,
                "jobs": rows,
            },
            indent=1,
        )
    )


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def load_raw(path: Path) -> tuple[str, ReplayResult]:
    d = json.loads(path.read_text())
    rows = d["jobs"]
    n = len(rows)
    z = np.zeros(n, dtype=np.int64)
    col = np.array
    wl = Workload(
        name=path.stem.removeprefix("raw-"),
        machine_size=int(d["machine_size"]),
        job_id=col([r["trace_job"] for r in rows]),
        submit=col([r["submit"] for r in rows], dtype=float),
        runtime=col([r["sleep"] for r in rows], dtype=float),
        procs=col([r["procs"] for r in rows]),
        request=col([r["limit_min"] * 60.0 for r in rows]),
        user=z,
        group=z,
        executable=z,
        queue=z,
    )

    def arr(k: str) -> np.ndarray:
        return col([np.nan if r[k] is None else r[k] for r in rows], dtype=float)

    res = ReplayResult(
        workload=wl,
        t0=float(d["t0"]),
        time_scale=float(d["time_scale"]),
        slurm_ids=col([r["slurm_job"] for r in rows]),
        submit=arr("slurm_submit"),
        start=arr("start"),
        end=arr("end"),
        state=[r["state"] for r in rows],
    )
    return d["window"], res


def matching_scheduler(params: str) -> str:
    """The engine's scheduler for Slurm's ``SchedulerParameters``: ``SLURM-EASY`` when only
    the first pending job gets a reservation, else ``CONSERVATIVE`` (one for every job)."""
    return (
        "SLURM-EASY" if "bf_job_part_count_reserve=1" in params.replace(" ", "") else "CONSERVATIVE"
    )


def table(
    results: list[tuple[str, ReplayResult]], latency: float, tol: float, main: str = SCHEDULERS[0]
) -> str:
    """The conformance table: per window and scheduler, the jobs whose start agrees with
    Slurm's (in order and within ``tol`` s) in the free-running comparison
    (:func:`~hpcgym.slurm.conformance.compare`) and decision by decision from Slurm's own
    state (:func:`~hpcgym.slurm.conformance.anchored`); the differences of ``main`` (the
    scheduler that matches Slurm's configuration) by kind."""
    lines = [
        "| window (trace:first:jobs:scale) | procs | jobs | waited in Slurm | scheduler "
        f"| free-running: in order | within {tol:g} s | both | mean abs diff (s) "
        "| per decision: same |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    kinds: list[str] = []
    decisions = np.zeros(3, dtype=np.int64)  # engine earlier, engine not (yet), order only
    tot: dict[str, np.ndarray] = {}
    for spec, res in results:
        waited = int(np.sum(res.start > res.workload.submit + tol))
        for sched in SCHEDULERS:
            c = compare(res, sched, latency=latency, tol=tol)
            a = anchored(res, sched, tol=tol)
            s = c.summary()
            if sched == main:
                kinds += classify(res, c)
                decisions += (
                    int(np.sum(a.delta > tol)),
                    int(np.sum(a.delta < -tol)),
                    int(np.sum(a.within & ~a.in_order)),
                )
            n = s["jobs"]
            same = int(a.both.sum())
            tot.setdefault(sched, np.zeros(4, dtype=np.int64))
            tot[sched] += (n, s["in_order"], s["both"], same)
            lines.append(
                f"| {spec} | {res.workload.machine_size} | {n} | {waited} | {sched} | "
                f"{s['in_order']} | {s['within']} | {s['both']} ({100 * s['both'] / n:.1f}%) | "
                f"{s['mean_abs_delta_s']:.2f} | {same} ({100 * same / n:.1f}%) |"
            )
    for sched, (n, order, both, same) in tot.items():
        lines.append(
            f"| **all** | | {n} | | {sched} | {order} | | **{both} ({100 * both / n:.1f}%)** | "
            f"| **{same} ({100 * same / n:.1f}%)** |"
        )
    counts = {k: kinds.count(k) for k in KINDS}
    lines += [
        "",
        f"{main}, free-running, every job by kind of difference: "
        + ", ".join(f"{k}: {v}" for k, v in counts.items()),
        "",
        f"{main}, per decision, the jobs whose decision differs: Slurm started it "
        f"later than the engine would have from the same state: {decisions[0]}; Slurm "
        f"started it where the engine would not (yet): {decisions[1]}; the same start, "
        f"but another job moved past it: {decisions[2]}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--windows",
        nargs="+",
        default=list(DEFAULT_WINDOWS),
        help="trace:first_job:jobs:time_scale (default: %(default)s)",
    )
    p.add_argument("--out", type=Path, default=Path("results/slurm-conformance"))
    p.add_argument(
        "--from-raw",
        type=Path,
        default=None,
        help="re-analyse the raw-*.json of an earlier run instead of running Slurm",
    )
    p.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="seconds added to each job's occupancy in the engine (default 0)",
    )
    p.add_argument(
        "--tol",
        type=float,
        default=2.0,
        help="starts within this many real seconds count as the same (default 2)",
    )
    p.add_argument(
        "--slurm-conf",
        action="append",
        default=[],
        help="one more slurm.conf line (repeatable), e.g. DebugFlags=Backfill",
    )
    p.add_argument(
        "--slurm-config",
        choices=sorted(SLURM_CONFIGS),
        default="easy",
        help="Slurm's backfill: 'easy' reserves for the first pending job only, on busy "
        "nodes first (bf_job_part_count_reserve=1,bf_busy_nodes; the engine's SLURM-EASY); "
        "'reserve-all' is Slurm's own default, a reservation for every pending job "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--scheduler-parameters",
        default=None,
        help="Slurm's SchedulerParameters in full, instead of --slurm-config's",
    )
    p.add_argument("--keep", action="store_true", help="keep each Slurm's directory (logs)")
    a = p.parse_args(argv)
    lock = threading.Lock()

    def log(msg: str) -> None:
        with lock:
            print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    params = a.scheduler_parameters or SLURM_CONFIGS[a.slurm_config]
    if a.from_raw is not None:
        raws = sorted(a.from_raw.glob("raw-*.json"))
        results = [load_raw(f) for f in raws]
        if not results:
            print(f"error: no raw-*.json in {a.from_raw}", file=sys.stderr)
            return 2
        params = json.loads(raws[0].read_text()).get("scheduler_parameters", "(not recorded)")
    else:
        why = slurm_unavailable()
        if why is not None:
            print(f"error: cannot run Slurm here: {why}", file=sys.stderr)
            return 2
        out: dict[str, ReplayResult] = {}
        errors: list[BaseException] = []

        def work(spec: str) -> None:
            try:
                out[spec] = run_window(spec, a.out, log, a.slurm_conf, params, a.keep)
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)
                log(f"{spec}: FAILED: {e}")

        threads = [threading.Thread(target=work, args=(s,)) for s in a.windows]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            return 1
        results = [(s, out[s]) for s in a.windows]
    body = table(results, a.latency, a.tol, matching_scheduler(params))
    text = f"Slurm's SchedulerParameters: `{params}`\n\n{body}"
    print(text)
    dest = (a.from_raw or a.out) / "table.md"
    dest.write_text(f"`python bench/slurm_conformance.py {' '.join(sys.argv[1:])}`\n\n{text}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
