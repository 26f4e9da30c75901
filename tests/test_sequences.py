"""Windows, the train/test time split and the seeded window sampler."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hpcgym.workload import Window, WindowSampler, Workload, clear_cache, split_range


def make_workload(n: int, name: str = "w", source: str = "") -> Workload:
    ar = np.arange(n)
    return Workload(
        name=name,
        machine_size=8,
        job_id=ar + 1,
        submit=ar * 10.0,
        runtime=np.full(n, 5.0),
        procs=np.ones(n, dtype=np.int64),
        request=np.full(n, 9.0),
        user=ar % 3,
        group=ar * 0 - 1,
        executable=ar * 0 - 1,
        queue=ar * 0,
        source=source,
    )


def test_split_range_defaults():
    # training range [0, 7000): its last 10% (700 jobs) is the validation split
    assert split_range(10_000, "train") == (0, 6_300)
    assert split_range(10_000, "validation") == (6_300, 7_000)
    assert split_range(10_000, "test") == (7_000, 10_000)
    assert split_range(10_000, "all") == (0, 10_000)
    # round(0.7 * 54034) = 37824; round(0.1 * 37824) = 3782
    assert split_range(54_034, "train") == (0, 34_042)
    assert split_range(54_034, "validation") == (34_042, 37_824)
    assert split_range(20, "train", train_fraction=0.5) == (0, 9)
    assert split_range(10, "train", 0.5, validation_fraction=0.0) == (0, 5)
    assert split_range(10, "validation", 0.5, validation_fraction=0.0) == (5, 5)
    lo, hi = split_range(1_001, "train", 0.25, validation_fraction=0.0)
    assert (lo, hi) == (0, 250) and split_range(1_001, "test", 0.25) == (250, 1_001)


@pytest.mark.parametrize("n", [1, 7, 99, 1000, 54_034, 295_540])
@pytest.mark.parametrize("f", [0.1, 0.7, 0.9])
@pytest.mark.parametrize("vf", [0.0, 0.1, 0.5])
def test_split_partitions_jobs(n, f, vf):
    tr = split_range(n, "train", f, vf)
    va = split_range(n, "validation", f, vf)
    te = split_range(n, "test", f, vf)
    assert tr[0] == 0 and tr[1] == va[0] and va[1] == te[0] and te[1] == n
    assert split_range(n, "all", f, vf) == (0, n)


def test_validation_never_overlaps_training_windows():
    n, length = 10_000, 256
    tr = WindowSampler(n, length, "train", seed=0)
    va = WindowSampler(n, length, "validation", seed=0)
    assert tr.sample_many(2_000).max() + length <= va.lo
    assert va.sample_many(2_000).max() + length <= split_range(n, "test")[0]
    with pytest.raises(ValueError, match="validation_fraction=0.1"):
        WindowSampler(n, 1_024, "validation")  # 700 jobs: too short for 1024-job windows


def test_split_errors():
    with pytest.raises(ValueError, match="valid: train, validation, test, all"):
        split_range(100, "dev")
    with pytest.raises(ValueError, match="validation_fraction"):
        split_range(100, "train", 0.7, 1.0)
    with pytest.raises(ValueError, match="train_fraction"):
        split_range(100, "train", 1.0)
    with pytest.raises(ValueError, match="train_fraction"):
        split_range(100, "train", float("nan"))


def test_sampler_never_crosses_boundary():
    n, length = 1_000, 128
    tr = WindowSampler(n, length, "train", seed=0)
    te = WindowSampler(n, length, "test", seed=0)
    a = tr.sample_many(5_000)
    b = te.sample_many(5_000)
    # train [0, 630), validation [630, 700), test [700, 1000)
    assert a.min() >= 0 and (a + length).max() <= 630
    assert b.min() >= 700 and (b + length).max() <= 1_000
    # the extreme starts are reachable
    assert a.min() == 0 and a.max() == 630 - length
    assert b.min() == 700 and b.max() == 1_000 - length
    np.testing.assert_array_equal(tr.valid_starts, np.arange(0, 630 - length + 1))
    assert tr.n_starts == 630 - length + 1


def test_sampler_is_seeded():
    a = WindowSampler(5_000, 64, seed=42)
    b = WindowSampler(5_000, 64, seed=42)
    assert [a.sample() for _ in range(10)] == [b.sample() for _ in range(10)]
    np.testing.assert_array_equal(a.sample_many(20), b.sample_many(20))
    c = WindowSampler(5_000, 64, seed=43)
    assert not np.array_equal(WindowSampler(5_000, 64, seed=42).sample_many(20), c.sample_many(20))
    g = np.random.default_rng(7)
    d = WindowSampler(5_000, 64, seed=g)
    assert d.rng is g


def test_evenly_spaced():
    s = WindowSampler(1_000, 100, "test", seed=0)  # starts 700 .. 900
    np.testing.assert_array_equal(s.evenly_spaced(3), [700, 800, 900])
    np.testing.assert_array_equal(s.evenly_spaced(1), [700])
    e = s.evenly_spaced(7)
    assert e[0] == 700 and e[-1] == 900 and np.all(np.diff(e) > 0)
    assert len(s.evenly_spaced(201)) == 201
    with pytest.raises(ValueError, match="201 valid starts"):
        s.evenly_spaced(202)
    with pytest.raises(ValueError):
        s.evenly_spaced(0)
    # deterministic: does not consume the generator
    t = WindowSampler(1_000, 100, "test", seed=0)
    s.evenly_spaced(5)
    assert s.sample() == t.sample()


def test_split_shorter_than_window():
    with pytest.raises(ValueError, match=r"'test' split .* has 300 jobs .* window length 301"):
        WindowSampler(1_000, 301, "test")
    WindowSampler(1_000, 300, "test")  # exactly fits
    with pytest.raises(ValueError, match="positive"):
        WindowSampler(1_000, 0)


def test_window_dataclass(tmp_path):
    w = Window("SDSC-SP2", 10, 5)
    assert w.stop == 15 and str(w) == "SDSC-SP2[10:15]"
    assert w == Window("SDSC-SP2", 10, 5) and hash(w) == hash(Window("SDSC-SP2", 10, 5))
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.start = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        Window("x", -1, 5)
    wl = make_workload(50)
    cut = w.of(wl)
    assert cut.job_id.tolist() == [11, 12, 13, 14, 15] and cut.offset == 10


def test_window_reproduces_from_file(tmp_path):
    from hpcgym.workload import write_swf

    p = write_swf(make_workload(100), tmp_path / "t.swf")
    clear_cache()
    from hpcgym.workload import load

    wl = load(p)
    s = WindowSampler(wl, 16, "test", seed=1)
    assert s.trace == str(p)  # a file-backed workload is addressed by its path
    win = s.window()
    assert 70 <= win.start <= 100 - 16
    again = win.workload()
    np.testing.assert_array_equal(again.job_id, wl.job_id[win.start : win.stop])
    with pytest.raises(ValueError, match="outside the 'test' split"):
        s.window(0)
    assert s.window(70) == Window(str(p), 70, 16)


def test_window_trace_name_for_registered_trace():
    wl = make_workload(100, name="SDSC-SP2", source="/somewhere/file.swf")
    assert WindowSampler(wl, 10).window(5).trace == "SDSC-SP2"
    with pytest.raises(ValueError, match="no trace name"):
        WindowSampler(100, 10).window(5)


# ------------------------------------------------------------ load-weighted draws
def _loaded_workload() -> Workload:
    """20 jobs, 1 s apart; jobs 10..19 run 4x longer: windows of the second half carry
    4x the work of the first half's."""
    w = make_workload(20)
    runtime = np.where(np.arange(20) >= 10, 20.0, 5.0)
    submit = np.arange(20) * 1.0
    submit[15:17] = 15.0  # a zero-span window of 2 jobs: [15, 17)
    return dataclasses.replace(w, runtime=runtime, submit=submit)


def test_window_loads_equal_offered_load_of_each_window():
    from hpcgym.workload.sequences import window_loads

    w = _loaded_workload()
    for length in (2, 3, 7):
        loads = window_loads(w, length, 2, 18)
        starts = range(2, 18 - length + 1)
        assert loads.shape == (len(starts),)
        for i, s in enumerate(starts):
            cut = w.window(s, length)
            expected = cut.offered_load if cut.span > 0 else np.inf
            assert loads[i] == pytest.approx(expected, rel=1e-12)
    assert np.isinf(window_loads(w, 2)[15])  # jobs 15 and 16: submitted together


def test_load_weighting_zero_is_the_uniform_draw_call_for_call():
    w = _loaded_workload()
    s = WindowSampler(w, 4, "all", load_weighting=0.0)
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert [s.draw(a) for _ in range(50)] == [int(b.integers(0, 17)) for _ in range(50)]
    u = WindowSampler(w, 4, "all", seed=9, load_weighting=0)
    assert u.sample_many(30).tolist() == np.random.default_rng(9).integers(0, 17, 30).tolist()


def test_load_weighting_draws_in_proportion_to_capped_load_power():
    from hpcgym.workload.sequences import window_loads

    w = _loaded_workload()
    length, p = 3, 2.0
    s = WindowSampler(w, length, "all", seed=0, load_weighting=p)
    loads = window_loads(w, length)
    cap = np.percentile(loads[np.isfinite(loads)], 99)
    weights = np.minimum(loads, cap) ** p
    expected = weights / weights.sum()
    draws = s.sample_many(200_000)
    freq = np.bincount(draws, minlength=len(loads)) / len(draws)
    np.testing.assert_allclose(freq, expected, atol=0.004)
    # heavier windows are drawn more often; single draws follow the same law
    assert expected[-1] > 3 * expected[0]
    rng = np.random.default_rng(1)
    singles = np.bincount([s.draw(rng) for _ in range(20_000)], minlength=len(loads))
    np.testing.assert_allclose(singles / 20_000, expected, atol=0.015)
    # seeded: the same draws again
    again = WindowSampler(w, length, "all", seed=0, load_weighting=p).sample_many(200_000)
    assert np.array_equal(draws, again)


def test_load_weighting_errors():
    w = _loaded_workload()
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="load_weighting must be a finite number >= 0"):
            WindowSampler(w, 4, load_weighting=bad)
    with pytest.raises(ValueError, match="needs the workload"):
        WindowSampler(20, 4, load_weighting=1.0)
