"""``research/probes/policy_drift.py``: a run's starting policy is rebuilt exactly, and the drift of
its checkpoints from it is measured on the run's own decision points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO

from research.probes import policy_drift as pd


def _same_weights(a: object, b: object) -> bool:
    sa, sb = a.state_dict(), b.state_dict()  # type: ignore[attr-defined]
    return sa.keys() == sb.keys() and all(th.equal(sa[k], sb[k]) for k in sa)


def test_start_is_rebuilt_and_trained_checkpoints_drift(tmp_path: Path) -> None:
    from train_small import run_small

    # a run that makes no update keeps its starting policy: the rebuilt start is it
    run_small(tmp_path, "--total-steps", "0", "--row-prior", "estimate=-20", name="zero")
    zero = tmp_path / "zero"
    start = pd.starting_policy(zero)
    kept = MaskablePPO.load(zero / "final_model.zip", device="cpu").policy
    assert _same_weights(start, kept)
    rows = pd.main([str(zero), str(zero / "final_model.zip"), "--steps", "40", "--seed", "3"])
    (row,) = rows
    assert row.kl == 0.0 and row.agree == 1.0 and row.decisions > 0
    assert np.isnan(row.flips_at_ties)  # no flips
    # a trained run (same config and seed, so the same start) has moved from it
    run_small(
        tmp_path, "--total-steps", "1024", "--row-prior", "estimate=-20",
        "--learning-rate", "0.01", name="trained",
    )  # fmt: skip
    trained = tmp_path / "trained"
    assert _same_weights(pd.starting_policy(trained), start)
    out = tmp_path / "rows.json"
    (moved,) = pd.main(
        [str(trained), str(trained / "final_model.zip"), "--steps", "40", "--seed", "3",
         "--json", str(out)]
    )  # fmt: skip
    assert moved.kl > 0 and moved.decisions == row.decisions  # same decision points
    assert out.is_file()


def test_anchor_runs_start_at_their_anchor(tmp_path: Path) -> None:
    from train_small import run_small

    run_small(tmp_path, "--algo", "lean", "--total-steps", "256", "--anchor-kl", "1")
    run = tmp_path / "r"
    anchor = th.load(run / "anchor.pt", weights_only=True)
    start = pd.starting_policy(run).state_dict()
    assert all(th.equal(start[k], anchor[k]) for k in anchor)
