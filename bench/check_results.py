"""Do the rows of docs/results.md still reproduce? (shipped agents' recorded tests, replayed)

Every row of docs/results.md is a card's recorded held-out test (``eval/heldout.py``). This
replays the tests of a random sample of the shipped cards (or all of them) with their own
trace, windows, length, window seed and scales, in the code of the checkout, and compares
every recorded value with the replay (``hpcgym.evaluation.heldout.section_differences``:
floats to a relative 1e-9): a row reproduces when nothing differs. The sample is drawn
with a seeded ``numpy.random.Generator`` over the (card, trace) tests, so a run names what
it checked::

    python bench/check_results.py --sample 6 --seed 1 [--jobs 2] [--out check.json]
    python bench/check_results.py --all

One agent's test is ``python eval/heldout.py agents/pretrained/<name>.json --check``. A
test takes 1-5 minutes on 2 cores (five schedulers and the agent on 30 windows of 1,024
jobs). Exit code 1 when a test does not reproduce.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and not __package__:  # run by path: `python -m bench.check_results`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "bench.check_results", *sys.argv[1:]])


@dataclass(frozen=True)
class Check:
    """One replayed test.

    :param agent: the card's name
    :param trace: the tested trace
    :param evaluated: when the test was recorded
    :param differences: how many recorded values the replay departs from
    :param first: the first few departures (``path: recorded -> replayed``)
    :param ratio: the recorded test ratio against the section's first reference
    :param replayed_ratio: the replay's ratio against the same reference
    :param seconds: wall time of the replay
    :param hint: for a test that departs, what the BLAS kernels of the recording and the
        replay say about it (:func:`hpcgym.evaluation.numerics.pinning_hint`); else empty
    """

    agent: str
    trace: str
    evaluated: str
    differences: int
    first: list[str]
    ratio: float
    replayed_ratio: float
    seconds: float
    hint: str = ""


def recorded_tests(agents_dir: Path) -> list[tuple[Path, str]]:
    """Every (card, trace) test the cards of ``agents_dir`` hold, in a fixed order.

    :param agents_dir: the folder of the shipped cards
    """
    out = []
    for path in sorted(agents_dir.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out += [(path, trace) for trace in sorted(data.get("test") or {})]
    return out


def check(path: Path, trace: str, *, jobs: int | None, progress: bool) -> Check:
    """Replay the test of card ``path`` on ``trace`` and compare it with the card.

    :param path: the card's .json
    :param trace: one of its tested traces
    :param jobs: worker processes
    :param progress: show a progress bar
    """
    from eval import _common as C
    from hpcgym.evaluation import load_model_card
    from hpcgym.evaluation.heldout import replay_heldout, section_differences
    from hpcgym.evaluation.numerics import pinning_hint

    card = load_model_card(path)
    rec = json.loads(path.read_text(encoding="utf-8"))["test"][trace]
    t0 = time.perf_counter()
    replay = replay_heldout(card, rec, agent_loader=C.agent_loader(), jobs=jobs, progress=progress)
    seconds = time.perf_counter() - t0
    diffs = section_differences(rec, replay)
    ref = next(iter(rec["paired"]))
    return Check(
        agent=card.name,
        trace=trace,
        evaluated=str(rec.get("evaluated", "?")),
        differences=len(diffs),
        first=diffs[:5],
        ratio=float(rec["paired"][ref]["geo_ratio"]),
        replayed_ratio=float(replay["paired"][ref]["geo_ratio"]),
        seconds=seconds,
        hint=pinning_hint(rec.get("numerics")) if diffs else "",
    )


def _differ(n: int) -> str:
    return "1 value differs" if n == 1 else f"{n} values differ"


def table(checks: list[Check]) -> str:
    """The Markdown table of ``checks``."""
    lines = [
        "| agent | trace | recorded | test ratio: card → replay | reproduced | seconds |",
        "|---|---|---|---|---|---:|",
    ]
    for c in checks:
        ok = "yes" if c.differences == 0 else f"**no** ({_differ(c.differences)})"
        lines.append(
            f"| {c.agent} | {c.trace} | {c.evaluated} | {c.ratio:.4f} → {c.replayed_ratio:.4f} "
            f"| {ok} | {c.seconds:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Replay a sample of the recorded tests; returns 1 when one does not reproduce.

    :param argv: the arguments (default: the process's)
    """
    p = argparse.ArgumentParser(
        prog="python bench/check_results.py", description=(__doc__ or "").split("\n\n")[0]
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--sample", type=int, help="how many (card, trace) tests to replay")
    which.add_argument("--all", action="store_true", help="replay every recorded test")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample (0)")
    p.add_argument("--agents-dir", default=str(ROOT / "agents" / "pretrained"))
    p.add_argument("--jobs", type=int, default=None, help="worker processes (all cores)")
    p.add_argument("--out", default=None, help="write the checks as JSON here")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    args = p.parse_args(argv)
    tests = recorded_tests(Path(args.agents_dir))
    recorded = len(tests)
    if not tests:
        p.error(f"no recorded test in {args.agents_dir}")
    if args.sample is not None:
        if not 1 <= args.sample <= len(tests):
            p.error(f"--sample must be between 1 and {len(tests)} (the recorded tests)")
        rng = np.random.default_rng(args.seed)
        picked = sorted(rng.choice(len(tests), size=args.sample, replace=False).tolist())
        tests = [tests[i] for i in picked]
    checks = []
    for path, trace in tests:
        c = check(path, trace, jobs=args.jobs, progress=args.progress)
        checks.append(c)
        print(
            f"{c.agent} on {c.trace}: "
            + ("reproduced" if c.differences == 0 else _differ(c.differences))
            + f" ({c.seconds:.0f} s)",
            flush=True,
        )
        for line in c.first:
            print(f"  {line}", flush=True)
        if c.hint:
            print(f"  ({c.hint})", flush=True)
    print()
    print(table(checks))
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "sample": args.sample,
                    "seed": args.seed if args.sample is not None else None,
                    "of": recorded,
                    "checks": [asdict(c) for c in checks],
                },
                indent=1,
            )
            + "\n"
        )
    return 1 if any(c.differences for c in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
