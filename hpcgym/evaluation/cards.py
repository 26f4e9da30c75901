"""Trained-agent model cards (schema ``hpcgym-model-card/1``): read, write, find, and
build one from a ``train/ppo.py`` run folder (:func:`card_from_run`, :func:`ship_model`).

A card says how an agent's env was built (trace, base policy, mode, max_queue,
estimator...), so evaluation can rebuild it; see docs/evaluation.md, "Model cards".
"""

from __future__ import annotations

import json
import math
import os
import shutil
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.card_text import OPTION_KEYS, card_markdown
from hpcgym.evaluation.gating import read_gate
from hpcgym.evaluation.loaders import default_agents_dir
from hpcgym.tasks import card_task
from hpcgym.workload.sequences import VALIDATION_FRACTION

__all__ = [
    "CARD_ENV_KEYS",
    "MODEL_CARD_SCHEMA",
    "SEARCH_FILE",
    "SEEDS_FILE",
    "SELECTION_FILE",
    "ModelCard",
    "canonical_trace",
    "card_from_run",
    "card_markdown",
    "find_model_cards",
    "is_model_card",
    "load_cards",
    "load_model_card",
    "read_evaluations",
    "run_dir_of",
    "ship_model",
    "validation_curve",
]

#: Model-card schema identifier (see docs/evaluation.md).
MODEL_CARD_SCHEMA = "hpcgym-model-card/1"

#: The file of a ``train/ppo.py --seeds`` run, next to its ``seed-<s>`` run folders.
SEEDS_FILE = "seeds.json"

#: The checkpoint choice on validation windows in a run (or seeds run) folder
#: (:mod:`hpcgym.evaluation.selection`).
SELECTION_FILE = "selection.json"

#: The result of a ``train/search.py`` search, next to the ``run`` folder it ships.
SEARCH_FILE = "search.json"

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
    "features",
    "time_scale",
    "objective",
    "rank_estimator",
    "rows",
    "row_predictor",
    "row_history",
)


def canonical_trace(name: str | None) -> str:
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
        read_gate(data, where)  # a gated agent's card: its gate section is checked now
        env = {k: data[k] for k in CARD_ENV_KEYS if data.get(k) is not None}
        env["policy"] = str(data["policy"]).upper()
        env["mode"] = str(data["mode"]).lower()
        env = card_task(data).card_env(env, data)  # the arguments its task's env takes

        def num(key: str) -> float | None:
            v = data.get(key)
            return None if v is None else float(v)

        steps = data.get("steps")
        return cls(
            name=name,
            model=mpath,
            trace=canonical_trace(str(data["trace"])),
            policy=str(data["policy"]).upper(),
            mode=str(data["mode"]).lower(),
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


def run_dir_of(model: Path) -> Path | None:
    """The ``train/ppo.py`` run folder holding ``model`` (``config.json`` next to it or
    one level up, for ``checkpoints/*.zip``), if any."""
    for d in (model.parent, model.parent.parent):
        if (d / "config.json").is_file():
            return d
    return None


def zip_timesteps(path: Path) -> int | None:
    """``num_timesteps`` stored in an SB3 model ``.zip`` (its ``data`` JSON), or ``None``."""
    try:
        with zipfile.ZipFile(path) as z:
            value = json.loads(z.read("data")).get("num_timesteps")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    return int(value) if isinstance(value, int | float) else None


def _env_free(reference: Any) -> Any:
    """``NAME`` for ``ENV+NAME`` (:data:`hpcgym.envs.reward.ENV_PREFIX`), else as given."""
    if isinstance(reference, str) and reference[:4].upper() == "ENV+":
        return reference[4:]
    return reference


def _task_keys(cfg: dict[str, Any]) -> dict[str, Any]:
    """``policy`` and ``mode`` of a run's card; a Schedule-v0 run adds ``task`` and writes
    its row order as ``policy`` (mode ``schedule``)."""
    return card_task(cfg).card_keys(cfg, canonical_trace(cfg.get("trace")))


def card_from_run(
    run: str | os.PathLike[str],
    model: str = "best",
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ModelCard:
    """A model card for a ``train/ppo.py`` run folder (``config.json``, ``summary.json``,
    ``best_model.json``), or for a ``.zip`` inside one.

    :param run: the run folder, or a model ``.zip`` in it (``checkpoints/`` too), or a
        ``--seeds`` run's folder with ``model="selected"`` (the choice across its seeds)
    :param model: ``best`` (``best_model.zip``, default; falls back to ``final``),
        ``final`` (``final_model.zip``), ``selected`` (the choice of ``eval/select_checkpoint.py``
        on validation windows, :mod:`hpcgym.evaluation.selection`; copied into the card as
        ``selection``) or a ``.zip`` path; ignored when ``run`` is a zip
    :param name: card name (default: the run folder's name)
    :param meta: keys the caller knows and hpcgym does not, written after ``algorithm``
        (e.g. the import path of the agent's policy class as ``policy_class``)
    """
    p = Path(run)
    selection: dict[str, Any] | None = None
    if p.suffix == ".zip":
        zpath = p
        rdir = run_dir_of(p)
        if rdir is None:
            raise FileNotFoundError(f"{p}: no config.json of a train/ppo.py run next to it")
    elif not (p / "config.json").is_file() and (p / SEEDS_FILE).is_file():
        # a --seeds run: only its choice across seeds (eval/select_checkpoint.py ROOT)
        if model != "selected":
            raise FileNotFoundError(
                f"{p} is a seeds run: give one of its seed-<s> folders, or choose across "
                f"the seeds with `python eval/select_checkpoint.py {p}` and ship "
                "--model selected"
            )
        from hpcgym.evaluation.selection import load_selection

        selection = load_selection(p)
        zpath = Path(selection["chosen_path"])
        found = run_dir_of(zpath)
        if found is None:
            raise FileNotFoundError(f"{zpath}: chosen in {p}, not inside one of its seeds")
        rdir = found
        name = name or p.name
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
        elif model == "selected":  # eval/select_checkpoint.py's choice on validation windows
            from hpcgym.evaluation.selection import load_selection

            selection = load_selection(rdir)
            zpath = Path(selection["chosen_path"])
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
        **(meta or {}),
        "trace": cfg.get("trace", "synthetic"),
        "split": "train",
        "train_fraction": cfg.get("train_fraction", 0.7),
        "validation_fraction": cfg.get("validation_fraction", VALIDATION_FRACTION),
        **_task_keys(cfg),
        # the reward's reference; ENV+NAME (the env's own queue) is stored as NAME, which
        # readers play with the card's policy
        "normalizer": _env_free(cfg.get("reference", cfg.get("normalizer"))),
        "objective": cfg.get("objective", "bsld"),
        "estimator": cfg.get("estimator", "request"),
        **{
            k: cfg[k]
            for k in (
                *OPTION_KEYS,
                "rank_estimator",  # the run time the queue order ranks by
                "load_weighting",  # training windows only
                "mix_traces",  # more training traces (a trace mix)
            )
            if cfg.get(k)
        },
        "max_queue": cfg.get("max_queue", 128),
        "sequence_length": cfg.get("length", cfg.get("seq_len")),  # training window length
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
    else:  # a checkpoint: its step count is in the model file (no second copy of the naming)
        data["steps"] = zip_timesteps(zpath)
    if summary:
        data.setdefault("eval", {})
        ev = summary.get("eval", {})
        paired = (ev.get("best") or {}).get("paired") if zpath.name == "best_model.zip" else None
        paired = paired or (ev.get("final") or {}).get("paired") or ev.get("paired")
        if paired:  # the paired statistics of training's evaluation, when it recorded them
            data["eval"]["paired"] = dict(paired)
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
        if summary.get("wall_time_s") is not None:
            data["wall_time_min"] = round(float(summary["wall_time_s"]) / 60.0, 1)
        commands = [s.get("command") for s in summary.get("sessions") or [] if s.get("command")]
        if commands:
            data["training_command"] = commands[0]
            if len(commands) > 1:
                data["resume_commands"] = commands[1:]
    curve = validation_curve(rdir)
    if curve:
        data["validation_curve"] = curve
    if selection is not None:
        data["selection"] = selection
    seeds = seeds_section(rdir.parent)
    if seeds is not None:
        data["seeds"] = seeds
    search = search_section(rdir.parent)
    if search is not None:  # the run only plays the search's result: its time counts
        data["search"] = search
        data["wall_time_min"] = round(data.get("wall_time_min", 0.0) + search["minutes"], 1)
        if not data.get("training_command") and search.get("train_command"):
            data["training_command"] = search["train_command"]  # --ship started it from Python
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
        "row_context",
        "row_prior",
        "anchor_kl",
        "kernel_arch",
        "n_envs",
        "n_steps_resolved",
        "batch_size_resolved",
        "trajectories",
    )
    data["hyperparameters"] = {k: cfg[k] for k in hp_keys if k in cfg}
    try:
        from hpcgym.workload import load, trace_spec

        trace = cfg.get("trace", "synthetic")
        wl = load(trace_spec(trace))
        data["est_scale"] = float(wl.request.max())
        data["wait_scale"] = float(wl.request.max())
        data["trace_jobs"] = len(wl)
        data["machine_size"] = int(wl.machine_size)
    except Exception as exc:  # the trace is only needed for the scale constants
        data["est_scale_note"] = f"trace not loadable here ({type(exc).__name__}: {exc})"
    return ModelCard.from_dict(data, rdir)


def search_section(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``train/search.py`` search whose result a run plays (``search.json`` in
    ``root``, the parent of the ``--ship`` run): its command, generations, windows,
    minutes, the score's hidden units (0: linear), the last generation's ratio of
    CMA-ES's mean on its train-split windows
    (in-sample) and, for searches that record it, the geometric mean over the last ten
    generations of the mean entering each, scored on that generation's windows (fresh to
    it). ``None`` when ``root`` holds no search.

    :param root: the parent folder of the run
    """
    p = Path(root) / SEARCH_FILE
    if not p.is_file():
        return None
    data = json.loads(p.read_text(encoding="utf-8"))
    history = data.get("history") or []
    return {
        "command": data.get("search_command"),
        "train_command": data.get("train_command"),
        "generations": len(history),
        "windows": data.get("windows"),
        "length": data.get("length"),
        "reference": data.get("reference"),
        "hidden": int(data.get("hidden", 0)),
        "minutes": round(sum(float(r.get("seconds", 0.0)) for r in history) / 60.0, 1),
        "last_train_ratio": history[-1].get("mean_policy") if history else None,
        "fresh_train_ratio": _fresh_ratio(history[-10:]),
    }


def _fresh_ratio(records: list[dict[str, Any]]) -> float | None:
    """Geometric mean of the records' ``mean_fresh`` (``None`` if a record lacks it)."""
    values = [r.get("mean_fresh") for r in records]
    if not values or any(v is None for v in values):
        return None
    return float(math.exp(sum(math.log(float(v)) for v in values) / len(values)))


def seeds_section(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The seeds of a ``train/ppo.py --seeds`` run (``seeds.json`` in ``root``): per seed
    its steps, the final model's paired ratio on training's validation windows and, when
    ``eval/select_checkpoint.py`` was run in the seed's folder (or across the seeds, in
    ``root``), its selected checkpoint's ratio; across the seeds the spread of both
    (:func:`statistics.spread`). ``None`` when ``root`` is not a seeds run.

    :param root: the seeds run's folder (the parent of a seed's run folder)
    """
    from hpcgym.evaluation.statistics import spread

    p = Path(root) / SEEDS_FILE
    if not p.is_file():
        return None
    data = json.loads(p.read_text(encoding="utf-8"))
    across_p = Path(root) / SELECTION_FILE  # a choice across the seeds, if one was made
    across = json.loads(across_p.read_text(encoding="utf-8")) if across_p.is_file() else {}
    per_seed = {Path(root, b["run"]).name: b for b in across.get("seeds") or []}
    rows = []
    for r in data.get("runs") or []:
        row: dict[str, Any] = {
            "seed": r.get("seed"),
            "run": r.get("run"),
            "status": r.get("status"),
            "timesteps": r.get("timesteps"),
            "final": r.get("paired"),
        }
        sel_p = Path(str(r.get("run"))) / SELECTION_FILE
        found: tuple[dict[str, Any], dict[str, Any]] | None = None
        if sel_p.is_file():
            sel = json.loads(sel_p.read_text(encoding="utf-8"))
            found = next(c for c in sel["candidates"] if c["model"] == sel["chosen"]), sel
        elif Path(str(r.get("run"))).name in per_seed:  # its best in the choice across seeds
            found = per_seed[Path(str(r.get("run"))).name], across
        if found is not None:
            best, sel = found
            row["selected"] = {
                **{k: best.get(k) for k in ("model", "steps", "geo_ratio", "ci_low", "ci_high")},
                **{k: sel.get(k) for k in ("windows", "length", "seed", "reference")},
            }
        rows.append(row)

    def ratios(key: str) -> list[float | None]:
        return [(r.get(key) or {}).get("geo_ratio") for r in rows]

    return {
        "root": str(Path(root)),
        "reference": data.get("reference"),
        "runs": rows,
        "across": {"final": spread(ratios("final")), "selected": spread(ratios("selected"))},
    }


def read_evaluations(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a run's ``evaluations.jsonl``, one JSON object per line.

    A last line that does not parse is a record cut short by a killed write (a run
    stopped mid-write, a full disk): it is left out with a warning naming the file. A
    broken line before the last one is an error.

    :param path: the file
    :raises ValueError: ``file:line: ...`` for a broken line other than the last
    """
    p = Path(path)
    lines = p.read_text(encoding="utf-8").splitlines()
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i != last:
                raise ValueError(f"{p}:{i + 1}: not a JSON record ({exc})") from None
            warnings.warn(
                f"{p}:{i + 1}: left out a record cut short (the run was stopped while writing it)",
                stacklevel=2,
            )
    return out


def validation_curve(run: str | os.PathLike[str], points: int = 16) -> list[dict[str, Any]]:
    """The run's training-time evaluation history (``evaluations.jsonl``: validation
    windows), thinned to about ``points`` rows (the first, the last and the best kept):
    ``timesteps``, ``updates``, ``avg_bsld`` and, when recorded, ``geo_ratio`` with its
    interval against the run's reference.

    :param run: the ``train/ppo.py`` run folder
    :param points: rows kept
    """
    path = Path(run) / "evaluations.jsonl"
    if not path.is_file():
        return []
    rows = []
    for e in read_evaluations(path):
        row = {k: e.get(k) for k in ("timesteps", "updates", "avg_bsld")}
        p = e.get("paired") or {}
        for k in ("geo_ratio", "ci_low", "ci_high"):
            if p.get(k) is not None:
                row[k] = p[k]
        rows.append(row)
    if len(rows) <= points:
        return rows
    best = min(range(len(rows)), key=lambda i: float(rows[i]["avg_bsld"] or np.inf))
    keep = {int(round(i)) for i in np.linspace(0, len(rows) - 1, points - 1)} | {best}
    return [rows[i] for i in sorted(keep)]


def ship_model(
    run: str | os.PathLike[str],
    name: str,
    out_dir: str | os.PathLike[str],
    model: str = "best",
    notes: str = "",
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Copy a run's model to ``out_dir/<name>.zip`` and write ``<name>.json`` (the model
    card, with ``model`` relative to it) and ``<name>.md`` (human-readable card).

    :param run: the ``train/ppo.py`` run folder (or a ``.zip`` in it)
    :param name: the agent's name (file stem of the three files)
    :param out_dir: destination folder
    :param model: ``best``, ``final`` or a ``.zip`` path (see :func:`card_from_run`)
    :param notes: free text appended to the ``.md`` card
    :param meta: extra card keys of the caller (see :func:`card_from_run`)
    :return: the written paths (``zip``, ``json``, ``md``)
    """
    card = card_from_run(run, model=model, name=name, meta=meta)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    zdst = out / f"{name}.zip"
    shutil.copyfile(card.model, zdst)
    data = card.to_dict()
    data["model"] = zdst.name
    data["name"] = name
    if notes:
        data["notes"] = notes  # kept in the card: re-rendering the .md keeps them
    jpath = out / f"{name}.json"
    jpath.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    mpath = out / f"{name}.md"
    mpath.write_text(card_markdown(data, notes), encoding="utf-8")
    return {"zip": zdst, "json": jpath, "md": mpath}


def find_model_cards(agents_dir: str | os.PathLike[str] | None = None) -> list[ModelCard]:
    """Every model card ``*.json`` of ``agents_dir`` (default: the shipped agents of the
    installed agent loader, :func:`~hpcgym.evaluation.loaders.default_agents_dir`), by
    name. A ``.zip`` without a card is ignored (its env would be a guess), and so is a
    ``.json`` that is not a card (the zoo's ``retired.json`` table)."""
    d = Path(agents_dir) if agents_dir is not None else default_agents_dir()
    if d is None or not d.is_dir():
        return []
    return [load_model_card(p) for p in sorted(d.glob("*.json")) if is_model_card(p)]


def is_model_card(path: Path) -> bool:
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


def load_cards(
    specs: list[str] | None, agents_dir: str | os.PathLike[str] | None = None
) -> list[ModelCard]:
    """Model cards from paths, or every card of ``agents_dir`` when ``specs`` is ``None``.

    :param specs: card ``.json`` files, ``.zip`` models with a card next to them, or
        ``train/ppo.py`` run folders / models inside one (:func:`card_from_run`)
    :param agents_dir: folder of shipped agents (:func:`find_model_cards`)
    """
    if specs is None:
        return find_model_cards(agents_dir)
    cards = []
    for c in specs:
        p = Path(c)
        if p.suffix == ".json":
            cards.append(load_model_card(p))
        elif p.suffix == ".zip" and is_model_card(p.with_suffix(".json")):
            cards.append(load_model_card(p.with_suffix(".json")))
        else:
            cards.append(card_from_run(p))
    return cards
