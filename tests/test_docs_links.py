"""Every relative link of the README and docs/ points at a file (and heading) that exists.

Docs are split and renamed as the project grows (e.g. docs/throughput.md out of
docs/training.md); a link left pointing at the old place is found here, not by a reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: inline markdown links ``[text](target)``; images too. Code spans are removed first.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`]*`")
FENCE = re.compile(r"^(```|~~~)")


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for sub in ("train", "eval", "bench", "agents"):
        files.extend(sorted((ROOT / sub).glob("*.md")))
    return [f for f in files if f.is_file()]


def prose_lines(text: str) -> list[str]:
    """Every line, with inline code spans removed; lines of fenced code blocks empty."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else CODE_SPAN.sub("", line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not match:
            continue
        base = slug(match.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(path: Path) -> list[str]:
    bad: list[str] = []
    for number, line in enumerate(prose_lines(path.read_text(encoding="utf-8")), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:, file:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                bad.append(f"{path.relative_to(ROOT)}:{number}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {target} (no such heading)")
    return bad


def test_slug_follows_github() -> None:
    assert slug("Throughput (issue 13)") == "throughput-issue-13"
    assert slug("Several seeds (`--seeds`)") == "several-seeds---seeds"
    assert slug("Long runs: time limit, progress, checkpoints, signals") == (
        "long-runs-time-limit-progress-checkpoints-signals"
    )


def test_checker_finds_a_broken_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "b.md").write_text("# Real heading\n", encoding="utf-8")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](b.md) [ok](b.md#real-heading) [gone](c.md) [bad](b.md#nope)\n"
        "`[not a link](x.md)` [web](https://example.org/x.md)\n```\n[in code](y.md)\n```\n"
        "[late](d.md)\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == [
        "a.md:1: c.md (no such file)",
        "a.md:1: b.md#nope (no such heading)",
        "a.md:6: d.md (no such file)",
    ]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []
