"""Tests of the paired statistics (``hpcgym.evaluation.statistics``) and of their place in
the evaluation outputs (summary.csv, table.md, paper tables)."""

from __future__ import annotations

import csv
import itertools
import json
import math

import numpy as np
import pytest

from hpcgym import evaluation as E
from hpcgym.evaluation.statistics import (
    EQUIVALENCE_MARGIN,
    MIN_RESAMPLES,
    bootstrap_interval,
    bootstrap_p_below_one,
    choice_holdout,
    geo_ratio,
    holdout_text,
    holm,
    p_below_one,
    paired_comparison,
    ratio_of_means,
    replicated_verdict,
    wins,
)
from hpcgym.workload import load
from hpcgym_agents import load_agent


# ------------------------------------------------------------------- several agents, one trace
def test_p_below_one_agrees_with_the_interval_and_the_bootstrap():
    # at the boundary, exactly the single test's one-sided level
    assert p_below_one({"geo_ratio": 0.8, "ci_high": 1.0}) == pytest.approx(0.025)
    assert p_below_one({"geo_ratio": 0.8, "ci_high": 0.99}) < 0.025
    assert p_below_one({"geo_ratio": 0.8, "ci_high": 1.01}) > 0.025
    assert p_below_one({"geo_ratio": 1.2, "ci_high": 1.3}) > 0.5
    assert p_below_one({"geo_ratio": 0.9, "ci_high": 0.9}) == 0.0
    # against the bootstrap's own one-sided p (the share of resampled ratios >= 1) on
    # windows like the tests' (30 windows, log-ratio sd 0.2)
    rng = np.random.default_rng(5)
    for shift in (-0.12, -0.08, -0.05):
        ref = rng.uniform(20, 80, size=30)
        x = ref * np.exp(shift + 0.2 * rng.standard_normal(30))
        pc = paired_comparison(x, ref)
        logs = np.log(x / ref)
        idx = np.random.default_rng(0).integers(0, 30, size=(20_000, 30))
        exact = float((logs[idx].mean(axis=1) >= 0).mean())
        approx = p_below_one(pc.to_dict())
        assert approx == pytest.approx(exact, abs=max(0.004, 0.35 * exact))
        assert (approx < 0.025) == (pc.ci_high < 1.0)
    with pytest.raises(ValueError, match="geo_ratio <= ci_high"):
        p_below_one({"geo_ratio": 0.9, "ci_high": 0.8})


def test_bootstrap_p_below_one_is_the_intervals_own_tail():
    """The share of the interval's own resamples at or above 1: it sides with the verdict
    on every case, and equals the count computed by hand from the same resamples."""
    rng = np.random.default_rng(11)
    sides = set()
    for shift in np.linspace(-0.15, 0.05, 21):
        ref = rng.uniform(20, 80, size=30)
        x = ref * np.exp(shift + 0.2 * rng.standard_normal(30))
        pc = paired_comparison(x, ref)
        p = bootstrap_p_below_one(x, ref)
        assert (p <= 0.025) == (pc.ci_high < 1.0), (shift, p, pc.ci_high)
        sides.add(pc.ci_high < 1.0)
        idx = np.random.default_rng(0).integers(0, 30, size=(10_000, 30))
        by_hand = float((np.log(x / ref)[idx].mean(axis=1) >= 0).mean())
        assert p == by_hand
    assert sides == {True, False}  # both verdicts were met
    assert bootstrap_p_below_one([5.0, 6.0], [5.0, 6.0]) == 1.0  # ties: ratio 1, not below
    assert bootstrap_p_below_one([1.0, 2.0], [5.0, 6.0]) == 0.0
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_p_below_one([1.0], [2.0], resamples=10)


def test_holm_step_down():
    # sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop there
    assert holm([0.01, 0.04, 0.03, 0.005], alpha=0.05) == [True, False, False, True]
    assert holm([0.02], alpha=0.025) == [True]
    assert holm([0.02, 0.9], alpha=0.025) == [False, False]  # 0.02 > 0.025 / 2
    assert holm([]) == []
    with pytest.raises(ValueError, match="p-values"):
        holm([1.5])


# --------------------------------------------------------------------------- known values
def test_geo_ratio_known_values():
    assert geo_ratio([2.0, 8.0], [1.0, 2.0]) == pytest.approx(math.sqrt(2.0 * 4.0))
    assert geo_ratio([5.0, 5.0, 5.0], [5.0, 5.0, 5.0]) == 1.0
    # the geometric mean of the ratios, not the ratio of the means
    assert geo_ratio([1.0, 100.0], [10.0, 10.0]) == pytest.approx(1.0)
    assert np.mean([1.0, 100.0]) / 10.0 == pytest.approx(5.05)
    assert wins([1.0, 3.0, 2.0, 4.0], [2.0, 2.0, 2.0, 5.0]) == 2  # ties are no wins


def test_identical_values_give_a_point_interval():
    pc = paired_comparison([3.0, 4.0, 7.0], [3.0, 4.0, 7.0], resamples=MIN_RESAMPLES)
    assert (pc.geo_ratio, pc.ci_low, pc.ci_high, pc.wins, pc.windows) == (1.0, 1.0, 1.0, 0, 3)
    assert pc.verdict == "inconclusive"  # 3 windows: too few for any claim, "on par" too
    assert pc.mean_ratio == 1.0 and (pc.eq_low, pc.eq_high) == (1.0, 1.0)
    assert paired_comparison([3.0, 4.0, 7.0] * 10, [3.0, 4.0, 7.0] * 10).verdict == "on par"


def test_constant_ratio_gives_that_ratio_and_a_point_interval():
    ref = np.array([10.0, 50.0, 200.0, 3.0])
    pc = paired_comparison(0.8 * ref, ref)
    assert pc.geo_ratio == pytest.approx(0.8)
    assert pc.ci_low == pytest.approx(0.8) and pc.ci_high == pytest.approx(0.8)
    # 4 windows are too few for a claim, however clear: the verdict is "inconclusive"
    assert pc.wins == 4 and pc.verdict == "inconclusive"
    assert paired_comparison(0.8 * np.tile(ref, 8), np.tile(ref, 8)).verdict == "better"


def test_bootstrap_matches_a_direct_computation():
    rng = np.random.default_rng(3)
    ref = rng.uniform(10, 100, 12)
    x = ref * rng.uniform(0.7, 1.2, 12)
    lo, hi = bootstrap_interval(x, ref, resamples=5000, seed=11)
    logs = np.log(x / ref)
    gen = np.random.default_rng(11)
    means = logs[gen.integers(0, 12, size=(5000, 12))].mean(axis=1)
    assert (lo, hi) == (
        pytest.approx(math.exp(np.percentile(means, 2.5)), rel=1e-12),
        pytest.approx(math.exp(np.percentile(means, 97.5)), rel=1e-12),
    )


# --------------------------------------------------------------------------- properties
def test_seeded_determinism():
    rng = np.random.default_rng(0)
    ref = rng.uniform(5, 50, 20)
    x = ref * rng.lognormal(0.0, 0.2, 20)
    a = paired_comparison(x, ref, seed=7)
    b = paired_comparison(list(x), list(ref), seed=7)
    assert a == b
    c = paired_comparison(x, ref, seed=8)
    assert (c.ci_low, c.ci_high) != (a.ci_low, a.ci_high) and c.geo_ratio == a.geo_ratio


@pytest.mark.parametrize("seed", range(5))
def test_interval_contains_the_point_estimate(seed):
    rng = np.random.default_rng(100 + seed)
    ref = rng.uniform(1, 300, 30)
    x = ref * rng.lognormal(0.05, 0.3, 30)
    pc = paired_comparison(x, ref, seed=seed)
    assert pc.ci_low <= pc.geo_ratio <= pc.ci_high
    assert pc.ci_low < pc.ci_high


def test_interval_entirely_below_one():
    rng = np.random.default_rng(1)
    ref = rng.uniform(20, 200, 30)
    x = ref * rng.uniform(0.6, 0.9, 30)  # every window clearly lower
    pc = paired_comparison(x, ref)
    assert pc.ci_high < 1.0 and pc.verdict == "better" and pc.wins == 30


def test_interval_straddles_one():
    rng = np.random.default_rng(2)
    ref = rng.uniform(20, 200, 30)
    x = ref * rng.lognormal(0.0, 0.3, 30)  # noise around the reference
    pc = paired_comparison(x, ref)
    # wide noise: no claim either way, and the equivalence test fails too
    assert pc.ci_low < 1.0 < pc.ci_high and pc.verdict == "inconclusive"
    assert pc.eq_low < 1 / EQUIVALENCE_MARGIN or pc.eq_high > EQUIVALENCE_MARGIN
    assert 0 < pc.wins < 30


def test_errors_users_can_act_on():
    with pytest.raises(ValueError, match="same length"):
        geo_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite positive"):
        geo_ratio([0.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="at least one window"):
        geo_ratio([], [])
    with pytest.raises(ValueError, match="at least 4000"):
        bootstrap_interval([1.0, 2.0], [1.0, 2.0], resamples=100)


# --------------------------------------------------------------------------- in the outputs
def test_summary_and_table_carry_the_statistics(tmp_path):
    wl = load(None)
    ws = E.select_windows(len(wl), 128, 4, "test", seed=2)
    methods = [E.scheduler_method("EASY"), E.agent_method("sjbf"), E.agent_method("easy")]
    res = E.evaluate(
        wl, methods, ws, jobs=1, progress=False, agent_loader=load_agent,
        ratio_reference="EASY-SJBF",
    )  # fmt: skip
    assert res.labels == ["EASY", "SJBFAgent", "EasyAgent"]  # the reference is not a method
    ref = [E.simulate_window(wl, "EASY-SJBF", s, 128)["avg_bsld"] for s in ws.starts]
    assert res.ratio_values == ref
    paths = E.write_outputs(res, tmp_path, plots=False)
    with open(paths["summary.csv"], newline="") as fh:
        rows = {r["method"]: r for r in csv.DictReader(fh)}
    sjbf = rows["SJBFAgent"]  # the env-played SJBF agent is EASY-SJBF exactly
    assert float(sjbf["geo_ratio"]) == 1.0 and float(sjbf["ci_low"]) == 1.0
    assert sjbf["wins"] == "0"
    easy = rows["EASY"]
    pc = paired_comparison(res.per_window()["EASY"], ref)
    assert float(easy["geo_ratio"]) == pc.geo_ratio and int(easy["wins"]) == pc.wins
    assert float(easy["ci_low"]) == pc.ci_low and float(easy["ci_high"]) == pc.ci_high
    md = paths["table.md"].read_text()
    assert "| ratio vs EASY-SJBF | 95% interval | ratio of means vs EASY-SJBF [95%] | wins |" in md
    assert "| SJBFAgent | agent |" in md
    assert "| 1.000 | [1.000, 1.000] | 1.000 [1.000, 1.000] | 0/4 | inconclusive |" in md
    assert float(easy["mean_ratio"]) == pc.mean_ratio and float(easy["eq_low"]) == pc.eq_low
    assert easy["verdict"] == "inconclusive"  # 4 windows: no claim
    # the objectives beyond bounded slowdown, and the waits by job size
    assert float(easy["mean_awrt"]) == np.mean(res.per_window("awrt")["EASY"])
    assert "util (%)" in md and "AWRT (h)" in md and "## Waits by job size" in md
    doc = json.loads(paths["results.json"].read_text())
    assert doc["ratio_reference"] == "EASY-SJBF"
    # a reference that is among the methods is not run twice
    res2 = E.evaluate(
        wl, [E.scheduler_method("EASY-SJBF"), E.scheduler_method("EASY")], ws, jobs=1,
        progress=False, ratio_reference="EASY-SJBF",
    )  # fmt: skip
    assert res2.ratio_values == ref and res2.summary()[0]["geo_ratio"] == 1.0
    with pytest.raises(E.MethodUnavailable, match="NOPE"):
        E.evaluate(wl, methods[:1], ws, jobs=1, progress=False, ratio_reference="NOPE")


# ------------------------------------------------------------------- the verdict words
def test_verdict_is_the_one_source_of_words():
    from hpcgym.evaluation.statistics import PairedComparison, verdict

    assert verdict(None) is None and verdict({"geo_ratio": None}) is None
    cell = {"geo_ratio": 0.8, "ci_low": 0.7, "ci_high": 0.95, "wins": 25, "windows": 30}
    assert verdict(cell) == "better" == PairedComparison.from_dict(cell).verdict
    # an interval that contains 1 is on par only where the equivalence test says so
    assert verdict({**cell, "ci_high": 1.02}) == "inconclusive"  # 0.7 is outside 1/1.05
    tight = {**cell, "geo_ratio": 0.99, "ci_low": 0.96, "ci_high": 1.02}
    assert verdict(tight) == "on par"  # no 90% interval recorded: the 95% one stands in
    assert verdict({**tight, "ci_low": 0.94, "eq_low": 0.955, "eq_high": 1.01}) == "on par"
    assert verdict({**tight, "eq_low": 0.94, "eq_high": 1.01}) == "inconclusive"
    assert verdict({**tight, "margin": 1.01}) == "inconclusive"  # a stated, tighter margin
    assert verdict({**cell, "geo_ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3}) == "worse"
    assert verdict({**cell, "windows": 1}) == "inconclusive"  # a point is not an interval
    assert verdict({**cell, "windows": 29}) == "inconclusive"  # fewer than 30: no claim
    assert verdict({**tight, "windows": 29}) == "inconclusive"
    assert verdict({**cell, "geo_ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3, "windows": 29}) == (
        "inconclusive"
    )


def _claims(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if "better" in ln.lower() or "beats" in ln.lower()]


def test_generated_markdown_says_better_only_below_one(tmp_path):
    """table.md, results.md and model cards: 'better' / 'beats' appear only in rows whose
    whole interval lies below 1 (issue 13: the words of a claim)."""
    from hpcgym.paper.markdown import results_markdown
    from hpcgym.zoo.card_text import card_markdown

    wl = load(None)
    ws = E.select_windows(len(wl), 256, 30, "test", seed=2)
    methods = [E.scheduler_method(s) for s in ("EASY", "SAF", "EASY-SJBF", "SJF+EASY")]
    res = E.evaluate(wl, methods, ws, jobs=1, progress=False, ratio_reference="EASY-SJBF")
    paths = E.write_outputs(res, tmp_path, plots=False)
    summ = {s["method"]: s for s in res.summary()}
    assert {s["verdict"] for s in summ.values()} >= {"better"}
    longer = [m for m, s in summ.items() if s["verdict"] == "better" and s["tail"] == "worse"]
    assert longer  # SJF-like orders here buy their mean with the tail
    table = paths["table.md"].read_text()
    for m in longer:  # the table withdraws the word
        assert any(ln.startswith(f"| {m} |") and "inconclusive (longer tail)" in ln
                   for ln in table.splitlines())  # fmt: skip
    for text in (
        paths["table.md"].read_text(),
        results_markdown(compare_json=[paths["results.json"]]),
    ):
        for line in _claims(text):
            method = line.split("|")[1].strip()
            assert summ[method]["ci_high"] < 1.0, line
    card = {"name": "x", "trace": "synthetic", "policy": "FCFS", "mode": "guarded"}
    on_par = {"reference": "EASY-SJBF", "geo_ratio": 0.96, "ci_low": 0.91, "ci_high": 1.02,
              "wins": 12, "windows": 30}  # fmt: skip
    md = card_markdown({**card, "eval": {"avg_bsld": 50.0, "paired": on_par}})
    assert "**inconclusive**" in md and not _claims(md)  # 0.91: outside the margin
    tight = {**on_par, "eq_low": 0.97, "eq_high": 1.01}
    md = card_markdown({**card, "eval": {"avg_bsld": 50.0, "paired": tight}})
    assert "**on par**" in md and not _claims(md)
    md = card_markdown({**card, "eval": {"avg_bsld": 50.0, "paired": {**on_par, "ci_high": 0.99}}})
    assert "**better**" in md


# ------------------------------------------------------------------- choice_holdout
def test_choice_holdout_of_a_clear_winner():
    ref = np.linspace(10.0, 80.0, 30)
    rng = np.random.default_rng(3)
    values = {f"c{i}": ref * np.exp(rng.normal(0.0, 0.1, 30)) for i in range(5)}
    values["winner"] = ref * 0.5  # half the reference on every window
    h = choice_holdout(values, ref, splits=500, seed=1)
    assert h["chosen"] == "winner" and h["agreement"] == 1.0 and h["splits"] == 500
    assert h["geo_ratio"] == pytest.approx(0.5)
    assert h["low"] == pytest.approx(0.5) and h["high"] == pytest.approx(0.5)
    assert choice_holdout(values, ref, splits=500, seed=1) == h  # seeded
    ratios = sorted(geo_ratio(v, ref) for v in values.values())
    assert h["median"] == pytest.approx((ratios[2] * ratios[3]) ** 0.5)  # 6: between 3rd, 4th
    assert f"the median candidate scores {h['median']:.3f}." in holdout_text(h, "EASY-SJBF")
    assert holdout_text(h, "EASY-SJBF").startswith("Chosen on a random half")
    assert "500 splits" in holdout_text(h, "EASY-SJBF") and holdout_text(None, "X") == ""


def test_choice_holdout_removes_the_winners_curse():
    # 20 candidates of the same true quality (ratio 1): the lowest ratio is luck
    rng = np.random.default_rng(11)
    lowest, held = [], []
    for _ in range(20):
        ref = rng.uniform(10.0, 100.0, 30)
        values = {f"c{i}": ref * np.exp(rng.normal(0.0, 0.2, 30)) for i in range(20)}
        lowest.append(min(math.log(geo_ratio(v, ref)) for v in values.values()))
        held.append(math.log(choice_holdout(values, ref, splits=300, seed=rng)["geo_ratio"]))
    assert np.mean(lowest) < -0.05  # the chosen ratio is biased low ...
    assert abs(np.mean(held)) < 0.02  # ... the held-out one is not


def test_choice_holdout_averages_over_the_halves():
    # 4 windows: 6 halves; the estimate is their (log) average, each half as likely
    ref = np.array([10.0, 20.0, 30.0, 40.0])
    values = {"a": ref * np.array([0.5, 1.5, 1.0, 0.9]), "b": ref * np.array([1.2, 0.7, 0.8, 1.1])}
    logs = {k: np.log(v / ref) for k, v in values.items()}
    expected = []
    for first in itertools.combinations(range(4), 2):
        second = [i for i in range(4) if i not in first]
        pick = min(logs, key=lambda k: logs[k][list(first)].mean())
        expected.append(logs[pick][second].mean())
    h = choice_holdout(values, ref, splits=20_000, seed=0)
    assert math.log(h["geo_ratio"]) == pytest.approx(np.mean(expected), abs=0.01)
    assert math.exp(min(expected)) == pytest.approx(h["low"])
    assert math.exp(max(expected)) == pytest.approx(h["high"])


def test_choice_holdout_errors():
    ref = [10.0, 20.0, 30.0, 40.0]
    with pytest.raises(ValueError, match="at least one candidate"):
        choice_holdout({}, ref)
    with pytest.raises(ValueError, match="at least 4 windows"):
        choice_holdout({"a": ref[:3]}, ref[:3])
    with pytest.raises(ValueError, match="at least 100 splits"):
        choice_holdout({"a": ref}, ref, splits=10)
    with pytest.raises(ValueError, match="same length"):
        choice_holdout({"a": ref[:3]}, ref)


# ------------------------------------------- ratio of means, equivalence, replication
def test_ratio_of_means_and_its_interval():
    # the windows taken together: (1 + 100) / (10 + 10), not the geometric mean (1.0)
    assert ratio_of_means([1.0, 100.0], [10.0, 10.0]) == pytest.approx(5.05)
    rng = np.random.default_rng(4)
    ref = rng.uniform(10, 100, 12)
    x = ref * rng.uniform(0.7, 1.2, 12)
    pc = paired_comparison(x, ref, resamples=5000, seed=11)
    assert pc.mean_ratio == pytest.approx(x.mean() / ref.mean(), rel=1e-15)
    # the same resamples as the geometric-mean interval: the windows drawn by the seed
    idx = np.random.default_rng(11).integers(0, 12, size=(5000, 12))
    lo, hi = np.percentile(x[idx].sum(axis=1) / ref[idx].sum(axis=1), [2.5, 97.5])
    assert (pc.mean_low, pc.mean_high) == (pytest.approx(lo), pytest.approx(hi))
    assert pc.mean_low < pc.mean_ratio < pc.mean_high
    # the 90% equivalence interval lies inside the 95% interval
    assert pc.ci_low <= pc.eq_low < pc.geo_ratio < pc.eq_high <= pc.ci_high
    lo, hi = np.exp(np.percentile(np.log(x / ref)[idx].mean(axis=1), [5.0, 95.0]))
    assert (pc.eq_low, pc.eq_high) == (pytest.approx(lo), pytest.approx(hi))


def test_tost_on_par_only_inside_the_margin():
    rng = np.random.default_rng(5)
    ref = rng.uniform(20, 200, 40)
    close = ref * rng.lognormal(0.0, 0.03, 40)  # within a few percent of the reference
    pc = paired_comparison(close, ref)
    assert pc.ci_low < 1.0 < pc.ci_high  # no claim of a difference ...
    assert 1 / EQUIVALENCE_MARGIN <= pc.eq_low and pc.eq_high <= EQUIVALENCE_MARGIN
    assert pc.verdict == "on par"  # ... and the equivalence test supports "on par"
    assert pc.margin == EQUIVALENCE_MARGIN == 1.05
    # the same data under a margin of 0.5%: the equivalence is not shown
    tight = paired_comparison(close, ref, margin=1.005)
    assert tight.verdict == "inconclusive" and tight.margin == 1.005
    # noisy data whose interval contains 1 but also ratios beyond 5%: inconclusive
    noisy = ref * rng.lognormal(0.0, 0.25, 40)
    assert paired_comparison(noisy, ref).verdict == "inconclusive"
    # a shift of 3% with little noise: the interval lies below 1 -> better, not on par
    assert paired_comparison(0.97 * ref * rng.lognormal(0, 0.005, 40), ref).verdict == "better"
    # the equivalence interval is recorded, and read back from a dict
    cell = pc.to_dict()
    assert {"eq_low", "eq_high", "margin", "mean_ratio", "mean_low", "mean_high"} <= set(cell)
    assert verdict_of(cell) == "on par" and verdict_of({**cell, "margin": 1.005}) == "inconclusive"
    with pytest.raises(ValueError, match="above 1"):
        paired_comparison(close, ref, margin=0.95)


def verdict_of(cell):
    from hpcgym.evaluation.statistics import verdict

    return verdict(cell)


def test_replicated_verdict():
    cell = {"geo_ratio": 0.8, "ci_low": 0.7, "ci_high": 0.95, "wins": 25, "windows": 30}
    worse = {**cell, "geo_ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3}
    assert replicated_verdict(cell, cell) == "better"
    assert replicated_verdict(cell, "better") == "better"
    assert replicated_verdict(cell, {**cell, "ci_high": 1.02}) == "inconclusive"  # not held
    assert replicated_verdict(cell, worse) == "inconclusive"
    assert replicated_verdict(worse, worse) == "worse"
    assert replicated_verdict("on par", "on par") == "on par"
    assert replicated_verdict("better", "inconclusive (longer tail)") == "inconclusive"
    assert replicated_verdict(cell, None) is None and replicated_verdict(None, "better") is None
    pc = paired_comparison([0.8 * v for v in range(1, 31)], list(range(1, 31)))
    assert replicated_verdict(pc, cell) == "better"
    with pytest.raises(ValueError, match="valid choices"):
        replicated_verdict("beter", "better")
