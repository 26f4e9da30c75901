"""``train/ppo.py``'s short ``--help`` and every option by name: ``--config FILE`` (TOML,
JSON, YAML) and ``--set KEY=VALUE`` (:mod:`train.overrides`), the hidden flags'
``FutureWarning``, and the command recorded with a run."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from train.cli import SHOWN, build_parser, parse_args  # noqa: E402
from train.config import TrainConfig  # noqa: E402
from train.overrides import expand_config_argv, option_keys, read_config_file  # noqa: E402


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line
    return err


def test_help_fits_a_screen_and_names_every_task() -> None:
    from hpcgym.tasks import list_tasks

    text = build_parser().format_help()
    assert len(text.splitlines()) <= 60, len(text.splitlines())
    flags = re.findall(r"^  (-[-\w]+)", text, flags=re.M)
    assert len(flags) <= 30, flags
    assert {"--trace", "--task", "--total-steps", "--seeds", "--time-limit", "--device"} <= set(
        flags
    )
    assert {"--config", "--set", "--resume", "--logdir", "--keep-checkpoints"} <= set(flags)
    for hidden in ("--anchor-kl", "--row-prior", "--stop-init", "--row-context", "--n-steps"):
        assert hidden not in text
    for task in list_tasks():
        assert task in text
    assert len(SHOWN) + 6 == len(flags)  # + -h, --seeds, --seed-jobs, --config, --set, --resume


def test_set_types_values_like_the_flags() -> None:
    args = parse_args(
        [
            "--set",
            "anchor_kl=0.1",
            "--set",
            "kernel-arch=8,4",  # dashes read as underscores
            "--set",
            "n_steps=auto",
            "--set",
            "target_kl=none",
            "--set",
            "keep_spread=true",
            "--set",
            "row_prior=estimate=-50",
            "--set",
            "policy=sjf",
        ]
    )
    assert args.options == {
        "anchor_kl": 0.1,
        "kernel_arch": (8, 4),
        "n_steps": "auto",
        "target_kl": None,
        "keep_spread": True,
        "row_prior": "estimate=-50",
        "policy": "SJF",
    }
    cfg = TrainConfig.create(**{**args.options, "algo": "lean"})
    assert cfg.kernel_arch == (8, 4) and cfg.anchor_kl == 0.1


def test_config_files_and_precedence(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('preset = "fast"\nanchor_kl = 0.1\nkernel_arch = [8, 4]\nlenient = true\n')
    opts = parse_args(["--config", str(toml)]).options
    assert opts == {"preset": "fast", "anchor_kl": 0.1, "kernel_arch": (8, 4), "lenient": True}
    # the command line wins over the file
    opts = parse_args(["--config", str(toml), "--set", "anchor_kl=0.2", "--trace", "x"]).options
    assert opts["anchor_kl"] == 0.2 and opts["trace"] == "x"
    # a run's config.json is a config file: the same config back
    cfg = TrainConfig.create(preset="fast", trace="Lublin-1", kernel_arch=(8, 4), run_name="a")
    cfg.to_json(tmp_path / "config.json", extra={"n_steps_resolved": 64})
    back = read_config_file(tmp_path / "config.json")
    assert TrainConfig(**back) == cfg
    yaml = pytest.importorskip("yaml")
    y = tmp_path / "c.yaml"
    y.write_text(yaml.safe_dump({"anchor_kl": 0.1, "baselines": ["EASY"]}))
    assert read_config_file(y) == {"anchor_kl": 0.1, "baselines": ("EASY",)}


def test_errors_are_one_line_with_the_nearest_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _error(["--set", "anchr_kl=0.1"], capsys)
    assert "unknown option 'anchr_kl' (did you mean anchor_kl?)" in err
    assert "valid keys: " + ", ".join(option_keys()) in err
    assert "--set anchor_kl: expected a number >= 0" in _error(["--set", "anchor_kl=x"], capsys)
    assert "expected KEY=VALUE" in _error(["--set", "anchor_kl"], capsys)
    assert "expected one of flat, pooled" in _error(["--set", "value_head=q"], capsys)
    assert "also given as --n-epochs" in _error(["--n-epochs", "3", "--set", "n_epochs=4"], capsys)
    assert "no such file" in _error(["--config", str(tmp_path / "none.toml")], capsys)
    bad = tmp_path / "bad.toml"
    bad.write_text("stop_int = -3\n")
    assert "unknown option 'stop_int' (did you mean stop_init?)" in _error(
        ["--config", str(bad)], capsys
    )
    bad.write_text("lenient = 1\n")
    assert "lenient expected true or false" in _error(["--config", str(bad)], capsys)
    bad.write_text("anchor_kl = \n")
    assert f"--config {bad}:" in _error(["--config", str(bad)], capsys)  # the parser's line


def test_hidden_flags_still_work_with_a_future_warning() -> None:
    with pytest.warns(FutureWarning, match=r"use --set anchor_kl=0\.1 "):
        assert parse_args(["--anchor-kl", "0.1"]).options == {"anchor_kl": 0.1}
    with pytest.warns(FutureWarning, match="--set keep_spread=true"):
        parse_args(["--keep-spread"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # shown options and --set do not warn
        parse_args(["--trace", "x", "--preset", "fast", "--set", "anchor_kl=0.1"])


def test_recorded_command_writes_out_the_config_file(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('anchor_kl = 0.1\nkernel_arch = [8, 4]\ntarget_kl = "none"\n')
    argv = ["--trace", "x", "--config", str(toml), "--seed", "2"]
    assert expand_config_argv(argv) == [
        "--trace",
        "x",
        "--set",
        "anchor_kl=0.1",
        "--set",
        "kernel_arch=8,4",
        "--set",
        "target_kl=none",
        "--seed",
        "2",
    ]
    again = parse_args(expand_config_argv(argv)).options
    assert again == parse_args(argv).options
    assert json.loads(json.dumps(again, default=list))  # JSON values, like config.json
