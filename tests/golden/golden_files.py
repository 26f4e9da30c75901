"""Reading and writing the recorded golden files (``tests/golden/<recipe>/<file>``).

``.json`` files are written with one key per line but lists of scalars on one line, so
that a re-recording's diff is compact; ``.csv`` and ``.md`` files are written as given.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent


def _dumps(obj: Any, indent: int = 0) -> str:
    """JSON with one key per line, but lists of scalars on one line (compact diffs)."""
    pad = " " * (indent + 1)
    if isinstance(obj, dict) and obj:
        items = [f"{pad}{json.dumps(k)}: {_dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [f"{pad}{_dumps(v, indent + 1)}" for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return json.dumps(obj, allow_nan=True)


def write_golden(name: str, files: dict[str, Any]) -> list[Path]:
    """Replace ``tests/golden/<name>/`` by ``files``."""
    d = GOLDEN_DIR / name
    if d.exists():
        shutil.rmtree(d)
    written = []
    for rel, content in sorted(files.items()):
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        text = _dumps(content) + "\n" if rel.endswith(".json") else content
        p.write_text(text, encoding="utf-8", newline="\n")
        written.append(p)
    return written


def load_golden(name: str) -> dict[str, Any]:
    """The recorded files of recipe ``name`` (``{}`` if never recorded)."""
    d = GOLDEN_DIR / name
    files: dict[str, Any] = {}
    if not d.is_dir():
        return files
    for p in sorted(d.rglob("*")):
        if p.is_file():
            rel = p.relative_to(d).as_posix()
            text = p.read_text(encoding="utf-8")
            files[rel] = json.loads(text) if rel.endswith(".json") else text
    return files
