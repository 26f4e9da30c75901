"""``research/probes/restraint_headroom.py``: how often a backfiller STOPs where EASY-SJBF
starts a job."""

from __future__ import annotations

import numpy as np
import pytest

from hpcgym.envs.backfill_env import BackfillEnv
from hpcgym.workload import load, trace_spec
from hpcgym_agents import SJBFAgent
from research.probes import restraint_headroom as B

TRACE = "synthetic:n_jobs=1500,seed=3"


def _env() -> BackfillEnv:
    wl = load(trace_spec(TRACE))
    return BackfillEnv(
        trace=wl, window_length=128, split="all", reference=None, policy="SJF", mode="guarded"
    )


def test_decision_shares_count_same_stop_and_other() -> None:
    env = _env()
    starts = [0, 400]
    same = B.decision_shares(env, SJBFAgent(), starts)
    assert same["decisions"] > 0 and same["same"] == 1.0 and same["stop"] == 0.0
    assert len(same["bsld"]) == 2
    # always STOP: every decision where EASY-SJBF starts a job is a STOP, the rest agree
    stop = B.decision_shares(env, B.RandomStop(1.0, seed=0), starts)
    assert stop["stop"] > 0 and stop["other"] == 0.0
    assert stop["same"] + stop["stop"] == pytest.approx(1.0)
    assert np.mean(stop["bsld"]) >= np.mean(same["bsld"])


def test_main_on_the_train_split_of_a_generated_workload(capsys) -> None:
    B.main(["--trace", TRACE, "--policy", "SJF", "--split", "train", "--windows", "3",
            "--length", "128", "--stop", "0.5"])  # fmt: skip
    out = capsys.readouterr().out
    assert "3 train windows of 128 jobs" in out
    assert "ratio vs SJF+EASY-SJBF [95%]" in out and "SJF+EASY-SJBF mean AVEbsld" in out
    assert "| stop p=0.5 |" in out and "| one per instant |" in out
