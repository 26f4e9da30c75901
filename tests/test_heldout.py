"""The held-out test of a shipped agent (issue 14): ``hpcgym.evaluation.heldout`` and
``eval/heldout.py``; validation curve and training command on the model card."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hpcgym.evaluation as E
from hpcgym.evaluation.heldout import heldout_markdown, heldout_schedulers, heldout_test
from hpcgym.evaluation.statistics import paired_comparison
from hpcgym.sim import get_scheduler
from hpcgym.workload import load, split_range

pytest.importorskip("sb3_contrib")


@pytest.fixture(scope="module")
def tiny_card(tmp_path_factory) -> Path:
    """A card of a MaskablePPO KernelPolicy trained for 64 steps on 64-job synthetic windows."""
    from conftest import tiny_agent_card

    return tiny_agent_card(tmp_path_factory.mktemp("heldout"))


def _loader():
    from hpcgym_agents import load_agent

    return load_agent


def test_heldout_section(tiny_card):
    card = E.load_model_card(tiny_card)
    sec = heldout_test(card, agent_loader=_loader(), windows=3, length=128, seed=5, jobs=1)
    assert sec["split"] == "test" and sec["seed"] == 5 and len(sec["starts"]) == 3
    assert list(sec["methods"]) == ["EASY", "EASY-SJBF", "EASY++", "ELOSS", "tiny"]
    assert list(sec["paired"]) == ["EASY-SJBF", "EASY++", "ELOSS"]
    assert sec["numerics"]["numpy"] == np.__version__  # the BLAS kernel beside the values
    # three windows are too few for a verdict, whatever the ratio
    assert {p["verdict"] for p in sec["paired"].values()} == {"inconclusive"}
    # the scheduler rows are the engine's own numbers on the same windows
    wl = load(None)
    direct = [
        get_scheduler("EASY-SJBF").simulate(wl.window(s, 128), seed=0).metrics["avg_bsld"]
        for s in sec["starts"]
    ]
    assert sec["methods"]["EASY-SJBF"]["mean_avg_bsld"] == pytest.approx(np.mean(direct))
    assert sec["methods"]["EASY-SJBF"]["per_window"] == pytest.approx(direct)  # starts' order
    # the paired statistics can be recomputed from the card alone
    pc = paired_comparison(
        sec["methods"]["tiny"]["per_window"], sec["methods"]["EASY-SJBF"]["per_window"]
    )
    assert pc.to_dict() == pytest.approx(
        {k: v for k, v in sec["paired"]["EASY-SJBF"].items() if k != "verdict"}
    )
    assert sec["methods"]["EASY-SJBF"]["head_delayed"] == 0
    lo, hi = split_range(len(wl), "test")
    assert all(lo <= s < hi for s in sec["starts"])
    assert "--seed 5" in sec["command"] and "--agents tiny" in sec["command"]
    loads = [wl.window(s, 128).offered_load for s in sec["starts"]]
    assert sec["offered_load"] == pytest.approx(
        dict(zip(("q1", "median", "q3"), np.percentile(loads, [25, 50, 75]), strict=True))
    )
    md = "\n".join(heldout_markdown(sec, "tiny"))
    assert "**tiny** (this agent)" in md and "| EASY-SJBF |" in md
    assert f"offered load {sec['offered_load']['q1']:.2f} / " in md
    core = sec["numerics"]["blas_core"]
    assert (f", BLAS kernel {core})" in md) == (core is not None)
    assert ", BLAS kernel" not in "\n".join(heldout_markdown({**sec, "numerics": {}}, "tiny"))


def test_sjf_agents_get_sjf_schedulers():
    assert heldout_schedulers("SJF") == ["SJF+EASY", "SJF+EASY-SJBF", "SJF+EASY++", "SJF+ELOSS"]
    assert heldout_schedulers("fcfs")[1] == "EASY-SJBF"


def test_eval_heldout_writes_the_card_once(tiny_card, tmp_path, capsys):
    from eval.heldout import main

    card = tmp_path / "tiny.json"
    card.write_text(tiny_card.read_text())
    (tmp_path / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
    args = [str(card), "--seed", "7", "--windows", "2", "--length", "96", "--jobs", "1"]
    assert main([*args, "--no-progress"]) == 0
    data = json.loads(card.read_text())
    assert data["test"]["synthetic"]["seed"] == 7
    assert "## Held-out test: synthetic" in card.with_suffix(".md").read_text()
    capsys.readouterr()
    assert main([*args, "--no-progress"]) == 2  # looked at once: refused
    assert "--retest" in capsys.readouterr().err
    assert main([*args, "--no-progress", "--retest"]) == 0


def test_the_printed_command_reproduces_the_recorded_rows(tiny_card, tmp_path, capsys):
    """The command a test section prints next to its table (and docs/results.md next to
    its row) plays the same windows and gives every method's recorded numbers."""
    import shlex

    from eval.compare import main as compare
    from eval.heldout import main

    card = tmp_path / "tiny.json"
    card.write_text(tiny_card.read_text())
    (tmp_path / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
    assert main([str(card), "--seed", "7", "--windows", "3", "--length", "96", "--jobs", "1",
                 "--no-progress"]) == 0  # fmt: skip
    sec = json.loads(card.read_text())["test"]["synthetic"]
    words = shlex.split(sec["command"])
    assert words[:2] == ["python", "eval/compare.py"]
    capsys.readouterr()
    extra = ["--agents-dir", str(tmp_path), "--json", "--no-plots", "--no-progress"]
    compare([*words[2:], *extra, "--out", str(tmp_path / "out"), "--jobs", "1"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["windows"]["starts"] == sec["starts"]
    rows = {r["method"]: r for r in printed["summary"]}
    assert set(rows) == set(sec["methods"])
    for label, m in sec["methods"].items():
        assert rows[label]["mean_avg_bsld"] == pytest.approx(m["mean_avg_bsld"], rel=1e-12)
        assert rows[label]["median_avg_bsld"] == pytest.approx(m["median_avg_bsld"], rel=1e-12)
    ref = words[words.index("--reference") + 1]
    assert rows["tiny"]["geo_ratio"] == pytest.approx(sec["paired"][ref]["geo_ratio"], rel=1e-12)
    assert rows["tiny"]["ci_high"] == pytest.approx(sec["paired"][ref]["ci_high"], rel=1e-12)


def test_eval_heldout_check_replays_the_recorded_test(tiny_card, tmp_path, capsys):
    """``--check`` replays a card's test with its own seed, writes nothing, exits 0 when
    every value reproduces and 1 (listing where) when one does not."""
    from eval.heldout import main

    card = tmp_path / "tiny.json"
    card.write_text(tiny_card.read_text())
    (tmp_path / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
    base = [str(card), "--jobs", "1", "--no-progress"]
    assert main([*base, "--check"]) == 2  # nothing recorded yet
    assert "no held-out test" in capsys.readouterr().err
    assert main([*base, "--seed", "7", "--windows", "2", "--length", "96"]) == 0
    recorded = card.read_text()
    capsys.readouterr()
    assert main([*base, "--check"]) == 0
    out = capsys.readouterr().out
    assert "reproduced: tiny on synthetic (2 x 96, window seed 7" in out
    assert card.read_text() == recorded  # nothing written
    assert main([*base, "--check", "--seed", "8"]) == 2  # the card's seed, not another
    assert main([*base, "--check", "--rtol", "-1"]) == 2
    assert "--rtol must be 0 or more" in capsys.readouterr().err
    assert main([*base, "--check", "--trace", "SDSC-SP2"]) == 2
    assert "it has: synthetic" in capsys.readouterr().err
    # a card whose recorded numbers are not what its agent plays
    data = json.loads(recorded)
    sec = data["test"]["synthetic"]
    sec["methods"]["tiny"]["per_window"][1] *= 1.001
    sec["paired"]["EASY-SJBF"]["wins"] += 1
    card.write_text(json.dumps(data))
    assert main([*base, "--check"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS: tiny on synthetic" in out and "2 values" in out
    assert "methods.tiny.per_window[1]:" in out and "paired.EASY-SJBF.wins:" in out


def test_eval_heldout_check_fills_late_heads_of_older_sjf_tests(tiny_card, tmp_path, capsys):
    """An SJF agent's test recorded before the engine kept its reserved heads has no late
    heads (``null``); ``--check --fill-late-heads`` writes the replay's into the card, and
    only into a test that otherwise reproduces."""
    from eval.heldout import main

    card = tmp_path / "tiny.json"
    card.write_text(json.dumps({**json.loads(tiny_card.read_text()), "policy": "SJF"}))
    (tmp_path / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
    base = [str(card), "--jobs", "1", "--no-progress"]
    assert main([*base, "--seed", "7", "--windows", "2", "--length", "96"]) == 0
    measured = json.loads(card.read_text())
    methods = measured["test"]["synthetic"]["methods"]
    assert "SJF+ELOSS" in methods and all(m["head_delayed"] is not None for m in methods.values())
    old = json.loads(card.read_text())
    for m in old["test"]["synthetic"]["methods"].values():
        m["head_delayed"] = m["head_delay"] = None
    card.write_text(json.dumps(old))
    capsys.readouterr()
    assert main([*base, "--fill-late-heads"]) == 2  # only with --check
    assert main([*base, "--check"]) == 0 and json.loads(card.read_text()) == old  # writes nothing
    assert main([*base, "--check", "--fill-late-heads"]) == 0
    assert "late heads filled on synthetic: SJF+EASY 0, " in capsys.readouterr().out
    assert json.loads(card.read_text()) == measured
    assert main([*base, "--check", "--fill-late-heads"]) == 0
    assert "nothing to fill" in capsys.readouterr().out
    # a test that does not reproduce gets nothing filled
    old["test"]["synthetic"]["methods"]["tiny"]["mean_avg_bsld"] *= 1.01
    card.write_text(json.dumps(old))
    assert main([*base, "--check", "--fill-late-heads"]) == 1
    assert json.loads(card.read_text()) == old


def test_bench_check_results_replays_a_sample_of_the_cards(tiny_card, tmp_path, capsys):
    from bench import check_results
    from eval.heldout import main as heldout

    d = tmp_path / "pretrained"
    d.mkdir()
    for name in ("a", "b"):  # two tested cards, one untested
        data = json.loads(tiny_card.read_text())
        (d / f"{name}.json").write_text(json.dumps({**data, "name": name}))
        (d / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
        args = ["--seed", "7", "--windows", "2", "--length", "96", "--jobs", "1"]
        assert heldout([str(d / f"{name}.json"), *args, "--no-progress"]) == 0
    (d / "c.json").write_text(tiny_card.read_text())
    tests = [(d / "a.json", "synthetic"), (d / "b.json", "synthetic")]
    assert check_results.recorded_tests(d) == tests
    capsys.readouterr()
    out = tmp_path / "check.json"
    base = ["--agents-dir", str(d), "--jobs", "1", "--no-progress"]
    assert check_results.main([*base, "--all", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "a on synthetic: reproduced" in text and "| b | synthetic |" in text
    res = json.loads(out.read_text())
    assert res["of"] == 2 and [c["differences"] for c in res["checks"]] == [0, 0]
    assert all(c["ratio"] == c["replayed_ratio"] for c in res["checks"])
    # the sample is drawn with the seed: the same seed names the same tests
    assert check_results.main([*base, "--sample", "1", "--seed", "3", "--out", str(out)]) == 0
    first = json.loads(out.read_text())["checks"]
    assert check_results.main([*base, "--sample", "1", "--seed", "3", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["checks"][0]["agent"] == first[0]["agent"]
    # a card whose numbers its agent no longer plays
    data = json.loads((d / "b.json").read_text())
    data["test"]["synthetic"]["methods"]["EASY"]["mean_avg_bsld"] += 1.0
    (d / "b.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert check_results.main([*base, "--all"]) == 1
    text = capsys.readouterr().out
    assert "b on synthetic: 1 value differs" in text and "methods.EASY.mean_avg_bsld:" in text
    assert "a departure is not the kernel's" in text  # recorded and replayed on one kernel
    with pytest.raises(SystemExit):
        check_results.main([*base, "--sample", "3"])
    assert "--sample must be between 1 and 2" in capsys.readouterr().err


def test_section_differences() -> None:
    from hpcgym.evaluation.heldout import section_differences

    rec = {"seed": 1, "evaluated": "x", "command": "a", "m": {"v": [1.0, 2.0], "n": 3}}
    assert section_differences(rec, {**rec, "evaluated": "y", "command": "b", "new": 1}) == []
    numerics = {"numerics": {"blas_core": "SkylakeX"}}
    assert section_differences({**rec, **numerics}, {**rec, "numerics": {}}) == []
    close = {**rec, "m": {"v": [1.0, 2.0 * (1 + 1e-12)], "n": 3}}
    assert section_differences(rec, close) == []
    assert section_differences(rec, close, rtol=1e-14) == ["m.v[1]: 2.0 -> 2.000000000002"]
    assert section_differences(rec, {**rec, "m": {"v": [1.0], "n": 3}}) == [
        "m.v: [1.0, 2.0] -> [1.0]"
    ]
    assert section_differences(rec, {"seed": 1, "m": {"v": [1.0, 2.0]}}) == ["m.n: 3 -> (missing)"]
    assert section_differences({"x": float("nan")}, {"x": float("nan")}) == []
    assert section_differences({"x": 1.0}, {"x": "1.0"}) == ["x: 1.0 -> '1.0'"]
    # late heads a replay measures where an older (non-FCFS) test recorded none: an
    # addition; the other way round, or any other key, is a difference
    old = {"methods": {"a": {"head_delayed": None, "head_delay": None, "departures": None}}}
    new = {"methods": {"a": {"head_delayed": 4, "head_delay": 12.5, "departures": None}}}
    assert section_differences(old, new) == []
    assert section_differences(new, old) == [
        "methods.a.head_delayed: 4 -> None",
        "methods.a.head_delay: 12.5 -> None",
    ]
    assert section_differences(
        old, {"methods": {"a": {**new["methods"]["a"], "departures": 2}}}
    ) == ["methods.a.departures: None -> 2"]


def test_eval_heldout_keeps_sections_written_while_it_ran(tiny_card, tmp_path, monkeypatch):
    """Tests of one agent on several traces at once: a section another process wrote
    while this test ran is kept (the card is re-read under a lock before it is written)."""
    import hpcgym.evaluation.heldout as H
    from eval.heldout import main

    card = tmp_path / "tiny.json"
    card.write_text(tiny_card.read_text())
    (tmp_path / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
    real = H.heldout_test

    def concurrent(*args, **kwargs):  # another process finishes its test meanwhile
        section = real(*args, **kwargs)
        data = json.loads(card.read_text())
        data["test"] = {"OTHER-TRACE": {**section, "trace": "OTHER-TRACE", "transfer": True}}
        card.write_text(json.dumps(data))
        return section

    monkeypatch.setattr(H, "heldout_test", concurrent)
    args = [str(card), "--seed", "7", "--windows", "2", "--length", "96", "--jobs", "1"]
    assert main([*args, "--no-progress"]) == 0
    data = json.loads(card.read_text())
    assert set(data["test"]) == {"OTHER-TRACE", "synthetic"}
    assert "## Held-out test: synthetic" in card.with_suffix(".md").read_text()
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob("*.lock"))


def test_card_has_the_validation_curve_and_command(tmp_path):
    from hpcgym.evaluation.cards import card_markdown, validation_curve

    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {"timesteps": 1000 * i, "updates": i, "avg_bsld": 50.0 - i % 7,
         "paired": {"geo_ratio": 1.0 - i / 100, "ci_low": 0.9, "ci_high": 1.1}}
        for i in range(40)
    ]  # fmt: skip
    (run / "evaluations.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    curve = validation_curve(run, points=8)
    assert curve[0]["timesteps"] == 0 and curve[-1]["timesteps"] == 39000
    assert any(r["avg_bsld"] == 44.0 for r in curve)  # the best row is kept
    assert len(curve) <= 9 and curve[1]["geo_ratio"] < 1.0
    data = {"name": "x", "trace": "t", "policy": "FCFS", "mode": "guarded",
            "training_command": "python train/ppo.py --trace t", "wall_time_min": 12.5,
            "validation_curve": curve}  # fmt: skip
    md = card_markdown(data)
    assert "`python train/ppo.py --trace t`" in md and "12.5 min" in md
    assert "| 39,000 | 39 |" in md
    assert "mix_traces" not in md
    # a trace mix and load weighting are part of what the agent was trained on
    md = card_markdown({**data, "mix_traces": ["CTC-SP2", "KTH-SP2"], "load_weighting": 2.0})
    assert "| mix_traces | `CTC-SP2,KTH-SP2` |" in md and "| load_weighting | `2.0` |" in md


def test_results_section_of_the_shipped_agents(tiny_card, tmp_path):
    from eval.results import main
    from hpcgym.evaluation.paper.markdown import agents_markdown

    card = E.load_model_card(tiny_card)
    sec = heldout_test(card, agent_loader=_loader(), windows=2, length=96, seed=3, jobs=1)
    data = {**card.to_dict(), "test": {"synthetic": sec}}
    md = "\n".join(agents_markdown([data, {"name": "untested", "mode": "free"}]))
    row = next(line for line in md.splitlines() if line.startswith("| tiny |"))
    assert "| synthetic | 2 |" in row and row.count("**inconclusive**") == 3
    assert f"`{sec['command']}`" in md and "Not yet tested on held-out windows: untested" in md
    # a free agent gets its own table after the guarded one, never a row in it
    free = {**data, "name": "tiny-free", "mode": "free", "policy": "SJF"}
    lines = "\n".join(agents_markdown([free, data])).splitlines()
    g, f = (
        lines.index(next(x for x in lines if x.startswith("### Guarded"))),
        lines.index(next(x for x in lines if x.startswith("### Free"))),
    )
    assert g < f
    assert [x.split(" | ")[0] for x in lines[g:f] if x.startswith("| tiny")] == ["| tiny"]
    assert [x.split(" | ")[:2] for x in lines[f:] if x.startswith("| tiny")] == [
        ["| tiny-free", "SJF"]
    ]
    sjf = {**sec, "methods": {k: {**v, "head_delayed": None} for k, v in sec["methods"].items()}}
    row = agents_markdown([{**data, "test": {"synthetic": sjf}}])
    assert "| — / — | — → " in next(x for x in row if x.startswith("| tiny |"))
    # the load column: the validation windows' median load (selection on the same trace)
    # and the test windows'
    test_load = f"{sec['offered_load']['median']:.2f}"
    sel = {"trace": "synthetic", "offered_load": {"q1": 1.0, "median": 1.234, "q3": 1.5}}
    row = next(x for x in agents_markdown([{**data, "selection": sel}]) if x.startswith("| tiny |"))
    assert row.endswith(f"| 1.23 → {test_load} |")
    other = next(
        x
        for x in agents_markdown([{**data, "selection": {**sel, "trace": "SDSC-SP2"}}])
        if x.startswith("| tiny |")
    )
    assert other.endswith(f"| — → {test_load} |")  # chosen on another trace: not shown
    d = tmp_path / "agents"
    d.mkdir()
    (d / "tiny.zip").write_bytes(tiny_card.with_suffix(".zip").read_bytes())
    (d / "tiny.json").write_text(json.dumps({**data, "model": "tiny.zip"}))
    out = tmp_path / "results.md"
    assert main(["--agents", str(d), "--out", str(out)]) == 0
    assert "## Shipped agents on held-out test windows" in out.read_text()
    pre = tmp_path / "preamble.md"
    pre.write_text("Targets: **met** here.\n")
    assert main(["--agents", str(d), "--preamble-file", str(pre), "--out", str(out)]) == 0
    assert "\nTargets: **met** here.\n" in out.read_text()
    assert main(["--agents", str(d), "--preamble-file", str(tmp_path / "no.md")]) == 2


def test_tied_windows_are_counted_and_explained() -> None:
    from hpcgym.evaluation.heldout import tied_windows

    def section(per: dict[str, list[float] | None]) -> dict:
        methods = {
            k: {"mean_avg_bsld": 1.0, "median_avg_bsld": 1.0}
            | ({"per_window": v} if v is not None else {})
            for k, v in per.items()
        }
        paired = {"EASY-SJBF": {"geo_ratio": 1.0, "ci_low": 0.9, "ci_high": 1.1}}
        paired["EASY-SJBF"] |= {"wins": 0, "windows": 3, "verdict": "on par"}
        return {"trace": "HPC2N", "windows": 3, "length": 8, "seed": 1, "command": "c"} | {
            "methods": methods,
            "paired": paired,
        }

    sec = section(
        {"EASY-SJBF": [4.04, 10.0, 2.0], "a": [4.04, 9.0, 2.0], "EASY": [4.04, 10.0, 3.0]}
    )
    assert tied_windows(sec) == 1
    assert "In 1 of the 3 windows every method gives the same AVEbsld" in "\n".join(
        heldout_markdown(sec, "a")
    )
    assert tied_windows(section({"EASY-SJBF": [1.0, 2.0], "a": [1.5, 2.5]})) == 0
    assert tied_windows(section({"EASY-SJBF": [1.0], "a": None})) is None  # older cards
    assert "every method gives" not in "\n".join(
        heldout_markdown(section({"EASY-SJBF": [1.0], "a": None}), "a")
    )


def test_agents_with_warm_predictors_get_the_warm_heuristics_too():
    from hpcgym.evaluation.heldout import card_warm, heldout_references

    assert heldout_schedulers("SJF", "log")[-2:] == ["SJF+EASY++,warm=log", "SJF+ELOSS,warm=log"]
    assert heldout_references("FCFS", "log") == [
        "EASY-SJBF",
        "EASY++",
        "ELOSS",
        "EASY++,warm=log",
        "ELOSS,warm=log",
    ]
    assert heldout_references("FCFS") == ["EASY-SJBF", "EASY++", "ELOSS"]
    assert card_warm({"estimator": "eloss:warm=log"}) == "log"
    assert (
        card_warm({"estimator": "eloss", "feature_predictor": "log-ridge:lam=10,warm=500"}) == "500"
    )
    assert card_warm({"estimator": "eloss", "feature_predictor": "log-ridge:lam=10"}) is None
    assert card_warm({"estimator": "eloss:warm=0"}) is None


def test_results_rows_of_a_warm_agent_show_the_warm_heuristics() -> None:
    from hpcgym.evaluation.paper.markdown import agents_markdown

    def p(r: float) -> dict:
        return {
            "geo_ratio": r,
            "ci_low": r - 0.1,
            "ci_high": r + 0.1,
            "wins": 9,
            "windows": 30,
            "verdict": "on par",
        }

    paired = {
        "SJF+EASY-SJBF": p(0.9),
        "SJF+EASY++": p(0.8),
        "SJF+ELOSS": p(0.7),
        "SJF+EASY++,warm=log": p(0.95),
        "SJF+ELOSS,warm=log": p(0.99),
    }
    methods = {
        "w": {"mean_avg_bsld": 1.0, "median_avg_bsld": 1.0, "head_delayed": 3},
        "SJF+ELOSS": {"mean_avg_bsld": 1.0, "median_avg_bsld": 1.0, "head_delayed": 5},
        "SJF+ELOSS,warm=log": {"mean_avg_bsld": 1.0, "median_avg_bsld": 1.0, "head_delayed": 7},
    }
    sec = {"windows": 30, "command": "c", "paired": paired, "methods": methods}
    card = {
        "name": "w",
        "mode": "guarded",
        "policy": "SJF",
        "estimator": "eloss:warm=log",
        "test": {"HPC2N": sec},
    }
    row = next(x for x in agents_markdown([card]) if x.startswith("| w |"))
    # intervals that contain 1 but reach beyond the ±5% margin: inconclusive (the word is
    # read from the numbers by today's rule, whatever the card recorded)
    assert "0.900 [0.800, 1.000]" in row
    assert "0.950 [0.850, 1.050] 9/30 **inconclusive** (warm)" in row
    assert "0.990 [0.890, 1.090] 9/30 **inconclusive** (warm)" in row and "0.700" not in row
    assert "| 3 / 7 |" in row
    cold = {**sec, "paired": {k: v for k, v in paired.items() if "warm" not in k}}
    row = next(
        x for x in agents_markdown([{**card, "test": {"HPC2N": cold}}]) if x.startswith("| w |")
    )
    assert "0.700 [0.600, 0.800]" in row and "(warm)" not in row and "| 3 / 5 |" in row


def test_completed_paired_recomputes_what_older_sections_lack():
    """A shipped card's test section holds the per-window values: the ratio of means and
    the equivalence interval are recomputed from them, and the recorded ratio and interval
    come out the same (the same seeded resamples)."""
    from hpcgym.evaluation.heldout import completed_paired

    repo = Path(__file__).resolve().parents[1]
    card = json.loads((repo / "agents/pretrained/hpc2n-fcfs.json").read_text())
    sec = card["test"]["HPC2N"]
    assert "eq_low" not in sec["paired"]["EASY-SJBF"]  # recorded before they existed
    done = completed_paired(sec, card["name"])  # the card's name is not the row's label
    cell = done["EASY-SJBF"]
    mine = sec["methods"][sec["agent"]["label"]]["per_window"]
    ref = sec["methods"]["EASY-SJBF"]["per_window"]
    pc = paired_comparison(mine, ref)
    assert (pc.geo_ratio, pc.ci_low, pc.ci_high) == pytest.approx(
        (cell["geo_ratio"], cell["ci_low"], cell["ci_high"]), rel=1e-12
    )
    assert cell["mean_ratio"] == pytest.approx(np.mean(mine) / np.mean(ref), rel=1e-12)
    assert cell["eq_low"] == pc.eq_low and cell["margin"] == 1.05
    assert E.verdict(cell) == pc.verdict


def test_a_renamed_card_replays_under_its_new_name() -> None:
    """A zoo card renamed after its test (``trained_as`` keeps the old name) compares its
    recorded values with a replay under the new name; the values themselves still count."""
    from hpcgym.evaluation.heldout import recorded_under_name, section_differences

    rec = {
        "seed": 1,
        "methods": {"old-run-name": {"kind": "agent", "v": 1.0}, "EASY": {"v": 2.0}},
        "agent": {"label": "old-run-name"},
    }
    replay = {
        "seed": 1,
        "methods": {"zoo-name": {"kind": "agent", "v": 1.0}, "EASY": {"v": 2.0}},
        "agent": {"label": "zoo-name"},
    }
    assert section_differences(rec, replay) != []
    assert section_differences(recorded_under_name(rec, "old-run-name", "zoo-name"), replay) == []
    assert recorded_under_name(rec, "", "zoo-name") is rec
    changed = {**replay, "methods": {**replay["methods"], "zoo-name": {"kind": "agent", "v": 1.5}}}
    assert section_differences(recorded_under_name(rec, "old-run-name", "zoo-name"), changed) == [
        "methods.zoo-name.v: 1.0 -> 1.5"
    ]
