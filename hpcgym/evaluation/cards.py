"""Trained-agent model cards (schema ``hpcgym-model-card/1``): read and find them, and the
card a trainer writes into its run folder (:data:`RUN_CARD_FILE`, :func:`load_run_card`).

A card says how an agent's env was built (trace, base policy, mode, max_queue,
estimator...), so evaluation can rebuild it; see docs/evaluation.md, "Model cards". The
library reads cards only: the trainer builds a run's card from its own files
(``python -m train.card``), the zoo ships cards (:mod:`hpcgym.zoo.ship`).
"""

from __future__ import annotations

import json
import os
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcgym.evaluation.gating import read_gate
from hpcgym.evaluation.loaders import default_agents_dir
from hpcgym.tasks import card_task

__all__ = [
    "CARD_ENV_KEYS",
    "MODEL_CARD_SCHEMA",
    "RUN_CARD_FILE",
    "ModelCard",
    "canonical_trace",
    "card_from_run",
    "find_model_cards",
    "is_model_card",
    "load_cards",
    "load_model_card",
    "load_run_card",
    "run_config",
    "run_dir_of",
    "zip_timesteps",
]

#: Model-card schema identifier (see docs/evaluation.md).
MODEL_CARD_SCHEMA = "hpcgym-model-card/1"

#: The model card a trainer writes into its run folder (schema :data:`MODEL_CARD_SCHEMA`,
#: ``model`` relative to the folder): the card of the run's best model with the run's
#: training configuration as ``config``, written when the run starts and at the end of every
#: training session. The library reads a run folder through it alone.
RUN_CARD_FILE = "card.json"

#: Names that left this module: old name -> (new module, new name); the old name works for
#: one minor version with a FutureWarning naming the new place.
_MOVED: dict[str, tuple[str, str]] = {
    "card_markdown": ("hpcgym.zoo.card_text", "card_markdown"),
    "ship_model": ("hpcgym.zoo.ship", "ship_model"),
    "SELECTION_FILE": ("hpcgym.zoo.selection", "SELECTION_FILE"),
}

#: Readers of a training run's own files: the trainer's (``train/card.py``), not the library's.
_TRAINER_ONLY: tuple[str, ...] = (
    "SEEDS_FILE",
    "SEARCH_FILE",
    "read_evaluations",
    "search_section",
    "seeds_section",
    "validation_curve",
)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from importlib import import_module

        module, new = _MOVED[name]
        warnings.warn(
            f"hpcgym.evaluation.cards.{name} moved to {module}.{new}; the old name goes in "
            "the next minor version",
            FutureWarning,
            stacklevel=2,
        )
        return getattr(import_module(module), new)
    if name in _TRAINER_ONLY:
        raise AttributeError(
            f"hpcgym.evaluation.cards.{name} left the library: a run's own files are read by "
            f"the trainer (train.card.{name}); the library reads the card it writes "
            f"({RUN_CARD_FILE}, load_run_card)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def run_config(run: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The training configuration a trainer recorded in its run card (the card's
    ``config``), or ``None`` when ``run`` has no run card.

    :param run: the run folder
    :raises ValueError: a run card without its configuration (written by an older trainer)
    """
    path = Path(run) / RUN_CARD_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ValueError(
            f"{path}: no training configuration ('config') in the run's card; rewrite it: "
            f"python -m train.card {Path(run)} --run-card"
        )
    return dict(data["config"])


def run_dir_of(model: Path) -> Path | None:
    """The run folder holding ``model``: the folder with a trainer's card
    (:data:`RUN_CARD_FILE`) next to it or one level up (for ``checkpoints/*.zip``), if any."""
    for d in (model.parent, model.parent.parent):
        if (d / RUN_CARD_FILE).is_file():
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


def load_run_card(run: str | os.PathLike[str], model: str = "best") -> ModelCard:
    """The card a trainer wrote into its run folder (:data:`RUN_CARD_FILE`), playing the
    model asked for.

    :param run: the run folder, or a model ``.zip`` in it (``checkpoints/`` too)
    :param model: ``best`` (the card's own model), ``final`` (``final_model.zip``) or a
        ``.zip`` path; ignored when ``run`` is a zip. Another model than the card's keeps
        the card's env and takes its step count from the model file; the card's
        training-time evaluation, which scored the card's own model, is left out
    :raises FileNotFoundError: no card in the folder (the message says how to write one),
        or no such model
    """
    p = Path(run)
    zpath: Path | None = None
    if p.suffix == ".zip":
        rdir, zpath = run_dir_of(p), p
        if rdir is None:
            raise FileNotFoundError(
                f"{p}: no {RUN_CARD_FILE} of a training run next to it (the trainer writes "
                f"it; for an older run: python -m train.card RUN --run-card)"
            )
    else:
        rdir = p
        if model == "final":
            zpath = rdir / "final_model.zip"
        elif model != "best":
            zpath = Path(model)
    path = rdir / RUN_CARD_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{rdir}: no {RUN_CARD_FILE} in it, the card its trainer writes (for a run of an "
            f"older trainer: python -m train.card {rdir} --run-card)"
        )
    if zpath is None or zpath.absolute() == (rdir / _card_model(path)).absolute():
        return load_model_card(path)
    if not zpath.is_file():
        raise FileNotFoundError(f"model {zpath} not found in the run {rdir}")
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("eval", None)  # the training-time evaluation scored the card's own model
    data.update(model=str(zpath.resolve()), checkpoint=zpath.name, steps=zip_timesteps(zpath))
    return ModelCard.from_dict(data, rdir, source=path)


def _card_model(path: Path) -> str:
    """The ``model`` a card file names (as written)."""
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("model") or "")
    except (json.JSONDecodeError, AttributeError):
        return ""


def card_from_run(
    run: str | os.PathLike[str],
    model: str = "best",
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ModelCard:
    """Deprecated: the run's card is the one its trainer wrote (:func:`load_run_card`);
    building a card from a run's own files is the trainer's (``train.card.card_from_run``).

    :param run: the run folder, or a model ``.zip`` in it
    :param model: ``best``, ``final`` or a ``.zip`` path (:func:`load_run_card`)
    :param name: the card's name (default: the card's own)
    :param meta: card keys of the caller, added to the card
    """
    warnings.warn(
        "hpcgym.evaluation.card_from_run is deprecated and goes in the next minor version: "
        "use hpcgym.evaluation.load_run_card (the card the trainer wrote), or "
        "train.card.card_from_run to build one from a run's files",
        FutureWarning,
        stacklevel=2,
    )
    if model == "selected":
        raise ValueError(
            f"{run}: a run's selected checkpoint is shipped by the trainer's card tool: "
            f"python -m train.card {run} --model selected"
        )
    card = load_run_card(run, model)
    if name is None and not meta:
        return card
    data = {**card.data, **(meta or {})}
    data["name"] = name or card.name
    return ModelCard.from_dict(data, card.source.parent if card.source else Path("."), None)


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
        training run folders / models inside one (:func:`load_run_card`)
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
            cards.append(load_run_card(p))
    return cards
