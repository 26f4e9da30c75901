"""How often the accounting log's user history differs from the episode's own.

``features="extended-log"`` seeds ``user_accuracy`` from the jobs that the trace's recorded
schedule shows completed before a window (docs/env.md, *The accounting log*);
``features="extended"`` starts each user's history empty. This plays both envs on the same
windows and the same trajectory (the first valid action at every decision: the features do
not change the simulation) and counts, over the shown candidate rows, how often the two
``user_accuracy`` values differ and by how much::

    HPCGYM_TRACE_DIR=../shared/traces python research/probes/log_history.py --trace SDSC-SP2
    HPCGYM_TRACE_DIR=../shared/traces python research/probes/log_history.py --trace HPC2N

Windows come from :func:`hpcgym.evaluation.windows.select_windows` (``--split``, default
``train``; never the test split unless asked), drawn with ``--seed``.

``--copy-cards NAME [NAME ...] --out DIR`` instead writes, for each agent trained with
``features="extended"`` (a zoo agent or a retired one, named as
:func:`research.probes._cards.card_path` finds it), a copy of its card and model as
``DIR/<NAME>-log.json`` that plays it with ``features="extended-log"`` (nothing else
changed; the copy holds no test), for ``research/probes/period_profile.py --method
DIR/<NAME>-log.json`` (docs/env.md)::

    python research/probes/log_history.py --copy-cards sdsc-sp2-sjf-guarded-cmaes-w256-local \\
        --out /tmp/log

``--warm`` also warm-starts the copies' online estimator and feature predictor from the
accounting log (``warm=log``, :mod:`hpcgym.sim.warmstart`; copies named ``...-log-warm``),
and ``--no-log --warm`` does only that (``...-warm``; any agent, whatever its features).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if (
    __name__ == "__main__" and not __package__
):  # run by path: `python -m research.probes.log_history`
    import os

    _root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "research.probes.log_history", *sys.argv[1:]])

from hpcgym.envs.backfill_env import BackfillEnv  # noqa: E402
from hpcgym.evaluation.windows import select_windows  # noqa: E402
from hpcgym.workload import Workload  # noqa: E402


def compare(
    trace: str | Workload, policy: str, split: str, windows: int, length: int, seed: int
) -> dict[str, float]:
    """Candidate rows, the share whose ``user_accuracy`` differs, the share of decisions
    with a difference and the mean absolute difference where it differs."""
    kw = {
        "trace": trace,
        "policy": policy,
        "mode": "guarded",
        "window_length": length,
        "split": "all",
        "reference": None,
    }
    cold = BackfillEnv(features="extended", **kw)
    warm = BackfillEnv(features="extended-log", **kw)
    col = cold.feature_names.index("user_accuracy")
    ws = select_windows(len(cold.workload), length, windows, split, seed)
    rows = differ = decisions = with_diff = 0
    gaps: list[float] = []
    for start in ws.starts:
        oa, ia = cold.reset(seed=0, options={"start": int(start)})
        ob, _ = warm.reset(seed=0, options={"start": int(start)})
        done = False
        while not done:
            n = int(ia["action_mask"][:-1].sum())
            if n:
                gap = np.abs(oa[:n, col].astype(np.float64) - ob[:n, col])
                d = gap > 1e-6
                rows += n
                differ += int(d.sum())
                decisions += 1
                with_diff += bool(d.any())
                gaps.extend(gap[d].tolist())
            action = int(np.flatnonzero(ia["action_mask"])[0])
            oa, _, done, _, ia = cold.step(action)
            ob, _, _, _, _ = warm.step(action)
    return {
        "rows": float(rows),
        "differ": differ / max(rows, 1),
        "decisions": float(decisions),
        "decisions_differ": with_diff / max(decisions, 1),
        "mean_gap": float(np.mean(gaps)) if gaps else 0.0,
    }


def _warm_spec(spec: str | None) -> str | None:
    """``spec`` with ``warm=log`` added, for an online predictor; ``None`` / static kept."""
    if not spec:
        return spec
    from hpcgym.sim.estimators import make_estimator

    if spec in ("request", "actual") or not make_estimator(spec).online:
        return spec
    return f"{spec}{',' if ':' in spec else ':'}warm=log"


def copy_cards(names: list[str], out: Path, log: bool = True, warm: bool = False) -> list[Path]:
    """Copies of agents' cards (and models) that play them with
    ``features="extended-log"`` (``log``, agents trained with ``"extended"`` only) and/or
    with their online estimator and feature predictor warm-started from the accounting
    log (``warm``: ``warm=log``, :mod:`hpcgym.sim.warmstart`); returns the new cards'
    paths. Nothing else changes, and a copy holds no test."""
    import json
    import shutil

    from research.probes._cards import card_path

    if not (log or warm):
        raise SystemExit("--copy-cards: nothing to change (--no-log without --warm)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        src = card_path(name)
        if src.suffix != ".json" or not src.is_file():
            raise SystemExit(
                f"--copy-cards: no shipped agent {name!r} (neither in agents/pretrained nor "
                "in research/agents)"
            )
        card = json.loads(src.read_text())
        changes = []
        if log:
            if card.get("features") != "extended":
                raise SystemExit(
                    f"--copy-cards: {name} uses features={card.get('features')!r}; only "
                    "agents trained with features='extended' have the columns of "
                    "'extended-log' (use --no-log --warm to warm its predictors only)"
                )
            card["features"] = "extended-log"
            changes.append("features='extended-log'")
        if warm:
            for key in ("estimator", "feature_predictor"):
                new_spec = _warm_spec(card.get(key))
                if new_spec != card.get(key):
                    card[key] = new_spec
                    changes.append(f"{key}={new_spec!r}")
        new = name + ("-log" if log else "") + ("-warm" if warm else "")
        shutil.copyfile(src.parent / card["model"], out / f"{new}.zip")
        card.update(name=new, model=f"{new}.zip")
        card.pop("test", None)
        changed = ", ".join(changes)
        card["notes"] = f"{name} played with {changed} (research/probes/log_history.py)"
        path = out / f"{new}.json"
        path.write_text(json.dumps(card, indent=1) + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="SDSC-SP2", help="an SWF trace with recorded waits")
    ap.add_argument("--policy", default="SJF", help="queue policy of the env (default SJF)")
    ap.add_argument("--split", default="train", help="split of the windows (default train)")
    ap.add_argument("--windows", type=int, default=10, help="windows (default 10)")
    ap.add_argument("--length", type=int, default=1024, help="jobs per window (default 1024)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the window draw (default 0)")
    ap.add_argument(
        "--copy-cards", nargs="+", metavar="NAME", help="agents to copy (names or cards)"
    )
    ap.add_argument("--out", type=Path, help="with --copy-cards: the folder of the copies")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="with --copy-cards: also warm-start the agents' online estimator and feature "
        "predictor from the accounting log (warm=log)",
    )
    ap.add_argument(
        "--no-log",
        dest="log",
        action="store_false",
        help="with --copy-cards --warm: keep the agents' features as trained",
    )
    args = ap.parse_args(argv)
    if args.copy_cards:
        if args.out is None:
            ap.error("--copy-cards needs --out DIR")
        for path in copy_cards(args.copy_cards, args.out, log=args.log, warm=args.warm):
            print(path)
        return 0
    r = compare(args.trace, args.policy, args.split, args.windows, args.length, args.seed)
    print(
        f"{args.trace} ({args.policy}, {args.windows} x {args.length} {args.split} windows, "
        f"seed {args.seed}): user_accuracy differs in {100 * r['differ']:.1f} % of "
        f"{int(r['rows']):,} candidate rows, at {100 * r['decisions_differ']:.1f} % of "
        f"{int(r['decisions']):,} decisions, by {r['mean_gap']:.2f} on average where it differs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
