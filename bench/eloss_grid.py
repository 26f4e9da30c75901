"""Full-trace grid of the E-Loss triple (Gaussier et al. SC'15, §4-6): E-Loss predictions +
a correction + EASY-SJBF, FCFS queue, AVEbsld.

Run (sequentially, one whole-trace simulation at a time)::

    HPCGYM_TRACE_DIR=path/to/traces PYTHONPATH=. python bench/eloss_grid.py \
        --traces KTH-SP2,SDSC-SP2 --variants default,paper-floor [--out results.jsonl]

``--list`` prints the variants. Each variant is a set of :class:`ELossEstimator` options
and a correction; ``EASY`` and ``EASY++`` (the named schedulers) can be added as
references with ``--variants EASY,EASY++,...``. The numbers recorded in
docs/predictors.md ("Full-trace validation with the engine") come from this script.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from hpcgym.predictors import make_estimator
from hpcgym.sim import Simulation, get_scheduler
from hpcgym.workload import load

#: name -> (E-Loss options, correction), all with FCFS + EASY-SJBF. The named scheduler
#: ``ELOSS`` (a reference, see REFERENCES) is E-Loss with ``negative="abs"`` and
#: ``incremental-offset``; ``name@key=value;correction=...`` derives an ad-hoc variant.
VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    # the model output clipped at 1 s (negative="floor") instead of the authors' |f|
    "paper-floor": ({"negative": "floor"}, "incremental"),
    "floor-offset": ({"negative": "floor"}, "incremental-offset"),
    # |f| (the authors' simulator) with each correction
    "abs": ({"negative": "abs"}, "incremental"),
    "abs-offset": ({"negative": "abs"}, "incremental-offset"),
    "abs-requested": ({"negative": "abs"}, "requested"),
    "abs-doubling": ({"negative": "abs"}, "doubling"),
    # the other losses of Table 5 (best-of-losses column), with the named ELOSS settings
    "sq-sq-large": ({"under": "squared"}, "incremental-offset"),
    "lin-lin-large": ({"over": "linear"}, "incremental-offset"),
    "lin-sq-large": ({"over": "linear", "under": "squared"}, "incremental-offset"),
    "sq-lin-const": ({"weight": "constant"}, "incremental-offset"),
    "sq-sq-const": ({"under": "squared", "weight": "constant"}, "incremental-offset"),
    # every predictsim reading: |f|, missing history = request, gamma = 1 + log(q p)
    "predictsim": (
        {"negative": "abs", "missing": "request", "gamma_offset": 1.0},
        "incremental-offset",
    ),
}
#: Gaussier et al. Tables 6-7 (pyss): EASY, EASY++, E-Loss C-V triple, best learning + SJBF
PUBLISHED: dict[str, dict[str, float]] = {
    "KTH-SP2": {"EASY": 92.6, "EASY++": 63.5, "C-V": 51.4, "best": 51.4},
    "CTC-SP2": {"EASY": 49.6, "EASY++": 85.8, "C-V": 20.5, "best": 16.3},
    "SDSC-SP2": {"EASY": 87.9, "EASY++": 79.4, "C-V": 75.0, "best": 69.7},
    "SDSC-BLUE": {"EASY": 36.5, "EASY++": 21.0, "C-V": 34.7, "best": 12.6},
}
REFERENCES = ("EASY", "EASY++", "ELOSS")


def run_one(trace: str, variant: str, wl: Any) -> dict[str, Any]:
    """One whole-trace simulation; returns a result row."""
    t0 = time.perf_counter()
    if variant in REFERENCES:
        res = get_scheduler(variant).simulate(wl)
        opts: dict[str, Any] = {}
        corr = get_scheduler(variant).correction
    else:
        opts, corr = VARIANTS[variant]
        est = make_estimator("eloss", **opts)
        res = Simulation(wl, backfill="sjbf", estimate=est, correction=corr).run()
    return {
        "trace": trace,
        "variant": variant,
        "options": opts,
        "correction": corr,
        "avg_bsld": float(res.metrics["avg_bsld"]),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def _parse_variant(v: str) -> str:
    """Accept ``name`` or ``name@key=value;key=value`` (an ad-hoc variant)."""
    if v in VARIANTS or v in REFERENCES:
        return v
    if "@" in v:
        base, _, extra = v.partition("@")
        opts, corr = VARIANTS[base]
        opts = dict(opts)
        for kv in extra.split(";"):
            k, _, val = kv.partition("=")
            if k == "correction":
                corr = val
            else:
                try:
                    opts[k] = float(val)
                except ValueError:
                    opts[k] = val
        VARIANTS[v] = (opts, corr)
        return v
    raise SystemExit(f"unknown variant {v!r}; valid: {', '.join([*REFERENCES, *VARIANTS])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--traces", default="KTH-SP2,CTC-SP2,SDSC-SP2,SDSC-BLUE")
    ap.add_argument("--variants", default="EASY,ELOSS")
    ap.add_argument("--out", default=None, help="append JSON lines here")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for k, (o, c) in VARIANTS.items():
            print(f"{k:24s} {c:20s} {o}")
        return
    variants = [_parse_variant(v) for v in args.variants.split(",")]
    rows = []
    for trace in args.traces.split(","):
        wl = load(trace)
        for v in variants:
            r = run_one(trace, v, wl)
            rows.append(r)
            pub = PUBLISHED.get(trace, {})
            print(
                f"{trace:10s} {v:28s} {r['correction']:18s} AVEbsld {r['avg_bsld']:8.2f}"
                f"  ({r['seconds']} s)  published EASY {pub.get('EASY', '-')} "
                f"C-V {pub.get('C-V', '-')}",
                flush=True,
            )
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
