"""The held-out test of a shipped agent, once: write it into the agent's model card.

    python eval/heldout.py agents/pretrained/sdsc-sp2-fcfs-guarded.json --seed 2611 \\
        [--windows 30] [--length 1024] [--trace CTC-SP2 --scales card] [--retest]
    python eval/heldout.py agents/pretrained/sdsc-sp2-fcfs-guarded.json --check [--trace T]

Plays the agent on ``--windows`` windows of the **test** split (drawn with ``--seed``: use
a seed not used during development, and look once) beside EASY, EASY-SJBF, EASY++ and
ELOSS (with the agent's base queue policy), and writes the card's ``test`` section for the
trace: mean/median AVEbsld, late heads, the agent's reservation violations, and the paired
geometric-mean ratio with its 95% bootstrap interval and verdict against EASY-SJBF, EASY++
and ELOSS; then re-renders ``<card>.md``. A card that already has a test on that trace is
refused unless ``--retest`` (the test is meant to be looked at once per shipped agent).
``--trace`` evaluates the agent on another trace (transfer).

``--check`` writes nothing: it replays the card's recorded tests (every trace, or only
``--trace``'s) with their own windows, length, seed and scales, and says whether each
reproduces the card to the last digit (``--rtol``) or lists where it departs; the exit
code is 1 when one does not reproduce. It is how a row of ``docs/results.md`` is checked.
``--check --fill-late-heads`` also writes into the card the late heads the replay measured
where the recorded test has none (tests of non-FCFS agents recorded before the engine kept
when each job became the reserved head, 2026-11-29), and only when everything else
reproduces; no other value of the card changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.heldout`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.heldout", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import UsageError  # noqa: E402

if TYPE_CHECKING:
    from hpcgym.evaluation.cards import ModelCard

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the held-out test; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/heldout.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("card", help="the agent's model card .json (agents/pretrained/<name>.json)")
    p.add_argument("--seed", type=int, default=None, help="window seed (not used in development)")
    p.add_argument("--windows", type=C.positive_int, default=30, help="test windows (30)")
    p.add_argument("--length", type=C.positive_int, default=1024, help="jobs per window (1024)")
    p.add_argument("--trace", default=None, help="another trace (transfer; default the card's)")
    p.add_argument(
        "--scales",
        default="target",
        choices=("target", "card"),
        help="observation scales of the agent: the evaluated trace's (target) or the card's",
    )
    p.add_argument("--retest", action="store_true", help="replace an existing test section")
    p.add_argument(
        "--check",
        action="store_true",
        help="replay the card's recorded tests and compare (writes nothing)",
    )
    p.add_argument(
        "--fill-late-heads",
        action="store_true",
        help="with --check: write the replay's late heads into a reproduced test that has none",
    )
    p.add_argument(
        "--rtol",
        type=float,
        default=1e-9,
        help="relative tolerance of --check's float comparisons (1e-9)",
    )
    p.add_argument("--jobs", type=C.positive_int, default=None, help="worker processes")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock while the card is read and rewritten: POSIX ``flock`` on a file
    in the temporary folder named after the card's path (nothing left beside the card);
    elsewhere only the short read-modify-write window protects it."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"hpcgym-card-{key}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_card(path: Path, data: dict[str, Any]) -> Path:
    """Replace the card ``path`` by ``data`` (whole, through a temporary file) and
    re-render its ``.md``; call under :func:`_locked`. Returns the ``.md`` path."""
    from hpcgym.evaluation.cards import card_markdown

    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    md = path.with_suffix(".md")
    md.write_text(card_markdown(data), encoding="utf-8")
    return md


def _run(args: argparse.Namespace) -> int:
    from hpcgym.evaluation import load_model_card
    from hpcgym.evaluation.cards import canonical_trace
    from hpcgym.evaluation.heldout import heldout_markdown, heldout_test

    path = Path(args.card)
    if path.suffix != ".json" or not path.is_file():
        raise UsageError(f"{path}: not a model card .json file")
    card = load_model_card(path)
    trace = canonical_trace(args.trace) if args.trace else card.trace
    data = json.loads(path.read_text(encoding="utf-8"))
    tests = dict(data.get("test") or {})
    if args.check:
        return _check(args, card, tests)
    if args.fill_late_heads:
        raise UsageError("--fill-late-heads goes with --check (it fills a replayed test)")
    if args.seed is None:
        raise UsageError("--seed is required (a window seed not used in development)")
    if trace in tests and not args.retest:
        raise UsageError(
            f"{path} already has a held-out test on {trace} (window seed "
            f"{tests[trace].get('seed')}); the test is looked at once per shipped agent: "
            "give --retest to replace it"
        )
    section = heldout_test(
        card,
        agent_loader=C.agent_loader(),
        windows=args.windows,
        length=args.length,
        seed=args.seed,
        trace=args.trace and trace,
        scales=args.scales,
        jobs=args.jobs,
        progress=args.progress,
    )
    # A test takes minutes, and tests of one agent on several traces may run at once: the
    # section goes into the card as it is on disk now (locked), not as it was read above.
    with _locked(path):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["test"] = {**(data.get("test") or {}), trace: section}
        md = _write_card(path, data)
    print("\n".join(heldout_markdown(section, card.name)))
    print(f"\nwrote the test section of {path} and {md}")
    return 0


def _check(args: argparse.Namespace, card: ModelCard, tests: dict[str, Any]) -> int:
    """Replay the recorded tests of ``card`` and compare them with the card (``--check``)."""
    from hpcgym.evaluation.cards import canonical_trace
    from hpcgym.evaluation.heldout import (
        recorded_under_name,
        replay_heldout,
        section_differences,
    )
    from hpcgym.evaluation.numerics import pinning_hint

    if args.retest or args.seed is not None:
        raise UsageError("--check replays the card's own seed; it takes no --seed or --retest")
    if not args.rtol >= 0:
        raise UsageError(f"--rtol must be 0 or more, got {args.rtol}")
    if args.trace:
        trace = canonical_trace(args.trace)
        if trace not in tests:
            raise UsageError(
                f"{args.card} has no held-out test on {trace}; it has: "
                + (", ".join(sorted(tests)) or "none")
            )
        traces = [trace]
    else:
        traces = list(tests)
        if not traces:
            raise UsageError(f"{args.card} has no held-out test to check")
    failed = 0
    for trace in traces:
        rec = tests[trace]
        replay = replay_heldout(
            card, rec, agent_loader=C.agent_loader(), jobs=args.jobs, progress=args.progress
        )
        trained_as = str(card.data.get("trained_as") or "")
        diffs = section_differences(
            recorded_under_name(rec, trained_as, card.name), replay, rtol=args.rtol
        )
        what = (
            f"{card.name} on {trace} ({rec['windows']} x {rec['length']}, window seed "
            f"{rec['seed']}, evaluated {rec.get('evaluated', '?')})"
        )
        if diffs:
            failed += 1
            print(f"DIFFERS: {what}: {len(diffs)} value{'s' if len(diffs) > 1 else ''}")
            for line in diffs[:40]:
                print(f"  {line}")
            if len(diffs) > 40:
                print(f"  ... and {len(diffs) - 40} more")
            print(f"  ({pinning_hint(rec.get('numerics'))})")
        else:
            print(f"reproduced: {what}")
            if args.fill_late_heads:
                _fill_late_heads(Path(args.card), trace, replay)
    return 1 if failed else 0


def _fill_late_heads(path: Path, trace: str, replay: dict[str, Any]) -> None:
    """Write the replay's late heads into the card's test on ``trace`` for the methods
    whose recorded late heads are ``None`` (``--check --fill-late-heads``)."""
    from hpcgym.evaluation.play import HEAD_DELAY_METRICS

    with _locked(path):
        data = json.loads(path.read_text(encoding="utf-8"))
        methods = data["test"][trace]["methods"]
        filled = []
        for label, rec in methods.items():
            new = replay["methods"].get(label) or {}
            if rec.get("head_delayed") is None and new.get("head_delayed") is not None:
                rec.update({k: new[k] for k in HEAD_DELAY_METRICS})
                filled.append(f"{label} {new['head_delayed']}")
        if not filled:
            print(f"  late heads: nothing to fill on {trace}")
            return
        _write_card(path, data)
    print(f"  late heads filled on {trace}: " + ", ".join(filled))


if __name__ == "__main__":
    raise SystemExit(main())
