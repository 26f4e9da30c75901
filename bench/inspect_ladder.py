"""The inspection decision's rung of the headroom ladder (``hpcgym/Inspect-v0``).

    HPCGYM_TRACE_DIR=path/to/traces python -m bench.inspect_ladder --trace SDSC-SP2 \\
        --split validation --windows 30 --length 1024 --seed 5

On the same windows as ``bench/ladder.py`` (``select_windows``: 30 windows of 1,024 jobs
of the split, window seed 5), the base scheduler -- the trace's deployable reference
(SDSC-SP2: SJF + EASY-SJBF with the 54 h starvation guard), or ``--base`` -- is played
uninspected (the reference) and with an inspector (:mod:`hpcgym.sim.inspection`) that
answers each start of the base policy's pick:

* ``accept``: always accept (must reproduce the reference exactly: ratio 1);
* ``hold-long-wide``: a fixed online rule: reject a pick whose estimate is at least
  ``--long`` hours and that takes more than ``--wide`` of the free processors (at most
  ``--max-rejections`` times per job), so that what arrives or ends first finds the
  processors free;
* ``reject``: reject whenever allowed (the cost of holding, ``--max-rejections`` times);
* ``lookahead1-clairvoyant``: a reference point, not a bound: at each decision, roll
  both verdicts out with the uninspected base to the window's end on the window's real
  future, and reject when that lowers the window's AVEbsld;
* ``agent`` (``--agent model.zip``): a trained inspector (``train/ppo.py --task
  inspect``), deterministic, on the observation of ``hpcgym/Inspect-v0``.

``--rungs`` picks the rungs (``accept,hold,reject,lookahead,agent``).

Per rung: the paired geometric-mean ratio of AVEbsld to the reference with its 95%
bootstrap interval and verdict (:mod:`hpcgym.evaluation.statistics`), the ratio of means,
the mean per-window maximum wait (h) and p99 bounded slowdown, the rejections per window.
The rules are fixed in advance (not tuned on these windows). ``--out`` writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.evaluation.windows import select_windows
from hpcgym.sim.engine import Simulation
from hpcgym.sim.inspection import DEFAULT_MAX_REJECTIONS
from hpcgym.sim.references import deployable_reference
from hpcgym.sim.schedulers import SchedulerSpec, get_scheduler
from hpcgym.workload import load
from hpcgym.workload.core import Workload

HOUR = 3600.0
Rule = Callable[[Simulation], bool]
RuleOf = Callable[[Workload], Rule]  # a window's rule


def hold_long_wide(long_h: float, wide: float) -> Rule:
    """Reject a pick with an estimate of at least ``long_h`` hours that takes more than
    the share ``wide`` of the free processors."""

    def rule(sim: Simulation) -> bool:
        j = sim.inspected
        v = sim.view
        return bool(v.estimate[j] >= long_h * HOUR and v.procs[j] > wide * v.free)

    return rule


def lookahead_clairvoyant(sim: Simulation) -> bool:
    """Reject when rolling the reject out (then the uninspected base to the end, on the
    real future) gives a lower AVEbsld than rolling the accept out."""
    values = []
    for reject in (False, True):
        twin = sim.clone(decider=False)
        twin.reject() if reject else twin.accept()
        twin.disable_inspection()
        values.append(twin.run().metrics["avg_bsld"])
    return values[1] < values[0]


def agent_rule(path: str, trace: str, spec: SchedulerSpec, window: Workload, max_rej: int) -> Rule:
    """The trained inspector at ``path`` (a MaskablePPO zip of ``train/ppo.py --task
    inspect``) as a rule: it sees the observation of ``hpcgym/Inspect-v0`` on ``trace`` (the
    trace's scales; built by the task's own row builder) and answers deterministically."""
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.generic_env import TaskEnv

    if path not in _MODELS:
        model = MaskablePPO.load(path, device="cpu")
        env = TaskEnv(
            "inspect", trace=trace, window_length=len(window), split="all",
            max_queue=int(model.observation_space.shape[0]), base=spec.policy,
            backfill=spec.backfill, max_rejections=max_rej, starvation=spec.starvation,
            reference=None,
        )  # fmt: skip
        _MODELS[path] = (model, env)
    model, env = _MODELS[path]
    task = env.task
    task.make_simulation(env, window, 0)  # the episode's row scratch (its engine unused)
    mask = np.ones(2, dtype=bool)

    def rule(sim: Simulation) -> bool:
        obs = task.observe(env, sim, None)[0]
        action, _ = model.predict(obs, action_masks=mask, deterministic=True)
        return int(action) == 1

    return rule


_MODELS: dict[str, Any] = {}


def play(spec: SchedulerSpec, window: Workload, rule: Rule | None, max_rej: int) -> dict[str, Any]:
    """One window under ``spec``, inspected by ``rule`` (``None``: uninspected)."""
    sim = spec.make_simulation(window, 0)
    t0 = time.perf_counter()
    if rule is not None:
        sim.enable_inspection(max_rej)
    res = sim.run(reject=rule)
    m = res.metrics
    return {
        "avg_bsld": float(m["avg_bsld"]),
        "max_wait_h": float(m["max_wait"]) / HOUR,
        "p99_bsld": float(m["p99_bsld"]),
        "rejections": int(res.counters.get("rejections", 0)),
        "inspections": int(res.counters.get("inspections", 0)),
        "seconds": time.perf_counter() - t0,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", default="SDSC-SP2")
    p.add_argument("--split", default="validation")
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--seed", type=int, default=5, help="window seed")
    p.add_argument("--base", default=None, help="base scheduler (default: deployable reference)")
    p.add_argument("--long", type=float, default=4.0, help="hold-long-wide: hours")
    p.add_argument("--wide", type=float, default=0.5, help="hold-long-wide: share of free")
    p.add_argument("--max-rejections", type=int, default=DEFAULT_MAX_REJECTIONS)
    p.add_argument("--lookahead-windows", type=int, default=30, help="0: skip the lookahead")
    p.add_argument("--agent", default=None, help="a trained inspector (MaskablePPO zip)")
    p.add_argument(
        "--rungs", default="accept,hold,reject,lookahead,agent", help="the rungs to play"
    )
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    a = p.parse_args(argv)

    wl = load(a.trace)
    base = a.base or deployable_reference(a.trace) or "SJF+EASY-SJBF"
    spec = get_scheduler(base)
    starts = list(select_windows(len(wl), a.length, a.windows, a.split, a.seed).starts)
    windows = [wl.window(s, a.length) for s in starts]
    wanted = {r.strip() for r in a.rungs.split(",")}
    rungs: dict[str, tuple[RuleOf, int]] = {}
    if "accept" in wanted:
        rungs["accept"] = (lambda w: lambda s: False, a.windows)
    if "hold" in wanted:
        hold = hold_long_wide(a.long, a.wide)
        rungs[f"hold-long-wide (>= {a.long:g} h, > {a.wide:g} of free)"] = (
            lambda w: hold,
            a.windows,
        )
    if "reject" in wanted:
        rungs["reject"] = (lambda w: lambda s: True, a.windows)
    if "lookahead" in wanted:
        rungs["lookahead1-clairvoyant"] = (lambda w: lookahead_clairvoyant, a.lookahead_windows)
    if "agent" in wanted and a.agent is not None:
        path = str(a.agent)
        rungs[f"agent {Path(path).parent.name}/{Path(path).name}"] = (
            lambda w: agent_rule(path, a.trace, spec, w, a.max_rejections),
            a.windows,
        )
    ref = [play(spec, w, None, a.max_rejections) for w in windows]
    out: dict[str, Any] = {
        "trace": a.trace,
        "split": a.split,
        "base": spec.name,
        "starts": starts,
        "length": a.length,
        "max_rejections": a.max_rejections,
        "reference": ref,
        "rungs": {},
    }
    print(f"{a.trace} {a.split}: {len(starts)} windows of {a.length} jobs, base {spec.name}")
    print(f"reference: mean AVEbsld {np.mean([r['avg_bsld'] for r in ref]):.2f}")
    print("| rung | windows | geo-mean ratio [95% CI] | verdict | ratio of means | max wait h |"
          " p99 bsld | rejections/window |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, (rule, n) in rungs.items():
        if n < 1:
            continue
        rows = [play(spec, w, rule(w), a.max_rejections) for w in windows[:n]]
        x = [r["avg_bsld"] for r in rows]
        pc = paired_comparison(x, [r["avg_bsld"] for r in ref[:n]])
        out["rungs"][name] = {"comparison": pc.to_dict(), "verdict": pc.verdict, "windows": rows}
        print(
            f"| {name} | {n} | {pc.geo_ratio:.3f} [{pc.ci_low:.3f}, {pc.ci_high:.3f}] | "
            f"{pc.verdict} | {pc.mean_ratio:.3f} | "
            f"{np.mean([r['max_wait_h'] for r in rows]):.1f} | "
            f"{np.mean([r['p99_bsld'] for r in rows]):.1f} | "
            f"{np.mean([r['rejections'] for r in rows]):.1f} |",
            flush=True,
        )
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
