"""Choose a run's checkpoint on validation windows (never the test split).

    python eval/select_checkpoint.py RUN [--windows 30] [--length 1024] [--seed 7] \\
        [--reference EASY-SJBF] [--max-candidates N] [--workload synthetic:...] \\
        [--transfer TRACE ...]
    python eval/card.py RUN --model selected --name NAME     # ship the choice

Evaluates ``best_model.zip``, ``final_model.zip`` and every ``checkpoints/*.zip`` and
``kept/*.zip`` of a ``train/ppo.py`` run on ``--windows`` windows of ``--length`` jobs of
the **validation** split, against the run's reward reference (``--reference`` to change
it), prints every checkpoint's paired geometric-mean ratio of AVEbsld with its 95%
bootstrap interval, and writes the choice (the lowest ratio) to ``RUN/selection.json``.
Training's own evaluation (10 x 256 jobs) is too noisy to choose on; this is the second,
larger look. ``--transfer TRACE ...`` also plays every checkpoint on the validation
windows of other traces and chooses by the geometric mean of its ratios over all of them
(an agent meant for machines it never trained on). ``--workload synthetic:KEY=VALUE,...``
chooses on windows of a generated
workload instead: for an agent of a synthetic trace (Lublin-1, Lublin-2), as many
independent windows of the trace's own model as wanted, where the trace's validation
split has a few hundred jobs.

For a seeds run (``train/ppo.py --seeds``), give its folder: the checkpoints of all seeds
are compared on the same windows and the choice is made across seeds (each seed's best is
listed too); give a ``RUN/seed-<s>`` folder to choose within one seed. With several seeds
and a validation split large enough to tell policies apart (``--validation-fraction``),
this is the way to ship one agent whose quality does not hang on a lucky seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.select_checkpoint`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.select_checkpoint", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import UsageError, check_schedulers  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the selection; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/select_checkpoint.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("run", help="train/ppo.py run folder")
    C.add_choice_args(p, seed=7, reference_of="run")
    p.add_argument(
        "--max-candidates",
        type=C.positive_int,
        default=None,
        help="at most N checkpoints per run (seed), evenly spaced in steps; the best and "
        "final models stay (for runs trained with --keep-checkpoints 0; default: all)",
    )
    p.add_argument(
        "--models",
        nargs="+",
        default=None,
        metavar="ZIP",
        help="compare only these models (paths, or relative to RUN: seed-2/checkpoints/...): "
        "e.g. the few best of a first look, confirmed on new windows",
    )
    p.add_argument(
        "--transfer",
        nargs="+",
        default=(),
        metavar="TRACE",
        help="also score every checkpoint on the validation windows of these traces (never "
        "trained on) and choose by the geometric mean of its ratios over its own and "
        "these traces: for an agent meant for other machines (name traces other than those "
        "its transfer is reported on)",
    )
    p.add_argument("--jobs", type=C.positive_int, default=None, help="worker processes")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from hpcgym.evaluation.selection import SELECTION_FILE, select_checkpoint
    from hpcgym.evaluation.statistics import holdout_text
    from hpcgym.evaluation.windows import load_quartiles_text

    run = Path(args.run)
    if not (run / "config.json").is_file() and not (run / "seeds.json").is_file():
        raise UsageError(
            f"{run}: neither a train/ppo.py run folder (no config.json) nor a seeds run "
            "(no seeds.json)"
        )
    if args.reference is not None:
        check_schedulers([args.reference], "--reference")
    try:
        sel = select_checkpoint(
            run,
            agent_loader=C.agent_loader(),
            windows=args.windows,
            length=args.length,
            seed=args.seed,
            reference=args.reference,
            max_candidates=args.max_candidates,
            workload=args.workload,
            transfer=args.transfer,
            candidates=None if args.models is None else [_model(run, m) for m in args.models],
            jobs=args.jobs,
            progress=args.progress,
        )
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    load = load_quartiles_text(sel.get("offered_load"))
    gen = sel.get("generated")
    where = f"windows of the generated workload {sel['trace']}" if gen else "validation windows"
    print(
        f"{sel['windows']} {where} of {sel['length']} jobs (seed {sel['seed']}"
        + (f"; {load}" if load else "")
        + f"); {sel['reference']}: mean AVEbsld {sel['reference_mean_avg_bsld']:.2f}\n"
    )
    others = [w["trace"] for w in sel.get("transfer") or []]
    if others:
        print(
            f"transfer: every checkpoint also on {sel['windows']} validation windows of "
            + ", ".join(others)
            + "; chosen by the geometric mean of its ratios (score)\n"
        )
    extra = "".join(f" {t} |" for t in others) + (" score |" if others else "")
    print(
        f"| checkpoint | steps | mean AVEbsld | ratio vs {sel['reference']} [95%] | wins |{extra}"
    )
    print("|---|---:|---:|---:|---:|" + "---:|" * (len(others) + bool(others)))
    for r in sel["candidates"]:
        mark = " <- chosen" if r["model"] == sel["chosen"] else ""
        cells = "".join(f" {r['transfer'][t]['geo_ratio']:.3f} |" for t in others)
        cells += f" {r['score']:.3f} |" if others else ""
        print(
            f"| {r['model']} | {r['steps']} | {r['mean_avg_bsld']:.2f} | {r['geo_ratio']:.3f} "
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['wins']}/{sel['windows']} |"
            f"{cells}{mark}"
        )
    for b in sel.get("seeds") or []:
        print(
            f"best of {b['run']}: {b['model']} {b['geo_ratio']:.3f} "
            f"[{b['ci_low']:.3f}, {b['ci_high']:.3f}]"
        )
    if text := holdout_text(sel.get("holdout"), sel["reference"]):
        print(f"\n{text}")
    print(f"\nwrote {run / SELECTION_FILE}; ship it: python eval/card.py {run} --model selected")
    return 0


def _model(run: Path, name: str) -> Path:
    """A ``--models`` entry: a path, or a path relative to the run folder."""
    for p in (Path(name), run / name):
        if p.is_file():
            return p
    raise UsageError(f"--models: {name} is neither a file nor a file of {run}")


if __name__ == "__main__":
    raise SystemExit(main())
