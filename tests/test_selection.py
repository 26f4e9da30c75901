"""Checkpoint selection on validation windows (``hpcgym.evaluation.selection``,
``eval/select_checkpoint.py``, ``eval/card.py --model selected``), on the embedded
synthetic workload with two tiny models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

from hpcgym import evaluation as E  # noqa: E402
from hpcgym.evaluation import selection as S  # noqa: E402
from hpcgym.evaluation.statistics import (  # noqa: E402
    choice_holdout,
    holdout_text,
    paired_comparison,
)
from hpcgym.workload import load  # noqa: E402
from hpcgym_agents import load_agent  # noqa: E402

CFG = {"trace": "synthetic", "policy": "FCFS", "mode": "guarded", "reference": "EASY-SJBF",
       "max_queue": 16, "length": 64, "seed": 1, "train_fraction": 0.7}  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder: checkpoints at 128 and 192 steps, a kept copy of the first and a
    best model equal to the second (same step counts: one candidate each)."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents.kernel_policy import KernelPolicy

    rdir = tmp_path_factory.mktemp("runs") / "r"
    (rdir / "checkpoints").mkdir(parents=True)
    (rdir / "kept").mkdir()
    env = BackfillEnv(trace=None, sequence_length=64, max_queue=16, normalizer=None)
    model = MaskablePPO(KernelPolicy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    model.save(rdir / "checkpoints" / "model_128_steps.zip")
    model.save(rdir / "kept" / "model_128_steps.zip")
    model.learn(64, reset_num_timesteps=False)
    model.save(rdir / "checkpoints" / "model_192_steps.zip")
    model.save(rdir / "best_model.zip")
    (rdir / "config.json").write_text(json.dumps(CFG))
    return rdir


def test_candidates_one_per_step_count(run: Path) -> None:
    cands = S.checkpoint_candidates(run)
    assert [E.cards.zip_timesteps(c) for c in cands] == [128, 192]
    assert cands[1].name == "best_model.zip"  # best_model.zip comes first among equals
    with pytest.raises(FileNotFoundError, match="no config.json"):
        S.checkpoint_candidates(run / "checkpoints")


def test_run_reference() -> None:
    assert S.run_reference({"reference": "EASY-SJBF"}) == "EASY-SJBF"
    assert S.run_reference({"reference": "EASY-SJBF", "policy": "SJF"}) == "SJF+EASY-SJBF"
    assert S.run_reference({"normalizer": "ELOSS", "policy": "sjf"}) == "SJF+ELOSS"
    # ENV+NAME (today's default): the env's own queue, named for what it runs
    assert S.run_reference({"reference": "ENV+EASY-SJBF", "policy": "SJF"}) == "SJF+EASY-SJBF"
    assert S.run_reference({"reference": "ENV+EASY-SJBF"}) == "EASY-SJBF"
    # a Schedule-v0 run: the env's row order, FCFS meaning the trace's deployable reference
    sched = {"task": "schedule", "reference": "EASY-SJBF", "policy": "FCFS"}
    assert S.run_reference({**sched, "trace": "SDSC-SP2"}) == "SJF+EASY-SJBF"
    assert S.run_reference({**sched, "trace": "KTH-SP2"}) == "F3+EASY-SJBF"
    assert S.run_reference({**sched, "trace": None}) == "F2+EASY-SJBF"  # synthetic
    assert S.run_reference({**sched, "trace": "HPC2N", "policy": "SJF"}) == "SJF+EASY-SJBF"
    guarded = {**sched, "reference": "ENV+EASY-SJBF", "trace": None}
    assert S.run_reference(guarded) == "F2+EASY-SJBF,starvation=144h"
    assert S.run_reference({"reference": "WFP3+EASY", "policy": "SJF"}) == "WFP3+EASY"
    with pytest.raises(ValueError, match="no reference"):
        S.run_reference({"reference": None})


def test_select_checkpoint_chooses_the_lowest_ratio(run: Path) -> None:
    sel = S.select_checkpoint(run, agent_loader=load_agent, windows=4, length=64, seed=3, jobs=1)
    assert sel["split"] == "validation" and sel["reference"] == "EASY-SJBF"
    assert [r["model"] for r in sel["candidates"]] == [
        "checkpoints/model_128_steps.zip",
        "best_model.zip",
    ]
    # each ratio is the paired comparison of that model alone against EASY-SJBF
    wl = load(None)
    ws = E.select_windows(len(wl), 64, 4, "validation", 3, 0.7)
    assert sel["starts"] == list(ws.starts)
    # the windows' offered load is recorded with the ratios (validation vs test load)
    loads = [wl.window(s, 64).offered_load for s in ws.starts]
    assert sel["offered_load"]["median"] == pytest.approx(float(np.median(loads)))
    assert sel["offered_load"]["q1"] <= sel["offered_load"]["median"] <= sel["offered_load"]["q3"]
    ref = E.scheduler_method("EASY-SJBF")
    for row in sel["candidates"]:
        m = E.agent_method(str(run / row["model"]), label="m")
        res = E.evaluate(wl, [ref, m], ws, jobs=1, agent_loader=load_agent, reference=None)
        per = res.per_window("avg_bsld")
        pc = paired_comparison(per["m"], per["EASY-SJBF"])
        assert row["geo_ratio"] == pytest.approx(pc.geo_ratio)
        assert row["mean_avg_bsld"] == pytest.approx(float(np.mean(per["m"])))
        assert row["steps"] == E.cards.zip_timesteps(run / row["model"])
        assert row["avg_bsld"] == pytest.approx(per["m"])
        assert sel["reference_avg_bsld"] == pytest.approx(per["EASY-SJBF"])
    # the split-half estimate of the choice is recomputable from the recorded values
    assert sel["holdout"] == choice_holdout(
        {r["model"]: r["avg_bsld"] for r in sel["candidates"]}, sel["reference_avg_bsld"]
    )
    best = min(sel["candidates"], key=lambda r: r["geo_ratio"])
    assert sel["chosen"] == best["model"]
    assert Path(sel["chosen_path"]) == run.resolve() / best["model"]
    assert json.loads((run / S.SELECTION_FILE).read_text()) == sel


def test_card_of_the_selected_model(run: Path, tmp_path: Path) -> None:
    S.select_checkpoint(run, agent_loader=load_agent, windows=4, length=64, seed=5, jobs=1)
    sel = S.load_selection(run)
    card = E.card_from_run(run, model="selected")
    assert card.model == Path(sel["chosen_path"])
    data = card.to_dict()
    assert data["selection"]["chosen"] == sel["chosen"]
    md = E.cards.card_markdown(data)
    assert "## Checkpoint selection" in md and sel["command"] in md
    assert f"offered load {sel['offered_load']['q1']:.2f} / " in md
    assert f"**{sel['chosen']}**" in md
    assert "scored on the other half" in holdout_text(sel["holdout"], "EASY-SJBF")
    assert holdout_text(sel["holdout"], "EASY-SJBF") in md
    paths = E.ship_model(run, "tiny-sel", tmp_path / "pretrained", "selected", "Why: notes.")
    shipped = json.loads(paths["json"].read_text())
    assert shipped["selection"]["seed"] == 5
    # the notes live in the card: a re-rendered .md (eval/heldout.py does) keeps them
    assert shipped["notes"] == "Why: notes." and "Why: notes." in paths["md"].read_text()
    assert E.cards.card_markdown(shipped).rstrip().endswith("Why: notes.")


def test_selected_without_a_selection(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(CFG))
    with pytest.raises(FileNotFoundError, match="eval/select_checkpoint.py"):
        E.card_from_run(tmp_path, model="selected")


def _seeds_root(run: Path, root: Path, keep: dict[int, str]) -> Path:
    """A seeds run (``seeds.json`` as train/seeds.py writes it) whose seed ``s`` holds
    only the model ``keep[s]`` of ``run`` (as its checkpoint)."""
    import shutil

    rows = []
    for s, model in keep.items():
        d = root / f"seed-{s}"
        (d / "checkpoints").mkdir(parents=True)
        shutil.copy2(run / model, d / "checkpoints" / Path(model).name)
        (d / "config.json").write_text(json.dumps({**CFG, "seed": s}))
        rows.append({"seed": s, "run": str(d), "status": "finished", "timesteps": 192})
    (root / "seeds.json").write_text(json.dumps({"seeds": list(keep), "reference": "EASY-SJBF",
                                                  "runs": rows}))  # fmt: skip
    return root


def test_selection_across_seeds(run: Path, tmp_path: Path) -> None:
    """A seeds run's folder: every seed's checkpoints compete on the same windows; the
    choice, each seed's best and the card shipped from the root agree with selecting in
    each seed's folder."""
    keep = {1: "checkpoints/model_128_steps.zip", 2: "checkpoints/model_192_steps.zip"}
    root = _seeds_root(run, tmp_path / "seeds-run", keep)
    kw = {"agent_loader": load_agent, "windows": 3, "length": 64, "seed": 4, "jobs": 1}
    sel = S.select_checkpoint(root, **kw)
    per = {s: S.select_checkpoint(root / f"seed-{s}", write=False, **kw) for s in keep}
    assert [r["model"] for r in sel["candidates"]] == [
        "seed-1/checkpoints/model_128_steps.zip",
        "seed-2/checkpoints/model_192_steps.zip",
    ]
    for s in keep:  # the same windows: the same figures as within the seed
        (alone,) = per[s]["candidates"]
        assert sel["seeds"][s - 1]["run"] == f"seed-{s}"
        assert sel["seeds"][s - 1]["geo_ratio"] == pytest.approx(alone["geo_ratio"])
        assert per[s]["starts"] == sel["starts"]
    best = min(sel["candidates"], key=lambda r: (r["geo_ratio"], r["steps"]))
    assert sel["chosen"] == best["model"]
    assert Path(sel["chosen_path"]) == root.resolve() / best["model"]
    assert json.loads((root / S.SELECTION_FILE).read_text()) == sel
    assert not list(root.glob("seed-*/.selecting-*"))
    # ship the choice from the root: the chosen seed's run, the root's name
    data = E.card_from_run(root, model="selected").to_dict()
    assert data["name"] == "seeds-run" and data["selection"]["chosen"] == sel["chosen"]
    assert data["seed"] == int(best["model"].split("/")[0].removeprefix("seed-"))
    assert [r["selected"]["geo_ratio"] for r in data["seeds"]["runs"]] == [
        b["geo_ratio"] for b in sel["seeds"]
    ]
    md = E.cards.card_markdown(data)
    assert "checkpoints of all 2 seeds" in md and f"seed-2 {sel['seeds'][1]['geo_ratio']:.3f}" in md
    with pytest.raises(FileNotFoundError, match="seeds run: give one of its seed"):
        E.card_from_run(root, model="best")


def test_selection_across_seeds_refuses_what_cannot_be_compared(run: Path, tmp_path: Path) -> None:
    root = _seeds_root(run, tmp_path / "r", {1: "best_model.zip", 2: "best_model.zip"})
    (root / "seed-2" / "config.json").write_text(json.dumps({**CFG, "train_fraction": 0.6}))
    with pytest.raises(ValueError, match="differ in 'train_fraction'"):
        S.select_checkpoint(root, agent_loader=load_agent, windows=2, length=64, jobs=1)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "seeds.json").write_text("{}")
    (empty / "seed-1").mkdir()  # never started: no config.json
    with pytest.raises(FileNotFoundError, match="without a started seed"):
        S.select_checkpoint(empty, agent_loader=load_agent)
    for folder, words in ((empty, "without a started seed"), (tmp_path, "nor a seeds run")):
        proc = subprocess.run(
            [sys.executable, str(REPO / "eval" / "select_checkpoint.py"), str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_card_reports_the_spread_across_seeds(run: Path, tmp_path: Path) -> None:
    """A seed of a ``--seeds`` run: its card lists every seed's final and selected ratio
    and their spread (``seeds.json`` as train/seeds.py writes it)."""
    import shutil

    from hpcgym.evaluation.statistics import spread

    root = tmp_path / "seeds-run"
    finals = {1: 1.05, 2: 0.97}
    rows = []
    for s in (1, 2):
        shutil.copytree(run, root / f"seed-{s}", ignore=shutil.ignore_patterns("selection.json"))
        paired = {"reference": "EASY-SJBF", "geo_ratio": finals[s], "ci_low": 0.9, "ci_high": 1.1}
        rows.append({"seed": s, "run": str(root / f"seed-{s}"), "status": "finished",
                     "timesteps": 192, "paired": paired})  # fmt: skip
    (root / "seeds.json").write_text(json.dumps({"seeds": [1, 2], "reference": "EASY-SJBF",
                                                  "runs": rows}))  # fmt: skip
    sel = {
        s: S.select_checkpoint(
            root / f"seed-{s}", agent_loader=load_agent, windows=3, length=64, seed=10 + s, jobs=1
        )
        for s in (1, 2)
    }
    data = E.card_from_run(root / "seed-1", model="selected").to_dict()
    seeds = data["seeds"]
    assert [r["seed"] for r in seeds["runs"]] == [1, 2]
    chosen = [
        next(c for c in sel[s]["candidates"] if c["model"] == sel[s]["chosen"]) for s in (1, 2)
    ]
    assert [r["selected"]["geo_ratio"] for r in seeds["runs"]] == [c["geo_ratio"] for c in chosen]
    assert seeds["across"]["selected"] == spread([c["geo_ratio"] for c in chosen])
    assert seeds["across"]["final"] == spread([1.05, 0.97])
    md = E.cards.card_markdown(data)
    assert "## Seeds" in md and "| 2 | finished | 192 | 0.970 [0.900, 1.100] |" in md
    assert f"mean {spread([1.05, 0.97])['mean']:.3f}" in md
    # a run that is not a seed of a seeds run has no seeds section
    assert "seeds" not in E.card_from_run(run).to_dict()


def test_selection_and_card_use_the_runs_validation_fraction(run: Path, tmp_path: Path) -> None:
    """A run trained with ``--validation-fraction 0.3`` is chosen on windows of its own,
    larger validation split, and its card records the fraction (older runs: 0.1)."""
    import shutil

    from hpcgym.workload import split_range

    wide = tmp_path / "wide"
    shutil.copytree(run, wide)
    (wide / S.SELECTION_FILE).unlink(missing_ok=True)
    (wide / "config.json").write_text(json.dumps({**CFG, "validation_fraction": 0.3}))
    sel = S.select_checkpoint(wide, agent_loader=load_agent, windows=8, length=64, seed=3, jobs=1)
    n = len(load(None))
    assert sel["starts"] == list(E.select_windows(n, 64, 8, "validation", 3, 0.7, None, False,
                                                  None, 0.3).starts)  # fmt: skip
    lo, hi = split_range(n, "validation", 0.7, 0.3)
    narrow_lo, _ = split_range(n, "validation", 0.7)
    assert all(lo <= s <= hi - 64 for s in sel["starts"])
    assert min(sel["starts"]) < narrow_lo  # outside the default 10 % validation split
    assert E.card_from_run(wide, model="selected").to_dict()["validation_fraction"] == 0.3
    assert E.card_from_run(run, model="selected").to_dict()["validation_fraction"] == 0.1


def test_selection_survives_pruning_of_a_running_run(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run still training prunes ``checkpoints/`` while the selection evaluates: the
    selection evaluates snapshots, and a chosen checkpoint that is gone is kept in
    ``kept/``."""
    import shutil

    live = tmp_path / "live"
    shutil.copytree(run, live)
    for f in ("best_model.zip", "kept/model_128_steps.zip"):
        (live / f).unlink()  # only checkpoints/ remain
    real = S.evaluate

    def pruning_evaluate(*args, **kw):  # type: ignore[no-untyped-def]
        for f in (live / "checkpoints").glob("*.zip"):
            f.unlink()  # the trainer pruned them meanwhile
        return real(*args, **kw)

    monkeypatch.setattr(S, "evaluate", pruning_evaluate)
    sel = S.select_checkpoint(live, agent_loader=load_agent, windows=3, length=64, seed=5, jobs=1)
    assert [r["model"] for r in sel["candidates"]] == [
        "checkpoints/model_128_steps.zip",
        "checkpoints/model_192_steps.zip",
    ]
    chosen = Path(sel["chosen_path"])
    assert chosen.parent == live.resolve() / "kept" and chosen.is_file()
    assert E.cards.zip_timesteps(chosen) == next(
        r["steps"] for r in sel["candidates"] if r["model"] == sel["chosen"]
    )
    # same figures as evaluating the untouched run's checkpoints
    ref = S.select_checkpoint(run, agent_loader=load_agent, windows=3, length=64, seed=5, jobs=1,
                              candidates=[run / "checkpoints" / "model_128_steps.zip",
                                          run / "checkpoints" / "model_192_steps.zip"],
                              write=False)  # fmt: skip
    ratios = [r["geo_ratio"] for r in ref["candidates"]]
    assert [r["geo_ratio"] for r in sel["candidates"]] == ratios
    assert not list(live.glob(".selecting-*"))  # the snapshots are removed


def test_thin_candidates_keeps_best_final_and_evenly_spaced() -> None:
    ckpts = [Path(f"checkpoints/model_{i}_steps.zip") for i in range(1, 101)]
    models = [*ckpts[:40], Path("best_model.zip"), *ckpts[40:], Path("final_model.zip")]
    assert S.thin_candidates(models, None) == models
    assert S.thin_candidates(models[:5], 10) == models[:5]
    kept = S.thin_candidates(models, 6)
    assert len(kept) == 6 and kept[0] == models[0]
    assert Path("best_model.zip") in kept and kept[-1] == Path("final_model.zip")
    idx = [models.index(k) for k in kept if k.name.startswith("model_")]
    gaps = np.diff(idx)
    assert gaps.min() >= 20 and gaps.max() <= 30  # evenly spaced over the 102
    assert kept == sorted(kept, key=models.index)  # still in step order
    with pytest.raises(ValueError, match="at least 1"):
        S.thin_candidates(models, 0)


def test_selection_limits_candidates_per_seed(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``max_candidates`` thins each seed's candidates on its own (one call per seed)."""
    keep = {1: "checkpoints/model_128_steps.zip", 2: "checkpoints/model_192_steps.zip"}
    root = _seeds_root(run, tmp_path / "thin", keep)
    calls: list[tuple[list[str], int | None]] = []
    real = S.thin_candidates

    def spy(models, limit):  # type: ignore[no-untyped-def]
        calls.append(([str(m.relative_to(root.resolve())) for m in models], limit))
        return real(models, limit)

    monkeypatch.setattr(S, "thin_candidates", spy)
    sel = S.select_checkpoint(root, agent_loader=load_agent, windows=2, length=64, jobs=1,
                              max_candidates=3, write=False)  # fmt: skip
    assert calls == [([f"seed-{s}/{m}"], 3) for s, m in keep.items()]
    assert "--max-candidates 3" in sel["command"]


def test_selection_on_a_generated_workload(run: Path, tmp_path: Path) -> None:
    """``workload=``: the windows come from the whole generated workload (not the run's
    validation split), the figures are those of a direct evaluation on them, and the
    selection, its command and the card say where the choice was made; a real trace is
    refused, through the API and the command line (exit 2, one line)."""
    spec = "synthetic:n_jobs=600,seed=5,load=1.2"
    sel = S.select_checkpoint(
        run, agent_loader=load_agent, windows=3, length=64, seed=2, jobs=1, workload=spec,
        write=False,
    )  # fmt: skip
    assert (sel["split"], sel["trace"], sel["generated"]) == ("all", spec, True)
    assert sel["command"].endswith(f"--workload {spec}")
    wl = load(spec)
    ws = E.select_windows(len(wl), 64, 3, "all", 2, 0.7)
    assert sel["starts"] == list(ws.starts) and max(ws.starts) > 0.7 * len(wl)  # beyond validation
    best = min(sel["candidates"], key=lambda r: r["geo_ratio"])
    m = E.agent_method(str(run / best["model"]), label="m")
    res = E.evaluate(wl, [E.scheduler_method("EASY-SJBF"), m], ws, jobs=1,
                     agent_loader=load_agent, reference=None)  # fmt: skip
    per = res.per_window("avg_bsld")
    assert best["geo_ratio"] == pytest.approx(
        paired_comparison(per["m"], per["EASY-SJBF"]).geo_ratio
    )
    md = "\n".join(E.card_text._selection_lines(sel))
    assert f"of the generated workload `{spec}`" in md and "validation split" not in md
    plain = S.select_checkpoint(run, agent_loader=load_agent, windows=3, length=64, seed=2,
                                jobs=1, write=False)  # fmt: skip
    assert plain["generated"] is False and "--workload" not in plain["command"]
    assert "of the validation split" in "\n".join(E.card_text._selection_lines(plain))
    for bad in ("SDSC-SP2", str(tmp_path / "x.swf")):
        with pytest.raises(ValueError, match="generated workload"):
            S.select_checkpoint(run, agent_loader=load_agent, workload=bad)
    proc = subprocess.run(
        [sys.executable, str(REPO / "eval" / "select_checkpoint.py"), str(run),
         "--workload", "Lublin-1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "validation split only" in proc.stderr, proc.stderr


def test_selection_among_given_models(run: Path) -> None:
    """``--models``: only the models named (relative to the run or as paths) compete, and
    the recorded command names them; a missing one is a usage error."""
    script = str(REPO / "eval" / "select_checkpoint.py")
    args = [str(run), "--windows", "2", "--length", "64", "--seed", "6", "--jobs", "1"]
    proc = subprocess.run(
        [sys.executable, script, *args, "--no-progress", "--models",
         "checkpoints/model_128_steps.zip"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    sel = S.load_selection(run)
    assert [r["model"] for r in sel["candidates"]] == ["checkpoints/model_128_steps.zip"]
    assert sel["command"].endswith(" --models checkpoints/model_128_steps.zip")
    again = S.select_checkpoint(run, agent_loader=load_agent, windows=2, length=64, seed=6,
                                jobs=1, write=False)  # fmt: skip
    assert len(again["candidates"]) == 2  # without it: every model of the run
    proc = subprocess.run(
        [sys.executable, script, *args, "--models", "checkpoints/nope.zip"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "neither a file nor a file of" in proc.stderr, proc.stderr


def test_selection_for_transfer(run: Path) -> None:
    """``transfer=``: every candidate is also played on the validation windows of other
    traces; its ratio there is a direct evaluation's, ``score`` is the geometric mean of
    its ratios, the choice is the lowest score, and the card and the command say so; the
    run's own trace, a trace named twice and a generated workload beside it are refused."""
    other = "synthetic:n_jobs=1500,seed=9,load=1.3"
    sel = S.select_checkpoint(run, agent_loader=load_agent, windows=3, length=64, seed=4,
                              jobs=1, transfer=[other], write=False)  # fmt: skip
    assert [w["trace"] for w in sel["transfer"]] == [other] and sel["holdout"] is None
    assert sel["command"].endswith(f"--transfer {other}")
    wl = load(other)
    ws = E.select_windows(len(wl), 64, 3, "validation", 4, 0.7)
    assert sel["transfer"][0]["starts"] == list(ws.starts)
    ref = E.scheduler_method("EASY-SJBF")
    for row in sel["candidates"]:
        m = E.agent_method(str(run / row["model"]), label="m")
        res = E.evaluate(wl, [ref, m], ws, jobs=1, agent_loader=load_agent, reference=None)
        per = res.per_window("avg_bsld")
        there = paired_comparison(per["m"], per["EASY-SJBF"]).geo_ratio
        assert row["transfer"][other]["geo_ratio"] == pytest.approx(there)
        assert row["score"] == pytest.approx(float(np.sqrt(row["geo_ratio"] * there)))
    assert sel["chosen"] == min(sel["candidates"], key=lambda r: r["score"])["model"]
    md = "\n".join(E.card_text._selection_lines(sel))
    assert f"validation windows of {other} (never trained on)" in md
    assert "the lowest transfer score (below; ratios of AVEbsld vs EASY-SJBF)" in md
    chosen_row = next(x for x in md.splitlines() if x.startswith(f"| **{sel['chosen']}**"))
    assert chosen_row.endswith(
        f" {next(r for r in sel['candidates'] if r['model'] == sel['chosen'])['score']:.3f} |"
    )  # noqa: E501
    for bad in (["synthetic"], [other, other]):
        with pytest.raises(ValueError, match="own trace|named twice"):
            S.select_checkpoint(run, agent_loader=load_agent, transfer=bad)
    with pytest.raises(ValueError, match="not with a generated workload"):
        S.select_checkpoint(run, agent_loader=load_agent, transfer=[other],
                            workload="synthetic:n_jobs=600,seed=5")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(REPO / "eval" / "select_checkpoint.py"), str(run), "--windows",
         "2", "--length", "64", "--seed", "4", "--jobs", "1", "--no-progress", "--transfer",
         other],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"| {other} | score |" in proc.stdout and "<- chosen" in proc.stdout
    assert S.load_selection(run)["transfer"][0]["trace"] == other
