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
