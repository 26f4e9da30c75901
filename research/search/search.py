"""Search a linear backfilling score with CMA-ES on the real objective.

The policy family, objective and search are :mod:`research.search.linear_search`'s: every candidate
job scored by ``sum_c w_c x_c`` over observation columns, STOP by a constant, the weights
searched by CMA-ES on the mean log AVEbsld ratio to the run's reference over windows of
the TRAIN split (redrawn every generation). Every option of ``train/ppo.py`` that shapes
the env (``--trace``, ``--policy``, ``--estimator``, ``--correction``, ``--reference``,
``--features``, ``--time-scale``, ``--feature-predictor``...) is accepted and means the
same; the result is the ``--row-prior``/``--stop-init`` of a ``train/ppo.py --total-steps
0`` run, which ``--ship`` makes (``<out>/run``), ready for ``eval/select_checkpoint.py``,
``python -m train.card`` and ``eval/heldout.py``::

    python -m research.search --trace SDSC-SP2 --preset fast --time-scale log \\
        --features extended --init estimate=-50 --windows 32 --time-limit 40 \\
        --out runs/search-sdsc --ship
    python -m research.search --resume --out runs/search-sdsc ...   # the same options again
    python -m research.search --generations 3 --windows 2 --length 64 --out /tmp/s  # synthetic

Writes ``<out>/search.json`` (weights, the ``train/ppo.py`` command, the search's
command as one uninterrupted run, every generation's figures), ``<out>/search_state.pkl``
(for ``--resume``) and TensorBoard scalars in ``<out>/tb``; with ``--hidden H`` (a hidden
layer added to the score, :mod:`research.search.kernel_score`) also ``<out>/search_policy.zip``, the
``--init-from`` of the ship. See docs/training.md, *Searching a linear score*.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m research.search.search`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.search.search", *sys.argv[1:]])

from hpcgym.argtypes import positive_float, positive_int  # noqa: E402
from hpcgym.envs.features import has_extended  # noqa: E402
from train.cli import OneLineParser, parse_args  # noqa: E402
from train.cli import build_parser as ppo_parser  # noqa: E402
from train.config import ConfigError, TrainConfig  # noqa: E402

__all__ = ["build_parser", "main", "ppo_config"]


def build_parser() -> argparse.ArgumentParser:
    """The search's own options (every other option is ``train/ppo.py``'s)."""
    p = OneLineParser(
        prog="python -m research.search",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Any option of train/ppo.py (python train/ppo.py --help) sets the env; "
        "--mix-traces T1,T2 spreads each generation's windows over --trace and those "
        "traces (window i on trace i mod k, each scored against the reference on its own "
        "trace).",
    )
    p.add_argument(
        "--columns",
        default=None,
        help="comma-separated observation columns of "
        "the score (default: every column of the run's observation but 'valid')",
    )
    p.add_argument(
        "--init",
        default="estimate=-50",
        help="starting weights NAME=W,... "
        "(default: estimate=-50, EASY-SJBF's order; other columns start at 0)",
    )
    p.add_argument(
        "--stop-init",
        dest="search_stop_init",
        metavar="B",
        type=float,
        default=None,
        help="STOP's starting score (default: the run's --stop-init, -3 with "
        "--preset fast: never STOP)",
    )
    p.add_argument(
        "--hidden",
        type=int,
        default=0,
        metavar="H",
        help="hidden ReLU units added to the linear score (default 0: linear); the score is "
        "KernelPolicy with --kernel-arch H, shipped with --init-from <out>/search_policy.zip "
        "(see research/search/kernel_score.py)",
    )
    p.add_argument(
        "--hidden-sigma",
        type=positive_float,
        default=0.5,
        help="with --hidden: CMA-ES's initial step of the hidden layer's weights (default 0.5)",
    )
    p.add_argument(
        "--sigma",
        type=positive_float,
        default=0.2,
        help="CMA-ES's initial step, a fraction of the start's norm (default 0.2)",
    )
    p.add_argument(
        "--popsize",
        type=positive_int,
        default=None,
        help="candidates per generation (default: CMA-ES's, 4 + 3 ln n)",
    )
    p.add_argument(
        "--generations", type=positive_int, default=200, help="generations in all (default 200)"
    )
    p.add_argument(
        "--windows",
        type=positive_int,
        default=32,
        help="train-split windows per generation (default 32)",
    )
    p.add_argument(
        "--length",
        dest="search_length",
        metavar="JOBS",
        type=positive_int,
        default=1024,
        help="jobs per window (default 1024, the tests' length)",
    )
    p.add_argument(
        "--search-seed",
        metavar="SEED",
        type=int,
        default=0,
        help="seed of the windows' draws and of CMA-ES (default 0)",
    )
    p.add_argument(
        "--time-limit",
        dest="search_time_limit",
        metavar="MINUTES",
        type=positive_float,
        default=None,
        help="minutes (stops after the generation that passes it)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="the search's folder (default: runs/search-<trace>-<search-seed>)",
    )
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="processes playing a generation's candidates (default 1; the same result "
        "with any number)",
    )
    p.add_argument("--resume", action="store_true", help="continue the search in --out")
    p.add_argument(
        "--ship",
        action="store_true",
        help="at the end, make the train/ppo.py --total-steps 0 run of the result in <out>/run "
        "(not when --time-limit stops the search before its last generation: the --resume "
        "that finishes it ships it)",
    )
    return p


def ppo_config(rest: list[str]) -> TrainConfig:
    """The ``train/ppo.py`` config of the search's other options (any flag of
    ``train/ppo.py``, those ``--help`` no longer lists too: they are the search's own
    interface, so they do not warn here).

    :param rest: the arguments that are not the search's own
    :raises ConfigError: ``--seeds`` or ``--resume`` of ``train/ppo.py``
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        args = parse_args(rest, ppo_parser())
    if args.seeds is not None or args.resume is not None:
        raise ConfigError("--seeds and train/ppo.py's --resume do not apply to a search")
    return TrainConfig.create(**args.options)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the search; returns its result (``search.json``).

    :param argv: command-line arguments (default ``sys.argv[1:]``)
    """
    from hpcgym.envs.observation import column_names
    from research.search.linear_search import RESULT_FILE, SearchProblem, parse_weights, search

    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    ns, rest = parser.parse_known_args(argv)
    try:
        cfg = ppo_config(rest)
        names_all = column_names(cfg.feature_predictor is not None, has_extended(cfg.features))
        names = (
            [n.strip() for n in ns.columns.split(",") if n.strip()]
            if ns.columns
            else [n for n in names_all[1:]]
        )
        unknown = [n for n in names if n not in names_all[1:]]
        if unknown:
            raise ConfigError(
                f"--columns: {', '.join(unknown)} not observation columns of this run "
                f"(--features {cfg.features}, --feature-predictor {cfg.feature_predictor}); "
                f"expected some of {', '.join(names_all[1:])}"
            )
        start = parse_weights(ns.init, names_all[1:])
        missing = [n for n in start if n not in names]
        if missing:
            raise ConfigError(f"--init: {', '.join(missing)} not in --columns")
        stop_init = ns.search_stop_init if ns.search_stop_init is not None else cfg.stop_init
        out = Path(ns.out or f"runs/search-{cfg.trace}-{ns.search_seed}")
        problem = SearchProblem.for_config(
            cfg, names, ns.windows, ns.search_length, ns.search_seed, hidden=ns.hidden
        )
        writer = _tensorboard(out / "tb")

        def log(rec: dict[str, Any]) -> None:
            g = rec["generation"]
            print(
                f"generation {g}: best {rec['best']:.4f} median {rec['median']:.4f} "
                f"mean policy {rec['mean_policy']:.4f} (entering: {rec['mean_fresh']:.4f}) "
                f"x {problem.reference} "
                f"(sigma {rec['sigma']:.3g}, {rec['seconds']:.1f} s)",
                flush=True,
            )
            if writer is not None:
                for key in ("best", "median", "mean_policy", "mean_fresh", "sigma"):
                    writer.add_scalar(f"search/{key}", rec[key], g)
                writer.flush()

        try:
            result = search(
                problem,
                start,
                float(stop_init or 0.0),
                out=out,
                sigma=ns.sigma,
                popsize=ns.popsize,
                generations=ns.generations,
                time_limit=ns.search_time_limit,
                resume=ns.resume,
                jobs=ns.jobs,
                log=log,
                hidden_sigma=ns.hidden_sigma,
            )
        finally:
            if writer is not None:
                writer.close()
        ship = cfg.replace(
            row_prior=result["row_prior"],
            stop_init=result["stop_init"],
            total_steps=0,
            epochs=None,  # without a preset the run's length is --epochs: 0 steps replaces it
            logdir=str(out),
            run_name="run",
        )
        hidden_args: list[str] = []
        if ns.hidden:
            ship = ship.replace(kernel_arch=(ns.hidden,))
            ship = ship.replace(init_from=_save_policy(ship, problem.columns, result, out))
            hidden_args = ["--kernel-arch", str(ns.hidden), "--init-from", str(ship.init_from)]
        ship_args = [
            *rest,
            "--row-prior",
            result["row_prior"],
            "--stop-init",
            f"{result['stop_init']:g}",
            *hidden_args,
            "--total-steps",
            "0",
            "--logdir",
            str(out),
            "--run-name",
            "run",
        ]
        result["search_command"] = shlex.join(
            ["python", "research/search/search.py", *_one_run(parser, argv, result["generations"])]
        )
        result["last_invocation"] = shlex.join(["python", "research/search/search.py", *argv])
        result["train_command"] = shlex.join(["python", "train/ppo.py", *ship_args])
        (out / RESULT_FILE).write_text(json.dumps(result, indent=1) + "\n")
        print(f"search: {out / 'search.json'}\nship: {result['train_command']}", flush=True)
        if ns.ship and not result["finished"]:
            print(
                f"not shipped: the search stopped at its time limit after "
                f"{len(result['history'])} of {ns.generations} generations; continue "
                "it with the same command and --resume (--ship ships it when it ends)",
                flush=True,
            )
        elif ns.ship:
            from train import session

            session.start(ship)
        return result
    except ConfigError as exc:
        parser.error(str(exc))


def _save_policy(cfg: TrainConfig, columns: list[int], result: dict[str, Any], out: Path) -> str:
    """Write a ``--hidden`` search's result as the MaskablePPO ``.zip`` the ship starts from
    (``--init-from``): a model of the ship's options whose actor is the result's score
    (:func:`research.search.kernel_score.apply_vector`); its path."""
    from research.search.kernel_score import POLICY_FILE, apply_vector
    from train.build import new_model, plan_rollout

    # one env and a minimal rollout: only the policy's weights are read from the file
    small = cfg.replace(n_envs=1, vec_env="dummy", n_steps=2, batch_size=2, init_from=None)
    model = new_model(small, plan_rollout(small))
    try:
        apply_vector(model.policy, columns, result["vector"], int(result["hidden"]))
        path = out / POLICY_FILE
        model.save(path)
    finally:
        model.get_env().close()
    return str(path)


def _one_run(parser: argparse.ArgumentParser, argv: list[str], generations: int) -> list[str]:
    """``argv`` as one uninterrupted run of the search's ``generations``: without
    ``--resume`` and ``--time-limit``, with ``--generations`` set to those run. A search's
    windows and CMA-ES's draws depend only on the search seed and the generation, so this
    retraces a search that ran over several sessions (or stopped at its time limit).

    :param parser: the search's parser (to check the rewrite)
    :param argv: the arguments of the call that wrote the result
    :param generations: the generations the search has run
    """
    drop_value = ("--time-limit", "--generations")
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--resume":
            pass
        elif arg in drop_value:
            skip = True
        elif arg.startswith(tuple(f"{o}=" for o in drop_value)):
            pass
        else:
            out.append(arg)
    out += ["--generations", str(generations)]
    ns, _ = parser.parse_known_args(out)
    if ns.resume or ns.search_time_limit is not None or ns.generations != generations:
        return argv  # an abbreviated option: keep the call as it was
    return out


def _tensorboard(path: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is in the train extra; the search runs without it
        return None
    return SummaryWriter(str(path))


if __name__ == "__main__":
    main()
