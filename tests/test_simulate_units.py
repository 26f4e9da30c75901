"""``hpcgym simulate`` prints its metrics with units; ``--json`` keeps raw numbers."""

from __future__ import annotations

import json

import pytest

from hpcgym.cli import main

ARGS = ["simulate", "--scheduler", "EASY-SJBF", "--start", "40000", "--length", "256"]


def test_text_has_units_and_json_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--json"]) == 0
    raw = json.loads(capsys.readouterr().out)
    for key in ("avg_bsld", "avg_wait", "max_wait", "utilization", "makespan", "backfilled"):
        assert isinstance(raw[key], int | float), key  # numbers, no units, same keys
    assert 0.0 < raw["utilization"] <= 1.0
    assert main(ARGS) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines()[2:]}
    assert f"{raw['avg_wait'] / 3600:.2f} h ({raw['avg_wait']:,.0f} s)" in lines["avg_wait"]
    assert f"{raw['max_wait'] / 3600:.2f} h" in lines["max_wait"]
    assert f"{100 * raw['utilization']:.1f} %" in lines["utilization"]
    assert f"{raw['avg_bsld']:.2f}" in lines["avg_bsld"] and "bounded slowdown" in lines["avg_bsld"]
    assert f"{raw['backfilled']} of 256 jobs" in lines["backfilled"]
    assert lines["machine_size"].endswith(f"{raw['machine_size']} processors")
    assert " ms" in lines["sim_seconds"]
