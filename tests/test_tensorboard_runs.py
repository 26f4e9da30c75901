"""TensorBoard comparisons: every method its own run with the same tags, the heuristics'
runs written once per trace and windows, the HParams sessions, the screenshot script, and
the final table of a training run (caption, tied windows, clairvoyant mark)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[1]

from hpcgym.evaluation import tensorboard as T  # noqa: E402
from hpcgym.sim.schedulers import is_clairvoyant  # noqa: E402

ROWS = {
    "EASY": [{"avg_bsld": 4.0, "avg_wait": 100.0}, {"avg_bsld": 9.0, "avg_wait": 300.0}],
    "EASY-AR": [{"avg_bsld": 2.0, "avg_wait": 50.0}, {"avg_bsld": 3.0, "avg_wait": 90.0}],
    "EASY-SJBF": [{"avg_bsld": 4.0, "avg_wait": 90.0}, {"avg_bsld": 6.0, "avg_wait": 200.0}],
}
REF = [4.0, 6.0]


def _accumulator(run: Path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    return ea


def _scalars(run: Path) -> dict[str, list[tuple[int, float]]]:
    ea = _accumulator(run)
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


def _write(folder: Path, step: int, calls: list[str] | None = None) -> Path:
    def rows(name: str):
        if calls is not None:
            calls.append(name)
        return ROWS[name]

    return T.write_baseline_runs(
        folder,
        list(ROWS),
        rows,
        step=step,
        reference="EASY-SJBF",
        reference_values=REF,
        hparams={"trace": "synthetic", "eval_split": "validation"},
    )


def test_is_clairvoyant_and_run_labels() -> None:
    assert [is_clairvoyant(n) for n in ("EASY-AR", "SJF+EASY-AR", "LOOKAHEAD1-CLAIRVOYANT")] == [
        True
    ] * 3
    assert not any(is_clairvoyant(n) for n in ("EASY", "EASY-SJBF", "EASY++", "agent", "x y"))
    assert T.run_label("EASY-AR") == "EASY-AR_clairvoyant"
    assert T.run_label("SJF+EASY") == "SJF+EASY"
    assert T.ratio_tag("SJF+EASY-SJBF") == "eval/ratio_vs_SJF+EASY-SJBF"
    assert T.ratio_tag("EASY-SJBF", "wins", trace="HPC2N") == "eval/HPC2N/wins_vs_EASY-SJBF"
    with pytest.raises(ValueError, match="valid: ratio, ci_low"):
        T.ratio_tag("EASY", "geo")
    key = T.windows_key("validation", [10, 20], 64, policy="FCFS")
    assert key.startswith("validation-2x64-") and key == T.windows_key(
        "validation", (10, 20), 64, policy="FCFS"
    )
    assert key != T.windows_key("validation", [10, 20], 64, policy="SJF")


def test_baseline_runs_written_once_as_documented(tmp_path: Path) -> None:
    folder = T.baselines_folder(tmp_path, "synthetic", "validation-2x64-abc")
    assert folder == tmp_path / "baselines" / "synthetic-validation-2x64-abc"
    calls: list[str] = []
    _write(folder, 128, calls)
    assert calls == list(ROWS)
    runs = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert runs == ["EASY", "EASY-AR_clairvoyant", "EASY-SJBF"]
    sc = _scalars(folder / "EASY")
    assert sc["eval/avg_bsld"] == [(0, 6.5), (128, 6.5)]  # a flat line from step 0
    assert sc["eval/avg_wait"] == [(0, 200.0), (128, 200.0)]
    assert sc["eval/wins_vs_EASY-SJBF"][0][1] == 0.0
    assert sc["eval/mean_ratio_vs_EASY-SJBF"][0][1] == pytest.approx(6.5 / 5.0)
    assert sc["eval/ratio_vs_EASY-SJBF"][0][1] == pytest.approx((1.0 * 1.5) ** 0.5, rel=1e-6)
    assert {"eval/ratio_vs_EASY-SJBF_ci_low", "eval/ratio_vs_EASY-SJBF_ci_high"} <= set(sc)
    assert _scalars(folder / "EASY-SJBF")["eval/ratio_vs_EASY-SJBF"][0][1] == pytest.approx(1.0)
    # HParams: a session per run, no experiment summary (it would hide the other runs)
    ea = _accumulator(folder / "EASY-AR_clairvoyant")
    hp = ea.PluginTagToContent("hparams")
    assert "_hparams_/session_start_info" in hp and "_hparams_/experiment" not in hp
    from tensorboard.plugins.hparams import plugin_data_pb2

    ssi = plugin_data_pb2.HParamsPluginData.FromString(hp["_hparams_/session_start_info"])
    h = ssi.session_start_info.hparams
    assert h["method"].string_value == "EASY-AR" and h["clairvoyant"].string_value == "true"
    assert h["kind"].string_value == "heuristic" and h["trace"].string_value == "synthetic"
    # reused: an earlier step computes and rewrites nothing
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("events.out.tfevents*")}
    calls.clear()
    _write(folder, 64, calls)
    assert calls == [] and before == {
        p: p.stat().st_mtime_ns for p in folder.rglob("events.out.tfevents*")
    }
    # a longer training extends the lines; still one events file per run
    _write(folder, 512, calls)
    assert calls == []
    assert _scalars(folder / "EASY")["eval/avg_bsld"] == [(0, 6.5), (512, 6.5)]
    assert len(list((folder / "EASY").glob("events.out.tfevents*"))) == 1
    assert not [p for p in folder.iterdir() if ".tmp-" in p.name]


def test_final_table_explains_rows_ties_and_clairvoyant() -> None:
    from train.summary import final_table

    final = [{"avg_bsld": v} for v in (1.0, 5.0, 8.0)]
    best = [{"avg_bsld": v} for v in (1.0, 4.0, 9.0)]
    summary = {
        "trace": "SDSC-SP2",
        "jobs": 1000,
        "args": {"train_fraction": 0.7, "validation_fraction": 0.1},
        "eval": {
            "split": "validation",
            "length": 50,
            "starts": [630, 650, 670],
            "reference": "EASY-SJBF",
            "final": {"timesteps": 300, "per_window": final, "paired": None},
            "best": {"timesteps": 200, "per_window": best, "paired": None},
            "history": [{}, {}, {}],
        },
        "baselines": {
            "EASY": {"per_window": [1.0, 6.0, 7.0]},
            "EASY-AR": {"per_window": [1.0, 2.0, 3.0]},
        },
        "skipped_baselines": {},
        "sessions": [
            {
                "timesteps_start": 0,
                "timesteps_end": 300,
                "learn_time_s": 1.0,
                "rollout_time_s": 0.5,
                "rollout_steps_per_s": 600.0,
                "update_time_s": 0.5,
                "eval_time_s": 0.1,
            }
        ],
        "paths": {"run_dir": "runs/x"},
    }
    text = final_table(summary, "FCFS", "guarded")
    assert "jobs 630..699 of 1000" in text  # the validation split
    assert "[a:b] holds jobs a..b-1" in text
    assert "EASY-AR\u2020" in text and "\u2020 clairvoyant (EASY-AR)" in text
    assert "chosen as the lowest mean of 3 evaluations on THESE windows" in text
    assert "(chosen on these windows)" in text
    # the window where every column is 1.00 is not listed, but counted and in the mean
    assert "[630:680]" not in text and "[650:700]" in text
    assert "1 of 3 windows where every column shows the same value" in text
    mean_row = next(line for line in text.splitlines() if line.strip().startswith("mean"))
    assert mean_row.split()[1] == f"{(1 + 5 + 8) / 3:.2f}"


def test_screenshot_script_writes_a_png(tmp_path: Path) -> None:
    from bench.tensorboard_screenshot import find_browser, screenshot

    if find_browser() is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    from torch.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "runs"
    _write(T.baselines_folder(logdir, "synthetic", "k"), 300)
    for i, name in enumerate(("agent-a", "agent-b")):
        w = SummaryWriter(str(logdir / name))
        for step in (0, 100, 200, 300):
            w.add_scalar("eval/avg_bsld", 7.0 - i - step / 100, step)
        w.close()
    png = screenshot(logdir, tmp_path / "shot.png", runs=5)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert shutil.which("true")  # nothing left running: screenshot() stopped TensorBoard
