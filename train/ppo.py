"""Train the kernel policy with sb3-contrib's MaskablePPO on hpcgym/Backfill-v0 (the
RLBackfilling paper's task) or hpcgym/Schedule-v0 (``--task schedule``).

Usage (after ``pip install -e ".[train]"``, from a checkout; ``python -m train.ppo`` from
its root is the same command)::

    python train/ppo.py --trace SDSC-SP2          # real trace (HPCGYM_TRACE_DIR or cache)
    python train/ppo.py --trace SDSC-SP2 --preset fast   # a 30-minute CPU budget
    python train/ppo.py                           # embedded synthetic workload, offline
    python train/ppo.py --resume runs/<run-name>  # continue a killed / finished run
    python train/ppo.py --seeds 1 2 3             # one run per seed, mean and spread
    python train/ppo.py --set anchor_kl=0.1 --config my.toml   # any option by its name
    tensorboard --logdir runs/

Everything of a run goes to ``<logdir>/<run-name>/`` (:mod:`train.rundir`). This file is
only the command line: arguments (:mod:`train.cli`, :mod:`train.overrides`) ->
:class:`train.config.TrainConfig`
-> :func:`train.session.start` / :func:`train.session.resume`. See ``docs/training.md``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m train.ppo`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "train.ppo", *sys.argv[1:]])

from train.cli import build_parser, parse_args  # noqa: E402
from train.config import PAPER_HYPERPARAMETERS, PRESETS, ConfigError, TrainConfig  # noqa: E402

__all__ = ["PAPER_HYPERPARAMETERS", "PRESETS", "TrainConfig", "build_parser", "main"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the training script; returns the summary written to ``summary.json`` (with
    ``--seeds``, or resuming a seeds run: the contents of ``seeds.json``).

    Bad input ends like an argparse error (a one-line message, exit status 2); Ctrl-C or
    SIGTERM during training saves a checkpoint and ``summary.json``, says how to resume
    and exits with status 130 / 143.

    :param argv: command-line arguments (default ``sys.argv[1:]``)
    """
    from train import seeds, session

    parser = build_parser()
    args = parse_args(list(sys.argv[1:] if argv is None else argv), parser)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.seeds is not None:
            return seeds.start_seeds(args.options, args.seeds, jobs=args.seed_jobs or 1)
        if args.resume is not None and seeds.is_seeds_run(args.resume):
            return seeds.resume_seeds(args.resume, args.options, jobs=args.seed_jobs)
        if args.seed_jobs is not None and args.seed_jobs > 1:
            parser.error(f"--seed-jobs: {args.resume} is not a seeds run (no seeds.json)")
        if args.resume is not None:
            return session.resume(args.resume, args.options)
        return session.start(TrainConfig.create(**args.options))
    except ConfigError as exc:
        parser.error(str(exc))
    except session.Interrupted as exc:
        session.report_interrupt(exc)
        raise SystemExit(exc.exit_status) from None
    except KeyboardInterrupt:  # during the set-up: nothing to save yet
        print("\ninterrupted during the set-up; nothing was trained", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
