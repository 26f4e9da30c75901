"""``research/probes/period_profile.py``: a method's ratio per period of the range before
the test."""

from __future__ import annotations

import json

import numpy as np
import pytest

from research.probes import period_profile as B


def test_periods_of_slices_the_train_split_and_keeps_validation_apart() -> None:
    # train split [0, 1000) in 4 slices of 250 jobs; validation from job 1000
    starts = np.array([0, 100, 200, 300, 400, 500, 600, 700, 800, 1000, 1050])
    periods = B.periods_of(starts, length=100, validation=1000, periods=4)
    assert [p.name for p in periods] == ["1", "2", "3", "4", "validation"]
    assert [p.index for p in periods] == [(0, 1, 2), (3, 4), (5, 6, 7), (8,), (9, 10)]
    assert periods[0].lo == 0 and periods[0].hi == 300  # last start 200 + length
    assert periods[-1].lo == 1000 and periods[-1].hi == 1150
    # a slice without a start is left out; no validation window: no validation period
    periods = B.periods_of(np.array([0, 10, 900]), length=50, validation=1000, periods=4)
    assert [p.name for p in periods] == ["1", "4"]
    with pytest.raises(ValueError, match="increasing"):
        B.periods_of(np.array([0, 0]), 10, 100, 2)
    with pytest.raises(ValueError, match="periods"):
        B.periods_of(np.array([0, 10]), 10, 100, 0)


def test_between_sum_of_squares() -> None:
    logs = np.array([1.0, 1.0, 3.0, 3.0, 99.0])  # the last value is in no group
    assert B.between_sum_of_squares(logs, [(0, 1), (2, 3)]) == pytest.approx(4.0)
    assert B.between_sum_of_squares(logs, [(0, 2), (1, 3)]) == pytest.approx(0.0)


def test_permutation_p_finds_a_shift_and_not_noise() -> None:
    rng = np.random.default_rng(1)
    groups = [tuple(range(i, i + 6)) for i in range(0, 36, 6)]
    noise = rng.normal(0.0, 0.1, size=36)
    p_noise = B.permutation_p(noise, groups, 2000, np.random.default_rng(0))
    shifted = noise.copy()
    shifted[:6] += 0.3  # one period 3 SDs of a window's noise lower
    p_shift = B.permutation_p(shifted, groups, 2000, np.random.default_rng(0))
    assert p_noise > 0.05
    assert p_shift < 0.01
    # the observed assignment counts once: p is never below 1 / (1 + permutations)
    assert p_shift >= 1 / 2001
    # same seed, same p
    assert B.permutation_p(shifted, groups, 2000, np.random.default_rng(0)) == p_shift
    with pytest.raises(ValueError, match="two periods"):
        B.permutation_p(noise, groups[:1], 10, rng)
    with pytest.raises(ValueError, match="permutations"):
        B.permutation_p(noise, groups, 0, rng)


def test_stored_test_row_reads_a_cards_test_back() -> None:
    # a retired agent's card: its own paired ratio comes back from its stored values
    from research.probes._cards import RESEARCH_AGENTS, card_path

    name = "hpc2n-fcfs-guarded-cmaes"
    assert card_path(name) == RESEARCH_AGENTS / f"{name}.json"
    card = json.loads(card_path(name).read_text())
    paired = card["test"]["HPC2N"]["paired"]["EASY-SJBF"]
    row = B.stored_test_row(name, "HPC2N", "EASY-SJBF", [name, "ELOSS", "no-such-method"])
    assert row is not None and row["card"] == name and row["seed"] == 2611
    assert sorted(row["log_ratios"]) == ["ELOSS", name]
    assert float(np.exp(row["log_ratios"][name].mean())) == pytest.approx(paired["geo_ratio"])
    assert row["windows"] == paired["windows"] == len(row["starts"])
    # no test on that trace, or no stored reference: nothing
    assert B.stored_test_row(name, "SDSC-SP2", "EASY-SJBF", [name]) is None
    assert B.stored_test_row(name, "HPC2N", "no-such-reference", [name]) is None


def test_stored_test_row_reads_a_zoo_agent_under_its_zoo_name() -> None:
    """A zoo card's test records the agent under the name it was trained as; the zoo name
    (the label of its method) reads that column, and the old name finds the zoo card."""
    from hpcgym_agents.loading import pretrained_dir
    from research.probes._cards import card_path

    zoo = "hpc2n-fcfs"
    card = json.loads((pretrained_dir() / f"{zoo}.json").read_text())
    old = card["trained_as"]
    assert old != zoo and card_path(old) == card_path(zoo) == pretrained_dir() / f"{zoo}.json"
    paired = card["test"]["HPC2N"]["paired"]["EASY-SJBF"]
    row = B.stored_test_row(zoo, "HPC2N", "EASY-SJBF", [zoo, "ELOSS"])
    assert row is not None and row["card"] == zoo and sorted(row["log_ratios"]) == ["ELOSS", zoo]
    assert float(np.exp(row["log_ratios"][zoo].mean())) == pytest.approx(paired["geo_ratio"])


def test_merge_stored_tests() -> None:
    a = {"card": "a", "seed": 1, "windows": 2, "starts": [0, 5], "log_ratios": {"X": 1, "Y": 2}}
    b = {"card": "b", "seed": 1, "windows": 2, "starts": [0, 5], "log_ratios": {"Y": 3, "Z": 4}}
    merged = B.merge_stored_tests([None, a, b])
    assert merged is not None
    assert merged["log_ratios"] == {"X": 1, "Y": 2, "Z": 4}  # Y from the first card
    assert merged["cards"] == {"X": "a", "Y": "a", "Z": "b"}
    assert B.merge_stored_tests([None, None]) is None
    c = dict(b, card="c", starts=[0, 6])
    with pytest.raises(ValueError, match="different windows"):
        B.merge_stored_tests([a, c])


def test_main_on_a_generated_workload(tmp_path, capsys) -> None:
    out = tmp_path / "profile.json"
    B.main(
        [
            "--trace", "synthetic:n_jobs=3000,seed=1", "--length", "128", "--periods", "3",
            "--method", "EASY,ELOSS", "--permutations", "200", "--resamples", "4000",
            "--out", str(out),
        ]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert "| validation |" in text and "| train split |" in text
    data = json.loads(out.read_text())
    starts = np.asarray(data["starts"])
    # two grids: no window mixes the train and the validation split; none reaches the test
    assert not ((starts < data["validation"]) & (starts + 128 > data["validation"])).any()
    assert (starts + 128 <= data["test"]).all()
    assert [p["name"] for p in data["periods"]] == ["1", "2", "3", "validation"]
    train = next(r for r in data["table"] if r["period"] == "train split")
    logs = np.asarray(data["log_ratios"]["ELOSS"])[starts < data["validation"]]
    assert train["ELOSS"]["geo_ratio"] == pytest.approx(float(np.exp(logs.mean())))
    assert set(data["permutation_p"]) == set(data["trend"]) == {"EASY", "ELOSS"}
    with pytest.raises(SystemExit):
        B.main(["--trace", "synthetic:n_jobs=3000,seed=1", "--method", "EASY", "--resamples", "10"])


def test_trend_p_finds_a_drift_and_not_noise() -> None:
    rng = np.random.default_rng(3)
    starts = np.arange(40) * 1024
    noise = rng.normal(0.0, 0.1, size=40)
    slope, p = B.trend_p(starts, noise, 2000, np.random.default_rng(0))
    assert p > 0.05
    drift = noise + 0.05 * starts / 10_000  # +0.05 in the log ratio per 10,000 jobs
    slope, p = B.trend_p(starts, drift, 2000, np.random.default_rng(0))
    assert slope == pytest.approx(0.05 + np.polyfit(starts / 10_000, noise, 1)[0])
    assert p < 0.01
    # a falling drift is found as well (two-sided)
    assert B.trend_p(starts, -drift, 2000, np.random.default_rng(0))[1] < 0.01
    with pytest.raises(ValueError, match="three windows"):
        B.trend_p(starts[:2], noise[:2], 10, rng)
    with pytest.raises(ValueError, match="permutations"):
        B.trend_p(starts, noise, 0, rng)


def test_named_method_resolves_schedulers_and_agents() -> None:
    from hpcgym.evaluation.methods import MethodUnavailable
    from research.probes._played import named_method

    method, card = named_method("ELOSS")
    assert method.kind == "scheduler" and method.label == "ELOSS" and card is None
    method, card = named_method("hpc2n-fcfs-guarded-cmaes")
    assert card is not None and card.name == "hpc2n-fcfs-guarded-cmaes"
    assert method.kind != "scheduler" and method.label == "hpc2n-fcfs-guarded-cmaes"
    method, card = named_method("hpc2n-fcfs-guarded-dense-ent01-tlog")  # a zoo agent's old name
    assert card is not None and card.name == "hpc2n-fcfs" and method.label == "hpc2n-fcfs"
    with pytest.raises(MethodUnavailable, match="EASY-SJBF"):  # the valid names listed
        named_method("no-such-scheduler")


def test_method_list_keeps_key_value_items_with_their_name() -> None:
    import argparse

    from research.probes import _played

    methods = _played.named_methods(
        "ELOSS,warm=log,SJF+EASY++,warm=500,EASY-SJBF", argparse.ArgumentParser()
    )
    assert [m.spec for m in methods] == ["ELOSS,warm=log", "SJF+EASY++,warm=500", "EASY-SJBF"]
    with pytest.raises(SystemExit):
        _played.named_methods("ELOSS,warm=soon", argparse.ArgumentParser())
