""" "Did you mean" on a mistyped name, wherever names are parsed (one line, exit 2)."""

from __future__ import annotations

import pytest

from hpcgym.cli import main
from hpcgym.suggest import close_matches, did_you_mean


def test_close_matches() -> None:
    names = ["EASY", "EASY-AR", "EASY-SJBF", "SAF", "EASY++"]
    assert close_matches("easy-sjfb", names) == ["EASY-SJBF"]  # any case, the valid spelling
    assert did_you_mean("EASY-SJFB", names) == " (did you mean 'EASY-SJBF'?)"
    assert did_you_mean("QWERTY", names) == ""  # nothing close: no guess
    assert close_matches("sdsc-sp2-fcf", ["sdsc-sp2-fcfs", "sdsc-sp2-sjf", "hpc2n-fcfs"]) == [
        "sdsc-sp2-fcfs"
    ]


@pytest.mark.parametrize(
    ("argv", "nearest"),
    [
        (["simulate", "--scheduler", "EASY-SJFB"], "EASY-SJBF"),
        (["simulate", "--scheduler", "SJFF+EASY"], "SJF+EASY"),
        (["simulate", "--scheduler", "SJF+EASYY"], "EASY"),
        (["simulate", "--trace", "SDSC-SP"], "SDSC-SP2"),
        (["simulate", "--policy", "FCF"], "FCFS"),
        (["simulate", "--estimator", "elos"], "eloss"),
        (["simulat"], "simulate"),
        (["compare", "--split", "tset"], "test"),
        (["compare", "--task", "schedul", "--agents", "first"], "schedule"),
        (["compare", "--agents", "sdsc-sp2-fcf"], "sdsc-sp2-fcfs"),
        (["compare", "--agents", "eassy"], "easy"),
    ],
)
def test_cli_names_the_nearest(
    argv: list[str], nearest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        rc = main([*argv, "--length", "64"] if argv[0] == "simulate" else argv)
    except SystemExit as exc:  # argparse's own errors exit
        rc = int(exc.code or 0)
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert f"(did you mean '{nearest}'?)" in err


def test_python_names_the_nearest() -> None:
    from hpcgym.envs.backfill_env import BackfillEnv
    from hpcgym.sim import get_scheduler
    from hpcgym_agents import load_agent

    with pytest.raises(ValueError, match=r"did you mean 'EASY\+\+'"):
        get_scheduler("EASY+++")
    with pytest.raises(ValueError, match="did you mean 'guarded'"):
        BackfillEnv(mode="guardd")
    with pytest.raises(FileNotFoundError, match="did you mean 'hpc2n-fcfs'"):
        load_agent("hpc2n-fcf")
