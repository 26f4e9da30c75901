"""The trainer writes the card: a model card (schema ``hpcgym-model-card/1``) built from a
training run's own files, and shipping it.

    python -m train.card runs/<run> --name SDSC-SP2_FCFS [--model best|final|selected|PATH.zip] \\
        [--out agents/pretrained] [--notes "..."]
    python -m train.card runs/<run> --run-card     # (re)write runs/<run>/card.json

A run folder holds the trainer's files: ``config.json``, ``summary.json``,
``best_model.json``, ``evaluations.jsonl``, a ``--seeds`` run's ``seeds.json`` next to
its seed folders, a search's ``search.json`` next to the run it ships, and the checkpoint
choice of ``eval/select_checkpoint.py`` (``selection.json``, :mod:`hpcgym.zoo.selection`).
Only this module reads them (:func:`card_from_run`); the library reads the card it writes:
``<run>/card.json`` (:data:`hpcgym.evaluation.cards.RUN_CARD_FILE`, the card of the run's
best model with its training configuration, written by :func:`write_run_card` when the run
starts and at the end of every training session) and
the shipped ``<out>/<name>.json`` (with ``<name>.zip`` and ``<name>.md``; the card read by
``eval/compare.py``, ``eval/table4.py`` and ``eval/table5.py``: trace, split, policy, mode,
normalizer, max_queue, observation scales, seed, steps, training evaluation...).
``--print`` only shows the card. Schema: docs/evaluation.md, "Model cards".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.cards import (
    MODEL_CARD_SCHEMA,
    RUN_CARD_FILE,
    ModelCard,
    canonical_trace,
    zip_timesteps,
)
from hpcgym.tasks import card_task
from hpcgym.workload.sequences import VALIDATION_FRACTION
from hpcgym.zoo.card_text import OPTION_KEYS
from hpcgym.zoo.selection import SELECTION_FILE

__all__ = [
    "SEARCH_FILE",
    "SEEDS_FILE",
    "card_from_run",
    "main",
    "read_evaluations",
    "search_section",
    "seeds_section",
    "ship_run",
    "validation_curve",
    "write_run_card",
]

#: The file of a ``train/ppo.py --seeds`` run, next to its ``seed-<s>`` run folders.
SEEDS_FILE = "seeds.json"

#: The result of a ``train/search.py`` search, next to the ``run`` folder it ships.
SEARCH_FILE = "search.json"


def _run_dir(model: Path) -> Path | None:
    """The ``train/ppo.py`` run folder holding ``model`` (``config.json`` next to it or
    one level up, for ``checkpoints/*.zip``), if any."""
    for d in (model.parent, model.parent.parent):
        if (d / "config.json").is_file():
            return d
    return None


def _env_free(reference: Any) -> Any:
    """``NAME`` for ``ENV+NAME`` (:data:`hpcgym.envs.reward.ENV_PREFIX`), else as given."""
    if isinstance(reference, str) and reference[:4].upper() == "ENV+":
        return reference[4:]
    return reference


def _task_keys(cfg: dict[str, Any]) -> dict[str, Any]:
    """``policy`` and ``mode`` of a run's card, as its task writes them (a Schedule-v0 run
    adds ``task`` and writes its row order as ``policy``)."""
    return card_task(cfg).card_keys(cfg, canonical_trace(cfg.get("trace")))


def card_from_run(
    run: str | os.PathLike[str],
    model: str = "best",
    name: str | None = None,
    meta: dict[str, Any] | None = None,
    missing_ok: bool = False,
) -> ModelCard:
    """A model card for a ``train/ppo.py`` run folder (``config.json``, ``summary.json``,
    ``best_model.json``), or for a ``.zip`` inside one.

    :param run: the run folder, or a model ``.zip`` in it (``checkpoints/`` too), or a
        ``--seeds`` run's folder with ``model="selected"`` (the choice across its seeds)
    :param model: ``best`` (``best_model.zip``, default; falls back to ``final``),
        ``final`` (``final_model.zip``), ``selected`` (the choice of ``eval/select_checkpoint.py``
        on validation windows, :mod:`hpcgym.zoo.selection`; copied into the card as
        ``selection``) or a ``.zip`` path; ignored when ``run`` is a zip
    :param name: card name (default: the run folder's name)
    :param meta: keys the caller knows and hpcgym does not, written after ``algorithm``
        (e.g. the import path of the agent's policy class as ``policy_class``)
    :param missing_ok: build the card of a model that is not written yet (a run that has
        only started: its run card)
    """
    p = Path(run)
    selection: dict[str, Any] | None = None
    if p.suffix == ".zip":
        zpath = p
        rdir = _run_dir(p)
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
        from hpcgym.zoo.selection import load_selection

        selection = load_selection(p)
        zpath = Path(selection["chosen_path"])
        found = _run_dir(zpath)
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
            from hpcgym.zoo.selection import load_selection

            selection = load_selection(rdir)
            zpath = Path(selection["chosen_path"])
        else:
            zpath = Path(model)
    if not zpath.is_file() and not missing_ok:
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


def write_run_card(run: str | os.PathLike[str]) -> Path:
    """Write the run's card (:data:`~hpcgym.evaluation.cards.RUN_CARD_FILE`), the card
    through which the library reads the run: the card of its best model (``model`` relative
    to the folder; ``best_model.zip`` before the run has one) with the run's whole training
    configuration as ``config`` (``config.json``: what checkpoint selection and screens of
    runs compare). Training writes it when a run starts and at the end of every session.

    :param run: the run folder (with its ``config.json``)
    :return: the card's path
    """
    rdir = Path(run)
    if any((rdir / f).is_file() for f in ("best_model.zip", "final_model.zip")):
        card = card_from_run(rdir)
    else:
        card = card_from_run(rdir, model=str(rdir / "best_model.zip"), missing_ok=True)
    data = card.to_dict()
    data["model"] = os.path.relpath(card.model.absolute(), rdir.absolute())
    data["config"] = json.loads((rdir / "config.json").read_text(encoding="utf-8"))
    path = rdir / RUN_CARD_FILE
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def ship_run(
    run: str | os.PathLike[str],
    name: str,
    out_dir: str | os.PathLike[str],
    model: str = "best",
    notes: str = "",
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Build a run's card (:func:`card_from_run`) and ship it
    (:func:`hpcgym.zoo.ship.ship_card`): ``<name>.zip``, ``<name>.json``, ``<name>.md``.

    :param run: the ``train/ppo.py`` run folder (or a ``.zip`` in it)
    :param name: the agent's name (file stem of the three files)
    :param out_dir: destination folder
    :param model: ``best``, ``final``, ``selected`` or a ``.zip`` path (:func:`card_from_run`)
    :param notes: free text appended to the ``.md`` card
    :param meta: extra card keys of the caller (see :func:`card_from_run`)
    :return: the written paths (``zip``, ``json``, ``md``)
    """
    from hpcgym.zoo.ship import ship_card

    card = card_from_run(run, model=model, name=name, meta=meta)
    return ship_card(card, name, out_dir, notes)


def main(argv: list[str] | None = None) -> int:
    """Ship a model; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    from hpcgym.cli.errors import Parser

    p = Parser(
        prog="python -m train.card",
        description="Ship a trained agent: build the model card of a train/ppo.py run from\n"
        "its files and copy the model, its card (.json) and its .md into agents/pretrained/;\n"
        "--run-card (re)writes the run folder's card.json instead.",
    )
    p.add_argument("run", help="train/ppo.py run folder (or a .zip inside one)")
    p.add_argument("--name", default=None, help="agent name (default: the run folder's name)")
    p.add_argument(
        "--model",
        default="best",
        help="best (default), final, selected (eval/select_checkpoint.py's choice on validation "
        "windows), or a .zip path",
    )
    p.add_argument("--out", default=None, help="destination (default agents/pretrained)")
    p.add_argument("--notes", default="", help="free text appended to the .md card")
    p.add_argument("--print", action="store_true", help="print the card, write nothing")
    p.add_argument(
        "--run-card",
        action="store_true",
        help=f"(re)write the run folder's {RUN_CARD_FILE} (training writes it; for older runs)",
    )
    args = p.parse_args(argv)
    from hpcgym.cli.errors import run_command

    return run_command(p.prog, lambda: _run(args))


#: The import path of the agents' policy class (written into the cards this tool ships).
POLICY_CLASS = "hpcgym_agents.kernel_policy.KernelPolicy"


def _pretrained_dir() -> Path:
    """The shipped agents' folder of the agents package (``--out``'s default)."""
    from hpcgym_agents import pretrained_dir

    return Path(pretrained_dir())


def _run(args: argparse.Namespace) -> int:
    """The shipping itself (user errors raise, :func:`main` reports them).

    :param args: the parsed arguments
    """
    if args.run_card:
        if not (Path(args.run) / "config.json").is_file():
            raise FileNotFoundError(f"{args.run}: not a train/ppo.py run folder (no config.json)")
        print(f"wrote {write_run_card(args.run)}")
        return 0
    meta = {"policy_class": POLICY_CLASS}
    if args.print:
        card = card_from_run(args.run, model=args.model, name=args.name, meta=meta)
        print(json.dumps(card.to_dict(), indent=2))
        return 0
    name = args.name or Path(args.run).resolve().name
    from hpcgym.cli.errors import writable_dir

    out = Path(args.out) if args.out is not None else _pretrained_dir()
    writable_dir(out, "--out")
    paths = ship_run(args.run, name, out, args.model, args.notes, meta=meta)
    for k, v in paths.items():
        print(f"wrote {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
