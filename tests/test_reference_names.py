"""One meaning per name: a reference scheduler is what ``hpcgym simulate --scheduler NAME``
runs, in both envs; ``ENV+NAME`` is the env's own queue with NAME's backfilling. And the
deployable references of Schedule-v0 (the strongest order under the starvation guard)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hpcgym.cli import main
from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.envs.schedule_env import ScheduleEnv
from hpcgym.sim.references import (
    DEPLOYABLE_REFERENCE,
    REFERENCE_POLICY,
    deployable_policy,
    deployable_reference,
    platform_limit,
    schedule_order,
    starvation_threshold,
)
from hpcgym.sim.schedulers import get_scheduler, starvation_seconds
from hpcgym.workload import load

START, LENGTH = 1000, 128  # a busy window of the synthetic workload


def _cli_metrics(name: str, capsys: pytest.CaptureFixture[str]) -> dict:
    args = ["simulate", "--scheduler", name, "--start", str(START), "--length", str(LENGTH)]
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _env_reference(env: BackfillEnv) -> dict:
    env.reset(seed=0, options={"start": START})
    ref = env.normalizer_metrics()
    assert ref is not None
    return ref


@pytest.mark.parametrize("name", ["EASY", "SAF", "EASY-SJBF", "SJF+EASY,estimate=actual"])
def test_reference_name_means_what_the_cli_runs(name, capsys):
    """``info["reference"]`` of both envs is the CLI's scheduler of that name on the same
    window, whatever the env's own queue order (``EASY`` stays FCFS + EASY)."""
    cli = _cli_metrics(name, capsys)
    envs = [
        ScheduleEnv(trace=None, window_length=LENGTH, order="SAF", reference=name),
        BackfillEnv(trace=None, window_length=LENGTH, policy="SJF", reference=name),
    ]
    for env in envs:
        assert env.reference is not None and env.reference.name == get_scheduler(name).name
        ref = _env_reference(env)
        for key in ("avg_bsld", "avg_wait", "max_wait"):
            assert ref[key] == pytest.approx(cli[key], rel=1e-12), (type(env).__name__, key)


def test_info_reference_at_the_end_is_the_named_scheduler(capsys):
    cli = _cli_metrics("EASY", capsys)
    env = ScheduleEnv(trace=None, window_length=LENGTH, order="SAF", reference="EASY")
    env.reset(seed=0, options={"start": START})
    while True:
        *_, term, trunc, info = env.step(0)
        if term or trunc:
            break
    assert info["reference"]["avg_bsld"] == pytest.approx(cli["avg_bsld"], rel=1e-12)


def test_env_prefix_is_the_envs_own_queue(capsys):
    """``ENV+NAME``: the env's order (and starvation rule) with NAME's backfilling, named for
    what it runs."""
    env = BackfillEnv(trace=None, window_length=LENGTH, policy="SJF", reference="ENV+EASY-SJBF")
    assert env.reference.name == "SJF+EASY-SJBF"
    cli = _cli_metrics("SJF+EASY-SJBF", capsys)
    assert _env_reference(env)["avg_bsld"] == pytest.approx(cli["avg_bsld"], rel=1e-12)
    # the default of Backfill-v0 is ENV+EASY-SJBF: unchanged for FCFS and for SJF envs
    assert BackfillEnv(trace=None, window_length=32).reference.name == "EASY-SJBF"
    assert BackfillEnv(trace=None, window_length=32, policy="SJF").reference.name == (
        "SJF+EASY-SJBF"
    )
    guarded = ScheduleEnv(
        trace=None, window_length=LENGTH, order="SJF", starvation="6h", reference="ENV+EASY"
    )
    assert guarded.reference.name == "SJF+EASY,starvation=6h"
    assert guarded.reference.starvation == 6 * 3600.0 == guarded.starvation
    cli = _cli_metrics("SJF+EASY,starvation=6h", capsys)
    assert _env_reference(guarded)["avg_bsld"] == pytest.approx(cli["avg_bsld"], rel=1e-12)


def test_reference_errors_say_what_to_write():
    with pytest.raises(ValueError, match=r"queue policy, not a scheduler.*SJF\+EASY-SJBF"):
        ScheduleEnv(trace=None, window_length=32, reference="SJF")
    with pytest.raises(ValueError, match="ENV\\+ takes a scheduler of the FCFS queue"):
        BackfillEnv(trace=None, window_length=32, reference="ENV+SAF")


def test_schedule_env_defaults_to_the_deployable_reference():
    """The default reference: the deployable order under the guard Θ, applied to the agent
    alike; ``reference="unguarded"`` is the unguarded order, with no guard."""
    wl = load(None)
    theta = starvation_threshold(wl)
    env = ScheduleEnv(trace=None, window_length=64)
    assert env.order == deployable_policy(None) == schedule_order(None, None)
    assert env.starvation == theta and env._spec.starvation == theta
    assert env.reference.starvation == theta
    assert env.reference.name.lower() == deployable_reference(None).lower()
    old = ScheduleEnv(trace=None, window_length=64, reference="unguarded")
    assert old.order == REFERENCE_POLICY["synthetic"] and old.starvation is None
    assert old.reference.name == f"{REFERENCE_POLICY['synthetic']}+EASY-SJBF"
    off = ScheduleEnv(trace=None, window_length=64, starvation=None)
    assert off.starvation is None and off.reference.starvation is None
    # row 0 of the default env plays its reference exactly
    _, info = env.reset(seed=3)
    while True:
        *_, term, trunc, info = env.step(0)
        if term or trunc:
            break
    assert info["agent"]["avg_bsld"] == pytest.approx(info["reference"]["avg_bsld"], rel=1e-12)


def test_deployable_table_names_full_guarded_schedulers():
    for trace, name in DEPLOYABLE_REFERENCE.items():
        spec = get_scheduler(name)
        assert spec.backfill == "sjbf" and spec.estimate == "request", trace
        assert isinstance(spec.starvation, float) and spec.starvation > 0, trace
        assert spec.policy == deployable_policy(trace)
    synthetic = get_scheduler(deployable_reference(None))
    assert synthetic.starvation == starvation_threshold(load(None))


def test_platform_limit_ignores_a_few_outliers():
    req = np.full(10_000, 18 * 3600.0)
    req[:5] = 141.7 * 3600  # a few records above the limit (SDSC-SP2 has two)
    assert platform_limit(req) == 18 * 3600.0
    assert starvation_seconds("54h") == 3 * platform_limit(req)


@pytest.mark.parametrize("trace", ["SDSC-SP2", "HPC2N"])
def test_deployable_threshold_of_the_trace(trace, require_trace):
    from hpcgym.workload import trace_spec

    require_trace(trace)
    spec = get_scheduler(DEPLOYABLE_REFERENCE[trace])
    assert spec.starvation == starvation_threshold(load(trace_spec(trace)))
