"""The run folder of ``train/ppo.py``: its layout, checkpoint naming and resume lookup.

Everything a run writes lives in ``<logdir>/<run-name>/``; this module is the only place
that knows the file names::

    config.json                      options + resolved rollout (TrainConfig.to_json)
    events.out.tfevents.*            TensorBoard, one file per session
    progress.csv                     SB3's scalars (progress_from_<steps>.csv after a resume)
    checkpoints/model_<steps>_steps.zip
    best_model.zip, best_model.json  best evaluation so far, and its record
    final_model.zip
    evaluations.jsonl                one evaluation record per line
    summary.json                     summary of every session (train/summary.py)
    card.json                        the run's model card (train/card.py): how evaluation reads
                                     the run (written at the start and end of a session)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "RunDir",
    "RunDirError",
    "checkpoint_name",
    "checkpoint_steps",
    "default_run_name",
    "resolve_resume",
    "write_json",
]

CHECKPOINT_DIR = "checkpoints"

#: Model attributes left out of saved ``.zip`` files: the session's rollout buffer class
#: (:mod:`train.stopping`) is not needed to load a model, and loading falls back to SB3's.
SAVE_EXCLUDE: tuple[str, ...] = ("rollout_buffer_class", "rollout_buffer_kwargs")
_CKPT_RE = re.compile(r"^model_(\d+)_steps\.zip$")


class RunDirError(ValueError):
    """A path is not what a run folder or checkpoint should be."""


def checkpoint_name(steps: int) -> str:
    """The file name of a checkpoint.

    :param steps: the environment steps the model was trained for
    """
    return f"model_{int(steps)}_steps.zip"


def checkpoint_steps(path: str | os.PathLike[str]) -> int | None:
    """The step count in a checkpoint's file name (``None``: not a checkpoint name).

    :param path: the checkpoint (only its name is read)
    """
    m = _CKPT_RE.match(Path(path).name)
    return int(m.group(1)) if m else None


def json_default(o: Any) -> Any:
    """JSON for numpy scalars/arrays and paths (``json.dumps(default=...)``).

    :param o: the object ``json`` cannot encode itself
    """
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def write_json(path: str | os.PathLike[str], data: Any, indent: int | None = 2) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a temporary file, then a rename).

    :param path: the file
    :param data: JSON-able data (numpy values and paths too)
    :param indent: JSON indentation (``None``: one line)
    """
    p = Path(path)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=indent, default=json_default) + "\n", encoding="utf-8")
    tmp.replace(p)


def default_run_name(
    trace: str, policy: str, mode: str, seed: int | Sequence[int], now: datetime | None = None
) -> str:
    """``<trace>_<policy>_<mode>_s<seed>_<date-time>`` (the trace's file stem), or
    ``..._seeds<s1>-<s2>-..._<date-time>`` for the seeds of a ``--seeds`` run.

    :param trace: the trace name or path
    :param policy: the base queue policy
    :param mode: the agent's mode
    :param seed: the run's seed, or the seeds of a ``--seeds`` run
    :param now: the time stamp (default: now)
    """
    stem = Path(str(trace)).name.split(".")[0] or "trace"
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    label = f"s{seed}" if isinstance(seed, int) else "seeds" + "-".join(map(str, seed))
    return f"{stem}_{policy}_{mode}_{label}_{stamp}"


@dataclass(frozen=True)
class RunDir:
    """The folder of one run and the paths in it.

    :param path: the run folder (``<logdir>/<run-name>``)
    """

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    # ------------------------------------------------------------------ paths
    @property
    def config(self) -> Path:
        return self.path / "config.json"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    @property
    def evaluations(self) -> Path:
        return self.path / "evaluations.jsonl"

    @property
    def best_model(self) -> Path:
        return self.path / "best_model.zip"

    @property
    def best_record(self) -> Path:
        return self.path / "best_model.json"

    @property
    def final_model(self) -> Path:
        return self.path / "final_model.zip"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / CHECKPOINT_DIR

    def checkpoint(self, steps: int) -> Path:
        """The checkpoint path at ``steps`` environment steps.

        :param steps: the environment steps the model was trained for
        """
        return self.checkpoint_dir / checkpoint_name(steps)

    def progress_csv(self, start_steps: int = 0) -> Path:
        """SB3's CSV log of the session that starts at ``start_steps``.

        :param start_steps: the step counter at the session's start
        """
        if start_steps == 0:
            return self.path / "progress.csv"
        return self.path / f"progress_from_{int(start_steps)}.csv"

    # ------------------------------------------------------------------ state
    def holds_run(self) -> bool:
        """Whether a run was set up here (``config.json`` exists)."""
        return self.config.is_file()

    def checkpoints(self) -> list[Path]:
        """The checkpoints, oldest (fewest steps) first."""
        found = [(checkpoint_steps(p), p) for p in self.checkpoint_dir.glob("model_*_steps.zip")]
        return [p for steps, p in sorted((s, p) for s, p in found if s is not None)]

    def latest_checkpoint(self) -> Path | None:
        """The checkpoint with the most steps, or ``None``."""
        found = self.checkpoints()
        return found[-1] if found else None

    def prune_checkpoints(
        self, keep: int, upto: int | None = None, spread: bool = False
    ) -> list[Path]:
        """Delete all but ``keep`` checkpoints; returns the deleted paths.

        :param keep: checkpoints to keep (>= 1: resuming needs one)
        :param upto: only consider checkpoints at or before this step count (a session
            resumed from an older checkpoint leaves the later ones of the lost session alone)
        :param spread: keep checkpoints spread over the whole run instead of the newest:
            the newest and the oldest always stay, and while too many are left the one
            whose neighbours are closest (in steps) goes. Called after every save, this
            keeps ``keep`` checkpoints about evenly spaced from the start of training to
            now, so that ``eval/select_checkpoint.py`` has candidates from the whole run
            at the disk cost of ``keep`` files.
        """
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        found = [
            p for p in self.checkpoints() if upto is None or (checkpoint_steps(p) or 0) <= upto
        ]
        if not spread or keep < 2:
            old = found[:-keep]
        else:
            steps = [checkpoint_steps(p) or 0 for p in found]
            kept = list(range(len(found)))
            while len(kept) > keep:
                # interior index whose removal leaves the smallest gap (the older on ties)
                j = min(
                    range(1, len(kept) - 1),
                    key=lambda i: (steps[kept[i + 1]] - steps[kept[i - 1]], i),
                )
                del kept[j]
            keep_set = set(kept)
            old = [p for i, p in enumerate(found) if i not in keep_set]
        for p in old:
            p.unlink(missing_ok=True)
        return old

    def save_model(self, model: Any, path: Path) -> Path:
        """Save ``model`` (SB3's ``save``, without :data:`SAVE_EXCLUDE`); returns ``path``.

        :param model: the model
        :param path: the ``.zip`` (its folder is created)
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        model.save(path, exclude=list(SAVE_EXCLUDE))
        return path

    def read_json(self, path: Path) -> dict[str, Any] | None:
        """A JSON file of the run (``None`` when missing).

        :param path: the file (e.g. :attr:`config`, :attr:`summary`)
        """
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    # ------------------------------------------------------------------ evaluations
    def append_evaluation(self, record: dict[str, Any]) -> None:
        """Append one evaluation record to ``evaluations.jsonl``.

        :param record: the record (numpy values are converted)
        """
        with open(self.evaluations, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=json_default) + "\n")

    def evaluations_until(self, steps: int) -> list[dict[str, Any]]:
        """The evaluation records up to ``steps``; later ones (written by the lost part of
        a killed session) are removed from the file.

        :param steps: the step counter of the checkpoint a resume starts from
        """
        if not self.evaluations.is_file():
            return []
        from train.card import read_evaluations

        kept = [r for r in read_evaluations(self.evaluations) if r["timesteps"] <= steps]
        self.evaluations.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
        return kept

    def save_best(self, model: Any, record: dict[str, Any]) -> None:
        """Save ``model`` as the best model and ``record`` as its evaluation.

        :param model: the model (anything with SB3's ``save``)
        :param record: its evaluation record
        """
        self.save_model(model, self.best_model)
        write_json(self.best_record, record, indent=1)

    def best(self) -> dict[str, Any] | None:
        """The best model's evaluation record (``None``: no best model saved)."""
        return self.read_json(self.best_record) if self.best_model.is_file() else None


def resolve_resume(path: str | os.PathLike[str]) -> tuple[RunDir, Path]:
    """The run folder and checkpoint that ``--resume path`` continues from.

    :param path: a run folder (its latest checkpoint) or a checkpoint ``.zip`` (in the run
        folder or its ``checkpoints/``)
    :raises RunDirError: not a run folder or a checkpoint; no checkpoint; no config.json
    """
    p = Path(path)
    if p.is_dir():
        run = RunDir(p)
        ckpt = run.latest_checkpoint()
        if ckpt is None:
            raise RunDirError(
                f"--resume {p}: no checkpoint in {run.checkpoint_dir} (a run saves one every "
                "--checkpoint-every updates and at the end)"
            )
    elif p.is_file() and p.suffix == ".zip":
        ckpt = p
        run = RunDir(p.parent.parent if p.parent.name == CHECKPOINT_DIR else p.parent)
    else:
        raise RunDirError(f"--resume {p}: not a run folder or a checkpoint .zip")
    if not run.holds_run():
        raise RunDirError(f"--resume {p}: {run.config} not found (is {run.path} a run folder?)")
    return run, ckpt
