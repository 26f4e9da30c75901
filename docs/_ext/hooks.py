"""MkDocs hooks of the hpcgym site (``hooks:`` in ``mkdocs.yml``).

Some pages live outside ``docs/`` because their home is elsewhere in the repository:

* the model zoo: ``agents/pretrained/README.md`` becomes ``zoo/index.md`` and every agent
  card ``agents/pretrained/<name>.md`` becomes ``zoo/<name>.md`` (the cards ship in the
  wheel next to the agents, so they are not copied into ``docs/``);
* ``CHANGELOG.md`` at the repository root becomes ``changelog.md``.

A relative link in such a page is written for its place in the repository (so that it
works on a code host); a link that resolves to a file under ``docs/`` is rewritten to the
same page of the site, and a link into the zoo folder to the zoo page. Any other link is
left alone, so MkDocs reports it (strict builds fail on it).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
ZOO = "agents/pretrained"

#: site page -> repository file, filled by on_files
_SOURCES: dict[str, str] = {}

#: inline links and images ``[text](target)``; a target with a scheme is left alone
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _outside_pages() -> dict[str, str]:
    """Site path -> repository path of the pages that live outside ``docs/``."""
    pages: dict[str, str] = {}
    zoo = ROOT / ZOO
    if (zoo / "README.md").is_file():
        pages["zoo/index.md"] = f"{ZOO}/README.md"
    for card in sorted(zoo.glob("*.md")):
        if card.name != "README.md":
            pages[f"zoo/{card.name}"] = f"{ZOO}/{card.name}"
    if (ROOT / "CHANGELOG.md").is_file():
        pages["changelog.md"] = "CHANGELOG.md"
    return pages


def on_files(files: Files, config: Any, **_: Any) -> Files:
    _SOURCES.clear()
    for site_path, repo_path in _outside_pages().items():
        if files.get_file_from_path(site_path) is not None:
            continue  # a page in docs/ of that name wins
        files.append(File.generated(config, site_path, abs_src_path=str(ROOT / repo_path)))
        _SOURCES[site_path] = repo_path
    return files


def _site_target(repo_page: str, site_page: str, target: str) -> str:
    """The link ``target`` of the repository file ``repo_page``, for the site page."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return target
    path, hash_, anchor = target.partition("#")
    repo_dest = posixpath.normpath(posixpath.join(posixpath.dirname(repo_page), path))
    if repo_dest.startswith("docs/"):
        site_dest = repo_dest[len("docs/") :]
    elif repo_dest == f"{ZOO}/README.md":
        site_dest = "zoo/index.md"
    elif repo_dest.startswith(f"{ZOO}/") and repo_dest.endswith(".md"):
        site_dest = "zoo/" + repo_dest[len(ZOO) + 1 :]
    elif repo_dest == "CHANGELOG.md":
        site_dest = "changelog.md"
    else:
        return target  # outside the site: MkDocs reports it
    rel = posixpath.relpath(site_dest, posixpath.dirname(site_page) or ".")
    return rel + hash_ + anchor


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    site_page = page.file.src_uri
    repo_page = _SOURCES.get(site_page)
    if repo_page is None:
        return markdown
    lines, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _LINK.sub(
                lambda m: m.group(1) + _site_target(repo_page, site_page, m.group(2)) + m.group(3),
                line,
            )
        lines.append(line)
    return "".join(lines)
