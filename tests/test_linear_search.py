"""``research/search/`` and :mod:`research.search.linear_search`: CMA-ES over a linear score.

* :class:`LinearScore` chooses what ``KernelPolicy`` with the same ``row_prior`` and
  ``stop_init`` chooses (kernel output 0), STOP included;
* the objective is the paired log ratio to the reference: 0 on every window for
  EASY-SJBF's own order, above 0 for a policy that never backfills;
* a search is seeded (numpy's global state plays no part), a resumed search continues
  exactly where it stopped, and worker processes (``jobs``) give the same result;
* ``--ship`` makes a ``train/ppo.py --total-steps 0`` run whose model plays the searched
  weights to the same AVEbsld on every window;
* the shipped run's model card names the search, its generations and time;
* bad options are errors that name the valid choices.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

REPO = Path(__file__).resolve().parents[1]

from hpcgym_agents.kernel_policy import KernelPolicy  # noqa: E402
from research.search.linear_search import (  # noqa: E402
    Evaluations,
    LinearScore,
    SearchProblem,
    parse_weights,
    prior_option,
    search,
)
from train.config import ConfigError, TrainConfig  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"trace": "synthetic", "max_queue": 16}


def test_linear_score_chooses_what_the_row_prior_policy_chooses() -> None:
    k, f = 10, 9
    rng = np.random.default_rng(3)
    obs = rng.random((400, k, f), dtype=np.float32)
    n_valid = rng.integers(0, k + 1, size=(400, 1))
    valid = np.arange(k)[None, :] < n_valid
    obs[..., 0] = valid
    obs[~valid] = 0.0
    masks = np.concatenate([valid & (rng.random((400, k)) < 0.8), np.ones((400, 1), bool)], 1)
    columns, weights, stop = [2, 5, 7], [-6.5, 2.25, -1.5], 4.0
    th.manual_seed(0)
    net = KernelPolicy(
        spaces.Box(0.0, 1.0, (k, f), np.float32),
        spaces.Discrete(k + 1),
        lambda _: 3e-4,
        row_prior=list(zip(columns, weights, strict=True)),
        stop_init=stop,
    )
    # the scores themselves, bit for bit, with many columns (the float32 rounding of a
    # sum depends on its order: a near-tie must come out as in the shipped model)
    wide = rng.random((300, k, 27), dtype=np.float32)
    cols = list(range(1, 27))
    w = rng.normal(size=26) * 10
    th.manual_seed(0)
    big = KernelPolicy(
        spaces.Box(0.0, 1.0, (k, 27), np.float32),
        spaces.Discrete(k + 1),
        lambda _: 3e-4,
        row_prior=list(zip(cols, w.tolist(), strict=True)),
    )
    with th.no_grad():
        prior = big.mlp_extractor.prior(th.as_tensor(wide)).numpy()
    np.testing.assert_array_equal(LinearScore(cols, w, 0.0).scores(wide), prior)
    ours, _ = LinearScore(columns, np.array(weights), stop).predict(obs, action_masks=masks)
    theirs, _ = net.predict(obs, action_masks=masks, deterministic=True)
    np.testing.assert_array_equal(ours, theirs)
    assert (ours == k).sum() > 20 and (ours < k).sum() > 20  # STOP and rows both chosen
    one, _ = LinearScore(columns, np.array(weights), stop).predict(obs[7], action_masks=masks[7])
    assert one == ours[7]


def test_prior_option_and_weights_round_trip() -> None:
    names = ["estimate", "wait", "slack"]
    text = prior_option(names, [-41.90213, 0.0, 1.5e-7])
    assert text == "estimate=-41.9021,slack=1.5e-07"  # a weight of 0 is left out
    assert parse_weights(text, names) == {"estimate": -41.9021, "slack": 1.5e-07}
    for bad, message in [
        ("estimate", "NAME=WEIGHT"),
        ("nope=1", "expected one of estimate, wait, slack"),
        ("wait=1,wait=2", "given twice"),
        ("wait=x", "not a number"),
        ("wait=inf", "finite"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_weights(bad, names)


def _problem(
    windows: int = 3, length: int = 192, seed: int = 5, **options: object
) -> SearchProblem:
    cfg = TrainConfig.create(preset="fast", **{**SMALL, **options})
    return SearchProblem.for_config(cfg, ["wait", "estimate", "procs"], windows, length, seed)


def test_objective_is_the_paired_log_ratio_to_the_reference() -> None:
    problem = _problem()
    starts = problem.draw(0)
    assert starts == problem.draw(0) and starts != problem.draw(1)
    sjbf = LinearScore(problem.columns, np.array([0.0, -50.0, 0.0]), -3.0)
    np.testing.assert_allclose(problem.log_ratios(sjbf, starts), 0.0, atol=1e-12)
    never = LinearScore(problem.columns, np.array([0.0, -50.0, 0.0]), 99.0)  # always STOP
    assert problem.log_ratios(never, starts).mean() > 0.01


def test_windows_without_a_mix_are_the_split_windows_of_the_seed() -> None:
    # the draws every search so far made (a mix must not move them)
    from hpcgym.evaluation.windows import select_windows

    problem = _problem(windows=4)
    seed = int(np.random.default_rng([5, 3]).integers(2**31 - 1))
    ws = select_windows(problem.n_jobs, 192, 4, "train", seed, 0.7, validation_fraction=0.1)
    assert problem.draw(3) == [int(s) for s in ws.starts]
    assert problem.traces == 1


MIX = "synthetic:seed=7,n_jobs=6000"


def test_a_trace_mix_spreads_the_windows_and_scores_each_on_its_own_trace() -> None:
    from hpcgym.evaluation.runner import run_baselines

    problem = _problem(windows=5, mix_traces=(MIX,))
    assert problem.traces == 2 and len(problem.others) == 1
    assert [e.workload is problem.workload for e in problem.envs] == [1, 0, 1, 0, 1]
    assert len(problem.others[0]) != problem.n_jobs  # another workload, not a copy
    starts = problem.draw(0)
    assert starts == problem.draw(0) and starts != problem.draw(1)
    # trace 0's windows are those it would draw alone with 3 windows; trace 1's its own
    alone = _problem(windows=3)
    assert starts[0::2] == alone.draw(0)
    # every window against the reference on its own trace: EASY-SJBF's order is 1 on each
    sjbf = LinearScore(problem.columns, np.array([0.0, -50.0, 0.0]), -3.0)
    np.testing.assert_allclose(problem.log_ratios(sjbf, starts), 0.0, atol=1e-12)
    ref = problem.reference_values(starts)
    other, _ = run_baselines(problem.others[0], starts[1::2], 192, ["EASY-SJBF"], "FCFS")
    np.testing.assert_allclose(ref[1::2], other["EASY-SJBF"]["per_window"])
    # the same values in worker processes
    never = LinearScore(problem.columns, np.array([5.0, -50.0, 0.0]), -3.0)
    local = Evaluations(problem, 1).mean_log_ratios([never], starts)
    evals = Evaluations(problem, 2)
    try:
        assert evals.mean_log_ratios([never], starts) == pytest.approx(local, abs=1e-12)
    finally:
        evals.close()
    # a look from outside plays --trace alone
    cfg = problem.cfg
    solo = SearchProblem.for_config(cfg, problem.names, 3, 192, 5, mix=False)
    assert solo.traces == 1 and solo.draw(0) == alone.draw(0)
    with pytest.raises(ConfigError, match="one window per trace"):
        _problem(windows=1, mix_traces=(MIX,))
    with pytest.raises(ConfigError, match="--load-weighting"):
        _problem(load_weighting=2.0)


def _run(out: Path, generations: int, resume: bool = False, jobs: int = 1) -> dict:
    return search(
        _problem(windows=2, length=128),
        {"estimate": -50.0, "wait": 5.0},
        10.0,
        out=out,
        popsize=4,
        generations=generations,
        resume=resume,
        jobs=jobs,
    )


def test_search_is_seeded_and_resumes_exactly(tmp_path: Path) -> None:
    np.random.seed(1)  # noqa: NPY002 (the global state a search must ignore)
    a = _run(tmp_path / "a", 3)
    np.random.seed(2)  # noqa: NPY002 (the global state a search must ignore)
    _run(tmp_path / "b", 2)
    np.random.seed(3)  # noqa: NPY002 (the global state a search must ignore)
    b = _run(tmp_path / "b", 3, resume=True)
    assert a["generations"] == b["generations"] == 3 and a["finished"]
    assert a["row_prior"] == b["row_prior"] and a["stop_init"] == b["stop_init"]
    assert [r["best"] for r in a["history"]] == [r["best"] for r in b["history"]]
    assert a["row_prior"] != "wait=5,estimate=-50"  # it moved
    c = _run(tmp_path / "c2", 3, jobs=2)  # candidates played in two worker processes
    assert c["row_prior"] == a["row_prior"] and c["history"][-1]["best"] == a["history"][-1]["best"]
    with pytest.raises(ConfigError, match="already holds a search"):
        _run(tmp_path / "a", 4)
    with pytest.raises(ConfigError, match="search_state.pkl is missing"):
        _run(tmp_path / "c", 4, resume=True)


def test_search_command_is_one_run_that_retraces_a_resumed_search(tmp_path: Path) -> None:
    import shlex

    from research.search.search import main

    base = ["--trace", "synthetic", "--preset", "fast", "--max-queue", "16", "--columns",
            "wait,estimate", "--init", "estimate=-50,wait=5", "--stop-init", "10",
            "--windows", "2", "--length", "128", "--popsize", "4"]  # fmt: skip
    first = main([*base, "--generations", "2", "--time-limit", "100", "--out", str(tmp_path / "a")])
    assert "--time-limit" not in first["search_command"]
    assert first["search_command"].endswith("--generations 2")
    resumed = main([*base, "--generations=3", "--resume", "--out", str(tmp_path / "a")])
    assert resumed["generations"] == 3
    words = shlex.split(resumed["search_command"])
    assert "--resume" not in words and words[-2:] == ["--generations", "3"]
    assert "--resume" in shlex.split(resumed["last_invocation"])
    saved = json.loads((tmp_path / "a" / "search.json").read_text())
    assert saved["search_command"] == resumed["search_command"]
    args = words[2:]
    args[args.index("--out") + 1] = str(tmp_path / "b")
    again = main(args)  # the recorded command, run fresh in another folder
    assert again["row_prior"] == resumed["row_prior"]
    assert again["stop_init"] == resumed["stop_init"]
    assert [r["best"] for r in again["history"]] == [r["best"] for r in resumed["history"]]


def test_a_search_stopped_by_its_time_limit_is_shipped_by_the_resume_that_ends_it(
    tmp_path: Path, capsys
) -> None:
    """``--ship`` with ``--time-limit``: a search stopped before its last generation ships
    nothing (a run of an unfinished search would hold the run folder and make the finishing
    ``--resume --ship`` fail); the resume that ends it ships the final weights."""
    from research.search.search import main

    out = tmp_path / "s"
    base = ["--trace", "synthetic", "--preset", "fast", "--max-queue", "16", "--n-envs", "1",
            "--vec-env", "dummy", "--eval-windows", "2", "--eval-length", "128", "--baselines",
            "EASY-SJBF", "--no-progress", "--columns", "wait,estimate", "--init",
            "estimate=-50,wait=5", "--stop-init", "10", "--generations", "3", "--windows", "2",
            "--length", "128", "--popsize", "4", "--out", str(out), "--ship"]  # fmt: skip
    first = main([*base, "--time-limit", "1e-9"])  # stops after its first generation
    assert not first["finished"] and len(first["history"]) == 1
    assert (
        "not shipped: the search stopped at its time limit after 1 of 3" in capsys.readouterr().out
    )
    assert not (out / "run").exists()
    last = main([*base, "--resume"])
    assert last["finished"] and len(last["history"]) == 3
    config = json.loads((out / "run" / "config.json").read_text())
    assert config["row_prior"] == last["row_prior"] != first["row_prior"]


def test_bad_columns_name_the_valid_ones() -> None:
    cfg = TrainConfig.create(preset="fast", **SMALL)
    with pytest.raises(ConfigError, match="nope; expected observation columns.*wait, estimate"):
        SearchProblem.for_config(cfg, ["wait", "nope"], 2, 128, 0)
    with pytest.raises(ConfigError, match="given twice"):
        SearchProblem.for_config(cfg, ["wait", "wait"], 2, 128, 0)
    with pytest.raises(ConfigError, match="prediction"):  # needs --feature-predictor
        SearchProblem.for_config(cfg, ["prediction"], 2, 128, 0)


def test_cli_ships_a_run_that_plays_the_searched_weights(tmp_path: Path, capsys) -> None:
    from sb3_contrib import MaskablePPO

    from hpcgym.evaluation.play import play_windows
    from research.search.search import main

    out = tmp_path / "s"
    argv = ["--trace", "synthetic", "--preset", "fast", "--max-queue", "16", "--n-envs", "1",
            "--vec-env", "dummy", "--eval-windows", "2", "--eval-length", "128", "--baselines",
            "EASY-SJBF", "--no-progress", "--columns", "wait,estimate,procs,slack",
            "--features", "extended", "--init", "estimate=-50,wait=5", "--stop-init", "10",
            "--generations", "2", "--windows", "2", "--length", "128", "--popsize", "4",
            "--out", str(out), "--ship"]  # fmt: skip
    result = main(argv)
    printed = capsys.readouterr().out
    assert "generation 1: best" in printed and "ship: python train/ppo.py" in printed
    saved = json.loads((out / "search.json").read_text())
    assert saved["train_command"] == result["train_command"]
    assert f"--row-prior {result['row_prior']}" in result["train_command"]
    config = json.loads((out / "run" / "config.json").read_text())
    assert config["row_prior"] == result["row_prior"] and config["total_steps"] == 0
    model = MaskablePPO.load(out / "run" / "final_model.zip", device="cpu")
    problem = SearchProblem.for_config(
        TrainConfig.create(preset="fast", features="extended", **SMALL),
        result["names"],
        2,
        128,
        9,
    )
    weights = np.array([result["weights"][n] for n in result["names"]])
    mine = LinearScore(problem.columns, weights, result["stop_init"])
    for g in range(3):
        starts = problem.draw(g)
        a = [r["avg_bsld"] for r in play_windows(problem.envs, mine, starts, seed=0)]
        b = [r["avg_bsld"] for r in play_windows(problem.envs, model, starts, seed=0)]
        assert a == b
    from hpcgym.evaluation.cards import card_from_run, card_markdown

    card = card_from_run(out / "run", model="final").to_dict()
    minutes = sum(r["seconds"] for r in result["history"]) / 60.0
    assert card["search"]["command"] == result["search_command"]
    assert card["search"]["generations"] == 2 and card["search"]["reference"] == "EASY-SJBF"
    assert card["wall_time_min"] >= round(minutes, 1)
    assert card["training_command"] == result["train_command"]  # the run was started by --ship
    text = card_markdown(card)
    assert "## Search" in text and "2 generations of 2 train-split windows of 128 jobs" in text
    assert "min on one core;" in text  # no --jobs: the search played on one process
    fresh = np.exp(np.mean(np.log([r["mean_fresh"] for r in result["history"]])))
    assert card["search"]["fresh_train_ratio"] == pytest.approx(fresh, rel=1e-12)
    assert f"the mean was at {fresh:.3f}" in text
    with pytest.raises(SystemExit):
        main(
            [
                *argv[:-3],
                "--columns",
                "wait",
                "--init",
                "estimate=-50",
                "--out",
                str(tmp_path / "e"),
            ]
        )
    assert "--init: estimate not in --columns" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--columns", "wait,nope", "--out", str(tmp_path / "e")])
    assert "--columns: nope not observation columns" in capsys.readouterr().err


def test_cli_without_a_preset_and_with_a_trace_mix_ships(tmp_path: Path) -> None:
    # without --preset the run's length is --epochs; the ship run replaces it by 0 steps
    from research.search.search import main

    out = tmp_path / "s"
    result = main(
        ["--trace", "synthetic", "--max-queue", "16", "--mix-traces", MIX, "--columns",
         "wait,estimate", "--generations", "1", "--windows", "2", "--length", "128",
         "--popsize", "4", "--torch-threads", "1", "--no-progress", "--out", str(out),
         "--ship"]
    )  # fmt: skip
    assert result["traces"] == ["synthetic", MIX]
    config = json.loads((out / "run" / "config.json").read_text())
    assert config["total_steps"] == 0 and config["epochs"] is None
    assert config["mix_traces"] == [MIX]
    assert "--mix-traces" in result["search_command"]


def test_search_curve_replays_the_generations_on_fixed_validation_windows(
    tmp_path: Path, capsys
) -> None:
    from hpcgym.evaluation.windows import select_windows
    from research.probes import search_curve
    from research.search.search import main

    out = tmp_path / "s"
    result = main(
        ["--trace", "synthetic", "--preset", "fast", "--max-queue", "16",
         "--columns", "wait,estimate,procs", "--init", "estimate=-50", "--stop-init", "-3",
         "--sigma", "0.5", "--generations", "3", "--windows", "2", "--length", "128",
         "--popsize", "4", "--out", str(out)]
    )  # fmt: skip
    capsys.readouterr()
    (res,) = search_curve.main([str(out), "--every", "2", "--windows", "3", "--length", "128",
                                "--seed", "4"])  # fmt: skip
    assert "| start | — | 1.000 [1.000, 1.000] | 0/3 |" in capsys.readouterr().out
    assert res["reference"] == "EASY-SJBF"  # an FCFS search; an SJF one names SJF+EASY-SJBF
    assert [r["generation"] for r in res["rows"]] == ["start", "0", "2"]  # every 2nd + the last
    assert result["history"][0]["mean_fresh"] == pytest.approx(1.0, abs=1e-12)  # the start
    assert [r["train"] for r in res["rows"][1:]] == [
        result["history"][g]["mean_policy"] for g in (0, 2)
    ]
    # the fixed windows are eval/select_checkpoint.py's validation windows of that seed
    cfg = TrainConfig.create(preset="fast", **SMALL)
    problem = SearchProblem.for_config(cfg, result["names"], 3, 128, 0, "validation")
    starts = problem.windows_at(4)
    expected = select_windows(problem.n_jobs, 128, 3, "validation", 4, 0.7, validation_fraction=0.1)
    assert starts == [int(s) for s in expected.starts]
    # the last row is the shipped policy (the search's final weights) on those windows
    weights = np.array([result["weights"][n] for n in result["names"]])
    final = problem.play(LinearScore(problem.columns, weights, result["stop_init"]), starts)
    assert res["rows"][-1]["avg_bsld"] == pytest.approx(final.mean(), rel=1e-12)
    assert json.loads((out / "search_curve_validation.json").read_text())["rows"] == res["rows"]
    with pytest.raises(ConfigError, match="split 'test': expected train or validation"):
        SearchProblem.for_config(cfg, ["wait"], 2, 128, 0, "test")
    with pytest.raises(SystemExit):
        search_curve.main([str(tmp_path / "none")])
    assert "search.json is missing" in capsys.readouterr().err


def test_search_processes_from_the_recorded_command() -> None:
    """The card states the cores a search ran on from its command's ``--jobs``."""
    from hpcgym.evaluation.card_text import card_markdown, search_processes

    assert search_processes("python -m research.search --windows 8 --jobs 2 --out d") == 2
    assert search_processes("python -m research.search --jobs=3") == 3
    assert search_processes("python -m research.search --windows 8") == 1
    assert search_processes(None) == 1 and search_processes("a 'b") == 1
    card = json.loads(
        (REPO / "research" / "agents" / "hpc2n-fcfs-guarded-eloss-cmaes-w128.json").read_text()
    )
    assert "--jobs 2" in card["search"]["command"]
    text = card_markdown(card)
    assert f"{card['search']['minutes']} min on 2 cores;" in text
    card["search"]["command"] = card["search"]["command"].replace(" --jobs 2", "")
    assert f"{card['search']['minutes']} min on one core;" in card_markdown(card)
