"""Figures from saved evaluation outputs and training runs.

    python eval/plots.py training runs/<run> [--out curves.png]   # TensorBoard curves
    python eval/plots.py compare results/compare/SDSC-SP2           # re-plot a comparison
    python eval/plots.py table results/table4/table4.json           # paper-table bars
    python eval/plots.py noise docs/figures/noise_sweep.json        # noise sweep

The comparison commands already write their figures; this re-draws them from the saved
files (``results.json`` + ``per_job.npz``; a table's JSON; a noise sweep's JSON) and draws
training curves from the TensorBoard event files of a ``train/ppo.py`` run folder
(tensorboard's EventAccumulator). See docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.plots`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.plots", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import writable_file  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Draw a figure; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/plots.py", (__doc__ or "").split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("training", help="training curves of a train/ppo.py run folder")
    t.add_argument("run", help="run folder (TensorBoard events)")
    t.add_argument("--out", default=None, help="PNG (default <run>/training_curves.png)")
    t.add_argument("--title", default=None)
    c = sub.add_parser("compare", help="box plot + slowdown CDF of an eval/compare.py output")
    c.add_argument("folder", help="folder with results.json (and per_job.npz)")
    c.add_argument("--out", default=None, help="output folder (default: the same)")
    b = sub.add_parser("table", help="bars of a table4.json / table5.json")
    b.add_argument("json", help="table JSON")
    b.add_argument("--out", default=None, help="PNG (default: next to the JSON)")
    n = sub.add_parser("noise", help="the noise sweep figure of a noise_sweep.json")
    n.add_argument("json", help="noise_sweep.json")
    n.add_argument("--out", default=None, help="PNG (default: next to the JSON)")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """The figure itself (user errors raise, :func:`main` reports them).

    :param args: the parsed arguments
    """
    from hpcgym.evaluation import plots as P

    if args.what == "compare":
        C.check_outputs(out=args.out)
    elif args.out is not None:
        writable_file(args.out, "--out")
    if args.what == "training":
        paths = [P.plot_training(args.run, args.out, args.title)]
    elif args.what == "compare":
        paths = P.replot_comparison(args.folder, args.out)
    elif args.what == "table":
        data = json.loads(Path(args.json).read_text(encoding="utf-8"))
        paths = [P.plot_paper_table(data, args.out or Path(args.json).with_suffix(".png"))]
    else:
        paths = [P.replot_noise_sweep(args.json, args.out)]
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
