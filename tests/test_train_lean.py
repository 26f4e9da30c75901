"""The lean masked PPO (``train/lean_ppo.py``, ``--algo lean``) computes what MaskablePPO does.

* the compact evaluation (valid rows only) equals ``KernelPolicy.evaluate_actions`` on the
  padded observations: values, log-probabilities, entropies and gradients, every STOP
  score and value head, valid rows leading or scattered, masks that exclude rows or STOP;
* the compact rollout buffer's advantages and returns equal sb3-contrib's
  ``MaskableRolloutBuffer``'s for the same rollout, and the lean update's gradients (every
  minibatch, two epochs) and logged ``train/*`` values equal ``MaskablePPO.train``'s;
* the lean rollouts sample valid actions whose stored log-probabilities and values are the
  policy's own;
* the saved zip loads with plain ``MaskablePPO.load`` in a fresh process and predicts;
  a run of one algorithm resumes with the other.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecEnvWrapper

from hpcgym_agents.kernel_policy import ROW_CONTEXTS, STOP_SCORES, VALUE_HEADS, KernelPolicy

REPO = Path(__file__).resolve().parents[1]

from train.compact import (  # noqa: E402
    CompactRolloutBuffer,
    compact_from_dense,
    compact_step,
    evaluate_compact,
)
from train.lean_ppo import LeanMaskablePPO  # noqa: E402
from train.vecenv import NativeVecEnv  # noqa: E402

K, F = 16, 10
COMBOS = [(s, v) for s in STOP_SCORES for v in VALUE_HEADS]
ENV_KW = {"trace": None, "window_length": 48, "split": "train", "mode": "guarded"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _policy(seed: int = 0, **kwargs: Any) -> KernelPolicy:
    th.manual_seed(seed)
    policy = KernelPolicy(
        spaces.Box(0.0, 1.0, (K, F), np.float32), spaces.Discrete(K + 1), lambda _: 3e-4, **kwargs
    )
    with th.no_grad():  # non-trivial weights
        for p in policy.parameters():
            p.add_(0.5 * th.randn_like(p))
    return policy


def _data(rng: np.random.Generator, n: int, prefix: bool) -> tuple[np.ndarray, ...]:
    """Observations with random valid rows (leading or scattered; garbage in the padding
    rows), masks allowing a random subset of the valid rows and (mostly) STOP, and a
    random allowed action per sample."""
    obs = rng.random((n, K, F), dtype=np.float32)
    valid = np.zeros((n, K), dtype=bool)
    for i in range(n):
        c = int(rng.integers(0, K + 1)) if i else 0
        if prefix:
            valid[i, :c] = True
        else:
            valid[i, rng.choice(K, size=c, replace=False)] = True
    obs[..., 0] = valid
    masks = np.zeros((n, K + 1), dtype=bool)
    masks[:, :K] = valid & (rng.random((n, K)) < 0.8)
    masks[:, K] = ~masks[:, :K].any(axis=1) | (rng.random(n) < 0.8)
    actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
    return obs, masks, actions


def _action_cols(obs: np.ndarray, actions: np.ndarray) -> th.Tensor:
    """Action ``a`` as the compact column: 0 = STOP, ``1 + rank`` of row ``a``."""
    valid = obs[..., 0] > 0.5
    rank = np.cumsum(valid, axis=1) - 1
    k = obs.shape[1]
    cols = np.where(actions == k, 0, rank[np.arange(len(actions)), np.minimum(actions, k - 1)] + 1)
    return th.as_tensor(cols.astype(np.int64))


@pytest.mark.parametrize("stop_score,value_head", COMBOS)
@pytest.mark.parametrize("row_context", ROW_CONTEXTS)
@pytest.mark.parametrize("prefix", [True, False])
@pytest.mark.parametrize("block", [True, False])
def test_compact_evaluation_equals_policy(
    stop_score: str,
    value_head: str,
    row_context: str,
    prefix: bool,
    block: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import train.compact

    # the flat value head's block path (one matmul) and its row-by-row path
    monkeypatch.setattr(train.compact, "BLOCK_RATIO", 1e9 if block else 0.0)
    rng = np.random.default_rng(3)
    obs, masks, actions = _data(rng, 64, prefix)
    ref = _policy(1, stop_score=stop_score, value_head=value_head, row_context=row_context)
    lean = copy.deepcopy(ref)
    v0, lp0, ent0 = ref.evaluate_actions(
        th.as_tensor(obs), th.as_tensor(actions), action_masks=masks
    )
    batch, _step = compact_from_dense(obs, masks)
    v1, lp1, ent1 = evaluate_compact(lean, batch, _action_cols(obs, actions))
    # float32 sums in another order (the flat head's row-by-row path): rounding ~1e-5
    th.testing.assert_close(v1, v0.flatten(), rtol=1e-4, atol=1e-5)
    th.testing.assert_close(lp1, lp0, rtol=1e-5, atol=1e-5)
    th.testing.assert_close(ent1, ent0, rtol=1e-5, atol=1e-5)
    w = th.as_tensor(rng.standard_normal((3, 64)), dtype=th.float32)
    (w[0] @ v0.flatten() + w[1] @ lp0 + w[2] @ ent0).backward()
    (w[0] @ v1 + w[1] @ lp1 + w[2] @ ent1).backward()
    for (name, p0), p1 in zip(ref.named_parameters(), lean.parameters(), strict=True):
        assert (p0.grad is None) == (p1.grad is None), name
        if p0.grad is not None:  # float32 rounding grows with the gradient's scale
            atol = 1e-5 * max(1.0, float(p0.grad.abs().max()) / 10)
            th.testing.assert_close(p1.grad, p0.grad, rtol=1e-4, atol=atol, msg=name)


def test_compact_refuses_a_mask_allowing_padding() -> None:
    obs = np.zeros((1, K, F), dtype=np.float32)
    obs[0, 0, 0] = 1.0
    masks = np.zeros((1, K + 1), dtype=bool)
    masks[0, [0, 5, K]] = True  # row 5 is padding
    with pytest.raises(ValueError, match="allows a padding row"):
        compact_from_dense(obs, masks)


def test_lean_refuses_other_policies() -> None:
    env = NativeVecEnv(2, **ENV_KW)
    with pytest.raises(ValueError, match="KernelPolicy only"):
        LeanMaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8)
    env.close()


def _recorder(model: Any) -> list[list[th.Tensor]]:
    """Record the gradients of every optimizer step of ``model``."""
    steps: list[list[th.Tensor]] = []
    params = list(model.policy.parameters())

    def hook(_opt: Any, _args: Any, _kwargs: Any) -> None:
        steps.append([th.zeros_like(p) if p.grad is None else p.grad.clone() for p in params])

    model.policy.optimizer.register_step_pre_hook(hook)
    return steps


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"clip_range_vf": 0.1, "max_grad_norm": 0.05, "ent_coef": 0.01},
        {"target_kl": 1e-4, "normalize_advantage": False, "gamma": 0.99, "gae_lambda": 0.9},
    ],
)
def test_buffer_and_update_equal_maskableppo(options: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {
        "n_steps": 40,
        "batch_size": 48,
        "n_epochs": 2,
        "seed": 0,
        "policy_kwargs": {"stop_init": -1.0},
        "max_grad_norm": float("inf"),
        **options,
    }
    sb3 = MaskablePPO(KernelPolicy, NativeVecEnv(4, **ENV_KW), **kwargs)
    lean = LeanMaskablePPO(KernelPolicy, NativeVecEnv(4, **ENV_KW), **kwargs)
    lean.policy.load_state_dict(sb3.policy.state_dict())
    callbacks = []
    for m in (sb3, lean):
        m.set_logger(Logger(None, []))
        callbacks.append(m._setup_learn(10_000, None)[1])
    # one rollout by SB3 into its dense buffer ...
    sb3.collect_rollouts(sb3.env, callbacks[0], sb3.rollout_buffer, sb3.n_steps)
    dense = sb3.rollout_buffer
    # ... copied into the compact buffer, and its GAE computed from the same last values
    buf: CompactRolloutBuffer = lean.rollout_buffer
    buf.reset()
    for t in range(sb3.n_steps):
        obs = dense.observations[t]
        rows = compact_step(obs, dense.action_masks[t])
        cols = _action_cols(obs, dense.actions[t].astype(np.int64).reshape(-1)).numpy()
        buf.add(
            rows,
            cols,
            dense.rewards[t],
            dense.episode_starts[t],
            th.as_tensor(dense.values[t]),
            th.as_tensor(dense.log_probs[t]),
        )
    with th.no_grad():
        last = sb3.policy.predict_values(th.as_tensor(sb3._last_obs))
    dones = sb3._last_episode_starts
    dense_adv = dense.advantages.copy()
    buf.compute_returns_and_advantage(last, dones)
    # the rollout ended where SB3 computed its GAE from the same last values
    dense.compute_returns_and_advantage(last, dones)
    np.testing.assert_array_equal(dense.advantages, dense_adv)
    np.testing.assert_allclose(buf.advantages, dense.advantages, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(buf.returns, dense.returns, rtol=1e-6, atol=1e-6)
    # the update: the same minibatches (same numpy seed), the same gradients at every step
    grads_sb3, grads_lean = _recorder(sb3), _recorder(lean)
    lean.rollout_buffer.rng = _GlobalNumpy()  # SB3's minibatch order comes from it
    np.random.seed(123)  # noqa: NPY002 (the global generator both updates draw from)
    sb3.train()
    np.random.seed(123)  # noqa: NPY002 (the global generator both updates draw from)
    lean.train()
    assert len(grads_sb3) == len(grads_lean) > 0
    if options.get("target_kl") is None:
        assert len(grads_sb3) == 2 * 4  # 160 samples: 4 minibatches of <= 48, 2 epochs
    for step, (g0, g1) in enumerate(zip(grads_sb3, grads_lean, strict=True)):
        for a, b in zip(g0, g1, strict=True):
            th.testing.assert_close(b, a, rtol=2e-3, atol=2e-5, msg=f"step {step}")
    assert sb3._n_updates == lean._n_updates
    logged0, logged1 = sb3.logger.name_to_value, lean.logger.name_to_value
    assert set(logged0) == set(logged1)
    for key in logged0:
        np.testing.assert_allclose(logged1[key], logged0[key], rtol=1e-3, atol=1e-6, err_msg=key)
    for p0, p1 in zip(sb3.policy.parameters(), lean.policy.parameters(), strict=True):
        th.testing.assert_close(p1, p0, rtol=1e-4, atol=1e-5)


class _GlobalNumpy:
    """numpy's global generator, which SB3's ``RolloutBuffer.get`` draws its order from."""

    @staticmethod
    def permutation(n: int) -> np.ndarray:
        return np.random.permutation(n)  # noqa: NPY002 (SB3's own draw)


def test_lean_runs_are_reproducible() -> None:
    """The lean PPO's draws (actions, minibatch order) come from the model's seeded
    ``numpy.random.Generator``: the same seed gives the same weights, another seed not."""

    def weights(seed: int, global_seed: int = 0) -> list[th.Tensor]:
        m = LeanMaskablePPO(
            KernelPolicy, NativeVecEnv(2, **ENV_KW), n_steps=64, batch_size=32, n_epochs=2,
            seed=seed,
        )  # fmt: skip
        np.random.seed(global_seed)  # noqa: NPY002 (the global generator must not matter)
        m.learn(256)
        return [p.detach().clone() for p in m.policy.parameters()]

    a, b, c = weights(4, global_seed=1), weights(4, global_seed=2), weights(5, global_seed=1)
    assert all(th.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(th.equal(x, y) for x, y in zip(a, c, strict=True))


class _Check(BaseCallback):
    """At every rollout step: the sampled actions, log-probabilities and values against
    the policy's own ``evaluate_actions`` / ``predict_values`` on the dense observation."""

    def __init__(self) -> None:
        super().__init__()
        self.steps = 0
        self.stops = 0
        self.samples = 0

    def _on_step(self) -> bool:
        loc = self.locals
        obs, masks, actions = loc["obs"], loc["action_masks"], loc["actions"]
        assert masks[np.arange(len(actions)), actions].all()
        with th.no_grad():
            v, lp, _ = self.model.policy.evaluate_actions(
                th.as_tensor(obs), th.as_tensor(actions), action_masks=masks
            )
        np.testing.assert_allclose(loc["log_probs"], lp.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(loc["values"], v.flatten().numpy(), rtol=1e-5, atol=1e-5)
        self.steps += 1
        self.stops += int((actions == self.model.action_space.n - 1).sum())
        self.samples += len(actions)
        return True


@pytest.mark.parametrize("value_head", VALUE_HEADS)
def test_lean_rollouts_sample_the_policy(value_head: str) -> None:
    model = LeanMaskablePPO(
        KernelPolicy,
        NativeVecEnv(4, **ENV_KW),
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        seed=1,
        policy_kwargs={"value_head": value_head},
    )
    check = _Check()
    model.learn(256, callback=check)
    assert check.steps == 64
    assert 0 < check.stops < check.samples  # both STOP and rows were sampled


def test_lean_model_loads_with_maskableppo_in_a_fresh_process(tmp_path: Path) -> None:
    model = LeanMaskablePPO(
        KernelPolicy, NativeVecEnv(4, **ENV_KW), n_steps=32, batch_size=64, n_epochs=2, seed=2
    )
    model.learn(256)
    path = tmp_path / "lean.zip"
    model.save(path)  # plain save: the compact buffer class is not in the zip
    env = NativeVecEnv(4, **ENV_KW)
    env.seed(5)
    obs = env.reset()
    masks = env.action_masks()
    np.savez(tmp_path / "obs.npz", obs=obs, masks=masks)
    expected, _ = model.predict(obs, action_masks=masks, deterministic=True)
    code = (
        "import json, sys, numpy as np\n"
        "from sb3_contrib import MaskablePPO\n"
        f"m = MaskablePPO.load({str(path)!r}, device='cpu')\n"
        f"d = np.load({str(tmp_path / 'obs.npz')!r})\n"
        "a, _ = m.predict(d['obs'], action_masks=d['masks'], deterministic=True)\n"
        "print(json.dumps({'cls': type(m).__name__, 'policy': type(m.policy).__name__, "
        "'steps': int(m.num_timesteps), 'actions': a.tolist()}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["cls"] == "MaskablePPO" and got["policy"] == "KernelPolicy"
    assert got["steps"] == 256
    assert got["actions"] == expected.tolist()
    assert masks[np.arange(4), got["actions"]].all()


def test_runs_resume_across_algorithms(tmp_path: Path) -> None:
    from train.ppo import main

    small = [
        "--seq-len", "32", "--n-envs", "4", "--vec-env", "native", "--eval-windows", "1",
        "--eval-length", "64", "--n-steps", "32", "--batch-size", "64", "--n-epochs", "2",
        "--baselines", "EASY", "--no-progress",
    ]  # fmt: skip
    first = main([*small, "--algo", "lean", "--total-steps", "256", "--logdir", str(tmp_path)])
    run = Path(first["run_dir"]) if "run_dir" in first else next(tmp_path.iterdir())
    assert first["timesteps"] == 256
    second = main(["--resume", str(run), "--total-steps", "512", "--algo", "sb3", "--no-progress"])
    assert second["timesteps"] == 512
    third = main(["--resume", str(run), "--total-steps", "768", "--algo", "lean", "--no-progress"])
    assert third["timesteps"] == 768
    loaded = MaskablePPO.load(run / "final_model.zip", device="cpu")
    assert loaded.num_timesteps == 768


class _Truncating(VecEnvWrapper):
    """Marks every episode end as a time-limit truncation; records the raw rewards."""

    def __init__(self, venv: Any) -> None:
        super().__init__(venv)
        self.steps: list[tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]] = []

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        for i in np.flatnonzero(dones):
            infos[i]["TimeLimit.truncated"] = True
        self.steps.append((rewards.copy(), dones.copy(), infos))
        return obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        return self.venv.action_masks()


def test_lean_rollouts_bootstrap_truncated_episodes() -> None:
    env = _Truncating(NativeVecEnv(4, **ENV_KW))
    model = LeanMaskablePPO(
        KernelPolicy, env, n_steps=64, batch_size=64, n_epochs=1, seed=3, gamma=0.9
    )
    model.train = lambda: None  # type: ignore[method-assign]  # weights fixed: values known
    model.learn(256)
    buf = model.rollout_buffer
    steps = env.steps[-buf.buffer_size :]
    bootstrapped = 0
    for t, (raw, dones, infos) in enumerate(steps):
        expected = raw.astype(np.float32).copy()
        for i in np.flatnonzero(dones):
            term = th.as_tensor(infos[i]["terminal_observation"][None])
            with th.no_grad():
                expected[i] += 0.9 * float(model.policy.predict_values(term)[0])
            bootstrapped += 1
        np.testing.assert_allclose(buf.rewards[t], expected, rtol=1e-5, atol=1e-5)
    assert bootstrapped > 0
