"""Logging of a run: SB3's logger with TensorBoard (in the run folder), CSV and stdout,
the Custom Scalars layout, hparams, and the evaluation scalars.

Evaluation tags follow the one scheme of :func:`hpcgym.evaluation.tensorboard.tag`
(``eval/avg_bsld/agent``, ``eval/avg_bsld/<baseline>``), so training and ``eval/`` runs
share charts.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from stable_baselines3.common.logger import (
    CSVOutputFormat,
    HParam,
    HumanOutputFormat,
    Logger,
    TensorBoardOutputFormat,
)

from hpcgym.evaluation.tensorboard import tag
from train.rundir import RunDir, json_default

__all__ = [
    "PurgingTensorBoardFormat",
    "add_custom_scalars_layout",
    "make_logger",
    "record_evaluation",
    "tensorboard_writer",
    "write_hparams",
]

#: The agent's label in the evaluation tags.
AGENT = "agent"

#: config.json keys left out of the hparams (not settings of the learning).
_NOT_HPARAMS: frozenset[str] = frozenset({"calibration", "progress", "verbose", "logdir"})


class PurgingTensorBoardFormat(TensorBoardOutputFormat):
    """SB3's TensorBoard output with a ``purge_step``: when a killed run is resumed from a
    checkpoint at step ``s``, TensorBoard hides the events at steps > ``s`` written by the
    lost part of the old session, so the curves continue without a zig-zag.

    :param folder: the run folder (events files go straight into it)
    :param purge_step: the resume step + 1 (events at steps >= it are hidden), or ``None``
    """

    def __init__(self, folder: str, purge_step: int | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=folder, purge_step=purge_step)
        self._is_closed = False


def make_logger(run: RunDir, start_steps: int, verbose: bool) -> Logger:
    """SB3's logger of one session: TensorBoard events and ``progress*.csv`` in the run
    folder, SB3's tables on stdout with ``verbose``.

    :param run: the run folder
    :param start_steps: the step counter at the session's start (> 0: a resume)
    :param verbose: also print SB3's log tables
    """
    formats: list[Any] = [
        PurgingTensorBoardFormat(
            str(run.path), purge_step=start_steps + 1 if start_steps else None
        ),
        CSVOutputFormat(str(run.progress_csv(start_steps))),
    ]
    if verbose:
        formats.append(HumanOutputFormat(sys.stdout))
    return Logger(str(run.path), formats)


def close_logger(logger: Logger) -> None:
    """Close every output of ``logger`` (flushes the event files).

    :param logger: the run's logger
    """
    for fmt in logger.output_formats:
        fmt.close()


def tensorboard_writer(logger: Logger) -> Any | None:
    """The ``SummaryWriter`` of ``logger``'s TensorBoard output, or ``None``.

    :param logger: the run's logger
    """
    for fmt in logger.output_formats:
        if isinstance(fmt, TensorBoardOutputFormat):
            return fmt.writer
    return None


def add_custom_scalars_layout(logger: Logger, baseline_names: Sequence[str]) -> None:
    """Write a TensorBoard *Custom Scalars* layout: the agent's and the baselines'
    evaluation AVEbsld in one chart, and the training episodes' AVEbsld against the
    reference scheduler's.

    :param logger: the run's logger
    :param baseline_names: the baselines evaluated next to the agent
    """
    writer = tensorboard_writer(logger)
    if writer is None:
        return
    evals = [tag("avg_bsld", AGENT)] + [tag("avg_bsld", n) for n in baseline_names]
    layout = {
        "hpcgym": {
            "eval: AVEbsld on the evaluation windows (agent vs baselines)": [
                "Multiline",
                [re.escape(evals[0])] + [re.escape(t) + "$" for t in evals[1:]],
            ],
            "train episodes: AVEbsld (agent vs normalizer)": [
                "Multiline",
                ["rollout/avg_bsld$", "rollout/avg_bsld_normalizer$"],
            ],
            "train episodes: terminal reward": ["Multiline", ["rollout/reward$"]],
        }
    }
    writer.add_custom_scalars(layout)
    writer.flush()


def write_hparams(logger: Logger, config: Mapping[str, Any]) -> None:
    """Record the run's settings as TensorBoard hparams (with the evaluation and training
    AVEbsld as metrics) and the whole ``config`` as text.

    :param logger: the run's logger
    :param config: the contents of ``config.json``
    """
    hparams = {
        k: (v if isinstance(v, (int, float, str, bool)) else str(v))
        for k, v in config.items()
        if k not in _NOT_HPARAMS
    }
    metrics = {tag("avg_bsld", AGENT): 0.0, "rollout/avg_bsld": 0.0}
    logger.record("hparams", HParam(hparams, metrics), exclude=("stdout", "log", "json", "csv"))
    writer = tensorboard_writer(logger)
    if writer is not None:
        text = json.dumps(dict(config), indent=2, default=json_default)
        writer.add_text("config", "```\n" + text + "\n```")


def record_evaluation(
    logger: Logger, record: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]]
) -> None:
    """Record one evaluation: the agent's and every baseline's mean AVEbsld (the
    baselines again at every evaluation, so they draw flat reference lines),
    ``eval/improvement_vs_EASY``, ``eval/avg_bsld_normalizer``, ``eval/reward``,
    ``eval/best_avg_bsld`` and ``eval/seconds``.

    :param logger: the run's logger
    :param record: the evaluation record (:meth:`train.evaluator.Evaluator.evaluate`)
    :param baselines: the baselines' results by name (``mean``)
    """
    mean = float(record["avg_bsld"])
    logger.record(tag("avg_bsld", AGENT), mean)
    for name, res in baselines.items():
        logger.record(tag("avg_bsld", name), float(res["mean"]))
    if "EASY" in baselines:
        easy = float(baselines["EASY"]["mean"])
        logger.record("eval/improvement_vs_EASY", (easy - mean) / easy)
    if math.isfinite(record["normalizer_avg_bsld"]):
        logger.record("eval/avg_bsld_normalizer", record["normalizer_avg_bsld"])
    logger.record("eval/reward", record["reward"])
    logger.record("eval/best_avg_bsld", record["best_avg_bsld"])
    logger.record("eval/seconds", record["seconds"])
