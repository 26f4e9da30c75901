"""The student: a ``MaskablePPO`` kernel policy trained to copy the teacher's labels.

:func:`make_student` builds the model with :func:`train.build.new_model` (the same
network, hyperparameters and zip format as ``train/ppo.py``); :func:`fit` minimises the
cross-entropy of the teacher's action under the policy's *masked* distribution (the one
``MaskablePPO`` samples from), optionally with the value head regressed on the episodes'
returns; :func:`accuracy` measures agreement with the teacher.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch as th

from research.imitation.data import Dataset
from train.build import RolloutPlan, new_model
from train.config import TrainConfig

__all__ = ["FitResult", "accuracy", "held_out_split", "make_student", "fit"]


def make_student(cfg: TrainConfig, extra_env: dict[str, Any] | None = None) -> Any:
    """A fresh ``MaskablePPO`` (:class:`~hpcgym_agents.kernel_policy.KernelPolicy`) as
    :func:`train.build.new_model` builds it for ``cfg``.

    :param cfg: the run's options (trace, mode, K, kernel network, PPO hyperparameters;
        ``n_steps`` must be a number)
    :param extra_env: more :class:`~hpcgym.envs.backfill_env.BackfillEnv` arguments (e.g.
        ``{"features": "extended"}``), passed to the training envs of
        :func:`train.build.new_model` (its observation space is theirs)
    """
    n_steps = int(cfg.n_steps)
    batch = n_steps * cfg.n_envs if cfg.batch_size == "full" else int(cfg.batch_size)
    plan = RolloutPlan(n_steps, batch, n_steps * cfg.n_envs, 0)
    return new_model(cfg, plan, extra_env)


def held_out_split(data: Dataset, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A bool mask of the held-out samples: whole episodes (windows), ``fraction`` of them.

    :param data: the samples
    :param fraction: share of the episodes held out (0: none)
    :param rng: the generator choosing the episodes
    """
    eps = np.unique(data.episode)
    n = int(round(fraction * len(eps)))
    if fraction > 0 and len(eps) > 1:
        n = min(max(n, 1), len(eps) - 1)
    chosen = rng.choice(eps, size=n, replace=False) if n else np.zeros(0, np.int64)
    return np.isin(data.episode, chosen)


def _tensors(policy: Any, data: Dataset, idx: np.ndarray) -> tuple[th.Tensor, ...]:
    obs, mask, labels = data.batch(idx)
    dev = policy.device
    return (
        th.as_tensor(obs, device=dev),
        th.as_tensor(mask, device=dev),
        th.as_tensor(labels, device=dev),
        th.as_tensor(data.returns[idx], dtype=th.float32, device=dev),
    )


def _masked_logits(policy: Any, obs: th.Tensor, mask: th.Tensor) -> th.Tensor:
    return policy.action_logits(obs).masked_fill(~mask, -1e8)


def accuracy(policy: Any, data: Dataset, batch_size: int = 1024) -> dict[str, float]:
    """Agreement of the policy's deterministic action with the teacher's label.

    :param policy: the model's ``policy``
    :param data: labelled samples
    :param batch_size: samples per forward pass
    :return: ``accuracy`` (all samples), ``accuracy_not_sjbf`` (samples where the teacher
        did not take EASY-SJBF's choice: what copying EASY-SJBF cannot get), ``stop_recall``
        and ``stop_precision``, ``sjbf_agreement`` (the accuracy of always copying EASY-SJBF),
        ``loss`` (mean cross-entropy), ``samples``, and the accuracy and EASY-SJBF
        agreement on the samples with more than one candidate row (``*_multi_row``)
    """
    n = len(data)
    if n == 0:
        return {"samples": 0}
    pred = np.empty(n, dtype=np.int64)
    loss = 0.0
    policy.set_training_mode(False)
    with th.no_grad():
        for lo in range(0, n, batch_size):
            idx = np.arange(lo, min(n, lo + batch_size))
            obs, mask, lab, _ = _tensors(policy, data, idx)
            logits = _masked_logits(policy, obs, mask)
            loss += float(th.nn.functional.cross_entropy(logits, lab, reduction="sum"))
            pred[idx] = logits.argmax(dim=1).cpu().numpy()
    lab = data.labels
    stop = data.max_queue
    hard = lab != data.sjbf
    multi = data.counts > 1
    return {
        "samples": n,
        "loss": loss / n,
        "accuracy": float(np.mean(pred == lab)),
        "accuracy_not_sjbf": float(np.mean(pred[hard] == lab[hard])) if hard.any() else 1.0,
        "not_sjbf_samples": int(hard.sum()),
        "stop_recall": float(np.mean(pred[lab == stop] == stop)) if (lab == stop).any() else 1.0,
        "stop_precision": (
            float(np.mean(lab[pred == stop] == stop)) if (pred == stop).any() else 1.0
        ),
        "sjbf_agreement": float(np.mean(lab == data.sjbf)),
        "student_sjbf_agreement": float(np.mean(pred == data.sjbf)),
        # decisions with a real choice among rows (one row: only "start it or STOP")
        "multi_row_samples": int(multi.sum()),
        "accuracy_multi_row": float(np.mean(pred[multi] == lab[multi])) if multi.any() else 1.0,
        "sjbf_agreement_multi_row": (
            float(np.mean(lab[multi] == data.sjbf[multi])) if multi.any() else 1.0
        ),
    }


@dataclass
class FitResult:
    """What :func:`fit` did.

    :param epochs: epochs run
    :param best_epoch: the epoch whose weights were kept (lowest held-out loss)
    :param initial_loss: the training cross-entropy before the first step
    :param seconds: wall time
    :param history: per epoch ``train_loss``, ``held_loss`` (``None`` without held-out data)
    """

    epochs: int
    best_epoch: int
    seconds: float
    initial_loss: float
    history: list[dict[str, float | None]] = field(default_factory=list)


def fit(
    model: Any,
    train: Dataset,
    held: Dataset | None,
    rng: np.random.Generator,
    *,
    epochs: int = 20,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    value: bool = True,
    value_coef: float = 0.5,
    seconds: float | None = None,
) -> FitResult:
    """Train ``model.policy`` on the labels (in place): Adam on the cross-entropy of the
    label under the masked distribution, plus ``value_coef`` times the squared error of
    the value head against the sample's episode return (``value``). The actor and the
    critic share no parameter, so the value term does not change the actor's training.
    Keeps the weights of the epoch with the lowest held-out cross-entropy.

    :param model: a ``MaskablePPO`` of :func:`make_student`
    :param train: training samples
    :param held: held-out samples (``None`` or empty: keep the last epoch)
    :param rng: the generator of the minibatch order (torch is seeded from it too)
    :param epochs: passes over the training samples
    :param batch_size: samples per step
    :param learning_rate: Adam's learning rate
    :param value: also regress the value head on the returns
    :param value_coef: weight of the value loss
    :param seconds: stop after this wall time (at the end of an epoch)
    """
    policy = model.policy
    th.manual_seed(int(rng.integers(2**31)))
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = th.optim.Adam(params, lr=learning_rate)
    t0 = time.perf_counter()
    n = len(train)
    best = (np.inf, 0, {k: v.detach().clone() for k, v in policy.state_dict().items()})
    history: list[dict[str, float | None]] = []
    use_held = held is not None and len(held) > 0
    initial = accuracy(policy, train)["loss"] if n else float("nan")
    for epoch in range(1, int(epochs) + 1):
        policy.set_training_mode(True)
        order = rng.permutation(n)
        total = 0.0
        for lo in range(0, n, batch_size):
            idx = order[lo : lo + batch_size]
            obs, mask, lab, ret = _tensors(policy, train, idx)
            logits = _masked_logits(policy, obs, mask)
            loss = th.nn.functional.cross_entropy(logits, lab)
            total += float(loss.detach()) * len(idx)
            if value:
                v = policy.predict_values(obs).flatten()
                loss = loss + value_coef * th.nn.functional.mse_loss(v, ret)
            opt.zero_grad()
            loss.backward()
            opt.step()
        held_loss = accuracy(policy, held)["loss"] if use_held else None  # type: ignore[arg-type]
        history.append({"epoch": epoch, "train_loss": total / max(n, 1), "held_loss": held_loss})
        score = held_loss if held_loss is not None else -epoch
        if score < best[0]:
            best = (score, epoch, {k: v.detach().clone() for k, v in policy.state_dict().items()})
        if seconds is not None and time.perf_counter() - t0 > seconds:
            break
    policy.load_state_dict(best[2])
    policy.set_training_mode(False)
    return FitResult(len(history), best[1], time.perf_counter() - t0, initial, history)
