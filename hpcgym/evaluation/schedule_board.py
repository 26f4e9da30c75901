"""The Schedule-v0 section of docs/results.md: the queue orders on the held-out test windows.

For every trace of the Backfill-v0 leaderboard, :func:`schedule_boards` runs the thirteen
built-in queue policies with EASY-SJBF backfilling, and every zoo agent of the job-ordering
task (cards with ``task: schedule``) tested on that trace, on the same test windows. Each
row is compared with the trace's deployable reference (the strongest order under the
starvation guard, :func:`hpcgym.sim.references.deployable_reference`; its own row leads the
board) by the paired geometric-mean ratio of
AVEbsld with its 95% interval. The fairness columns are those of
:mod:`hpcgym.evaluation.fairness`: maximum wait, p99 bounded slowdown and the tail test. A
row is *better* only with an interval below 1 **and** a tail that is not worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hpcgym.evaluation.cards import ModelCard
from hpcgym.evaluation.fairness import fair_verdict
from hpcgym.evaluation.loaders import AgentLoader
from hpcgym.evaluation.methods import card_method, scheduler_method
from hpcgym.evaluation.runner import evaluate
from hpcgym.evaluation.windows import select_windows
from hpcgym.sim.schedulers import policy_name

__all__ = ["SCHEDULE_POLICIES", "schedule_boards", "schedule_markdown"]

#: the queue policies of every board (with EASY-SJBF backfilling)
SCHEDULE_POLICIES: tuple[str, ...] = (
    "FCFS", "SJF", "SQF", "SAF", "LJF", "LQF", "LAF", "WFP3", "UNICEF", "F1", "F2", "F3", "F4",
)  # fmt: skip


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
            if c.data.get("task") == "schedule"
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
                    "reference": ref, "starts": b["starts"]})  # fmt: skip
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
        "intervals of their paired ratios against the reference. A method is *better* only "
        "when its AVEbsld interval lies below 1 and its tail is not worse (both upper ends "
        "≤ 1.10; [schedule_env.md](schedule_env.md#fairness-in-every-comparison)). The "
        "one-step lookahead reference points of this task are in "
        "[research/schedule.md](research/schedule.md).",
        "",
    ]
    for b in boards:
        out += [
            f"### Schedule-v0 on {b['trace']}",
            "",
            f"{b['windows']} test windows of {b['length']:,} jobs (window seed {b['seed']}), "
            f"reference {b['reference']}.",
            "",
            f"| rank | method | kind | mean AVEbsld | ratio vs {b['reference']} [95% CI] | "
            "verdict | max wait (h) | p99 bsld | tail (max wait / p99) |",
            "|---:|---|---|---:|---|---|---:|---:|---|",
        ]
        for i, r in enumerate(b["rows"], 1):
            kind = "zoo agent" if r["kind"] == "agent" else "heuristic"
            name = f"**{r['method']}**" if r["kind"] == "agent" else r["method"]
            tail = (
                "—"
                if r["tail"] is None
                else f"{r['tail_max_wait']:.2f} / {r['tail_p99_bsld']:.2f}: {r['tail']}"
            )
            out.append(
                f"| {i} | {name} | {kind} | {r['mean_avg_bsld']:.2f} | {r['geo_ratio']:.3f} "
                f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['verdict']} | "
                f"{r['mean_max_wait'] / 3600:.1f} | {r['mean_p99_bsld']:.0f} | {tail} |"
            )
        out += [
            "",
            "Reproduce: `python eval/compare.py --trace "
            f"{b['trace']} --schedulers {' '.join(_name(p) for p in SCHEDULE_POLICIES)} "
            f"--split test --windows {b['windows']} --length {b['length']} --seed {b['seed']} "
            f"--reference {b['reference']}`",
            "",
        ]
    return out
