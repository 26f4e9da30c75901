"""``hpcgym traces ...`` through hpcgym.cli.main (fast) and one subprocess smoke test."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_trace

from hpcgym.cli import main
from hpcgym.workload import TRACES, TraceInfo, clear_cache, read_swf

ROOT = Path(__file__).resolve().parents[1]

SWF = (
    "; MaxNodes: 16 (test machine)\n; UnixStartTime: 1000\n"
    "1 0 -1 100 4 -1 -1 4 200 -1 1 3 1 1 0 -1 -1 -1\n"
    "2 10 -1 0 4 -1 -1 4 200 -1 1 3 1 1 0 -1 -1 -1\n"
    "3 20 -1 50 -1 -1 -1 32 -1 -1 1 4 1 1 0 -1 -1 -1\n"
    "4 30 -1 300 2 -1 -1 2 100 -1 1 5 1 1 0 -1 -1 -1\n"
)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def swf(tmp_path) -> Path:
    p = tmp_path / "small.swf"
    p.write_text(SWF)
    return p


def test_info_text(swf, capsys):
    assert main(["traces", "info", str(swf)]) == 0
    out = capsys.readouterr().out
    assert "machine size:   16 processors" in out
    assert "jobs kept:      3" in out
    assert "dropped  runtime <= 0" in out and "patched  procs clipped to machine size" in out
    assert re.search(r"^  dropped  runtime <= 0 +1$", out, re.M)
    assert re.search(r"^  dropped  procs <= 0 +0$", out, re.M)
    assert re.search(r"^  patched  procs clipped to machine size +1$", out, re.M)
    assert "offered load" in out and "time span" in out
    # every wait of SWF is -1: no recorded schedule in the kept jobs
    assert "recorded waits: 0 of 3 jobs (no recorded schedule" in out


def test_info_counts_recorded_waits(tmp_path, capsys):
    p = tmp_path / "waits.swf"
    lines = SWF.splitlines(keepends=True)
    lines[2] = lines[2].replace("1 0 -1 100", "1 0 35 100", 1)  # job 1 waited 35 s
    p.write_text("".join(lines))
    assert main(["traces", "info", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recorded_waits"] == 1
    assert read_swf(p).recorded_wait.tolist()[0] == 35.0
    assert main(["traces", "info", "synthetic"]) == 0
    assert "recorded waits: none" in capsys.readouterr().out


def test_info_json(swf, capsys):
    assert main(["traces", "info", str(swf), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["machine_size"] == 16 and info["jobs"] == 3 and info["records"] == 4
    assert info["dropped"] == {"procs <= 0": 0, "runtime <= 0": 1, "submit < 0": 0}
    assert info["patched"]["procs from requested"] == 1
    assert info["patched"]["request from runtime"] == 1
    assert info["patched"]["request raised to runtime"] == 1
    assert info["patched"]["procs clipped to machine size"] == 1
    assert info["runtime"]["max"] == 300 and info["procs"]["max"] == 16
    assert info["users"] == 3


def test_info_machine_size_and_lenient(swf, capsys):
    assert main(["traces", "info", str(swf), "--json", "--machine-size", "64"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["machine_size"] == 64 and info["patched"]["procs clipped to machine size"] == 0
    swf.write_text(SWF + "5 40 -1 oops\n")
    assert main(["traces", "info", str(swf)]) == 2
    err = capsys.readouterr().err
    assert f"{swf}:7:" in err and "--lenient" in err
    assert main(["traces", "info", str(swf), "--lenient", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped_malformed"] == 1


def test_info_errors(capsys, tmp_path):
    assert main(["traces", "info", "NoSuchTrace"]) == 2
    err = capsys.readouterr().err
    assert "unknown trace" in err and "SDSC-SP2" in err
    empty = tmp_path / "e.swf"
    empty.write_text("")
    assert main(["traces", "info", str(empty)]) == 2
    assert "empty file" in capsys.readouterr().err


def test_info_synthetic(capsys):
    pytest.importorskip("hpcgym.workload.lublin", reason="lublin.py not written yet")
    assert main(["traces", "info", "synthetic", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["machine_size"] == 256 and info["jobs"] == 200_000


def test_list(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HPCGYM_TRACE_DIR", str(tmp_path))
    (tmp_path / "lublin_256.swf").write_text(SWF)  # found (list does not hash)
    assert main(["traces", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("SDSC-SP2", "CEA-Curie", "Lublin-2"):
        assert name in out
    assert f"{tmp_path / 'lublin_256.swf'} ($HPCGYM_TRACE_DIR)" in out
    assert main(["traces", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["Lublin-1"]["local"] == str(tmp_path / "lublin_256.swf")
    assert rows["CTC-SP2"]["machine_size"] == 338 and rows["CTC-SP2"]["jobs"] == 77_205


def test_fetch_file_url(capsys, tmp_path, monkeypatch):
    sha = hashlib.sha256(SWF.encode()).hexdigest()
    info = TraceInfo("Cli-Fake", "clifake.swf", "http://127.0.0.1:9/x", 16, sha, 3, "t")
    monkeypatch.setitem(TRACES, "Cli-Fake", info)
    src = tmp_path / "src.swf.gz"
    src.write_bytes(gzip.compress(SWF.encode()))
    dest = tmp_path / "dest"
    assert main(["traces", "fetch", "cli-fake", "--dest", str(dest), "--url", src.as_uri()]) == 0
    assert capsys.readouterr().out.strip() == str(dest / "clifake.swf.gz")
    assert len(read_swf(dest / "clifake.swf.gz")) == 3
    # offline: clear error, exit code 2
    assert main(["traces", "fetch", "cli-fake", "--dest", str(tmp_path / "d2")]) == 2
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9/x" in err and "HPCGYM_TRACE_DIR" in err


def test_generate_lublin(capsys, tmp_path):
    pytest.importorskip("hpcgym.workload.lublin", reason="lublin.py not written yet")
    out = tmp_path / "gen.swf.gz"
    argv = ["traces", "generate", "lublin", "--jobs", "300", "--machine-size", "64"]
    assert main([*argv, "--seed", "3", "--load", "0.7", "-o", str(out)]) == 0
    assert "wrote 300 jobs" in capsys.readouterr().out
    w = read_swf(out)
    assert len(w) == 300 and w.machine_size == 64
    assert abs(w.offered_load - 0.7) < 1e-6
    assert all(v == 0 for v in w.report.dropped.values())
    assert w.report.patched["request from runtime"] == 0  # requests were written
    # same arguments, same file
    again = tmp_path / "again.swf.gz"
    main([*argv, "--seed", "3", "--load", "0.7", "-o", str(again)])
    assert again.read_bytes() == out.read_bytes()
    with pytest.raises(SystemExit):
        main([*argv, "--request-model", "bogus", "-o", str(out)])


def test_no_subcommand_prints_help(capsys):
    assert main(["traces"]) == 2
    assert "SUBCOMMAND" in capsys.readouterr().out


@pytest.mark.traces
def test_subprocess_smoke(tmp_path):
    require_trace("Lublin-1")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    r = subprocess.run(
        [sys.executable, "-m", "hpcgym", "traces", "info", "Lublin-1", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["jobs"] == 10_000 and info["machine_size"] == 256
    assert info["patched"]["request from runtime"] == 10_000
