"""The headroom ladder: every kind of scheduler on one scale, on the same windows.

    HPCGYM_TRACE_DIR=path/to/traces python bench/ladder.py --task schedule \\
        --traces SDSC-SP2 HPC2N --splits train validation --windows 30 --length 1024 --seed 5

Per trace and split, one table (``--out-md``: into a Markdown file between markers): each
rung's paired geometric-mean ratio of AVEbsld to the reference with its 95% bootstrap
interval (:mod:`hpcgym.evaluation.statistics`), the ratio of means, and the means over
windows of the maximum wait (hours) and of the p99 bounded slowdown.

Rungs (``--groups``):

* ``a`` online heuristics: the thirteen queue orders with EASY-SJBF, without and with the
  starvation guard (``--guard``, the engine's ``starvation=``);
* ``b`` online predictors and rules, ranking and reservations on separate estimates
  (:mod:`hpcgym.evaluation.ranking`): log-ridge and E-Loss warmed on the log before the
  window, the like-job rule (jobs whose user's last finished job with the same request
  ran <= ``--threshold`` s go first);
* ``c`` online planners: the one-step schedule lookahead (slow; ``--lookahead-windows``);
* ``d`` information-graded oracles: a clairvoyant "ends within ``--threshold`` s" bit, a
  simulated classifier of it at graded precision and recall, run times blurred by
  log-normal noise at graded sigma (:mod:`hpcgym.predictors.oracles`);
* ``e`` clairvoyant static orders: by real run time and by area, reservations on the real
  run time or on the request;
* ``f`` clairvoyant search over per-job priorities seeded from the best static order of
  each window, ``--search-budget`` engine runs per window (:mod:`hpcgym.evaluation.search`);
* ``g`` a certified lower bound on AVEbsld: CP-SAT on the windows' most congested blocks
  and the fluid relaxation of the whole window (:mod:`hpcgym.evaluation.bound`), and the
  best schedule found's distance to it.

``--voi`` draws the value-of-information figure (``docs/figures/voi_<trace>.png``) and its
table from the stored rungs. Every rung of every (trace, split) is one JSON file under
``--out``; a file whose windows match is not recomputed, so an interrupted run resumes.
``--time-limit`` stops starting new rungs after that many seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.ladder`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.ladder", *sys.argv[1:]])

import numpy as np  # noqa: E402

from hpcgym.evaluation.statistics import paired_comparison  # noqa: E402
from hpcgym.evaluation.windows import select_windows  # noqa: E402
from hpcgym.sim.engine import POLICIES  # noqa: E402
from hpcgym.sim.references import deployable_reference, reference_policy  # noqa: E402
from hpcgym.workload.core import Workload  # noqa: E402

QUEUE_POLICIES = tuple(k for k in POLICIES if k not in ("SPF", "LPF"))
PRECISIONS = (1.0, 0.9, 0.75, 0.5)
RECALLS = (1.0, 0.75, 0.5, 0.25)
SIGMAS = (0.25, 0.5, 1.0, 2.0, 4.0)
GROUPS = {
    "a": "online heuristics",
    "b": "online predictors and rules",
    "c": "online planners",
    "d": "information-graded oracles (clairvoyant)",
    "e": "clairvoyant static orders",
    "f": "clairvoyant search",
    "g": "certified lower bound",
}
HOUR = 3600.0
RESERVE = {"actual": "real run time", "request": "request"}
BF_PREDICTORS = {"E-Loss": "eloss", "log-ridge": "log-ridge", "like-job": "like-job"}
BF_PREDICTORS["AVE2"] = "ave2"


@dataclass
class Rung:
    """One rung: how to run a window, and its row label."""

    key: str
    group: str
    label: str
    spec: str | None = None  # a scheduler spec (hpcgym.sim.get_scheduler)
    ranked: dict[str, Any] = field(default_factory=dict)  # simulate_ranked options
    info: dict[str, Any] = field(default_factory=dict)  # e.g. precision/recall/sigma asked


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_")


def heuristic_name(policy: str) -> str:
    return "EASY-SJBF" if policy == "FCFS" else f"{policy}+EASY-SJBF"


def guard_key(guard: str) -> str:
    return "guard" if guard == "auto" else f"guard{guard}"


def guard_text(guard: str) -> str:
    if guard == "auto":
        return "guard auto (3 x largest request)"
    return f"guard {float(guard) / HOUR:g} h"


def schedule_rungs(
    policy: str, guard: str, threshold: float, oracle_seed: int, guards: tuple[str, ...] = ()
) -> list[Rung]:
    """The rungs of the job-ordering task, ranking with ``policy``'s key; ``guard`` is the
    starvation threshold of the guarded like-job rule, ``guards`` those of group a."""
    rungs: list[Rung] = []
    for pol in QUEUE_POLICIES:
        name = heuristic_name(pol)
        rungs.append(Rung(f"a-{pol}", "a", name, spec=name))
        for g in guards or (guard,):
            rungs.append(
                Rung(
                    f"a-{pol}-{guard_key(g)}",
                    "a",
                    f"{name}, {guard_text(g)}",
                    spec=f"{name},starvation={g}",
                )
            )
    x = f"{threshold:g}"
    warm_lr, warm_el = "log-ridge:warm=log", "eloss:warm=log"
    b = [
        ("rank log-ridge, reserve request", {"rank": warm_lr, "mode": "key"}),
        ("rank E-Loss, reserve request", {"rank": warm_el, "mode": "key"}),
        ("rank request, reserve E-Loss", {"rank": "request", "estimate": warm_el}),
        ("rank log-ridge, reserve E-Loss", {"rank": warm_lr, "estimate": warm_el}),
        ("rank log-ridge, reserve log-ridge", {"rank": warm_lr, "estimate": warm_lr}),
        (
            f"like-job <= {x} s first, reserve request",
            {"rank": "like-job:warm=log", "mode": "first"},
        ),
        (
            f"like-job <= {x} s first, reserve E-Loss",
            {"rank": "like-job:warm=log", "mode": "first", "estimate": warm_el},
        ),
        ("rank like-job, reserve request", {"rank": "like-job:warm=log", "mode": "key"}),
        (
            f"like-job <= {x} s first, reserve request, guard {guard}",
            {"rank": "like-job:warm=log", "mode": "first", "starvation": guard},
        ),
    ]
    for i, (label, opts) in enumerate(b):
        rungs.append(Rung(f"b{i}-{_slug(label)}", "b", f"{policy}: {label}", ranked=opts))
    rungs.append(
        Rung(
            "c-lookahead",
            "c",
            f"{policy}+SCHEDULE-LOOKAHEAD1-ONLINE",
            spec=f"{policy}+SCHEDULE-LOOKAHEAD1-ONLINE",
        )
    )
    for p in PRECISIONS:
        for r in RECALLS:
            rank = f"ends-within:threshold={x},precision={p:g},recall={r:g},seed={oracle_seed}"
            rungs.append(
                Rung(
                    f"d-bit-p{p:g}-r{r:g}",
                    "d",
                    f"{policy}: ends within {x} s first (precision {p:g}, recall {r:g}), "
                    "reserve request",
                    ranked={"rank": rank, "mode": "first"},
                    info={"precision": p, "recall": r},
                )
            )
    for s in SIGMAS:
        blur = f"blurred:sigma={s:g},seed={oracle_seed}"
        rungs.append(
            Rung(
                f"d-blur{s:g}-rank",
                "d",
                f"{policy}: rank blurred run time (sigma {s:g}), reserve request",
                ranked={"rank": blur},
                info={"sigma": s},
            )
        )
        rungs.append(
            Rung(
                f"d-blur{s:g}-both",
                "d",
                f"{policy}: rank and reserve blurred run time (sigma {s:g})",
                ranked={"rank": blur, "estimate": blur},
                info={"sigma": s},
            )
        )
    for what, arr in (("area", "area"), ("run time", "runtime")):
        for res in ("actual", "request"):
            rungs.append(
                Rung(
                    f"e-{arr}-{res}",
                    "e",
                    f"order by real {what}, reserve {RESERVE[res]}",
                    ranked={"rank": arr, "policy": "SJF", "estimate": res},
                )
            )
    rungs.append(Rung("f-search", "f", "search over per-job priorities (clairvoyant)"))
    rungs.append(Rung("g-bound", "g", "certified lower bound on AVEbsld (CP-SAT)"))
    return rungs


def backfill_rungs(guard: str, threshold: float, oracle_seed: int) -> list[Rung]:
    """The rungs of the backfilling task (FCFS queue, reference EASY-SJBF): what the
    backfiller decides with, from the request to the real run time."""
    rungs = [Rung(f"a-{_slug(n)}", "a", n, spec=n) for n in ("EASY", "CONSERVATIVE", "NONE")]
    for label, est in BF_PREDICTORS.items():
        rungs.append(
            Rung(
                f"b-{est}",
                "b",
                f"EASY-SJBF on {label} (warmed on the log)",
                ranked={"rank": "request", "policy": "FCFS", "estimate": f"{est}:warm=log"},
            )
        )
    rungs.append(Rung("c-lookahead", "c", "LOOKAHEAD1-ONLINE", spec="LOOKAHEAD1-ONLINE"))
    x = f"{threshold:g}"
    for p in PRECISIONS:
        for r in RECALLS:
            est = f"ends-within:threshold={x},precision={p:g},recall={r:g},seed={oracle_seed}"
            rungs.append(
                Rung(
                    f"d-bit-p{p:g}-r{r:g}",
                    "d",
                    f"EASY-SJBF, estimate {x} s for jobs flagged as ending within {x} s "
                    f"(precision {p:g}, recall {r:g})",
                    ranked={"rank": "request", "policy": "FCFS", "estimate": est},
                    info={"precision": p, "recall": r},
                )
            )
    for sg in SIGMAS:
        rungs.append(
            Rung(
                f"d-blur{sg:g}",
                "d",
                f"EASY-SJBF on the blurred run time (sigma {sg:g})",
                ranked={
                    "rank": "request",
                    "policy": "FCFS",
                    "estimate": f"blurred:sigma={sg:g},seed={oracle_seed}",
                },
                info={"sigma": sg},
            )
        )
    for n in ("EASY-SJBF-AR", "EASY-AR", "CONSERVATIVE-AR"):
        rungs.append(Rung(f"e-{_slug(n)}", "e", n, spec=n))
    rungs.append(Rung("g-bound", "g", "certified lower bound on AVEbsld"))
    return rungs


# ------------------------------------------------------------------------- running
def _record(metrics: dict[str, float]) -> dict[str, float]:
    return {k: float(metrics[k]) for k in ("avg_bsld", "max_wait", "p99_bsld", "utilization")}


def _quality(values: np.ndarray, window: Workload, threshold: float) -> dict[str, float]:
    """How good a ranking estimate is: the precision and recall of "estimate <= threshold"
    over the jobs whose request is above it (the jobs the oracles' classifier draws on);
    ``sigma``, the spread of ``log(estimate / run time)``; ``corr``, the correlation of the
    logs of estimate and run time; and ``sigma_eq``, the log-normal blur with the same
    correlation, ``sd(log run time) sqrt(1 / corr^2 - 1)`` (a blur ``s`` of independent
    noise has correlation ``sd / sqrt(sd^2 + s^2)``): errors that shrink toward a mean
    rank worse than their spread says, and ``sigma_eq`` places them on the blur curve."""
    from hpcgym.predictors.oracles import classifier_quality

    hard = window.request > threshold
    p, r = classifier_quality(values[hard] <= threshold, window.runtime[hard] <= threshold)
    le = np.log(np.maximum(values, 1.0))
    lt = np.log(np.maximum(window.runtime, 1.0))
    corr = float(np.corrcoef(le, lt)[0, 1]) if np.std(le) > 0 and np.std(lt) > 0 else 0.0
    eq = float(np.std(lt) * math.sqrt(1.0 / corr**2 - 1.0)) if corr > 0 else float("inf")
    return {
        "precision": p,
        "recall": r,
        "sigma": float(np.std(le - lt)),
        "bias": float(np.mean(le - lt)),
        "corr": corr,
        "sigma_eq": eq,
    }


def run_ranked(
    rung: Rung, window: Workload, policy: str, threshold: float, guard: float | None = None
) -> dict[str, Any]:
    from hpcgym.evaluation.ranking import simulate_ranked

    opts = dict(rung.ranked)
    rank = opts.pop("rank")
    if rank == "area":
        rank = np.asarray(window.runtime * window.procs, dtype=np.float64)
    elif rank == "runtime":
        rank = np.asarray(window.runtime, dtype=np.float64)
    elif rank == "request":
        rank = np.asarray(window.request, dtype=np.float64)
    rank_is_estimator = not isinstance(rank, np.ndarray)
    res, values = simulate_ranked(
        window,
        rank,
        policy=opts.pop("policy", policy),
        mode=opts.pop("mode", "key"),
        threshold=threshold,
        estimate=opts.pop("estimate", "request"),
        starvation=opts.pop("starvation", guard),
    )
    out: dict[str, Any] = _record(res.metrics)
    if rank_is_estimator:
        out.update(_quality(values, window, threshold))
    return out


def run_spec(spec: str, window: Workload) -> dict[str, Any]:
    from hpcgym.sim import get_scheduler

    res = get_scheduler(spec).simulate(window, seed=0)
    return _record(res.metrics)


def guard_seconds(value: str | None, trace: str) -> float | None:
    """The threshold of ``--guard-all``: ``None``/``none``; ``deployable`` (the trace's
    deployable reference's); seconds, or hours as ``54h``."""
    if value is None or str(value).lower() == "none":
        return None
    text = str(value)
    if text == "deployable":
        spec = deployable_reference(trace) or ""
        m = re.search(r"starvation=([0-9.]+h?)", spec)
        if m is None:
            return None
        text = m.group(1)
    return float(text[:-1]) * HOUR if text.endswith("h") else float(text)


class Ladder:
    """The rungs of one (trace, split): runs them, stores them, tabulates them."""

    def __init__(self, args: argparse.Namespace, trace: str, split: str) -> None:
        from hpcgym.workload import load

        self.args, self.trace, self.split = args, trace, split
        self.workload = load(trace)
        ws = select_windows(len(self.workload), args.length, args.windows, split, args.seed)
        self.starts = list(ws.starts)
        self.policy = args.rank_policy or reference_policy(trace)
        #: --guard-all: the starvation threshold (s) every rung runs under, or None
        self.guard = guard_seconds(args.guard_all, trace)
        if self.guard is not None and args.guard_all == "deployable" and not args.rank_policy:
            self.policy = (deployable_reference(trace) or self.policy).split("+")[0]
        default = (
            heuristic_name(reference_policy(trace)) if args.task == "schedule" else "EASY-SJBF"
        )
        if args.reference == "ref":
            self.reference = default
        elif args.reference == "deployable":
            self.reference = deployable_reference(trace) or default
        else:
            self.reference = args.reference
        #: the reference's result file: "reference" for the default, else named by its spec
        self.ref_key = (
            "reference" if self.reference == default else f"reference-{_slug(self.reference)}"
        )
        self.dir = args.out / args.task / trace / split
        if args.task == "schedule":
            self.rungs = schedule_rungs(
                self.policy, args.guard, args.threshold, args.oracle_seed, tuple(args.guards)
            )
        else:
            self.rungs = backfill_rungs(args.guard, args.threshold, args.oracle_seed)

    def window(self, start: int) -> Workload:
        return self.workload.window(int(start), self.args.length)

    def path(self, key: str) -> Path:
        if key == "g-bound":  # the bound holds for every scheduler of the window: one copy
            return self.args.out / "bound" / self.trace / self.split / f"{key}.json"
        return self.dir / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        p = self.path(key)
        if not p.exists():
            return None
        data = json.loads(p.read_text())
        return data if data.get("starts") == self.starts else None

    def save(self, key: str, data: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path(key).write_text(json.dumps({"starts": self.starts, **data}, indent=1))

    def _per_window(self, fn: Callable[[Workload], dict[str, Any]], n: int | None = None) -> list:
        starts = self.starts if n is None else self.starts[:n]
        return [fn(self.window(s)) for s in starts]

    def run(self, rung: Rung) -> dict[str, Any] | None:
        a = self.args
        if rung.group == "f":
            return {"rows": self._search()}
        if rung.group == "g":
            return {"rows": self._bound()}
        if rung.spec is not None:
            n = a.lookahead_windows if rung.group == "c" else None
            spec = rung.spec
            if self.guard is not None and "starvation=" not in spec:
                spec = f"{spec},starvation={self.guard:g}"
            return {"rows": self._per_window(lambda w: run_spec(spec, w), n)}
        return {
            "rows": self._per_window(
                lambda w: run_ranked(rung, w, self.policy, a.threshold, self.guard)
            )
        }

    def _search(self) -> list[dict[str, Any]]:
        from hpcgym.evaluation.search import improve_priorities

        seeds = [r for r in self.rungs if r.group == "e"]
        stored = {r.key: self.load(r.key) for r in seeds}
        if any(v is None for v in stored.values()):
            raise RuntimeError("the search needs the static orders (group e) first")
        rows = []
        for i, s in enumerate(self.starts):
            best = min(seeds, key=lambda r: stored[r.key]["rows"][i]["avg_bsld"])  # type: ignore[index]
            w = self.window(s)
            prio = w.runtime * w.procs if best.ranked["rank"] == "area" else w.runtime
            res = improve_priorities(
                w,
                np.asarray(prio, dtype=np.float64),
                budget=self.args.search_budget,
                estimate=best.ranked["estimate"],
                starvation=self.guard,
                rng=np.random.default_rng((self.args.oracle_seed, int(s))),
            )
            rows.append({**_record(res.metrics), **res.summary(), "seed_rung": best.key})
        return rows

    def _bound(self) -> list[dict[str, Any]]:
        from hpcgym.evaluation.bound import window_bound
        from hpcgym.sim import get_scheduler

        rows = []
        for s in self.starts[: self.args.bound_windows]:
            w = self.window(s)
            ref = get_scheduler(heuristic_name(self.policy) + "-AR").simulate(w, seed=0)
            b = window_bound(
                w,
                ref.start,
                size=self.args.bound_size,
                count=self.args.bound_blocks,
                time_limit=self.args.bound_time,
            )
            rows.append(
                {
                    "avg_bsld": b["lower"],
                    "blocks_lower": b["blocks_lower"],
                    "fluid_lower": b["fluid_lower"],
                    "blocks": b["blocks"],
                }
            )
        return rows

    # ----------------------------------------------------------------- tables
    def values(self, key: str) -> list[dict[str, Any]] | None:
        d = self.load(key)
        return None if d is None else d["rows"]

    def table(self) -> str:
        ref_rows = self.values(self.ref_key)
        if ref_rows is None:
            return f"(no reference results for {self.trace} {self.split})\n"
        ref = np.array([r["avg_bsld"] for r in ref_rows])
        ref_wait = np.mean([r["max_wait"] for r in ref_rows]) / HOUR
        lines = [
            f"**{self.trace}, {self.split}** ({len(self.starts)} windows of {self.args.length} "
            f"jobs, window seed {self.args.seed}); reference `{self.reference}`: mean AVEbsld "
            f"{ref.mean():.2f}, max wait {ref_wait:.1f} h, "
            f"p99 bsld {np.mean([r['p99_bsld'] for r in ref_rows]):.0f}"
            + (
                f"; every rung runs under the starvation threshold {self.guard / HOUR:g} h "
                "unless its label names another"
                if self.guard is not None
                else ""
            ),
            "",
            "| rung | method | ratio [95%] | ratio of means | max wait (h) | p99 bsld |",
            "|---|---|---|---:|---:|---:|",
        ]
        best_found = np.full(len(ref), np.inf)
        bound_rows = None
        graded = 0
        for rung in self.rungs:
            rows = self.values(rung.key)
            if rows is None:
                continue
            if (
                self.args.task == "schedule"
                and rung.key.startswith("d-bit-")
                and (rung.key != "d-bit-p1-r1")
            ):
                graded += 1
                x = np.array([r["avg_bsld"] for r in rows])
                best_found[: len(x)] = np.minimum(best_found[: len(x)], x)
                continue  # the graded classifier's grid: the value-of-information tables
            if rung.group == "g":
                bound_rows = rows
                continue
            x = np.array([r["avg_bsld"] for r in rows])
            k = len(x)
            best_found[:k] = np.minimum(best_found[:k], x)
            cmp = paired_comparison(x, ref[:k])
            mw = np.mean([r["max_wait"] for r in rows]) / HOUR
            p99 = np.mean([r["p99_bsld"] for r in rows])
            few = f" ({k} windows)" if k < len(ref) else ""
            lines.append(
                f"| {rung.group} | {rung.label}{few} | {cmp.geo_ratio:.3f} "
                f"[{cmp.ci_low:.3f}, {cmp.ci_high:.3f}] | {x.mean() / ref[:k].mean():.3f} | "
                f"{mw:.1f} | {p99:.0f} |"
            )
        if graded:
            lines.append(
                f"| d | ({graded} rows of the graded classifier: see the value-of-information "
                "tables) | | | | |"
            )
        if bound_rows is not None:
            lb = np.array([r["avg_bsld"] for r in bound_rows])
            k = len(lb)
            gap = np.exp(np.mean(np.log(best_found[:k] / lb)))
            blk = np.mean([r.get("blocks_lower", np.nan) for r in bound_rows])
            flu = np.mean([r.get("fluid_lower", np.nan) for r in bound_rows])
            lines.append(
                f"| g | certified lower bound on AVEbsld (the larger of CP-SAT on "
                f"{self.args.bound_blocks} x {self.args.bound_size} jobs, "
                f"{self.args.bound_time:g} s each, and the fluid relaxation; {k} windows; "
                f"mean {lb.mean():.4f}: blocks {blk:.4f}, fluid {flu:.4f}) | "
                f"{np.exp(np.mean(np.log(lb / ref[:k]))):.3f} (bound / reference) | "
                f"{lb.mean() / ref[:k].mean():.3f} | | |"
            )
            lines.append(
                f"\nBest schedule found per window over the rungs above / the certified bound: "
                f"geometric mean {gap:.2f} (mean bound {lb.mean():.3f}, mean best found "
                f"{best_found[:k].mean():.2f})."
            )
        return "\n".join(lines) + "\n"


def compute(args: argparse.Namespace) -> int:
    """Run every missing rung: the references first, then group by group (in the order of
    ``--groups``) over every trace and split, so that a time limit cuts the last groups."""
    t0 = time.monotonic()
    ladders = [Ladder(args, t, s) for t in args.traces for s in args.splits]
    todo = [(lad, Rung(lad.ref_key, "ref", lad.reference, spec=lad.reference)) for lad in ladders]
    for g in args.groups:
        todo += [(lad, r) for lad in ladders for r in lad.rungs if r.group == g]
    for lad, rung in todo:
        if lad.load(rung.key) is not None:
            continue
        where = f"{lad.trace} {lad.split} {rung.key}"
        if args.time_limit and time.monotonic() - t0 > args.time_limit:
            print(f"time limit reached; not run: {where}", flush=True)
            continue
        t = time.monotonic()
        try:
            data = lad.run(rung)
        except (ImportError, ValueError, KeyError, RuntimeError) as exc:
            print(f"{where}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
            continue
        if data is None:
            continue
        data.update(label=rung.label, group=rung.group, info=rung.info)
        data["seconds"] = time.monotonic() - t
        lad.save(rung.key, data)
        print(f"{where}: {data['seconds']:.1f} s", flush=True)
    return 0


def tables(args: argparse.Namespace) -> str:
    parts = []
    for trace in args.traces:
        for split in args.splits:
            parts.append(Ladder(args, trace, split).table())
    return "\n".join(parts)


def write_between(path: Path, tag: str, text: str) -> None:
    """Replace the text between ``<!-- tag:begin -->`` and ``<!-- tag:end -->`` in
    ``path`` (appended at the end when the markers are missing)."""
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    body = path.read_text() if path.exists() else ""
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in body and end in body:
        head, rest = body.split(begin, 1)
        body = head + block + rest.split(end, 1)[1]
    else:
        body = body.rstrip() + "\n\n" + block + "\n"
    path.write_text(body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--task", choices=["schedule", "backfill"], default="schedule")
    p.add_argument("--traces", nargs="+", default=["SDSC-SP2", "HPC2N"])
    p.add_argument("--splits", "--split", nargs="+", default=["train", "validation"])
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--seed", type=int, default=5, help="window seed")
    p.add_argument(
        "--reference",
        default="ref",
        help="reference scheduler spec; 'ref': the trace's (unguarded) reference order with "
        "EASY-SJBF (schedule), EASY-SJBF (backfill); 'deployable': the trace's deployable "
        "reference (hpcgym.sim.references.DEPLOYABLE_REFERENCE)",
    )
    p.add_argument(
        "--rank-policy", default=None, help="ranking key (default: the trace's reference order)"
    )
    p.add_argument(
        "--guard", default="auto", help="starvation threshold (s or 'auto') of the guarded rule"
    )
    p.add_argument(
        "--guards",
        nargs="+",
        default=["auto", "86400"],
        help="starvation thresholds (s or 'auto') of the guarded heuristics (group a)",
    )
    p.add_argument(
        "--guard-all",
        default=None,
        help="run every rung under this starvation threshold (seconds, '54h', or 'deployable': "
        "the trace's deployable reference's, whose order then ranks); use another --out",
    )
    p.add_argument("--threshold", type=float, default=60.0, help="X of 'ends within X s'")
    p.add_argument("--oracle-seed", type=int, default=0, help="seed of the oracles' draws")
    p.add_argument(
        "--groups", nargs="+", default=["a", "b", "d", "e", "f", "g"], choices=list(GROUPS)
    )
    p.add_argument("--lookahead-windows", type=int, default=10)
    p.add_argument("--search-budget", type=int, default=1000, help="engine runs per window")
    p.add_argument("--bound-size", type=int, default=64, help="jobs per CP-SAT block")
    p.add_argument("--bound-blocks", type=int, default=2, help="blocks per window")
    p.add_argument("--bound-time", type=float, default=5.0, help="CP-SAT seconds per block")
    p.add_argument("--bound-windows", type=int, default=30)
    p.add_argument("--time-limit", type=float, default=0.0, help="seconds; 0: none")
    p.add_argument("--out", type=Path, default=Path("results/ladder"))
    p.add_argument("--out-md", type=Path, default=None, help="write the tables into this file")
    p.add_argument("--tables-only", action="store_true", help="only tabulate stored results")
    p.add_argument("--voi", action="store_true", help="also draw the value-of-information figure")
    p.add_argument("--figures", type=Path, default=Path("docs/figures"))
    args = p.parse_args(argv)
    if not args.tables_only:
        compute(args)
    text = tables(args)
    print(text)
    if args.out_md:
        tag = f"ladder:{args.task}" + ("" if args.reference == "ref" else f":{args.reference}")
        write_between(args.out_md, tag, text)
    if args.voi and args.task == "schedule":
        from bench.ladder_voi import voi  # the figure's code, beside this file

        vtext = voi(args, Ladder)
        print(vtext)
        if args.out_md:
            write_between(args.out_md, f"voi:{args.task}", vtext)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
