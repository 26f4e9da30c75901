"""RLBackfilling Table 4: AVEbsld per trace of FCFS/SJF + EASY, EASY-AR, RLBF, WFP3+EASY,
F1+EASY and our extra baselines, with the paper's numbers beside ours.

    python eval/table4.py --agents-dir agents/pretrained --out results/table4

Rows: the traces (SDSC-SP2, HPC2N, Lublin-1, Lublin-2); columns: FCFS+EASY,
FCFS+EASY-AR, FCFS+RLBF, SJF+EASY, SJF+EASY-AR, SJF+RLBF, WFP3+EASY, F1+EASY, then
--extra (SAF EASY++ ELOSS EASY-HMM). The RLBF columns use the shipped agent whose model
card says it was trained on that trace with that base policy; without one the cell is "—"
with a note. Every column of a trace runs on the same windows (30 x 1024 jobs of the test
split, seed 1, by default; --windows 10 is the paper's protocol). Writes table4.md / .csv /
.json / .png and one folder per trace with the full comparison (tables, per-window CSV,
plots). See docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.table4`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.table4", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import check_choice, check_schedulers, check_trace_name  # noqa: E402

__all__ = ["build_parser", "main"]


def build_parser(name: str = "table4") -> argparse.ArgumentParser:
    from hpcgym.evaluation import EXTRA_SCHEDULERS, TABLE4_TRACES

    mod = sys.modules[__name__] if name == "table4" else None
    doc = (mod.__doc__ if mod else None) or ""
    p = C.make_parser(f"python eval/{name}.py", doc.split("\n\n")[0])
    p.add_argument(
        "--agents-dir",
        default=None,
        help="folder of the shipped agents and their model cards (default agents/pretrained)",
    )
    p.add_argument(
        "--cards",
        nargs="*",
        default=None,
        help="model cards (.json), run folders or .zip files to use instead of --agents-dir",
    )
    p.add_argument(
        "--traces", nargs="+", default=list(TABLE4_TRACES), help="rows (the paper's four)"
    )
    C.add_lenient_arg(p)
    if name == "table4":
        p.add_argument(
            "--extra",
            nargs="*",
            default=list(EXTRA_SCHEDULERS),
            help="extra scheduler columns (" + " ".join(EXTRA_SCHEDULERS) + ")",
        )
    else:
        p.add_argument("--policies", nargs="+", default=["FCFS", "SJF"], help="sections (FCFS SJF)")
        p.add_argument(
            "--no-agent-traces",
            dest="agent_traces",
            action="store_false",
            help="do not add the agents' training traces missing from --traces as rows",
        )
    p.add_argument(
        "--scales",
        default="target",
        choices=("target", "card"),
        help="agents' observation scales: of the evaluated trace (default, as the paper) or "
        "of their training trace (card)",
    )
    C.add_reference_arg(p)
    C.add_window_args(p, full_trace=False)
    C.add_run_args(p)
    p.add_argument("--out", default=f"results/{name}", help=f"output folder (results/{name})")
    return p


def run_table(name: str, argv: list[str] | None, description: str | None = None) -> int:
    """The command line of ``eval/table4.py`` and ``eval/table5.py`` (``name``).

    :param name: ``table4`` or ``table5``
    :param argv: the arguments (default: the process's)
    :param description: the help's description (default: this module's)
    """
    parser = build_parser(name)
    if description:
        parser.description = description
    args = parser.parse_args(argv)
    return C.run(parser, lambda: _run_table(name, args))


def _check_table_args(name: str, args: argparse.Namespace) -> None:
    """Refuse unknown traces, schedulers and policies and unwritable outputs up front.

    :param name: ``table4`` or ``table5``
    :param args: the parsed arguments (window defaults filled in, policies normalized)
    """
    from hpcgym.sim.engine import POLICIES

    C.resolve_windows(args)
    for t in args.traces:
        check_trace_name(t, "--traces")
    if name == "table4":
        check_schedulers(args.extra, "--extra")
    else:
        args.policies = [
            check_choice(p, list(POLICIES), "--policies", "queue policy") for p in args.policies
        ]
    if args.reference is not None:
        check_schedulers([args.reference], "--reference")
    C.check_outputs(out=args.out, tb_dir=args.tb_dir)


def _run_table(name: str, args: argparse.Namespace) -> int:
    """The table itself (user errors raise, :func:`run_table` reports them).

    :param name: ``table4`` or ``table5``
    :param args: the parsed arguments
    """
    from hpcgym.evaluation import load_cards, table4, table5, write_table, write_tensorboard

    _check_table_args(name, args)
    cards = load_cards(args.cards, C.agents_dir(args.agents_dir))
    print(
        f"agents: {', '.join(f'{c.name} ({c.trace}, {c.policy})' for c in cards) or 'none'}",
        file=sys.stderr,
    )
    t0 = time.perf_counter()
    common = dict(
        traces=args.traces,
        windows=args.windows,
        length=args.length,
        split=args.split,
        seed=args.seed,
        train_fraction=args.train_fraction,
        prefix=args.prefix,
        scales=args.scales,
        jobs=args.jobs,
        progress=args.progress,
        agent_loader=C.agent_loader(),
        reference=args.reference,
        lenient=args.lenient,
    )
    if name == "table4":
        table = table4(cards, extra=args.extra, **common)
    else:
        table = table5(cards, policies=args.policies, agent_traces=args.agent_traces, **common)
    paths = write_table(table, args.out, plots=args.plots)
    if args.tb_dir:
        write_tensorboard(table.results, args.tb_dir, step=args.tb_step, prefix=name, by_trace=True)
    print(table.markdown())
    print(f"wrote {len(paths)} files to {args.out}/ in {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``eval/table4.py``; returns the exit code (2 on user errors).

    :param argv: the arguments (default: the process's)
    """
    return run_table("table4", argv)


if __name__ == "__main__":
    raise SystemExit(main())
