"""The fast training path (issue 13) computes the same thing as the slow one.

* the kernel policy on the active rows only equals the dense computation (all K rows),
  logits, values, masked distributions and gradients, to float tolerance;
* ``train.vecenv.NativeVecEnv`` produces the same rollouts as SB3's ``DummyVecEnv`` of
  single ``BackfillEnv`` for the same seeds and actions (across episode ends);
* a tiny training through ``train.build`` with ``--vec-env native`` saves a model that
  plain ``MaskablePPO.load`` loads and runs.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch as th
from conftest import same_metrics  # noqa: E402
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.distributions import MaskableCategorical

from hpcgym_agents.kernel_policy import (
    ROW_CONTEXTS,
    STOP_SCORES,
    VALUE_HEADS,
    FastMaskableCategorical,
    KernelPolicy,
)

K, F = 16, 10
COMBOS = [(s, v) for s in STOP_SCORES for v in VALUE_HEADS]
ENV_KW = {"trace": None, "window_length": 48, "split": "train", "mode": "guarded"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _policy(seed: int = 0, **kwargs: object) -> KernelPolicy:
    th.manual_seed(seed)
    policy = KernelPolicy(
        spaces.Box(0.0, 1.0, (K, F), np.float32),
        spaces.Discrete(K + 1),
        lambda _: 3e-4,
        **kwargs,  # type: ignore[arg-type]
    )
    with th.no_grad():  # non-trivial weights
        for p in policy.parameters():
            p.add_(0.5 * th.randn_like(p))
    return policy


def _batch(rng: np.random.Generator, n: int, prefix: bool) -> tuple[th.Tensor, th.Tensor]:
    """Observations with random valid rows (a leading block, as the env lays them out, or
    scattered) and masks allowing a random subset of them plus STOP. Padding rows hold
    garbage, which must not matter."""
    obs = rng.random((n, K, F), dtype=np.float32)
    valid = np.zeros((n, K), dtype=bool)
    for i in range(n):
        c = int(rng.integers(0, K // 2 + 1)) if i else 0
        if prefix:
            valid[i, :c] = True
        else:
            valid[i, rng.choice(K, size=c, replace=False)] = True
    obs[..., 0] = valid
    masks = np.zeros((n, K + 1), dtype=bool)
    masks[:, :K] = valid & (rng.random((n, K)) < 0.8)
    masks[:, K] = True
    return th.as_tensor(obs), th.as_tensor(masks)


@pytest.fixture(params=["block", "gather"])
def row_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of skipping padding: the leading block of rows, or gathering valid rows."""
    import hpcgym_agents.kernel_policy as kp

    monkeypatch.setattr(kp, "GATHER_RATIO", math.inf if request.param == "block" else 0.0)
    return str(request.param)


@pytest.mark.parametrize("stop_score,value_head", COMBOS)
@pytest.mark.parametrize("row_context", ROW_CONTEXTS)
@pytest.mark.parametrize("prefix", [True, False])
def test_active_rows_kernel_equals_dense(
    stop_score: str, value_head: str, row_context: str, prefix: bool, row_path: str
) -> None:
    policy = _policy(stop_score=stop_score, value_head=value_head, row_context=row_context)
    net = policy.mlp_extractor
    obs, masks = _batch(np.random.default_rng(1), 64, prefix)
    scores, emb = net.row_scores(obs)
    dense_scores, dense_emb = net.row_scores_dense(obs)
    th.testing.assert_close(scores, dense_scores, rtol=1e-5, atol=1e-5)
    valid = obs[..., 0] > 0.5
    th.testing.assert_close(emb[valid], dense_emb[valid], rtol=1e-5, atol=1e-5)
    th.testing.assert_close(
        net.forward_critic(obs), net.forward_critic_dense(obs), rtol=1e-5, atol=1e-5
    )
    # the masked distributions: fast (active rows + log_softmax) vs dense + sb3-contrib's
    logits = net.forward_actor(obs)
    stop = logits[:, K:]
    dense_logits = th.cat([dense_scores, stop], dim=1)
    fast = FastMaskableCategorical(logits, masks=masks)
    ref = MaskableCategorical(logits=dense_logits, masks=masks)
    th.testing.assert_close(fast.probs, ref.probs, rtol=1e-5, atol=1e-6)
    assert float(fast.probs.detach()[~masks].abs().max()) == 0.0
    actions = ref.sample()
    th.testing.assert_close(fast.log_prob(actions), ref.log_prob(actions), rtol=1e-5, atol=1e-5)
    th.testing.assert_close(fast.entropy(), ref.entropy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stop_score,value_head", COMBOS)
@pytest.mark.parametrize("row_context", ROW_CONTEXTS)
def test_active_rows_gradients_equal_dense(
    stop_score: str, value_head: str, row_context: str, row_path: str
) -> None:
    policy = _policy(stop_score=stop_score, value_head=value_head, row_context=row_context)
    net = policy.mlp_extractor
    obs, masks = _batch(np.random.default_rng(2), 48, prefix=True)
    actions = MaskableCategorical(logits=net.forward_actor(obs).detach(), masks=masks).sample()

    def grads(dense: bool) -> list[th.Tensor]:
        policy.zero_grad()
        scores = (net.row_scores_dense if dense else net.row_scores)(obs)[0]
        logits = th.cat([scores, net.forward_actor(obs)[:, K:]], dim=1)
        dist = (MaskableCategorical if dense else FastMaskableCategorical)(
            logits=logits, masks=masks
        )
        value = (net.forward_critic_dense if dense else net.forward_critic)(obs)
        (dist.log_prob(actions).mean() + value.pow(2).mean()).backward()
        return [
            p.grad.clone() if p.grad is not None else th.zeros_like(p) for p in net.parameters()
        ]

    for fast, dense in zip(grads(False), grads(True), strict=True):
        th.testing.assert_close(fast, dense, rtol=1e-4, atol=1e-6)


def test_policy_uses_fast_distribution_and_fused_adam() -> None:
    policy = _policy()
    obs, masks = _batch(np.random.default_rng(3), 8, prefix=True)
    dist = policy.get_distribution(obs, action_masks=masks.numpy())
    assert isinstance(dist.distribution, FastMaskableCategorical)
    assert policy.optimizer.param_groups[0].get("fused") is True


def test_native_vecenv_equals_dummy_vecenv() -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv

    from hpcgym.envs.backfill_env import BackfillEnv
    from train.vecenv import NativeVecEnv

    n, seed = 3, 11
    native = NativeVecEnv(n, **ENV_KW)
    dummy = DummyVecEnv([lambda: BackfillEnv(**ENV_KW) for _ in range(n)])
    native.seed(seed)
    dummy.seed(seed)
    obs_n, obs_d = native.reset(), dummy.reset()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(400):
        np.testing.assert_array_equal(obs_n, obs_d)
        masks = np.stack(native.env_method("action_masks"))
        np.testing.assert_array_equal(masks, np.stack(dummy.env_method("action_masks")))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs_n, rew_n, done_n, info_n = native.step(actions)
        obs_d, rew_d, done_d, info_d = dummy.step(actions)
        np.testing.assert_array_equal(rew_n, rew_d)
        np.testing.assert_array_equal(done_n, done_d)
        for i in np.flatnonzero(done_n):
            episodes += 1
            a, b = info_n[i], info_d[i]
            np.testing.assert_array_equal(a["terminal_observation"], b["terminal_observation"])
            assert same_metrics(a["agent"], b["agent"])
            assert same_metrics(a["reference"], b["reference"])
            assert a["episode_steps"] == b["episode_steps"] == a["episode"]["l"]
            assert a["violations"] == b["violations"]
            assert a["TimeLimit.truncated"] is False
    assert episodes >= 5
    native.close()
    dummy.close()


def test_tiny_native_training_loads_with_maskableppo(tmp_path: Path) -> None:
    from hpcgym.envs.backfill_env import BackfillEnv
    from train.build import env_kwargs, new_model, plan_rollout
    from train.config import TrainConfig

    cfg = TrainConfig.create(
        preset="fast",
        trace="synthetic",
        length=48,
        n_envs=4,
        n_steps=32,
        batch_size=64,
        total_steps=256,
        progress=False,
    )
    assert cfg.vec_env == "native"
    model = new_model(cfg, plan_rollout(cfg))
    model.learn(256)
    assert model.num_timesteps == 256
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = MaskablePPO.load(path, device="cpu")
    assert isinstance(loaded.policy, KernelPolicy)
    env = BackfillEnv(**env_kwargs(cfg, "train", cfg.length))
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        mask = env.action_masks()
        action, _ = loaded.predict(obs, action_masks=mask, deterministic=True)
        assert mask[int(action)]
        obs, _r, terminated, _t, _i = env.step(int(action))
        if terminated:
            break
    ref = model.policy.state_dict()
    for key, value in loaded.policy.state_dict().items():
        th.testing.assert_close(value, ref[key])
