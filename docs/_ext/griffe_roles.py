"""A griffe extension for the API reference: reStructuredText markup of the docstrings.

hpcgym's docstrings are Sphinx-style (``:param x:`` fields, parsed by mkdocstrings'
``docstring_style: sphinx``) and use a little reStructuredText that Markdown does not know.
Before mkdocstrings renders a docstring, this extension rewrites:

* cross-reference roles (``:func:`load```, ``:class:`~hpcgym.sim.Simulation```,
  ``:mod:`.methods```...) into optional cross-references: a link where the object is
  documented on the site, inline code otherwise (no warning either way);
* simple tables (``====  ====`` borders) into Markdown tables;
* a field for several parameters (``:param a, b: text``) into one field each;
* ``.. math::`` blocks into code blocks, ``:math:`x``` into inline code, and the
  ``::`` that introduces a literal block into ``:``.

It only changes what the site shows; the docstrings themselves stay as they are.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(func|class|meth|mod|data|attr|exc|obj|const):`([^`]+)`")
_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_PARAM_GROUP = re.compile(r"^(\s*):param (\w+(?:\s*,\s*\w+)+):(.*)$")
_BORDER = re.compile(r"^(\s*)(=+)((?: +=+)+)\s*$")


class RestructuredTextMarkup(griffe.Extension):
    """Rewrite every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **_: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value, obj)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found.extend(_walk(member))  # type: ignore[arg-type]
    return found


def convert(text: str, obj: griffe.Object | None = None) -> str:
    """The docstring ``text`` of ``obj`` with its reStructuredText markup rewritten."""
    text = _param_groups(text)
    text = _tables(text)
    text = _math_blocks(text)
    text = _literal_markers(text)
    text = _MATH_ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    return _ROLE.sub(lambda m: _crossref(m.group(2), obj), text)


def _crossref(target: str, obj: griffe.Object | None) -> str:
    target = target.strip()
    short = target.startswith("~")
    target = target.lstrip("~").removesuffix("()")
    if "<" in target and target.endswith(">"):  # :class:`text <path>`
        title, target = target[:-1].split("<", 1)
        title, target = title.strip(), target.strip()
    else:
        title = target.rsplit(".", 1)[-1] if short else target
    identifier = _resolve(target, obj)
    code = f"<code>{html.escape(title)}</code>"
    if identifier is None:
        return code
    return f'<autoref identifier="{html.escape(identifier)}" optional>{code}</autoref>'


def _resolve(target: str, obj: griffe.Object | None) -> str | None:
    if target.startswith(("hpcgym.", "hpcgym_agents.")) or target in ("hpcgym", "hpcgym_agents"):
        return target
    if obj is None:
        return None
    if target.startswith("."):  # relative module: from the object's package
        module = obj if obj.is_module else obj.module
        package = module if module.is_package else module.parent
        dots = len(target) - len(target.lstrip("."))
        base = package
        for _ in range(dots - 1):
            base = base.parent if base.parent is not None else base
        return f"{base.path}.{target.lstrip('.')}"
    head, _, rest = target.partition(".")
    try:
        resolved = obj.resolve(head)
    except Exception:  # griffe.NameResolutionError and friends: not an object of the API
        return None
    return f"{resolved}.{rest}" if rest else resolved


def _param_groups(text: str) -> str:
    """``:param a, b: text`` (and its continuation lines) -> ``:param a: text`` and so on."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _PARAM_GROUP.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent, names, first = match.groups()
        body = [first]
        i += 1
        while i < len(lines) and lines[i].strip() and _indent(lines[i]) > len(indent):
            body.append(lines[i])
            i += 1
        for name in re.split(r"\s*,\s*", names.strip()):
            out.append(f"{indent}:param {name}:{body[0]}")
            out.extend(body[1:])
    return "\n".join(out)


def _tables(text: str) -> str:
    """reStructuredText simple tables -> Markdown tables."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _BORDER.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        border = lines[i]
        columns = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
        rows: list[list[str]] = []
        header_rows = 0
        borders = 1
        j = i + 1
        while j < len(lines) and borders < 3:
            line = lines[j]
            if _BORDER.match(line):
                borders += 1
                if borders == 2:
                    header_rows = len(rows)
                j += 1
                continue
            if not line.strip():
                j += 1
                continue
            cells = [_cell(line, k, columns) for k in range(len(columns))]
            if rows and not cells[0]:  # a blank first column continues the row
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
            j += 1
        if borders < 3 or header_rows == 0:  # not a table after all
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        header, body = rows[:header_rows], rows[header_rows:]
        out.append(
            indent + "| " + " | ".join(" ".join(c) for c in zip(*header, strict=False)) + " |"
        )
        out.append(indent + "|" + "---|" * len(columns))
        for row in body:
            out.append(indent + "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        i = j
    return "\n".join(out)


def _cell(line: str, k: int, columns: list[tuple[int, int]]) -> str:
    start = columns[k][0]
    end = columns[k + 1][0] if k + 1 < len(columns) else len(line)
    return line[start:end].strip()


def _math_blocks(text: str) -> str:
    """``.. math:: expr`` (and its indented continuation lines) -> a code block."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = re.match(r"^(\s*)\.\. math::\s*(.*)$", lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent, first = match.groups()
        body = [first] if first else []
        i += 1
        while i < len(lines) and lines[i].strip() and _indent(lines[i]) > len(indent):
            body.append(lines[i].strip())
            i += 1
        out.extend([f"{indent}```text", *(indent + b for b in body), f"{indent}```"])
    return "\n".join(out)


def _literal_markers(text: str) -> str:
    """The ``::`` ending a paragraph before a literal block -> ``:`` (or nothing)."""
    text = re.sub(r"(?m)(\S) ::$", r"\1", text)
    return re.sub(r"(?m)(\S)::$", r"\1:", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
