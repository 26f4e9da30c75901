"""The evaluation harness: agents and schedulers on the same windows of a trace.

The library behind ``hpcgym compare`` and the ``eval/`` commands (see
``docs/evaluation.md``). Above it, :mod:`hpcgym.zoo` (the shipped agents: held-out tests,
leaderboard, checkpoint selection, card text, shipping) and :mod:`hpcgym.paper` (the
RLBackfilling paper's tables and ``docs/results.md``); nothing here imports them. One
module per job:

* :mod:`.methods`: what is evaluated (:class:`Method`): an engine scheduler (any name of
  :func:`hpcgym.sim.get_scheduler`) or an agent played through the env — a heuristic
  (:data:`AGENT_HEURISTICS`, the one alias table) or a trained model configured from its
  model card (:mod:`.cards`: :class:`ModelCard`, :func:`load_model_card`, the card a
  trainer writes into its run folder :func:`load_run_card`; :mod:`.gating`: gated agents);
* :mod:`.windows`: the same windows for every method (:func:`select_windows`);
* :mod:`.play`: THE loop that plays an agent through windows (:func:`play_window`,
  :func:`play_windows`);
* :mod:`.runner`: baselines and agents on windows in a process pool (:func:`evaluate`,
  :func:`evaluate_many`, :func:`run_baselines`, :func:`parallel_map`); agent objects come
  from the caller's ``agent_loader`` (:mod:`.loaders`) — hpcgym never imports the
  agents package;
* :mod:`.results`: :class:`EvalResult`, summaries, CSV / JSON;
* :mod:`.statistics`: the paired geometric-mean ratio against a reference, its bootstrap
  interval and the wins (:func:`paired_comparison`);
* :mod:`.report`: ``table.md`` and every output file (:func:`write_outputs`);
* :mod:`.tensorboard`: one TensorBoard run per method with the same tags
  (:func:`metric_tag`, :func:`ratio_tag`, :func:`write_tensorboard`, the heuristics' runs
  :func:`write_baseline_runs`; :func:`tag` is the earlier per-method scheme);
* :mod:`.plots`: the figures;
* :mod:`.published`: the RLBackfilling paper's published numbers, shown beside ours;
* :mod:`.workers`: the context of the evaluation tasks in each worker process.

Determinism: every window is simulated from an empty machine with fixed seeds (engine
seed 0, env reset seed ``env_seed``, ``RandomValid`` seeded from ``(agent_seed, start)``),
each task is independent and results are gathered by task index, and torch runs with one
thread during evaluation. The same inputs give byte-identical ``table.md``,
``summary.csv``, ``windows.csv`` and ``results.json`` whatever ``jobs`` is. Wall-clock
times go to ``timing.json`` only.
"""

from __future__ import annotations

import warnings
from typing import Any

from hpcgym._moved import install as install_moved
from hpcgym.evaluation.cards import (
    CARD_ENV_KEYS,
    MODEL_CARD_SCHEMA,
    ModelCard,
    card_from_run,
    find_model_cards,
    is_model_card,
    load_cards,
    load_model_card,
    load_run_card,
)
from hpcgym.evaluation.loaders import (
    AGENT_LOADER_GROUP,
    AgentLoader,
    LoaderUnavailable,
    ModelFile,
    default_agents_dir,
    read_sb3_zip,
    resolve_agent_loader,
    task_of_spaces,
)
from hpcgym.evaluation.methods import (
    AGENT_HEURISTICS,
    DEFAULT_SCHEDULERS,
    Method,
    MethodUnavailable,
    agent_method,
    build_methods,
    card_method,
    object_method,
    scheduler_method,
)
from hpcgym.evaluation.play import AgentFn, Policy, act, play_window, play_windows
from hpcgym.evaluation.published import (
    EXTRA_SCHEDULERS,
    PAPER_LENGTH,
    PAPER_TABLE4,
    PAPER_TABLE5,
    PAPER_WINDOWS,
    TABLE4_COLUMNS,
    TABLE4_TRACES,
)
from hpcgym.evaluation.report import markdown_table, write_outputs
from hpcgym.evaluation.results import (
    RESULT_SCHEMA,
    STAT_COLUMNS,
    SUMMARY_COLUMNS,
    WINDOW_COLUMNS,
    EvalResult,
)
from hpcgym.evaluation.runner import (
    default_jobs,
    evaluate,
    evaluate_many,
    parallel_map,
    run_baselines,
    simulate_window,
)
from hpcgym.evaluation.statistics import (
    EQUIVALENCE_MARGIN,
    PairedComparison,
    bootstrap_interval,
    geo_ratio,
    paired_comparison,
    ratio_of_means,
    replicated_verdict,
    verdict,
    wins,
)
from hpcgym.evaluation.tensorboard import (
    metric_tag,
    ratio_tag,
    sanitize,
    tag,
    write_baseline_runs,
    write_tensorboard,
)
from hpcgym.evaluation.windows import WindowSet, select_windows

__all__ = [
    "AGENT_HEURISTICS",
    "EQUIVALENCE_MARGIN",
    "AGENT_LOADER_GROUP",
    "CARD_ENV_KEYS",
    "DEFAULT_SCHEDULERS",
    "EXTRA_SCHEDULERS",
    "MODEL_CARD_SCHEMA",
    "PAPER_LENGTH",
    "PAPER_TABLE4",
    "PAPER_TABLE5",
    "PAPER_WINDOWS",
    "RESULT_SCHEMA",
    "STAT_COLUMNS",
    "SUMMARY_COLUMNS",
    "TABLE4_COLUMNS",
    "TABLE4_TRACES",
    "WINDOW_COLUMNS",
    "AgentFn",
    "AgentLoader",
    "EvalResult",
    "LoaderUnavailable",
    "Method",
    "MethodUnavailable",
    "ModelCard",
    "ModelFile",
    "PairedComparison",
    "Policy",
    "WindowSet",
    "act",
    "agent_method",
    "bootstrap_interval",
    "build_methods",
    "card_from_run",
    "card_method",
    "default_agents_dir",
    "default_jobs",
    "evaluate",
    "evaluate_many",
    "find_model_cards",
    "geo_ratio",
    "is_model_card",
    "load_cards",
    "load_model_card",
    "load_run_card",
    "markdown_table",
    "metric_tag",
    "object_method",
    "paired_comparison",
    "ratio_of_means",
    "replicated_verdict",
    "parallel_map",
    "play_window",
    "play_windows",
    "ratio_tag",
    "read_sb3_zip",
    "resolve_agent_loader",
    "run_baselines",
    "sanitize",
    "scheduler_method",
    "select_windows",
    "simulate_window",
    "tag",
    "task_of_spaces",
    "verdict",
    "wins",
    "write_baseline_runs",
    "write_outputs",
    "write_tensorboard",
]

#: Names that left this package: the paper reproduction is :mod:`hpcgym.paper`, shipping
#: agents :mod:`hpcgym.zoo`. Old name -> new module; it works for one minor version with a
#: FutureWarning naming the new place.
_MOVED: dict[str, str] = {
    "NOISE_LEVELS": "hpcgym.paper.noise",
    "NOISE_POLICIES": "hpcgym.paper.noise",
    "noise_markdown": "hpcgym.paper.noise",
    "noise_sweep": "hpcgym.paper.noise",
    "write_noise_sweep": "hpcgym.paper.noise",
    "results_markdown": "hpcgym.paper.markdown",
    "table4": "hpcgym.paper.table4",
    "table5": "hpcgym.paper.table5",
    "TABLE_SCHEMA": "hpcgym.paper.tables",
    "PaperTable": "hpcgym.paper.tables",
    "TableSection": "hpcgym.paper.tables",
    "write_table": "hpcgym.paper.tables",
    "ship_model": "hpcgym.zoo.ship",
}


#: Modules that moved: their old paths answer with the new module and a FutureWarning for
#: one minor version (:mod:`hpcgym._moved`).
_MOVED_MODULES: dict[str, str] = {
    **{
        f"hpcgym.evaluation.{m}": f"hpcgym.zoo.{m}"
        for m in ("card_text", "heldout", "leaderboard", "schedule_board", "screen", "selection")
    },
    "hpcgym.evaluation.paper": "hpcgym.paper",
    "hpcgym.evaluation.paper.constants": "hpcgym.evaluation.published",
    **{
        f"hpcgym.evaluation.paper.{m}": f"hpcgym.paper.{m}"
        for m in ("markdown", "noise", "table4", "table5", "tables")
    },
}
install_moved(_MOVED_MODULES)


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if f"{__name__}.{name}" in _MOVED_MODULES:
        return import_module(f"{__name__}.{name}")
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    warnings.warn(
        f"hpcgym.evaluation.{name} moved to {module}.{name}; the old name goes in the next "
        "minor version",
        FutureWarning,
        stacklevel=2,
    )
    return getattr(import_module(module), name)
