"""TensorBoard: one run per method, one tag per metric, the way runs are compared there.

Every method -- each heuristic and each agent -- is its own TensorBoard *run* (its own
folder: TensorBoard gives it a colour and a legend entry), and every run writes the same
tags, so ``tensorboard --logdir runs/`` overlays agents and heuristics on one chart:

* ``eval/<metric>``: the mean over the evaluation windows of every per-window metric of
  :data:`~hpcgym.evaluation.play.WINDOW_METRICS` (``eval/avg_bsld``, ``eval/avg_wait``,
  ``eval/utilization``...; a metric added there appears here too);
* against the reference ``REF`` of the paired statistics (named in the tag, so every ratio
  says against what): ``eval/ratio_vs_REF`` (paired geometric-mean ratio of AVEbsld, < 1:
  lower slowdowns than REF), ``eval/ratio_vs_REF_ci_low`` and ``eval/ratio_vs_REF_ci_high``
  (its 95 % bootstrap interval), ``eval/wins_vs_REF`` (windows with a lower AVEbsld) and
  ``eval/mean_ratio_vs_REF`` (ratio of the mean AVEbsld);
* :func:`write_baseline_runs` writes the heuristics of one trace and one set of windows as
  runs, once, into ``<logdir>/baselines/<trace>-<windows key>/<method>/``
  (:func:`windows_key`); later trainings on the same windows reuse them. A heuristic is
  constant during training, so its run is a flat line from step 0 to the last evaluation
  step any training on these windows reached (extended, never duplicated);
* a clairvoyant method (:func:`hpcgym.sim.schedulers.is_clairvoyant`, e.g. ``EASY-AR``,
  which knows the actual run times) runs in ``<method>_clairvoyant`` (:func:`run_label`);
* the HParams tab: every run writes its settings (``method``, ``kind``, ``clairvoyant``,
  the trace and windows; a training run its options) as a session, without an experiment
  summary of its own, so TensorBoard lists the union of every run's settings with the
  last value of every ``eval/`` tag (the final ratios) as metrics.

``eval/compare.py --tb-dir`` (:func:`write_tensorboard`) uses the same layout: a method it
renames to :data:`AGENT_LABEL` goes into ``--tb-dir`` itself (a training run's folder),
every other method into ``<tb-dir>/<run label>/``.

The scheme of earlier versions -- one tag per method in the agent's run,
``eval/avg_bsld/<method>``, ``eval/geo_ratio/<method>`` -- is :func:`tag`; readers
(:func:`hpcgym.evaluation.plots.plot_training`) still accept it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hpcgym.evaluation.play import WINDOW_METRICS
from hpcgym.evaluation.report import markdown_table
from hpcgym.evaluation.results import EvalResult
from hpcgym.sim.schedulers import is_clairvoyant

__all__ = [
    "AGENT_LABEL",
    "BASELINES_DIR",
    "EVAL_PREFIX",
    "RATIO_STATS",
    "baseline_rows",
    "baselines_folder",
    "method_scalars",
    "metric_tag",
    "ratio_tag",
    "run_label",
    "sanitize",
    "tag",
    "windows_key",
    "write_baseline_runs",
    "write_session_hparams",
    "write_tensorboard",
]

#: Prefix of the evaluation scalars (training-time and ``eval/compare.py``).
EVAL_PREFIX = "eval"
#: The label that puts a method into the ``--tb-dir`` folder itself (a training run).
AGENT_LABEL = "agent"
#: The folder of the heuristics' runs, next to the training runs.
BASELINES_DIR = "baselines"
#: Suffix of a clairvoyant method's run folder.
CLAIRVOYANT_SUFFIX = "_clairvoyant"
#: The record of a baselines folder: windows, reference, each method's values and extent.
BASELINES_RECORD = "baselines.json"
#: The paired statistics against the reference, by their key in :func:`ratio_tag`.
RATIO_STATS: tuple[str, ...] = ("ratio", "ci_low", "ci_high", "wins", "mean_ratio")


def sanitize(name: str) -> str:
    """A name as one tag (or file name) component: every character but letters, digits and
    ``-_.+`` becomes ``_`` (a ``/`` would add a level).

    :param name: a method, scheduler or trace name
    """
    return "".join(c if (c.isalnum() or c in "-_.+") else "_" for c in name)


def _level(prefix: str, trace: str | None) -> str:
    return prefix if trace is None else f"{prefix}/{sanitize(trace)}"


def metric_tag(metric: str, *, prefix: str = EVAL_PREFIX, trace: str | None = None) -> str:
    """The tag of a metric, the same in every method's run: ``<prefix>[/<trace>]/<metric>``.

    :param metric: ``avg_bsld``, ``avg_wait``...
    :param prefix: first level (``eval``)
    :param trace: a trace level (several traces in one folder), or ``None``
    """
    return f"{_level(prefix, trace)}/{metric}"


def ratio_tag(
    reference: str, stat: str = "ratio", *, prefix: str = EVAL_PREFIX, trace: str | None = None
) -> str:
    """The tag of a paired statistic against ``reference``, which the tag names:
    ``eval/ratio_vs_EASY-SJBF``, ``eval/ratio_vs_EASY-SJBF_ci_low``,
    ``eval/ratio_vs_EASY-SJBF_ci_high``, ``eval/wins_vs_EASY-SJBF``,
    ``eval/mean_ratio_vs_EASY-SJBF``.

    :param reference: the reference scheduler (sanitized here)
    :param stat: one of :data:`RATIO_STATS`
    :param prefix: first level
    :param trace: a trace level, or ``None``
    """
    ref = sanitize(reference)
    names = {
        "ratio": f"ratio_vs_{ref}",
        "ci_low": f"ratio_vs_{ref}_ci_low",
        "ci_high": f"ratio_vs_{ref}_ci_high",
        "wins": f"wins_vs_{ref}",
        "mean_ratio": f"mean_ratio_vs_{ref}",
    }
    if stat not in names:
        raise ValueError(f"unknown ratio statistic {stat!r}; valid: {', '.join(RATIO_STATS)}")
    return metric_tag(names[stat], prefix=prefix, trace=trace)


def tag(metric: str, method: str, *, prefix: str = EVAL_PREFIX, trace: str | None = None) -> str:
    """The tag of earlier versions, one per method: ``<prefix>[/<trace>]/<metric>/<method>``
    (readers of old runs; writers use :func:`metric_tag` in the method's own run).

    :param metric: ``avg_bsld``, ``geo_ratio``...
    :param method: the method's label (sanitized here)
    :param prefix: first level
    :param trace: a trace level (sanitized here), or ``None``
    """
    return f"{_level(prefix, trace)}/{metric}/{sanitize(method)}"


def run_label(method: str) -> str:
    """The run folder (and legend entry) of a method: its sanitized name, with
    :data:`CLAIRVOYANT_SUFFIX` for a clairvoyant scheduler (``EASY-AR_clairvoyant``).

    :param method: a scheduler name or an agent's label
    """
    return sanitize(method) + (CLAIRVOYANT_SUFFIX if is_clairvoyant(method) else "")


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(float(v))


def method_scalars(
    rows: Sequence[Mapping[str, Any]],
    reference: str | None = None,
    reference_values: Sequence[float] | None = None,
    *,
    prefix: str = EVAL_PREFIX,
    trace: str | None = None,
) -> dict[str, float]:
    """The scalars of one method on the evaluation windows: ``eval/<metric>`` (mean over
    the windows) for every metric of :data:`~hpcgym.evaluation.play.WINDOW_METRICS` that
    every window has as a finite number, and, with a reference, the paired statistics of
    its AVEbsld (:func:`ratio_tag`; :func:`hpcgym.evaluation.statistics.paired_comparison`).

    :param rows: one dict per window (``avg_bsld``, ``avg_wait``...), in window order
    :param reference: the reference scheduler's name, or ``None``
    :param reference_values: its AVEbsld on the same windows, in the same order
    :param prefix: first level of the tags
    :param trace: a trace level, or ``None``
    :return: tag -> value
    """
    from hpcgym.evaluation.statistics import paired_comparison

    out: dict[str, float] = {}
    for metric in WINDOW_METRICS:
        vals = [r.get(metric) for r in rows]
        if rows and all(_finite(v) for v in vals):
            out[metric_tag(metric, prefix=prefix, trace=trace)] = float(np.mean(np.asarray(vals)))
    if reference is None or reference_values is None or not rows:
        return out
    values = [float(r["avg_bsld"]) for r in rows]
    try:
        cmp = paired_comparison(values, reference_values)
    except ValueError:  # a failed window (not a positive number): no statistics
        return out
    stats = {
        "ratio": cmp.geo_ratio,
        "ci_low": cmp.ci_low,
        "ci_high": cmp.ci_high,
        "wins": cmp.wins,
        "mean_ratio": float(np.mean(values)) / float(np.mean(reference_values)),
    }
    for stat, v in stats.items():
        out[ratio_tag(reference, stat, prefix=prefix, trace=trace)] = float(v)
    return out


def _hparam_value(v: Any) -> int | float | str:
    if isinstance(v, bool):  # torch would write 1/0
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return v
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return json.dumps(v, default=str) if isinstance(v, (list, tuple, dict)) else str(v)


def write_session_hparams(writer: Any, hparams: Mapping[str, Any]) -> None:
    """Record a run's settings for the HParams tab: the session start and end only. No
    experiment summary: with one in any run, TensorBoard would list only that run's
    settings; without, it lists the union of every run's settings and takes as metrics
    the last value of every scalar tag of the runs (``eval/ratio_vs_...``, ``eval/avg_bsld``).

    :param writer: a ``torch.utils.tensorboard.SummaryWriter``
    :param hparams: name -> value (booleans as ``true``/``false``; lists, ``None`` and
        other objects as text)
    """
    from torch.utils.tensorboard.summary import hparams as hparams_summary

    values = {str(k): _hparam_value(v) for k, v in hparams.items()}
    _, ssi, sei = hparams_summary(values, {})
    fw = writer._get_file_writer()
    fw.add_summary(ssi)
    fw.add_summary(sei)
    writer.flush()


def baseline_rows(
    workload: Any, result: Mapping[str, Any], starts: Sequence[int], length: int
) -> list[dict[str, float]]:
    """A heuristic's metrics per window (:data:`~hpcgym.evaluation.play.WINDOW_METRICS`)
    for its TensorBoard run: simulated again with the spec it ran as in
    :func:`hpcgym.evaluation.runner.run_baselines` (``result``); AVEbsld only when that
    spec cannot be rebuilt from its name.

    :param workload: the whole trace
    :param result: the heuristic's result of ``run_baselines`` (``name``, ``spec``,
        ``per_window``)
    :param starts: the windows' first jobs
    :param length: jobs per window
    :raises RuntimeError: the simulation does not reproduce the result's AVEbsld
    """
    from hpcgym.evaluation.runner import simulate_window
    from hpcgym.sim.schedulers import get_scheduler

    plain = [{"avg_bsld": float(v)} for v in result["per_window"]]
    try:
        spec = get_scheduler(str(result["name"]))
    except ValueError:
        return plain
    if spec.to_dict() != result.get("spec"):
        return plain
    rows = []
    for s, v in zip(starts, result["per_window"], strict=True):
        out = simulate_window(workload, spec, int(s), int(length))
        row = {k: float(out[k]) for k in WINDOW_METRICS if out.get(k) is not None}
        if not math.isclose(row["avg_bsld"], float(v), rel_tol=1e-9):
            raise RuntimeError(
                f"{result['name']} on the window at {s}: AVEbsld {row['avg_bsld']} simulated "
                f"again, {v} in the evaluation"
            )
        rows.append(row)
    return rows


def windows_key(split: str, starts: Sequence[int], length: int, **settings: Any) -> str:
    """The name of a set of evaluation windows, e.g. ``validation-30x256-3f9c0a1b``: the
    split, the number and length of the windows, and a hash of the starts and of every
    other setting that changes a heuristic's result on them (``policy``, the trace's
    ``jobs``...).

    :param split: the split of the windows
    :param starts: the windows' first jobs
    :param length: jobs per window
    :param settings: the other settings, hashed (JSON values)
    """
    blob = json.dumps(
        {"split": split, "starts": [int(s) for s in starts], "length": int(length), **settings},
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha1(blob.encode()).hexdigest()[:8]
    return f"{sanitize(split)}-{len(starts)}x{int(length)}-{digest}"


def baselines_folder(logdir: str | os.PathLike[str], trace: str, key: str) -> Path:
    """``<logdir>/baselines/<trace>-<key>``: the heuristics' runs of a trace's windows.

    :param logdir: the folder that holds the training runs
    :param trace: the trace's name or file (its stem, as in run names)
    :param key: :func:`windows_key`
    """
    label = Path(str(trace)).name.split(".")[0] or "trace"
    return Path(logdir) / BASELINES_DIR / f"{sanitize(label)}-{key}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (POSIX ``flock``; no lock where it does not exist):
    the seeds of a ``--seeds`` run extend the same baselines folder."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_run(
    run: Path, scalars: Mapping[str, float], steps: Sequence[int], hparams: Mapping[str, Any]
) -> None:
    """(Re)write the events of a constant run: every scalar at every step, its hparams.
    The new events file replaces the old ones (written aside, then moved in)."""
    from torch.utils.tensorboard import SummaryWriter

    tmp = run.parent / f".{run.name}.tmp-{os.getpid()}"
    w = SummaryWriter(log_dir=str(tmp))
    try:
        for t, v in scalars.items():
            for s in steps:
                w.add_scalar(t, v, s)
        write_session_hparams(w, hparams)
    finally:
        w.close()
    run.mkdir(parents=True, exist_ok=True)
    for old in run.glob("events.out.tfevents*"):
        old.unlink()
    for f in tmp.iterdir():
        f.replace(run / f.name)
    tmp.rmdir()


def write_baseline_runs(
    folder: str | os.PathLike[str],
    methods: Sequence[str],
    rows: Callable[[str], Sequence[Mapping[str, Any]]],
    *,
    step: int,
    reference: str | None = None,
    reference_values: Sequence[float] | None = None,
    hparams: Mapping[str, Any] | None = None,
) -> Path:
    """Write the heuristics of one trace and one set of windows as TensorBoard runs, once:
    ``<folder>/<run label>/`` per method (:func:`run_label`) with the tags of
    :func:`method_scalars` as a flat line from step 0 to ``step``, and its settings for
    the HParams tab (``method``, ``kind``, ``clairvoyant`` and ``hparams``).

    The folder's :data:`BASELINES_RECORD` keeps each method's values and the last step
    its line reaches: a method already written is not computed again (``rows`` is not
    called), and its line is only rewritten, longer, when ``step`` lies beyond it. Calls
    from several processes (the seeds of a run) take turns on a lock.

    :param folder: :func:`baselines_folder`
    :param methods: the heuristics' names
    :param rows: a method's per-window rows (``avg_bsld``, ``avg_wait``...; e.g.
        :func:`hpcgym.evaluation.runner.simulate_window` per window), called only for a
        method not yet written
    :param step: the training step the lines must reach (an evaluation's step)
    :param reference: the reference of the paired statistics, or ``None``
    :param reference_values: its AVEbsld per window
    :param hparams: the settings of the windows (trace, split, length...)
    :return: ``folder``
    """
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    record_path = d / BASELINES_RECORD
    with _locked(d / ".lock"):
        record: dict[str, Any] = {"extent": 0, "methods": {}}
        if record_path.is_file():
            record = json.loads(record_path.read_text())
        extent = max(int(record.get("extent", 0)), int(step))
        written: dict[str, Any] = record.setdefault("methods", {})
        changed = extent != record.get("extent")
        for method in methods:
            entry = written.get(method)
            if entry is None:
                entry = {
                    "run": run_label(method),
                    "clairvoyant": is_clairvoyant(method),
                    "scalars": method_scalars(rows(method), reference, reference_values),
                    "extent": -1,
                }
                written[method] = entry
            if entry["extent"] >= extent:
                continue
            settings = {
                **dict(hparams or {}),
                "method": method,
                "kind": "heuristic",
                "clairvoyant": entry["clairvoyant"],
            }
            steps = sorted({0, extent})
            _write_run(d / entry["run"], entry["scalars"], steps, settings)
            entry["extent"] = extent
            changed = True
        if changed or not record_path.is_file():
            record["extent"] = extent
            record.update({"reference": reference, "settings": dict(hparams or {})})
            tmp = record_path.with_suffix(f".tmp-{os.getpid()}")
            tmp.write_text(json.dumps(record, indent=2, default=str))
            tmp.replace(record_path)
    return d


def write_tensorboard(
    results: EvalResult | Sequence[EvalResult],
    tb_dir: str | os.PathLike[str],
    step: int | None = None,
    prefix: str = EVAL_PREFIX,
    rename: Mapping[str, str] | None = None,
    by_trace: bool | None = None,
) -> Path:
    """Write an evaluation as TensorBoard runs: every method its own run
    ``<tb_dir>/<run label>/`` (:func:`run_label`), except a method renamed to
    :data:`AGENT_LABEL`, whose scalars go into ``tb_dir`` itself (a training run's
    folder: ``eval/compare.py --tb-dir runs/<run>``).

    Each run gets, at ``step``, the tags of :func:`method_scalars` (``<prefix>/avg_bsld``,
    ``<prefix>/avg_wait``... and ``<prefix>/ratio_vs_<reference>`` with its interval, wins
    and ratio of means), ``<prefix>_windows/avg_bsld`` at step = window index, and its
    settings for the HParams tab (``method``, ``kind``, ``clairvoyant``, ``trace``,
    ``split``, ``windows``, ``length``). ``tb_dir`` gets the Markdown table as text
    (``<prefix>/table``). With several results (one per trace; or ``by_trace``) the trace
    is a level of every tag: ``<prefix>/<trace>/avg_bsld``.

    :param results: one evaluation, or several (Table 4/5)
    :param tb_dir: the folder of the runs
    :param step: global step of the scalars (default: the timesteps of the evaluated
        model if exactly one has them in its card, else 0)
    :param prefix: first level of the tags (``eval``: the scheme training uses)
    :param rename: method label -> run name (``{"my-model": "agent"}`` puts a model into
        ``tb_dir``, the run it was trained in)
    :param by_trace: make the trace a level of the tags (default: with several results)
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
    names = dict(rename or {})
    d = Path(tb_dir)
    d.mkdir(parents=True, exist_ok=True)
    writers: dict[Path, Any] = {}
    settings: dict[Path, dict[str, Any]] = {}

    def writer(run: Path) -> Any:
        if run not in writers:
            writers[run] = SummaryWriter(log_dir=str(run))
        return writers[run]

    root = writer(d)
    layout: dict[str, list[Any]] = {}
    try:
        for r in res_list:
            trace = None
            if by_trace or (by_trace is None and len(res_list) > 1):
                trace = r.trace if r.tag is None else f"{r.trace}_{r.tag}"
            ref = r.ratio_reference if r.ratio_values is not None else None
            for m in r.methods:
                name = names.get(m.label, m.label)
                run = d if name == AGENT_LABEL else d / run_label(name)
                rows = [row for row in r.rows if row["method"] == m.label]
                w = writer(run)
                scalars = method_scalars(rows, ref, r.ratio_values, prefix=prefix, trace=trace)
                for t, v in scalars.items():
                    w.add_scalar(t, v, step)
                win_tag = metric_tag("avg_bsld", prefix=f"{prefix}_windows", trace=trace)
                for wi, row in enumerate(rows):
                    w.add_scalar(win_tag, float(row["avg_bsld"]), wi)
                s = settings.setdefault(
                    run,
                    {
                        "method": m.label,
                        "kind": m.kind,
                        "clairvoyant": is_clairvoyant(m.label),
                        "split": r.windows.split,
                        "windows": len(r.windows.starts),
                        "length": int(r.windows.length),
                    },
                )
                s["trace"] = r.trace if "trace" not in s else f"{s['trace']},{r.trace}"
            level = _level(prefix, trace)
            root.add_text(f"{level}/table", markdown_table(r), step)
            if ref is not None:
                layout[f"{level}: ratio of AVEbsld vs {ref} [95% interval]"] = [
                    "Margin",
                    [
                        ratio_tag(ref, stat, prefix=prefix, trace=trace)
                        for stat in ("ratio", "ci_low", "ci_high")
                    ],
                ]
        if layout:
            root.add_custom_scalars({"hpcgym evaluation": layout})
        for run, s in settings.items():
            if run != d:  # a training run's folder keeps the run's own settings
                write_session_hparams(writer(run), s)
    finally:
        for w in writers.values():
            w.close()
    return d
