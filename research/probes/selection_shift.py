"""How far does a checkpoint's validation ratio carry to the test? (agents' cards)

Every tested agent's card (the zoo's and the retired agents') holds its checkpoint
selection on validation windows (every candidate's paired ratio against the reference,
``eval/select_checkpoint.py``) and its one test look (``eval/heldout.py``). This reads
them all and compares, per agent, the test ratio against the same reference with

* the **chosen** candidate's validation ratio (the lowest of the candidates), and
* the **median** candidate's validation ratio (what a checkpoint of the run scores,
  without the choice),

on the log scale: ``shift = ln(test / validation)``, so that ``+0.10`` means the test
ratio is 1.105 times the validation one. A mean shift of the chosen ratio far above the
median's says that most of what the choice found was luck on the validation windows (the
winner's curse that ``holdout`` in ``selection.json`` now measures per selection,
docs/evaluation.md). Gated agents (whose selection is their model's) and cards without a
selection or a home-trace test are left out, and counted::

    python research/probes/selection_shift.py [--agents-dir research/agents agents/pretrained]

No simulation is run: the script reads JSON only (a second).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: the folders read by default: the retired agents and the zoo
AGENT_DIRS = (ROOT / "research" / "agents", ROOT / "agents" / "pretrained")


@dataclass(frozen=True)
class Shift:
    """One agent's validation and test ratios against its selection's reference.

    :param name: the agent
    :param trace: its home trace
    :param reference: the selection's reference scheduler
    :param candidates: how many checkpoints the choice was made among
    :param chosen: the chosen checkpoint's validation ratio
    :param median: the median candidate's validation ratio (of an even count, the
        geometric mean of the two middle ones, as ``holdout``'s ``median``)
    :param test: the test ratio of the shipped (chosen) model against the same reference
    :param holdout: the selection's split-half estimate of the choice (``None``: recorded
        before it existed)
    """

    name: str
    trace: str
    reference: str
    candidates: int
    chosen: float
    median: float
    test: float
    holdout: float | None


def read_shift(card: dict[str, Any]) -> Shift | str:
    """The :class:`Shift` of a card, or the reason it has none (a short phrase).

    :param card: a model card's JSON
    """
    sel = card.get("selection")
    if card.get("gate"):
        return "gated"
    if not sel or not sel.get("candidates"):
        return "no selection"
    home = [t for t in (card.get("test") or {}).values() if not t.get("transfer")]
    if not home:
        return "no test"
    ref = sel["reference"]
    paired = home[0].get("paired", {}).get(ref)
    if not paired:
        return f"no test ratio vs {ref}"
    ratios = [float(c["geo_ratio"]) for c in sel["candidates"]]
    chosen = next(float(c["geo_ratio"]) for c in sel["candidates"] if c["model"] == sel["chosen"])
    hold = (sel.get("holdout") or {}).get("geo_ratio")
    return Shift(
        name=str(card.get("name")),
        trace=str(home[0].get("trace")),
        reference=str(ref),
        candidates=len(ratios),
        chosen=chosen,
        median=math.exp(statistics.median(math.log(r) for r in ratios)),
        test=float(paired["geo_ratio"]),
        holdout=None if hold is None else float(hold),
    )


def read_shifts(agents_dir: Path | Sequence[Path]) -> tuple[list[Shift], dict[str, int]]:
    """The shifts of every card in ``agents_dir``, and the count of cards left out by reason.

    :param agents_dir: a folder of model cards (``*.json``), or several (read in order)
    """
    folders = [agents_dir] if isinstance(agents_dir, Path) else list(agents_dir)
    shifts: list[Shift] = []
    skipped: dict[str, int] = {}
    from hpcgym.evaluation.cards import is_model_card

    for p in [p for d in folders for p in sorted(Path(d).glob("*.json")) if is_model_card(p)]:
        data = json.loads(p.read_text(encoding="utf-8"))
        got = read_shift(data)
        if isinstance(got, Shift):
            shifts.append(got)
        else:
            skipped[got] = skipped.get(got, 0) + 1
    return shifts, skipped


def summary(shifts: Sequence[Shift]) -> dict[str, dict[str, float]]:
    """Mean and standard deviation of the log shifts, chosen and median, per trace and in all.

    :param shifts: the agents
    """
    groups: dict[str, list[Shift]] = {"all": list(shifts)}
    for s in shifts:
        groups.setdefault(s.trace, []).append(s)
    out: dict[str, dict[str, float]] = {}
    for key, group in groups.items():
        if not group:
            continue
        c = [math.log(s.test / s.chosen) for s in group]
        m = [math.log(s.test / s.median) for s in group]
        out[key] = {
            "agents": len(group),
            "chosen_mean": statistics.fmean(c),
            "chosen_std": statistics.stdev(c) if len(c) > 1 else 0.0,
            "median_mean": statistics.fmean(m),
            "median_std": statistics.stdev(m) if len(m) > 1 else 0.0,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the per-agent table and the summary.

    :param argv: the arguments (default: the process's)
    """
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--agents-dir",
        type=Path,
        nargs="+",
        default=list(AGENT_DIRS),
        metavar="DIR",
        help="folders of model cards (default: research/agents and agents/pretrained)",
    )
    args = ap.parse_args(argv)
    for d in args.agents_dir:
        if not d.is_dir():
            ap.error(f"--agents-dir {d}: not a folder")
    shifts, skipped = read_shifts(args.agents_dir)
    if not shifts:
        given = " ".join(str(d) for d in args.agents_dir)
        ap.error(f"no card in {given} has both a selection and a home-trace test")
    print(
        "| agent | reference | candidates | chosen | median | holdout | test "
        "| shift chosen | shift median |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in shifts:
        hold = "—" if s.holdout is None else f"{s.holdout:.3f}"
        print(
            f"| {s.name} | {s.reference} | {s.candidates} | {s.chosen:.3f} | {s.median:.3f} | "
            f"{hold} | {s.test:.3f} | {math.log(s.test / s.chosen):+.3f} | "
            f"{math.log(s.test / s.median):+.3f} |"
        )
    print("\n| trace | agents | ln(test / chosen): mean (std) | ln(test / median): mean (std) |")
    print("|---|---:|---:|---:|")
    for key, v in summary(shifts).items():
        print(
            f"| {key} | {int(v['agents'])} | {v['chosen_mean']:+.3f} ({v['chosen_std']:.3f}) | "
            f"{v['median_mean']:+.3f} ({v['median_std']:.3f}) |"
        )
    if skipped:
        print("\nleft out: " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
