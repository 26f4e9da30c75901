"""Tests of the env-independent heuristic agents in agents/heuristic.py."""

from __future__ import annotations

import numpy as np
import pytest
from dummy_env import DummyBackfillEnv, run_episodes

from hpcgym_agents import FirstValid, HeuristicAgent, RandomValid, StopAlways

K, F = 6, 5


def batch(masks: list[list[bool]]) -> tuple[np.ndarray, np.ndarray]:
    m = np.array(masks, dtype=bool)
    obs = np.zeros((len(m), K, F), np.float32)
    obs[:, :, 0] = m[:, :K]  # valid rows = unmasked rows here
    return obs, m


MASKS = [
    [False, False, True, False, True, False, True],
    [False] * K + [True],  # only STOP
    [True, True, True, True, True, True, True],
    [False, False, False, False, False, True, True],
]


def test_stop_always() -> None:
    obs, masks = batch(MASKS)
    actions, state = StopAlways().predict(obs, action_masks=masks, state=None)
    assert state is None
    np.testing.assert_array_equal(actions, [K] * 4)
    action, _ = StopAlways().predict(obs[0], action_masks=masks[0])
    assert action.shape == () and int(action) == K


def test_first_valid() -> None:
    obs, masks = batch(MASKS)
    actions, _ = FirstValid().predict(obs, action_masks=masks)
    np.testing.assert_array_equal(actions, [2, K, 0, 5])
    for i in range(len(MASKS)):
        action, _ = FirstValid().predict(obs[i], action_masks=masks[i])
        assert action.shape == () and int(action) == actions[i]


def test_first_valid_uses_the_mask_not_only_validity() -> None:
    obs, masks = batch(MASKS)
    masks[0, 2] = False  # row 2 is a real row that the env forbids
    actions, _ = FirstValid().predict(obs, action_masks=masks)
    assert actions[0] == 4
    # Without masks: derived from the validity flags (row 2 is valid again).
    actions, _ = FirstValid().predict(obs)
    np.testing.assert_array_equal(actions, [2, K, 0, 5])


@pytest.mark.parametrize("include_stop", [True, False])
def test_random_valid_is_uniform_over_valid_actions(include_stop: bool) -> None:
    obs, masks = batch(MASKS)
    agent = RandomValid(seed=3, include_stop=include_stop)
    draws = np.stack([agent.predict(obs, action_masks=masks)[0] for _ in range(6000)])
    assert masks[np.arange(4)[None, :], draws].all()
    for i, m in enumerate(masks):
        allowed = np.flatnonzero(m)
        if not include_stop and m[:K].any():
            allowed = allowed[allowed < K]
        counts = np.bincount(draws[:, i], minlength=K + 1)
        assert set(np.flatnonzero(counts)) == set(allowed.tolist())
        freq = counts[allowed] / len(draws)
        np.testing.assert_allclose(freq, 1 / len(allowed), atol=0.03)


def test_random_valid_is_seeded() -> None:
    obs, masks = batch(MASKS)

    def draws(agent: RandomValid, n: int = 50) -> np.ndarray:
        return np.stack([agent.predict(obs, action_masks=masks)[0] for _ in range(n)])

    agent = RandomValid(seed=7)
    first = draws(agent)
    np.testing.assert_array_equal(first, draws(RandomValid(seed=7)))
    assert not np.array_equal(first, draws(RandomValid(seed=8)))
    agent.reset()  # replays the stream from the constructor's seed
    np.testing.assert_array_equal(draws(agent), first)


def test_shape_and_mask_errors() -> None:
    obs, masks = batch(MASKS)
    with pytest.raises(ValueError, match=r"\(K, F\)"):
        FirstValid().predict(obs[0, 0])
    with pytest.raises(ValueError, match="does not match"):
        FirstValid().predict(obs, action_masks=masks[:, : K - 1])
    # (N, K) masks: an env without STOP (Schedule-v0); a finished episode allows row 0
    rows_only = masks[:, :K].copy()
    rows_only[1, 0] = True  # MASKS[1] has no valid row: the env's pass mask
    acts, _ = FirstValid().predict(obs, action_masks=rows_only)
    np.testing.assert_array_equal(acts, rows_only.argmax(axis=1))
    assert acts[1] == 0
    with pytest.raises(ValueError, match="does not match"):
        FirstValid().predict(obs[0], action_masks=masks)
    with pytest.raises(ValueError, match="boolean"):
        FirstValid().predict(obs, action_masks=masks * 2)
    no_stop = masks.copy()
    no_stop[:, K] = False
    with pytest.raises(ValueError, match="STOP"):
        StopAlways().predict(obs, action_masks=no_stop)
    empty = np.zeros_like(masks)
    with pytest.raises(ValueError, match="without any valid action"):
        RandomValid(seed=0).predict(obs, action_masks=empty)


def test_subclass_choosing_a_masked_action_is_caught() -> None:
    class Bad(HeuristicAgent):
        def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
            return np.zeros(len(observations), dtype=np.int64)

    obs, masks = batch(MASKS)
    with pytest.raises(RuntimeError, match="masked action"):
        Bad().predict(obs, action_masks=masks)


def test_agents_run_in_the_dummy_env() -> None:
    env = DummyBackfillEnv(max_queue=8, scatter_rows=True)  # strict: masked actions raise
    for agent in (StopAlways(), FirstValid(), RandomValid(0), RandomValid(0, include_stop=False)):
        returns = run_episodes(agent, env, 20, seed=0)
        assert returns.shape == (20,) and ((-1 <= returns) & (returns <= 1)).all()
