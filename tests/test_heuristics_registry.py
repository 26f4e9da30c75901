"""The one registry of heuristics (hpcgym.sim.registry) and its consumers.

* a queue policy registered as a Python priority function runs in the engine through the
  external queue decisions and reproduces the compiled policy start for start when its
  keys are the compiled policy's (SJF, LAF, WFP3; EASY, SJBF and no backfilling);
* Python backfillers and queue deciders registered by name play in scheduler names;
* names: the valid choices and the nearest in every error; no replacing a built-in;
* the old tables are views of the registry with their old contents;
* the "Add a heuristic" page's example (<= 30 lines) is extracted from docs/heuristics.md,
  appears in ``hpcgym compare`` and is the reward reference of an env.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import hpcgym  # noqa: F401  (registers the envs)
from hpcgym.cli import main
from hpcgym.sim import BACKFILLS, POLICIES, Simulation, get_scheduler
from hpcgym.sim.deciders import DECIDERS, EasyDecider
from hpcgym.sim.queue_deciders import CHOOSERS, PolicyChooser
from hpcgym.sim.registry import (
    PLUGIN_ENV,
    get_heuristic,
    heuristic_names,
    list_heuristics,
    register_backfill,
    register_chooser,
    register_policy,
    unregister,
)
from hpcgym.workload import load

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "heuristics.md"


@pytest.fixture(scope="module")
def window():
    return load("synthetic").window(0, 600)


@pytest.fixture
def registered():
    """Names registered by a test, removed after it."""
    names: list[tuple[str, str]] = []
    yield names
    for kind, name in names:
        try:
            unregister(kind, name)
        except ValueError:
            pass


def _policy(registered, name, key):
    entry = register_policy(name, key)
    registered.append(("policy", entry.name))
    return entry.name


@pytest.mark.parametrize(
    "compiled, key",
    [
        ("SJF", lambda v: v.estimate),
        ("LAF", lambda v: -v.estimate * v.procs),
        ("WFP3", lambda v: -((v.wait / v.estimate) ** 3) * v.procs),
    ],
)
@pytest.mark.parametrize("backfill", ["EASY", "EASY-SJBF", "NONE"])
def test_python_policy_reproduces_compiled(window, registered, compiled, key, backfill):
    name = _policy(registered, f"py-{compiled}", key)
    ref = get_scheduler(f"{compiled}+{backfill}").simulate(window)
    res = get_scheduler(f"{name}+{backfill}").simulate(window)
    np.testing.assert_array_equal(res.start, ref.start)
    np.testing.assert_array_equal(res.backfilled, ref.backfilled)
    assert res.counters["queue_decisions"] > 0  # it really decided through Python


@pytest.mark.parametrize("named", ["EASY++", "ELOSS", "EASY-AR"])
def test_python_policy_with_predictors(window, registered, named):
    """The view's estimate is the scheduler's (online predictions, corrections)."""
    name = _policy(registered, "py-sjf-est", lambda v: v.estimate)
    ref = get_scheduler(f"SJF+{named}").simulate(window)
    res = get_scheduler(f"{name}+{named}").simulate(window)
    np.testing.assert_array_equal(res.start, ref.start)


def test_python_policy_differs_when_keys_differ(window, registered):
    """Not a copy of FCFS: reversed submission order changes the schedule."""
    name = _policy(registered, "latest-first", lambda v: -v.submit)
    fcfs = get_scheduler("EASY").simulate(window)
    res = get_scheduler(f"{name}+EASY").simulate(window)
    assert not np.array_equal(res.start, fcfs.start)
    assert np.isfinite(res.start).all()


def test_python_policy_errors(window, registered):
    name = _policy(registered, "bad-shape", lambda v: np.zeros(len(v.jobs) + 1))
    with pytest.raises(ValueError, match="one finite key per waiting job"):
        get_scheduler(f"{name}+EASY").simulate(window)
    ok = _policy(registered, "ok-keys", lambda v: v.estimate)
    with pytest.raises(ValueError, match="starvation rule is not available"):
        get_scheduler(f"{ok}+EASY,starvation=54h").simulate(window)
    with pytest.raises(ValueError, match="Python priority function"):
        Simulation(window, policy=ok)
    with pytest.raises(ValueError, match="chooses the head itself"):
        get_scheduler(f"{ok}+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT").simulate(window)


def test_names_errors_and_builtins(registered):
    with pytest.raises(ValueError, match=r"unknown policy 'SJFF' \(did you mean 'SJF'\?\)"):
        get_heuristic("policy", "SJFF")
    with pytest.raises(ValueError, match="valid choices: .*lookahead1-online"):
        get_heuristic("backfill", "lookahead")
    with pytest.raises(ValueError, match="is already registered"):
        register_policy("sjf", lambda v: v.estimate)
    with pytest.raises(ValueError, match="is taken"):
        register_policy("easy-sjbf", lambda v: v.estimate)
    with pytest.raises(ValueError, match="bad policy name"):
        register_policy("a+b", lambda v: v.estimate)
    name = _policy(registered, "twice", lambda v: v.estimate)
    with pytest.raises(ValueError, match="overwrite=True"):
        register_policy("twice", lambda v: v.submit)
    register_policy("twice", lambda v: v.submit, overwrite=True)
    with pytest.raises(ValueError, match="built-in"):
        unregister("policy", "SJF")
    assert name in heuristic_names("policy") and name not in POLICIES
    with pytest.raises(ValueError, match=r"unknown scheduler .*did you mean 'TWICE\+EASY'"):
        get_scheduler("TWICEE+EASY")


def test_old_tables_are_views():
    assert POLICIES["SJF"][1] == "r" and POLICIES["SPF"] == POLICIES["SJF"]
    assert list(POLICIES)[:4] == ["FCFS", "SJF", "SPF", "SQF"] and len(POLICIES) == 15
    assert dict(BACKFILLS) == {"none": 0, "easy": 1, "sjbf": 2, "conservative": 3, "external": 4}
    assert list(DECIDERS)[:2] == ["probabilistic", "easy"] and DECIDERS["easy"] is EasyDecider
    assert CHOOSERS["policy"] is PolicyChooser
    from hpcgym.evaluation import AGENT_HEURISTICS
    from hpcgym.evaluation.gating import GATE_FALLBACKS
    from hpcgym.evaluation.schedule_board import SCHEDULE_POLICIES

    assert list(AGENT_HEURISTICS) == ["easy", "sjbf", "stop", "random", "first"]
    assert AGENT_HEURISTICS["easy"] == "EasyAgent"
    from hpcgym_agents.loading import HEURISTICS

    assert {n: c.__name__ for n, c in HEURISTICS.items()} == dict(AGENT_HEURISTICS)
    assert list(GATE_FALLBACKS) == ["sjbf", "easy", "first", "stop"]
    assert len(SCHEDULE_POLICIES) == 13 and "SPF" not in SCHEDULE_POLICIES
    kinds = {h.kind for h in list_heuristics()}
    assert kinds == {"policy", "backfill", "chooser", "estimator", "agent"}
    assert "eloss" in heuristic_names("estimator")
    with pytest.raises(TypeError):
        POLICIES["X"] = (0, "s")  # type: ignore[index]


def test_python_backfiller_and_chooser(window, registered):
    class FirstEasy(EasyDecider):
        name = "first-easy"

    register_backfill("first-easy", FirstEasy)
    registered.append(("backfill", "first-easy"))
    ref = get_scheduler("SAF+EASY").simulate(window)
    res = get_scheduler("SAF+EASY,backfill=first-easy").simulate(window)
    np.testing.assert_array_equal(res.start, ref.start)
    assert res.counters["decider_calls"] > 0

    class SjfHead(PolicyChooser):
        def __init__(self) -> None:
            super().__init__("SJF")

    register_chooser("sjf-head", SjfHead)
    registered.append(("chooser", "sjf-head"))
    res = get_scheduler("SJF+EASY,decider=sjf-head").simulate(window)
    np.testing.assert_array_equal(res.start, get_scheduler("SJF+EASY").simulate(window).start)


def _example() -> str:
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    example = blocks[0]
    assert "register_policy(" in example and len(example.splitlines()) <= 30
    return example


def test_docs_example_in_compare_and_as_reference(tmp_path, monkeypatch, capsys, registered):
    monkeypatch.delenv(PLUGIN_ENV, raising=False)
    plugin = tmp_path / "fair_share.py"
    plugin.write_text(_example(), encoding="utf-8")
    registered.append(("policy", "FAIR-SHARE"))
    argv = ["compare", "--plugin", str(plugin), "--trace", "synthetic", "--starts", "0", "512"]
    argv += ["--length", "256", "--json", "--schedulers", "EASY-SJBF", "FAIR-SHARE+EASY-SJBF"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["mean"]) == {"EASY-SJBF", "FAIR-SHARE+EASY-SJBF"}
    fair = [r for r in out["rows"] if r["scheduler"] == "FAIR-SHARE+EASY-SJBF"]
    assert len(fair) == 2 and all(np.isfinite(r["avg_bsld"]) for r in fair)
    assert str(plugin) in __import__("os").environ[PLUGIN_ENV]  # the workers load it too

    env = gymnasium.make(
        "hpcgym/Backfill-v0", reference="FAIR-SHARE+EASY-SJBF", window_length=128
    ).unwrapped
    assert env.reference.policy == "FAIR-SHARE"
    env.reset(seed=3)
    done, info = False, {}
    while not done:
        _, _, term, trunc, info = env.step(env.action_space.n - 1)  # STOP: never backfill
        done = term or trunc
    window = env._sim.workload
    expect = get_scheduler("FAIR-SHARE+EASY-SJBF").simulate(window).metrics
    assert info["reference"]["avg_bsld"] == pytest.approx(expect["avg_bsld"], rel=0, abs=0)
    plain = get_scheduler("EASY-SJBF").simulate(window).metrics["avg_bsld"]
    assert isinstance(info["reference"]["avg_bsld"], float) and plain > 0


def test_heuristics_command(capsys):
    assert main(["heuristics", "--kind", "policy"]) == 0
    out = capsys.readouterr().out
    assert "SAF" in out and "r*n" in out
    assert main(["heuristics", "--kind", "polcy"]) == 2
    assert "did you mean 'policy'" in capsys.readouterr().err


def test_the_registry_says_which_task_a_heuristic_agent_plays() -> None:
    from hpcgym import evaluation as E
    from hpcgym.evaluation.methods import agent_method

    with pytest.raises(E.MethodUnavailable, match=r"not play the schedule task; there: .*first"):
        agent_method("easy", task="schedule")
    with pytest.raises(E.MethodUnavailable, match="no heuristic agent"):
        agent_method("first", task="inspect")
    assert agent_method("first", task="schedule").label
