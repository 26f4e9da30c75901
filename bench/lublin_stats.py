"""Statistics of the Lublin-Feitelson generator against the model and the Lublin traces.

Run: ``HPCGYM_TRACE_DIR=<folder of the traces> python bench/lublin_stats.py``.
Prints markdown tables (pasted into ``docs/lublin.md``): generation speed, the default
workload, model parameters vs measured values on a large sample, load control, native
loads, and the synthetic traces Lublin-1 and Lublin-2 of the RLBackfilling paper (read
with a tiny local gzip + numpy parser when ``HPCGYM_TRACE_DIR`` holds them).
"""

from __future__ import annotations

import gzip
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from hpcgym.workload import lublin as L
from hpcgym.workload.core import Workload

SEEDS = range(20)


def table(header: list[str], rows: list[list[object]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


def pow2_frac(p: np.ndarray) -> float:
    return float(np.mean((p > 1) & ((p & (p - 1)) == 0)))


def mean_sd(values: list[float], fmt: str = "{:.3f}") -> str:
    return f"{fmt.format(np.mean(values))} ± {fmt.format(np.std(values))}"


def daily_corr(w: Workload, weights: np.ndarray, sel: np.ndarray | None = None) -> float:
    tod = (w.submit + int(w.meta.get("UnixStartTime", 0))) % 86400
    if sel is not None:
        tod = tod[sel]
    hist = np.bincount((tod // 1800).astype(int), minlength=48)
    return float(np.corrcoef(hist, weights)[0, 1])


def read_trace(name: str) -> dict[str, np.ndarray] | None:
    root = Path(os.environ.get("HPCGYM_TRACE_DIR", "traces"))
    path = root / name
    if not path.exists():
        print(f"({path} not found: set HPCGYM_TRACE_DIR; skipping the trace comparison)\n")
        return None
    with gzip.open(path, "rt") as fh:
        rows = [ln.split() for ln in fh if ln.strip() and not ln.startswith(";")]
    a = np.array(rows, dtype=np.float64)
    return {
        "submit": a[:, 1],
        "runtime": a[:, 3],
        "procs": a[:, 4].astype(np.int64),
        "queue": a[:, 14].astype(np.int64),
    }


def speed() -> None:
    print("## Generation time (best of 5, this machine)\n")
    rows = []
    for n in (10_000, 100_000):
        for model in L.REQUEST_MODELS:
            for load in (None, 0.85):
                best = np.inf
                for _ in range(5):
                    t0 = time.perf_counter()
                    L.generate(n_jobs=n, load=load, request_model=model)
                    best = min(best, time.perf_counter() - t0)
                rows.append([n, model, load, f"{best * 1000:.1f} ms"])
    table(["jobs", "request_model", "load", "time"], rows)


def default_stats() -> None:
    w = L.default_workload()
    print("## The default workload `default_workload()`\n")
    print(f"`generate(**{L.DEFAULT_WORKLOAD_KWARGS})`\n")
    inter = w.queue == L.INTERACTIVE
    counts = Counter(w.request.astype(int).tolist())
    top = counts.most_common(20)
    acc = w.runtime / w.request
    rows = [
        ["jobs / machine size", f"{len(w)} / {w.machine_size}"],
        ["span (days)", f"{w.span / 86400:.1f}"],
        ["offered load: target / achieved", f"0.85 / {w.offered_load:.4f}"],
        ["arrival-time multiplier c", w.meta["LublinArrivalScale"]],
        ["interactive jobs", f"{inter.mean():.3f}"],
        ["mean / median runtime (s)", f"{w.runtime.mean():.0f} / {np.median(w.runtime):.0f}"],
        ["mean / max procs", f"{w.procs.mean():.1f} / {w.procs.max()}"],
        ["serial fraction", f"{np.mean(w.procs == 1):.3f}"],
        ["power-of-two (>1) fraction", f"{pow2_frac(w.procs):.3f}"],
        ["distinct request values", len(counts)],
        ["jobs at the max estimate (48 h)", f"{counts[48 * 3600] / len(w):.3f}"],
        ["jobs using the 20 most popular values", f"{sum(c for _, c in top) / len(w):.3f}"],
        ["mean / median accuracy runtime/request", f"{acc.mean():.3f} / {np.median(acc):.4f}"],
        ["request == runtime", f"{np.mean(w.request == w.runtime):.4f}"],
        [
            "users (distinct, top user share)",
            f"{len(np.unique(w.user))}, {np.bincount(w.user).max() / len(w):.3f}",
        ],
    ]
    table(["statistic", "value"], rows)
    print(
        "20 most popular requests (hours: share):",
        ", ".join(f"{t / 3600:g}: {c / len(w):.3f}" for t, c in top),
        "\n",
    )


def model_vs_measured() -> None:
    n = 200_000
    w = L.generate(n_jobs=n, seed=1, request_model="none")
    print(f"## Model parameters vs measured ({n} jobs, 256 processors, native arrivals)\n")
    rows = []
    for q, tp in ((L.INTERACTIVE, L.INTERACTIVE_PARAMS), (L.BATCH, L.BATCH_PARAMS)):
        s = L.scaled_type_params(tp, 256)
        sel = w.queue == q
        p, rt = w.procs[sel], w.runtime[sel]
        prob = np.clip(s.pa * p + s.pb, 0, 1)
        e_ln = np.mean(prob * s.a1 * s.b1 + (1 - prob) * s.a2 * s.b2)
        pmf = L.size_pmf(s, 256)
        ks = np.abs(np.cumsum(np.bincount(p, minlength=257) / p.size) - np.cumsum(pmf)).max()
        name = "interactive" if q == L.INTERACTIVE else "batch"
        wts = L.daily_cycle_weights(s.anum, s.bnum)
        rows += [
            [name, "jobs", "-", f"{sel.sum()} ({sel.mean():.3f})"],
            [name, "serial fraction", f"{s.serial_prob:.4f}", f"{np.mean(p == 1):.4f}"],
            [
                name,
                "power-of-two fraction",
                f"{L.expected_pow2_fraction(s, 256):.4f} (exact)",
                f"{pow2_frac(p):.4f}",
            ],
            [name, "mean size", f"{np.dot(np.arange(257), pmf):.2f} (exact)", f"{p.mean():.2f}"],
            [
                name,
                "KS distance of the size distribution",
                f"< {1.36 / np.sqrt(p.size):.4f} (5 %)",
                f"{ks:.4f}",
            ],
            [name, "max size", f"2^{s.uhi:g} = {2**s.uhi:.0f}", f"{p.max()}"],
            [
                name,
                "mean ln(runtime + 0.5)",
                f"{e_ln:.3f} (E hyper-gamma)",
                f"{np.log(rt + 0.5).mean():.3f}",
            ],
            [
                name,
                "mean / median runtime (s)",
                "-",
                f"{rt.mean():.0f} / {np.median(rt):.0f}",
            ],
            [
                name,
                "ln runtime, size >= 64 minus serial",
                "> 0",
                f"{np.log(rt[p >= 64]).mean() - np.log(rt[p == 1]).mean():.2f}",
            ],
            [
                name,
                "daily cycle: corr(arrivals per slot, weights)",
                "1",
                f"{daily_corr(w, wts, sel):.3f}",
            ],
        ]
    table(["class", "statistic", "model", "measured"], rows)


def load_control() -> None:
    print("## Load control: target vs achieved offered load (10,000 jobs, 256 processors)\n")
    rows = []
    for target in (0.5, 0.7, 0.85, 1.0, 1.2):
        got = [L.generate(load=target, seed=s, request_model="none").offered_load for s in range(5)]
        rows.append([target, " ".join(f"{g:.4f}" for g in got)])
    table(["target", "achieved, seeds 0-4"], rows)
    print("## Native offered load (load=None), 10,000 jobs, mean ± sd over 20 seeds\n")
    rows = []
    for m, types in ((128, True), (256, True), (1024, True), (256, False)):
        vals = [
            L.generate(machine_size=m, seed=s, request_model="none", job_types=types) for s in SEEDS
        ]
        rows.append(
            [
                m,
                types,
                mean_sd([v.offered_load for v in vals]),
                mean_sd([v.span / 86400 for v in vals], "{:.1f}"),
            ]
        )
    table(["machine", "job_types", "offered load", "span (days)"], rows)


def trace_row(label: str, d: dict[str, np.ndarray], m: int) -> dict[str, float]:
    sub, rt, p = d["submit"], d["runtime"], d["procs"]
    span = sub[-1] - sub[0]
    return {
        "mean inter-arrival (s)": span / (len(sub) - 1),
        "span (days)": span / 86400,
        "offered load": float((rt * p).sum() / (m * span)),
        "mean runtime (s)": rt.mean(),
        "median runtime (s)": float(np.median(rt)),
        "mean procs": p.mean(),
        "serial fraction": np.mean(p == 1),
        "power-of-two fraction": pow2_frac(p),
        "procs > 128": np.mean(p > 128),
        "runtime < 2000 s, serial": np.mean(rt[p == 1] < 2000),
        "runtime < 2000 s, 2-5 procs": np.mean(rt[(p >= 2) & (p <= 5)] < 2000),
        "runtime < 2000 s, 6-22 procs": np.mean(rt[(p >= 6) & (p <= 22)] < 2000),
        "runtime < 2000 s, 23-90 procs": np.mean(rt[(p >= 23) & (p <= 90)] < 2000),
        "runtime < 2000 s, > 90 procs": np.mean(rt[p > 90] < 2000),
    }


def traces() -> None:
    l1 = read_trace("lublin_256.swf.gz")
    if l1 is not None:
        print("## Lublin-1 (`lublin_256.swf`, typeless model) vs `job_types=False`, 256 procs\n")
        ref = trace_row("Lublin-1", l1, 256)
        gens = [L.generate(seed=s, job_types=False, request_model="none") for s in SEEDS]
        ours = [
            trace_row("ours", {"submit": g.submit, "runtime": g.runtime, "procs": g.procs}, 256)
            for g in gens
        ]
        rows = []
        for k, v in ref.items():
            f = "{:.3f}" if v < 100 else "{:.0f}"
            rows.append([k, f.format(v), mean_sd([o[k] for o in ours], f)])
        wts = L.daily_cycle_weights(L.TYPELESS_PARAMS.anum, L.TYPELESS_PARAMS.bnum)
        hist = np.bincount(((l1["submit"] % 86400) // 1800).astype(int), minlength=48)
        rows.append(
            [
                "daily cycle corr with model weights",
                f"{np.corrcoef(hist, wts)[0, 1]:.3f}",
                mean_sd([daily_corr(g, wts) for g in gens]),
            ]
        )
        table(["statistic", "Lublin-1 trace", "ours, 20 seeds (mean ± sd)"], rows)
    l2 = read_trace("lublin_256_new2.swf.gz")
    if l2 is not None:
        print("## Lublin-2 (`lublin_256_new2`, typed) vs `job_types=True` defaults, 256 procs\n")
        gens = [L.generate(seed=s, request_model="none") for s in SEEDS]
        rows = []
        for q, name in ((0, "interactive"), (1, "batch")):
            p = l2["procs"][l2["queue"] == q]
            ours_share = [np.mean(g.queue == q) for g in gens]
            ours_ser = [np.mean(g.procs[g.queue == q] == 1) for g in gens]
            ours_p2 = [pow2_frac(g.procs[g.queue == q]) for g in gens]
            ours_mp = [g.procs[g.queue == q].mean() for g in gens]
            rows += [
                [name, "share of jobs", f"{np.mean(l2['queue'] == q):.3f}", mean_sd(ours_share)],
                [name, "serial fraction", f"{np.mean(p == 1):.3f}", mean_sd(ours_ser)],
                [name, "power-of-two fraction", f"{pow2_frac(p):.3f}", mean_sd(ours_p2)],
                [name, "mean procs", f"{p.mean():.1f}", mean_sd(ours_mp, "{:.1f}")],
            ]
        ref = trace_row("Lublin-2", l2, 256)
        ours = [
            trace_row("ours", {"submit": g.submit, "runtime": g.runtime, "procs": g.procs}, 256)
            for g in gens
        ]
        for k in ("span (days)", "offered load", "mean runtime (s)", "median runtime (s)"):
            f = "{:.3f}" if ref[k] < 100 else "{:.0f}"
            rows.append(["all", k, f.format(ref[k]), mean_sd([o[k] for o in ours], f)])
        table(["class", "statistic", "Lublin-2 trace", "ours, 20 seeds (mean ± sd)"], rows)


def main() -> None:
    speed()
    default_stats()
    model_vs_measured()
    load_control()
    traces()


if __name__ == "__main__":
    main()
