"""Every Python block of README.md and docs/*.md runs as a saved script.

Each ```` ```python ```` block is written to a file in a temporary folder and run with this
interpreter in a subprocess (the checkout on ``PYTHONPATH``, the temporary folder as the
working directory), as a user who copies it into ``snippet.py`` would: with worker
processes that import the script again, no interactive session, a time limit.

A block may opt out only with a reason shown in the docs' source, an HTML comment on the
line right before it: ``<!-- snippet: skip (needs a GPU) -->``; the test reports it as
skipped with that reason. A block that names a registered trace (``load("SDSC-SP2")``,
``trace="HPC2N"``...) runs when the trace is found locally (``HPCGYM_TRACE_DIR``), else is
skipped with the trace's name. docs/research (the research report) is not collected.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: the pages whose Python blocks must run
PAGES: tuple[Path, ...] = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
#: seconds one block may run
TIME_LIMIT = 300
_SKIP = re.compile(r"<!--\s*snippet:\s*skip\s*\((?P<reason>.+)\)\s*-->")
_DIRECTIVE = re.compile(r"<!--\s*snippet:")


@dataclass(frozen=True)
class Snippet:
    """One ```` ```python ```` block of a page."""

    page: Path
    line: int  # of the opening fence, 1-based
    code: str
    skip: str | None  # the reason given in the docs, or None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def snippets(page: Path) -> list[Snippet]:
    """The Python blocks of ``page``, with the skip reason of the comment before each.

    :raises ValueError: a ``snippet:`` comment that is not a well-formed skip, or a block
        that is not closed
    """
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Snippet] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                raise ValueError(f"{page}:{i + 1}: unclosed ```python block")
            before = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
            skip = None
            if _DIRECTIVE.search(before):
                m = _SKIP.fullmatch(before)
                if m is None:
                    raise ValueError(
                        f"{page}:{i}: malformed snippet comment {before!r}; the only form is "
                        "<!-- snippet: skip (the reason) -->"
                    )
                skip = m["reason"].strip()
            out.append(Snippet(page, i + 1, "\n".join(lines[i + 1 : end]) + "\n", skip))
            i = end
        i += 1
    return out


ALL: list[Snippet] = [s for p in PAGES for s in snippets(p)]


def _traces_named(code: str) -> list[str]:
    """The registered traces a block names in a string literal."""
    from hpcgym.workload.traces import TRACES

    quoted = {m.lower() for m in re.findall(r"[\"']([A-Za-z0-9_.+-]+)[\"']", code)}
    return [t for t in TRACES if t.lower() in quoted]


def _missing_trace(code: str) -> str | None:
    from hpcgym.workload.traces import TraceNotFoundError, resolve_trace

    for name in _traces_named(code):
        try:
            resolve_trace(name, download=False)
        except TraceNotFoundError:
            return name
    return None


def test_pages_have_snippets() -> None:
    """The collection itself works: the pages that must have runnable blocks have them."""
    ids = [s.id for s in ALL]
    assert any(i.startswith("README.md:") for i in ids)
    assert sum(i.startswith("docs/quickstart.md:") for i in ids) >= 3
    assert sum(i.startswith("docs/evaluation.md:") for i in ids) >= 4


def test_skip_comment_is_parsed(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n<!-- snippet: skip (needs the SDSC-SP2 trace) -->\n```python\nprint(1)\n```\n"
        "\n```python\nprint(2)\n```\n",
        encoding="utf-8",
    )
    got = snippets(page)
    assert [(s.skip, s.code) for s in got] == [
        ("needs the SDSC-SP2 trace", "print(1)\n"),
        (None, "print(2)\n"),
    ]
    page.write_text("<!-- snippet: skipp -->\n```python\nx\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="malformed snippet comment"):
        snippets(page)


#: files the docs' examples name as a user's own (a site's accounting export), and the
#: test data that plays them: the block runs in a folder holding a copy under that name
DATA_FILES: dict[str, Path] = {"accounting.txt": REPO / "tests" / "data" / "slurm" / "sacct.txt"}


@pytest.mark.parametrize("snippet", ALL, ids=[s.id for s in ALL])
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    if snippet.skip is not None:
        pytest.skip(f"{snippet.id}: the docs say: {snippet.skip}")
    missing = _missing_trace(snippet.code)
    if missing is not None:
        pytest.skip(f"{snippet.id} needs the {missing} trace (set HPCGYM_TRACE_DIR)")
    for name, source in DATA_FILES.items():  # a site's own files, played by test data
        if f'"{name}"' in snippet.code:
            shutil.copyfile(source, tmp_path / name)
    script = tmp_path / "snippet.py"
    script.write_text(snippet.code, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("OMP_NUM_THREADS", "1")  # torch on one thread: the CPU is shared
    try:
        run = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIME_LIMIT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{snippet.id} ran longer than {TIME_LIMIT} s")
    assert run.returncode == 0, (
        f"{snippet.id} failed as a script (exit {run.returncode}):\n{run.stderr[-4000:]}"
    )
