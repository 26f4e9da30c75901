"""The Schedule-v0 section of docs/results.md: the queue orders on the held-out test windows.

For every trace of the Backfill-v0 leaderboard, :func:`schedule_boards` runs the thirteen
built-in queue policies with EASY-SJBF backfilling, and every zoo agent of the job-ordering
task (cards with ``task: schedule``) tested on that trace, on the same test windows. Each
row is compared with the trace's deployable reference (the strongest order under the
starvation guard, :func:`hpcgym.sim.references.deployable_reference`; its own row leads the
board) by the paired geometric-mean ratio of AVEbsld with its 95% interval, and by the
ratio of means with its interval. The fairness columns are those of
:mod:`hpcgym.evaluation.fairness`: maximum wait, p99 bounded slowdown and the tail test. A
row claims lower slowdowns only with an interval below 1 **and** a tail that is not worse,
and that claim is checked on the sibling trace's board
(:func:`hpcgym.evaluation.leaderboard.replicate`). The objectives beyond bounded slowdown
(utilization, AWRT, waits by job-size class) are columns too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hpcgym.evaluation.cards import ModelCard
from hpcgym.evaluation.fairness import fair_verdict, tail_cell
from hpcgym.evaluation.leaderboard import replicate, replicated_cell
from hpcgym.evaluation.loaders import AgentLoader
from hpcgym.evaluation.methods import card_method, scheduler_method
from hpcgym.evaluation.report import OBJECTIVES_CAPTION, ratio_cell, size_class_table
from hpcgym.evaluation.runner import evaluate
from hpcgym.evaluation.statistics import verdict_caption
from hpcgym.evaluation.windows import select_windows
from hpcgym.sim.registry import list_heuristics
from hpcgym.sim.schedulers import policy_name
from hpcgym.tasks import card_task

__all__ = ["SCHEDULE_POLICIES", "schedule_boards", "schedule_markdown"]

#: the queue policies of every board (with EASY-SJBF backfilling): the compiled built-ins of
#: the registry (:mod:`hpcgym.sim.registry`), without other spellings (SPF, LPF)
SCHEDULE_POLICIES: tuple[str, ...] = tuple(
    h.name for h in list_heuristics("policy") if h.builtin and h.alias_of is None
)


def _name(policy: str) -> str:
    return policy_name("EASY-SJBF", policy)


def schedule_boards(
    boards: Sequence[dict[str, Any]],
    cards: Sequence[ModelCard],
    *,
    agent_loader: AgentLoader,
    jobs: int | None = None,
) -> list[dict[str, Any]]:
    """One board per trace of the Backfill-v0 ``boards``, on the same test windows.

    :param boards: :func:`hpcgym.evaluation.leaderboard.leaderboard`'s result
    :param cards: every zoo card; those with ``task: schedule`` and a ``test`` section on a
        board's trace and windows are played there
    :param agent_loader: turns a card's model into a policy
    :param jobs: worker processes
    """
    from hpcgym.sim.references import deployable_reference, reference_policy
    from hpcgym.workload import load, trace_spec

    out = []
    for b in boards:
        trace = b["trace"]
        ref = deployable_reference(trace) or _name(reference_policy(trace))
        wl = load(trace_spec(trace))
        ws = select_windows(len(wl), b["length"], starts=b["starts"])
        names = [_name(p) for p in SCHEDULE_POLICIES]
        methods = [scheduler_method(n) for n in ([ref] if ref not in names else []) + names]
        agents = [
            card_method(c)
            for c in cards
            if card_task(c.data).board == "schedule"
            and list(((c.data.get("test") or {}).get(trace) or {}).get("starts") or [])
            == list(b["starts"])
        ]
        res = evaluate(
            wl, methods + agents, ws, jobs=jobs, progress=False, reference=None,
            ratio_reference=ref, agent_loader=agent_loader,
        )  # fmt: skip
        rows = []
        for s in res.summary():
            rows.append({**s, "verdict": fair_verdict(s)})
        rows.sort(key=lambda r: (r["geo_ratio"], r["method"]))
        out.append({**{k: b[k] for k in ("trace", "windows", "length", "seed")}, "rows": rows,
                    "reference": ref, "starts": b["starts"],
                    "machine_size": int(wl.machine_size)})  # fmt: skip
    replicate(out)
    return out


def schedule_markdown(boards: Sequence[dict[str, Any]]) -> list[str]:
    """The Markdown lines of the Schedule-v0 section."""
    out = [
        "## Schedule-v0: the order of the queue",
        "",
        "The thirteen queue policies with EASY-SJBF backfilling, and the zoo agents of the "
        "job-ordering task, on the same test windows as above. The reference of each trace "
        "is its deployable reference: the strongest queue order on the train range under "
        "the starvation guard of Carastan-Santos et al. (a job that has waited three times "
        "the platform's largest run time goes first; `hpcgym.sim.references`). "
        "`max wait` and `p99 bsld` are means over the windows of each window's maximum wait "
        "and 99th-percentile bounded slowdown. `tail` gives the upper ends of the 95% "
        "intervals of their paired ratios against the reference. A method claims lower "
        "slowdowns only when its AVEbsld interval lies below 1 and its tail is not worse "
        "(both upper ends ≤ 1.10; "
        "[schedule_env.md](schedule_env.md#fairness-in-every-comparison)); "
        "with a worse tail it reads *inconclusive (longer tail)*. " + verdict_caption() + " "
        "`second trace` as above. " + OBJECTIVES_CAPTION + " The one-step lookaheads of "
        "this task are reference points; the room above the reference is measured by the "
        "headroom ladder of [research/report.md](research/report.md).",
        "",
    ]
    for b in boards:
        ref = b["reference"]
        out += [
            f"### Schedule-v0 on {b['trace']}",
            "",
            f"{b['windows']} test windows of {b['length']:,} jobs (window seed {b['seed']}), "
            f"reference {ref}.",
            "",
            f"| rank | method | kind | mean AVEbsld | ratio vs {ref} [95% CI] | "
            f"ratio of means vs {ref} [95% CI] | verdict | second trace | max wait (h) | "
            f"p99 bsld | tail (max wait / p99) | util (%) | AWRT (h) | "
            f"AWRT ratio vs {ref} [95% CI] |",
            "|---:|---|---|---:|---|---|---|---|---:|---:|---|---:|---:|---|",
        ]
        for i, r in enumerate(b["rows"], 1):
            kind = "zoo agent" if r["kind"] == "agent" else "heuristic"
            name = f"**{r['method']}**" if r["kind"] == "agent" else r["method"]
            awrt = r.get("mean_awrt")
            out.append(
                f"| {i} | {name} | {kind} | {r['mean_avg_bsld']:.2f} | "
                f"{ratio_cell(r['geo_ratio'], r['ci_low'], r['ci_high'])} | "
                f"{ratio_cell(r.get('mean_ratio'), r.get('mean_low'), r.get('mean_high'))} | "
                f"{r['verdict']} | {replicated_cell(r)} | "
                f"{r['mean_max_wait'] / 3600:.1f} | {r['mean_p99_bsld']:.0f} | {tail_cell(r)} | "
                f"{100 * r['mean_utilization']:.1f} | "
                f"{'—' if awrt is None else f'{awrt / 3600:.2f}'} | "
                f"{ratio_cell(r.get('awrt_ratio'), r.get('awrt_ci_low'), r.get('awrt_ci_high'))} |"
            )
        out += [
            ln.replace(
                "## Waits by job size", f"#### Waits by job size, Schedule-v0 on {b['trace']}"
            )
            for ln in size_class_table(b["rows"], b.get("machine_size"))
        ]
        out += [
            "",
            "Reproduce: `python eval/compare.py --trace "
            f"{b['trace']} --schedulers {' '.join(_name(p) for p in SCHEDULE_POLICIES)} "
            f"--split test --windows {b['windows']} --length {b['length']} --seed {b['seed']} "
            f"--reference {ref}`",
            "",
        ]
    return out
