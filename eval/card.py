"""Ship a trained agent: copy a train/ppo.py run's model into agents/pretrained/ with its
model card.

    python eval/card.py runs/<run> --name SDSC-SP2_FCFS [--model best|final|PATH.zip] \\
        [--out agents/pretrained] [--notes "..."]

Writes ``<out>/<name>.zip`` (the model), ``<name>.json`` (the model card read by
``eval/compare.py``, ``eval/table4.py`` and ``eval/table5.py``: trace, split, policy, mode,
normalizer, max_queue, observation scales, seed, steps, training evaluation...) and
``<name>.md`` (the same for humans). ``--print`` only shows the card. Schema:
docs/evaluation.md, "Model cards".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.card`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.card", *sys.argv[1:]])

from eval import _common as C  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Ship a model; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/card.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("run", help="train/ppo.py run folder (or a .zip inside one)")
    p.add_argument("--name", default=None, help="agent name (default: the run folder's name)")
    p.add_argument(
        "--model",
        default="best",
        help="best (default), final, selected (eval/select_checkpoint.py's choice on validation "
        "windows), or a .zip path",
    )
    p.add_argument("--out", default=None, help="destination (default agents/pretrained)")
    p.add_argument("--notes", default="", help="free text appended to the .md card")
    p.add_argument("--print", action="store_true", help="print the card, write nothing")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """The shipping itself (user errors raise, :func:`main` reports them).

    :param args: the parsed arguments
    """
    from hpcgym.evaluation import card_from_run, ship_model

    meta = {"policy_class": C.policy_class()}
    if args.print:
        card = card_from_run(args.run, model=args.model, name=args.name, meta=meta)
        print(json.dumps(card.to_dict(), indent=2))
        return 0
    name = args.name or Path(args.run).resolve().name
    out = C.agents_dir(args.out)
    C.check_outputs(out=str(out))
    paths = ship_model(args.run, name, out, args.model, args.notes, meta=meta)
    for k, v in paths.items():
        print(f"wrote {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
