"""Where the probes find agents' model cards.

Two folders hold them: the model zoo (``agents/pretrained``: one agent per trace, queue
policy and reservation estimator, under short names, each card naming the agent it was
trained and tested as in ``"trained_as"``) and the retired agents (``research/agents``:
every other agent that was trained, selected and tested, under the name it was trained
as). A probe that studies "the agents" reads both. A bare agent name given to a probe is
looked up in the zoo, then among the retired agents, then among the zoo's ``trained_as``
names, so the names the research record cites keep working.

A card's held-out test records the agent under the name it was tested as
(:func:`tested_as`), which for a zoo agent is its ``trained_as`` name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "RESEARCH_AGENTS",
    "card_dirs",
    "card_path",
    "card_paths",
    "cards_markdown_main",
    "load_cards",
    "tested_as",
    "zoo_dir",
]

ROOT = Path(__file__).resolve().parents[2]
#: the retired agents' cards and models, under the names they were trained as
RESEARCH_AGENTS = ROOT / "research" / "agents"

Card = dict[str, Any]


def zoo_dir() -> Path:
    """The model zoo's folder (``agents/pretrained`` of the installed ``hpcgym_agents``)."""
    from hpcgym_agents.loading import pretrained_dir

    return pretrained_dir()


def card_dirs() -> tuple[Path, ...]:
    """The folders of every agent card: the retired agents, then the zoo."""
    return (RESEARCH_AGENTS, zoo_dir())


def _trained_as(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    value = data.get("trained_as") if isinstance(data, dict) else None
    return str(value) if value else None


def card_path(name: str) -> Path:
    """The card of an agent given by name, or ``name`` as a path.

    A bare name (no suffix, not an existing file) is looked up as a zoo agent
    (``agents/pretrained/<name>.json``), a retired agent (``research/agents/<name>.json``)
    and a zoo agent's ``trained_as`` name, in that order; anything else is returned as
    given (a path, or a scheduler name for the caller to resolve).
    """
    path = Path(name)
    if path.suffix or path.exists():
        return path
    for folder in card_dirs()[::-1]:  # the zoo first
        if (folder / f"{name}.json").is_file():
            return folder / f"{name}.json"
    for card in sorted(zoo_dir().glob("*.json")):
        if _trained_as(card) == name:
            return card
    return path


def card_paths(folders: Sequence[Path] | None = None) -> list[Path]:
    """Every card ``*.json`` of ``folders`` (default :func:`card_dirs`), by folder, then
    name."""
    from hpcgym.evaluation.cards import is_model_card

    return [
        p
        for d in (folders or card_dirs())
        for p in sorted(Path(d).glob("*.json"))
        if is_model_card(p)
    ]


def load_cards(folders: Sequence[Path] | None = None) -> list[Card]:
    """The model card dicts (``ModelCard.to_dict()``) of :func:`card_paths`."""
    from hpcgym.evaluation import find_model_cards

    return [c.to_dict() for d in (folders or card_dirs()) for c in find_model_cards(d)]


def tested_as(card: Card, section: dict[str, Any] | None = None) -> str:
    """The label a card's held-out test records the agent under: the test's own
    ``agent.label`` when ``section`` (a test section) has one, else the card's
    ``trained_as`` (a zoo agent), else its ``name``."""
    label = ((section or {}).get("agent") or {}).get("label")
    methods = (section or {}).get("methods") or {}
    if label and (not methods or label in methods):
        return str(label)
    for key in (card.get("trained_as"), card.get("name")):
        if key and (not methods or key in methods):
            return str(key)
    return str(card.get("trained_as") or card.get("name"))


def cards_markdown_main(
    prog: str,
    doc: str | None,
    render: Callable[[list[Card]], str],
    argv: list[str] | None,
) -> int:
    """The command line of a probe that renders agents' cards as Markdown (``--agents DIR
    [DIR ...]``, default the retired agents and the zoo; ``--out FILE``, default print);
    returns the exit code (2 on user errors, one line on stderr).

    :param prog: the probe's command in usage lines
    :param doc: the probe's docstring (its first paragraph is the description)
    :param render: model card dicts -> Markdown
    :param argv: the arguments (default: the process's)
    """
    import argparse

    from hpcgym.cli.errors import Parser, run_command

    p = Parser(
        prog=prog,
        description=(doc or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--agents",
        nargs="+",
        default=None,
        metavar="DIR",
        help="folders of model cards (default: research/agents and agents/pretrained)",
    )
    p.add_argument("--out", default=None, help="Markdown file (default: print)")
    args = p.parse_args(argv)

    def body() -> int:
        from hpcgym.cli.errors import UsageError, writable_file

        writable_file(args.out, "--out")
        folders = [Path(d) for d in args.agents] if args.agents else list(card_dirs())
        missing = [str(d) for d in folders if not d.is_dir()]
        if missing:
            raise UsageError(f"--agents: not a folder: {', '.join(missing)}")
        text = render(load_cards(folders))
        if args.out:
            Path(args.out).write_text(text.rstrip("\n") + "\n", encoding="utf-8")
            print(f"wrote {args.out}")
        else:
            print(text.rstrip("\n"))
        return 0

    return run_command(p.prog, body)
