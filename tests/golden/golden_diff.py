"""How a recipe's new outputs are compared with its golden files (the comparison rules of
``tests/golden/record.py``: :func:`compare_outputs`). Every recorded file, column, key,
row and value must be reproduced; new files, CSV / Markdown columns and JSON keys are
tolerated."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

#: relative tolerance of float comparisons of JSON values
FLOAT_RTOL = 1e-12
#: relative tolerance of CSV / Markdown cells that are floats, as for JSON values: numpy's
#: vectorised ``log``/``exp`` differ in the last bit between CPUs (AVX-512 or not), which
#: moves a bootstrap interval's bound by 1 ulp; every scheduling result is still exact
CSV_FLOAT_RTOL = FLOAT_RTOL


_INT_RE = re.compile(r"[+-]?\d+")
MAX_REPORTED = 25  # differences listed per file


def _close(a: float, b: float, rtol: float = FLOAT_RTOL) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b))


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 200 else s[:200] + "..."


def diff_json(old: Any, new: Any, where: str = "$") -> list[str]:
    """Differences of ``new`` from the recorded ``old`` (extra dict keys in ``new`` are
    fine)."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where}: recorded an object, now {type(new).__name__} {_short(new)}"]
        errs: list[str] = []
        for k, v in old.items():
            if k not in new:
                errs.append(f"{where}.{k}: key missing (recorded {_short(v)})")
            else:
                errs += diff_json(v, new[k], f"{where}.{k}")
        return errs
    if isinstance(old, list):
        if not isinstance(new, list):
            return [f"{where}: recorded a list, now {type(new).__name__} {_short(new)}"]
        errs = []
        if len(old) != len(new):
            errs.append(f"{where}: recorded {len(old)} items, now {len(new)}")
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            errs += diff_json(a, b, f"{where}[{i}]")
        return errs
    if isinstance(old, bool) or old is None or isinstance(old, str):
        ok = type(new) is type(old) and new == old
    elif isinstance(old, int):
        ok = isinstance(new, int) and not isinstance(new, bool) and new == old
    elif isinstance(old, float):
        ok = isinstance(new, (int, float)) and not isinstance(new, bool) and _close(old, new)
    else:  # pragma: no cover
        ok = old == new
    return [] if ok else [f"{where}: recorded {_short(old)}, now {_short(new)}"]


def _cell_equal(old: str, new: str) -> bool:
    if old == new:
        return True
    if CSV_FLOAT_RTOL <= 0 or _INT_RE.fullmatch(old.strip()) or not old.strip():
        return False
    try:
        return _close(float(old), float(new), CSV_FLOAT_RTOL)
    except ValueError:
        return False


def _table_diff(
    old_rows: list[list[str]], new_rows: list[list[str]], where: str, header_row: int = 0
) -> list[str]:
    """Rows compared by column name: every recorded column (in recorded relative order)
    and row; extra columns in ``new`` are fine."""
    if not old_rows:
        return []
    if not new_rows:
        return [f"{where}: recorded {len(old_rows)} lines, now empty"]
    oh, nh = old_rows[header_row], new_rows[header_row]
    errs: list[str] = []
    idx: list[tuple[int, int, str]] = []
    for i, h in enumerate(oh):
        if h not in nh:
            errs.append(f"{where}: column {h!r} missing (columns now: {nh})")
        else:
            idx.append((i, nh.index(h), h))
    order = [j for _, j, _ in idx]
    if order != sorted(order):
        errs.append(f"{where}: recorded columns reordered: {[h for _, _, h in idx]} -> {nh}")
    if len(old_rows) != len(new_rows):
        errs.append(f"{where}: recorded {len(old_rows) - 1} rows, now {len(new_rows) - 1}")
    for r, (orow, nrow) in enumerate(zip(old_rows, new_rows, strict=False)):
        if r == header_row:
            continue
        for i, j, h in idx:
            a = orow[i] if i < len(orow) else ""
            b = nrow[j] if j < len(nrow) else ""
            if not _cell_equal(a, b):
                errs.append(f"{where}: row {r} column {h!r}: recorded {a!r}, now {b!r}")
    return errs


def diff_csv(old: str, new: str, where: str) -> list[str]:
    return _table_diff(
        list(csv.reader(io.StringIO(old))), list(csv.reader(io.StringIO(new))), where
    )


def _md_blocks(text: str) -> list[tuple[str, Any]]:
    """Markdown as ("text", line) and ("table", rows) blocks (separator rows dropped)."""
    blocks: list[tuple[str, Any]] = []
    table: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
                table.append(cells)
            continue
        if table:
            blocks.append(("table", table))
            table = []
        if line.strip():
            blocks.append(("text", line.rstrip()))
    if table:
        blocks.append(("table", table))
    return blocks


def diff_markdown(old: str, new: str, where: str) -> list[str]:
    """Text lines equal; tables compared by column name (extra columns fine)."""
    ob, nb = _md_blocks(old), _md_blocks(new)
    errs: list[str] = []
    if [k for k, _ in ob] != [k for k, _ in nb]:
        errs.append(
            f"{where}: block structure changed: {[k for k, _ in ob]} -> {[k for k, _ in nb]}"
        )
    for n, ((ok, ov), (nk, nv)) in enumerate(zip(ob, nb, strict=False)):
        if ok != nk:
            continue
        if ok == "text" and ov != nv:
            errs.append(f"{where}: line block {n}: recorded {ov!r}, now {nv!r}")
        elif ok == "table":
            errs += _table_diff(ov, nv, f"{where} table {n}")
    return errs


def compare_outputs(name: str, golden: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Every difference of the ``new`` outputs of recipe ``name`` from ``golden``, one
    line each, ``tests/golden/<name>/<file>: <where>: recorded X, now Y``."""
    errs: list[str] = []
    for rel, old in sorted(golden.items()):
        label = f"tests/golden/{name}/{rel}"
        if rel not in new:
            errs.append(f"{label}: not produced any more (produced: {sorted(new)})")
            continue
        if rel.endswith(".json"):
            e = diff_json(old, new[rel])
        elif rel.endswith(".csv"):
            e = diff_csv(old, new[rel], "csv")
        elif rel.endswith(".md"):
            e = diff_markdown(old, new[rel], "markdown")
        else:
            e = [] if old == new[rel] else ["content differs"]
        if e:
            more = f" (+{len(e) - MAX_REPORTED} more)" if len(e) > MAX_REPORTED else ""
            errs += [f"{label}: {x}" for x in e[:MAX_REPORTED]]
            if more:
                errs.append(f"{label}: ...{more}")
    return errs
