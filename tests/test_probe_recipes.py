"""``research/probes/recipes.py``: agents' held-out tests grouped by training recipe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

from research.probes.recipes import main, recipe_of, recipe_rows, recipes_markdown  # noqa: E402

FAST = "python train/ppo.py --trace T --preset fast --seeds 1 2 --time-limit 30 --no-progress"


def _p(ratio: float, low: float, high: float) -> dict[str, Any]:
    verdict = "better" if high < 1 else "worse" if low > 1 else "on par"
    return {
        "geo_ratio": ratio,
        "ci_low": low,
        "ci_high": high,
        "windows": 30,
        "wins": 15,
        "verdict": verdict,
    }


def card(
    name: str,
    trace: str,
    paired: dict[str, dict[str, Any]],
    command: str = FAST,
    transfer: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "trace": trace,
        "policy": "FCFS",
        "estimator": "request",
        "mode": "guarded",
        "reward_mode": "terminal",
        "training_command": command,
        "hyperparameters": {"ent_coef": 0.0},
        "validation_fraction": 0.1,
        "test": {
            trace: {
                "trace": trace,
                "transfer": transfer,
                "windows": 30,
                "command": f"python eval/compare.py --trace {trace}",
                "paired": paired,
                "methods": {},
            }
        },
    }
    out.update(fields)
    return out


def test_recipe_reads_the_card_and_ignores_bookkeeping() -> None:
    base = card("a", "Lublin-1", {})
    assert recipe_of(base) == "FCFS · terminal"
    # seeds, time limit, folders do not make another recipe
    other = card("b", "Lublin-1", {}, command=FAST.replace("--seeds 1 2", "--seed 7"))
    assert recipe_of(other) == recipe_of(base)
    full = card(
        "c",
        "SDSC-SP2",
        {},
        command=FAST + " --lr-schedule linear --init-from bc.zip --mix-traces HPC2N",
        policy="SJF",
        estimator="eloss",
        reward_mode="dense",
        reward_scale="log",
        hyperparameters={"ent_coef": 0.01},
        time_scale="log",
        validation_fraction=0.3,
        features="extended",
        feature_predictor="log-ridge:lam=10",
        selection={"generated": True},
        gate={"tau": 0.5},
    )
    assert recipe_of(full) == (
        "SJF · eloss reservations · dense · log reward · ent 0.01 · log time · vf 0.3 · "
        "linear lr · extended features · column log-ridge:lam=10 · trace mix · "
        "from a clone · chosen on generated windows · gated"
    )
    clone = card("d", "SDSC-SP2", {}, command=FAST + " --init-from bc.zip --total-steps 0")
    assert recipe_of(clone).endswith("clone, no PPO")
    paper = card("e", "SDSC-SP2", {}, command="", reward_mode=None)
    assert recipe_of(paper) == "FCFS · the paper's recipe (RLBackfilling reproduction)"
    # a card whose command was lost still has its fields
    lost = card("f", "Lublin-2", {}, command="", reward_mode="dense")
    assert recipe_of(lost) == "FCFS · dense"
    slow = card("g", "Lublin-2", {}, command="python train/ppo.py --trace Lublin-2")
    assert recipe_of(slow) == "FCFS · preset paper · terminal"
    # a searched linear score: the recipe is the search, not the weights it found
    searched = [
        card(n, t, {}, command=FAST + f" --row-prior wait={w},estimate=-40 --total-steps 0",
             time_scale="log", features="extended", feature_predictor="log-ridge:lam=10",
             search={"windows": 32, "length": 1024})
        for n, t, w in [("h", "SDSC-SP2", -23.5), ("i", "HPC2N", 4.25)]
    ]  # fmt: skip
    assert (
        recipe_of(searched[0])
        == recipe_of(searched[1])
        == (
            "FCFS · CMA-ES linear score on 32 x 1024 train windows · log time · extended "
            "features · column log-ridge:lam=10"
        )
    )
    # a hidden layer in the searched score is another recipe, named as such
    hidden = card(
        "j", "HPC2N", {}, command=FAST + " --kernel-arch 4 --total-steps 0",
        time_scale="log", features="extended", feature_predictor="log-ridge:lam=10",
        search={"windows": 32, "length": 1024, "hidden": 4},
    )  # fmt: skip
    assert recipe_of(hidden) == (
        "FCFS · CMA-ES score with 4 hidden ReLU units on 32 x 1024 train windows · log time · "
        "extended features · column log-ridge:lam=10"
    )
    # PPO's own settings, given explicitly, make another recipe
    lam = card("h", "SDSC-SP2", {}, command=FAST + " --gae-lambda 0.8 --kernel-arch 64,32")
    assert recipe_of(lam) == "FCFS · terminal · gae-lambda 0.8 · kernel-arch 64,32"


def test_recipe_ppo_flags_are_train_ppos_hyper_options() -> None:
    """Every PPO option of train/ppo.py is either in PPO_FLAGS or worded on its own."""
    import dataclasses

    from research.probes.recipes import PPO_FLAGS
    from train.config import TrainConfig

    hyper = {
        "--" + f.name.replace("_", "-")
        for f in dataclasses.fields(TrainConfig)
        if "cli" in f.metadata and f.metadata["cli"].group == "hyper"
    }
    own = {"--ent-coef", "--lr-schedule", "--init-from"}
    assert set(PPO_FLAGS) == hyper - own and own <= hyper


def test_rows_group_by_recipe_and_mark_the_verdicts() -> None:
    cards = [
        card("a", "Lublin-1", {"EASY-SJBF": _p(0.95, 0.90, 1.02)}),
        card("b", "Lublin-1", {"EASY-SJBF": _p(0.80, 0.70, 0.90)}),
        card("c", "HPC2N", {"EASY-SJBF": _p(1.10, 1.02, 1.20)}),
        # SJF agents are judged against SJF+EASY-SJBF, ELOSS agents against ELOSS
        card("d", "Lublin-2", {"SJF+EASY-SJBF": _p(0.81, 0.72, 0.91)}, policy="SJF"),
        card("e", "SDSC-SP2", {"ELOSS": _p(0.99, 0.9, 1.1)}, estimator="eloss"),
        # never counted: free mode, a transfer test, a test without the reference
        card("f", "Lublin-1", {"EASY-SJBF": _p(0.5, 0.4, 0.6)}, mode="free"),
        card("g", "KTH-SP2", {"EASY-SJBF": _p(0.5, 0.4, 0.6)}, transfer=True),
        card("h", "Lublin-1", {"EASY": _p(0.5, 0.4, 0.6)}),
    ]
    rows = recipe_rows(cards)
    assert [(r, ref) for r, ref, _ in rows] == [
        ("FCFS · terminal", "EASY-SJBF"),
        ("FCFS · eloss reservations · terminal", "ELOSS"),
        ("SJF · terminal", "SJF+EASY-SJBF"),
    ]
    assert rows[0][2] == {"Lublin-1": ["**0.800**", "0.950"], "HPC2N": ["1.100 (worse)"]}
    assert rows[1][2] == {"SDSC-SP2": ["0.990"]}
    assert rows[2][2] == {"Lublin-2": ["**0.810**"]}
    md = recipes_markdown(cards)
    assert "| recipe | vs | SDSC-SP2 | HPC2N | Lublin-1 | Lublin-2 |" in md
    assert "| FCFS · terminal | EASY-SJBF |   | 1.100 (worse) | **0.800**, 0.950 |   |" in md


def test_cli(tmp_path: Path) -> None:
    d = tmp_path / "agents"
    d.mkdir()
    c = {**card("a", "Lublin-2", {"EASY-SJBF": _p(0.84, 0.8, 0.88)}), "model": "a.zip"}
    (d / "a.zip").write_bytes(b"")
    (d / "a.json").write_text(json.dumps(c))
    out = tmp_path / "r.md"
    assert main(["--agents", str(d), "--out", str(out)]) == 0
    assert "| FCFS · terminal | EASY-SJBF |   |   |   | **0.840** |" in out.read_text()
    assert main(["--agents", str(d), "--out", str(tmp_path)]) == 2  # a folder, not a file


def test_default_reads_the_retired_agents_and_the_zoo(capsys) -> None:
    """The zoo's cards and the retired agents' are read together: the recipe rows hold the
    test cells of both folders."""
    from research.probes._cards import RESEARCH_AGENTS, load_cards, zoo_dir

    zoo = load_cards([zoo_dir()])
    retired = load_cards([RESEARCH_AGENTS])
    assert len(zoo) == 11 and len(retired) == 73

    def cells(cards: list[dict[str, Any]]) -> int:
        return sum(len(v) for _, _, c in recipe_rows(cards) for v in c.values())

    assert cells(zoo + retired) == cells(zoo) + cells(retired) > cells(retired) > 0
    assert main([]) == 0
    assert "## Recipes across traces" in capsys.readouterr().out
