"""``inflight/``: the committed state of searches that run across sessions.

Every folder in ``inflight/`` is listed in ``inflight/README.md`` under a ``## <name>``
heading with its ``train/search.py`` command (``--out inflight/<name>``); its
``search_state.pkl`` loads with the installed ``cma``, holds the command's ``--columns``
and has fewer generations than the command's ``--generations`` (a search that has ended
is gated and its folder removed, as the README says). The checker is tested on made-up
folders so that it can fail when ``inflight/`` holds nothing.
"""

from __future__ import annotations

import pickle
import re
import shlex
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from train.linear_search import STATE_FILE  # noqa: E402

_SECTION = re.compile(r"^## (\S+)\s*$(.*?)^```\s*$(.*?)^```\s*$", re.M | re.S)


def listed_commands(readme: str) -> dict[str, list[str]]:
    """``name -> command words`` of every ``## name`` section's first code block."""
    return {m.group(1): shlex.split(m.group(3)) for m in _SECTION.finditer(readme)}


def _option(words: list[str], name: str) -> str:
    if name not in words:
        raise ValueError(f"the command has no {name}")
    return words[words.index(name) + 1]


def problems(folder: Path) -> list[str]:
    """What is wrong with ``folder`` (an ``inflight/``-like folder); empty when nothing."""
    readme = folder / "README.md"
    if not readme.exists():
        return [f"{readme} is missing"]
    commands = listed_commands(readme.read_text())
    found = {p.name for p in folder.iterdir() if p.is_dir()}
    out = [f"{n}: a folder not listed in README.md" for n in sorted(found - commands.keys())]
    out += [f"{n}: listed but has no folder" for n in sorted(commands.keys() - found)]
    for name in sorted(found & commands.keys()):
        words = commands[name]
        try:
            if words[:2] != ["python", "train/search.py"]:
                raise ValueError("the command is not a train/search.py call")
            if _option(words, "--out") != f"inflight/{name}":
                raise ValueError(f"its --out is not inflight/{name}")
            if "--resume" in words or "--time-limit" in words:
                raise ValueError("list the search's command without --resume/--time-limit")
            columns = _option(words, "--columns").split(",")
            generations = int(_option(words, "--generations"))
        except ValueError as e:
            out.append(f"{name}: {e}")
            continue
        state_path = folder / name / STATE_FILE
        if not state_path.exists():
            out.append(f"{name}: {STATE_FILE} is not committed")
            continue
        try:
            with open(state_path, "rb") as fh:
                state = pickle.load(fh)
        except Exception as e:  # an incompatible cma or a truncated file
            out.append(f"{name}: {STATE_FILE} does not load ({type(e).__name__}: {e})")
            continue
        if list(state["names"]) != columns:
            out.append(f"{name}: the state's columns {state['names']} are not {columns}")
        if len(state["history"]) >= generations:
            out.append(f"{name}: finished ({len(state['history'])} generations): gate it")
    return out


def test_every_search_in_flight_is_listed_resumable_and_unfinished() -> None:
    assert problems(REPO / "inflight") == []


def _state(path: Path, names: list[str], generations: int) -> None:
    path.mkdir(parents=True)
    with open(path / STATE_FILE, "wb") as fh:
        pickle.dump({"names": names, "history": [{}] * generations}, fh)


def _readme(folder: Path, **commands: str) -> None:
    text = "# Searches in flight\n\n" + "".join(
        f"## {n}\n\nplan\n\n```\n{c}\n```\n\n" for n, c in commands.items()
    )
    (folder / "README.md").write_text(text)


CMD = "python train/search.py --columns a,b --generations 3 --out inflight/{}"


def test_the_checker_accepts_a_listed_unfinished_search(tmp_path: Path) -> None:
    _state(tmp_path / "s", ["a", "b"], 2)
    _readme(tmp_path, s=CMD.format("s"))
    assert listed_commands((tmp_path / "README.md").read_text())["s"][-1] == "inflight/s"
    assert problems(tmp_path) == []


@pytest.mark.parametrize(
    ("names", "generations", "command", "message"),
    [
        (["a", "b"], 3, CMD.format("s"), "finished"),
        (["a", "c"], 1, CMD.format("s"), "columns"),
        (["a", "b"], 1, CMD.format("t"), "--out"),
        (["a", "b"], 1, CMD.format("s") + " --resume", "--resume"),
        (["a", "b"], 1, "python train/ppo.py --out inflight/s", "not a train/search.py"),
    ],
)
def test_the_checker_names_what_is_wrong(
    tmp_path: Path, names: list[str], generations: int, command: str, message: str
) -> None:
    _state(tmp_path / "s", names, generations)
    _readme(tmp_path, s=command)
    (found,) = problems(tmp_path)
    assert found.startswith("s: ") and message in found


def test_the_checker_finds_unlisted_missing_and_broken_states(tmp_path: Path) -> None:
    _state(tmp_path / "unlisted", ["a"], 0)
    (tmp_path / "nostate").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / STATE_FILE).write_bytes(b"not a pickle")
    _readme(
        tmp_path,
        nostate=CMD.format("nostate"),
        broken=CMD.format("broken"),
        gone=CMD.format("gone"),
    )
    found = problems(tmp_path)
    assert any(p.startswith("unlisted: a folder not listed") for p in found)
    assert any(p.startswith("gone: listed but has no folder") for p in found)
    assert any(p.startswith("nostate: search_state.pkl is not committed") for p in found)
    assert any(p.startswith("broken: search_state.pkl does not load") for p in found)
    assert len(found) == 4
