"""The held-out test of a shipped agent: once per agent, on test windows, with
the paired statistics against every reference heuristic.

:func:`heldout_test` plays the agent of a model card on ``windows`` windows of the
**test** split (drawn with ``seed``, a seed not used during development) next to the
schedulers :data:`HELDOUT_SCHEDULERS` (with the agent's base queue policy), and returns
the card's ``test`` section: per method the mean and median AVEbsld, the AVEbsld of every
window (in the order of ``starts``, so that any other statistic can be recomputed from the
card) and the starts beyond the request-based reservation ("late heads"); per reference of
:data:`HELDOUT_REFERENCES` the paired geometric-mean ratio of AVEbsld, its 95% bootstrap
interval, the wins and the verdict; the agent's reservation violations; and the command
that reproduces the table (``eval/compare.py``). :func:`heldout_markdown` renders it for
the card and ``docs/results.md``. :func:`section_differences` says where a replay of a
recorded test departs from it (``eval/heldout.py --check``: any row of ``docs/results.md``
checked against its card).

A **Schedule-v0** agent (a card with ``task: schedule``) is tested against the thirteen
queue policies of :data:`hpcgym.evaluation.schedule_board.SCHEDULE_POLICIES` with EASY-SJBF
backfilling (and the card's starvation rule), on the same windows. Its paired statistics
are against the evaluated trace's reference heuristic, its own row order and FCFS, and
the section adds the fairness columns of :mod:`hpcgym.evaluation.fairness` against the
reference (``fairness_reference``), so that ``better`` needs a tail that is not worse."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcgym.evaluation.cards import ModelCard
from hpcgym.evaluation.fairness import fair_verdict, fairness, tail_cell
from hpcgym.evaluation.loaders import AgentLoader
from hpcgym.evaluation.methods import card_method, scheduler_method
from hpcgym.evaluation.numerics import numeric_environment
from hpcgym.evaluation.play import HEAD_DELAY_METRICS
from hpcgym.evaluation.report import late_heads_cell
from hpcgym.evaluation.results import EvalResult
from hpcgym.evaluation.runner import evaluate
from hpcgym.evaluation.statistics import paired_comparison, verdict
from hpcgym.evaluation.windows import load_quartiles, load_quartiles_text, select_windows
from hpcgym.sim.schedulers import policy_name
from hpcgym.sim.warmstart import split_warm
from hpcgym.tasks import card_task

__all__ = [
    "HELDOUT_REFERENCES",
    "HELDOUT_SCHEDULERS",
    "WARM_HELDOUT",
    "card_warm",
    "completed_paired",
    "heldout_references",
    "heldout_markdown",
    "heldout_schedulers",
    "heldout_test",
    "schedule_heldout_references",
    "schedule_heldout_schedulers",
    "replay_heldout",
    "recorded_under_name",
    "section_differences",
    "tied_windows",
]

#: Schedulers evaluated beside the agent (with the agent's base queue policy).
HELDOUT_SCHEDULERS: tuple[str, ...] = ("EASY", "EASY-SJBF", "EASY++", "ELOSS")
#: The references of the paired statistics (EASY-SJBF, EASY++ and ELOSS).
HELDOUT_REFERENCES: tuple[str, ...] = ("EASY-SJBF", "EASY++", "ELOSS")


#: The named schedulers of :data:`HELDOUT_SCHEDULERS` whose estimator learns online: a
#: test of an agent with warm-started predictors adds their warm versions.
WARM_HELDOUT: tuple[str, ...] = ("EASY++", "ELOSS")


def card_warm(card: ModelCard | dict[str, Any]) -> str | None:
    """The warm start of the card's online estimator or feature predictor (``"log"``, a
    number of jobs as text), or ``None`` for an agent whose predictors start cold.

    :param card: a model card, or its JSON as a dict
    """
    data = card.data if isinstance(card, ModelCard) else card
    for key in ("estimator", "feature_predictor"):
        warm = split_warm(str(data.get(key) or ""))[1]
        if warm is not None:
            return warm
    return None


def heldout_schedulers(policy: str, warm: str | None = None) -> list[str]:
    """:data:`HELDOUT_SCHEDULERS` with the queue policy ``policy`` (``SJF+EASY-SJBF``...),
    then, for an agent whose predictors are warm-started (``warm``), the warm versions of
    :data:`WARM_HELDOUT` (``ELOSS,warm=log``...): like for like, the heuristics get the
    same history as the agent."""
    names = [*HELDOUT_SCHEDULERS]
    if warm is not None:
        names += [f"{s},warm={warm}" for s in WARM_HELDOUT]
    return [policy_name(s, str(policy)) for s in names]


def heldout_references(policy: str, warm: str | None = None) -> list[str]:
    """The references of the paired statistics: :data:`HELDOUT_REFERENCES` with the queue
    policy, then, for an agent with warm predictors, the warm versions of those of
    :data:`WARM_HELDOUT`."""
    names = [*HELDOUT_REFERENCES]
    if warm is not None:
        names += [f"{s},warm={warm}" for s in WARM_HELDOUT if s in HELDOUT_REFERENCES]
    return [policy_name(s, str(policy)) for s in names]


def _is_schedule(card: ModelCard) -> bool:
    """The agent orders the queue (its test: every queue policy, the fairness tail)."""
    return card_task(card.data).orders_queue


def _starvation_suffix(card: ModelCard) -> str:
    starvation = card.data.get("starvation")
    return "" if starvation in (None, "") else f",starvation={starvation}"


def schedule_heldout_schedulers(card: ModelCard) -> list[str]:
    """The heuristics of a Schedule-v0 agent's test: every queue policy of
    :data:`~hpcgym.evaluation.schedule_board.SCHEDULE_POLICIES` with EASY-SJBF backfilling
    and the card's starvation rule (``SAF+EASY-SJBF``...; FCFS is ``EASY-SJBF``).

    :param card: the agent's model card (``task: schedule``)
    """
    from hpcgym.evaluation.schedule_board import SCHEDULE_POLICIES

    suffix = _starvation_suffix(card)
    return [policy_name("EASY-SJBF", p) + suffix for p in SCHEDULE_POLICIES]


def schedule_heldout_references(card: ModelCard, trace: str) -> list[str]:
    """The references of a Schedule-v0 agent's paired statistics on ``trace``: the
    trace's deployable reference first (the strongest order under the starvation guard,
    :func:`hpcgym.sim.references.deployable_reference`; the fairness columns are against
    it), then the unguarded reference heuristic, the agent's own row order and FCFS, with
    the card's starvation rule (each once).

    :param card: the agent's model card (``task: schedule``)
    :param trace: the evaluated trace
    """
    from hpcgym.sim.references import deployable_reference, reference_policy

    suffix = _starvation_suffix(card)
    deployable = deployable_reference(trace)
    out: list[str] = [] if deployable is None else [deployable]
    for p in (reference_policy(trace), card.policy, "FCFS"):
        name = policy_name("EASY-SJBF", p) + suffix
        if name not in out:
            out.append(name)
    return out


def _plan(card: ModelCard, trace: str) -> tuple[list[str], list[str]]:
    """The heuristics of ``card``'s test on ``trace`` and the references of its paired
    statistics (the first is the command's ``--reference``)."""
    if _is_schedule(card):
        scheds = schedule_heldout_schedulers(card)
        refs = schedule_heldout_references(card, trace)
        return scheds + [r for r in refs if r not in scheds], refs
    scheds = heldout_schedulers(card.policy, card_warm(card))
    refs = [r for r in heldout_references(card.policy, card_warm(card)) if r in scheds]
    return scheds, refs


def _command(card: ModelCard, trace: str, windows: int, length: int, seed: int, scales: str) -> str:
    scheds_list, refs = _plan(card, trace)
    scheds = " ".join(scheds_list)
    ref = refs[0]
    return (
        f"python eval/compare.py --trace {trace} --agents {card.name} --schedulers {scheds} "
        f"--windows {windows} --length {length} --split test --seed {seed} "
        f"--reference {ref}" + (" --scales card" if scales == "card" else "")
    )


def heldout_test(
    card: ModelCard,
    *,
    agent_loader: AgentLoader,
    windows: int = 30,
    length: int = 1024,
    seed: int,
    trace: str | None = None,
    scales: str = "target",
    jobs: int | None = None,
    backend: str = "local",
    progress: bool = False,
) -> dict[str, Any]:
    """Evaluate a shipped agent on held-out test windows (see the module docstring).

    :param card: the agent's model card
    :param agent_loader: turns the card's model into a policy (the loader eval/ passes)
    :param windows: number of test windows (at least 30 for a verdict)
    :param length: jobs per window
    :param seed: window seed (one not used during development; recorded in the result)
    :param trace: another trace than the card's (transfer; its test split is used)
    :param scales: observation scales of the agent: ``target`` (the evaluated trace's) or
        ``card`` (the training trace's)
    :param jobs: worker processes (``None``: all cores)
    :param backend: ``local`` or ``ray``
    :param progress: show a progress bar
    :return: the card's ``test`` section (JSON-able)
    """
    from hpcgym.workload import load, trace_spec

    name = trace or card.trace
    wl = load(trace_spec(name))
    ws = select_windows(
        len(wl),
        length,
        windows,
        "test",
        seed,
        float(card.data.get("train_fraction", 0.7)) if trace is None else 0.7,
    )
    scheds, refs = _plan(card, name)
    methods = [scheduler_method(s) for s in scheds]
    methods.append(card_method(card, scales=scales))
    res = evaluate(
        wl,
        methods,
        ws,
        jobs=jobs,
        progress=progress,
        reference=None,
        ratio_reference=refs[0] if _is_schedule(card) else None,
        agent_loader=agent_loader,
        backend=backend,
    )
    section = _section(card, res, name, windows, length, seed, scales, refs)
    return {**section, "offered_load": load_quartiles(wl, ws)}


def _section(
    card: ModelCard,
    res: EvalResult,
    trace: str,
    windows: int,
    length: int,
    seed: int,
    scales: str,
    refs: Sequence[str],
) -> dict[str, Any]:
    per = res.per_window("avg_bsld")
    methods: dict[str, Any] = {}
    for m in res.methods:
        b = np.asarray(per[m.label], dtype=np.float64)
        methods[m.label] = {
            "kind": m.kind,
            "mean_avg_bsld": float(b.mean()),
            "median_avg_bsld": float(np.median(b)),
            "per_window": [float(v) for v in b],
            **res.head_delays(m.label),
        }
    agent_rows = [r for r in res.rows if r["method"] == card.name]
    paired = {}
    for ref in refs:
        pc = paired_comparison(per[card.name], per[ref])
        paired[ref] = {**pc.to_dict(), "verdict": pc.verdict}
    extra: dict[str, Any] = {}
    if _is_schedule(card):  # the tail against the reference (the first of refs)
        fair = {m.label: fairness(res, m.label) for m in res.methods}
        for label, f in fair.items():
            methods[label].update(
                mean_max_wait=f["mean_max_wait"], mean_p99_bsld=f["mean_p99_bsld"]
            )
        mine = fair[card.name]
        main = paired[refs[0]]
        main.update({k: mine[k] for k in ("tail_max_wait", "tail_p99_bsld", "tail")})
        main["verdict"] = fair_verdict(main)
        extra["fairness_reference"] = refs[0]
    return {
        "split": "test",
        "trace": trace,
        "transfer": trace != card.trace,
        "scales": scales,
        "windows": windows,
        "length": length,
        "seed": seed,
        "starts": list(res.windows.starts),
        "evaluated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": _command(card, trace, windows, length, seed, scales),
        "numerics": numeric_environment(),
        "methods": methods,
        "agent": {
            "label": card.name,
            "violations": int(sum(int(r["violations"] or 0) for r in agent_rows)),
            "decisions": int(sum(int(r["decisions"] or 0) for r in agent_rows)),
            **_departures(agent_rows),
        },
        "paired": paired,
        **extra,
    }


def completed_paired(section: dict[str, Any], agent: str | None = None) -> dict[str, Any]:
    """The ``paired`` cells of a ``test`` section, each completed with the statistics a
    section recorded before they existed (the ratio of means and its interval, the
    equivalence interval and margin: :func:`~.statistics.paired_comparison`), recomputed
    from the per-window values the section holds (the same seeded resamples: the recorded
    ratio and interval come out the same). Cells without per-window values stay as they
    are (their verdict then reads the 95% interval for the equivalence test).

    :param section: a card's ``test`` section
    :param agent: the agent's label in ``section["methods"]`` (when it is not there: the
        section's ``agent.label``, else its first method that is an agent)
    """
    methods = section.get("methods") or {}
    agents = [k for k, m in methods.items() if m.get("kind") == "agent"]
    for name in (agent, (section.get("agent") or {}).get("label"), *agents[:1]):
        if name in methods:
            agent = name
            break
    else:
        agent = None
    mine = (methods.get(agent) or {}).get("per_window") if agent else None
    out: dict[str, Any] = {}
    for ref, cell in (section.get("paired") or {}).items():
        theirs = (methods.get(ref) or {}).get("per_window")
        if cell.get("eq_low") is None and mine and theirs and len(mine) == len(theirs):
            pc = paired_comparison(mine, theirs)
            cell = {**pc.to_dict(), **cell, **{k: v for k, v in pc.to_dict().items()
                                               if cell.get(k) is None}}  # fmt: skip
        out[ref] = cell
    return out


def _departures(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """``{"departures": n}`` for a gated agent's rows (:mod:`.gating`), else ``{}``."""
    if not rows or any(r.get("departures") is None for r in rows):
        return {}
    return {"departures": int(sum(int(r["departures"]) for r in rows))}


def heldout_markdown(section: dict[str, Any], agent: str) -> list[str]:
    """The Markdown lines of a card's ``test`` section (a table per method, then the paired
    statistics of the agent against each reference).

    :param section: the section of :func:`heldout_test`
    :param agent: the agent's label in it
    """
    fair = section.get("fairness_reference")
    lines = [
        f"Held-out test on **{section['trace']}**"
        + (" (transfer: never trained on)" if section.get("transfer") else "")
        + f": {section['windows']} windows of {section['length']} jobs of the test split, "
        f"window seed {section['seed']}"
        + (f", {load}" if (load := load_quartiles_text(section.get("offered_load"))) else "")
        + f" (evaluated {section.get('evaluated', '?')}"
        + (
            f", BLAS kernel {core}"
            if (core := (section.get("numerics") or {}).get("blas_core"))
            else ""
        )
        + "). "
        f"Reproduce: `{section['command']}`",
        "",
        "| method | mean AVEbsld | median | late heads (mean delay) |"
        + (" max wait (h) | p99 bsld |" if fair else ""),
        "|---|---:|---:|---:|" + ("---:|---:|" if fair else ""),
    ]
    for label, m in section["methods"].items():
        name = f"**{label}** (this agent)" if label == agent else label
        lines.append(
            f"| {name} | {m['mean_avg_bsld']:.2f} | {m['median_avg_bsld']:.2f} | "
            f"{late_heads_cell(m.get('head_delayed'), m.get('head_delay'))} |"
            + (_tail_cells(m) if fair else "")
        )
    a = section.get("agent") or {}
    lines += [
        "",
        f"Reservation violations of the agent: {a.get('violations', '?')} "
        f"in {a.get('decisions', '?')} decisions"
        + (
            f"; its model's action replaced the gate's fallback at {a['departures']} of them."
            if a.get("departures") is not None
            else "."
        ),
        "",
        "| vs | paired geo-mean ratio | 95% bootstrap interval | ratio of means [95%] | wins "
        "| verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for ref, p in completed_paired(section, agent).items():
        rom = (
            "—"
            if p.get("mean_ratio") is None
            else f"{p['mean_ratio']:.3f} [{p['mean_low']:.3f}, {p['mean_high']:.3f}]"
        )
        word = verdict(p) or p.get("verdict")
        if ref == fair:
            word = fair_verdict(p)
        lines.append(
            f"| {ref} | {p['geo_ratio']:.3f} | [{p['ci_low']:.3f}, {p['ci_high']:.3f}] | "
            f"{rom} | {p['wins']}/{p['windows']} | {word} |"
        )
    if fair and fair in section["paired"]:
        lines += [
            "",
            f"Tail against {fair} (upper ends of the 95% intervals of the paired ratios of the "
            "maximum wait and of the p99 bounded slowdown; not worse up to 1.10): "
            f"{tail_cell(section['paired'][fair])}. The verdict against it is *better* only "
            "with a tail that is not worse.",
        ]
    ties = tied_windows(section)
    if ties:
        lines += [
            "",
            f"In {ties} of the {section['windows']} windows every method gives the same "
            "AVEbsld (no job waited long enough for the backfilling choice to matter); "
            "each counts as a ratio of 1, so the ratios above are pulled toward 1.",
        ]
    return lines


def _tail_cells(m: dict[str, Any]) -> str:
    """The max wait (hours) and p99 bounded slowdown cells of a method of a section."""
    if m.get("mean_max_wait") is None:
        return " — | — |"
    return f" {m['mean_max_wait'] / 3600:.1f} | {m['mean_p99_bsld']:.0f} |"


def tied_windows(section: dict[str, Any]) -> int | None:
    """The windows of a ``test`` section where every method's AVEbsld is the same
    (relative tolerance 1e-9), or None when the section has no per-window values (tests
    written before they were stored).

    :param section: the section of :func:`heldout_test`
    """
    per = [m.get("per_window") for m in section["methods"].values()]
    if not per or any(v is None for v in per):
        return None
    x = np.asarray(per, dtype=np.float64)  # (methods, windows)
    return int(np.isclose(x.min(axis=0), x.max(axis=0), rtol=1e-9, atol=0.0).sum())


def replay_heldout(
    card: ModelCard,
    recorded: dict[str, Any],
    *,
    agent_loader: AgentLoader,
    jobs: int | None = None,
    backend: str = "local",
    progress: bool = False,
) -> dict[str, Any]:
    """Play a recorded ``test`` section of ``card`` again: :func:`heldout_test` with the
    section's own trace, windows, length, window seed and scales. Compare the result with
    :func:`section_differences`.

    :param card: the agent's model card
    :param recorded: one of the card's ``test`` sections
    :param agent_loader: turns the card's model into a policy (the loader eval/ passes)
    :param jobs: worker processes (``None``: all cores)
    :param backend: ``local`` or ``ray``
    :param progress: show a progress bar
    :return: the replayed section
    """
    return heldout_test(
        card,
        agent_loader=agent_loader,
        windows=int(recorded["windows"]),
        length=int(recorded["length"]),
        seed=int(recorded["seed"]),
        trace=str(recorded["trace"]) if recorded.get("transfer") else None,
        scales=str(recorded.get("scales", "target")),
        jobs=jobs,
        backend=backend,
        progress=progress,
    )


#: Keys of a ``test`` section that a replay is not expected to repeat.
_NOT_REPLAYED = frozenset({"evaluated", "command", "numerics"})


def recorded_under_name(recorded: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``recorded`` with the agent's label ``old`` read as ``new``: a card renamed after its
    test was recorded (a zoo agent keeps the name it was trained as in ``trained_as``)
    replays under its new name; the values are compared unchanged.

    :param recorded: a card's ``test`` section
    :param old: the label the section was recorded with (the card's ``trained_as``)
    :param new: the card's name now
    """
    if not old or old == new or old not in recorded.get("methods", {}):
        return recorded
    out = dict(recorded)
    out["methods"] = {(new if k == old else k): v for k, v in recorded["methods"].items()}
    agent = recorded.get("agent")
    if isinstance(agent, dict) and agent.get("label") == old:
        out["agent"] = {**agent, "label": new}
    return out


def section_differences(
    recorded: dict[str, Any], replayed: dict[str, Any], *, rtol: float = 1e-9
) -> list[str]:
    """Where ``replayed`` (a fresh :func:`heldout_test` with the recorded trace, windows,
    length, seed and scales) departs from the ``recorded`` section of a card: one line per
    differing value, ``path: recorded -> replayed``; empty when the test reproduces.

    Every value the recorded section holds is compared (floats to the relative tolerance
    ``rtol``, everything else exactly) except the time of evaluation, the command text and
    the numerical environment (:mod:`.numerics`: a replay on another CPU's BLAS kernel
    may depart in the last digits, which :func:`.numerics.pinning_hint` explains);
    values a replay adds that older sections do not hold (per-window values, offered load)
    are not differences, and neither are the verdict words (read from the compared
    ratios and intervals by the rule of :mod:`.statistics` in force: a test recorded when
    an interval containing 1 read *on par* reads *inconclusive* today unless the
    equivalence test holds), nor late heads a replay measures where the recorded
    section has none (``null``: tests recorded before the engine kept, for queue policies
    other than FCFS, when each job became the reserved head).

    :param recorded: the card's ``test`` section for one trace
    :param replayed: the section of the replay
    :param rtol: relative tolerance of float comparisons
    """
    out: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict):
            if not isinstance(b, dict):
                out.append(f"{path}: {_short(a)} -> {_short(b)}")
                return
            for k, v in a.items():
                if (path == "" and k in _NOT_REPLAYED) or k == "verdict":
                    continue
                sub = f"{path}.{k}" if path else str(k)
                if k not in b:
                    out.append(f"{sub}: {_short(v)} -> (missing)")
                else:
                    walk(v, b[k], sub)
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                out.append(f"{path}: {_short(a)} -> {_short(b)}")
                return
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        elif a is None and b is not None and path.rpartition(".")[2] in HEAD_DELAY_METRICS:
            return  # measured now, not recorded then
        elif isinstance(a, float) or isinstance(b, float):
            same = (
                isinstance(a, int | float)
                and isinstance(b, int | float)
                and not isinstance(a, bool)
                and not isinstance(b, bool)
                and (
                    math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=0.0)
                    or (math.isnan(float(a)) and math.isnan(float(b)))
                )
            )
            if not same:
                out.append(f"{path}: {_short(a)} -> {_short(b)}")
        elif a != b:
            out.append(f"{path}: {_short(a)} -> {_short(b)}")

    walk(recorded, replayed, "")
    return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
