"""Shared test helpers: where the real traces are, and skipping tests that need one.

Real traces are found through ``HPCGYM_TRACE_DIR`` (an os.pathsep-separated list of
directories; e.g. ``HPCGYM_TRACE_DIR=/work/shared/traces``), the repository's
``traces/`` folder or the user cache. Tests never download them.

Use ``from conftest import require_trace`` (or the fixtures below) in a test module.
The checkout is on ``sys.path`` (``pythonpath`` in pyproject.toml's pytest section), so
tests import the scripts as packages: ``from eval.heldout import main``, ``from
research.probes import window_dependence``, ``from bench import check_results``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def trace_dirs() -> list[Path]:
    """The directories listed in ``$HPCGYM_TRACE_DIR`` (may be empty)."""
    raw = os.environ.get("HPCGYM_TRACE_DIR", "")
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]


def require_trace(name: str) -> Path:
    """Local file of the registered trace ``name`` (SHA-256 checked), or skip the test."""
    from hpcgym.workload.traces import TraceNotFoundError, resolve_trace

    try:
        return resolve_trace(name, download=False)
    except TraceNotFoundError:
        pytest.skip(f"trace {name!r} is not available locally (set HPCGYM_TRACE_DIR)")


@pytest.fixture
def trace_dir() -> list[Path]:
    """The ``$HPCGYM_TRACE_DIR`` path list."""
    return trace_dirs()


@pytest.fixture(name="require_trace")
def require_trace_fixture() -> Callable[[str], Path]:
    """The :func:`require_trace` helper, as a fixture."""
    return require_trace


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread for a module of tiny networks (faster, and keeps the shared CPU
    free); use it with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch as th

    before = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(before)


def tiny_agent_card(directory: Path, **card: object) -> Path:
    """A model card ``directory/tiny.json`` of a MaskablePPO KernelPolicy trained for 64
    steps on 64-job synthetic windows (FCFS, guarded, 16 queue rows); ``card`` adds or
    overrides card keys."""
    import json

    from sb3_contrib import MaskablePPO

    from hpcgym import evaluation as E
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents.kernel_policy import KernelPolicy

    env = BackfillEnv(trace=None, window_length=64, max_queue=16, reference=None)
    model = MaskablePPO(KernelPolicy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(64)
    model.save(directory / "tiny.zip")
    data = {
        "schema": E.MODEL_CARD_SCHEMA,
        "name": "tiny",
        "model": "tiny.zip",
        "trace": "synthetic",
        "policy": "FCFS",
        "mode": "guarded",
        "max_queue": 16,
        **card,
    }
    (directory / "tiny.json").write_text(json.dumps(data))
    return directory / "tiny.json"


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels() -> None:
    """Compile the vector envs' batch step once, at the start of the session, into numba's
    disk cache: the training and sweep tests start processes that then load it instead
    of each compiling it at the same time."""
    from hpcgym.envs.vector import BackfillVectorEnv

    BackfillVectorEnv(1, window_length=8).reset(seed=0)


def same_metrics(a: dict, b: dict) -> bool:
    """Two metric dicts are equal, a ``nan`` equal to a ``nan`` (a job-size class with no
    job has no wait: ``avg_wait_wide`` is ``nan`` then, and ``nan != nan``)."""
    import math

    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y:
            return False
    return True


# ---------------------------------------------------------------- unit / integration
#: Test modules that are integration tests as a whole: they build or install the package,
#: build the site, run the documentation's code, start Ray, train with the trainer's
#: command line or read whole real traces. Every other module is a unit module.
INTEGRATION_MODULES: frozenset[str] = frozenset(
    {
        "test_bench_scale.py",  # bench/scale.py: env and training rates
        "test_cleanrl.py",  # the single-file CleanRL trainer, end to end
        "test_doc_snippets.py",  # every Python block of the docs, some of which train
        "test_eloss_traces.py",  # ELOSS on whole traces
        "test_published.py",  # full-trace validation against the published tables
        "test_ray.py",  # an embedded Ray: the Ray backend, a Tune sweep, RLlib
        "test_site.py",  # mkdocs build --strict
        "test_tensorboard_runs.py",  # training runs written for TensorBoard
        "test_train.py",  # train/ppo.py runs
        "test_train_informed.py",  # train/ppo.py --task schedule --rows informed runs
        "test_train_lean.py",  # the lean PPO trained beside MaskablePPO
        "test_train_seeds.py",  # seeds trained in worker processes, Ctrl-C
        "test_train_speed.py",  # the fast training path against the slow one
        "test_wheel.py",  # python -m build, then a clean venv from the package index
    }
)
#: Integration tests inside unit modules (``module::test function``, every parameter):
#: a live Slurm, a training run, a command line or a Python run in a subprocess.
INTEGRATION_TESTS: frozenset[str] = frozenset(
    {
        "test_agents_loading.py::test_shipped_agents_load_in_a_fresh_process_without_an_agents_module",
        "test_anchor_kl.py::test_a_strong_anchor_holds_the_policy_near_its_start",
        "test_byo_agents.py::test_eval_compare_task",
        "test_byo_agents.py::test_python_recipe_stock_maskable_ppo",
        "test_golden.py::test_golden",  # the documented command lines, run again
        "test_imitate.py::test_bc_learns_saves_a_loadable_model_and_is_deterministic",
        "test_imitate.py::test_online_lookahead_teacher_driven_env_is_the_lookahead_scheduler",
        "test_kernel_policy.py::test_learns_the_dummy_task_better_than_random",
        "test_kernel_policy.py::test_load_in_fresh_process_without_custom_objects",
        "test_kernel_policy.py::test_short_learn_run_is_fast",
        "test_kernel_score.py::test_cli_hidden_search_ships_a_run_that_plays_the_searched_vector",
        "test_linear_search.py::test_cli_ships_a_run_that_plays_the_searched_weights",
        "test_linear_search.py::test_cli_without_a_preset_and_with_a_trace_mix_ships",
        "test_probe_ranking_predictor.py::test_probe_runs",
        "test_schedule.py::test_schedule_runs_train_evaluate_and_make_cards",
        "test_selection.py::test_selection_among_given_models",
        "test_selection.py::test_selection_for_transfer",
        "test_slurm.py::test_a_daemon_behind_a_forking_launcher_is_stopped_too",
        "test_slurm.py::test_daemons_are_stopped_by_pid_also_on_error",
        "test_slurm.py::test_daemons_stop_when_the_process_that_started_them_is_killed",
        "test_slurm.py::test_replay_on_one_node_per_core_runs_every_job_in_conservative_order",
        "test_slurm.py::test_sacct_through_slurmdbd",
        "test_slurm.py::test_slurmctld_restart_keeps_the_jobs",
        "test_slurm_bridge.py::test_live_agents_run_and_log_their_choices",
        "test_slurm_bridge.py::test_live_faults_lose_no_job",
        "test_slurm_bridge.py::test_live_saf_schedule_is_hpcgyms",
        "test_train_config.py::test_lr_schedule_linear_falls_to_zero_at_the_target",
        "test_train_config.py::test_seeds_stopped_on_their_time_limit_continue_with_a_new_time_limit",
        "test_train_config.py::test_seeds_trains_one_run_per_seed_and_resumes",
    }
)
#: Markers that make a test an integration test wherever it is: ``traces`` (reads real
#: trace files) and ``slow``.
INTEGRATION_MARKERS: tuple[str, ...] = ("integration", "traces", "slow")


def is_integration(item: pytest.Item) -> bool:
    """Whether a collected test is an integration test: its module is in
    :data:`INTEGRATION_MODULES`, the test in :data:`INTEGRATION_TESTS`, or it carries one of
    :data:`INTEGRATION_MARKERS` (``@pytest.mark.integration`` in a test module)."""
    module = item.path.name
    name = getattr(item, "originalname", item.name)
    return (
        module in INTEGRATION_MODULES
        or f"{module}::{name}" in INTEGRATION_TESTS
        or any(item.get_closest_marker(m) is not None for m in INTEGRATION_MARKERS)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test ``integration`` or ``unit`` (exactly one of them): ``pytest -m "not
    integration"`` is the fast subset (docs/contributing.md); a new test module is a unit
    module unless it is listed above or its tests carry ``@pytest.mark.integration``."""
    for item in items:
        item.add_marker(pytest.mark.integration if is_integration(item) else pytest.mark.unit)
