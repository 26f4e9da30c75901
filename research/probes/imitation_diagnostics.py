"""Can the kernel student learn the teacher's choices at all? (docs/research/findings.md)

Reads the teacher-labelled decision points that ``research/imitation/imitate.py --save-data`` wrote
(``<out>/data.npz``: LOOKAHEAD1-CLAIRVOYANT's labels on training windows) and fits the
student (the kernel policy of ``train.build.new_model``) three ways, each on the same
training / held-out episodes (held-out: whole windows):

* ``teacher``: the teacher's labels (what ``research/imitation/imitate.py`` does);
* ``sjbf``: EASY-SJBF's own choice as the label -- can the network represent the
  reference's rule with the env's observation? (capacity / feature-scale check);
* ``teacher+flag``: the teacher's labels, with a 13th column marking the row EASY-SJBF
  would start -- if the teacher's departures from EASY-SJBF were predictable from the
  observation, knowing which row is SJBF's could only help.

Prints the held-out accuracy overall and on decisions with more than one candidate row,
next to the accuracy of always copying EASY-SJBF's choice::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/imitation_diagnostics.py \\
        /tmp/imit_sdsc_dagger/data.npz --trace SDSC-SP2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch as th

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.imitation_diagnostics`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(
        sys.executable,
        [sys.executable, "-m", "research.probes.imitation_diagnostics", *sys.argv[1:]],
    )

from research.imitation.bc import accuracy, fit, held_out_split, make_student  # noqa: E402
from research.imitation.data import Dataset  # noqa: E402
from train.config import TrainConfig  # noqa: E402


def with_sjbf_flag(d: Dataset) -> Dataset:
    """``d`` with one more column: 1 on the row of EASY-SJBF's choice, else 0."""
    off = d.offsets
    flag = np.zeros((len(d.rows), 1), np.float32)
    ok = np.flatnonzero(d.sjbf >= 0)
    flag[off[ok] + d.sjbf[ok]] = 1.0
    rows = np.concatenate([d.rows, flag], axis=1)
    return Dataset(rows, d.counts, d.labels, d.sjbf, d.episode, d.returns, d.max_queue)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("data", help="data.npz of research/imitation/imitate.py --save-data")
    p.add_argument("--trace", default="SDSC-SP2", help="the trace the data came from")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variants", nargs="+", default=["teacher", "sjbf", "teacher+flag"])
    args = p.parse_args()
    th.set_num_threads(1)
    base = Dataset.load(args.data)
    base = base.subset(base.sjbf >= 0)
    held = held_out_split(base, 0.15, np.random.default_rng(args.seed))
    print(
        f"{args.data}: {len(base)} samples, {len(np.unique(base.episode))} windows "
        f"({int(held.sum())} samples held out)"
    )
    print("| labels | held-out accuracy | multi-row accuracy | copy-SJBF (multi-row) | s |")
    print("|---|---:|---:|---:|---:|")
    for v in args.variants:
        d, extra = base, None
        if v == "sjbf":
            d = Dataset(d.rows, d.counts, d.sjbf.copy(), d.sjbf, d.episode, d.returns, d.max_queue)
        elif v == "teacher+flag":
            d, extra = with_sjbf_flag(d), {"feature_predictor": "request"}  # F = 13
        elif v != "teacher":
            raise SystemExit(f"unknown variant {v!r}")
        cfg = TrainConfig.create(
            "fast", trace=args.trace, n_envs=1, vec_env="dummy", n_steps=2048, seed=args.seed
        )
        model = make_student(cfg, extra)
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        fit(model, d.subset(~held), d.subset(held), rng, epochs=args.epochs,
            learning_rate=args.lr, value=False)  # fmt: skip
        a = accuracy(model.policy, d.subset(held))
        print(
            f"| {v} | {a['accuracy']:.3f} | {a['accuracy_multi_row']:.3f} | "
            f"{a['sjbf_agreement']:.3f} ({a['sjbf_agreement_multi_row']:.3f}) | "
            f"{time.perf_counter() - t0:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
