"""Tests of the evaluation suite (``hpcgym.evaluation``, its plots, ``eval/*.py``,
``hpcgym compare``): determinism (repeat, ``jobs`` 1 vs 2), env-played heuristics equal to
the engine, output schemas, plots, TensorBoard, model cards and a tiny trained model, the
paper tables on a small synthetic trace. Everything runs on the embedded synthetic
workload (no real trace needed), on windows of 128-256 jobs."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

from hpcgym import evaluation as E  # noqa: E402
from hpcgym.evaluation import runner as R  # noqa: E402
from hpcgym.sim import get_scheduler  # noqa: E402
from hpcgym.workload import load  # noqa: E402
from hpcgym_agents import load_agent  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _evaluate(*args, **kwargs):
    """:func:`hpcgym.evaluation.evaluate` with the agents package's loader."""
    return E.evaluate(*args, agent_loader=load_agent, **kwargs)


@pytest.fixture(scope="module")
def wl():
    return load("synthetic:n_jobs=10000")  # the 10,000-job synthetic workload, 256 processors


@pytest.fixture(scope="module")
def windows(wl):
    return E.select_windows(len(wl), length=256, count=3, split="test", seed=7)


def _methods():
    return [
        E.scheduler_method("EASY"),
        E.scheduler_method("EASY-SJBF"),
        E.scheduler_method("SJF+EASY"),
        E.agent_method("easy"),
        E.agent_method("sjbf"),
        E.agent_method("random", agent_seed=3),
    ]


def _png(path: Path) -> None:
    assert path.is_file(), path
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5000, path


# --------------------------------------------------------------------------- windows
def test_select_windows(wl):
    from hpcgym.workload import WindowSampler, split_range

    ws = E.select_windows(len(wl), 256, 4, "test", seed=5)
    ref = WindowSampler(len(wl), 256, split="test", seed=5).sample_many(4)
    assert ws.starts == tuple(int(s) for s in ref) and ws.how == "sampled"
    lo, hi = split_range(len(wl), "test")
    assert all(lo <= s <= hi - 256 for s in ws.starts)
    ev = E.select_windows(len(wl), 256, 3, "test", seed=None)
    assert ev.how == "evenly" and ev.starts[0] == lo and ev.starts[-1] == hi - 256
    full = E.select_windows(len(wl), full_trace=True, split="test")
    assert full.starts == (lo,) and full.length == hi - lo
    pre = E.select_windows(len(wl), 100, 5, "test", seed=1, prefix=2000)
    assert all(1400 <= s <= 1900 for s in pre.starts)
    assert E.select_windows(len(wl), 64, starts=[5, 9]).starts == (5, 9)
    with pytest.raises(ValueError, match="outside the trace"):
        E.select_windows(len(wl), 64, starts=[len(wl) - 10])


def test_distinct_jobs():
    from hpcgym.evaluation.windows import distinct_jobs

    # a brute-force count of the union of the windows' job indices
    rng = np.random.default_rng(3)
    for _ in range(20):
        starts = rng.integers(0, 500, size=int(rng.integers(1, 12)))
        length = int(rng.integers(0, 120))
        union = set()
        for st in starts:
            union.update(range(int(st), int(st) + length))
        assert distinct_jobs(starts.tolist(), length) == len(union)
    assert distinct_jobs([], 10) == 0
    assert distinct_jobs([7, 7, 7], 10) == 10  # a window drawn three times
    with pytest.raises(ValueError, match="length"):
        distinct_jobs([0], -1)


def test_load_quartiles(wl):
    from hpcgym.evaluation.windows import load_quartiles, load_quartiles_text
    from hpcgym.workload import Workload
    from hpcgym.workload.sequences import window_loads

    ws = E.select_windows(len(wl), 128, 9, "validation", seed=2)
    q = load_quartiles(wl, ws)
    every = window_loads(wl, 128)  # the offered load of every 128-job window
    want = np.percentile(every[list(ws.starts)], [25, 50, 75])
    assert [q["q1"], q["median"], q["q3"]] == pytest.approx(want) and q["q1"] < q["q3"]
    assert load_quartiles_text(q) == (
        f"offered load {want[0]:.2f} / {want[1]:.2f} / {want[2]:.2f} (quartiles)"
    )
    assert load_quartiles_text(None) == ""
    # windows whose jobs were all submitted at one instant have no load: None, not nan
    neg = -np.ones(8, dtype=np.int64)
    burst = Workload(
        "burst", 4, np.arange(1, 9), np.zeros(8), np.ones(8), np.ones(8, dtype=np.int64),
        np.ones(8), neg, neg, neg, neg,
    )  # fmt: skip
    assert load_quartiles(burst, E.select_windows(8, 4, starts=[0, 4])) is None


# --------------------------------------------------------------------------- determinism
def test_deterministic_repeat_and_jobs(wl, windows, tmp_path):
    """Same inputs -> identical results and files, twice inline and with 2 workers."""
    a = _evaluate(wl, _methods(), windows, jobs=1, progress=False)
    b = _evaluate(wl, _methods(), windows, jobs=1, progress=False)
    c = _evaluate(wl, _methods(), windows, jobs=2, progress=False)
    for other in (b, c):
        assert other.to_dict() == a.to_dict()
        for lab in a.labels:
            np.testing.assert_array_equal(other.job_start[lab], a.job_start[lab])
    files = ("table.md", "summary.csv", "windows.csv", "results.json")
    E.write_outputs(a, tmp_path / "a", plots=False)
    E.write_outputs(c, tmp_path / "c", plots=False)
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "c" / f).read_bytes(), f
    # the random agent is random: another seed gives another schedule somewhere
    d = _evaluate(wl, [E.agent_method("random", agent_seed=4)], windows, jobs=1, progress=False)
    assert not np.array_equal(d.job_start["RandomValid"], a.job_start["RandomValid"])


# --------------------------------------------------------------------------- env == engine
@pytest.mark.parametrize(
    ("agent", "policy", "scheduler"),
    [("easy", "FCFS", "EASY"), ("sjbf", "FCFS", "EASY-SJBF"), ("easy", "SJF", "SJF+EASY")],
)
def test_heuristic_through_env_equals_engine(wl, windows, agent, policy, scheduler):
    res = _evaluate(wl, [E.agent_method(agent, policy=policy)], windows, jobs=1, progress=False)
    (label,) = res.labels
    spec = get_scheduler(scheduler)
    for wi, s in enumerate(windows.starts):
        direct = spec.simulate(wl.window(s, windows.length), seed=0)
        np.testing.assert_array_equal(res.job_start[label][wi], direct.start)
        row = res.rows[wi]
        assert row["start"] == s and row["avg_bsld"] == direct.metrics["avg_bsld"]
        assert row["avg_wait"] == direct.metrics["avg_wait"]
        assert row["violations"] == 0 and row["decisions"] > 0


def test_worker_caches_never_mix_traces(wl, windows):
    """The same window starts and env settings on another trace, in the same process."""
    other = load(None, n_jobs=10_000, seed=5)
    for w in (wl, other, wl):
        res = _evaluate(w, [E.agent_method("easy")], windows, jobs=1, progress=False)
        for wi, s in enumerate(windows.starts):
            direct = get_scheduler("EASY").simulate(w.window(s, windows.length))
            np.testing.assert_array_equal(res.job_start["EasyAgent"][wi], direct.start)


def test_late_heads_of_sjf_agents_come_from_the_engine(wl, windows):
    """Late heads for a non-FCFS queue: an SJF agent played through the env and the SJF
    schedulers, measured with the engine's record of the reserved heads. Guarded agents
    and request-based reservations are never late; SJF+ELOSS's predicted ones may be,
    and its count equals a direct simulation's."""
    from hpcgym.sim.metrics import head_delay_summary, request_reservation_delays

    methods = [
        E.scheduler_method("SJF+EASY-SJBF"),
        E.scheduler_method("SJF+ELOSS"),
        E.agent_method("sjbf", policy="SJF"),
    ]
    res = _evaluate(wl, methods, windows, jobs=1, progress=False)
    late = {lab: res.head_delays(lab)["head_delayed"] for lab in res.labels}
    assert late["SJF+EASY-SJBF"] == late["SJF+SJBFAgent"] == 0
    direct = 0
    for s in windows.starts:
        w = wl.window(s, windows.length)
        r = get_scheduler("SJF+ELOSS").simulate(w, seed=0)
        d = request_reservation_delays(w, r.start, r.head_since, r.backfilled)
        direct += head_delay_summary(d)["head_delayed"]
    assert late["SJF+ELOSS"] == direct > 0  # these windows hold a late head


def test_stop_agent_equals_no_backfilling(wl):
    ws = E.select_windows(len(wl), 128, starts=[6000])
    res = _evaluate(wl, [E.agent_method("stop", max_queue=256)], ws, jobs=1, progress=False)
    direct = get_scheduler("NONE").simulate(wl.window(6000, 128), seed=0)
    np.testing.assert_array_equal(res.job_start["StopAlways"][0], direct.start)


# --------------------------------------------------------------------------- outputs
def test_output_schemas_and_plots(wl, windows, tmp_path):
    res = _evaluate(wl, _methods(), windows, jobs=1, progress=False)
    paths = E.write_outputs(res, tmp_path)
    labels = ["EASY", "EASY-SJBF", "SJF+EASY", "EasyAgent", "SJBFAgent", "RandomValid"]
    assert res.labels == labels
    with open(paths["summary.csv"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == [
        "trace", "method", "kind", "windows", "mean_avg_bsld", "median_avg_bsld",
        "std_avg_bsld", "min_avg_bsld", "max_avg_bsld", "mean_avg_wait", "mean_utilization",
        "mean_awrt", "awrt_ratio", "awrt_ci_low", "awrt_ci_high",
        *(f"mean_{stat}_wait_{c}" for c in ("serial", "small", "medium", "wide")
          for stat in ("avg", "p95")),
        "mean_max_wait", "mean_p99_bsld", "tail_max_wait", "tail_p99_bsld", "tail",
        "vs_reference_pct", "paper_table4", "geo_ratio", "ci_low", "ci_high", "mean_ratio",
        "mean_low", "mean_high", "eq_low", "eq_high", "margin", "wins",
        "verdict", "head_delayed", "head_delay",
    ]  # fmt: skip
    assert [r["method"] for r in rows] == labels
    easy = rows[0]
    per = res.per_window("avg_bsld")["EASY"]
    assert float(easy["mean_avg_bsld"]) == pytest.approx(np.mean(per), rel=1e-12)
    assert float(easy["vs_reference_pct"]) == 0.0 and easy["paper_table4"] == ""
    assert easy["geo_ratio"] == "" and easy["wins"] == ""  # no ratio reference asked
    with open(paths["windows.csv"], newline="") as fh:
        wrows = list(csv.DictReader(fh))
    assert list(wrows[0]) == [
        "trace", "method", "kind", "window", "start", "length", "avg_bsld", "avg_wait",
        "avg_pp_bsld", "max_wait", "p99_bsld", "avg_turnaround", "utilization", "makespan",
        "backfilled", "awrt",
        *(f"{stat}_wait_{c}" for c in ("serial", "small", "medium", "wide")
          for stat in ("avg", "p95")),
        "decisions", "violations", "overflow_decisions", "steps", "head_delayed", "head_delay",
    ]  # fmt: skip
    assert len(wrows) == len(labels) * len(windows.starts)
    # request-based reservations are never late, whatever the queue policy
    late = {r["method"]: r["head_delayed"] for r in rows}
    assert late["EASY"] == late["EASY-SJBF"] == late["EasyAgent"] == late["SJF+EASY"] == "0"
    assert wrows[0]["decisions"] == "" and wrows[-1]["decisions"] != ""  # scheduler / agent
    doc = json.loads(paths["results.json"].read_text())
    assert list(doc) == [
        "schema", "trace", "jobs", "machine_size", "windows", "reference", "methods",
        "skipped", "summary", "rows", "replay",
    ]  # fmt: skip
    assert doc["windows"]["starts"] == list(windows.starts)
    assert [m["label"] for m in doc["methods"]] == labels
    assert "--starts " + " ".join(map(str, windows.starts)) in doc["replay"]
    md = paths["table.md"].read_text()
    assert (
        "| method | kind | mean AVEbsld | median | min | max | mean wait (s) | max wait (h) "
        "| p99 bsld | vs EASY |"
    ) in md
    assert "## AVEbsld per window" in md and "## Mean wait (s) per window" in md
    for lab in labels:
        assert f"| {lab} |" in md
    z = np.load(paths["per_job.npz"])
    assert z["start_0"].shape == (3, 256) and list(z["labels"]) == labels
    np.testing.assert_allclose(z["bsld_0"].mean(axis=1), per, rtol=1e-12)
    _png(paths["bsld_boxplot.png"])
    _png(paths["bsld_cdf.png"])


def test_tensorboard_scalars(wl, windows, tmp_path):
    """eval/compare.py's scalars use training's layout: every method its own run with the
    same tags (eval/avg_bsld), a method renamed "agent" in the folder itself, the paired
    ratio tags naming their reference; several traces get a trace level."""
    pytest.importorskip("tensorboard")
    from hpcgym.evaluation.plots import read_scalars

    res = _evaluate(
        wl, _methods()[:2], windows, jobs=1, progress=False, ratio_reference="EASY-SJBF"
    )
    E.write_tensorboard(res, tmp_path / "one", step=42, rename={"EASY": "agent"})
    sc = read_scalars(tmp_path / "one" / "EASY-SJBF")
    steps, vals = sc["eval/avg_bsld"]
    assert steps.tolist() == [42]
    assert vals[0] == pytest.approx(res.mean("EASY-SJBF"), rel=1e-6)
    assert sc["eval/ratio_vs_EASY-SJBF"][1][0] == pytest.approx(1.0)
    sc = read_scalars(tmp_path / "one")  # "agent": the folder itself (a training run)
    assert sc["eval/avg_bsld"][1][0] == pytest.approx(res.mean("EASY"), rel=1e-6)
    assert sc["eval/avg_wait"][1][0] == pytest.approx(res.mean("EASY", "avg_wait"), rel=1e-6)
    summ = {s["method"]: s for s in res.summary()}
    for stat, metric in (("ratio", "geo_ratio"), ("ci_low", "ci_low"), ("wins", "wins")):
        got = sc[E.ratio_tag("EASY-SJBF", stat)][1][0]
        assert got == pytest.approx(summ["EASY"][metric], rel=1e-6)
    assert E.ratio_tag("EASY-SJBF", "ci_high") == "eval/ratio_vs_EASY-SJBF_ci_high"
    steps, vals = sc["eval_windows/avg_bsld"]
    assert steps.tolist() == [0, 1, 2]
    np.testing.assert_allclose(vals, res.per_window()["EASY"], rtol=1e-6)
    E.write_tensorboard([res, res], tmp_path / "two", step=1, prefix="table4")
    assert f"table4/{res.trace}/avg_bsld" in read_scalars(tmp_path / "two" / "EASY")


def test_plot_training_from_events(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    from hpcgym.evaluation.plots import plot_training

    w = SummaryWriter(str(tmp_path))
    for i, step in enumerate((100, 200, 300)):
        w.add_scalar("eval/avg_bsld/agent", 50.0 - 5 * i, step)
        w.add_scalar("eval/avg_bsld/EASY", 60.0, step)
        w.add_scalar("rollout/avg_bsld", 40.0 - i, step)
        w.add_scalar("train/approx_kl", 0.01, step)
    w.close()
    _png(plot_training(tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no TensorBoard event file"):
        plot_training(tmp_path / "empty")


# --------------------------------------------------------------------------- methods
def test_unknown_methods_and_skipping(wl):
    with pytest.raises(E.MethodUnavailable, match="valid names"):
        E.scheduler_method("NO-SUCH-SCHEDULER")
    with pytest.raises(E.MethodUnavailable, match="easy, sjbf, stop, random, first"):
        E.agent_method("no-such-agent")
    # a method failing at run time is skipped with its reason, the others are kept
    bad = E.Method(label="broken", kind="scheduler", spec="policy=FCFS,estimate=nope")
    ws = E.select_windows(len(wl), 64, starts=[100])
    res = _evaluate(
        wl, [E.scheduler_method("EASY"), bad], ws, jobs=1, progress=False, skip_unavailable=True
    )
    assert res.labels == ["EASY"] and "broken" in res.skipped
    with pytest.raises(ValueError, match="nope"):
        _evaluate(wl, [bad], ws, jobs=1, progress=False)


# --------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A MaskablePPO KernelPolicy trained for 128 steps on 64-job synthetic windows."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym_agents.kernel_policy import KernelPolicy

    env = BackfillEnv(trace=None, sequence_length=64, max_queue=16, normalizer=None)
    model = MaskablePPO(KernelPolicy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    d = tmp_path_factory.mktemp("models")
    model.save(d / "tiny.zip")
    return d / "tiny.zip"


def _card(path: Path, **kw) -> Path:
    data = {
        "schema": E.MODEL_CARD_SCHEMA,
        "name": "tiny",
        "model": "tiny.zip",
        "trace": "synthetic",
        "policy": "FCFS",
        "mode": "guarded",
        "max_queue": 16,
        "steps": 128,
        **kw,
    }
    p = path.with_suffix(".json")
    p.write_text(json.dumps(data))
    return p


def test_tiny_model_evaluates_like_direct_play(wl, tiny_model):
    from sb3_contrib import MaskablePPO

    from hpcgym.envs.backfill_env import BackfillEnv

    _card(tiny_model)
    method = E.agent_method(str(tiny_model))  # the card next to the zip configures the env
    assert method.label == "tiny" and method.env["max_queue"] == 16 and method.steps == 128
    ws = E.select_windows(len(wl), 128, 2, "test", seed=3)
    res = _evaluate(wl, [method], ws, jobs=1, progress=False)
    model = MaskablePPO.load(tiny_model, device="cpu")
    env = BackfillEnv(
        trace="synthetic:n_jobs=10000",
        sequence_length=128,
        split="all",
        normalizer=None,
        max_queue=16,
    )
    for wi, s in enumerate(ws.starts):
        obs, info = env.reset(seed=0, options={"start": s})
        done = False
        while not done:
            a, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _r, done, _t, info = env.step(int(a))
        assert res.rows[wi]["avg_bsld"] == info["agent"]["avg_bsld"]
        np.testing.assert_array_equal(res.job_start["tiny"][wi], env.simulation.result().start)
    # without a card: max_queue comes from the model's observation space
    bare = tiny_model.parent / "bare.zip"
    bare.write_bytes(tiny_model.read_bytes())
    m2 = E.agent_method(str(bare))
    assert m2.env["max_queue"] is None
    res2 = _evaluate(wl, [m2], ws, jobs=1, progress=False)
    assert res2.per_window() == {"bare": res.per_window()["tiny"]}
    # a card that contradicts the model: a clear error, or a skip
    _card(bare, max_queue=32)
    m3 = E.agent_method(str(bare))
    res3 = _evaluate(wl, [m3], ws, jobs=1, progress=False, skip_unavailable=True)
    assert "expects observations of shape (16, 12)" in res3.skipped["tiny"]


def test_tiny_model_same_with_two_workers(wl, tiny_model):
    """A trained model in worker processes (torch there, one thread) gives the inline
    results bit for bit."""
    ws = E.select_windows(len(wl), 128, 3, "test", seed=11)
    methods = [E.agent_method(str(tiny_model), max_queue=16, label="m"), E.agent_method("easy")]
    one = _evaluate(wl, methods, ws, jobs=1, progress=False)
    two = _evaluate(wl, methods, ws, jobs=2, progress=False)
    assert one.to_dict() == two.to_dict()
    np.testing.assert_array_equal(one.job_start["m"], two.job_start["m"])


def test_card_scales_change_the_observation(wl):
    """``scales="card"``: the model sees the training trace's estimate scale."""
    from hpcgym.envs.observation import COL_EST

    saved = dict(R._CTX)
    try:
        R._CTX["traces"] = {"k": wl}
        plain = R._get_env("k", E.agent_method("easy"), 128, None)
        scaled_m = E.agent_method("easy")
        scaled_m.est_scale = 2 * plain.est_scale
        scaled = R._get_env("k", scaled_m, 128, None)
        assert scaled is not plain
        o1, _ = plain.reset(seed=0, options={"start": 3000})
        o2, _ = scaled.reset(seed=0, options={"start": 3000})
        valid = o1[:, 0] > 0
        assert valid.any()
        np.testing.assert_allclose(o2[valid, COL_EST], o1[valid, COL_EST] / 2, rtol=1e-6)
    finally:
        R._CTX.clear()
        R._CTX.update(saved)


def test_model_card_validation(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"name": "x", "policy": "FCFS", "mode": "guarded"}))
    with pytest.raises(ValueError, match=r"x\.json: missing required key 'trace'"):
        E.load_model_card(p)
    p.write_text("{bad json")
    with pytest.raises(ValueError, match="invalid JSON at line 1"):
        E.load_model_card(p)
    p.write_text(json.dumps({"trace": "SDSC-SP2", "policy": "sjf", "mode": "free"}))
    with pytest.raises(FileNotFoundError, match="model file"):
        E.load_model_card(p)


def test_card_from_run_and_ship(tiny_model, tmp_path):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "best_model.zip").write_bytes(tiny_model.read_bytes())
    (run / "best_model.json").write_text(json.dumps({"timesteps": 128, "avg_bsld": 12.5}))
    cfg = {"trace": "synthetic", "policy": "SJF", "mode": "guarded", "normalizer": "EASY-SJBF",
           "max_queue": 16, "estimator": "request", "train_fraction": 0.7, "seq_len": 64,
           "seed": 3, "load_weighting": 2.0, "mix_traces": ["HPC2N"]}  # fmt: skip
    (run / "config.json").write_text(json.dumps(cfg))
    card = E.card_from_run(run)
    # how training windows were drawn is recorded; evaluations play their own windows
    assert card.data["load_weighting"] == 2.0 and "load_weighting" not in card.env
    assert card.data["mix_traces"] == ["HPC2N"] and "mix_traces" not in card.env
    assert (card.trace, card.policy, card.mode, card.steps) == ("synthetic", "SJF", "guarded", 128)
    assert card.env["max_queue"] == 16 and card.est_scale == float(load(None).request.max())
    # a run folder is an agent; its best_model.json is not mistaken for a card
    assert E.agent_method(str(run)).env["policy"] == "SJF"
    assert E.agent_method(str(run / "best_model.zip")).env["policy"] == "SJF"
    paths = E.ship_model(run, "tiny-sjf", tmp_path / "pretrained")
    assert sorted(p.name for p in paths.values()) == [
        "tiny-sjf.json",
        "tiny-sjf.md",
        "tiny-sjf.zip",
    ]
    shipped = E.find_model_cards(tmp_path / "pretrained")
    assert [c.name for c in shipped] == ["tiny-sjf"]
    assert shipped[0].model == tmp_path / "pretrained" / "tiny-sjf.zip"
    assert json.loads(paths["json"].read_text())["seed"] == 3
    m = E.agent_method("tiny-sjf", agents_dir=tmp_path / "pretrained", scales="card")
    assert m.est_scale == card.est_scale and m.env["policy"] == "SJF"


def test_card_from_a_new_run_and_a_checkpoint(tiny_model, tmp_path):
    """config.json of today's train/ppo.py says ``length`` / ``reference``; a checkpoint's
    steps come from the model file, not from its name."""
    run = tmp_path / "r2"
    (run / "checkpoints").mkdir(parents=True)
    ckpt = run / "checkpoints" / "renamed.zip"
    ckpt.write_bytes(tiny_model.read_bytes())
    cfg = {"trace": "synthetic", "policy": "FCFS", "mode": "guarded", "reference": "EASY",
           "max_queue": 16, "length": 64, "seed": 1}  # fmt: skip
    (run / "config.json").write_text(json.dumps(cfg))
    data = E.card_from_run(ckpt).to_dict()
    assert data["sequence_length"] == 64 and data["normalizer"] == "EASY"
    assert data["steps"] == 128  # num_timesteps of the tiny model


# --------------------------------------------------------------------------- paper tables
def test_paper_tables_on_a_small_trace(tiny_model, tmp_path):
    from hpcgym.workload import write_swf

    swf = tmp_path / "small.swf"
    write_swf(load(None).window(0, 1500), swf)
    zpath = tmp_path / "agent.zip"
    zpath.write_bytes(tiny_model.read_bytes())
    card = E.load_model_card(_card(zpath, trace=str(swf), name="agent", model="agent.zip"))
    t4 = E.table4(
        [card], traces=[str(swf)], extra=["SAF", "NO-SUCH"], windows=2, length=128,
        jobs=1, progress=False, agent_loader=load_agent,
    )  # fmt: skip
    (sec,) = t4.sections
    row = sec.rows[0]
    assert sec.columns == [*E.TABLE4_COLUMNS, "SAF", "NO-SUCH"]
    assert sec.ours[row]["FCFS+RLBF"] is not None and "SJF+RLBF" not in sec.ours[row]
    assert sec.ours[row]["FCFS+EASY"] == pytest.approx(t4.results[0].mean("FCFS+EASY"))
    assert any(n.startswith("RLBF cells without a shipped agent") and "SJF+RLBF" in n
               for n in t4.notes)  # fmt: skip
    assert any("NO-SUCH: unavailable scheduler" in n for n in t4.notes)
    paths = E.write_table(t4, tmp_path / "t4")
    md = paths["table4.md"].read_text()
    assert "| trace | | FCFS+EASY | FCFS+EASY-AR | FCFS+RLBF |" in md and "| hpcgym |" in md
    assert json.loads(paths["table4.json"].read_text())["schema"] == E.TABLE_SCHEMA
    assert (tmp_path / "t4" / "small" / "results.json").is_file()
    _png(paths["table4.png"])
    t5 = E.table5(
        [card], traces=[str(swf)], windows=2, length=128, jobs=1, progress=False,
        agent_loader=load_agent,
    )  # fmt: skip
    fcfs, sjf = t5.sections
    assert fcfs.columns == ["EASY", "EASY-AR", f"RL-{card.trace}"] and sjf.columns[2:] == []
    assert fcfs.ours[row][f"RL-{card.trace}"] == sec.ours[row]["FCFS+RLBF"]  # same windows
    assert sjf.ours[row]["EASY"] == sec.ours[row]["SJF+EASY"]
    md5 = t5.markdown()
    assert "## FCFS as the base scheduling policy" in md5 and "## SJF" in md5
    out = E.results_markdown(table4_json=paths["table4.json"], base=tmp_path)
    assert "## Table 4" in out and "![Table 4](t4/table4.png)" in out


def test_paper_numbers():
    assert E.PAPER_TABLE4["SDSC-SP2"]["FCFS+RLBF"] == 142.93
    assert E.PAPER_TABLE4["Lublin-1"]["FCFS+EASY-AR"] is None
    assert E.PAPER_TABLE5["SJF"]["HPC2N"]["RL-HPC2N"] == 9.75
    assert E.PAPER_TABLE5["FCFS"]["Lublin-2"]["RL-Lublin-2"] == 120.46


# --------------------------------------------------------------------------- noise sweep
def test_noise_sweep_matches_engine(wl):
    from hpcgym.sim import Simulation

    res = E.noise_sweep(wl, ["FCFS"], [0.0, 0.2], [0, 1], first_jobs=400, jobs=1, progress=False)
    w = wl.window(0, 400)
    assert res["FCFS"]["0"] == get_scheduler("EASY-AR").simulate(w).metrics["avg_bsld"]
    assert res["FCFS"]["request"] == get_scheduler("EASY").simulate(w).metrics["avg_bsld"]
    from hpcgym.predictors import make_estimator

    vals = [
        Simulation(w, estimate=make_estimator("noisy", level=0.2), seed=s).run().metrics["avg_bsld"]
        for s in (0, 1)
    ]
    assert res["FCFS"]["0.2"] == pytest.approx(np.mean(vals), rel=1e-12)


# --------------------------------------------------------------------------- CLIs
def test_compare_cli(tmp_path, capsys):
    from eval.compare import main

    out = tmp_path / "cmp"
    rc = main(
        ["--schedulers", "EASY", "SAF", "--agents", "easy", "mine=sjbf", "--windows", "2",
         "--length", "128", "--seed", "3", "--jobs", "1", "--no-progress", "--out", str(out),
         "--tb-dir", str(tmp_path / "tb"), "--tb-agent", "mine"]
    )  # fmt: skip
    assert rc == 0
    text = capsys.readouterr().out
    assert "| EASY | scheduler |" in text and "| mine | agent |" in text
    # default --reference, with the ratio of means beside the geometric mean
    head = "| ratio vs EASY-SJBF | 95% interval | ratio of means vs EASY-SJBF [95%] | wins |"
    assert head in text
    doc = json.loads((out / "results.json").read_text())
    assert [m["label"] for m in doc["methods"]] == ["EASY", "SAF", "EasyAgent", "mine"]
    _png(out / "bsld_boxplot.png")
    assert list((tmp_path / "tb").glob("events.out.tfevents*"))
    if importlib.util.find_spec("tensorboard"):  # training's tags: the shared charts
        from hpcgym.evaluation.plots import read_scalars

        tags = set(read_scalars(tmp_path / "tb"))  # --tb-agent: the folder itself
        assert {"eval/avg_bsld", "eval/ratio_vs_EASY-SJBF", "eval/wins_vs_EASY-SJBF"} <= tags
        assert "eval/avg_bsld" in read_scalars(tmp_path / "tb" / "EASY")
        assert "eval/ratio_vs_EASY-SJBF_ci_high" in read_scalars(tmp_path / "tb" / "EasyAgent")
    assert main(["--schedulers", "EASY", "NOPE", "--windows", "1", "--length", "64"]) == 2
    assert "unknown scheduler 'NOPE'" in capsys.readouterr().err  # tests/test_cli_errors.py
    rc = main(
        ["--schedulers", "EASY", "NOPE", "--windows", "1", "--length", "64", "--jobs", "1",
         "--no-progress", "--no-plots", "--skip-unavailable", "--out", str(tmp_path / "c2")]
    )  # fmt: skip
    assert rc == 0 and "warning: scheduler 'NOPE' skipped" in capsys.readouterr().err


def test_hpcgym_compare_uses_the_library(tmp_path, capsys):
    from hpcgym.cli import main
    from hpcgym.cli.compare import compare_windows

    wl = load(None)
    rows = compare_windows(wl, ["EASY", "sjf+easy"], [100, 7000], 128)
    assert [(r["scheduler"], r["start"]) for r in rows] == [
        ("EASY", 100), ("EASY", 7000), ("SJF+EASY", 100), ("SJF+EASY", 7000)
    ]  # fmt: skip
    direct = get_scheduler("SJF+EASY").simulate(wl.window(7000, 128)).metrics["avg_bsld"]
    assert rows[3]["avg_bsld"] == direct and set(rows[0]) == {
        "scheduler", "start", "length", "avg_bsld", "avg_wait", "utilization", "seconds"
    }  # fmt: skip
    rc = main(["compare", "--schedulers", "EASY", "--starts", "100", "--length", "128",
               "--out", str(tmp_path)])  # fmt: skip
    assert rc == 0
    out = capsys.readouterr().out
    assert out.startswith("trace lublin-default: 1 window(s) of 128 jobs, starts [100]")
    assert "| scheduler | mean AVEbsld | mean wait (s) |" in out
    assert (tmp_path / "results.json").is_file()
    # agents through the installed loader (entry point group hpcgym.agent_loaders)
    rc = main(["compare", "--schedulers", "EASY-SJBF", "--agents", "sjbf", "--starts", "100",
               "--length", "128"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0 and "| method | mean AVEbsld |" in out and "| SJBFAgent |" in out
    # per method: the ratios against the stated reference with intervals, and the verdict
    assert (
        "| ratio vs EASY-SJBF [95%] | ratio of means vs EASY-SJBF [95%] | wins | verdict |" in out
    )
    row = next(ln for ln in out.splitlines() if ln.startswith("| SJBFAgent |"))
    assert "| 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] | 0/1 | inconclusive |" in row
    assert "TOST" in out and "## Waits by job size" in out and "AWRT (h)" in out


def test_clairvoyant_methods_are_marked_in_the_tables(tmp_path, capsys):
    """EASY-AR knows the actual run times: its row carries the mark and the caption says
    what it means, in `hpcgym compare`'s table and in table.md; online rows are unmarked."""
    from hpcgym.cli import main

    rc = main(["compare", "--schedulers", "EASY-SJBF", "EASY-AR", "--starts", "100", "--length",
               "128", "--out", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "| EASY-AR † |" in out and "| EASY-SJBF |" in out
    assert "† clairvoyant" in out
    table = (tmp_path / "table.md").read_text()
    assert "| EASY-AR † |" in table and "† clairvoyant" in table
    rc = main(["compare", "--schedulers", "EASY-SJBF", "EASY", "--starts", "100",
               "--length", "128"])  # fmt: skip
    assert rc == 0 and "clairvoyant" not in capsys.readouterr().out


def test_agents_need_a_loader(wl, monkeypatch):
    ws = E.select_windows(len(wl), 64, starts=[100])
    # without agent_loader=..., the installed one loads the agents named by strings
    given = E.evaluate(wl, [E.agent_method("easy")], ws, jobs=1, progress=False,
                       agent_loader=load_agent)  # fmt: skip
    found = E.evaluate(wl, [E.agent_method("easy")], ws, jobs=1, progress=False)
    assert found.rows == given.rows
    assert E.resolve_agent_loader() is load_agent  # the installed one

    def none_installed(name="default"):
        raise E.LoaderUnavailable("none installed")

    monkeypatch.setattr("hpcgym.evaluation.runner.resolve_agent_loader", none_installed)
    with pytest.raises(E.MethodUnavailable, match="needs an agent loader"):
        E.evaluate(wl, [E.agent_method("easy")], ws, jobs=1, progress=False)
    monkeypatch.undo()
    with pytest.raises(E.LoaderUnavailable, match="hpcgym.agent_loaders"):
        E.resolve_agent_loader("no-such-loader")


def test_play_windows_lockstep_equals_one_by_one(wl):
    """The batched (lockstep) loop and the one-window loop give the same rows."""
    from hpcgym.envs.backfill_env import BackfillEnv

    starts = [6000, 6500, 7100]
    kw = dict(trace=wl, window_length=128, split="all", reference="EASY")
    one = E.play_windows(BackfillEnv(**kw), load_agent("sjbf"), starts)
    many = E.play_windows([BackfillEnv(**kw) for _ in starts], load_agent("sjbf"), starts)
    assert one == many
    for s, row in zip(starts, one, strict=True):
        direct = get_scheduler("EASY-SJBF").simulate(wl.window(s, 128), seed=0).metrics
        assert row["start"] == s and row["avg_bsld"] == direct["avg_bsld"]
        easy = get_scheduler("EASY").simulate(wl.window(s, 128), seed=0).metrics
        assert row["reference_avg_bsld"] == easy["avg_bsld"]  # the env's reference


def test_table_and_plot_clis(tiny_model, tmp_path):
    from eval.plots import main as plots_main
    from eval.table4 import main as t4_main

    zpath = tmp_path / "a.zip"
    zpath.write_bytes(tiny_model.read_bytes())
    _card(zpath, name="a", model="a.zip")
    rc = t4_main(
        ["--cards", str(zpath), "--traces", "synthetic", "--extra", "--windows", "1",
         "--length", "128", "--jobs", "1", "--no-progress", "--out", str(tmp_path / "t4")]
    )  # fmt: skip
    assert rc == 0
    doc = json.loads((tmp_path / "t4" / "table4.json").read_text())
    assert doc["sections"][0]["ours"]["synthetic"]["FCFS+RLBF"] is not None
    # the paired statistics against --reference (default EASY-SJBF)
    sec = doc["sections"][0]
    assert sec["reference"] == "EASY-SJBF"
    cell = sec["ratios"]["synthetic"]["FCFS+EASY"]
    assert {"geo_ratio", "ci_low", "ci_high", "wins", "windows", "verdict"} <= set(cell)
    assert {"mean_ratio", "mean_low", "mean_high", "eq_low", "eq_high", "margin"} <= set(cell)
    assert cell["verdict"] == "inconclusive"  # one window: no interval, no claim
    assert cell["ci_low"] <= cell["geo_ratio"] <= cell["ci_high"] and cell["windows"] == 1
    md = (tmp_path / "t4" / "table4.md").read_text()
    assert "Paired geometric-mean ratio of AVEbsld vs EASY-SJBF" in md
    head = (tmp_path / "t4" / "table4.csv").read_text().splitlines()[0]
    assert head.endswith(
        ",method,geo_ratio,ci_low,ci_high,mean_ratio,mean_low,mean_high,eq_low,eq_high,margin,"
        "wins,verdict"
    )
    assert plots_main(["table", str(tmp_path / "t4" / "table4.json"),
                       "--out", str(tmp_path / "b.png")]) == 0  # fmt: skip
    _png(tmp_path / "b.png")
    assert plots_main(["compare", str(tmp_path / "t4" / "lublin-default"),
                       "--out", str(tmp_path / "re")]) == 0  # fmt: skip
    _png(tmp_path / "re" / "bsld_cdf.png")


def test_plot_colours_and_groups(tmp_path):
    from hpcgym.evaluation import plots as P

    for n in (3, 12, 31):
        cols = P.distinct_colors(n)
        assert len({tuple(np.round(c, 6)) for c in cols}) == n  # no colour used twice
    per = {"EASY": [3.0, 4.0], "model": [2.0, 2.5], "SJBFAgent": [3.0, 3.5]}
    groups = {"model": P.AGENT_GROUP}
    assert list(P.method_colors(list(per), groups))[0] == "model"  # agents first
    _png(P.plot_window_boxplot(per, tmp_path / "b.png", groups=groups))
    jobs = {k: np.asarray(v) for k, v in per.items()}
    _png(P.plot_slowdown_cdf(jobs, tmp_path / "c.png", groups=groups))


def test_compare_tb_dir_of_the_run_continues_its_charts(tiny_model, tmp_path):
    """A model evaluated into the folder it was trained in is written into that run (the
    label ``agent``), at its card's training steps: the same charts."""
    pytest.importorskip("tensorboard")
    from eval.compare import main
    from hpcgym.evaluation.plots import read_scalars

    run = tmp_path / "run"
    run.mkdir()
    (run / "tiny.zip").write_bytes(tiny_model.read_bytes())
    _card(run / "tiny.zip")
    rc = main(
        ["--schedulers", "EASY-SJBF", "--agents", str(run / "tiny.zip"), "--windows", "2",
         "--length", "128", "--jobs", "1", "--no-progress", "--no-plots",
         "--out", str(tmp_path / "out"), "--tb-dir", str(run)]
    )  # fmt: skip
    assert rc == 0
    sc = read_scalars(run)
    assert sc["eval/avg_bsld"][0].tolist() == [128]  # the card's steps
    assert "eval/ratio_vs_EASY-SJBF_ci_high" in sc
    assert "eval/avg_bsld" in read_scalars(run / "EASY-SJBF")  # each method its own run
