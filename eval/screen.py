"""Set side by side the checkpoint choices of several runs: a screen of training settings.

    python eval/select_checkpoint.py RUN --windows 30 --length 1024 --seed 7   # each run
    python eval/screen.py RUN [RUN ...] [--json] [--out screen.md]

Reads each run's ``selection.json`` (the same validation windows and reference for every
run, checked) and prints, per run, the setting that tells it from the others (the
``config.json`` options that differ), its chosen checkpoint's paired ratio, its median
candidate and the split-half holdout of its choice; then the choice across all the runs'
candidates with the holdout of that larger choice, which is biased lower the more
candidates it is made from (:mod:`hpcgym.evaluation.screen`). Nothing is evaluated: the
numbers come from the selections. ``eval/card.py RUN --model selected`` ships the chosen
run's choice."""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.screen`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.screen", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import UsageError  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Print or write the screen; returns the exit code (2 on user errors, one line).

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/screen.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders with a selection.json")
    p.add_argument("--json", action="store_true", help="print the screen as JSON")
    p.add_argument("--out", default=None, help="write the Markdown to this file")
    args = p.parse_args(argv)

    def body() -> int:
        from hpcgym.evaluation.screen import compare_selections, screen_markdown

        try:
            screen = compare_selections(args.runs)
        except (ValueError, FileNotFoundError) as exc:
            raise UsageError(str(exc)) from None
        if args.json:
            print(json.dumps(screen, indent=2))
        else:
            C.write_or_print(screen_markdown(screen), args.out)
        return 0

    return C.run(p, body)


if __name__ == "__main__":
    raise SystemExit(main())
