"""Shared command-line pieces of the ``eval/`` scripts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hpcgym.argtypes import positive_int


def agent_loader() -> Any:
    """The agents package's loader (``hpcgym_agents.load_agent``), handed to
    :mod:`hpcgym.evaluation` (which never imports the agents package itself)."""
    from hpcgym_agents import load_agent

    return load_agent


def policy_class() -> str:
    """The import path of the agents' policy class (written into model cards)."""
    return "hpcgym_agents.kernel_policy.KernelPolicy"


def agents_dir(given: str | None) -> Path:
    """``--agents-dir``, or the shipped agents' folder of the agents package."""
    if given is not None:
        return Path(given)
    from hpcgym_agents import pretrained_dir

    return pretrained_dir()


def seed_or_none(text: str) -> int | None:
    if text.lower() in ("none", "even", "evenly"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer seed or 'none' (evenly spaced windows), got {text!r}"
        ) from None


def add_window_args(p: argparse.ArgumentParser, full_trace: bool = True) -> None:
    """``--windows --length --split --seed --train-fraction --prefix`` (+ ``--starts``,
    ``--full-trace``)."""
    g = p.add_argument_group("windows (the same for every method)")
    g.add_argument("--windows", type=positive_int, default=10, help="number of windows (10)")
    g.add_argument("--length", type=positive_int, default=1024, help="jobs per window (1024)")
    g.add_argument(
        "--split", default="test", choices=("train", "test", "all"), help="time split (test)"
    )
    g.add_argument(
        "--seed",
        type=seed_or_none,
        default=1,
        help="seed of the window sampler (1); 'none' = evenly spaced windows",
    )
    g.add_argument(
        "--train-fraction", type=float, default=0.7, help="share of the training split (0.7)"
    )
    g.add_argument(
        "--prefix",
        type=positive_int,
        default=None,
        help="use only the first N jobs of each trace (the paper used the first 10000)",
    )
    if full_trace:
        g.add_argument("--starts", type=int, nargs="+", help="explicit window starts (replay)")
        g.add_argument(
            "--full-trace",
            action="store_true",
            help="one window: the whole --split range (--split all: the whole trace)",
        )


def add_reference_arg(p: argparse.ArgumentParser) -> None:
    """``--reference`` (default EASY-SJBF): the scheduler of the paired statistics;
    ``none`` turns them off. ``--normalizer`` is a hidden old name."""
    p.add_argument(
        "--reference",
        type=_reference,
        default="EASY-SJBF",
        help="scheduler of the paired ratio, its 95%% bootstrap interval and the wins "
        "(EASY-SJBF); 'none': no statistics",
    )
    p.add_argument("--normalizer", dest="reference", type=_reference, help=argparse.SUPPRESS)


def _reference(text: str) -> str | None:
    return None if text.lower() == "none" else text


def add_run_args(p: argparse.ArgumentParser) -> None:
    """``--jobs --no-progress --no-plots --tb-dir --tb-step``."""
    from hpcgym.evaluation import default_jobs

    g = p.add_argument_group("execution and outputs")
    g.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help=f"worker processes (default: all cores = {default_jobs()}); 1 = no pool",
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    g.add_argument("--no-plots", dest="plots", action="store_false", help="no PNG figures")
    g.add_argument(
        "--tb-dir",
        default=None,
        help="also write the scalars as TensorBoard events here (e.g. runs/<name>)",
    )
    g.add_argument(
        "--tb-step",
        type=int,
        default=None,
        help="TensorBoard step of the scalars (default: the model's training steps, else 0)",
    )
