"""Generate docs/results.md: the leaderboard of every heuristic and every zoo agent.

    python eval/results.py --out docs/results.md [--jobs 2]

With no other input it writes the leaderboard (:mod:`hpcgym.evaluation.leaderboard`):
per trace, every heuristic and every zoo agent (``agents/pretrained``, or ``--cards DIR``)
on the zoo's held-out test windows, with the paired ratio against EASY-SJBF, its 95%
interval, wins, late heads and the command that reproduces each row. It needs the traces
(``HPCGYM_TRACE_DIR``) and takes about a minute on two cores.

With the outputs of the paper's tables it renders those instead (docs/reproduction.md):

    python eval/results.py --table4 results/table4/table4.json \\
        --table5 results/table5/table5.json --compare results/compare/SDSC-SP2/results.json \\
        --noise docs/figures/noise_sweep.json --training runs/<run> \\
        --figures docs/figures --agents --out docs/reproduction.md

Tables are rendered from the JSON files (ours beside the paper's numbers), figures are
linked relative to ``--out``; ``--training RUN`` draws the run's training curves into
``--figures`` (``training_<run>.png``) and embeds them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.results`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.results", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import UsageError, writable_file  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Write the Markdown; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/results.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("--table4", default=None, help="table4.json of eval/table4.py")
    p.add_argument("--table5", default=None, help="table5.json of eval/table5.py")
    p.add_argument("--compare", nargs="*", default=[], help="results.json of eval/compare.py")
    p.add_argument("--noise", default=None, help="noise_sweep.json of eval/noise_sweep.py")
    p.add_argument("--training", action="append", default=[], help="train/ppo.py run folder")
    p.add_argument(
        "--agents",
        nargs="?",
        const="",
        default=None,
        help="render the held-out tests of the shipped agents' model cards (a folder; "
        "default agents/pretrained)",
    )
    p.add_argument(
        "--figures",
        default="docs/figures",
        help="folder for the figures (training curves, copies of the table figures)",
    )
    p.add_argument(
        "--copy-figures",
        action="store_true",
        help="copy the tables' and comparisons' PNGs into --figures and link the copies",
    )
    p.add_argument(
        "--cards",
        default=None,
        help="the leaderboard's agents: a folder of model cards (default agents/pretrained)",
    )
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--title", default="Results")
    pre = p.add_mutually_exclusive_group()
    pre.add_argument("--preamble", default="", help="Markdown text put after the first sentence")
    pre.add_argument(
        "--preamble-file",
        default=None,
        help="read the preamble from this Markdown file (a text written by hand)",
    )
    p.add_argument("--out", default=None, help="Markdown file (default: print)")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """The Markdown itself (user errors raise, :func:`main` reports them).

    :param args: the parsed arguments
    """
    from hpcgym.evaluation import results_markdown
    from hpcgym.evaluation.plots import plot_training

    writable_file(args.out, "--out")
    tables = (args.table4, args.table5, args.compare, args.noise, args.training, args.agents)
    if not any(x not in (None, []) for x in tables):
        return _leaderboard(args)
    preamble = args.preamble
    if args.preamble_file is not None:
        try:
            preamble = Path(args.preamble_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--preamble-file {args.preamble_file}: {exc.strerror}") from None
    if args.training or args.copy_figures:
        C.check_outputs(figures=args.figures)
    base = Path(args.out).parent if args.out else Path(".")
    figs = Path(args.figures)
    figures: dict[str, str] = {}
    for run in args.training:
        name = Path(run).resolve().name
        png = plot_training(run, figs / f"training_{name}.png", title=f"Training: {name}")
        figures[f"Training curves: {name}"] = str(png)
    cards = []
    if args.agents is not None:
        from hpcgym.evaluation import find_model_cards

        cards = [c.to_dict() for c in find_model_cards(C.agents_dir(args.agents or None))]
    text = results_markdown(
        table4_json=args.table4,
        table5_json=args.table5,
        compare_json=args.compare,
        noise_json=args.noise,
        figures=figures,
        title=args.title,
        base=base,
        copy_figures=figs if args.copy_figures else None,
        agent_cards=cards,
        preamble=preamble,
    )
    C.write_or_print(text, args.out)
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    from hpcgym.evaluation import find_model_cards
    from hpcgym.evaluation.leaderboard import leaderboard, leaderboard_markdown
    from hpcgym.evaluation.schedule_board import schedule_boards, schedule_markdown
    from hpcgym_agents import load_agent

    cards = find_model_cards(C.agents_dir(args.cards))
    if not cards:
        raise UsageError(f"--cards {args.cards}: no model cards there")
    boards = leaderboard(cards, agent_loader=load_agent, jobs=args.jobs, progress=True)
    sched = schedule_boards(boards, cards, agent_loader=load_agent, jobs=args.jobs)
    command = "python eval/results.py" + (f" --cards {args.cards}" if args.cards else "")
    command += f" --out {args.out}" if args.out else ""
    text = leaderboard_markdown(boards, command) + "\n" + "\n".join(schedule_markdown(sched))
    C.write_or_print(text.rstrip() + "\n", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
