"""The KL penalty to the starting policy of the lean PPO (``LeanMaskablePPO(anchor_kl=...)``,
``train/ppo.py --anchor-kl COEF``).

* :func:`train.compact.kl_to` on the compact rows equals ``KL(p || q)`` of the two
  policies' masked distributions on the padded observations;
* at the anchor the penalty's gradient is 0: a one-minibatch update equals PPO's;
  past it the term is active (logged, and the weights differ from PPO's);
* a strong anchor holds the trained policy nearer its start than PPO without it;
* the anchor is not in the saved zip (which still loads with plain ``MaskablePPO``);
* ``train/ppo.py`` writes the run's starting policy to ``anchor.pt`` and a resumed run
  anchors to it, not to its checkpoint; the option is checked.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback

from hpcgym_agents.kernel_policy import KernelPolicy

REPO = Path(__file__).resolve().parents[1]

from train.compact import actor_logits, compact_from_dense, kl_to  # noqa: E402
from train.lean_ppo import LeanMaskablePPO  # noqa: E402
from train.vecenv import NativeVecEnv  # noqa: E402

ENV_KW = {"trace": None, "window_length": 48, "split": "train", "mode": "guarded"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model(anchor_kl: float, seed: int = 3, **kwargs: Any) -> LeanMaskablePPO:
    options: dict[str, Any] = {"n_steps": 32, "batch_size": 128, "n_epochs": 1}
    options.update(kwargs)
    return LeanMaskablePPO(
        KernelPolicy, NativeVecEnv(4, **ENV_KW), seed=seed, anchor_kl=anchor_kl, **options
    )


def _observations(n: int = 6, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """``n`` observations with at least two allowed actions, and their masks, from envs
    taking random valid steps."""
    env = NativeVecEnv(4, **ENV_KW)
    env.seed(seed)
    obs = env.reset()
    rng = np.random.default_rng(seed)
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    while len(kept) < n:
        masks = env.action_masks()
        kept.extend((o, m) for o, m in zip(np.asarray(obs), masks, strict=True) if m.sum() > 1)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, _, _, _ = env.step(actions)
    return np.stack([o for o, _ in kept[:n]]), np.stack([m for _, m in kept[:n]])


def _perturbed(policy: KernelPolicy, scale: float, seed: int) -> KernelPolicy:
    other = copy.deepcopy(policy)
    gen = th.Generator().manual_seed(seed)
    with th.no_grad():
        for p in other.parameters():
            p.add_(scale * th.randn(p.shape, generator=gen))
    return other


def _dense_kl(p: KernelPolicy, q: KernelPolicy, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``KL(p || q)`` per observation from the policies' own masked distributions."""
    with th.no_grad():
        lp = p.get_distribution(th.as_tensor(obs), action_masks=masks).distribution.logits
        lq = q.get_distribution(th.as_tensor(obs), action_masks=masks).distribution.logits
    m = th.as_tensor(masks)
    terms = th.where(m, lp.exp() * (lp - lq), th.zeros_like(lp))
    return terms.sum(dim=1).numpy()


def test_kl_to_equals_the_dense_kl() -> None:
    model = _model(1.0)
    p = model.policy
    q = _perturbed(p, 0.3, seed=1)
    obs, masks = _observations()
    assert masks.sum(axis=1).min() >= 2  # real choices
    b, _ = compact_from_dense(obs, masks)
    with th.no_grad():
        got = kl_to(
            th.log_softmax(actor_logits(p, b), dim=1), th.log_softmax(actor_logits(q, b), dim=1), b
        )
    want = _dense_kl(p, q, obs, masks)
    assert want.min() > 1e-4  # the policies differ on every observation
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)
    with th.no_grad():  # and 0 against itself
        same = th.log_softmax(actor_logits(p, b), dim=1)
    assert float(kl_to(same, same, b).abs().max()) == 0.0


def _weights(model: Any) -> list[th.Tensor]:
    return [p.detach().clone() for p in model.policy.parameters()]


def test_first_update_equals_ppo_then_the_term_acts() -> None:
    # one rollout of 4 x 32 = 128 samples, one minibatch, one epoch: the update happens at
    # the anchor, where the penalty's gradient is 0
    plain, anchored = _model(0.0), _model(5.0)
    plain.learn(128)
    anchored.learn(128)
    for a, b in zip(_weights(plain), _weights(anchored), strict=True):
        assert th.allclose(a, b, atol=1e-6)
    assert anchored.logger.name_to_value["train/anchor_kl"] == 0.0
    assert "train/anchor_kl" not in plain.logger.name_to_value
    # four minibatches over two epochs: after the first step the policy is off its anchor
    plain = _model(0.0, batch_size=32, n_epochs=2)
    anchored = _model(5.0, batch_size=32, n_epochs=2)
    plain.learn(128)
    anchored.learn(128)
    assert anchored.logger.name_to_value["train/anchor_kl"] > 0
    assert not all(
        th.allclose(a, b, atol=1e-6)
        for a, b in zip(_weights(plain), _weights(anchored), strict=True)
    )


class _KLToStart(BaseCallback):
    """KL(policy || the policy at the start) on fixed observations, at the end."""

    def __init__(self, obs: np.ndarray, masks: np.ndarray) -> None:
        super().__init__()
        self.obs, self.masks = obs, masks
        self.start: Any = None
        self.kl = np.nan

    def _on_training_start(self) -> None:
        self.start = copy.deepcopy(self.model.policy)

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        self.kl = float(_dense_kl(self.model.policy, self.start, self.obs, self.masks).mean())


def test_a_strong_anchor_holds_the_policy_near_its_start() -> None:
    obs, masks = _observations(8, seed=4)
    kls = {}
    for coef in (0.0, 20.0):
        model = _model(coef, n_steps=64, batch_size=64, n_epochs=4, learning_rate=1e-2)
        probe = _KLToStart(obs, masks)
        model.learn(4096, callback=probe)
        kls[coef] = probe.kl
    assert kls[0.0] > 0.01  # PPO alone moves the policy (0.12)
    assert kls[20.0] < 0.01 * kls[0.0]  # the anchored one hardly (1e-6)


def test_the_anchor_is_not_saved(tmp_path: Path) -> None:
    model = _model(2.0)
    model.learn(128)
    assert model.anchor_policy is not None
    model.save(tmp_path / "m.zip")
    loaded = LeanMaskablePPO.load(tmp_path / "m.zip", device="cpu")
    assert loaded.anchor_kl == 2.0 and loaded.anchor_policy is None
    plain = MaskablePPO.load(tmp_path / "m.zip", device="cpu")
    assert type(plain.policy) is KernelPolicy
    with pytest.raises(ValueError, match="anchor_kl must be"):
        _model(-1.0)


# ----------------------------------------------------------------- train/ppo.py option
def test_anchor_option_is_checked() -> None:
    from train.config import ConfigError, TrainConfig

    assert TrainConfig().anchor_kl == 0.0
    with pytest.raises(ConfigError, match="--anchor-kl needs --algo lean"):
        TrainConfig(anchor_kl=1.0, algo="sb3")
    with pytest.raises(ConfigError, match="--anchor-kl"):
        TrainConfig(anchor_kl=-1.0, algo="lean")
    assert TrainConfig(anchor_kl=0.5, algo="lean").anchor_kl == 0.5


def test_runs_keep_their_starting_policy_as_the_anchor(tmp_path: Path) -> None:
    from train_small import run_small

    from train.build import ANCHOR_FILE, attach_anchor
    from train.config import ConfigError, TrainConfig

    summary = run_small(
        tmp_path, "--algo", "lean", "--total-steps", "256", "--anchor-kl", "1",
        "--row-prior", "estimate=-20", "--checkpoint-every", "1",
    )  # fmt: skip
    assert summary["timesteps"] == 256
    run = tmp_path / "r"
    start = th.load(run / ANCHOR_FILE, weights_only=True)
    assert float(start["mlp_extractor.prior_weight"][0]) == -20.0  # the run's start
    final = MaskablePPO.load(run / "final_model.zip", device="cpu")
    assert not th.equal(final.policy.state_dict()["mlp_extractor.prior_weight"], start[
        "mlp_extractor.prior_weight"
    ])  # fmt: skip
    # resuming anchors to anchor.pt, not to the checkpoint it continues from
    cfg = TrainConfig(anchor_kl=1.0, algo="lean")
    resumed = LeanMaskablePPO.load(run / "final_model.zip", device="cpu")
    attach_anchor(resumed, cfg, run, fresh=False)
    for key, value in resumed.anchor_policy.state_dict().items():
        assert th.equal(value, start[key]), key
    (run / ANCHOR_FILE).unlink()
    with pytest.raises(ConfigError, match="anchor.pt is missing"):
        attach_anchor(resumed, cfg, run, fresh=False)
    # and the command line resumes such a run
    (tmp_path / "s").mkdir()
    run_small(tmp_path / "s", "--algo", "lean", "--total-steps", "128", "--anchor-kl", "1")
    again = __import__("train.ppo", fromlist=["main"]).main(
        ["--resume", str(tmp_path / "s" / "r"), "--total-steps", "256", "--no-progress"]
    )
    assert again["timesteps"] == 256
