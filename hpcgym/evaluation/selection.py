"""Checkpoint selection on validation windows (select and stop on validation,
report on test once).

Training's own evaluation picks ``best_model.zip`` on a few short validation windows
(10 x 256 jobs by default), which is noisy: a "best" checkpoint is often just a lucky one.
:func:`select_checkpoint` re-evaluates every checkpoint a run kept
(:func:`checkpoint_candidates`) on more and longer windows of the **validation** split
(never the test split), against the run's own reference scheduler, and picks the one with
the lowest paired geometric-mean ratio of AVEbsld. The result (every candidate's ratio,
interval and wins, the windows, the chosen model and the command that reproduces it) is
written to ``<run>/selection.json``; ``eval/card.py RUN --model selected`` ships the chosen
model and copies the selection into the model card.

The lowest of many noisy ratios is biased low (the winner's curse: part of what made it
lowest is luck on these windows). So the selection also records ``holdout``
(:func:`hpcgym.evaluation.statistics.choice_holdout`): the same choice made on a random
half of the windows and scored on the other half, over many splits. It is what the choice
can be expected to score on fresh windows of the validation range, and how often a half
makes the same choice; the per-window AVEbsld of every candidate (``avg_bsld``) and of the
reference (``reference_avg_bsld``) are kept so that it can be recomputed (``None`` on fewer
than 4 windows, too few to split).

For a ``train/ppo.py --seeds`` run (the folder holding ``seeds.json`` and its ``seed-<s>``
run folders), the checkpoints of **every seed** are compared on the same windows and the
choice is made across seeds (``<root>/selection.json``; ``eval/card.py ROOT --model
selected`` ships it). This is the recipe against a lucky or unlucky seed: train several,
choose on validation only, test the one choice once.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hpcgym.evaluation.cards import (
    SEEDS_FILE,
    SELECTION_FILE,
    ModelCard,
    canonical_trace,
    load_model_card,
    zip_timesteps,
)
from hpcgym.evaluation.gating import GATE_FALLBACKS, GATE_KEY, default_fallback, read_gate
from hpcgym.evaluation.loaders import AgentLoader
from hpcgym.evaluation.methods import agent_method, scheduler_method
from hpcgym.evaluation.runner import evaluate
from hpcgym.evaluation.statistics import HOLDOUT_MIN_WINDOWS, choice_holdout
from hpcgym.evaluation.windows import load_quartiles, select_windows
from hpcgym.tasks import card_task
from hpcgym.workload.sequences import VALIDATION_FRACTION

__all__ = [
    "DEFAULT_TAUS",
    "SELECTION_FILE",
    "checkpoint_candidates",
    "gated_card",
    "load_selection",
    "run_reference",
    "runs_and_config",
    "seed_runs",
    "select_checkpoint",
    "select_gate",
    "thin_candidates",
]

#: Config keys the seeds of one selection must share (same windows, same reference).
_SHARED_KEYS = ("trace", "train_fraction", "validation_fraction", "policy", "reference")

#: Gate thresholds :func:`select_gate` compares by default (0: the model's own choice at
#: every decision point; the fallback alone is the reference scheduler's row, ratio 1).
DEFAULT_TAUS: tuple[float, ...] = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)

#: Candidate folders of a run (``kept/``: copies a user keeps beyond ``keep_checkpoints``).
_CANDIDATE_DIRS = ("checkpoints", "kept")


def checkpoint_candidates(run: str | os.PathLike[str]) -> list[Path]:
    """The models of a ``train/ppo.py`` run folder: ``best_model.zip``,
    ``final_model.zip`` and every ``checkpoints/*.zip`` and ``kept/*.zip``; one per
    training step count (the first found of equal step counts), in step order.

    :param run: the run folder
    :raises FileNotFoundError: not a run folder, or no model in it
    """
    rdir = Path(run)
    if not (rdir / "config.json").is_file():
        raise FileNotFoundError(f"{rdir} is not a train/ppo.py run folder (no config.json)")
    files = [rdir / "best_model.zip", rdir / "final_model.zip"]
    for sub in _CANDIDATE_DIRS:
        files += sorted((rdir / sub).glob("*.zip"))
    seen: dict[int | str, Path] = {}
    for f in files:
        if not f.is_file():
            continue
        steps = zip_timesteps(f)
        seen.setdefault(steps if steps is not None else str(f), f)
    if not seen:
        raise FileNotFoundError(f"no model .zip in the run {rdir}")
    return sorted(seen.values(), key=lambda f: (zip_timesteps(f) or 0, f.name))


def thin_candidates(models: Sequence[Path], limit: int | None) -> list[Path]:
    """At most ``limit`` of ``models`` (in step order, as :func:`checkpoint_candidates`
    gives them), evenly spaced over their order; ``best_model.zip``, ``final_model.zip``
    and the last model always stay. ``None``: all.

    :param models: the candidates, in step order
    :param limit: how many to keep (at least 1)
    :raises ValueError: ``limit`` below 1
    """
    if limit is None or len(models) <= limit:
        return list(models)
    if limit < 1:
        raise ValueError(f"max_candidates must be at least 1, got {limit}")
    fixed = {i for i, m in enumerate(models) if m.name in ("best_model.zip", "final_model.zip")}
    fixed.add(len(models) - 1)
    free = max(limit - len(fixed), 0)
    spaced = {round(i * (len(models) - 1) / max(free, 1)) for i in range(free)} if free else set()
    return [models[i] for i in sorted(fixed | spaced)]


def seed_runs(root: str | os.PathLike[str]) -> list[Path]:
    """The run folders (``seed-<s>`` with a ``config.json``) of a ``--seeds`` run, in seed
    order; empty when ``root`` holds no ``seeds.json``.

    :param root: a folder
    """
    rdir = Path(root)
    if not (rdir / SEEDS_FILE).is_file():
        return []

    def seed(d: Path) -> int:
        tail = d.name.removeprefix("seed-")
        return int(tail) if tail.lstrip("-").isdigit() else 0

    runs = [d for d in rdir.glob("seed-*") if (d / "config.json").is_file()]
    return sorted(runs, key=lambda d: (seed(d), d.name))


def runs_and_config(rdir: Path) -> tuple[list[Path], dict[str, Any]]:
    """The run folders a selection in ``rdir`` compares and their shared config.

    :raises FileNotFoundError: ``rdir`` is neither a run nor a seeds run with a seed in it
    :raises ValueError: the seeds differ in a key that decides the windows or the reference
    """
    if (rdir / "config.json").is_file():
        return [rdir], json.loads((rdir / "config.json").read_text(encoding="utf-8"))
    runs = seed_runs(rdir)
    if not runs:
        what = "a seeds run without a started seed"
        if not (rdir / SEEDS_FILE).is_file():
            what = "not a train/ppo.py run folder (no config.json) nor a seeds run (no seeds.json)"
        raise FileNotFoundError(f"{rdir}: {what}")
    cfgs = [json.loads((r / "config.json").read_text(encoding="utf-8")) for r in runs]
    for key in _SHARED_KEYS:
        values = {json.dumps(c.get(key)) for c in cfgs}
        if len(values) > 1:
            raise ValueError(
                f"{rdir}: its seeds differ in {key!r} ({', '.join(sorted(values))}): "
                "they cannot be compared on the same windows; select in each seed's folder"
            )
    return runs, cfgs[0]


def run_reference(config: dict[str, Any]) -> str:
    """The scheduler a run's reward was relative to, with the run's queue policy (as the
    env resolves it: ``EASY-SJBF`` under ``SJF`` is ``SJF+EASY-SJBF``; for a Schedule-v0
    run the policy is the env's row order, by default the trace's reference heuristic,
    :func:`hpcgym.sim.references.schedule_order`).

    :param config: the run's ``config.json``
    :raises ValueError: the run had no reference (``--reference none``)
    """
    ref = config.get("reference", config.get("normalizer", "EASY-SJBF"))
    if ref is None or str(ref).lower() == "none":
        raise ValueError("the run has no reference scheduler: give one")
    policy = str(config.get("policy", "FCFS")).upper()
    trace = config.get("trace")
    task = card_task(config)
    policy = task.queue_policy(policy, None if trace is None else str(trace))
    ref = str(ref)
    if ref[:4].upper() == "ENV+":  # the env's own queue (and Schedule-v0's starvation guard)
        from hpcgym.envs.reward import resolve_reference

        starvation = task.reference_starvation(None if trace is None else str(trace))
        spec = resolve_reference(ref, policy, starvation)
        assert spec is not None
        return spec.name
    # a plain name of a run before ENV+ existed: it was played with the run's policy
    return ref if policy == "FCFS" or "+" in ref or "=" in ref else f"{policy}+{ref}"


def _label(path: Path, rdir: Path) -> str:
    return str(path.relative_to(rdir)).replace(os.sep, "/")


def select_checkpoint(
    run: str | os.PathLike[str],
    *,
    agent_loader: AgentLoader,
    windows: int = 30,
    length: int = 1024,
    seed: int = 7,
    reference: str | None = None,
    candidates: Sequence[str | os.PathLike[str]] | None = None,
    max_candidates: int | None = None,
    workload: str | None = None,
    transfer: Sequence[str] = (),
    jobs: int | None = None,
    progress: bool = False,
    write: bool = True,
) -> dict[str, Any]:
    """Evaluate a run's checkpoints on validation windows and choose one.

    :param run: the ``train/ppo.py`` run folder, or a ``--seeds`` run's folder (the
        checkpoints of all its seeds compete; the result also lists each seed's best as
        ``seeds``)
    :param agent_loader: turns a model into a policy (the loader ``eval/`` passes)
    :param windows: validation windows (30 or more for an interval worth reading)
    :param length: jobs per window (a window longer than the validation split is refused)
    :param seed: window seed (a development seed: validation is for choosing)
    :param reference: scheduler of the paired ratio (default: the run's reward reference)
    :param candidates: the models to compare (default: :func:`checkpoint_candidates`)
    :param max_candidates: at most this many candidates per run (seed), evenly spaced in
        steps (:func:`thin_candidates`; ``best_model.zip`` and ``final_model.zip`` always
        stay): for a run that kept every checkpoint (``--keep-checkpoints 0``)
    :param workload: choose on windows of this **generated** workload
        (``synthetic:KEY=VALUE,...``, :func:`hpcgym.workload.synthetic_params`) instead of
        the run's validation split, e.g. more and independent windows of the model a
        synthetic trace was drawn from (Lublin-1 and Lublin-2, docs/lublin.md). Windows
        are drawn from the whole generated workload, which shares no job with any trace's
        test split; a real trace is refused (its other splits would overlap the test).
    :param transfer: other traces (never trained on) whose **validation** splits also
        score every candidate, with ``windows`` windows of ``length`` jobs each (the same
        seed) and the same reference: the choice is then the lowest geometric mean of a
        candidate's ratios over the run's own validation windows and each transfer
        trace's, one weight per trace (``score``; each candidate's ratios per trace are
        in ``transfer``). For an agent meant to run on other machines. Name traces other
        than those its transfer will be reported on, or that report was chosen on them.
        ``holdout`` is then ``None`` (it estimates a choice made on one range).
    :param jobs: worker processes (``None``: all cores)
    :param progress: show a progress bar
    :param write: write ``<run>/selection.json``
    :raises ValueError: the seeds of a seeds run differ in their trace, split or reference;
        ``workload`` is not a generated workload; ``transfer`` with ``workload``, or
        naming the run's own trace or a trace twice
    :return: the selection (JSON-able): ``chosen`` (path), ``candidates`` (per model its
        steps, mean AVEbsld, paired statistics and per-window AVEbsld), ``holdout``
        (:func:`~hpcgym.evaluation.statistics.choice_holdout`), the windows and ``command``
    """
    generated = _generated(workload)
    rdir = Path(run).resolve()
    runs, cfg = runs_and_config(rdir)
    if candidates:
        models = [Path(c).resolve() for c in candidates]
    else:
        models = [
            m for r in runs for m in thin_candidates(checkpoint_candidates(r), max_candidates)
        ]
    ref = reference or run_reference(cfg)
    trace = cfg.get("trace", "synthetic") if generated is None else generated
    others = _transfer_traces(transfer, str(trace), generated)
    wl, ws, split = _choice_windows(trace, generated, cfg, length, windows, seed)
    methods = [scheduler_method(ref)]
    labels: dict[str, Path] = {}
    # a run still training prunes its checkpoints/: evaluate snapshots (hard links) of the
    # models, in a folder of their run (an agent's env options come from its run's config)
    owner = {m: next((r for r in runs if m.is_relative_to(r)), runs[0]) for m in models}
    with ExitStack() as stack:
        snaps: dict[Path, Path] = {}
        for r in runs:
            mine = [m for m in models if owner[m] == r]
            if mine:
                tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix=".selecting-", dir=r))
                snaps.update(_snapshot(mine, Path(tmp)))
        if not snaps:
            raise FileNotFoundError(f"none of the models is left: {', '.join(map(str, models))}")
        for m, snap in snaps.items():
            label = _label(m, rdir) if m.is_relative_to(rdir) else str(m)
            labels[label] = m
            methods.append(agent_method(str(snap), label=label))
        res = _against_first(wl, methods, ws, agent_loader, jobs, progress)
        per = res.per_window("avg_bsld")
        rows = []
        for label, path in labels.items():
            rows.append(
                {
                    "model": label,
                    "steps": zip_timesteps(snaps[path]),
                    "mean_avg_bsld": float(sum(per[label]) / len(per[label])),
                    **res.paired(label),
                    "avg_bsld": [float(v) for v in per[label]],
                }
            )
        where_else = _score_transfer(
            rows, others, methods, (length, windows, seed), ref, agent_loader, jobs, progress
        )
        chosen = min(rows, key=lambda r: (r.get("score", r["geo_ratio"]), r["steps"] or 0))
        if not labels[chosen["model"]].is_file():  # pruned meanwhile: keep the snapshot
            kept = owner[labels[chosen["model"]]] / "kept" / labels[chosen["model"]].name
            kept.parent.mkdir(exist_ok=True)
            shutil.copy2(snaps[labels[chosen["model"]]], kept)
            labels[chosen["model"]] = kept
    out = {
        "run": str(rdir),
        **_where(wl, ws, split, str(trace), generated, ref, per[methods[0].label], seed),
        "chosen": chosen["model"],
        "chosen_path": str(labels[chosen["model"]]),
        "candidates": rows,
        "holdout": (
            choice_holdout({r["model"]: r["avg_bsld"] for r in rows}, per[methods[0].label])
            if len(ws.starts) >= HOLDOUT_MIN_WINDOWS and not others
            else None
        ),
        **({"transfer": where_else} if others else {}),
        **({"seeds": _best_per_seed(rows, labels, owner, rdir)} if runs != [rdir] else {}),
        "command": (
            f"python eval/select_checkpoint.py {rdir} --windows {windows} "
            f"--length {length} --seed {seed}"
            + (f" --reference {reference}" if reference else "")
            + (f" --max-candidates {max_candidates}" if max_candidates else "")
            + (f" --workload {generated}" if generated is not None else "")
            + (" --transfer " + " ".join(others) if others else "")
            + (" --models " + " ".join(labels) if candidates else "")
        ),
    }
    if write:
        (rdir / SELECTION_FILE).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


def _transfer_traces(transfer: Sequence[str], own: str, generated: str | None) -> list[str]:
    """``transfer`` checked: none named twice, not the run's own trace, not beside a
    generated ``workload`` (:func:`select_checkpoint`)."""
    names = [canonical_trace(t) for t in transfer]
    if not names:
        return []
    if generated is not None:
        raise ValueError(
            "transfer traces are for a choice on a real trace's validation split, "
            "not with a generated workload"
        )
    if canonical_trace(own) in names:
        raise ValueError(
            f"transfer: {own} is the run's own trace (its validation split is always used)"
        )
    if len(set(names)) < len(names):
        raise ValueError(f"transfer: a trace is named twice in {', '.join(transfer)}")
    return names


def _score_transfer(
    rows: list[dict[str, Any]],
    traces: Sequence[str],
    methods: Sequence[Any],
    shape: tuple[int, int, int],
    ref: str,
    agent_loader: AgentLoader,
    jobs: int | None,
    progress: bool,
) -> list[dict[str, Any]]:
    """Play ``methods`` (the reference first) on each transfer trace's validation windows
    (``shape``: length, count and seed of the windows);
    add to every row its paired statistics there (``transfer``: trace -> ratio, interval,
    wins) and ``score``, the geometric mean of its ratios on its own and each transfer
    trace; return where the windows were (one :func:`_where` record per trace)."""
    from hpcgym.workload import load

    length, windows, seed = shape
    out = []
    for t in traces:
        wl = load(t)
        ws = select_windows(len(wl), length, windows, "validation", seed, 0.7)
        res = _against_first(wl, methods, ws, agent_loader, jobs, progress)
        per = res.per_window("avg_bsld")
        out.append(_where(wl, ws, "validation", t, None, ref, per[methods[0].label], seed))
        for r in rows:
            p = res.paired(r["model"])
            keys = ("geo_ratio", "ci_low", "ci_high", "wins")
            r.setdefault("transfer", {})[t] = {k: p[k] for k in keys}
    for r in rows:
        logs = [math.log(r["geo_ratio"])]
        logs += [math.log(v["geo_ratio"]) for v in (r.get("transfer") or {}).values()]
        if traces:
            r["score"] = math.exp(sum(logs) / len(logs))
    return out


def _where(
    wl: Any,
    ws: Any,
    split: str,
    trace: str,
    generated: str | None,
    ref: str,
    ref_bsld: Sequence[float],
    seed: int,
) -> dict[str, Any]:
    """The record of the windows a choice was made on (a selection's common keys)."""
    return {
        "split": split,
        "trace": trace,
        "generated": generated is not None,
        "windows": len(ws.starts),
        "length": ws.length,
        "seed": seed,
        "starts": list(ws.starts),
        "reference": ref,
        "reference_mean_avg_bsld": float(sum(ref_bsld) / len(ws.starts)),
        "reference_avg_bsld": [float(v) for v in ref_bsld],
        "offered_load": load_quartiles(wl, ws),
    }


def _choice_windows(
    trace: str, generated: str | None, data: dict[str, Any], length: int, windows: int, seed: int
) -> tuple[Any, Any, str]:
    """The workload, windows and split a choice is made on: windows of the validation split
    of ``trace`` (with the split fractions of ``data``: a run's config or a card), or of the
    whole ``generated`` workload (:func:`_generated`; ``trace`` is then its name)."""
    from hpcgym.workload import load

    split = "validation" if generated is None else "all"
    wl = load(trace)  # a registered name, an SWF path, "synthetic" or "synthetic:..."
    ws = select_windows(
        len(wl),
        length,
        windows,
        split,
        seed,
        float(data.get("train_fraction", 0.7)),
        validation_fraction=float(data.get("validation_fraction", VALIDATION_FRACTION)),
    )
    return wl, ws, split


def _against_first(
    wl: Any,
    methods: Sequence[Any],
    ws: Any,
    agent_loader: AgentLoader,
    jobs: int | None,
    progress: bool,
) -> Any:
    """Evaluate ``methods`` on the windows, paired ratios against the first (the reference)."""
    return evaluate(
        wl,
        list(methods),
        ws,
        jobs=jobs,
        progress=progress,
        reference=None,
        agent_loader=agent_loader,
        ratio_reference=methods[0].label,
    )


def _generated(workload: str | None) -> str | None:
    """``workload`` checked as the name of a generated workload (``None`` stays ``None``).

    :raises ValueError: the name of a real trace or a path (the message says why)
    """
    from hpcgym.workload.traces import SYNTHETIC_PREFIX, synthetic_params, trace_spec

    if workload is None:
        return None
    if trace_spec(workload) is None:
        return "synthetic"
    if synthetic_params(workload) is None:
        raise ValueError(
            f"workload {workload!r}: a checkpoint is chosen on a real trace's validation "
            "split only (any other window of it could overlap a test split); give a "
            f"generated workload, 'synthetic' or '{SYNTHETIC_PREFIX}KEY=VALUE,...' "
            f"(e.g. '{SYNTHETIC_PREFIX}job_types=false,request_model=none,load=1.06,"
            "seed=9,n_jobs=60000' for Lublin-1's model, docs/lublin.md), or none"
        )
    return str(workload)


def _snapshot(models: Sequence[Path], folder: Path) -> dict[Path, Path]:
    """Hard links (or copies) of ``models`` in ``folder``, by model; a model that is gone
    already (pruned by its run) is left out."""
    out: dict[Path, Path] = {}
    for i, m in enumerate(models):
        snap = folder / f"{i}-{m.name}"
        try:
            try:
                os.link(m, snap)
            except OSError:
                if not m.is_file():
                    raise
                shutil.copy2(m, snap)
        except FileNotFoundError:
            continue
        out[m] = snap
    return out


def _best_per_seed(
    rows: Sequence[dict[str, Any]], labels: dict[str, Path], owner: dict[Path, Path], root: Path
) -> list[dict[str, Any]]:
    """Per seed run of a seeds selection, its best candidate (``run``, ``model``,
    ``steps`` and the paired statistics; by ``score`` in a choice for transfer): the
    spread the choice was made from."""
    out = []
    for r in dict.fromkeys(owner.values()):
        mine = [row for row in rows if owner[labels[row["model"]]] == r]
        if mine:
            best = min(mine, key=lambda x: (x.get("score", x["geo_ratio"]), x["steps"] or 0))
            keys = ("model", "steps", "geo_ratio", "ci_low", "ci_high", "wins", "score")
            out.append({"run": _label(r, root), **{k: best.get(k) for k in keys if k in best}})
    return out


def load_selection(run: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``selection.json`` of a run folder.

    :param run: the run folder
    :raises FileNotFoundError: no selection was made (the message says how to make one)
    """
    p = Path(run) / SELECTION_FILE
    if not p.is_file():
        raise FileNotFoundError(
            f"{p} not found: choose a checkpoint first with "
            f"`python eval/select_checkpoint.py {run}`"
        )
    return json.loads(p.read_text(encoding="utf-8"))


def select_gate(
    card: ModelCard | str | os.PathLike[str],
    *,
    agent_loader: AgentLoader,
    taus: Sequence[float] = DEFAULT_TAUS,
    fallback: str | None = None,
    windows: int = 30,
    length: int = 1024,
    seed: int = 8,
    reference: str | None = None,
    workload: str | None = None,
    jobs: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Choose a gated agent's threshold on validation windows (:mod:`.gating`).

    Plays the card's model gated at every threshold of ``taus`` (the fallback's choice
    unless the model is at least ``tau`` sure of another action) on the same windows of
    the card's **validation** split (or of a generated ``workload``, as
    :func:`select_checkpoint`), and chooses the threshold with the lowest paired
    geometric-mean ratio of AVEbsld against the reference (ties: the larger threshold,
    which departs less).

    :param card: the model card of the agent to gate (a card or its ``.json``)
    :param agent_loader: builds the gated agents from their cards' paths (the loader
        ``eval/`` passes)
    :param taus: the thresholds (each a finite number >= 0)
    :param fallback: the heuristic kept where the model is unsure (default: the one that
        plays like the reference, :func:`~hpcgym.evaluation.gating.default_fallback`)
    :param windows, length, seed: the validation windows (seed 8 by default: not the
        windows :func:`select_checkpoint` chose the checkpoint on)
    :param reference: scheduler of the ratio (default: the card's reward reference)
    :param workload: choose on a generated workload instead (see :func:`select_checkpoint`)
    :param jobs: worker processes (``None``: all cores)
    :param progress: show a progress bar
    :raises ValueError: a gated card, a bad threshold or fallback, a real ``workload``
    :return: the selection (JSON-able): ``chosen_tau``, ``fallback``, ``candidates`` (per
        threshold its mean AVEbsld, departure rate and paired statistics), the windows and
        ``command``
    """
    c = card if isinstance(card, ModelCard) else load_model_card(card)
    if read_gate(c.data) is not None:
        raise ValueError(f"{c.name} is gated already: choose the gate of its model's own card")
    ts = sorted({float(t) for t in taus})
    if not ts or any(not (t >= 0 and t < float("inf")) for t in ts):
        raise ValueError(f"taus must be finite numbers >= 0, got {list(taus)}")
    ref = reference or run_reference(c.data)
    fb = (fallback or default_fallback(ref)).lower()
    if fb not in GATE_FALLBACKS:
        raise ValueError(f"unknown fallback {fallback!r}; valid: {', '.join(GATE_FALLBACKS)}")
    generated = _generated(workload)
    trace = c.trace if generated is None else generated
    wl, ws, split = _choice_windows(trace, generated, c.data, length, windows, seed)
    methods = [scheduler_method(ref)]
    base = {k: v for k, v in c.to_dict().items() if k not in ("test", GATE_KEY)}
    base["model"] = str(c.model.resolve())
    with tempfile.TemporaryDirectory(prefix="hpcgym-gate-") as tmp:
        for t in ts:
            label = f"tau={t:g}"
            path = Path(tmp) / f"{label}.json"
            gate = {"tau": t, "fallback": fb}
            path.write_text(json.dumps({**base, "name": label, GATE_KEY: gate}), encoding="utf-8")
            methods.append(agent_method(str(path), label=label))
        res = _against_first(wl, methods, ws, agent_loader, jobs, progress)
    per = res.per_window("avg_bsld")
    rows = []
    for t, m in zip(ts, methods[1:], strict=True):
        mine = [r for r in res.rows if r["method"] == m.label]
        decisions = sum(int(r.get("decisions") or 0) for r in mine)
        departures = sum(int(r.get("departures") or 0) for r in mine)
        rows.append(
            {
                "tau": t,
                "mean_avg_bsld": float(sum(per[m.label]) / len(per[m.label])),
                "decisions": decisions,
                "departures": departures,
                "departure_rate": departures / decisions if decisions else 0.0,
                **res.paired(m.label),
            }
        )
    chosen = min(rows, key=lambda r: (r["geo_ratio"], -r["tau"]))
    src = str(c.source) if c.source is not None else c.name
    if c.source is not None and not (rel := os.path.relpath(c.source)).startswith(".."):
        src = rel  # the command as typed in the checkout
    return {
        "agent": c.name,
        "card": str(src),
        **_where(wl, ws, split, str(trace), generated, ref, per[methods[0].label], seed),
        "fallback": fb,
        "chosen_tau": chosen["tau"],
        "candidates": rows,
        "command": (
            f"python eval/gate.py {src} --taus {' '.join(f'{t:g}' for t in ts)} "
            f"--windows {windows} --length {length} --seed {seed}"
            + (f" --fallback {fallback}" if fallback else "")
            + (f" --reference {reference}" if reference else "")
            + (f" --workload {generated}" if generated is not None else "")
        ),
    }


def gated_card(
    card: ModelCard, selection: dict[str, Any], name: str, out_dir: str | os.PathLike[str]
) -> dict[str, Any]:
    """The card dict of the gated agent ``name`` (to be written to ``out_dir/<name>.json``):
    the model's card with its ``test`` section removed (the gated agent's test is its own),
    ``model`` relative to ``out_dir`` and a ``gate`` section with the chosen threshold and
    the selection it came from.

    :param card: the model's card (the one :func:`select_gate` was given)
    :param selection: the result of :func:`select_gate`
    :param name: the gated agent's name
    :param out_dir: the folder the card will be written to
    """
    data = {k: v for k, v in card.to_dict().items() if k not in ("test", GATE_KEY)}
    data["name"] = name
    data["model"] = os.path.relpath(card.model.resolve(), Path(out_dir).resolve())
    data[GATE_KEY] = {
        "tau": selection["chosen_tau"],
        "fallback": selection["fallback"],
        "base": card.name,
        "selection": selection,
    }
    return data
