"""Decision tasks as objects (hpcgym.tasks): the registry, the generic env and a new task
added by one registration."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hpcgym  # noqa: F401  (registers the envs)
from hpcgym.envs import BackfillEnv, ScheduleEnv, task_env
from hpcgym.envs.generic_env import TaskEnv
from hpcgym.envs.vector import TaskVectorEnv
from hpcgym.tasks import (
    BackfillTask,
    DecisionTask,
    ScheduleTask,
    card_task,
    get_task,
    list_tasks,
    register_task,
    task_for_env_id,
)
from hpcgym.tasks import registry as _registry


def test_registry_lists_and_finds_the_builtin_tasks():
    assert list_tasks()[:2] == ("backfill", "schedule")
    assert get_task("Schedule") is ScheduleTask
    assert task_for_env_id("hpcgym/Backfill-v0") is BackfillTask
    assert card_task({}) is BackfillTask and card_task({"task": "schedule"}) is ScheduleTask
    assert gym.spec("hpcgym/Schedule-v0").entry_point == ScheduleTask.env_entry_point
    with pytest.raises(ValueError, match=r"unknown task 'schedul' \(did you mean 'schedule'\?\)"):
        get_task("schedul")
    with pytest.raises(ValueError, match="valid choices: backfill, schedule"):
        task_env("inspectt")


def test_the_old_task_table_warns_and_names_the_registry():
    import hpcgym.envs

    with pytest.warns(FutureWarning, match="hpcgym.tasks.list_tasks"):
        table = hpcgym.envs.TASKS
    assert table["schedule"] == (
        "hpcgym/Schedule-v0",
        "hpcgym.envs.schedule_env:ScheduleEnv",
        "hpcgym.envs.vector:ScheduleVectorEnv",
    )


def test_registering_a_taken_name_or_id_is_an_error():
    class Other(ScheduleTask):
        name = "schedule"
        env_id = "hpcgym/Other-v0"

    with pytest.raises(ValueError, match="registered already"):
        register_task(Other)

    class SameId(ScheduleTask):
        name = "same-id"

    with pytest.raises(ValueError, match="Gymnasium id of the task 'schedule'"):
        register_task(SameId)
    assert "same-id" not in list_tasks()


def test_task_envs_share_the_generic_env_not_each_other():
    assert issubclass(BackfillEnv, TaskEnv) and issubclass(ScheduleEnv, TaskEnv)
    assert not issubclass(ScheduleEnv, BackfillEnv) and not issubclass(BackfillEnv, ScheduleEnv)
    env = ScheduleEnv(window_length=32, max_queue=8)
    assert isinstance(env.task, ScheduleTask)
    with pytest.warns(FutureWarning, match="env.task.variant"):
        assert env.mode == "guarded"  # the old value, for one minor version
    assert (
        env.task.variant == "schedule" and BackfillEnv(window_length=32).task.variant == "guarded"
    )
    # the generic env with a task name is the task's env, argument for argument
    generic = TaskEnv("schedule", window_length=32, max_queue=8)
    assert generic.observation_space == env.observation_space
    assert generic.action_space == env.action_space
    with pytest.raises(ValueError, match="unknown task"):
        TaskEnv("shedule")


class _OrderTask(ScheduleTask):
    """Schedule-v0's decision under another name, with no env class and no compiled step:
    what a task added by one registration gets."""

    name = "order-test"
    env_id = "hpcgym/OrderTest-v0"
    env_entry_point = None
    vector_entry_point = None
    kernel = None


@pytest.fixture
def order_task():
    register_task(_OrderTask)
    yield _OrderTask
    _registry._TASKS.pop(_OrderTask.name, None)
    gym.registry.pop(_OrderTask.env_id, None)


def _play(env, seed, steps=400):
    obs, info = env.reset(seed=seed)
    out = [obs.copy()]
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        valid = np.flatnonzero(info["action_mask"])
        obs, reward, term, trunc, info = env.step(int(rng.choice(valid)))
        out.append((obs.copy(), reward))
        if term:
            break
    return out, info


def test_a_registered_task_is_an_env_and_a_vector_env(order_task):
    from gymnasium.utils.env_checker import check_env

    env = gym.make("hpcgym/OrderTest-v0", window_length=48, max_queue=8)
    assert isinstance(env.unwrapped, TaskEnv) and env.unwrapped.task.name == "order-test"
    check_env(env.unwrapped, skip_render_check=True)
    # the same decision as Schedule-v0: the same episode, step for step
    mine, end = _play(env, seed=3)
    theirs, their_end = _play(gym.make("hpcgym/Schedule-v0", window_length=48, max_queue=8), 3)
    assert len(mine) == len(theirs)
    for a, b in zip(mine[1:], theirs[1:], strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]
    assert end["agent"] == their_end["agent"]
    # gym.make_vec: the generic vector env, stepping its sub-envs in Python (no kernel)
    vec = gym.make_vec("hpcgym/OrderTest-v0", num_envs=2, window_length=48, max_queue=8)
    assert isinstance(vec, TaskVectorEnv)
    obs, info = vec.reset(seed=0)
    assert obs.shape == (2, 8, len(ScheduleTask().columns)) and not vec.compiled
    obs, reward, term, trunc, info = vec.step(np.zeros(2, dtype=np.int64))
    assert obs.shape == (2, 8, 16) and reward.shape == (2,)


def test_a_task_without_kernel_says_why_it_is_not_compiled(order_task):
    vec = TaskVectorEnv(2, task="order-test", window_length=32, max_queue=8, compiled=True)
    with pytest.raises(ValueError, match="compiled=True: .*has no compiled step"):
        vec.reset(seed=0)


def test_protocol_methods_of_the_builtin_tasks():
    assert issubclass(BackfillTask, DecisionTask)
    assert BackfillTask().action_space(4).n == 5 and ScheduleTask().action_space(4).n == 4
    assert BackfillTask().fallback_action(4) == 4 and ScheduleTask().fallback_action(4) == 0
    assert BackfillTask(mode="penalized", violation_penalty=-2.0).step_reward(True) == -2.0
    assert BackfillTask(mode="guarded").step_reward(True) == 0.0
    assert ScheduleTask.orders_queue and not BackfillTask.orders_queue
    assert ScheduleTask.queue_policy("SJF", None) == "SJF"
    assert (
        BackfillTask.mode_label("free") == "free" and ScheduleTask.mode_label("free") == "schedule"
    )
    card = {"policy": "sjf", "mode": "schedule", "task": "schedule"}
    env = ScheduleTask.card_env({"policy": "SJF", "mode": "schedule", "max_queue": 8}, card)
    assert env == {"max_queue": 8, "task": "schedule", "order": "SJF"}
    env = BackfillTask.card_env({"policy": "SJF", "mode": "free", "rows": "informed"}, {})
    assert env == {"policy": "SJF", "mode": "free"}
    with pytest.raises(ValueError, match="unknown mode"):
        BackfillTask(mode="guardd")
    with pytest.raises(ValueError, match="row_predictor and row_history"):
        ScheduleTask(row_history=3)


def test_no_task_name_branches_or_private_env_members_outside_the_task_modules():
    """The env machinery, the evaluation and the trainer ask the task object, never its
    name; the vector env and the batch step reach a sub-env through its public state."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    branch = re.compile(r"""(task|get\("task"[^)]*\))\s*[!=]=\s*["'](backfill|schedule)["']""")
    files = [
        *(root / "hpcgym" / "envs").glob("*.py"),
        *(root / "hpcgym" / "evaluation").rglob("*.py"),
        *(root / "train").rglob("*.py"),
    ]
    found = [
        f"{p.relative_to(root)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if branch.search(line)
    ]
    assert not found, found
    private = re.compile(r"\b(env|envs\[[a-z]+\]|first|twin)\._[a-z]")
    for name in ("vector.py", "batch.py"):
        text = (root / "hpcgym" / "envs" / name).read_text(encoding="utf-8")
        assert not private.findall(text), (name, private.findall(text))


def test_the_spaces_of_a_model_name_its_task() -> None:
    import numpy as np
    from gymnasium import spaces

    from hpcgym.evaluation.loaders import task_of_spaces
    from hpcgym.tasks.inspect import INSPECT_COLUMNS

    def box(k: int, f: int) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (k, f), dtype=np.float32)

    assert task_of_spaces(box(8, 16), spaces.Discrete(8)) == "schedule"
    assert task_of_spaces(box(8, 12), spaces.Discrete(9)) == "backfill"
    assert task_of_spaces(box(8, len(INSPECT_COLUMNS)), spaces.Discrete(2)) == "inspect"
    with pytest.raises(ValueError, match="fit no registered task"):
        task_of_spaces(box(8, 16), spaces.Discrete(3))
    with pytest.raises(ValueError, match="hpcgym/Backfill-v0"):
        task_of_spaces(box(8, 12), spaces.Discrete(9), task="schedule")
