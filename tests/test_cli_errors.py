"""Bad command lines (issue 15, part 4): one line on stderr, exit status 2, never a
traceback, never a silent ignore — for ``hpcgym`` and every ``eval/`` script.

Most cases call the commands' ``main(argv)`` in-process (fast); a few run them as real
subprocesses (``python -m hpcgym``, ``python eval/compare.py``) to check what a user sees.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpcgym.cli import main as hpcgym_main
from hpcgym.workload import clear_cache

ROOT = Path(__file__).resolve().parents[1]

#: A tiny SWF with one malformed job line (the 3rd) and one job dropped by cleaning.
BAD_SWF = (
    "; MaxNodes: 16\n"
    "1 0 -1 100 4 -1 -1 4 200 -1 1 3 1 1 0 -1 -1 -1\n"
    "2 10 -1 0 4 -1 -1 4 200 -1 1 3 1 1 0 -1 -1 -1\n"
    "3 20 -1 50 x -1 -1 4 60 -1 1 4 1 1 0 -1 -1 -1\n"
) + "".join(
    f"{i} {30 + 10 * i} -1 {100 + i} 2 -1 -1 2 400 -1 1 5 1 1 0 -1 -1 -1\n" for i in range(4, 40)
)


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def bad_swf(tmp_path) -> Path:
    p = tmp_path / "bad.swf"
    p.write_text(BAD_SWF)
    return p


def _eval_main(name: str):
    return importlib.import_module(f"eval.{name}").main


def _run(main, argv: list[str], capsys) -> str:
    """Run ``main(argv)``; assert exit status 2 and exactly one stderr line; return it."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors exit
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, f"{argv}: exit {code}, stderr {err!r}"
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0], f"{argv}: expected one stderr line, got {err!r}"
    assert "Traceback" not in err
    assert ": error: " in lines[0]
    return lines[0]


# ------------------------------------------------------------------ hpcgym simulate
@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--start", "999999"], ["--start 999999", "valid starts are 0..199999"]),
        (["--start", "-5"], ["--start -5", "0..199999"]),
        (["--jobs", "0"], ["--length 0", "1..200000"]),
        (["--length", "0"], ["--length 0", "1..200000"]),
        (["--start", "199000", "--length", "5000"], ["--length 5000", "1..1000"]),
        (["--scheduler", "EASY", "--policy", "SJF"], ["--scheduler EASY", "--policy SJF"]),
        (["--scheduler", "EASY", "--estimate", "magic"], ["--estimator magic"]),
        (["--estimator", "magic"], ["unknown estimator 'magic'", "request, actual"]),
        (["--policy", "XX"], ["unknown policy 'XX'", "FCFS"]),
        (["--backfill", "xx"], ["unknown backfill 'xx'", "easy"]),
        (["--scheduler", "NOPE"], ["unknown scheduler 'NOPE'", "EASY-SJBF"]),
        (["--starvation", "abc"], ["--starvation", "'auto'"]),
        (["--machine-size", "0"], ["--machine-size", "positive integer"]),
        (["--trace", "nope"], ["unknown trace 'nope'", "SDSC-SP2"]),
        (["--trace", "/no/such/file.swf"], ["/no/such/file.swf"]),
    ],
)
def test_simulate_errors(argv, needles, capsys):
    line = _run(hpcgym_main, ["simulate", *argv], capsys)
    assert line.startswith("hpcgym simulate: error: ")
    for n in needles:
        assert n in line


def test_simulate_reports_cleaning_and_lenient(bad_swf, capsys):
    line = _run(hpcgym_main, ["simulate", "--trace", str(bad_swf)], capsys)
    assert f"{bad_swf}:4" in line and "--lenient" in line  # the message's advice works:
    assert hpcgym_main(["simulate", "--trace", str(bad_swf), "--lenient", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    c = out["cleaning"]
    assert c["skipped_malformed"] == 1 and c["dropped"]["runtime <= 0"] == 1
    assert c["dropped_total"] == sum(c["dropped"].values()) and c["kept"] == out["jobs"]
    assert hpcgym_main(["simulate", "--trace", str(bad_swf), "--lenient"]) == 0
    text = capsys.readouterr().out
    assert "cleaning: kept 37 of 38 records; dropped 1 (runtime <= 0: 1)" in text
    assert "skipped 1 malformed lines (--lenient)" in text


# ------------------------------------------------------------------- hpcgym compare
@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--windows", "0"], ["--windows", "positive integer"]),
        (["--length", "0"], ["--length", "positive integer"]),
        (["--jobs", "0"], ["--jobs", "positive integer"]),
        (["--split", "xx"], ["--split xx", "valid: train, ", "test"]),
        (["--length", "99999"], ["'test' split", "fewer than the window length 99999"]),
        (["--starts", "999999", "--length", "10"], ["window start 999999", "0..199990"]),
        (["--starts", "5", "--windows", "3"], ["--starts", "--windows"]),
        (["--full-trace", "--windows", "2"], ["--full-trace", "--windows"]),
        (["--schedulers", "NOPE"], ["--schedulers NOPE", "unknown scheduler", "EASY-SJBF"]),
        (["--out", "/dev/null/x"], ["--out /dev/null/x", "cannot write"]),
    ],
)
def test_compare_errors(argv, needles, capsys):
    line = _run(hpcgym_main, ["compare", *argv], capsys)
    assert line.startswith("hpcgym compare: error: ")
    for n in needles:
        assert n in line


def test_compare_lenient(bad_swf, capsys):
    _run(hpcgym_main, ["compare", "--trace", str(bad_swf), "--length", "8"], capsys)
    argv = ["compare", "--trace", str(bad_swf), "--lenient", "--length", "8", "--windows", "2"]
    assert hpcgym_main([*argv, "--split", "all", "--schedulers", "EASY"]) == 0


def test_traces_info_errors(capsys):
    line = _run(hpcgym_main, ["traces", "info", "nope"], capsys)
    assert "unknown trace 'nope'" in line
    _run(hpcgym_main, ["traces", "info", "synthetic", "--machine-size", "-1"], capsys)


# ------------------------------------------------------------------ eval/compare.py
W = ["--windows", "1", "--length", "64", "--no-progress", "--no-plots", "--jobs", "1"]


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--out", "/dev/null/x", *W], ["--out /dev/null/x", "cannot write"]),
        (["--tb-dir", "/dev/null/x", *W], ["--tb-dir /dev/null/x", "cannot write"]),
        (["--schedulers", "NOPE"], ["--schedulers NOPE", "unknown scheduler", "EASY-SJBF"]),
        (["--agents", "nope"], ["--agents nope", "easy, sjbf"]),
        (["--reference", "NOPE"], ["--reference NOPE", "valid names"]),
        (["--vs", "NOPE", *W], ["--vs NOPE", "EASY-AR"]),
        (["--windows", "0"], ["--windows", "positive integer"]),
        (["--length", "-3"], ["--length", "positive integer"]),
        (["--split", "xx"], ["--split", "invalid choice"]),
        (["--seed", "x"], ["--seed", "'none'"]),
        (["--train-fraction", "2"], ["--train-fraction", "between 0 and 1"]),
        (["--trace", "nope"], ["--trace nope", "SDSC-SP2"]),
        (["--starts", "99999999"], ["window start 99999999", "valid starts are 0.."]),
        (["--starts", "5", "--seed", "3"], ["--starts", "--seed"]),
        (["--full-trace", "--windows", "3"], ["--full-trace", "--windows"]),
        (["--policy", "SJF", "--schedulers", "EASY"], ["--policy SJF", "no --agents"]),
        (["--tb-agent", "EASY"], ["--tb-agent", "--tb-dir"]),
        (["--jobs", "0"], ["--jobs", "positive integer"]),
        (["--tb-step", "-1"], ["--tb-step", ">= 0"]),
        (["--schedulers"], ["nothing to compare"]),
    ],
)
def test_eval_compare_errors(argv, needles, capsys, tmp_path):
    out = [] if "--out" in argv else ["--out", str(tmp_path / "out")]
    line = _run(_eval_main("compare"), [*argv, *out], capsys)
    assert line.startswith("python eval/compare.py: error: ")
    for n in needles:
        assert n in line


def test_eval_compare_lenient(bad_swf, tmp_path, capsys):
    main = _eval_main("compare")
    args = ["--trace", str(bad_swf), "--schedulers", "EASY", "--split", "all", *W]
    args[args.index("64")] = "8"
    line = _run(main, [*args, "--out", str(tmp_path / "a")], capsys)
    assert "--lenient" in line
    assert main([*args, "--lenient", "--out", str(tmp_path / "b")]) == 0


# ------------------------------------------------------------- eval/table4, table5
@pytest.mark.parametrize(
    ("name", "argv", "needles"),
    [
        ("table4", ["--traces", "nope"], ["--traces nope", "SDSC-SP2"]),
        ("table4", ["--extra", "NOPE"], ["--extra NOPE", "valid names"]),
        ("table4", ["--reference", "NOPE"], ["--reference NOPE"]),
        ("table4", ["--out", "/dev/null/x"], ["--out /dev/null/x", "cannot write"]),
        ("table4", ["--windows", "0"], ["--windows"]),
        ("table4", ["--split", "xx"], ["--split"]),
        ("table5", ["--policies", "XX"], ["--policies XX", "FCFS, SJF"]),
        ("table5", ["--traces", "nope"], ["--traces nope"]),
        ("table5", ["--length", "0"], ["--length"]),
        ("table5", ["--cards", "/no/card.json"], ["/no/card.json"]),
    ],
)
def test_eval_table_errors(name, argv, needles, capsys, tmp_path):
    if "--out" not in argv:
        argv = [*argv, "--out", str(tmp_path / "t")]
    line = _run(_eval_main(name), [*argv, "--no-progress", "--jobs", "1"], capsys)
    assert line.startswith(f"python eval/{name}.py: error: ")
    for n in needles:
        assert n in line


def test_eval_table_lenient(bad_swf, tmp_path, capsys):
    args = ["--traces", str(bad_swf), "--cards", "--windows", "1", "--length", "8"]
    args += ["--split", "all", "--extra", "--no-progress", "--no-plots", "--jobs", "1"]
    assert _eval_main("table4")([*args, "--lenient", "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()


# ----------------------------------------------------------- the other eval scripts
@pytest.mark.parametrize(
    ("name", "argv", "needles"),
    [
        ("noise_sweep", ["--trace", "nope"], ["--trace nope"]),
        ("noise_sweep", ["--policies", "XX"], ["--policies XX", "FCFS"]),
        ("noise_sweep", ["--jobs", "0"], ["--jobs"]),
        ("noise_sweep", ["--levels", "-1"], ["--levels", ">= 0"]),
        ("noise_sweep", ["--first-jobs", "0"], ["--first-jobs"]),
        (
            "noise_sweep",
            ["--trace", "synthetic", "--first-jobs", "99999999"],
            ["--first-jobs 99999999", "1..200000"],
        ),
        ("noise_sweep", ["--out", "/dev/null/x"], ["--out /dev/null/x"]),
        ("plots", ["compare", "/no/such/folder"], ["/no/such/folder/results.json"]),
        ("plots", ["training", "/no/such/run"], ["/no/such/run"]),
        ("plots", ["bogus"], ["invalid choice"]),
        ("results", ["--table4", "/no/such.json"], ["/no/such.json"]),
        ("results", ["--out", "/dev/null/x.md"], ["--out /dev/null/x.md"]),
        ("card", ["/no/such/run"], ["/no/such/run"]),
    ],
)
def test_other_eval_script_errors(name, argv, needles, capsys):
    line = _run(_eval_main(name), argv, capsys)
    assert line.startswith(f"python eval/{name}.py: error: ")
    for n in needles:
        assert n in line


def test_noise_sweep_lenient(bad_swf, tmp_path, capsys):
    main = _eval_main("noise_sweep")
    args = ["--trace", str(bad_swf), "--policies", "FCFS", "--levels", "0", "--seeds", "0"]
    args += ["--jobs", "1", "--no-progress", "--out", str(tmp_path)]
    _run(main, args, capsys)
    assert main([*args, "--lenient"]) == 0


# ------------------------------------------------------------ as a user sees it
@pytest.mark.parametrize(
    "cmd",
    [
        [sys.executable, "-m", "hpcgym", "simulate", "--start", "999999"],
        [sys.executable, "-m", "hpcgym", "simulate", "--scheduler", "EASY", "--policy", "SJF"],
        [sys.executable, "eval/compare.py", "--out", "/dev/null/x"],
        [sys.executable, "eval/table5.py", "--policies", "XX"],
    ],
)
def test_subprocess_one_line(cmd):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


def test_gzip_truncated_is_one_line(tmp_path, capsys):
    p = tmp_path / "t.swf.gz"
    p.write_bytes(gzip.compress(BAD_SWF.encode())[:40])
    line = _run(hpcgym_main, ["simulate", "--trace", str(p)], capsys)
    assert str(p) in line
