"""Logging of a run: SB3's logger with TensorBoard (in the run folder), CSV and stdout,
the Custom Scalars layout, hparams, and the evaluation scalars.

Evaluation tags follow the one scheme of :func:`hpcgym.evaluation.tensorboard.tag`
(``eval/avg_bsld/agent``, ``eval/avg_bsld/<baseline>``, the paired ratio
``eval/geo_ratio/agent`` with ``eval/ci_low/agent``, ``eval/ci_high/agent`` and
``eval/wins/agent``), so training and ``eval/`` runs share charts.
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
    "HPARAM_METRICS",
    "add_custom_scalars_layout",
    "make_logger",
    "record_evaluation",
    "tensorboard_writer",
    "write_config_text",
    "write_hparams",
]

#: The agent's label in the evaluation tags.
AGENT = "agent"

#: The metrics of the HParams tab (:func:`write_hparams`, at the end of every session):
#: the last values of these scalars -- the final validation ratio vs the reference and its
#: interval, the final and the best validation AVEbsld, the wall time and the steps.
HPARAM_METRICS: tuple[str, ...] = (
    tag("geo_ratio", AGENT),
    tag("ci_low", AGENT),
    tag("ci_high", AGENT),
    tag("avg_bsld", AGENT),
    "eval/best_avg_bsld",
    "run/wall_time_s",
    "run/timesteps",
)

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


def add_custom_scalars_layout(
    logger: Logger, baseline_names: Sequence[str], reference: str = "EASY-SJBF"
) -> None:
    """Write a TensorBoard *Custom Scalars* layout: the agent's and the baselines'
    evaluation AVEbsld in one chart, the agent's paired ratio vs the reference with its
    95% interval (a margin chart), and the training episodes' AVEbsld against the
    reference scheduler's.

    :param logger: the run's logger
    :param baseline_names: the baselines evaluated next to the agent
    :param reference: the scheduler of the paired ratio (for the chart's title)
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
            f"eval: paired geo-mean ratio of AVEbsld vs {reference} (95% interval)": [
                "Margin",
                [tag("geo_ratio", AGENT), tag("ci_low", AGENT), tag("ci_high", AGENT)],
            ],
            "train episodes: AVEbsld (agent vs reference)": [
                "Multiline",
                ["rollout/avg_bsld$", "rollout/avg_bsld_reference$"],
            ],
            "train episodes: terminal reward": ["Multiline", ["rollout/reward$"]],
        }
    }
    writer.add_custom_scalars(layout)
    writer.flush()


def write_config_text(logger: Logger, config: Mapping[str, Any]) -> None:
    """Record the whole ``config`` as TensorBoard text (the *Text* tab).

    :param logger: the run's logger
    :param config: the contents of ``config.json``
    """
    writer = tensorboard_writer(logger)
    if writer is not None:
        text = json.dumps(dict(config), indent=2, default=json_default)
        writer.add_text("config", "```\n" + text + "\n```")


def write_hparams(
    logger: Logger, config: Mapping[str, Any], summary: Mapping[str, Any], steps: int
) -> None:
    """Record the run's settings as TensorBoard hparams with its final metrics
    (:data:`HPARAM_METRICS`): ``run/wall_time_s`` (every session) and ``run/timesteps``
    are written here at ``steps``; the others are the last evaluation's scalars. The
    test ratio is not among them: training never reads the test split
    (``eval/compare.py --tb-dir <run>`` adds it later).

    :param logger: the run's logger
    :param config: the contents of ``config.json``
    :param summary: the run's summary (``wall_time_s``, ``timesteps``)
    :param steps: the step counter at the end of the session
    """
    hparams = {
        k: (v if isinstance(v, (int, float, str, bool)) else str(v))
        for k, v in config.items()
        if k not in _NOT_HPARAMS
    }
    tb_only = ("stdout", "log", "json", "csv")
    logger.record("run/wall_time_s", float(summary["wall_time_s"]), exclude=tb_only)
    logger.record("run/timesteps", int(summary["timesteps"]), exclude=tb_only)
    metrics = dict.fromkeys(HPARAM_METRICS, 0.0)
    logger.record("hparams", HParam(hparams, metrics), exclude=tb_only)
    logger.dump(int(steps))


def record_evaluation(
    logger: Logger, record: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]]
) -> None:
    """Record one evaluation: the agent's and every baseline's mean AVEbsld (the
    baselines again at every evaluation, so they draw flat reference lines), the agent's
    paired statistics vs the reference (``eval/geo_ratio/agent``, ``eval/ci_low/agent``,
    ``eval/ci_high/agent``, ``eval/wins/agent``), ``eval/improvement_vs_EASY``,
    ``eval/avg_bsld_reference``, ``eval/reward``, ``eval/best_avg_bsld`` and
    ``eval/seconds``.

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
    paired = record.get("paired")
    if paired:
        for key in ("geo_ratio", "ci_low", "ci_high", "wins"):
            logger.record(tag(key, AGENT), paired[key])
    if math.isfinite(record["reference_avg_bsld"]):
        logger.record("eval/avg_bsld_reference", record["reference_avg_bsld"])
    logger.record("eval/reward", record["reward"])
    logger.record("eval/best_avg_bsld", record["best_avg_bsld"])
    logger.record("eval/seconds", record["seconds"])
