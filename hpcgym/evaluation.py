"""Evaluation of backfilling agents and schedulers on the same windows of a trace.

The library behind ``hpcgym compare`` and the ``eval/`` commands (``eval/compare.py``,
``eval/table4.py``, ``eval/table5.py``, ``eval/noise_sweep.py``; see
``docs/evaluation.md``):

* **methods** (:class:`Method`): an engine scheduler (any name of
  :func:`hpcgym.sim.get_scheduler`: ``EASY``, ``SJF+EASY``, ``key=value`` specs...) or an
  agent played through :class:`hpcgym.envs.backfill_env.BackfillEnv` with deterministic
  ``predict`` and action masks: a heuristic (``easy``, ``sjbf``, ``stop``, ``random``,
  ``first``) or a trained ``MaskablePPO`` model (``.zip``), configured from its model card
  (:class:`ModelCard`);
* **windows** (:class:`WindowSet`, :func:`select_windows`): the same job windows for every
  method, replayable by start index;
* **running** (:func:`evaluate`, :func:`evaluate_many`): one task per (method, window) in a
  process pool (``jobs``), progress bar, results independent of ``jobs``;
* **outputs** (:func:`write_outputs`): Markdown table, CSV, JSON, per-job ``.npz``, plots
  (:mod:`hpcgym.plots`) and TensorBoard scalars (:func:`write_tensorboard`);
* the RLBackfilling paper's **Table 4 / Table 5** (:func:`table4`, :func:`table5`) with
  the published numbers (:data:`PAPER_TABLE4`, :data:`PAPER_TABLE5`) beside ours, its
  **Fig. 1** noise sweep (:func:`noise_sweep`), and the Markdown of ``docs/results.md``
  (:func:`results_markdown`).

Determinism: every window is simulated from an empty machine with fixed seeds (engine
seed 0, env reset seed ``env_seed``, ``RandomValid`` seeded from ``(agent_seed, start)``),
each task is independent and results are gathered by task index, and torch runs with one
thread during evaluation. The same inputs give byte-identical ``table.md``,
``summary.csv``, ``windows.csv`` and ``results.json`` whatever ``jobs`` is. Wall-clock
times go to ``timing.json`` only.
"""

from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.sim.metrics import bounded_slowdown
from hpcgym.workload.core import Workload

__all__ = [
    "AGENT_HEURISTICS",
    "NOISE_LEVELS",
    "NOISE_POLICIES",
    "RESULT_SCHEMA",
    "TABLE_SCHEMA",
    "markdown_table",
    "noise_markdown",
    "DEFAULT_SCHEDULERS",
    "EXTRA_SCHEDULERS",
    "MODEL_CARD_SCHEMA",
    "PAPER_TABLE4",
    "PAPER_TABLE5",
    "SUMMARY_COLUMNS",
    "TABLE4_COLUMNS",
    "TABLE4_TRACES",
    "WINDOW_COLUMNS",
    "EvalResult",
    "Method",
    "MethodUnavailable",
    "ModelCard",
    "PaperTable",
    "TableSection",
    "WindowSet",
    "agent_method",
    "card_from_run",
    "card_method",
    "default_agents_dir",
    "default_jobs",
    "evaluate",
    "evaluate_many",
    "find_model_cards",
    "load_model_card",
    "noise_sweep",
    "parallel_map",
    "results_markdown",
    "scheduler_method",
    "select_windows",
    "ship_model",
    "table4",
    "table5",
    "write_outputs",
    "write_table",
    "write_tensorboard",
]

# =========================================================================== constants
#: Heuristic agents selectable by name (``--agents easy sjbf stop random first``).
AGENT_HEURISTICS: dict[str, str] = {
    "easy": "EasyAgent",
    "sjbf": "SJBFAgent",
    "stop": "StopAlways",
    "random": "RandomValid",
    "first": "FirstValid",
}

#: Schedulers of ``eval/compare.py`` when neither ``--schedulers`` nor ``--agents`` is given.
DEFAULT_SCHEDULERS: tuple[str, ...] = ("EASY", "EASY-AR", "EASY-SJBF", "SAF", "EASY++")

#: RLBackfilling (paper 004) Table 4 traces and columns (RLBF = the shipped agent).
TABLE4_TRACES: tuple[str, ...] = ("SDSC-SP2", "HPC2N", "Lublin-1", "Lublin-2")
TABLE4_COLUMNS: tuple[str, ...] = (
    "FCFS+EASY",
    "FCFS+EASY-AR",
    "FCFS+RLBF",
    "SJF+EASY",
    "SJF+EASY-AR",
    "SJF+RLBF",
    "WFP3+EASY",
    "F1+EASY",
)
#: Our extra baselines appended to Table 4 (not in the paper).
EXTRA_SCHEDULERS: tuple[str, ...] = ("SAF", "EASY++", "ELOSS", "EASY-HMM")

#: Paper 004, Table 4: mean AVEbsld of 10 random 1024-job sequences ("-": not reported;
#: the synthetic Lublin traces have no user requests, so their EASY-AR equals EASY).
PAPER_TABLE4: dict[str, dict[str, float | None]] = {
    "SDSC-SP2": dict(
        zip(
            TABLE4_COLUMNS,
            (292.82, 169.24, 142.93, 187.61, 103.43, 120.72, 228.3, 162.33),
            strict=True,
        )
    ),
    "HPC2N": dict(
        zip(TABLE4_COLUMNS, (28.16, 18.87, 13.16, 11.67, 3.73, 9.75, 15.16, 10.46), strict=True)
    ),
    "Lublin-1": dict(
        zip(TABLE4_COLUMNS, (192.89, None, 83.43, 55.62, None, 30.57, 138.89, 50.9), strict=True)
    ),
    "Lublin-2": dict(
        zip(
            TABLE4_COLUMNS, (163.06, None, 120.46, 85.63, None, 105.59, 248.02, 129.83), strict=True
        )
    ),
}

_T5_COLS = ("EASY", "EASY-AR", "RL-SDSC-SP2", "RL-HPC2N", "RL-Lublin-1", "RL-Lublin-2")
#: Paper 004, Table 5: agents trained on trace X (``RL-X``) applied to trace Y (rows), per
#: base policy. The paper prints the Lublin rows' EASY value under EASY-AR.
PAPER_TABLE5: dict[str, dict[str, dict[str, float | None]]] = {
    "FCFS": {
        "SDSC-SP2": dict(
            zip(_T5_COLS, (292.82, 169.24, 142.93, 187.18, 216.94, 210.09), strict=True)
        ),
        "HPC2N": dict(zip(_T5_COLS, (28.16, 18.87, 13.03, 13.16, 13.99, 15.32), strict=True)),
        "Lublin-1": dict(zip(_T5_COLS, (None, 192.89, 78.62, 103.18, 83.43, 233.53), strict=True)),
        "Lublin-2": dict(
            zip(_T5_COLS, (None, 163.06, 139.71, 179.15, 143.59, 120.46), strict=True)
        ),
    },
    "SJF": {
        "SDSC-SP2": dict(
            zip(_T5_COLS, (187.61, 103.43, 120.72, 125.52, 160.53, 133.17), strict=True)
        ),
        "HPC2N": dict(zip(_T5_COLS, (11.67, 3.73, 9.97, 9.75, 11.34, 11.22), strict=True)),
        "Lublin-1": dict(zip(_T5_COLS, (None, 55.62, 33.28, 28.29, 30.57, 32.19), strict=True)),
        "Lublin-2": dict(zip(_T5_COLS, (None, 85.63, 132.43, 110.28, 119.24, 105.59), strict=True)),
    },
}
#: The paper's evaluation protocol (section 4.3): 10 random sequences of 1024 jobs.
PAPER_WINDOWS, PAPER_LENGTH = 10, 1024

#: A compare label -> its Table 4 column (for the ``paper_table4`` column of summaries).
_LABEL_TO_T4 = {
    "EASY": "FCFS+EASY",
    "FCFS+EASY": "FCFS+EASY",
    "EASY-AR": "FCFS+EASY-AR",
    "FCFS+EASY-AR": "FCFS+EASY-AR",
    "SJF+EASY": "SJF+EASY",
    "SJF+EASY-AR": "SJF+EASY-AR",
    "WFP3+EASY": "WFP3+EASY",
    "F1+EASY": "F1+EASY",
}

#: Columns of ``windows.csv`` (one row per method and window; agent-only columns are
#: empty for engine schedulers).
WINDOW_COLUMNS: tuple[str, ...] = (
    "trace",
    "method",
    "kind",
    "window",
    "start",
    "length",
    "avg_bsld",
    "avg_wait",
    "avg_pp_bsld",
    "max_wait",
    "avg_turnaround",
    "utilization",
    "makespan",
    "backfilled",
    "decisions",
    "violations",
    "overflow_decisions",
    "steps",
)
_METRICS = WINDOW_COLUMNS[6:14]
_AGENT_COUNTERS = WINDOW_COLUMNS[14:]

#: Columns of ``summary.csv`` (one row per method; statistics over the windows).
SUMMARY_COLUMNS: tuple[str, ...] = (
    "trace",
    "method",
    "kind",
    "windows",
    "mean_avg_bsld",
    "median_avg_bsld",
    "std_avg_bsld",
    "min_avg_bsld",
    "max_avg_bsld",
    "mean_avg_wait",
    "mean_utilization",
    "vs_reference_pct",
    "paper_table4",
)

#: Model-card schema identifier (see docs/evaluation.md).
MODEL_CARD_SCHEMA = "hpcgym-model-card/1"
RESULT_SCHEMA = "hpcgym-evaluation/1"
TABLE_SCHEMA = "hpcgym-paper-table/1"

#: BackfillEnv arguments a model card may set (everything else comes from the evaluation).
CARD_ENV_KEYS: tuple[str, ...] = (
    "policy",
    "mode",
    "max_queue",
    "estimator",
    "estimator_kwargs",
    "correction",
    "starvation",
    "feature_predictor",
    "objective",
)


class MethodUnavailable(ValueError):
    """A method cannot be evaluated (unknown scheduler, missing model, ...)."""


# =========================================================================== model cards
def default_agents_dir() -> Path:
    """``agents/pretrained`` of this checkout / installation."""
    return Path(__file__).resolve().parents[1] / "agents" / "pretrained"


def _canonical_trace(name: str | None) -> str:
    """The registry's spelling of a trace name (``sdsc-sp2`` -> ``SDSC-SP2``), else as is."""
    if name is None:
        return "synthetic"
    from hpcgym.workload.traces import TRACES

    low = str(name).strip().lower()
    for k in TRACES:
        if k.lower() == low:
            return k
    p = Path(str(name)).expanduser()
    if p.is_file():  # a path: one spelling for every way of writing it
        return str(p.resolve())
    return str(name)


@dataclass
class ModelCard:
    """A trained agent and how to build its env (schema ``hpcgym-model-card/1``).

    :param name: short name (file stem of the card)
    :param model: path of the ``.zip`` (SB3 ``MaskablePPO.save``)
    :param trace: trace the agent was trained on (registered name, path or ``synthetic``)
    :param policy: base queue policy of the env (``FCFS``, ``SJF``...)
    :param mode: ``guarded``, ``penalized`` or ``free``
    :param env: the other :class:`~hpcgym.envs.backfill_env.BackfillEnv` arguments of
        :data:`CARD_ENV_KEYS` found in the card (``max_queue``, ``estimator``...)
    :param est_scale: the training trace's observation scale (largest request), if known
    :param wait_scale: the training env's wait scale, if known
    :param steps: training timesteps of the model, if known
    :param data: the whole card (free-form keys kept)
    :param source: the file the card was read from (``None``: built from a run folder)
    """

    name: str
    model: Path
    trace: str
    policy: str = "FCFS"
    mode: str = "guarded"
    env: dict[str, Any] = field(default_factory=dict)
    est_scale: float | None = None
    wait_scale: float | None = None
    steps: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: Path, source: Path | None = None) -> ModelCard:
        """Build from a card dict; relative ``model`` paths are relative to ``base``."""
        where = f"model card {source}" if source else "model card"
        for key in ("trace", "policy", "mode"):
            if data.get(key) in (None, ""):
                raise ValueError(
                    f"{where}: missing required key {key!r} (required: trace, policy, mode; "
                    "see docs/evaluation.md, 'Model cards')"
                )
        schema = data.get("schema", MODEL_CARD_SCHEMA)
        if not str(schema).startswith("hpcgym-model-card/"):
            raise ValueError(f"{where}: unknown schema {schema!r} (expected {MODEL_CARD_SCHEMA})")
        name = str(data.get("name") or (source.stem if source else "agent"))
        model = data.get("model") or f"{source.stem if source else name}.zip"
        mpath = Path(model)
        if not mpath.is_absolute():
            mpath = base / mpath
        env = {k: data[k] for k in CARD_ENV_KEYS if data.get(k) is not None}
        env["policy"] = str(data["policy"]).upper()
        env["mode"] = str(data["mode"]).lower()

        def num(key: str) -> float | None:
            v = data.get(key)
            return None if v is None else float(v)

        steps = data.get("steps")
        return cls(
            name=name,
            model=mpath,
            trace=_canonical_trace(str(data["trace"])),
            policy=env["policy"],
            mode=env["mode"],
            env=env,
            est_scale=num("est_scale"),
            wait_scale=num("wait_scale"),
            steps=None if steps is None else int(steps),
            data=dict(data),
            source=source,
        )

    def to_dict(self) -> dict[str, Any]:
        """The card as JSON-able dict (``model`` as given / resolved path)."""
        out = dict(self.data)
        out.setdefault("schema", MODEL_CARD_SCHEMA)
        out["name"] = self.name
        out.setdefault("model", str(self.model))
        return out


def load_model_card(path: str | os.PathLike[str]) -> ModelCard:
    """Read a model card ``.json`` (see docs/evaluation.md for the schema).

    :raises FileNotFoundError: the card or its model file does not exist
    :raises ValueError: malformed card (the message names the file and the key)
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model card {p} not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"model card {p}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ValueError(f"model card {p}: expected a JSON object")
    card = ModelCard.from_dict(data, p.parent, source=p)
    if not card.model.is_file():
        raise FileNotFoundError(f"model card {p}: model file {card.model} not found")
    return card


def _run_dir_of(model: Path) -> Path | None:
    """The ``train/ppo.py`` run folder holding ``model`` (``config.json`` next to it or
    one level up, for ``checkpoints/*.zip``), if any."""
    for d in (model.parent, model.parent.parent):
        if (d / "config.json").is_file():
            return d
    return None


def card_from_run(
    run: str | os.PathLike[str],
    model: str = "best",
    name: str | None = None,
) -> ModelCard:
    """A model card for a ``train/ppo.py`` run folder (``config.json``, ``summary.json``,
    ``best_model.json``), or for a ``.zip`` inside one.

    :param run: the run folder, or a model ``.zip`` in it (``checkpoints/`` too)
    :param model: ``best`` (``best_model.zip``, default; falls back to ``final``),
        ``final`` (``final_model.zip``) or a ``.zip`` path; ignored when ``run`` is a zip
    :param name: card name (default: the run folder's name)
    """
    p = Path(run)
    if p.suffix == ".zip":
        zpath = p
        rdir = _run_dir_of(p)
        if rdir is None:
            raise FileNotFoundError(f"{p}: no config.json of a train/ppo.py run next to it")
    else:
        rdir = p
        if not (rdir / "config.json").is_file():
            raise FileNotFoundError(
                f"{rdir} is not a train/ppo.py run folder (no config.json in it)"
            )
        if model == "best":
            zpath = rdir / "best_model.zip"
            if not zpath.is_file():
                zpath = rdir / "final_model.zip"
        elif model == "final":
            zpath = rdir / "final_model.zip"
        else:
            zpath = Path(model)
    if not zpath.is_file():
        raise FileNotFoundError(f"model {zpath} not found in the run {rdir}")
    cfg = json.loads((rdir / "config.json").read_text(encoding="utf-8"))
    summ_p = rdir / "summary.json"
    summary = json.loads(summ_p.read_text(encoding="utf-8")) if summ_p.is_file() else {}
    data: dict[str, Any] = {
        "schema": MODEL_CARD_SCHEMA,
        "name": name or rdir.name,
        "model": str(zpath.resolve()),
        "algorithm": "MaskablePPO",
        "policy_class": "agents.kernel_policy.KernelPolicy",
        "trace": cfg.get("trace", "synthetic"),
        "split": "train",
        "train_fraction": cfg.get("train_fraction", 0.7),
        "policy": cfg.get("policy", "FCFS"),
        "mode": cfg.get("mode", "guarded"),
        "normalizer": cfg.get("normalizer"),
        "objective": cfg.get("objective", "bsld"),
        "estimator": cfg.get("estimator", "request"),
        "max_queue": cfg.get("max_queue", 128),
        "sequence_length": cfg.get("seq_len"),
        "seed": cfg.get("seed"),
        "run": str(rdir),
        "checkpoint": zpath.name,
    }
    best_p = rdir / "best_model.json"
    if zpath.name == "best_model.zip" and best_p.is_file():
        best = json.loads(best_p.read_text(encoding="utf-8"))
        data["steps"] = best.get("timesteps")
        data["eval"] = {"avg_bsld": best.get("avg_bsld"), "updates": best.get("updates")}
    elif zpath.name == "final_model.zip" and summary:
        data["steps"] = summary.get("timesteps")
    else:
        import re

        m = re.search(r"model_(\d+)_steps\.zip$", zpath.name)
        if m:
            data["steps"] = int(m.group(1))
    if summary:
        data.setdefault("eval", {})
        ev = summary.get("eval", {})
        data["eval"].update(
            {
                "split": ev.get("split"),
                "length": ev.get("length"),
                "starts": ev.get("starts"),
                "baselines": {
                    k: v.get("mean") for k, v in (summary.get("baselines") or {}).items()
                },
            }
        )
        data["updates"] = summary.get("updates")
        data["versions"] = summary.get("versions")
    hp_keys = (
        "learning_rate",
        "value_lr",
        "gamma",
        "gae_lambda",
        "clip_range",
        "target_kl",
        "n_epochs",
        "ent_coef",
        "vf_coef",
        "max_grad_norm",
        "value_head",
        "stop_score",
        "kernel_arch",
        "n_envs",
        "n_steps_resolved",
        "batch_size_resolved",
        "trajectories",
    )
    data["hyperparameters"] = {k: cfg[k] for k in hp_keys if k in cfg}
    try:
        from hpcgym.workload import load

        trace = cfg.get("trace", "synthetic")
        wl = load(None if str(trace).lower() in ("synthetic", "none") else trace)
        data["est_scale"] = float(wl.request.max())
        data["wait_scale"] = float(wl.request.max())
        data["trace_jobs"] = len(wl)
        data["machine_size"] = int(wl.machine_size)
    except Exception as exc:  # the trace is only needed for the scale constants
        data["est_scale_note"] = f"trace not loadable here ({type(exc).__name__}: {exc})"
    return ModelCard.from_dict(data, rdir)


def ship_model(
    run: str | os.PathLike[str],
    name: str,
    out_dir: str | os.PathLike[str],
    model: str = "best",
    notes: str = "",
) -> dict[str, Path]:
    """Copy a run's model to ``out_dir/<name>.zip`` and write ``<name>.json`` (the model
    card, with ``model`` relative to it) and ``<name>.md`` (human-readable card).

    :return: the written paths (``zip``, ``json``, ``md``)
    """
    card = card_from_run(run, model=model, name=name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    zdst = out / f"{name}.zip"
    shutil.copyfile(card.model, zdst)
    data = card.to_dict()
    data["model"] = zdst.name
    data["name"] = name
    jpath = out / f"{name}.json"
    jpath.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    mpath = out / f"{name}.md"
    mpath.write_text(_card_markdown(data, notes), encoding="utf-8")
    return {"zip": zdst, "json": jpath, "md": mpath}


def _card_markdown(data: dict[str, Any], notes: str = "") -> str:
    lines = [
        f"# {data['name']}",
        "",
        f"RLBackfilling kernel policy (`{data.get('policy_class', 'KernelPolicy')}`, "
        f"{data.get('algorithm', 'MaskablePPO')}) trained on **{data['trace']}** with the "
        f"**{data['policy']}** base policy in **{data['mode']}** mode.",
        "",
        "| key | value |",
        "|---|---|",
    ]
    for k in (
        "trace",
        "split",
        "train_fraction",
        "policy",
        "mode",
        "normalizer",
        "objective",
        "estimator",
        "max_queue",
        "sequence_length",
        "est_scale",
        "seed",
        "steps",
        "updates",
        "run",
        "checkpoint",
    ):
        if data.get(k) is not None:
            lines.append(f"| {k} | `{data[k]}` |")
    ev = data.get("eval") or {}
    if ev.get("avg_bsld") is not None:
        lines += [
            "",
            f"Training-time evaluation: mean AVEbsld {ev['avg_bsld']:.2f} on "
            f"{len(ev.get('starts') or [])} {ev.get('split', 'test')} windows of "
            f"{ev.get('length')} jobs"
            + (
                "; baselines "
                + ", ".join(
                    f"{k} {v:.2f}" for k, v in (ev.get("baselines") or {}).items() if v is not None
                )
                if ev.get("baselines")
                else ""
            )
            + ".",
        ]
    lines += [
        "",
        "Evaluate: `python eval/compare.py --trace "
        f"{data['trace']} --agents {data['name']} --schedulers EASY EASY-AR`",
    ]
    if notes:
        lines += ["", notes]
    return "\n".join(lines) + "\n"


def find_model_cards(agents_dir: str | os.PathLike[str] | None = None) -> list[ModelCard]:
    """Every model card ``*.json`` of ``agents_dir`` (default ``agents/pretrained``), by
    name. A ``.zip`` without a card is ignored (its env would be a guess)."""
    d = Path(agents_dir) if agents_dir is not None else default_agents_dir()
    if not d.is_dir():
        return []
    return [load_model_card(p) for p in sorted(d.glob("*.json"))]


# =========================================================================== methods
@dataclass
class Method:
    """One evaluated method.

    :param label: unique display name (table column / row)
    :param kind: ``scheduler`` (the engine's built-in backfilling) or ``agent``
    :param spec: scheduler spec (``get_scheduler``), heuristic name, or model ``.zip`` path
    :param env: :class:`~hpcgym.envs.backfill_env.BackfillEnv` arguments of an agent
        (``max_queue=None``: taken from the model's observation space)
    :param card: the model card dict of a model (``None`` otherwise)
    :param est_scale: observation scale override (the training trace's, ``scales="card"``)
    :param wait_scale: wait scale override (``scales="card"``)
    :param agent_seed: base seed of ``RandomValid`` (per window: ``(agent_seed, start)``)
    :param env_seed: ``reset`` seed of every window (stochastic estimators)
    """

    label: str
    kind: str
    spec: str
    env: dict[str, Any] = field(default_factory=dict)
    card: dict[str, Any] | None = None
    est_scale: float | None = None
    wait_scale: float | None = None
    agent_seed: int = 0
    env_seed: int = 0

    @property
    def is_model(self) -> bool:
        return self.kind == "agent" and self.spec not in AGENT_HEURISTICS

    @property
    def steps(self) -> int | None:
        if self.card and self.card.get("steps") is not None:
            return int(self.card["steps"])
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "kind": self.kind, "spec": self.spec}
        if self.kind == "scheduler":
            from hpcgym.sim import get_scheduler

            out["scheduler"] = get_scheduler(self.spec).to_dict()
        else:
            out["env"] = dict(self.env)
            if self.card is not None:
                out["card"] = {
                    k: self.card.get(k)
                    for k in ("name", "trace", "policy", "mode", "steps", "seed")
                    if k in self.card
                }
            if self.est_scale is not None:
                out["est_scale"] = self.est_scale
            if self.wait_scale is not None:
                out["wait_scale"] = self.wait_scale
            if self.spec == "random":
                out["agent_seed"] = self.agent_seed
            out["env_seed"] = self.env_seed
        return out


def scheduler_method(spec: str, label: str | None = None) -> Method:
    """An engine scheduler (validated now).

    :raises MethodUnavailable: unknown name (the message lists the valid ones)
    """
    from hpcgym.sim import get_scheduler

    try:
        s = get_scheduler(spec)
    except ValueError as exc:
        raise MethodUnavailable(str(exc)) from None
    return Method(label=label or s.name, kind="scheduler", spec=spec)


def _split_label(text: str) -> tuple[str | None, str]:
    """``LABEL=spec`` (the label has no path separator) or just ``spec``."""
    if "=" in text:
        head, rest = text.split("=", 1)
        if head and "/" not in head and os.sep not in head and not Path(text).exists():
            return head, rest
    return None, text


def agent_method(
    spec: str,
    *,
    policy: str = "FCFS",
    mode: str = "guarded",
    max_queue: int | None = None,
    agents_dir: str | os.PathLike[str] | None = None,
    scales: str = "target",
    agent_seed: int = 0,
    env_seed: int = 0,
    label: str | None = None,
) -> Method:
    """An agent played through the env.

    ``spec`` is ``[LABEL=]WHAT`` with ``WHAT`` one of: a heuristic name
    (:data:`AGENT_HEURISTICS`), a model card ``.json``, a model ``.zip`` (configured from
    ``<stem>.json`` next to it, else from the ``config.json`` of the ``train/ppo.py`` run
    holding it, else from ``policy``/``mode``/``max_queue``), a run folder
    (``best_model.zip``) or the name of a card in ``agents_dir``.

    :param policy, mode, max_queue: env of heuristics and of models without a card
        (``max_queue=None``: 128 for heuristics, the model's own for models)
    :param scales: ``target`` (default: observation scales of the evaluated trace, as the
        env computes them and as the paper did) or ``card`` (the training trace's scales
        from the card, when known)
    :raises MethodUnavailable: nothing matches ``spec`` (the message lists the choices)
    """
    if scales not in ("target", "card"):
        raise ValueError(f"unknown scales {scales!r}; valid: target, card")
    given_label, what = _split_label(spec)
    label = label or given_label
    key = what.strip().lower()
    if key in AGENT_HEURISTICS:
        env = {"policy": policy.upper(), "mode": mode, "max_queue": max_queue or 128}
        name = AGENT_HEURISTICS[key]
        default_label = name if policy.upper() == "FCFS" else f"{policy.upper()}+{name}"
        return Method(
            label=label or default_label,
            kind="agent",
            spec=key,
            env=env,
            agent_seed=agent_seed,
            env_seed=env_seed,
        )
    p = Path(what).expanduser()
    card: ModelCard | None = None
    if p.suffix == ".json" and p.is_file():
        card = load_model_card(p)
    elif p.suffix == ".zip" and p.is_file():
        side = p.with_suffix(".json")
        if _is_card(side):
            card = load_model_card(side)
        elif _run_dir_of(p) is not None:
            card = card_from_run(p)
        else:
            return Method(
                label=label or p.stem,
                kind="agent",
                spec=str(p),
                env={"policy": policy.upper(), "mode": mode, "max_queue": max_queue},
                env_seed=env_seed,
            )
    elif p.is_dir() and (p / "config.json").is_file():
        card = card_from_run(p)
    else:
        d = Path(agents_dir) if agents_dir is not None else default_agents_dir()
        for cand in (d / f"{what}.json", d / what):
            if cand.suffix == ".json" and cand.is_file():
                card = load_model_card(cand)
                break
        if card is None and (d / f"{what}.zip").is_file():
            return agent_method(
                str(d / f"{what}.zip"),
                policy=policy,
                mode=mode,
                max_queue=max_queue,
                scales=scales,
                env_seed=env_seed,
                label=label or what,
            )
        if card is None:
            avail = sorted(x.stem for x in d.glob("*.json")) if d.is_dir() else []
            raise MethodUnavailable(
                f"unknown agent {spec!r}: not a heuristic ({', '.join(AGENT_HEURISTICS)}), "
                "not an existing .zip model / model card .json / train/ppo.py run folder, and "
                f"no card {what}.json in {d} (available: {', '.join(avail) or 'none'})"
            )
    assert card is not None
    return card_method(card, label=label, scales=scales, env_seed=env_seed)


def card_method(
    card: ModelCard, label: str | None = None, scales: str = "target", env_seed: int = 0
) -> Method:
    """The agent :class:`Method` of a model card (env from the card; see
    :func:`agent_method` for ``scales``)."""
    method = Method(
        label=label or card.name,
        kind="agent",
        spec=str(card.model),
        env=dict(card.env),
        card=card.to_dict(),
        env_seed=env_seed,
    )
    if scales == "card":
        method.est_scale = card.est_scale
        method.wait_scale = card.wait_scale
    return method


def _is_card(path: Path) -> bool:
    """``path`` is a model card (not, e.g., train/ppo.py's ``best_model.json`` record)."""
    if not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and (
        str(data.get("schema", "")).startswith("hpcgym-model-card/")
        or all(k in data for k in ("trace", "policy", "mode"))
    )


def _unique_labels(methods: list[Method]) -> None:
    seen: dict[str, int] = {}
    for m in methods:
        base = m.label
        if base in seen:
            seen[base] += 1
            m.label = f"{base}#{seen[base]}"
        else:
            seen[base] = 1


# =========================================================================== windows
@dataclass(frozen=True)
class WindowSet:
    """The windows every method runs on: ``workload.window(s, length)`` for each start.

    :param starts: window start indices (cleaned, submit-ordered trace)
    :param length: jobs per window
    :param how: ``sampled`` (seeded uniform draws), ``evenly`` (evenly spaced),
        ``explicit`` (given) or ``full`` (the whole split as one window)
    :param split: ``train``, ``test`` or ``all``
    :param seed: sampler seed (``sampled``)
    :param train_fraction: share of the jobs in the training split
    :param prefix: only the first ``prefix`` jobs of the trace were considered
    """

    starts: tuple[int, ...]
    length: int
    how: str = "explicit"
    split: str = "all"
    seed: int | None = None
    train_fraction: float = 0.7
    prefix: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "starts": list(self.starts),
            "length": self.length,
            "how": self.how,
            "split": self.split,
            "seed": self.seed,
            "train_fraction": self.train_fraction,
            "prefix": self.prefix,
        }


def select_windows(
    n_jobs: int,
    length: int = PAPER_LENGTH,
    count: int = PAPER_WINDOWS,
    split: str = "test",
    seed: int | None = 1,
    train_fraction: float = 0.7,
    starts: Sequence[int] | None = None,
    full_trace: bool = False,
    prefix: int | None = None,
) -> WindowSet:
    """Choose evaluation windows.

    * ``starts``: exactly these (replay), each checked against the trace;
    * ``full_trace``: one window covering the whole ``split`` range (``all``: the trace);
    * otherwise ``count`` starts of ``length``-job windows inside ``split``: drawn
      uniformly with replacement by :class:`hpcgym.workload.WindowSampler` seeded with
      ``seed`` (as ``hpcgym compare``), or evenly spaced when ``seed`` is ``None`` (as the
      training script's evaluation).

    :param n_jobs: jobs in the trace
    :param prefix: consider only the first ``prefix`` jobs (the paper used the first
        10,000 jobs of each trace); the split is taken inside the prefix
    """
    from hpcgym.workload import WindowSampler, split_range

    n = int(n_jobs)
    if prefix is not None:
        if prefix <= 0:
            raise ValueError(f"prefix must be positive, got {prefix}")
        n = min(n, int(prefix))
    if starts:
        st = tuple(int(s) for s in starts)
        for s in st:
            if s < 0 or s + length > n:
                raise ValueError(
                    f"window start {s} with length {length} is outside the trace "
                    f"({n} jobs): valid starts are 0..{n - length}"
                )
        return WindowSet(st, int(length), "explicit", "all", None, train_fraction, prefix)
    if full_trace:
        lo, hi = split_range(n, split, train_fraction)
        if hi <= lo:
            raise ValueError(f"the {split!r} split of the trace is empty")
        return WindowSet((lo,), hi - lo, "full", split, None, train_fraction, prefix)
    if count <= 0:
        raise ValueError(f"the number of windows must be positive, got {count}")
    sampler = WindowSampler(n, length, split=split, train_fraction=train_fraction, seed=seed)
    if seed is None:
        st = tuple(int(s) for s in sampler.evenly_spaced(count))
        return WindowSet(st, int(length), "evenly", split, None, train_fraction, prefix)
    st = tuple(int(s) for s in sampler.sample_many(count))
    return WindowSet(st, int(length), "sampled", split, int(seed), train_fraction, prefix)


# =========================================================================== runner
#: worker-process context: {"traces": {key: Workload}}
_CTX: dict[str, Any] = {}
_MODELS: dict[tuple[str, int, int], Any] = {}
_ENVS: dict[tuple[Any, ...], Any] = {}
_CACHE_SIZE = 32  # envs / models kept per process


def default_jobs() -> int:
    """Cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _init_worker(context: dict[str, Any]) -> None:
    _CTX.clear()
    _CTX.update(context)
    _limit_torch_threads()


_TORCH_THREADS: list[int] = []  # torch's thread count when evaluation first saw it


def _limit_torch_threads() -> int | None:
    """One torch thread (same floating point whatever ``jobs``; no oversubscription).
    Returns the previous count (``None`` if torch is not imported)."""
    th = sys.modules.get("torch")
    if th is None:
        return None
    prev = int(th.get_num_threads())
    if not _TORCH_THREADS:
        _TORCH_THREADS.append(prev)
    th.set_num_threads(1)
    return prev


def parallel_map(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    jobs: int | None = None,
    progress: bool = True,
    desc: str = "",
    context: dict[str, Any] | None = None,
    preload: Sequence[str] = (),
) -> list[Any]:
    """``[fn(t) for t in tasks]`` in a process pool, in task order.

    :param fn: a module-level (picklable) function of one task
    :param jobs: worker processes (``None``: :func:`default_jobs`); ``<= 1`` runs inline
    :param progress: tqdm progress bar on stderr
    :param context: data every worker needs (pickled once per worker, not per task);
        ``fn`` reads it from :data:`_CTX`
    :param preload: modules the workers import once (Linux: in the ``forkserver`` the
        workers are forked from, e.g. torch for models: ~4 s saved per worker)
    """
    from tqdm.auto import tqdm

    n = len(tasks)
    jobs = default_jobs() if jobs is None else int(jobs)
    context = context or {}
    bar = tqdm(total=n, desc=desc, disable=not progress, file=sys.stderr, leave=False)
    try:
        if jobs <= 1 or n <= 1:
            saved = dict(_CTX)
            _CTX.clear()
            _CTX.update(context)
            prev = _limit_torch_threads()
            try:
                out = []
                for t in tasks:
                    out.append(fn(t))
                    bar.update(1)
                return out
            finally:
                _CTX.clear()
                _CTX.update(saved)
                th = sys.modules.get("torch")
                if th is not None:  # restore (torch may have been imported meanwhile)
                    th.set_num_threads(prev if prev is not None else _TORCH_THREADS[0])
        results: list[Any] = [None] * n
        ctx = _pool_context(preload)
        with ProcessPoolExecutor(
            max_workers=min(jobs, n), mp_context=ctx, initializer=_init_worker, initargs=(context,)
        ) as ex:
            futs = {ex.submit(fn, t): i for i, t in enumerate(tasks)}
            try:
                for f in as_completed(futs):
                    results[futs[f]] = f.result()
                    bar.update(1)
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
        return results
    finally:
        bar.close()


#: modules every evaluation worker needs
_BASE_PRELOAD: tuple[str, ...] = ("hpcgym.evaluation", "hpcgym.envs.backfill_env", "agents")
#: modules of trained models (torch._dynamo is imported by the first optimizer SB3 builds)
_MODEL_PRELOAD: tuple[str, ...] = ("sb3_contrib", "agents.kernel_policy", "torch._dynamo")


def _pool_context(preload: Sequence[str]) -> Any:
    """Linux: a ``forkserver`` (a clean single-threaded server, started once per process,
    that imports ``preload`` once; workers are forked from it). Elsewhere: ``spawn``.
    Never a plain fork of this process, which may hold torch / tqdm threads. The preload
    list only applies if the server is not running yet (later pools import on demand)."""
    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        from multiprocessing import forkserver

        if getattr(forkserver._forkserver, "_forkserver_pid", None) is None:  # not started
            ctx.set_forkserver_preload([*_BASE_PRELOAD, *preload])
        return ctx
    return multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class _Task:
    trace: str  # key in _CTX["traces"]
    method: Method
    start: int
    length: int
    skip_errors: bool


def _load_model(path: str) -> Any:
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    model = _MODELS.get(key)
    if model is None:
        if len(_MODELS) >= _CACHE_SIZE:
            _MODELS.clear()
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MethodUnavailable(
                f"evaluating the model {path} needs sb3-contrib (pip install -e '.[train]')"
            ) from exc
        _limit_torch_threads()
        model = MaskablePPO.load(path, device="cpu")
        _limit_torch_threads()
        _MODELS[key] = model
    return model


def _make_agent(method: Method, start: int) -> Any:
    import agents

    if method.spec == "random":
        seed = int(
            np.random.SeedSequence([int(method.agent_seed), int(start)]).generate_state(1)[0]
        )
        return agents.RandomValid(seed=seed)
    if method.spec in AGENT_HEURISTICS:
        return getattr(agents, AGENT_HEURISTICS[method.spec])()
    return _load_model(method.spec)


def _get_env(trace_key: str, method: Method, length: int, model: Any | None) -> Any:
    from hpcgym.envs.backfill_env import BackfillEnv

    kw = dict(method.env)
    if model is not None:
        shape = tuple(model.observation_space.shape)
        if kw.get("max_queue") is None:
            kw["max_queue"] = int(shape[0])
    if kw.get("max_queue") is None:
        kw["max_queue"] = 128
    if method.wait_scale is not None:
        kw["wait_scale"] = method.wait_scale
    key = (trace_key, length, json.dumps(kw, sort_keys=True, default=str), method.est_scale)
    env = _ENVS.get(key)
    if env is None:
        if len(_ENVS) >= _CACHE_SIZE:
            _ENVS.clear()
        env = BackfillEnv(
            trace=_CTX["traces"][trace_key],
            sequence_length=length,
            split="all",
            normalizer=None,
            **kw,
        )
        if method.est_scale is not None:
            # the env has no est_scale argument: set the observation scale it uses
            scales = getattr(env, "_scales", None)
            if scales is None or float(scales[0]) != env.est_scale:
                raise MethodUnavailable(
                    "this BackfillEnv version does not expose its observation scales: "
                    "--scales card is not available (use --scales target)"
                )
            env.est_scale = float(method.est_scale)
            scales[0] = float(method.est_scale)
        _ENVS[key] = env
    if model is not None and tuple(model.observation_space.shape) != env.observation_space.shape:
        raise MethodUnavailable(
            f"model {method.spec} expects observations of shape "
            f"{tuple(model.observation_space.shape)}, the env gives "
            f"{env.observation_space.shape} (max_queue, features): give the model's "
            "max_queue / feature_predictor in its model card"
        )
    return env


def _play_window(trace_key: str, method: Method, start: int, length: int) -> dict[str, Any]:
    model = _load_model(method.spec) if method.is_model else None
    env = _get_env(trace_key, method, length, model)
    agent = model if model is not None else _make_agent(method, start)
    obs, info = env.reset(seed=method.env_seed, options={"start": int(start)})
    while True:
        action, _ = agent.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _r, terminated, truncated, info = env.step(int(np.asarray(action).reshape(())))
        if terminated or truncated:
            break
    if "agent" not in info:
        raise RuntimeError("the env's terminal info has no 'agent' metrics")
    res = env.simulation.result()
    out = {k: info["agent"][k] for k in _METRICS}
    out.update(
        decisions=int(info["decisions"]),
        violations=int(info["violations"]),
        overflow_decisions=int(info["overflow_decisions"]),
        steps=int(info["episode_steps"]),
    )
    out["job_start"] = np.asarray(res.start, dtype=np.float64)
    return out


def _simulate_window(trace_key: str, method: Method, start: int, length: int) -> dict[str, Any]:
    from hpcgym.sim import get_scheduler

    wl: Workload = _CTX["traces"][trace_key]
    res = get_scheduler(method.spec).simulate(wl.window(int(start), int(length)), seed=0)
    out: dict[str, Any] = {k: res.metrics[k] for k in _METRICS}
    out.update({k: None for k in _AGENT_COUNTERS})
    out["job_start"] = np.asarray(res.start, dtype=np.float64)
    return out


def _run_task(task: _Task) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        if task.method.kind == "scheduler":
            out = _simulate_window(task.trace, task.method, task.start, task.length)
        else:
            out = _play_window(task.trace, task.method, task.start, task.length)
    except Exception as exc:
        if not task.skip_errors:
            raise
        return {"error": f"{type(exc).__name__}: {exc}", "unavailable": True}
    out["seconds"] = time.perf_counter() - t0
    return out


# =========================================================================== results
@dataclass
class EvalResult:
    """All methods on the same windows of one trace.

    :param trace: the trace's label (workload name)
    :param jobs: jobs in the trace
    :param machine_size: processors
    :param windows: the windows
    :param methods: the evaluated methods (skipped ones are not here)
    :param rows: one dict per (method, window), method-major, keys :data:`WINDOW_COLUMNS`
    :param job_start: per method, the start time of every job, ``(windows, length)``
    :param submit, runtime: the windows' jobs, ``(windows, length)``
    :param skipped: method label -> why it could not be evaluated
    :param timings: method label -> wall seconds per window (not deterministic)
    :param reference: label of the reference method of ``vs_reference_pct`` (or ``None``)
    :param tag: extra name of the evaluation (e.g. the Table 5 section), used for folders
    """

    trace: str
    jobs: int
    machine_size: int
    windows: WindowSet
    methods: list[Method]
    rows: list[dict[str, Any]]
    job_start: dict[str, np.ndarray]
    submit: np.ndarray
    runtime: np.ndarray
    skipped: dict[str, str] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)
    reference: str | None = None
    tag: str | None = None

    @property
    def labels(self) -> list[str]:
        return [m.label for m in self.methods]

    def method(self, label: str) -> Method:
        for m in self.methods:
            if m.label == label:
                return m
        raise KeyError(f"no method {label!r}; evaluated: {', '.join(self.labels)}")

    def per_window(self, metric: str = "avg_bsld") -> dict[str, list[float]]:
        """``{label: [value per window]}`` in window order."""
        out: dict[str, list[float]] = {lab: [] for lab in self.labels}
        for r in self.rows:
            out[r["method"]].append(r[metric])
        return out

    def mean(self, label: str, metric: str = "avg_bsld") -> float:
        return float(np.mean(self.per_window(metric)[label]))

    def job_bsld(self, label: str) -> np.ndarray:
        """Bounded slowdown of every job, ``(windows, length)``."""
        wait = self.job_start[label] - self.submit
        return bounded_slowdown(wait, self.runtime)

    def job_wait(self, label: str) -> np.ndarray:
        return self.job_start[label] - self.submit

    def summary(self) -> list[dict[str, Any]]:
        """One dict per method, keys :data:`SUMMARY_COLUMNS`."""
        bs = self.per_window("avg_bsld")
        ws = self.per_window("avg_wait")
        us = self.per_window("utilization")
        ref = self.reference if self.reference in bs else None
        ref_mean = float(np.mean(bs[ref])) if ref else None
        paper = self.paper_values()
        out = []
        for m in self.methods:
            b = np.asarray(bs[m.label], dtype=np.float64)
            mean = float(b.mean())
            out.append(
                {
                    "trace": self.trace,
                    "method": m.label,
                    "kind": m.kind,
                    "windows": len(b),
                    "mean_avg_bsld": mean,
                    "median_avg_bsld": float(np.median(b)),
                    "std_avg_bsld": float(b.std()),
                    "min_avg_bsld": float(b.min()),
                    "max_avg_bsld": float(b.max()),
                    "mean_avg_wait": float(np.mean(ws[m.label])),
                    "mean_utilization": float(np.mean(us[m.label])),
                    "vs_reference_pct": None
                    if ref_mean is None or ref_mean == 0
                    else 100.0 * (ref_mean - mean) / ref_mean,
                    "paper_table4": paper.get(m.label),
                }
            )
        return out

    def paper_values(self) -> dict[str, float]:
        """Published Table 4 values for the methods that have one (paper protocol only:
        sampled windows of 1024 jobs)."""
        table = PAPER_TABLE4.get(self.trace)
        if table is None or self.windows.length != PAPER_LENGTH or self.windows.how == "full":
            return {}
        out = {}
        for m in self.methods:
            col = _LABEL_TO_T4.get(m.label) if m.kind == "scheduler" else None
            v = table.get(col) if col else None
            if v is not None:
                out[m.label] = v
        return out

    def replay_command(self) -> str:
        w = self.windows
        parts = [f"--trace {self.trace}"]
        if w.how == "full":
            parts.append(f"--full-trace --split {w.split}")
        else:
            parts.append(f"--starts {' '.join(map(str, w.starts))} --length {w.length}")
        scheds = [m.spec for m in self.methods if m.kind == "scheduler"]
        ags = [m.spec for m in self.methods if m.kind == "agent"]
        pols = {m.env.get("policy") for m in self.methods if m.spec in AGENT_HEURISTICS}
        if pols - {"FCFS"} and len(pols) == 1:
            parts.append(f"--policy {pols.pop()}")
        if scheds:
            parts.append("--schedulers " + " ".join(scheds))
        if ags:
            parts.append("--agents " + " ".join(ags))
        return "python eval/compare.py " + " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``results.json``."""
        return {
            "schema": RESULT_SCHEMA,
            "trace": self.trace,
            "jobs": self.jobs,
            "machine_size": self.machine_size,
            "windows": self.windows.to_dict(),
            "reference": self.reference,
            "methods": [m.to_dict() for m in self.methods],
            "skipped": dict(self.skipped),
            "summary": self.summary(),
            "rows": [{k: r[k] for k in WINDOW_COLUMNS} for r in self.rows],
            "replay": self.replay_command(),
        }


def _workload_key(w: Workload) -> str:
    """Content hash of a workload's scheduling columns (key of the worker caches)."""
    import hashlib

    h = hashlib.blake2b(digest_size=12)
    h.update(f"{w.name}|{w.machine_size}|{len(w)}|{w.offset}".encode())
    for col in (w.submit, w.runtime, w.procs, w.request, w.user, w.group, w.executable):
        h.update(np.ascontiguousarray(col).view(np.uint8))
    return h.hexdigest()


@dataclass
class _Request:
    key: str
    workload: Workload
    methods: list[Method]
    windows: WindowSet
    reference: str | None


def _as_workload(trace: str | os.PathLike[str] | Workload | None) -> Workload:
    from hpcgym.workload import load

    return load(trace)


def evaluate(
    trace: str | os.PathLike[str] | Workload | None,
    methods: Sequence[Method],
    windows: WindowSet,
    *,
    jobs: int | None = None,
    progress: bool = True,
    skip_unavailable: bool = False,
    reference: str | None = "EASY",
) -> EvalResult:
    """Every method on every window of one trace (see :func:`evaluate_many`)."""
    return evaluate_many(
        [(trace, methods, windows)],
        jobs=jobs,
        progress=progress,
        skip_unavailable=skip_unavailable,
        reference=reference,
    )[0]


def evaluate_many(
    requests: Sequence[
        tuple[str | os.PathLike[str] | Workload | None, Sequence[Method], WindowSet]
    ],
    *,
    jobs: int | None = None,
    progress: bool = True,
    skip_unavailable: bool = False,
    reference: str | None = "EASY",
) -> list[EvalResult]:
    """Evaluate several ``(trace, methods, windows)`` requests in one process pool.

    Every (method, window) is one task; engine schedulers run ``scheduler.simulate(
    workload.window(start, length), seed=0)``, agents play the window in a
    :class:`~hpcgym.envs.backfill_env.BackfillEnv` (``split="all"``, no normalizer, reset
    with ``options={"start": start}`` and seed ``env_seed``) with
    ``predict(obs, action_masks=env.action_masks(), deterministic=True)``.

    :param jobs: worker processes (``None``: all cores; ``1``: inline)
    :param skip_unavailable: a method that fails (unknown scheduler, model that does not
        load, predictor error...) is dropped from the result with its reason in
        ``EvalResult.skipped`` instead of raising. Unknown scheduler names and missing
        agents are resolved before (:func:`scheduler_method`, :func:`agent_method`).
    :param reference: label of the reference of ``vs_reference_pct`` (default ``EASY``)
    """
    reqs: list[_Request] = []
    traces: dict[str, Workload] = {}
    for trace, methods, windows in requests:
        wl = _as_workload(trace)
        key = _workload_key(wl)  # content hash: worker caches never mix two traces
        traces[key] = wl
        ms = [Method(**vars(m)) for m in methods]  # copies: labels may be made unique
        _unique_labels(ms)
        for s in windows.starts:
            if s < 0 or s + windows.length > len(wl):
                raise ValueError(
                    f"window [{s}:{s + windows.length}] is outside {wl.name} ({len(wl)} jobs)"
                )
        reqs.append(_Request(key, wl, ms, windows, reference))
    tasks: list[_Task] = []
    index: list[tuple[int, int, int]] = []  # (request, method, window)
    # agents first: they are the long tasks (better load balance); order of results is
    # by index, so it does not change the outputs
    for agent_pass in (True, False):
        for ri, r in enumerate(reqs):
            for mi, m in enumerate(r.methods):
                if (m.kind == "agent") != agent_pass:
                    continue
                for wi, s in enumerate(r.windows.starts):
                    tasks.append(_Task(r.key, m, int(s), r.windows.length, skip_unavailable))
                    index.append((ri, mi, wi))
    models = any(t.method.is_model for t in tasks)
    outs = parallel_map(
        _run_task,
        tasks,
        jobs=jobs,
        progress=progress,
        desc="evaluating",
        context={"traces": traces},
        preload=_MODEL_PRELOAD if models else (),
    )
    grid: dict[tuple[int, int, int], dict[str, Any]] = dict(zip(index, outs, strict=True))
    results: list[EvalResult] = []
    for ri, r in enumerate(reqs):
        nwin = len(r.windows.starts)
        skipped: dict[str, str] = {}
        kept: list[tuple[int, Method]] = []
        for mi, m in enumerate(r.methods):
            errs = [grid[(ri, mi, wi)].get("error") for wi in range(nwin)]
            errs = [e for e in errs if e]
            if errs:
                skipped[m.label] = errs[0]
            else:
                kept.append((mi, m))
        rows: list[dict[str, Any]] = []
        job_start: dict[str, np.ndarray] = {}
        timings: dict[str, list[float]] = {}
        for mi, m in kept:
            js = []
            timings[m.label] = []
            for wi, s in enumerate(r.windows.starts):
                o = grid[(ri, mi, wi)]
                row: dict[str, Any] = {
                    "trace": r.workload.name,
                    "method": m.label,
                    "kind": m.kind,
                    "window": wi,
                    "start": int(s),
                    "length": r.windows.length,
                }
                for k in _METRICS:
                    v = o[k]
                    row[k] = int(v) if k == "backfilled" else float(v)
                for k in _AGENT_COUNTERS:
                    row[k] = o[k]
                rows.append(row)
                js.append(o["job_start"])
                timings[m.label].append(float(o["seconds"]))
            job_start[m.label] = np.stack(js)
        wl = r.workload
        submit = np.stack([wl.submit[s : s + r.windows.length] for s in r.windows.starts])
        runtime = np.stack([wl.runtime[s : s + r.windows.length] for s in r.windows.starts])
        results.append(
            EvalResult(
                trace=wl.name,
                jobs=len(wl),
                machine_size=int(wl.machine_size),
                windows=r.windows,
                methods=[m for _, m in kept],
                rows=rows,
                job_start=job_start,
                submit=submit,
                runtime=runtime,
                skipped=skipped,
                timings=timings,
                reference=r.reference,
            )
        )
    return results


# =========================================================================== writers
def _fmt(v: Any, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:,.{digits}f}".replace(",", "")
    return str(v)


def _csv_text(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow(
            [
                "" if r.get(c) is None else (repr(r[c]) if isinstance(r[c], float) else r[c])
                for c in columns
            ]
        )
    return buf.getvalue()


def _windows_caption(w: WindowSet) -> str:
    if w.how == "full":
        what = f"the whole {w.split!r} range as one window ({w.length} jobs from job {w.starts[0]})"
    else:
        how = {
            "sampled": f"drawn from the {w.split!r} split with seed {w.seed}",
            "evenly": f"evenly spaced in the {w.split!r} split",
            "explicit": "given starts",
        }[w.how]
        what = f"{len(w.starts)} windows of {w.length} jobs, {how}"
    if w.prefix:
        what += f", first {w.prefix} jobs of the trace only"
    return what


def markdown_table(result: EvalResult) -> str:
    """The Markdown report of one evaluation (``table.md``)."""
    w = result.windows
    what = _windows_caption(w)
    lines = [
        f"# {result.trace}: {what}",
        "",
        f"Trace {result.trace}: {result.jobs} jobs, {result.machine_size} processors. "
        "AVEbsld = mean bounded slowdown (tau = 10 s); wait in seconds. Every method "
        "schedules exactly the same windows from an empty machine.",
        "",
    ]
    summ = result.summary()
    has_paper = any(s["paper_table4"] is not None for s in summ)
    ref = result.reference if result.reference in result.labels else None
    head = ["method", "kind", "mean AVEbsld", "median", "min", "max", "mean wait (s)"]
    if ref:
        head.append(f"vs {ref}")
    if has_paper:
        head.append("paper (Table 4)")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|---|" + "---:|" * (len(head) - 2))
    for s in summ:
        cells = [
            s["method"],
            s["kind"],
            _fmt(s["mean_avg_bsld"]),
            _fmt(s["median_avg_bsld"]),
            _fmt(s["min_avg_bsld"]),
            _fmt(s["max_avg_bsld"]),
            _fmt(s["mean_avg_wait"], 0),
        ]
        if ref:
            v = s["vs_reference_pct"]
            cells.append("—" if v is None else f"{v:+.1f}%")
        if has_paper:
            cells.append(_fmt(s["paper_table4"]))
        lines.append("| " + " | ".join(cells) + " |")
    if ref:
        lines += ["", f"`vs {ref}`: relative AVEbsld improvement over {ref} (positive = better)."]
    if has_paper:
        lines += [
            "",
            "Paper: RLBackfilling Table 4 (10 random 1024-job sequences of the first 10K jobs; "
            "our windows differ, so only the magnitudes are comparable).",
        ]
    for metric, title, digits in (
        ("avg_bsld", "AVEbsld per window", 2),
        ("avg_wait", "Mean wait (s) per window", 0),
    ):
        pw = result.per_window(metric)
        lines += ["", f"## {title}", ""]
        lines.append("| window | start | " + " | ".join(result.labels) + " |")
        lines.append("|---:|---:|" + "---:|" * len(result.labels))
        for wi, s in enumerate(w.starts):
            lines.append(
                f"| {wi} | {s} | "
                + " | ".join(_fmt(pw[lab][wi], digits) for lab in result.labels)
                + " |"
            )
        lines.append(
            "| mean | | "
            + " | ".join(_fmt(float(np.mean(pw[lab])), digits) for lab in result.labels)
            + " |"
        )
    agents = [m for m in result.methods if m.kind == "agent"]
    if agents:
        lines += ["", "## Agents", ""]
        lines.append("| agent | model / heuristic | env | decisions | violations | overflow |")
        lines.append("|---|---|---|---:|---:|---:|")
        for m in agents:
            rs = [r for r in result.rows if r["method"] == m.label]
            env = ", ".join(f"{k}={v}" for k, v in sorted(m.env.items()) if v is not None)
            what_ = m.spec if m.spec in AGENT_HEURISTICS else Path(m.spec).name
            lines.append(
                f"| {m.label} | {what_} | {env} | {sum(r['decisions'] for r in rs)} | "
                f"{sum(r['violations'] for r in rs)} | {sum(r['overflow_decisions'] for r in rs)} |"
            )
    if result.skipped:
        lines += ["", "## Skipped", ""]
        for k, v in result.skipped.items():
            lines.append(f"* {k}: {v}")
    lines += ["", "Replay: `" + result.replay_command() + "`", ""]
    return "\n".join(lines)


def write_outputs(
    result: EvalResult,
    out_dir: str | os.PathLike[str],
    *,
    plots: bool = True,
    per_job: bool = True,
) -> dict[str, Path]:
    """Write ``table.md``, ``summary.csv``, ``windows.csv``, ``results.json``,
    ``timing.json``, ``per_job.npz`` and (``plots``) ``bsld_boxplot.png`` and
    ``bsld_cdf.png`` into ``out_dir``.

    :return: name -> path of every written file
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}

    def put(name: str, text: str) -> None:
        p = out / name
        p.write_text(text, encoding="utf-8")
        paths[name] = p

    put("table.md", markdown_table(result))
    put("summary.csv", _csv_text(result.summary(), SUMMARY_COLUMNS))
    put("windows.csv", _csv_text(result.rows, WINDOW_COLUMNS))
    put("results.json", json.dumps(result.to_dict(), indent=2) + "\n")
    put(
        "timing.json",
        json.dumps(
            {
                lab: {"total_s": float(np.sum(t)), "per_window_s": t}
                for lab, t in result.timings.items()
            },
            indent=2,
        )
        + "\n",
    )
    if per_job and result.methods:
        arrays: dict[str, np.ndarray] = {
            "labels": np.array(result.labels),
            "starts": np.array(result.windows.starts, dtype=np.int64),
            "submit": result.submit,
            "runtime": result.runtime,
        }
        for i, lab in enumerate(result.labels):
            arrays[f"start_{i}"] = result.job_start[lab]
            arrays[f"bsld_{i}"] = result.job_bsld(lab)
        p = out / "per_job.npz"
        np.savez_compressed(p, **arrays)
        paths["per_job.npz"] = p
    if plots and result.methods:
        from hpcgym import plots as P

        title = f"{result.trace}: {_windows_caption(result.windows)}"
        paths["bsld_boxplot.png"] = P.plot_window_boxplot(
            result.per_window("avg_bsld"), out / "bsld_boxplot.png", title=title
        )
        paths["bsld_cdf.png"] = P.plot_slowdown_cdf(
            {lab: result.job_bsld(lab) for lab in result.labels}, out / "bsld_cdf.png", title=title
        )
    return paths


def _tb_tag(name: str) -> str:
    return "".join(c if (c.isalnum() or c in "-_.+") else "_" for c in name)


def write_tensorboard(
    results: EvalResult | Sequence[EvalResult],
    tb_dir: str | os.PathLike[str],
    step: int | None = None,
    prefix: str = "evaluation",
) -> Path:
    """Write the evaluation scalars as TensorBoard events into ``tb_dir`` (e.g. a
    ``train/ppo.py`` run folder), so agents and baselines sit side by side in the UI.

    Tags, per trace ``T`` and method ``M``: ``<prefix>/T/avg_bsld/M`` and
    ``<prefix>/T/avg_wait/M`` (mean over the windows) at ``step``;
    ``<prefix>_windows/T/avg_bsld/M`` at step = window index; a Custom Scalars chart per
    trace with every method's AVEbsld; the Markdown table as text ``<prefix>/T/table``.

    :param step: global step of the scalars (default: the timesteps of the evaluated
        model if exactly one has them in its card, else 0)
    :return: ``tb_dir``
    """
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "--tb-dir needs torch and tensorboard (pip install -e '.[train]')"
        ) from exc
    res_list = [results] if isinstance(results, EvalResult) else list(results)
    if step is None:
        steps = {m.steps for r in res_list for m in r.methods if m.steps is not None}
        step = steps.pop() if len(steps) == 1 else 0
    d = Path(tb_dir)
    d.mkdir(parents=True, exist_ok=True)
    w = SummaryWriter(log_dir=str(d))
    layout: dict[str, dict[str, list[Any]]] = {}
    try:
        for r in res_list:
            t = _tb_tag(r.trace if r.tag is None else f"{r.trace}_{r.tag}")
            for metric in ("avg_bsld", "avg_wait"):
                for lab, vals in r.per_window(metric).items():
                    w.add_scalar(
                        f"{prefix}/{t}/{metric}/{_tb_tag(lab)}", float(np.mean(vals)), step
                    )
                    if metric == "avg_bsld":
                        for wi, v in enumerate(vals):
                            w.add_scalar(f"{prefix}_windows/{t}/{metric}/{_tb_tag(lab)}", v, wi)
            w.add_text(f"{prefix}/{t}/table", markdown_table(r), step)
            layout[f"{prefix} {t}"] = {
                "AVEbsld per window (x = window index)": [
                    "Multiline",
                    [f"{prefix}_windows/{t}/avg_bsld/.*"],
                ],
                "mean AVEbsld": ["Multiline", [f"{prefix}/{t}/avg_bsld/.*"]],
            }
        w.add_custom_scalars(layout)
    finally:
        w.close()
    return d


# =========================================================================== paper tables
@dataclass
class TableSection:
    """One block of a paper table: rows = traces, columns = methods.

    ``ours[row][col]`` = mean AVEbsld over the windows (``None``: not available),
    ``wait`` the mean wait, ``paper`` the published value (``None``: not published).
    """

    title: str
    rows: list[str]
    columns: list[str]
    ours: dict[str, dict[str, float | None]]
    wait: dict[str, dict[str, float | None]]
    paper: dict[str, dict[str, float | None]]
    sources: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class PaperTable:
    """A reproduced paper table (Table 4 or 5) with its notes and protocol."""

    name: str
    caption: str
    sections: list[TableSection]
    notes: list[str]
    protocol: dict[str, Any]
    windows: dict[str, list[int]]
    results: list[EvalResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": TABLE_SCHEMA,
            "name": self.name,
            "caption": self.caption,
            "protocol": self.protocol,
            "windows": self.windows,
            "sections": [
                {
                    "title": s.title,
                    "rows": s.rows,
                    "columns": s.columns,
                    "ours": s.ours,
                    "mean_wait": s.wait,
                    "paper": s.paper,
                    "sources": s.sources,
                }
                for s in self.sections
            ],
            "notes": self.notes,
        }

    def markdown(self, heading: str = "#") -> str:
        """Markdown: per section, one row per trace for ours and one for the paper."""
        lines = [f"{heading} {self.caption}", ""]
        p = self.protocol
        drawn = f"sampled with seed {p['seed']}" if p.get("seed") is not None else "evenly spaced"
        lines.append(
            f"hpcgym: mean AVEbsld over {p['windows']} windows of {p['length']} jobs per trace, "
            f"{drawn} in the {p['split']!r} split (train_fraction {p['train_fraction']})"
            + (f", first {p['prefix']} jobs" if p.get("prefix") else "")
            + "; the same windows for every column of a trace. Paper: RLBackfilling (paper 004) "
            "— 10 random 1024-job sequences of the first 10K jobs of each trace. "
            "— = not available / not reported."
        )
        for s in self.sections:
            if s.title:
                lines += ["", f"{heading}# {s.title}"]
            lines += ["", "| trace | | " + " | ".join(s.columns) + " |"]
            lines.append("|---|---|" + "---:|" * len(s.columns))
            for row in s.rows:
                lines.append(
                    f"| {row} | hpcgym | "
                    + " | ".join(_fmt(s.ours[row].get(c)) for c in s.columns)
                    + " |"
                )
                if any(v is not None for v in s.paper.get(row, {}).values()):
                    lines.append(
                        "| | paper | "
                        + " | ".join(_fmt(s.paper.get(row, {}).get(c)) for c in s.columns)
                        + " |"
                    )
            lines += ["", "Mean wait (s), hpcgym:", ""]
            lines.append("| trace | " + " | ".join(s.columns) + " |")
            lines.append("|---|" + "---:|" * len(s.columns))
            for row in s.rows:
                lines.append(
                    f"| {row} | "
                    + " | ".join(_fmt(s.wait[row].get(c), 0) for c in s.columns)
                    + " |"
                )
        if self.notes:
            lines += ["", "Notes:", ""]
            lines += [f"* {n}" for n in self.notes]
        if self.windows:
            lines += ["", "Window starts (replay with `eval/compare.py --starts`):", ""]
            for t, st in self.windows.items():
                lines.append(f"* {t}: {' '.join(map(str, st))}")
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        rows = []
        for s in self.sections:
            for r in s.rows:
                for c in s.columns:
                    rows.append(
                        {
                            "section": s.title,
                            "trace": r,
                            "column": c,
                            "avg_bsld": s.ours[r].get(c),
                            "mean_wait": s.wait[r].get(c),
                            "paper": s.paper.get(r, {}).get(c),
                            "method": s.sources.get(r, {}).get(c),
                        }
                    )
        return _csv_text(
            rows, ("section", "trace", "column", "avg_bsld", "mean_wait", "paper", "method")
        )


def write_table(
    table: PaperTable,
    out_dir: str | os.PathLike[str],
    *,
    plots: bool = True,
    per_trace: bool = True,
) -> dict[str, Path]:
    """Write ``<name>.md``, ``<name>.csv``, ``<name>.json`` and, with ``per_trace``, the
    full evaluation outputs of every trace into ``out_dir/<trace>/`` (table, CSV, JSON,
    plots). The paper table's figure ``<name>.png`` too (``plots``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext, text in (
        ("md", table.markdown()),
        ("csv", table.csv()),
        ("json", json.dumps(table.to_dict(), indent=2) + "\n"),
    ):
        p = out / f"{table.name}.{ext}"
        p.write_text(text, encoding="utf-8")
        paths[p.name] = p
    if per_trace:
        for r in table.results:
            name = r.trace if r.tag is None else f"{r.trace}_{r.tag}"
            sub = out / _tb_tag(name)
            for k, v in write_outputs(r, sub, plots=plots).items():
                paths[f"{sub.name}/{k}"] = v
    if plots:
        from hpcgym import plots as P

        p = P.plot_paper_table(table.to_dict(), out / f"{table.name}.png")
        paths[p.name] = p
    return paths


def _trace_available(name: str) -> tuple[Workload | None, str | None]:
    from hpcgym.workload import load

    try:
        return load(name), None
    except Exception as exc:  # missing trace: a note, not a crash
        return None, f"{type(exc).__name__}: {exc}"


def _cards_by(cards: Sequence[ModelCard], notes: list[str]) -> dict[tuple[str, str], ModelCard]:
    """(canonical trace, policy) -> card; duplicates: the first by name, noted."""
    out: dict[tuple[str, str], ModelCard] = {}
    for c in sorted(cards, key=lambda c: c.name):
        key = (c.trace, c.policy.upper())
        if key in out:
            notes.append(
                f"several agents for {key[0]} / {key[1]}: using {out[key].name}, ignoring {c.name}"
            )
            continue
        out[key] = c
    return out


def table4(
    cards: Sequence[ModelCard],
    *,
    traces: Sequence[str] = TABLE4_TRACES,
    extra: Sequence[str] = EXTRA_SCHEDULERS,
    windows: int = PAPER_WINDOWS,
    length: int = PAPER_LENGTH,
    split: str = "test",
    seed: int | None = 1,
    train_fraction: float = 0.7,
    prefix: int | None = None,
    scales: str = "target",
    jobs: int | None = None,
    progress: bool = True,
) -> PaperTable:
    """RLBackfilling Table 4: rows = traces, columns = :data:`TABLE4_COLUMNS` + ``extra``.

    ``FCFS+RLBF`` / ``SJF+RLBF`` use the card (``cards``) trained on that trace with that
    base policy, if any (else ``—`` and a note). Unknown or failing schedulers (e.g.
    ``EASY-HMM`` before it is wired) and unavailable traces give ``—`` and a note. All
    columns of a trace run on the same windows (:func:`select_windows`).
    """
    notes: list[str] = []
    by = _cards_by(cards, notes)
    columns = list(TABLE4_COLUMNS) + [e for e in extra if e not in TABLE4_COLUMNS]
    requests = []
    colmap: dict[str, dict[str, str]] = {}
    rows: list[str] = []
    missing: list[str] = []
    req_rows: list[str] = []
    win: dict[str, list[int]] = {}
    for t in traces:
        name = _canonical_trace(t)
        rows.append(name)
        wl, err = _trace_available(t)
        if wl is None:
            notes.append(f"{name}: trace not available ({err}); its row is empty")
            continue
        ws = select_windows(len(wl), length, windows, split, seed, train_fraction, prefix=prefix)
        win[name] = list(ws.starts)
        methods: list[Method] = []
        cmap: dict[str, str] = {}
        for col in columns:
            if col.endswith("+RLBF"):
                pol = col.split("+")[0]
                card = by.get((name, pol))
                if card is None:
                    missing.append(f"{name} {col}")
                    continue
                methods.append(card_method(card, col, scales))
                cmap[col] = f"agent {card.name}"
                continue
            spec = col[5:] if col.startswith("FCFS+") else col
            try:
                methods.append(scheduler_method(spec, label=col))
                cmap[col] = spec
            except MethodUnavailable as exc:
                notes.append(f"{col}: unavailable scheduler ({str(exc).split(';')[0]})")
        colmap[name] = cmap
        requests.append((wl, methods, ws))
        req_rows.append(name)
    if missing:
        notes.insert(
            0,
            "RLBF cells without a shipped agent (a model card with that trace and base policy): "
            + ", ".join(missing),
        )
    results = evaluate_many(
        requests, jobs=jobs, progress=progress, skip_unavailable=True, reference="FCFS+EASY"
    )
    ours: dict[str, dict[str, float | None]] = {r: {} for r in rows}
    wait: dict[str, dict[str, float | None]] = {r: {} for r in rows}
    for name, (wl, _m, _w), res in zip(req_rows, requests, results, strict=True):
        for lab in res.labels:
            ours[name][lab] = res.mean(lab)
            wait[name][lab] = res.mean(lab, "avg_wait")
        for lab, why in res.skipped.items():
            notes.append(f"{name} {lab}: skipped ({why})")
        if np.array_equal(wl.request, wl.runtime):
            notes.append(
                f"{name}: every request equals the runtime (synthetic trace), so EASY and "
                "EASY-AR are the same schedule; the paper reports one of them"
            )
    paper = {r: dict(PAPER_TABLE4.get(r, {})) for r in rows}
    section = TableSection("", rows, columns, ours, wait, paper, colmap)
    return PaperTable(
        name="table4",
        caption="Table 4: AVEbsld of RLBackfilling and the heuristics (same trace)",
        sections=[section],
        notes=_dedupe(notes),
        protocol=_protocol(windows, length, split, seed, train_fraction, prefix, scales),
        windows=win,
        results=results,
    )


def table5(
    cards: Sequence[ModelCard],
    *,
    traces: Sequence[str] = TABLE4_TRACES,
    policies: Sequence[str] = ("FCFS", "SJF"),
    windows: int = PAPER_WINDOWS,
    length: int = PAPER_LENGTH,
    split: str = "test",
    seed: int | None = 1,
    train_fraction: float = 0.7,
    prefix: int | None = None,
    scales: str = "target",
    agent_traces: bool = True,
    jobs: int | None = None,
    progress: bool = True,
) -> PaperTable:
    """RLBackfilling Table 5 (generality): for every base policy, rows = evaluated traces
    Y, columns = ``EASY``, ``EASY-AR`` (with that base policy) and ``RL-X`` for every
    shipped agent trained on trace X with that policy, applied to Y on Y's windows.

    :param agent_traces: also add the agents' training traces that are not in ``traces``
        as rows (every agent on every trace)
    """
    notes: list[str] = []
    by = _cards_by(cards, notes)
    traces = list(traces)
    rows = [_canonical_trace(t) for t in traces]
    if agent_traces:  # every pair: the agents' own traces are rows too
        for c in sorted(cards, key=lambda c: c.name):
            if c.trace not in rows and c.policy.upper() in {p.upper() for p in policies}:
                rows.append(c.trace)
                traces.append(c.trace)
    loaded: dict[str, Workload] = {}
    win: dict[str, list[int]] = {}
    wsets: dict[str, WindowSet] = {}
    for t, name in zip(traces, rows, strict=True):
        wl, err = _trace_available(t)
        if wl is None:
            notes.append(f"{name}: trace not available ({err}); its rows are empty")
            continue
        loaded[name] = wl
        ws = select_windows(len(wl), length, windows, split, seed, train_fraction, prefix=prefix)
        wsets[name] = ws
        win[name] = list(ws.starts)
    requests = []
    meta: list[tuple[str, str]] = []  # (policy, trace) per request
    sections_cols: dict[str, list[str]] = {}
    sources: dict[str, dict[str, dict[str, str]]] = {}
    order = {n: i for i, n in enumerate(rows)}
    for pol in policies:
        pol = pol.upper()
        agent_traces = sorted(
            (tr for (tr, p) in by if p == pol), key=lambda x: (order.get(x, len(order)), x)
        )
        if not agent_traces:
            notes.append(f"{pol}: no shipped agent with the {pol} base policy")
        cols = ["EASY", "EASY-AR"] + [f"RL-{x}" for x in agent_traces]
        sections_cols[pol] = cols
        sources[pol] = {}
        for name in rows:
            if name not in loaded:
                continue
            methods = [
                scheduler_method("EASY" if pol == "FCFS" else f"{pol}+EASY", label="EASY"),
                scheduler_method("EASY-AR" if pol == "FCFS" else f"{pol}+EASY-AR", label="EASY-AR"),
            ]
            src = {"EASY": methods[0].spec, "EASY-AR": methods[1].spec}
            for x in agent_traces:
                card = by[(x, pol)]
                methods.append(card_method(card, f"RL-{x}", scales))
                src[f"RL-{x}"] = f"agent {card.name}"
            sources[pol][name] = src
            requests.append((loaded[name], methods, wsets[name]))
            meta.append((pol, name))
    results = evaluate_many(
        requests, jobs=jobs, progress=progress, skip_unavailable=True, reference="EASY"
    )
    sections = []
    for pol in [p.upper() for p in policies]:
        ours: dict[str, dict[str, float | None]] = {r: {} for r in rows}
        wait: dict[str, dict[str, float | None]] = {r: {} for r in rows}
        for (p, name), res in zip(meta, results, strict=True):
            if p != pol:
                continue
            res.tag = pol
            for lab in res.labels:
                ours[name][lab] = res.mean(lab)
                wait[name][lab] = res.mean(lab, "avg_wait")
            for lab, why in res.skipped.items():
                notes.append(f"{pol} {name} {lab}: skipped ({why})")
        paper = {r: dict(PAPER_TABLE5.get(pol, {}).get(r, {})) for r in rows}
        sections.append(
            TableSection(
                f"{pol} as the base scheduling policy",
                rows,
                sections_cols[pol],
                ours,
                wait,
                paper,
                sources[pol],
            )
        )
    for name, wl in loaded.items():
        if np.array_equal(wl.request, wl.runtime):
            notes.append(
                f"{name}: requests equal runtimes (synthetic), EASY = EASY-AR; the paper "
                "prints the value under EASY-AR"
            )
    return PaperTable(
        name="table5",
        caption="Table 5: agents trained on trace X (RL-X) applied to trace Y (rows)",
        sections=sections,
        notes=_dedupe(notes),
        protocol=_protocol(windows, length, split, seed, train_fraction, prefix, scales),
        windows=win,
        results=results,
    )


def _protocol(
    windows: int,
    length: int,
    split: str,
    seed: int | None,
    train_fraction: float,
    prefix: int | None,
    scales: str,
) -> dict[str, Any]:
    return {
        "windows": windows,
        "length": length,
        "split": split,
        "seed": seed,
        "train_fraction": train_fraction,
        "prefix": prefix,
        "scales": scales,
        "engine_seed": 0,
        "env_seed": 0,
    }


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


# =========================================================================== noise sweep
#: RLBackfilling Fig. 1 noise levels and policies.
NOISE_LEVELS: tuple[float, ...] = (0.0, 0.05, 0.10, 0.20, 0.40, 1.00)
NOISE_POLICIES: tuple[str, ...] = ("FCFS", "WFP3", "SJF", "F1")


def _noise_task(task: tuple[str, str, int]) -> float:
    """(policy, level key, seed) on the context's workload -> AVEbsld."""
    from hpcgym.predictors import make_estimator
    from hpcgym.sim import Simulation

    pol, lev, seed = task
    wl = _CTX["traces"]["noise"]
    if lev == "request":
        res = Simulation(wl, policy=pol, backfill="easy").run()
    else:
        level = float(lev)
        est = make_estimator("actual") if level == 0 else make_estimator("noisy", level=level)
        res = Simulation(wl, policy=pol, backfill="easy", estimate=est, seed=seed).run()
    return float(res.metrics["avg_bsld"])


def noise_sweep(
    trace: str | os.PathLike[str] | Workload | None,
    policies: Sequence[str] = NOISE_POLICIES,
    levels: Sequence[float] = NOISE_LEVELS,
    seeds: Sequence[int] = (0, 1, 2),
    first_jobs: int | None = None,
    *,
    jobs: int | None = None,
    progress: bool = True,
) -> dict[str, dict[str, float]]:
    """RLBackfilling Fig. 1: AVEbsld of ``POLICY+EASY`` on the whole trace (or its first
    ``first_jobs`` jobs) with runtime estimates ``actual x (1 + U[0, L))`` capped at the
    request (predictor ``noisy``), mean over ``seeds`` (L = 0: the clairvoyant EASY-AR, one
    run), plus ``request`` (plain EASY with user requests).

    :return: ``{policy: {f"{L:g}": AVEbsld, ..., "request": AVEbsld}}``
    """
    wl = _as_workload(trace)
    if first_jobs:
        wl = wl.window(0, int(first_jobs))
    tasks: list[tuple[str, str, int]] = []
    for pol in policies:
        for lev in levels:
            for seed in seeds if lev > 0 else list(seeds)[:1]:
                tasks.append((pol, f"{lev:g}", int(seed)))
        tasks.append((pol, "request", 0))
    vals = parallel_map(
        _noise_task,
        tasks,
        jobs=jobs,
        progress=progress,
        desc="noise sweep",
        context={"traces": {"noise": wl}},
    )
    acc: dict[str, dict[str, list[float]]] = {}
    for (pol, lev, _seed), v in zip(tasks, vals, strict=True):
        acc.setdefault(pol, {}).setdefault(lev, []).append(v)
    return {pol: {lev: float(np.mean(v)) for lev, v in row.items()} for pol, row in acc.items()}


def noise_markdown(
    res: dict[str, dict[str, float]], trace: str, levels: Sequence[float], seeds: Sequence[int]
) -> str:
    """The Markdown table of :func:`noise_sweep` (``noise_sweep.md``)."""
    cols = [f"{lev:g}" for lev in levels] + ["request"]
    lines = [
        f"AVEbsld, {trace}, EASY backfilling, estimate = actual x (1 + U[0, L)), "
        f"mean of seeds {list(seeds)}",
        "",
        "| policy | "
        + " | ".join(("L=" + c if c != "request" else "user request") for c in cols)
        + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for pol, row in res.items():
        lines.append(f"| {pol} | " + " | ".join(f"{row[c]:.1f}" for c in cols) + " |")
    return "\n".join(lines)


# =========================================================================== results.md
def results_markdown(
    *,
    table4_json: str | os.PathLike[str] | None = None,
    table5_json: str | os.PathLike[str] | None = None,
    compare_json: Sequence[str | os.PathLike[str]] = (),
    noise_json: str | os.PathLike[str] | None = None,
    figures: dict[str, str] | None = None,
    title: str = "Results",
    base: str | os.PathLike[str] = ".",
    copy_figures: str | os.PathLike[str] | None = None,
) -> str:
    """The Markdown of ``docs/results.md`` from the JSON outputs of ``eval/table4.py``,
    ``eval/table5.py``, ``eval/compare.py`` and ``eval/noise_sweep.py``.

    :param figures: caption -> image path, embedded at the end
    :param base: folder the Markdown will live in (image links are made relative to it)
    :param copy_figures: copy the tables' and comparisons' PNGs into this folder (named
        ``<table>.png`` / ``compare_<trace>_<figure>.png``) and link the copies
    """
    base_p = Path(base).resolve()

    def rel(p: str | os.PathLike[str], name: str | None = None) -> str:
        src = Path(p)
        if copy_figures is not None and name is not None:
            dst = Path(copy_figures) / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.resolve() != dst.resolve():
                shutil.copyfile(src, dst)
            src = dst
        try:
            return os.path.relpath(src.resolve(), base_p)
        except ValueError:  # pragma: no cover - other drive on Windows
            return str(src)

    out = [f"# {title}", ""]
    out.append(
        "Generated by `python eval/results.py` from the JSON outputs of the evaluation "
        "commands (docs/evaluation.md); do not edit the tables by hand."
    )
    for label, path in (("4", table4_json), ("5", table5_json)):
        if path is None:
            continue
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        table = _table_from_dict(data)
        out += ["", table.markdown(heading="##").rstrip()]
        png = Path(path).with_suffix(".png")
        if png.is_file():
            out += ["", f"![Table {label}]({rel(png, png.name)})"]
    for cj in compare_json:
        data = json.loads(Path(cj).read_text(encoding="utf-8"))
        out += ["", f"## Comparison on {data['trace']}", ""]
        w = data["windows"]
        out.append(
            f"{len(w['starts'])} window(s) of {w['length']} jobs ({w['how']}, split "
            f"{w['split']!r}, seed {w['seed']}). Replay: `{data['replay']}`"
        )
        out += [
            "",
            "| method | kind | mean AVEbsld | median | mean wait (s) |",
            "|---|---|---:|---:|---:|",
        ]
        for s in data["summary"]:
            out.append(
                f"| {s['method']} | {s['kind']} | {_fmt(s['mean_avg_bsld'])} | "
                f"{_fmt(s['median_avg_bsld'])} | {_fmt(s['mean_avg_wait'], 0)} |"
            )
        for png in ("bsld_boxplot.png", "bsld_cdf.png"):
            p = Path(cj).parent / png
            if p.is_file():
                name = f"compare_{_tb_tag(data['trace'])}_{png}"
                out += ["", f"![{data['trace']} {png[:-4]}]({rel(p, name)})"]
    if noise_json is not None:
        data = json.loads(Path(noise_json).read_text(encoding="utf-8"))
        res = data["avg_bsld"]
        levels = [float(k) for k in next(iter(res.values())) if k != "request"]
        out += ["", "## Noisy runtime predictions (RLBackfilling Fig. 1)", ""]
        out.append(noise_markdown(res, data["trace"], levels, data["seeds"]))
        png = Path(noise_json).with_suffix(".png")
        if png.is_file():
            out += ["", f"![noise sweep]({rel(png, png.name)})"]
    for cap, p in (figures or {}).items():
        out += ["", f"## {cap}", "", f"![{cap}]({rel(p)})"]
    return "\n".join(out) + "\n"


def _table_from_dict(data: dict[str, Any]) -> PaperTable:
    if data.get("schema") != TABLE_SCHEMA:
        raise ValueError(f"not an hpcgym paper table JSON (schema {data.get('schema')!r})")
    sections = [
        TableSection(
            s["title"],
            s["rows"],
            s["columns"],
            s["ours"],
            s["mean_wait"],
            s["paper"],
            s.get("sources", {}),
        )
        for s in data["sections"]
    ]
    return PaperTable(
        name=data["name"],
        caption=data["caption"],
        sections=sections,
        notes=data["notes"],
        protocol=data["protocol"],
        windows=data["windows"],
    )
