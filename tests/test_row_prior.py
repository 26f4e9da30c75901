"""The score prior of :class:`~hpcgym_agents.kernel_policy.KernelPolicy` (``row_prior``,
``train/ppo.py --row-prior NAME=WEIGHT``).

* it adds exactly ``w * x - min(w, 0)`` to every valid row's score (never to padding or
  STOP), for either sign of ``w``, in the policy and in the lean PPO's compact evaluation;
* its weight is one learned policy parameter;
* with the kernel's output at 0, ``estimate`` and a negative weight, the argmax policy
  played in the guarded env starts the same jobs at the same times as the engine's
  EASY-SJBF (linear and log time scales): training starts at EASY-SJBF;
* the option is checked (column, weight, unknown names with the valid ones listed) and
  survives save / load and a training run.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO

from hpcgym.envs import observation as FT
from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.sim.schedulers import get_scheduler
from hpcgym_agents.kernel_policy import PADDING_LOGIT, KernelPolicy

REPO = Path(__file__).resolve().parents[1]

K, F = 12, 13


def _policy(seed: int = 0, **kwargs: object) -> KernelPolicy:
    th.manual_seed(seed)
    return KernelPolicy(
        spaces.Box(0.0, 1.0, (K, F), np.float32), spaces.Discrete(K + 1), lambda _: 3e-4, **kwargs
    )


def _obs(rng: np.random.Generator, n: int) -> np.ndarray:
    obs = rng.random((n, K, F), dtype=np.float32)
    valid = np.arange(K)[None, :] < rng.integers(0, K + 1, size=(n, 1))
    obs[..., 0] = valid
    obs[~valid] = 0.0
    return obs


@pytest.mark.parametrize(
    "pairs",
    [((FT.COL_EST, -7.5),), ((FT.COL_WAIT, 3.0),), ((12, -0.5),), ((2, -9.0), (1, 2.0), (5, -1.0))],
)
def test_prior_adds_its_score_to_valid_rows(pairs: tuple[tuple[int, float], ...]) -> None:
    base = _policy(1)
    prior = _policy(1, row_prior=pairs if len(pairs) > 1 else pairs[0])  # one pair: bare
    assert prior.row_prior == pairs
    # the same network weights: the prior is the only difference
    state = {k: v for k, v in prior.state_dict().items() if "prior_weight" not in k}
    base.load_state_dict(state)
    obs = th.as_tensor(_obs(np.random.default_rng(2), 32))
    with th.no_grad():
        l0 = base.action_logits(obs)
        l1 = prior.action_logits(obs)
    valid = obs[..., 0] > 0.5
    want = sum(w * obs[..., c] - min(w, 0.0) for c, w in pairs)
    assert isinstance(want, th.Tensor) and (want[valid] >= 0).all()
    th.testing.assert_close(l1[:, :K][valid], l0[:, :K][valid] + want[valid])
    assert (l1[:, :K][~valid] == PADDING_LOGIT).all()
    th.testing.assert_close(l1[:, K], l0[:, K])  # STOP unchanged
    # the dense reference path of the kernel scores agrees
    dense, _ = prior.mlp_extractor.row_scores_dense(obs)
    with th.no_grad():
        th.testing.assert_close(dense[valid], l1[:, :K][valid])


def test_prior_weight_is_one_learned_policy_parameter() -> None:
    plain, prior = _policy(0), _policy(0, row_prior=[(2, -4.0), (1, 1.0)])
    assert prior.parameter_counts()["kernel"] == plain.parameter_counts()["kernel"] + 2
    groups = {g["name"]: g["params"] for g in prior.optimizer.param_groups}
    weight = prior.mlp_extractor.prior_weight
    assert weight is not None and any(p is weight for p in groups["policy"])
    assert not any(p is weight for p in groups["value"])
    obs = th.as_tensor(_obs(np.random.default_rng(0), 16))
    obs[:, 0, 0] = 1.0  # at least one valid row everywhere
    logp = th.log_softmax(prior.action_logits(obs), dim=-1)[:, 0].sum()
    logp.backward()
    assert weight.grad is not None and bool((weight.grad.abs() > 0).all())


def test_compact_evaluation_equals_policy_with_prior() -> None:
    from train.compact import compact_from_dense, evaluate_compact

    for row_context in ("none", "pooled"):
        ref = _policy(3, row_prior=[(2, -6.0), (1, 1.5)], row_context=row_context)
        lean = copy.deepcopy(ref)
        rng = np.random.default_rng(4)
        obs = _obs(rng, 40)
        valid = obs[..., 0] > 0.5
        masks = np.concatenate([valid, np.ones((40, 1), dtype=bool)], axis=1)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        v0, lp0, ent0 = ref.evaluate_actions(
            th.as_tensor(obs), th.as_tensor(actions), action_masks=masks
        )
        batch, _ = compact_from_dense(obs, masks)
        rank = np.cumsum(valid, axis=1) - 1
        cols = np.where(actions == K, 0, rank[np.arange(40), np.minimum(actions, K - 1)] + 1)
        v1, lp1, ent1 = evaluate_compact(lean, batch, th.as_tensor(cols.astype(np.int64)))
        th.testing.assert_close(lp1, lp0, rtol=1e-5, atol=1e-5)
        th.testing.assert_close(ent1, ent0, rtol=1e-5, atol=1e-5)
        th.testing.assert_close(v1, v0.flatten(), rtol=1e-4, atol=1e-5)
        (lp0.sum()).backward()
        (lp1.sum()).backward()
        g0 = ref.mlp_extractor.prior_weight.grad
        g1 = lean.mlp_extractor.prior_weight.grad
        th.testing.assert_close(g1, g0, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("time_scale", ["linear", "log"])
def test_prior_alone_plays_easy_sjbf(time_scale: str) -> None:
    """A new policy (kernel output 0), an ``estimate`` prior with a negative weight and a
    negative STOP logit: the argmax policy is EASY-SJBF (shortest estimate first, ties by
    FCFS row, backfill while a job fits), so it starts every job when the engine's
    EASY-SJBF does."""
    env = BackfillEnv(
        trace=None, window_length=256, split="all", mode="guarded", time_scale=time_scale
    )
    policy = KernelPolicy(
        env.observation_space,
        env.action_space,
        lambda _: 3e-4,
        row_prior=(FT.COL_EST, -50.0),
        stop_init=-3.0,
    )
    out = policy.mlp_extractor.kernel_out  # starts at exactly 0 with a prior
    assert not out.weight.any() and not out.bias.any()
    spec = get_scheduler("EASY-SJBF")
    lo, last = env.valid_starts
    decisions = 0
    for start in np.linspace(lo, last, 6).astype(int):
        obs, info = env.reset(options={"start": int(start)})
        done = False
        while not done:
            action, _ = policy.predict(obs, action_masks=info["action_mask"], deterministic=True)
            obs, _r, done, _t, info = env.step(int(action))
        ref = spec.simulate(env.simulation.workload)
        np.testing.assert_array_equal(env.simulation.start_times, ref.start)
        decisions += info["decisions"]
    assert decisions > 50  # backfilling was exercised
    # without the prior (same kernel at 0) the argmax is another order: the test can fail
    plain = KernelPolicy(env.observation_space, env.action_space, lambda _: 3e-4, stop_init=-3.0)
    obs = np.zeros(env.observation_space.shape, np.float32)
    obs[:2, 0] = 1.0
    obs[0, FT.COL_EST], obs[1, FT.COL_EST] = 0.9, 0.1
    mask = np.zeros(K_ENV := env.max_queue + 1, dtype=bool)
    mask[[0, 1, K_ENV - 1]] = True
    with th.no_grad():
        plain.mlp_extractor.kernel_out.weight.zero_()
        plain.mlp_extractor.kernel_out.bias.zero_()
    assert policy.predict(obs, action_masks=mask, deterministic=True)[0] == 1
    assert plain.predict(obs, action_masks=mask, deterministic=True)[0] == 0


@pytest.mark.parametrize(
    "value,message",
    [
        ((0, -1.0), "validity flag"),
        ((F, -1.0), "observation column 1"),
        ((2.5, -1.0), "observation column"),
        ((2, float("nan")), "finite"),
        ((2, -1.0, 3), "pairs"),
        ([(2, -1.0), (2, 3.0)], "each column once"),
        ([], "at least one pair"),
    ],
)
def test_invalid_prior_raises(value: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _policy(0, row_prior=value)


def test_save_load_keeps_the_prior(tmp_path: Path) -> None:
    from dummy_env import DummyBackfillEnv

    model = MaskablePPO(
        KernelPolicy,
        DummyBackfillEnv(),
        n_steps=32,
        batch_size=16,
        n_epochs=1,
        seed=0,
        policy_kwargs={"row_prior": [(2, -3.0), (1, 1.0)]},
    )
    model.learn(32)
    model.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip")
    assert loaded.policy.row_prior == ((2, -3.0), (1, 1.0))
    w0 = model.policy.mlp_extractor.prior_weight
    w1 = loaded.policy.mlp_extractor.prior_weight
    assert w0 is not None and w1 is not None
    assert th.equal(w1, w0) and w0[0].item() != -3.0  # learned, and saved


# ----------------------------------------------------------------- train/ppo.py option
def test_row_prior_option_resolves_columns() -> None:
    from train.build import row_prior
    from train.config import ConfigError, TrainConfig

    assert row_prior(TrainConfig()) is None
    assert row_prior(TrainConfig(row_prior="estimate=-50")) == ((FT.COL_EST, -50.0),)
    cfg = TrainConfig(row_prior="prediction=-2,wait=0.5", feature_predictor="request")
    assert row_prior(cfg) == ((FT.COL_PRED, -2.0), (FT.COL_WAIT, 0.5))
    with pytest.raises(ConfigError, match="expected one of wait, estimate, procs"):
        row_prior(TrainConfig(row_prior="prediction=-2"))  # no such column without a predictor
    with pytest.raises(ConfigError, match="--row-prior: expected NAME=WEIGHT"):
        TrainConfig(row_prior="estimate")
    with pytest.raises(ConfigError, match="nonzero"):
        TrainConfig(row_prior="estimate=0")
    with pytest.raises(ConfigError, match="given twice"):
        TrainConfig(row_prior="estimate=-1,estimate=-2")


def test_training_run_with_a_prior(tmp_path: Path) -> None:
    from train_small import run_small

    run_small(tmp_path, "--total-steps", "128", "--row-prior", "estimate=-20")
    model = MaskablePPO.load(tmp_path / "r" / "final_model.zip")
    assert model.policy.row_prior == ((FT.COL_EST, -20.0),)
    with pytest.raises(SystemExit):
        run_small(tmp_path, "--total-steps", "128", "--row-prior", "bogus=1", name="b")


def test_total_steps_0_keeps_the_prior_alone(tmp_path: Path) -> None:
    """``--total-steps 0 --row-prior estimate=-50``: no update; the run evaluates and keeps
    the initial policy, which is EASY-SJBF (same AVEbsld on every evaluation window)."""
    from train_small import run_small

    summary = run_small(
        tmp_path, "--total-steps", "0", "--row-prior", "estimate=-50", "--stop-init", "-3"
    )
    assert summary["timesteps"] == 0
    final = summary["eval"]["final"]
    sjbf = summary["baselines"]["EASY-SJBF"]["per_window"]
    assert [w["avg_bsld"] for w in final["per_window"]] == sjbf
    assert sum(w["decisions"] for w in final["per_window"]) > 10
