"""Logging of a run: SB3's logger with TensorBoard (in the run folder), CSV and stdout,
the Custom Scalars layout, hparams, and the evaluation scalars.

The run folder is the agent's TensorBoard run; its evaluation tags are those every
method's run writes (:mod:`hpcgym.evaluation.tensorboard`): ``eval/avg_bsld``,
``eval/avg_wait``... and ``eval/ratio_vs_<reference>`` with its interval, so the
heuristics' runs (``<logdir>/baselines/...``, written by the evaluator) and other agents'
runs overlay it on the same charts.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from stable_baselines3.common.logger import (
    CSVOutputFormat,
    HumanOutputFormat,
    Logger,
    TensorBoardOutputFormat,
)

from hpcgym.evaluation.tensorboard import (
    method_scalars,
    metric_tag,
    ratio_tag,
    write_session_hparams,
)
from train.rundir import RunDir, json_default

__all__ = [
    "PurgingTensorBoardFormat",
    "add_custom_scalars_layout",
    "hparam_metrics",
    "make_logger",
    "record_evaluation",
    "tensorboard_writer",
    "write_config_text",
    "write_hparams",
]


def hparam_metrics(reference: str) -> tuple[str, ...]:
    """The final metrics a run's HParams entry is read for: the validation ratio vs
    ``reference`` and its interval, the final and the best validation AVEbsld, the wall
    time and the steps. (The HParams tab lists the last value of every scalar tag; these
    are the ones :func:`write_hparams` makes sure exist.)

    :param reference: the scheduler of the paired ratio
    """
    return (
        ratio_tag(reference),
        ratio_tag(reference, "ci_low"),
        ratio_tag(reference, "ci_high"),
        metric_tag("avg_bsld"),
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


def add_custom_scalars_layout(logger: Logger, reference: str = "EASY-SJBF") -> None:
    """Write a TensorBoard *Custom Scalars* layout: the paired ratio of AVEbsld vs the
    reference with its 95% interval (a margin chart, one per run). The comparison of
    methods needs no layout: every method is a run with the same tags, so the Scalars
    tab's ``eval/avg_bsld`` chart overlays them with TensorBoard's colours and legend.

    :param logger: the run's logger
    :param reference: the scheduler of the paired ratio
    """
    writer = tensorboard_writer(logger)
    if writer is None:
        return
    layout = {
        "hpcgym": {
            f"eval: paired geo-mean ratio of AVEbsld vs {reference} [95% interval]": [
                "Margin",
                [ratio_tag(reference, stat) for stat in ("ratio", "ci_low", "ci_high")],
            ],
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
    """Record the run's settings for the HParams tab
    (:func:`hpcgym.evaluation.tensorboard.write_session_hparams`: a session without an
    experiment summary, so the tab lists these settings beside the heuristics' and other
    runs', with the last value of every scalar as metrics, :func:`hparam_metrics` among
    them). ``run/wall_time_s`` (every session) and ``run/timesteps`` are written here at
    ``steps``. The test ratio is not among them: training never reads the test split
    (``eval/compare.py --tb-dir <run>`` adds it later).

    :param logger: the run's logger
    :param config: the contents of ``config.json``
    :param summary: the run's summary (``wall_time_s``, ``timesteps``)
    :param steps: the step counter at the end of the session
    """
    hparams = {k: v for k, v in config.items() if k not in _NOT_HPARAMS}
    hparams.update(method=str(config.get("run_name")), kind="agent", clairvoyant=False)
    tb_only = ("stdout", "log", "json", "csv")
    logger.record("run/wall_time_s", float(summary["wall_time_s"]), exclude=tb_only)
    logger.record("run/timesteps", int(summary["timesteps"]), exclude=tb_only)
    logger.dump(int(steps))
    writer = tensorboard_writer(logger)
    if writer is not None:
        write_session_hparams(writer, hparams)


def record_evaluation(
    logger: Logger,
    record: Mapping[str, Any],
    reference: str | None = None,
    reference_values: Sequence[float] | None = None,
) -> None:
    """Record one evaluation of the agent with the tags of every method's run
    (:func:`hpcgym.evaluation.tensorboard.method_scalars`): ``eval/<metric>`` (the mean
    over the windows of ``avg_bsld``, ``avg_wait``, ``utilization``...) and, with the
    reference's values, ``eval/ratio_vs_<reference>`` with ``_ci_low``, ``_ci_high``,
    ``eval/wins_vs_<reference>`` and ``eval/mean_ratio_vs_<reference>``; then
    ``eval/avg_bsld_reference`` (the env's reward reference on the windows),
    ``eval/reward``, ``eval/best_avg_bsld`` and ``eval/seconds``.

    :param logger: the run's logger
    :param record: the evaluation record (:meth:`train.evaluator.Evaluator.evaluate`)
    :param reference: the scheduler of the paired ratio, or ``None``
    :param reference_values: its AVEbsld per window
    """
    for key, value in method_scalars(record["per_window"], reference, reference_values).items():
        logger.record(key, value)
    if math.isfinite(record["reference_avg_bsld"]):
        logger.record("eval/avg_bsld_reference", record["reference_avg_bsld"])
    logger.record("eval/reward", record["reward"])
    logger.record("eval/best_avg_bsld", record["best_avg_bsld"])
    logger.record("eval/seconds", record["seconds"])
