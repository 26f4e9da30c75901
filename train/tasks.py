"""The two tasks a run can train: the backfilling decision and the order of the queue.

``--task backfill`` trains on ``hpcgym/Backfill-v0``
(:class:`~hpcgym.envs.backfill_env.BackfillEnv`); ``--task schedule`` on
``hpcgym/Schedule-v0`` (:class:`~hpcgym.envs.schedule_env.ScheduleEnv`: which waiting job
becomes the head; EASY-SJBF backfills inside). Everything else of a run (trainers,
evaluation, TensorBoard tags, run folders, cards) is shared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpcgym.envs import task_env
from hpcgym.tasks import COMMON_OPTIONS, get_task, list_tasks

if TYPE_CHECKING:  # pragma: no cover
    from train.config import TrainConfig

__all__ = [
    "TASKS",
    "env_class",
    "queue_policy",
    "SCHEDULE_BASELINES",
    "run_mode",
    "task_baselines",
    "task_env_kwargs",
    "task_problems",
    "vector_class",
]

#: the task names (:func:`hpcgym.tasks.list_tasks`)
TASKS: tuple[str, ...] = list_tasks()


def env_class(task: str) -> Any:
    """The single env class of ``task``."""
    return task_env(task)


def vector_class(task: str) -> Any:
    """The native batched vector env class of ``task`` (:mod:`hpcgym.envs.vector`)."""
    return task_env(task, vector=True)


def queue_policy(cfg: TrainConfig) -> str:
    """The queue policy a run's plain baselines and reference are played with: ``--policy``
    for the backfill task; for the schedule task the order of the env's rows, which is
    ``--policy`` unless that is FCFS (the default), else the order of the trace's deployable
    reference (:func:`hpcgym.sim.references.deployable_policy`)."""
    task = get_task(cfg.task)
    if not task.orders_queue:
        return cfg.policy
    from hpcgym.workload import trace_spec

    spec = trace_spec(cfg.trace)
    return task.queue_policy(cfg.policy, None if spec is None else str(spec))


def task_env_kwargs(cfg: TrainConfig, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The env arguments of ``cfg.task`` from the backfill env's ``kwargs``: with
    ``--rank-estimator`` the env's ``rank_estimator``; for the schedule task its ``order``
    and, with ``--rows informed``, ``rows``, ``row_predictor`` and ``row_history``."""
    if cfg.rank_estimator is not None:
        kwargs = {**kwargs, "rank_estimator": cfg.rank_estimator}
    return get_task(cfg.task).env_kwargs(kwargs, vars(cfg))


#: the baselines of a schedule run with the default ``--baselines``: the queue heuristics
#: (EASY-SJBF backfilling), FCFS first; the run's own order is added when missing
SCHEDULE_BASELINES: tuple[str, ...] = (
    "FCFS+EASY-SJBF",
    "SJF+EASY-SJBF",
    "SAF+EASY-SJBF",
    "WFP3+EASY-SJBF",
    "UNICEF+EASY-SJBF",
    "F1+EASY-SJBF",
    "F2+EASY-SJBF",
)


def task_baselines(cfg: TrainConfig) -> tuple[str, ...]:
    """The schedulers a run evaluates beside the agent: ``--baselines``; for the schedule
    task with the default ``--baselines``, :data:`SCHEDULE_BASELINES` and the run's order
    (with ``--rank-estimator`` also that order ranked by it: the env's row order)."""
    from train.config import DEFAULT_BASELINES

    if not get_task(cfg.task).orders_queue or tuple(cfg.baselines) != tuple(DEFAULT_BASELINES):
        return tuple(cfg.baselines)
    own = f"{queue_policy(cfg)}+EASY-SJBF"
    ranked = () if cfg.rank_estimator is None else (f"{own},rank={cfg.rank_estimator}",)
    return SCHEDULE_BASELINES + (() if own in SCHEDULE_BASELINES else (own,)) + ranked


def run_mode(cfg: TrainConfig) -> str:
    """The mode part of a run's default name: ``--mode`` (backfill) or ``schedule``."""
    return get_task(cfg.task).mode_label(cfg.mode)


def task_problems(cfg: TrainConfig) -> list[str]:
    """Options that do not apply to ``cfg.task``, as ``--flag: ...`` messages."""
    takes = set(COMMON_OPTIONS) | set(get_task(cfg.task).options)
    if "rows" not in takes:
        given = [f for f in ("rows", "row_predictor", "row_history") if _rows_option(cfg, f)]
        if given:
            flags = "/".join("--" + f.replace("_", "-") for f in given)
            return [f"{flags}: the informed rows are Schedule-v0's: give --task schedule"]
        return []
    out = []
    if cfg.rows == "default" and (cfg.row_predictor is not None or cfg.row_history is not None):
        out.append("--row-predictor/--row-history apply to --rows informed only")
    if cfg.mode != "guarded" and "mode" not in takes:
        out.append(f"--mode: the backfill candidates do not apply to --task {cfg.task}")
    if (cfg.features != "paper" or cfg.feature_predictor is not None) and "features" not in takes:
        out.append(
            f"--features/--feature-predictor: --task {cfg.task} has its own columns "
            f"({get_task(cfg.task).env_id}'s observation)"
        )
    if cfg.stop_score != "learned" and "mode" not in takes:  # no STOP action
        out.append(f"--stop-score: --task {cfg.task} has no STOP action")
    return out


def _rows_option(cfg: TrainConfig, name: str) -> bool:
    """Whether the rows option ``name`` is set to something other than its default."""
    value = getattr(cfg, name)
    return value != "default" if name == "rows" else value is not None
