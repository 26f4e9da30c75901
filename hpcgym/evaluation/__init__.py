"""Evaluation of backfilling agents and schedulers on the same windows of a trace.

The library behind ``hpcgym compare`` and the ``eval/`` commands (see
``docs/evaluation.md``). One module per job:

* :mod:`.methods`: what is evaluated (:class:`Method`): an engine scheduler (any name of
  :func:`hpcgym.sim.get_scheduler`) or an agent played through the env — a heuristic
  (:data:`AGENT_HEURISTICS`, the one alias table) or a trained model configured from its
  model card (:mod:`.cards`: :class:`ModelCard`, :func:`card_from_run`, :func:`ship_model`);
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
* :mod:`.paper`: the RLBackfilling paper's Table 4 / Table 5 (:func:`table4`,
  :func:`table5`), its Fig. 1 noise sweep (:func:`noise_sweep`) and ``docs/results.md``
  (:func:`results_markdown`).

Determinism: every window is simulated from an empty machine with fixed seeds (engine
seed 0, env reset seed ``env_seed``, ``RandomValid`` seeded from ``(agent_seed, start)``),
each task is independent and results are gathered by task index, and torch runs with one
thread during evaluation. The same inputs give byte-identical ``table.md``,
``summary.csv``, ``windows.csv`` and ``results.json`` whatever ``jobs`` is. Wall-clock
times go to ``timing.json`` only.
"""

from __future__ import annotations

from hpcgym.evaluation.cards import (
    CARD_ENV_KEYS,
    MODEL_CARD_SCHEMA,
    ModelCard,
    card_from_run,
    find_model_cards,
    is_model_card,
    load_cards,
    load_model_card,
    ship_model,
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
from hpcgym.evaluation.paper.constants import (
    EXTRA_SCHEDULERS,
    PAPER_LENGTH,
    PAPER_TABLE4,
    PAPER_TABLE5,
    PAPER_WINDOWS,
    TABLE4_COLUMNS,
    TABLE4_TRACES,
)
from hpcgym.evaluation.paper.markdown import results_markdown
from hpcgym.evaluation.paper.noise import (
    NOISE_LEVELS,
    NOISE_POLICIES,
    noise_markdown,
    noise_sweep,
    write_noise_sweep,
)
from hpcgym.evaluation.paper.table4 import table4
from hpcgym.evaluation.paper.table5 import table5
from hpcgym.evaluation.paper.tables import TABLE_SCHEMA, PaperTable, TableSection, write_table
from hpcgym.evaluation.play import AgentFn, Policy, act, play_window, play_windows
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
    "NOISE_LEVELS",
    "NOISE_POLICIES",
    "PAPER_LENGTH",
    "PAPER_TABLE4",
    "PAPER_TABLE5",
    "PAPER_WINDOWS",
    "RESULT_SCHEMA",
    "STAT_COLUMNS",
    "SUMMARY_COLUMNS",
    "TABLE4_COLUMNS",
    "TABLE4_TRACES",
    "TABLE_SCHEMA",
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
    "PaperTable",
    "Policy",
    "TableSection",
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
    "markdown_table",
    "metric_tag",
    "noise_markdown",
    "noise_sweep",
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
    "results_markdown",
    "run_baselines",
    "sanitize",
    "scheduler_method",
    "select_windows",
    "ship_model",
    "simulate_window",
    "table4",
    "table5",
    "tag",
    "task_of_spaces",
    "verdict",
    "wins",
    "write_baseline_runs",
    "write_noise_sweep",
    "write_outputs",
    "write_table",
    "write_tensorboard",
]
