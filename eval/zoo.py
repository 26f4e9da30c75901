"""Render the model zoo's pages from its cards: ``agents/pretrained/README.md`` (the zoo's
table) and ``agents/pretrained/<name>.md`` (each card for humans).

    python eval/zoo.py [--agents-dir agents/pretrained] [--check]

The cards (``<name>.json``) are the source; the pages are generated and never edited by
hand. ``--check`` writes nothing and exits 1 when a page is not what the cards give (the
test suite runs it).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.zoo`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.zoo", *sys.argv[1:]])

from eval import _common as C  # noqa: E402

__all__ = ["main", "zoo_pages", "zoo_readme"]

#: options of a training command that only place its outputs (left out of the table)
_OUTPUT_OPTIONS = {"--logdir": 1, "--run-name": 1, "--out": 1, "--no-progress": 0, "--ship": 0}


def _train_command(card: dict[str, Any]) -> str:
    """The command that trained the agent (a search's, else train/ppo.py's), without the
    options that only say where its outputs go."""
    command = (card.get("search") or {}).get("command") or card.get("training_command") or ""
    words, out, skip = shlex.split(command), [], 0
    for w in words:
        if skip:
            skip -= 1
            continue
        key = w.split("=", 1)[0]
        if key in _OUTPUT_OPTIONS:
            skip = 0 if "=" in w else _OUTPUT_OPTIONS[key]
            continue
        out.append(w)
    return shlex.join(out)


def _reference(card: dict[str, Any]) -> str:
    ref = str(card.get("normalizer") or "EASY-SJBF")
    return ref if card.get("policy") == "FCFS" else f"{card.get('policy')}+{ref}"


def _test(card: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    from hpcgym.evaluation.heldout import completed_paired

    sec = (card.get("test") or {}).get(card.get("trace")) or {}
    paired = completed_paired(sec, str(card.get("name") or "")) if sec.get("paired") else {}
    return sec, paired.get(_reference(card))


def _ratio(p: dict[str, Any] | None) -> str:
    if not p:
        return "—"
    from hpcgym.evaluation.statistics import verdict  # the rule in force, not the recorded word

    return f"{p['geo_ratio']:.3f} [{p['ci_low']:.3f}, {p['ci_high']:.3f}], {verdict(p)}"


def _trained_on(card: dict[str, Any]) -> str:
    est = str(card.get("estimator") or "request").split(":")[0]
    est = {"request": "requested-time", "eloss": "E-Loss"}.get(est, est)
    how = "CMA-ES linear score" if card.get("search") else "MaskablePPO"
    return f"{card['trace']}, {card['policy']} queue, {est} reservations ({how})"


def zoo_readme(cards: list[dict[str, Any]]) -> str:
    """The zoo's README: the rule, the table and each agent's two commands.

    :param cards: the zoo's card dicts, by name
    """
    rows = []
    for c in cards:
        sec, p = _test(c)
        wall = c.get("wall_time_min")
        rows.append(
            f"| [{c['name']}]({c['name']}.md) | {_trained_on(c)} | {_reference(c)} | "
            f"{_ratio(p)} | {wall:.0f} min |"
            if wall is not None
            else f"| [{c['name']}]({c['name']}.md) | {_trained_on(c)} | {_reference(c)} | "
            f"{_ratio(p)} | — |"
        )
    lines = [
        "# Model zoo",
        "",
        "Pretrained backfilling agents for `hpcgym/Backfill-v0`, installed with the package "
        "(`hpcgym_agents`). Load one by name:",
        "",
        "```python",
        "from hpcgym_agents import load_agent",
        "",
        'agent = load_agent("sdsc-sp2-fcfs")  # or the trace alone: load_agent("sdsc-sp2")',
        "```",
        "",
        "or pass the name to `hpcgym compare --agents` and `python eval/compare.py --agents`. "
        "A trace's short name (`sdsc-sp2`, `hpc2n`, `lublin1`, `lublin2`) is its FCFS agent.",
        "",
        "**How the zoo was chosen.** One agent per trace, queue policy and reservation "
        "estimator: of all the agents trained for that configuration, the one with the "
        "lowest paired ratio of AVEbsld against its reference on validation windows. Each "
        "was then tested once on 30 held-out windows of 1,024 jobs of its trace's test "
        "split (window seed 2611); that test is the ratio below, against the heuristic "
        "with the same queue order and reservations (its *reference*), with the 95% "
        "bootstrap interval. *better* means the whole interval is below 1. Agents that "
        "left the zoo keep their cards in the repository's `research/agents/`; their "
        "names fail with a message naming the replacement. The leaderboard "
        "([docs/results.md](../../docs/results.md)) puts every zoo agent beside every "
        "heuristic, and the research report "
        "([docs/research/findings.md](../../docs/research/findings.md)) explains the "
        "numbers.",
        "",
        "| agent | trained on | reference | test ratio vs reference [95% CI] | training |",
        "|---|---|---|---|---:|",
        *rows,
        "",
        "Generated by `python eval/zoo.py` from the cards (`<name>.json`); the commands "
        "below leave out the options that only place outputs (`--logdir`, `--run-name`, "
        "`--out`).",
        "",
    ]
    for c in cards:
        lines += [
            f"## {c['name']}",
            "",
            f"- train: `{_train_command(c)}`",
            f"- replay the test: `python eval/heldout.py agents/pretrained/{c['name']}.json "
            "--check`",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def zoo_pages(agents_dir: Path) -> dict[Path, str]:
    """Every generated page of the zoo folder and its text.

    :param agents_dir: the zoo's folder
    """
    from hpcgym.cli.errors import UsageError
    from hpcgym.evaluation import find_model_cards
    from hpcgym.evaluation.card_text import card_markdown

    cards = []
    for card in find_model_cards(agents_dir):
        data = card.to_dict()
        data["model"] = Path(str(data["model"])).name
        cards.append(data)
    if not cards:
        raise UsageError(f"--agents-dir {agents_dir}: no model cards there")
    pages = {agents_dir / "README.md": zoo_readme(cards)}
    for data in cards:
        pages[agents_dir / f"{data['name']}.md"] = card_markdown(data, data.get("notes") or "")
    return pages


def main(argv: list[str] | None = None) -> int:
    """Write (or ``--check``) the zoo's pages; returns the exit code.

    :param argv: the arguments (default: the process's)
    """
    p = C.make_parser("python eval/zoo.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("--agents-dir", default=None, help="the zoo's folder (default: the package's)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    pages = zoo_pages(C.agents_dir(args.agents_dir))
    stale = [path for path, text in pages.items() if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"stale: {path} (run python eval/zoo.py)", file=sys.stderr)
        return 1 if stale else 0
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {C.agents_dir(args.agents_dir)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
