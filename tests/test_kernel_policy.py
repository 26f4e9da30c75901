"""Tests of agents.kernel_policy.KernelPolicy (the RLBackfilling kernel policy for MaskablePPO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch as th
from dummy_env import DummyBackfillEnv, run_episodes
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.utils import update_learning_rate

from hpcgym_agents import FirstValid, KernelPolicy, RandomValid
from hpcgym_agents.kernel_policy import PADDING_LOGIT, ROW_CONTEXTS, STOP_SCORES, VALUE_HEADS

REPO = Path(__file__).resolve().parents[1]
K, F = 16, 10
COMBOS = [(s, v) for s in STOP_SCORES for v in VALUE_HEADS]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make_policy(k: int = K, f: int = F, seed: int = 0, **kwargs: object) -> KernelPolicy:
    th.manual_seed(seed)
    policy = KernelPolicy(
        spaces.Box(0.0, 1.0, (k, f), np.float32),
        spaces.Discrete(k + 1),
        lambda _: 3e-4,
        **kwargs,  # type: ignore[arg-type]
    )
    # Non-trivial weights: the SB3 init (0.01 output gain) makes all scores nearly equal.
    with th.no_grad():
        for p in policy.parameters():
            p.add_(0.5 * th.randn_like(p))
    return policy


def random_batch(
    rng: np.random.Generator, n: int, k: int = K, f: int = F, scatter: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Observations (n, k, f) with a random number of valid rows at random places, and masks
    that allow a random subset of the valid rows (+ STOP). Row 0 of the batch has no valid
    row, row 1 has valid rows but a STOP-only mask."""
    obs = rng.random((n, k, f), dtype=np.float32)
    masks = np.zeros((n, k + 1), bool)
    masks[:, k] = True
    for i in range(n):
        n_valid = 0 if i == 0 else int(rng.integers(1, k, endpoint=True))
        valid = rng.permutation(k) < n_valid if scatter else np.arange(k) < n_valid
        obs[i, :, 0] = valid
        obs[i, ~valid, 1:] = 0.0
        if i != 1:
            masks[i, :k] = valid & (rng.random(k) < 0.6)
    return obs, masks


def probs_and_values(
    policy: KernelPolicy, obs: np.ndarray, masks: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obs_t = th.as_tensor(obs)
    with th.no_grad():
        dist = policy.get_distribution(obs_t, action_masks=masks)
        values = policy.predict_values(obs_t)
        logits = policy.action_logits(obs_t)
    return dist.distribution.probs.numpy(), values.numpy(), logits.numpy()


# --------------------------------------------------------------------------- masking
@pytest.mark.parametrize("stop_score", STOP_SCORES)
def test_never_samples_a_masked_action(stop_score: str) -> None:
    rng = np.random.default_rng(1)
    policy = make_policy(stop_score=stop_score)
    with th.no_grad():  # make the rows attractive: masked ones would be sampled if leaked
        policy.mlp_extractor.kernel_out.bias.fill_(20.0)
    obs, masks = random_batch(rng, 64)
    obs_t = th.as_tensor(obs)
    with th.no_grad():
        dist = policy.get_distribution(obs_t, action_masks=masks)
        probs = dist.distribution.probs.numpy()
        samples = np.stack([dist.get_actions(deterministic=False).numpy() for _ in range(300)])
    assert (probs[~masks] == 0.0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    assert masks[np.arange(64)[None, :], samples].all()
    assert (samples[:, 1] == K).all()  # STOP-only mask
    assert (samples[:, 0] == K).all()  # no valid row at all
    # Unmasked rows are sampled too (the test would pass trivially if only STOP came out).
    assert (samples < K).mean() > 0.5
    # Through the public predict() API, single observations and batches.
    for i in range(2, 10):
        for _ in range(20):
            action, _ = policy.predict(obs[i], action_masks=masks[i], deterministic=False)
            assert action.shape == () and masks[i, int(action)]
    actions, _ = policy.predict(obs, action_masks=masks, deterministic=False)
    assert actions.shape == (64,) and masks[np.arange(64), actions].all()


def test_deterministic_predict_is_masked_argmax() -> None:
    rng = np.random.default_rng(2)
    policy = make_policy()
    obs, masks = random_batch(rng, 32)
    probs, _, logits = probs_and_values(policy, obs, masks)
    actions, _ = policy.predict(obs, action_masks=masks, deterministic=True)
    expected = np.where(masks, logits, -np.inf).argmax(axis=1)
    np.testing.assert_array_equal(actions, expected)
    np.testing.assert_array_equal(actions, probs.argmax(axis=1))


@pytest.mark.parametrize(("stop_score", "value_head"), COMBOS)
@pytest.mark.parametrize("row_context", ROW_CONTEXTS)
def test_padding_rows_do_not_change_probabilities_or_value(
    stop_score: str, value_head: str, row_context: str
) -> None:
    rng = np.random.default_rng(3)
    policy = make_policy(stop_score=stop_score, value_head=value_head, row_context=row_context)
    obs, masks = random_batch(rng, 32)
    altered = obs.copy()
    for i in range(len(obs)):
        pad = np.flatnonzero(obs[i, :, 0] == 0)
        # Garbage in the padding rows, then shuffle the padding rows among themselves.
        altered[i, pad, 1:] = rng.random((pad.size, F - 1), dtype=np.float32)
        altered[i, pad] = altered[i, rng.permutation(pad)]
    assert not np.array_equal(obs, altered)
    for m in (masks, None):
        p0, v0, _ = probs_and_values(policy, obs, m)
        p1, v1, _ = probs_and_values(policy, altered, m)
        np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-7)
        np.testing.assert_allclose(v1, v0, rtol=0, atol=1e-6)
    # Without a mask, padding rows still get exactly zero probability.
    p_nomask, _, logits = probs_and_values(policy, altered, None)
    pad = altered[:, :, 0] == 0
    assert (p_nomask[:, :K][pad] == 0.0).all()
    assert (logits[:, :K][pad] == PADDING_LOGIT).all()


@pytest.mark.parametrize(("stop_score", "value_head"), COMBOS)
@pytest.mark.parametrize("row_context", ROW_CONTEXTS)
def test_permuting_rows_permutes_logits(stop_score: str, value_head: str, row_context: str) -> None:
    rng = np.random.default_rng(4)
    policy = make_policy(stop_score=stop_score, value_head=value_head, row_context=row_context)
    obs, masks = random_batch(rng, 16)
    perm = rng.permutation(K)
    _, v0, l0 = probs_and_values(policy, obs, None)
    p_m0, _, _ = probs_and_values(policy, obs, masks)
    p_m1, v1, l1 = probs_and_values(
        policy, obs[:, perm], np.concatenate([masks[:, perm], masks[:, K:]], 1)
    )
    np.testing.assert_allclose(l1[:, :K], l0[:, perm], rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(l1[:, K], l0[:, K], rtol=1e-6, atol=1e-5)  # STOP unchanged
    np.testing.assert_allclose(p_m1[:, :K], p_m0[:, perm], atol=1e-6)
    if value_head == "pooled":
        np.testing.assert_allclose(v1, v0, rtol=1e-5, atol=1e-5)
    else:  # the flat (paper) value MLP is position-dependent
        assert not np.allclose(v1, v0, atol=1e-4)


# --------------------------------------------------------------------------- architecture
def kernel_param_count(f: int, arch: tuple[int, ...]) -> int:
    sizes = [f, *arch, 1]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))


def test_parameter_counts() -> None:
    # The real env's default size: K = 128 rows of F = 10 features.
    policy = make_policy(k=128, f=10)
    counts = policy.parameter_counts()
    assert counts["kernel"] == kernel_param_count(10, (32, 16, 8)) == 1025
    assert counts["stop"] == 1
    # flat value: 1280 -> 32 -> 16 -> 8 -> 1
    assert counts["value"] == kernel_param_count(1280, (32, 16, 8)) == 41665
    assert counts["total"] == counts["policy"] + counts["value"]
    groups = {g["name"]: sum(p.numel() for p in g["params"]) for g in policy.optimizer.param_groups}
    assert groups == {"policy": counts["policy"], "value": counts["value"]}

    pooled = make_policy(k=128, f=10, value_head="pooled", stop_score="pooled").parameter_counts()
    assert pooled["kernel"] == 1025
    assert pooled["stop"] == (16 * 16 + 16) + (16 + 1)  # (mean|max of 8) -> 16 -> 1
    # row encoder 10 -> 32 -> 16; (mean|max = 32) -> 64 -> 32 -> 1; independent of K
    assert pooled["value"] == (10 * 32 + 32 + 32 * 16 + 16) + kernel_param_count(32, (64, 32))
    assert (
        make_policy(k=8, f=10, value_head="pooled").parameter_counts()["value"] == pooled["value"]
    )
    assert make_policy(stop_score="fixed").parameter_counts()["stop"] == 0
    custom = make_policy(kernel_arch=(8, 4), activation_fn=th.nn.Tanh).parameter_counts()
    assert custom["kernel"] == kernel_param_count(F, (8, 4))


@pytest.mark.parametrize(("stop_score", "value_head"), COMBOS)
@pytest.mark.parametrize("row_context", ROW_CONTEXTS)
def test_all_heads_train(stop_score: str, value_head: str, row_context: str) -> None:
    """Every parameter gets a gradient from the PPO losses; output shapes are right."""
    rng = np.random.default_rng(5)
    policy = make_policy(stop_score=stop_score, value_head=value_head, row_context=row_context)
    obs, masks = random_batch(rng, 32)
    obs[:, 0, 0] = 1.0  # every state has a valid row, so that max pooling reaches all rows
    masks[:, 0] = True
    actions = th.as_tensor(np.argmax(masks, axis=1))
    values, log_prob, entropy = policy.evaluate_actions(
        th.as_tensor(obs), actions, th.as_tensor(masks)
    )
    assert values.shape == (32, 1) and log_prob.shape == (32,) and entropy.shape == (32,)
    assert th.isfinite(log_prob).all() and th.isfinite(entropy).all()
    (values.square().mean() - log_prob.mean() - entropy.mean()).backward()
    for name, p in policy.named_parameters():
        assert p.grad is not None and th.count_nonzero(p.grad) > 0, name


def test_row_context_scores_each_row_against_the_others() -> None:
    """With ``row_context="pooled"`` a row's score changes when another valid row changes
    (and not when a padding row does); without it, it never does."""
    rng = np.random.default_rng(8)
    obs, _ = random_batch(rng, 16, scatter=False)
    obs[:, :3, 0] = 1.0  # rows 0-2 valid everywhere
    other = obs.copy()
    other[:, 1, 1:] = rng.random((16, F - 1), dtype=np.float32)  # another valid row
    padding = obs.copy()
    pad = padding[:, :, 0] == 0
    padding[:, :, 1:][pad] = 5.0
    for context, changes in (("none", False), ("pooled", True)):
        policy = make_policy(row_context=context)
        _, _, l0 = probs_and_values(policy, obs, None)
        _, _, l1 = probs_and_values(policy, other, None)
        _, _, l2 = probs_and_values(policy, padding, None)
        assert (not np.allclose(l1[:, 0], l0[:, 0], atol=1e-4)) == changes, context
        np.testing.assert_allclose(l2, l0, rtol=1e-6, atol=1e-5)
    counts = make_policy(k=128, f=10, row_context="pooled").parameter_counts()
    # kernel 10 -> 32 -> 16 -> 8; context (row | mean | max = 24) -> 16; score 16 -> 1
    assert counts["kernel"] == (10 * 32 + 32 + 32 * 16 + 16 + 16 * 8 + 8) + (24 * 16 + 16) + 17
    groups = {
        g["name"]: sum(p.numel() for p in g["params"])
        for g in make_policy(row_context="pooled").optimizer.param_groups
    }
    assert groups["policy"] == make_policy(row_context="pooled").parameter_counts()["policy"]


def test_train_config_knows_the_policy_options() -> None:
    """train/config.py declares the policy's option choices without importing torch: the
    same tuples as the policy's."""
    from train import config

    assert config.STOP_SCORES == STOP_SCORES
    assert config.VALUE_HEADS == VALUE_HEADS
    assert config.ROW_CONTEXTS == ROW_CONTEXTS


def test_invalid_options_raise() -> None:
    with pytest.raises(ValueError, match="learned"):
        make_policy(stop_score="mean")
    with pytest.raises(ValueError, match="pooled"):
        make_policy(value_head="attention")
    with pytest.raises(ValueError, match="row_context"):
        make_policy(row_context="attention")
    with pytest.raises(ValueError, match="kernel_arch"):
        make_policy(net_arch=[64, 64])
    with pytest.raises(ValueError, match="kernel_arch"):
        make_policy(kernel_arch=(32, 0))
    with pytest.raises(ValueError, match="value_lr_ratio"):
        make_policy(value_lr_ratio=0.0)
    with pytest.raises(ValueError, match="Discrete"):
        KernelPolicy(spaces.Box(0, 1, (K, F), np.float32), spaces.Discrete(K + 2), lambda _: 1e-3)
    # Discrete(K): the job-ordering task, one action per row and no STOP logit
    rows_only = KernelPolicy(
        spaces.Box(0, 1, (K, F), np.float32), spaces.Discrete(K), lambda _: 1e-3
    )
    assert (
        rows_only.mlp_extractor.stop_score == "none" and rows_only.mlp_extractor.stop_bias is None
    )
    obs = th.zeros((2, K, F))
    obs[:, :3, 0] = 1.0
    assert rows_only.mlp_extractor.forward_actor(obs).shape == (2, K)
    with pytest.raises(ValueError, match="2-D Box"):
        KernelPolicy(spaces.Box(0, 1, (K * F,), np.float32), spaces.Discrete(K + 1), lambda _: 1e-3)


# --------------------------------------------------------------------------- learning rates
def test_value_lr_ratio_composes_with_sb3_schedule() -> None:
    """SB3 sets every group's lr to the schedule; the value group steps with ratio * lr."""
    policy = make_policy(value_lr_ratio=4.0, optimizer_class=th.optim.SGD, optimizer_kwargs={})
    opt = policy.optimizer
    update_learning_rate(opt, 0.01)  # what MaskablePPO.train() does before every update
    before = {name: p.detach().clone() for name, p in policy.named_parameters()}
    value_ids = {id(p) for p in opt.param_groups[1]["params"]}
    for p in policy.parameters():
        p.grad = th.ones_like(p)
    opt.step()
    for name, p in policy.named_parameters():
        expected = 0.04 if id(p) in value_ids else 0.01
        th.testing.assert_close(before[name] - p.detach(), th.full_like(p, expected))
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.01]  # schedule value restored


def test_default_learning_rates_are_the_papers() -> None:
    """Adam's first step moves every weight by ~lr: 3e-4 for the policy, 1e-3 for the value."""
    policy = make_policy()
    before = {id(p): p.detach().clone() for p in policy.parameters()}
    for p in policy.parameters():
        p.grad = th.randn_like(p).sign()
    policy.optimizer.step()
    steps = {
        g["name"]: th.cat([(before[id(p)] - p.detach()).abs().flatten() for p in g["params"]])
        for g in policy.optimizer.param_groups
    }
    th.testing.assert_close(steps["policy"], th.full_like(steps["policy"], 3e-4), rtol=1e-3, atol=0)
    th.testing.assert_close(steps["value"], th.full_like(steps["value"], 1e-3), rtol=1e-3, atol=0)


# --------------------------------------------------------------------------- MaskablePPO
def _compare_models(a: MaskablePPO, b: MaskablePPO) -> None:
    obs, masks = random_batch(np.random.default_rng(6), 64)
    act_a, _ = a.predict(obs, action_masks=masks, deterministic=True)
    act_b, _ = b.predict(obs, action_masks=masks, deterministic=True)
    np.testing.assert_array_equal(act_a, act_b)
    np.testing.assert_array_equal(
        a.policy.action_probabilities(obs, masks), b.policy.action_probabilities(obs, masks)
    )
    with th.no_grad():
        np.testing.assert_array_equal(
            a.policy.predict_values(th.as_tensor(obs)).numpy(),
            b.policy.predict_values(th.as_tensor(obs)).numpy(),
        )


@pytest.mark.parametrize(
    "policy_kwargs",
    [
        {},
        {"stop_score": "pooled", "value_head": "pooled", "activation_fn": th.nn.Tanh},
        {"stop_score": "fixed", "kernel_arch": [16, 8], "value_lr_ratio": 2.0},
        {"row_context": "pooled", "context_arch": [8, 4]},
    ],
)
def test_save_load_round_trip(tmp_path: Path, policy_kwargs: dict[str, object]) -> None:
    model = MaskablePPO(
        KernelPolicy,
        DummyBackfillEnv(),
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        seed=0,
        policy_kwargs=policy_kwargs,
    )
    model.learn(64)
    path = tmp_path / "kernel.zip"
    model.save(path)
    loaded = MaskablePPO.load(path)
    assert isinstance(loaded.policy, KernelPolicy)
    _compare_models(model, loaded)
    for g0, g1 in zip(
        model.policy.optimizer.param_groups, loaded.policy.optimizer.param_groups, strict=True
    ):
        assert (g0["name"], g0["lr_scale"]) == (g1["name"], g1["lr_scale"])
    # Continuing training after loading works (optimizer hooks and groups restored).
    loaded.set_env(DummyBackfillEnv())
    loaded.learn(64, reset_num_timesteps=False)
    # The policy alone also round-trips (BasePolicy.save / load).
    model.policy.save(str(tmp_path / "policy.pt"))
    policy = KernelPolicy.load(str(tmp_path / "policy.pt"))
    obs, masks = random_batch(np.random.default_rng(7), 16)
    np.testing.assert_array_equal(
        policy.action_probabilities(obs, masks), model.policy.action_probabilities(obs, masks)
    )


def test_load_in_fresh_process_without_custom_objects(tmp_path: Path) -> None:
    model = MaskablePPO(KernelPolicy, DummyBackfillEnv(), n_steps=64, batch_size=32, seed=0)
    path = tmp_path / "kernel.zip"
    model.save(path)
    obs, masks = random_batch(np.random.default_rng(8), 8)
    np.save(tmp_path / "obs.npy", obs)
    np.save(tmp_path / "masks.npy", masks)
    expected, _ = model.predict(obs, action_masks=masks, deterministic=True)
    code = (
        "import json, sys, numpy as np\n"
        "from sb3_contrib import MaskablePPO\n"
        f"m = MaskablePPO.load({str(path)!r})\n"  # note: hpcgym_agents is never imported here
        f"obs = np.load({str(tmp_path / 'obs.npy')!r})\n"
        f"masks = np.load({str(tmp_path / 'masks.npy')!r})\n"
        "a, _ = m.predict(obs, action_masks=masks, deterministic=True)\n"
        "print(json.dumps([type(m.policy).__module__, a.tolist()]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    module, actions = json.loads(out.stdout.strip().splitlines()[-1])
    assert module == "hpcgym_agents.kernel_policy"
    assert actions == expected.tolist()


def test_short_learn_run_is_fast() -> None:
    env = DummyBackfillEnv(max_queue=128)  # the real env's default K
    model = MaskablePPO(KernelPolicy, env, n_steps=512, batch_size=64, seed=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    start = time.perf_counter()
    model.learn(2048)  # the strict env raises if a masked action is ever taken
    elapsed = time.perf_counter() - start
    assert model.num_timesteps == 2048
    assert all(not th.equal(b, p) for b, p in zip(before, model.policy.parameters(), strict=True))
    assert elapsed < 60, f"learn(2048) took {elapsed:.1f} s"


def test_learns_the_dummy_task_better_than_random() -> None:
    model = MaskablePPO(KernelPolicy, DummyBackfillEnv(), n_steps=512, batch_size=64, seed=0)
    model.learn(4096)
    eval_env = DummyBackfillEnv()
    learned = run_episodes(model, eval_env, 200, seed=10_000).mean()
    random_ = run_episodes(RandomValid(seed=0), eval_env, 200, seed=10_000).mean()
    first = run_episodes(FirstValid(), eval_env, 200, seed=10_000).mean()
    print(
        f"dummy task, mean return over 200 episodes: kernel={learned:.3f} "
        f"random={random_:.3f} first_valid={first:.3f}"
    )
    assert learned > random_ + 0.5
    assert learned > first + 0.3


# --------------------------------------------------------------------------- dummy env
def test_dummy_env_follows_the_contract() -> None:
    gym_check_env(DummyBackfillEnv(strict=False, scatter_rows=True), skip_render_check=True)
    sb3_check_env(DummyBackfillEnv(strict=False), warn=False)
    env = DummyBackfillEnv(max_queue=8, scatter_rows=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (8, 10) and obs.dtype == np.float32
    for _ in range(50):
        mask = env.action_masks()
        assert mask.shape == (9,) and mask.dtype == bool and mask[8]
        assert not mask[:8][obs[:, 0] == 0].any()  # padding rows are masked
        assert np.isin(obs[:, 0], (0.0, 1.0)).all()
        obs, _, terminated, truncated, _ = env.step(8)
        if terminated or truncated:
            obs, _ = env.reset()
    bad = np.flatnonzero(~env.action_masks())
    if bad.size:
        with pytest.raises(ValueError, match="masked action"):
            env.step(int(bad[0]))


def test_dummy_env_optimum_and_random_baseline() -> None:
    env = DummyBackfillEnv()

    class Oracle:
        def predict(self, obs: np.ndarray, **_: object) -> tuple[int, None]:
            return env.best_action(), None

    assert (run_episodes(Oracle(), env, 50, seed=0) == 1.0).all()
    random_ = run_episodes(RandomValid(seed=1), env, 200, seed=0)
    assert -1.0 <= random_.min() and random_.max() <= 1.0 and random_.mean() < 0.0
