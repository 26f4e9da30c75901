"""Trace registry, resolution order, downloads (local HTTP server and file://), load()."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import http.server
import json
import os
import socket
import threading

import numpy as np
import pytest
from conftest import require_trace

from hpcgym.workload import (
    TRACES,
    TraceChecksumError,
    TraceInfo,
    TraceNotFoundError,
    UnknownTraceError,
    Workload,
    clear_cache,
    fetch_trace,
    get_trace,
    load,
    read_swf,
    resolve_trace,
    sha256_uncompressed,
    trace_search_dirs,
)

SWF = "; MaxProcs: 8\n" + "".join(
    f"{i} {i * 10} -1 {5 + i} {1 + i % 8} -1 -1 -1 {30 + i} -1 1 1 1 1 0 -1 -1 -1\n"
    for i in range(1, 21)
)
SHA = hashlib.sha256(SWF.encode()).hexdigest()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Isolated cache and trace dirs, plus a registered fake trace 'Fake-1'."""
    cache = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    d1.mkdir()
    d2.mkdir()
    monkeypatch.setenv("HPCGYM_TRACE_DIR", os.pathsep.join([str(d1), str(d2)]))
    monkeypatch.delenv("HPCGYM_TRACE_URL_FAKE_1", raising=False)
    info = TraceInfo(
        "Fake-1", "fake.swf", "http://127.0.0.1:9/fake.swf.gz", 8, SHA, 20, "test trace"
    )
    monkeypatch.setitem(TRACES, "Fake-1", info)
    clear_cache()
    yield {"cache": cache / "hpcgym" / "traces", "d1": d1, "d2": d2, "info": info}
    clear_cache()


@pytest.fixture
def server(tmp_path):
    """A local HTTP server serving tmp_path/www; yields (base_url, www_dir)."""
    www = tmp_path / "www"
    www.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: D102 - silence request logs
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(www))
    )
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    httpd.shutdown()
    httpd.server_close()


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/fake.swf.gz"


# ---------------------------------------------------------------------- registry
def test_registry_contents():
    names = {"SDSC-SP2", "HPC2N", "CTC-SP2", "KTH-SP2", "SDSC-BLUE", "LANL-CM5", "CEA-Curie"}
    assert names | {"Lublin-1", "Lublin-2"} <= set(TRACES)
    assert TRACES["SDSC-SP2"].url == (
        "https://www.cs.huji.ac.il/labs/parallel/workload/l_sdsc_sp2/SDSC-SP2-1998-4.2-cln.swf.gz"
    )
    assert TRACES["Lublin-2"].url == (
        "https://raw.githubusercontent.com/DIR-LAB/deep-batch-scheduler/master/data/lublin_256_new2"
    )
    assert TRACES["CTC-SP2"].machine_size == 338 and TRACES["CTC-SP2"].jobs == 77_205
    for info in TRACES.values():
        assert len(info.sha256) == 64 and info.description and info.jobs > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        TRACES["HPC2N"].jobs = 1  # type: ignore[misc]


def test_get_trace_case_insensitive_and_by_file():
    assert get_trace("sdsc-sp2") is TRACES["SDSC-SP2"]
    assert get_trace("lublin_256.swf") is TRACES["Lublin-1"]
    assert get_trace("LUBLIN_256.SWF.GZ") is TRACES["Lublin-1"]


def test_unknown_name_lists_registered(env):
    with pytest.raises(UnknownTraceError) as ei:
        resolve_trace("NoSuchTrace")
    assert "SDSC-SP2" in str(ei.value) and "CEA-Curie" in str(ei.value)
    with pytest.raises(FileNotFoundError, match="no such file"):
        resolve_trace("missing/dir/x.swf")


@pytest.mark.traces
@pytest.mark.parametrize("name", list(TRACES))
def test_registered_hashes_match_local_files(name):
    info = TRACES[name]
    path = require_trace(name)  # verified through the cache ...
    assert sha256_uncompressed(path) == info.sha256  # ... and directly


# -------------------------------------------------------------------- resolution
def test_existing_path_is_returned(env, tmp_path):
    p = tmp_path / "any.swf"
    p.write_text(SWF)
    assert resolve_trace(p) == p
    assert resolve_trace(str(p)) == p


def test_search_order_and_gz(env):
    d1, d2 = env["d1"], env["d2"]
    (d2 / "fake.swf").write_text(SWF)
    assert resolve_trace("fake-1") == d2 / "fake.swf"
    (d1 / "fake.swf.gz").write_bytes(gzip.compress(SWF.encode()))
    assert resolve_trace("FAKE-1") == d1 / "fake.swf.gz"  # first directory wins
    labels = [label for _, label in trace_search_dirs()]
    assert labels[:2] == ["$HPCGYM_TRACE_DIR", "$HPCGYM_TRACE_DIR"]
    assert labels[-1] == "user cache"
    assert trace_search_dirs()[-1][0] == env["cache"]


def test_local_verification_is_cached(env, monkeypatch):
    p = env["d1"] / "fake.swf"
    p.write_text(SWF)
    resolve_trace("Fake-1")
    db = json.loads((env["cache"].parent / "verified.json").read_text())
    assert db[str(p.resolve())]["sha256"] == SHA
    import hpcgym.workload.traces as tr

    def boom(path):
        raise AssertionError("hashed again")

    monkeypatch.setattr(tr, "sha256_uncompressed", boom)
    assert resolve_trace("Fake-1") == p  # remembered: no re-hash
    os.utime(p, ns=(0, 0))  # changed mtime -> hashed again
    with pytest.raises(AssertionError, match="hashed again"):
        resolve_trace("Fake-1")


def test_local_mismatch_names_file(env):
    p = env["d2"] / "fake.swf"
    p.write_text(SWF.replace("; MaxProcs: 8", "; MaxProcs: 9"))
    with pytest.raises(TraceChecksumError) as ei:
        resolve_trace("Fake-1")
    assert str(p.resolve()) in str(ei.value) and SHA in str(ei.value)
    assert p.exists()  # a user's file is never deleted


def test_download_disabled_message(env):
    with pytest.raises(TraceNotFoundError) as ei:
        resolve_trace("Fake-1", download=False)
    msg = str(ei.value)
    assert "downloading is disabled" in msg and env["info"].url in msg


# --------------------------------------------------------------------- downloads
@pytest.mark.parametrize("gz", [True, False])
def test_download_http(env, server, gz):
    base, www = server
    name = "fake.swf.gz" if gz else "fake.swf"
    (www / name).write_bytes(gzip.compress(SWF.encode()) if gz else SWF.encode())
    p = resolve_trace("Fake-1", url=f"{base}/{name}")
    assert p == env["cache"] / name
    assert sha256_uncompressed(p) == SHA
    assert [f.name for f in env["cache"].iterdir()] == [name]  # no temp file left
    assert resolve_trace("Fake-1", url="http://127.0.0.1:1/unused") == p  # now local


def test_download_file_url_and_env_override(env, tmp_path, monkeypatch):
    src = tmp_path / "mirror" / "fake.swf.gz"
    src.parent.mkdir()
    src.write_bytes(gzip.compress(SWF.encode()))
    monkeypatch.setenv("HPCGYM_TRACE_URL_FAKE_1", src.as_uri())
    assert env["info"].env_var() == "HPCGYM_TRACE_URL_FAKE_1"
    p = resolve_trace("Fake-1")
    assert p == env["cache"] / "fake.swf.gz"
    w = load("fake-1")
    assert w.name == "Fake-1" and len(w) == 20 and w.machine_size == 8


def test_download_hash_mismatch_deletes(env, server):
    base, www = server
    (www / "fake.swf").write_text(SWF + "1 1 -1 1 1 -1 -1 -1 -1 -1 1 1 1 1 0 -1 -1 -1\n")
    with pytest.raises(TraceChecksumError, match="file was deleted"):
        resolve_trace("Fake-1", url=f"{base}/fake.swf")
    assert not env["cache"].exists() or not any(env["cache"].iterdir())


def test_download_truncated_gzip_deleted(env, server):
    base, www = server
    data = gzip.compress(SWF.encode())
    (www / "fake.swf.gz").write_bytes(data[:-12])
    with pytest.raises(TraceChecksumError, match="corrupt"):
        resolve_trace("Fake-1", url=f"{base}/fake.swf.gz")
    assert not any(env["cache"].iterdir())


def test_offline_error_message(env):
    url = closed_port_url()
    with pytest.raises(TraceNotFoundError) as ei:
        resolve_trace("Fake-1", url=url)
    msg = str(ei.value)
    assert isinstance(ei.value, FileNotFoundError)
    assert url in msg and "fake.swf or fake.swf.gz" in msg and "HPCGYM_TRACE_DIR" in msg
    for d in (env["d1"], env["d2"], env["cache"]):
        assert str(d) in msg
    assert not any(env["cache"].iterdir())


def test_http_404(env, server):
    base, _ = server
    with pytest.raises(TraceNotFoundError, match=r"download failed \(HTTP 404"):
        resolve_trace("Fake-1", url=f"{base}/nothing.gz")


def test_corrupt_cache_copy_is_replaced(env, tmp_path):
    env["cache"].mkdir(parents=True)
    bad = env["cache"] / "fake.swf"
    bad.write_text("; MaxProcs: 8\n")
    src = tmp_path / "fake.swf"
    src.write_text(SWF)
    with pytest.warns(UserWarning, match="deleting it"):
        p = resolve_trace("Fake-1", url=src.as_uri())
    assert p == bad and sha256_uncompressed(p) == SHA


def test_fetch_trace(env, tmp_path, server):
    base, www = server
    (www / "fake.swf.gz").write_bytes(gzip.compress(SWF.encode()))
    dest = tmp_path / "dest"
    p = fetch_trace("fake-1", dest=dest, url=f"{base}/fake.swf.gz")
    assert p == dest / "fake.swf.gz"
    mtime = p.stat().st_mtime_ns
    assert fetch_trace("Fake-1", dest=dest, url="http://127.0.0.1:1/x") == p  # kept
    p2 = fetch_trace("Fake-1", dest=dest, url=f"{base}/fake.swf.gz", force=True)
    assert p2 == p and p.stat().st_mtime_ns >= mtime
    with pytest.raises(UnknownTraceError):
        fetch_trace("nope")


# -------------------------------------------------------------------------- load
def test_load_variants_and_cache(env, tmp_path):
    (env["d1"] / "fake.swf").write_text(SWF)
    a = load("Fake-1")
    assert load("fake-1") is a  # cached in-process
    assert a.name == "Fake-1" and len(a) == 20
    with pytest.raises(ValueError, match="read-only"):
        a.runtime[0] = 1.0
    b = load("Fake-1", machine_size=16)
    assert b is not a and b.machine_size == 16
    p = tmp_path / "file.swf.gz"
    p.write_bytes(gzip.compress(SWF.encode()))
    c = load(p)
    assert c.name == "file" and len(c) == 20 and load(str(p)) is c
    assert load(c) is c
    assert load(c, machine_size=32).machine_size == 32
    with pytest.raises(TypeError, match="unexpected keyword"):
        load(p, bogus=1)
    w = load(p, lenient=True)
    assert w.report.skipped_malformed == 0


def test_load_rereads_changed_file(env, tmp_path):
    p = tmp_path / "f.swf"
    p.write_text(SWF)
    a = load(p)
    p.write_text(SWF + "99 999 -1 5 1 -1 -1 -1 9 -1 1 1 1 1 0 -1 -1 -1\n")
    os.utime(p, ns=(10**18, 10**18))
    assert len(load(p)) == len(a) + 1


def test_load_synthetic():
    pytest.importorskip("hpcgym.workload.lublin", reason="lublin.py not written yet")
    w = load()
    assert isinstance(w, Workload) and len(w) > 0 and load("synthetic") is w
    g = load("synthetic", machine_size=128, n_jobs=500, seed=1)
    assert g.machine_size == 128 and len(g) == 500
    assert load("synthetic", machine_size=128, n_jobs=500, seed=1) is g


@pytest.mark.traces
def test_load_registered_real_trace():
    path = require_trace("Lublin-1")
    w = load("lublin-1")
    assert w.name == "Lublin-1" and len(w) == 10_000 and w.machine_size == 256
    np.testing.assert_array_equal(w.submit, read_swf(path).submit)


def test_default_workload_holds_the_default_evaluations_side_by_side():
    """Every split of the default workload holds its default windows without overlap:
    validation 10 x 1,024 (training's evaluation) and 30 x 256 (the fast preset's), test
    30 x 1,024 (eval/'s default)."""
    from hpcgym.workload import split_range

    n = len(load(None))
    size = {s: -np.subtract(*split_range(n, s)) for s in ("train", "validation", "test")}
    assert n == 200_000 and size == {"train": 126_000, "validation": 14_000, "test": 60_000}
    assert size["validation"] >= max(10 * 1024, 30 * 256) and size["test"] >= 30 * 1024


def test_the_10000_job_workload_is_the_former_default():
    """``synthetic:n_jobs=10000`` is job for job the 10,000-job default workload of earlier
    versions (the golden outputs and several tests were recorded on it): the digest of its
    columns is the one recorded from that default."""
    w = load("synthetic:n_jobs=10000")
    h = hashlib.sha256()
    for col in ("submit", "runtime", "procs", "request", "user", "queue"):
        h.update(np.ascontiguousarray(getattr(w, col)).tobytes())
    assert (len(w), w.machine_size, h.hexdigest()[:16]) == (10_000, 256, "79d6520e6a409d7c")
    assert load("synthetic", n_jobs=10_000) is w


def test_trace_spec_names_of_the_synthetic_workload():
    from hpcgym.workload import load, trace_spec

    for name in (None, "synthetic", "none", " Synthetic ", "NONE"):
        assert trace_spec(name) is None
        assert load(name) is load(None)
    assert trace_spec("SDSC-SP2") == "SDSC-SP2"


def test_named_generated_workload():
    from hpcgym.cli.errors import UsageError, check_trace_name
    from hpcgym.workload import synthetic_params

    name = (
        "Synthetic:job_types=false, request_model=none,load=0.9,seed=3,n_jobs=400,"
        "max_log_runtime=11.5"
    )
    assert synthetic_params(name) == {
        "job_types": False,
        "request_model": "none",  # a word, not None
        "load": 0.9,
        "seed": 3,
        "n_jobs": 400,
        "max_log_runtime": 11.5,
    }
    w = load(name)
    assert load(name) is w and len(w) == 400 and w.machine_size == 256
    assert w.offered_load == pytest.approx(0.9, rel=1e-3)
    np.testing.assert_array_equal(w.request, w.runtime)  # request_model=none
    same = load(
        "synthetic",
        job_types=False,
        request_model="none",
        load=0.9,
        seed=3,
        n_jobs=400,
        max_log_runtime=11.5,
    )
    np.testing.assert_array_equal(w.submit, same.submit)
    assert len(load(name, n_jobs=300)) == 300  # keyword arguments win
    native = load("synthetic:load=none,n_jobs=300,seed=1")  # none: the model's own rate
    assert native.offered_load != pytest.approx(0.85, rel=1e-3)
    for plain in ("SDSC-SP2", "synthetic", None, "lublin.swf"):
        assert synthetic_params(plain) is None
    check_trace_name(name)
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        synthetic_params("synthetic:load")
    with pytest.raises(ValueError, match="seed is given twice"):
        synthetic_params("synthetic:seed=1,seed=2")
    with pytest.raises(ValueError, match="unknown Lublin parameter.*'lod'.*valid: job_types"):
        load("synthetic:lod=1.0,n_jobs=100")
    with pytest.raises(UsageError, match="--trace synthetic:lod=1.0: unknown Lublin parameter"):
        check_trace_name("synthetic:lod=1.0")
