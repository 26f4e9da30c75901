"""``train/ppo.py --task schedule --rows informed``: Schedule-v0's 24 informed columns
(:mod:`hpcgym.envs.informed_rows`) reach the training env, the run's ``config.json``, its
model card and the evaluation that plays the card.

The synthetic workload has no recorded schedule, hence ``--row-history 0`` (the window's
finished jobs only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sb3_contrib import MaskablePPO

import train.card as T  # noqa: E402
from hpcgym import evaluation as E
from hpcgym.envs.informed_rows import INFORMED_COLUMNS
from hpcgym.envs.queue_observation import QUEUE_COLUMNS

COLUMNS = (*QUEUE_COLUMNS, *INFORMED_COLUMNS)
INFORMED = ["--task", "schedule", "--rows", "informed", "--row-history", "0"]


@pytest.fixture(scope="module")
def informed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small informed run: the native vector env (its compiled step refuses the informed
    rows, so it steps in Python), a ranking estimate and a prior on an informed column."""
    from train_small import run_small

    tmp = tmp_path_factory.mktemp("informed")
    run_small(tmp, *INFORMED, "--rank-estimator", "log-ridge", "--row-prior", "like_last=-3",
              "--vec-env", "native", "--n-envs", "2", "--total-steps", "1024")  # fmt: skip
    return tmp / "r"


def test_the_run_trains_on_the_24_columns(informed_run: Path) -> None:
    cfg = json.loads((informed_run / "config.json").read_text())
    assert (cfg["rows"], cfg["row_history"], cfg["row_predictor"]) == ("informed", "0", None)
    assert cfg["rank_estimator"] == "log-ridge" and cfg["vec_env"] == "native"
    summary = json.loads((informed_run / "summary.json").read_text())
    assert summary["timesteps"] >= 1024
    model = MaskablePPO.load(informed_run / "final_model.zip")
    assert model.observation_space.shape == (128, len(COLUMNS)) == (128, 24)
    # the prior is on the informed column of that name
    assert model.policy.row_prior == ((COLUMNS.index("like_last"), -3.0),)


def test_the_card_rebuilds_the_informed_env_in_the_evaluation(
    informed_run: Path, tmp_path: Path
) -> None:
    paths = T.ship_run(informed_run, "informed", tmp_path)
    card = E.load_model_card(paths["json"])
    assert card.env["task"] == "schedule"
    assert card.env["rows"] == "informed" and card.env["row_history"] == "0"
    assert card.env["rank_estimator"] == "log-ridge"
    assert "| rows | `informed` |" in paths["md"].read_text()
    model = MaskablePPO.load(card.model)
    ws = E.select_windows(10_000, 64, starts=[8000, 9000])
    res = E.evaluate(None, [E.card_method(card)], ws, jobs=1, progress=False)
    rows = [r for r in res.rows if r["method"] == "informed"]
    assert len(rows) == 2 and all(r["avg_bsld"] >= 1.0 for r in rows)
    # the env the evaluation builds is the model's: 24 columns (a card without its rows
    # keys gives the 16 default ones, and the evaluation refuses to play it)
    from hpcgym.envs import task_env

    env = task_env("schedule")(**{k: v for k, v in card.env.items() if k != "task"})
    assert env.observation_space.shape == model.observation_space.shape
    assert env.feature_names == COLUMNS
    plain = {k: v for k, v in card.env.items() if not k.startswith("row")}
    with pytest.raises(E.MethodUnavailable, match="expects observations of shape"):
        E.evaluate(None, [E.Method(label="plain", kind="agent", spec=str(card.model),
                                   env=plain)], ws, jobs=1, progress=False)  # fmt: skip


def test_heldout_test_replays_the_informed_card(informed_run: Path) -> None:
    """The held-out test of the card (``eval/heldout.py``) plays the agent in the env the
    card describes: 24 columns, else the model would be refused."""
    from hpcgym.zoo.heldout import heldout_test
    from hpcgym_agents import load_agent

    card = T.card_from_run(informed_run, model="final")
    sec = heldout_test(card, agent_loader=load_agent, windows=2, length=64, seed=9, jobs=1)
    agent = sec["methods"][card.name]["per_window"]
    assert len(agent) == 2 and all(v >= 1.0 for v in agent)


def test_informed_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from train_small import run_small

    from train.build import row_prior
    from train.config import ConfigError, TrainConfig

    cfg = TrainConfig(task="schedule", rows="informed", row_prior="rank_estimate=-5,wait=1")
    assert row_prior(cfg) == ((16, -5.0), (1, 1.0))
    with pytest.raises(ConfigError, match="--task schedule --rows default.*expected one of"):
        row_prior(TrainConfig(task="schedule", row_prior="like_last=-3"))
    with pytest.raises(ConfigError, match="--rows: the informed rows are Schedule-v0's"):
        TrainConfig(rows="informed")
    with pytest.raises(ConfigError, match="apply to --rows informed only"):
        TrainConfig(task="schedule", row_history="0")
    with pytest.raises(ConfigError, match="--row-history: expected log or a number"):
        TrainConfig(task="schedule", rows="informed", row_history="some")
    # the default log needs a recorded schedule, which the synthetic workload lacks
    with pytest.raises(SystemExit) as exc:
        run_small(tmp_path, "--task", "schedule", "--rows", "informed", "--total-steps", "128")
    assert exc.value.code == 2
    assert "on the command line: --row-history 0" in capsys.readouterr().err
