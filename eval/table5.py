"""RLBackfilling Table 5 (generality): agents trained on trace X applied to trace Y.

    python eval/table5.py --agents-dir agents/pretrained --out results/table5

One section per base policy (FCFS, SJF); rows: the evaluated traces Y; columns: EASY and
EASY-AR with that base policy, then RL-X for every shipped agent trained on trace X with
that policy (model cards), each applied to Y on Y's windows (10 x 1024 jobs of the test
split, seed 1, by default). The paper's numbers are printed beside ours. Writes
table5.md / .csv / .json / .png and one folder per (trace, policy) with the full
comparison. See docs/evaluation.md.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.table4 import build_parser as _build_parser  # noqa: E402
from eval.table4 import load_cards  # noqa: E402

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from hpcgym.evaluation import table5, write_table, write_tensorboard

    parser = _build_parser("table5")
    parser.description = (__doc__ or "").split("\n\n")[0]
    args = parser.parse_args(argv)
    try:
        cards = load_cards(args)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    print(
        f"agents: {', '.join(f'{c.name} ({c.trace}, {c.policy})' for c in cards) or 'none'}",
        file=sys.stderr,
    )
    t0 = time.perf_counter()
    table = table5(
        cards,
        traces=args.traces,
        policies=args.policies,
        windows=args.windows,
        length=args.length,
        split=args.split,
        seed=args.seed,
        train_fraction=args.train_fraction,
        prefix=args.prefix,
        scales=args.scales,
        agent_traces=args.agent_traces,
        jobs=args.jobs,
        progress=args.progress,
    )
    paths = write_table(table, args.out, plots=args.plots)
    if args.tb_dir:
        write_tensorboard(table.results, args.tb_dir, step=args.tb_step, prefix="table5")
    print(table.markdown())
    print(f"wrote {len(paths)} files to {args.out}/ in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
