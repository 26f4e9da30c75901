"""``python -m research.search --hidden`` and :mod:`research.search.kernel_score`: a score
with a hidden layer.

* the vector's layout is the one the module documents (a hand computation of the logits);
* with ``v = 0`` the score chooses exactly what the linear score chooses, so a search
  starts at its linear start;
* only the output part is scaled, and scaling it does not change a choice;
* a search with ``--hidden`` is seeded, resumes only with the same ``--hidden``, plays
  the same in worker processes, and ``--ship`` makes a run whose model plays the searched
  vector to the same AVEbsld on every window; its card names the hidden layer;
* bad shapes and options are errors that say what to give.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch as th

REPO = Path(__file__).resolve().parents[1]

from research.search.kernel_score import (  # noqa: E402
    KernelScore,
    apply_vector,
    build_policy,
    hidden_start,
    normalized,
    split_vector,
    vector_size,
)
from research.search.linear_search import (  # noqa: E402
    Evaluations,
    LinearScore,
    SearchProblem,
    short,
)
from train.config import ConfigError, TrainConfig  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"trace": "synthetic", "max_queue": 16}


def _observations(k: int, f: int, n: int = 400, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs = rng.random((n, k, f), dtype=np.float32)
    valid = np.arange(k)[None, :] < rng.integers(0, k + 1, size=(n, 1))
    obs[..., 0] = valid
    obs[~valid] = 0.0
    masks = np.concatenate([valid & (rng.random((n, k)) < 0.8), np.ones((n, 1), bool)], 1)
    return obs, masks


def test_the_vector_layout_is_the_networks() -> None:
    k, f, columns, hidden = 10, 9, [2, 5, 7], 3
    rng = np.random.default_rng(1)
    x = rng.normal(size=vector_size(3, hidden)) * 3
    assert vector_size(3, hidden) == 3 + 1 + 3 + 9 + 3 and vector_size(3, 0) == 4
    w, b, v, big_w, a = split_vector(x, 3, hidden)
    policy = build_policy(columns, hidden, k, f)
    apply_vector(policy, columns, x, hidden)
    obs, masks = _observations(k, f, n=50)
    with th.no_grad():
        logits = policy.action_logits(th.as_tensor(obs)).numpy()
    xs = obs[..., columns].astype(np.float64)
    by_hand = xs @ w - np.minimum(w, 0).sum() + np.maximum(xs @ big_w.T + a, 0.0) @ v
    valid = obs[..., 0] > 0.5
    np.testing.assert_allclose(logits[..., :k][valid], by_hand[valid], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(logits[..., k], b, rtol=1e-6)
    # the weights of the other columns are 0: they change nothing
    other = obs.copy()
    other[..., [1, 3, 4, 6, 8]] = rng.random(other[..., [1, 3, 4, 6, 8]].shape)
    other[~valid] = 0.0
    with th.no_grad():
        again = policy.action_logits(th.as_tensor(other)).numpy()
    np.testing.assert_array_equal(again, logits)
    with pytest.raises(ValueError, match="a vector of 19 numbers for 3 columns and 3 hidden"):
        split_vector(x[:-1], 3, hidden)
    with pytest.raises(ValueError, match="not a one-hidden-layer kernel of 2 units"):
        apply_vector(policy, columns, np.zeros(vector_size(3, 2)), 2)
    with pytest.raises(ValueError, match="--stop-score learned or fixed, not 'pooled'"):
        KernelScore(columns, x, hidden, k, f, "pooled")


def test_without_output_weights_it_chooses_what_the_linear_score_chooses() -> None:
    k, f, columns = 10, 9, [2, 5, 7]
    obs, masks = _observations(k, f)
    w, stop = np.array([-6.5, 2.25, -1.5]), 4.0
    x = np.concatenate([w, [stop], hidden_start(3, 4, seed=0)])
    assert np.all(x[4:8] == 0) and np.any(x[8:20] != 0) and np.all(x[20:] == 0)
    ours, _ = KernelScore(columns, x, 4, k, f).predict(obs, action_masks=masks)
    linear, _ = LinearScore(columns, w, stop).predict(obs, action_masks=masks)
    np.testing.assert_array_equal(ours, linear)
    assert (ours == k).sum() > 20 and (ours < k).sum() > 20  # STOP and rows both chosen
    one, _ = KernelScore(columns, x, 4, k, f).predict(obs[7], action_masks=masks[7])
    assert one == ours[7]
    # with output weights the hidden layer changes choices
    x[4:8] = [30.0, -30.0, 20.0, -20.0]
    other, _ = KernelScore(columns, x, 4, k, f).predict(obs, action_masks=masks)
    assert (other != linear).sum() > 20


def test_only_the_output_part_is_scaled_and_scaling_changes_no_choice() -> None:
    k, f, columns, hidden = 10, 9, [2, 5, 7], 2
    rng = np.random.default_rng(4)
    x = rng.normal(size=vector_size(3, hidden)) * 5
    y = normalized(x, 3, hidden, 10.0, short)
    m = 3 + 1 + hidden
    assert np.linalg.norm(y[:m]) == pytest.approx(10.0, rel=1e-5)
    np.testing.assert_allclose(y[m:], x[m:], rtol=1e-5)  # the hidden layer as drawn
    doubled = y.copy()
    doubled[:m] *= 2.0  # a power of 2: every float32 sum scales exactly
    obs, masks = _observations(k, f)
    a, _ = KernelScore(columns, y, hidden, k, f).predict(obs, action_masks=masks)
    b, _ = KernelScore(columns, doubled, hidden, k, f).predict(obs, action_masks=masks)
    np.testing.assert_array_equal(a, b)


def _problem(hidden: int, windows: int = 3, **options: object) -> SearchProblem:
    cfg = TrainConfig.create(preset="fast", **{**SMALL, **options})
    return SearchProblem.for_config(
        cfg, ["wait", "estimate", "procs"], windows, 192, 5, hidden=hidden
    )


def test_a_hidden_problem_plays_kernel_scores_alike_in_workers() -> None:
    problem = _problem(2)
    starts = problem.draw(0)
    x = np.concatenate([[0.0, -50.0, 0.0, -3.0], hidden_start(3, 2, 5)])
    start = problem.candidate(x, float(np.linalg.norm(x[:4])))
    assert isinstance(start, KernelScore)
    np.testing.assert_allclose(problem.log_ratios(start, starts), 0.0, atol=1e-12)  # EASY-SJBF
    x[4:6] = [40.0, -25.0]
    moved = problem.candidate(x, 50.0)
    local = Evaluations(problem, 1).mean_log_ratios([moved, start], starts)
    evals = Evaluations(problem, 2)
    try:
        assert evals.mean_log_ratios([moved, start], starts) == pytest.approx(local, abs=1e-12)
    finally:
        evals.close()
    with pytest.raises(ConfigError, match="--stop-score learned or fixed .not pooled"):
        _problem(2, stop_score="pooled")
    with pytest.raises(ConfigError, match="--row-context none .not pooled"):
        _problem(2, row_context="pooled")
    with pytest.raises(ConfigError, match="--hidden -1"):
        _problem(-1)


def test_cli_hidden_search_ships_a_run_that_plays_the_searched_vector(
    tmp_path: Path, capsys
) -> None:
    from sb3_contrib import MaskablePPO

    from hpcgym.evaluation.cards import card_from_run, card_markdown
    from hpcgym.evaluation.play import play_windows
    from research.search.search import main

    base = ["--trace", "synthetic", "--preset", "fast", "--max-queue", "16", "--n-envs", "1",
            "--vec-env", "dummy", "--eval-windows", "2", "--eval-length", "128", "--baselines",
            "EASY-SJBF", "--no-progress", "--columns", "wait,estimate,procs,slack",
            "--features", "extended", "--init", "estimate=-50", "--stop-init", "-3",
            "--windows", "2", "--length", "128", "--popsize", "4"]  # fmt: skip
    out = tmp_path / "s"
    hidden = [*base, "--hidden", "2", "--out", str(out)]
    main([*hidden, "--generations", "1"])
    with pytest.raises(SystemExit):  # resumed with another --hidden
        main([*base, "--hidden", "3", "--out", str(out), "--generations", "2", "--resume"])
    assert "has --hidden 2, not 3" in capsys.readouterr().err
    result = main([*hidden, "--generations", "2", "--resume", "--ship"])
    capsys.readouterr()
    assert result["hidden"] == 2 and len(result["vector"]) == vector_size(4, 2)
    assert result["row_prior"].count("=") == 4  # every column, zeros kept: the shape
    assert f"--kernel-arch 2 --init-from {out / 'search_policy.zip'}" in result["train_command"]
    # the start is the linear start: generation 0's mean entering it, as a linear search's
    linear = main([*base, "--out", str(tmp_path / "lin"), "--generations", "1"])
    capsys.readouterr()
    assert result["history"][0]["mean_fresh"] == linear["history"][0]["mean_fresh"]
    # resumed = one uninterrupted run
    once = main([*hidden[:-1], str(tmp_path / "once"), "--generations", "2"])
    capsys.readouterr()
    assert once["vector"] == result["vector"]
    # the shipped model plays the searched vector
    model = MaskablePPO.load(out / "run" / "final_model.zip", device="cpu")
    cfg = TrainConfig.create(preset="fast", features="extended", **SMALL)
    problem = SearchProblem.for_config(cfg, result["names"], 2, 128, 9, hidden=2)
    rows, features = problem.envs[0].observation_space.shape
    mine = KernelScore(problem.columns, np.array(result["vector"]), 2, rows, features)
    for g in range(3):
        starts = problem.draw(g)
        a = [r["avg_bsld"] for r in play_windows(problem.envs, mine, starts, seed=0)]
        b = [r["avg_bsld"] for r in play_windows(problem.envs, model, starts, seed=0)]
        assert a == b
    card = card_from_run(out / "run", model="final").to_dict()
    assert card["search"]["hidden"] == 2
    assert "a linear score plus a hidden layer of 2 ReLU units" in card_markdown(card)
    saved = json.loads((out / "search.json").read_text())
    assert saved["hidden_layer"]["v"] == result["vector"][5:7]
