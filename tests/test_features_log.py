"""Tests of ``features="extended-log"``: the user history seeded from the trace's
accounting log (the recorded schedule, SWF field 3) before the window.

The seeded ``user_accuracy`` is recomputed here from the workload's columns and the
engine's own completion log; the history is shown to use only jobs the log has completed
by the window's first submission (changing any other job of the past changes nothing);
``"extended"`` is unchanged by a recorded schedule; and the recorded wait is read,
windowed and written by the SWF layer.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_features import _EngineLog, handmade, random_play

from hpcgym.envs import features as X
from hpcgym.envs import observation as FT
from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.sim.engine import EstimatorFeed
from hpcgym.workload.core import Workload
from hpcgym.workload.swf import read_swf, write_swf

ACC = FT.N_BASE_FEATURES + list(X.EXTENDED_COLUMNS).index("user_accuracy")
START = 120  # window start: 120 jobs of the trace's past before it


def with_log(w: Workload, seed: int = 1) -> Workload:
    """``w`` with a recorded schedule: random waits, a few of them unknown."""
    rng = np.random.default_rng(seed)
    wait = rng.exponential(4000.0, len(w)).round(0)
    wait[rng.random(len(w)) < 0.05] = np.nan
    return Workload(
        name=w.name,
        machine_size=w.machine_size,
        **{c: getattr(w, c) for c in ("job_id", "submit", "runtime", "procs", "request")},
        **{c: getattr(w, c) for c in ("user", "group", "executable", "queue")},
        meta=w.meta,
        recorded_wait=wait,
    )


def log_env(w: Workload, **kw: Any) -> BackfillEnv:
    kw.setdefault("window_length", 100)
    kw.setdefault("split", "all")
    kw.setdefault("reference", None)
    return BackfillEnv(trace=w, features="extended-log", **kw)


def logged_before(w: Workload, t0: float) -> np.ndarray:
    """Trace indices of the jobs the log shows completed by ``t0``, in the order of
    their recorded end (ties by index) — recomputed directly."""
    end = w.submit + w.recorded_wait + w.runtime
    done = [i for i in range(len(w)) if np.isfinite(end[i]) and end[i] <= t0]
    return np.array(sorted(done, key=lambda i: (end[i], i)), dtype=np.int64)


def test_seeded_history_equals_a_direct_computation() -> None:
    """user_accuracy = the mean of the user's last 4 ratios of (log completions by t0,
    then the episode's completions in the engine's order); the prior likewise."""
    w = with_log(handmade(n=260, gap=900.0))
    env = log_env(w, mode="free")
    state: dict[str, Any] = {}
    seen: list[tuple[float, float]] = []

    def check(env: BackfillEnv, obs: np.ndarray) -> None:
        sim = env.simulation
        if state.get("sim") is not sim:
            state.update(sim=sim, log=_EngineLog())
            state["feed"] = EstimatorFeed(state["log"])
            state["past"] = logged_before(w, float(sim.workload.submit[0]))
        state["feed"].predict(sim, 0, 0, np.zeros(0))
        past = state["past"]
        fin = START + np.array(state["log"].finished, dtype=np.int64)  # trace indices
        hist = np.concatenate((past, fin))
        ratio = np.clip(w.runtime / w.request, 0.0, 1.0)
        prior = float(np.mean(ratio[hist])) if len(hist) else 1.0
        cold_fin = fin
        for row, j in enumerate(env.candidate_jobs()):
            if j < 0:
                break
            u = w.user[START + j]
            mine = hist[w.user[hist] == u][-X.USER_HISTORY :] if u >= 0 else hist[:0]
            acc = float(np.mean(ratio[mine])) if len(mine) else prior
            assert abs(obs[row, ACC] - acc) < 2e-6, (sim.now, j)
            cold = cold_fin[w.user[cold_fin] == u] if u >= 0 else cold_fin[:0]
            seen.append((acc, float(len(cold))))

    assert random_play(env, 5, check, start=START) > 30
    # not vacuous: the log's history was there where the episode had none yet
    assert len(state["past"]) > 40
    assert any(c == 0 and a != 1.0 for a, c in seen)


def test_history_uses_only_jobs_the_log_completed_before_the_window() -> None:
    """Changing the past jobs that the log shows unfinished at t0 or has no wait for
    (their recorded wait and runtime) changes no observation; changing one that had
    finished does."""
    w = with_log(handmade(n=260, gap=900.0))
    t0 = float(w.submit[START])
    end = w.submit + w.recorded_wait + w.runtime
    later = np.flatnonzero(~(end <= t0))
    later = later[later < START]
    assert len(later) > 3  # some past jobs were still queued or running at t0

    def episode(wl: Workload) -> list[np.ndarray]:
        env = log_env(wl)
        obs, info = env.reset(seed=0, options={"start": START})
        out = [obs.copy()]
        for _ in range(60):
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            out.append(obs.copy())
            if done:
                break
        return out

    base = episode(w)
    changed = with_log(w)
    rt, rw = np.array(w.runtime), np.array(w.recorded_wait)
    # their recorded ends only move later (still after t0), their ratios change
    rt[later] = np.minimum(w.request[later], rt[later] * 1.5 + 1)
    rw[later] = rw[later] + 10.0  # an unknown wait (nan) stays unknown
    assert not np.array_equal(rt[later], w.runtime[later])
    changed.runtime, changed.recorded_wait = rt, rw
    for a, b in zip(base, episode(changed), strict=True):
        np.testing.assert_array_equal(a, b)
    # a job that had completed by t0 does enter the history
    done_past = logged_before(w, t0)
    rt2 = np.array(w.runtime)
    j = int(done_past[-1])
    rt2[j] = max(1.0, rt2[j] * 0.1)
    moved = with_log(w)
    moved.runtime = rt2
    assert any(not np.array_equal(a, b) for a, b in zip(base, episode(moved), strict=True))


def test_extended_is_unchanged_by_a_recorded_schedule() -> None:
    plain = handmade()
    logged = with_log(plain)
    kw = {"window_length": 100, "split": "all", "reference": None, "features": "extended"}
    for a, b in zip(
        _actions_obs(BackfillEnv(trace=plain, **kw)),
        _actions_obs(BackfillEnv(trace=logged, **kw)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def _actions_obs(env: BackfillEnv) -> list[np.ndarray]:
    obs, info = env.reset(seed=0, options={"start": START})
    out = [obs.copy()]
    rng = np.random.default_rng(2)
    for _ in range(50):
        valid = np.flatnonzero(info["action_mask"])
        obs, _, done, _, info = env.step(valid[rng.integers(len(valid))])
        out.append(obs.copy())
        if done:
            break
    return out


def test_without_a_recorded_schedule_is_an_error_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="features='extended'"):
        log_env(handmade())
    with pytest.raises(ValueError, match="recorded schedule"):
        BackfillEnv(trace=None, features="extended-log")  # the generated default
    unknown = with_log(handmade())
    unknown.recorded_wait = np.full(len(unknown), np.nan)  # an SWF file whose waits are -1
    with pytest.raises(ValueError, match="all -1"):
        log_env(unknown)


def test_recorded_wait_is_read_windowed_and_written(tmp_path: Path) -> None:
    w = with_log(handmade(n=50))
    path = write_swf(w, tmp_path / "x.swf")
    back = read_swf(path)
    assert back.recorded_wait is not None
    np.testing.assert_array_equal(back.recorded_wait, w.recorded_wait)  # nan <-> -1
    win = back.window(10, 20)
    np.testing.assert_array_equal(win.recorded_wait, w.recorded_wait[10:30])
    assert back.with_machine_size(64).recorded_wait is back.recorded_wait
    with pytest.raises(ValueError, match="recorded_wait has shape"):
        Workload(
            name="bad",
            machine_size=4,
            **{c: getattr(w, c) for c in ("job_id", "submit", "runtime", "procs", "request")},
            **{c: getattr(w, c) for c in ("user", "group", "executable", "queue")},
            recorded_wait=np.zeros(3),
        )


def test_a_real_trace_has_its_schedule_and_pickles_mid_episode() -> None:
    from conftest import require_trace

    require_trace("SDSC-SP2")
    from hpcgym.workload import load

    wl = load("SDSC-SP2")
    assert wl.recorded_wait is not None and np.all(np.isfinite(wl.recorded_wait))
    assert not wl.recorded_wait.flags.writeable
    env = BackfillEnv(trace="SDSC-SP2", features="extended-log", window_length=200, split="all")
    obs, info = env.reset(seed=0, options={"start": 20000})
    assert env._ext_ctx is not None and env._ext_ctx.log_unknown == 0
    rng = np.random.default_rng(0)
    for _ in range(30):
        valid = np.flatnonzero(info["action_mask"])
        obs, _, done, _, info = env.step(valid[rng.integers(len(valid))])
    twin = pickle.loads(pickle.dumps(env))
    for _ in range(60):
        valid = np.flatnonzero(info["action_mask"])
        a = valid[rng.integers(len(valid))]
        obs, _, done, _, info = env.step(a)
        obs2, _, _, _, _ = twin.step(a)
        np.testing.assert_array_equal(obs, obs2)
        if done:
            break


def test_bench_counts_the_rows_where_the_two_histories_differ() -> None:
    """``research/probes/log_history.py`` on a workload with a recorded schedule: some rows
    differ (the log had history where the episode had none), and with the log's waits all
    so long that no past job completes before a window, none does."""
    from research.probes import log_history as B

    w = with_log(handmade(n=400, gap=900.0))
    r = B.compare(w, "FCFS", "all", 3, 100, 0)
    assert r["rows"] > 50 and 0 < r["differ"] < 1 and r["mean_gap"] > 0
    late = with_log(w)
    late.recorded_wait = np.full(len(w), 1e9)
    assert B.compare(late, "FCFS", "all", 3, 100, 0)["differ"] == 0.0


def test_bench_copies_a_shipped_card_to_play_it_with_the_log(tmp_path: Path) -> None:
    import json

    from hpcgym_agents import load_agent
    from research.probes import log_history as B

    name = "sdsc-sp2-sjf-guarded-cmaes-w256-local"
    (path,) = B.copy_cards([name], tmp_path)
    card = json.loads(path.read_text())
    assert card["features"] == "extended-log" and "test" not in card
    assert (tmp_path / card["model"]).is_file()
    agent = load_agent(str(path))
    assert agent is not None
    with pytest.raises(SystemExit, match="only agents"):
        B.copy_cards(["sdsc-sp2-fcfs-guarded"], tmp_path)  # a paper-features agent
    with pytest.raises(SystemExit, match="no shipped agent"):
        B.copy_cards(["no-such-agent"], tmp_path)


def test_bench_copies_cards_with_warm_predictors(tmp_path: Path) -> None:
    import json

    from research.probes import log_history as B

    name = "sdsc-sp2-fcfs-guarded-eloss-cmaes"  # estimator eloss, feature predictor log-ridge
    src = json.loads((Path(__file__).parents[1] / f"research/agents/{name}.json").read_text())
    (path,) = B.copy_cards([name], tmp_path, log=False, warm=True)
    card = json.loads(path.read_text())
    assert card["name"] == f"{name}-warm" and card["features"] == src["features"]
    assert card["estimator"] == f"{src['estimator']}:warm=log"
    assert card["feature_predictor"].endswith(",warm=log") or card["feature_predictor"].endswith(
        ":warm=log"
    )
    assert B._warm_spec("request") == "request" and B._warm_spec(None) is None
    with pytest.raises(SystemExit, match="nothing to change"):
        B.copy_cards([name], tmp_path, log=False, warm=False)
