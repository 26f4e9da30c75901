"""Golden outputs: the code in the tree reproduces what was recorded before the layering
refactor (the proof that nothing changed).

Each recipe of ``tests/golden/record.py`` (the README's / docs' command lines run as
``python eval/....py`` and ``python -m hpcgym`` from the repository root, the env
through ``gym.make``, the engine's Python API) is run again and compared with
``tests/golden/<recipe>/``: every recorded file, column, key and value must be
reproduced (floats to 1e-12 relative, everything else exactly); new files, columns and
keys are tolerated. A recipe that needs a real trace is skipped when
``HPCGYM_TRACE_DIR`` does not hold it. When an output is *meant* to change, re-record:
``python tests/golden/record.py NAME``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import require_trace


def _load(name: str, file: str):
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parent / "golden" / file
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    return mod


def _load_record():
    # record.py imports its siblings by name (a script's own folder is on sys.path when it
    # runs): load them under those names first
    _load("golden_diff", "golden_diff.py")
    _load("golden_files", "golden_files.py")
    return _load("hpcgym_golden_record", "record.py")


G = _load_record()
D = sys.modules["golden_diff"]  # tests/golden/golden_diff.py, imported by record.py


@pytest.mark.parametrize("name", list(G.RECIPES))
def test_golden(name, tmp_path):
    recipe = G.RECIPES[name]
    for trace in recipe.traces:
        require_trace(trace)  # skips with a reason when not available
    golden = G.load_golden(name)
    assert golden, (
        f"no golden files in tests/golden/{name}/: record them with "
        f"`python tests/golden/record.py {name}`"
    )
    new = G.run_recipe(name, tmp_path)
    errors = G.compare_outputs(name, golden, new)
    if errors:
        pytest.fail(
            f"golden recipe {name!r} ({recipe.doc.splitlines()[0]} ...) no longer reproduces "
            f"its recorded outputs; {len(errors)} difference(s):\n  "
            + "\n  ".join(errors)
            + f"\nIf the change is intended, re-record: python tests/golden/record.py {name}",
            pytrace=False,
        )


# ------------------------------------------------------ the comparison itself (fast)
def test_compare_tolerates_additions_only():
    old_csv = "trace,method,avg_bsld,backfilled\nX,EASY,1.5,3\nX,SAF,2.25,4\n"
    new_csv = (
        "trace,method,geo_ratio,avg_bsld,backfilled,wins\nX,EASY,1,1.5,3,0\nX,SAF,2,2.25,4,1\n"
    )
    assert D.diff_csv(old_csv, new_csv, "csv") == []
    assert (
        D.diff_json({"a": [1, 2.5, "x"], "b": None}, {"a": [1, 2.5, "x"], "b": None, "c": 1}) == []
    )
    assert D.diff_json({"f": 1.0}, {"f": 1.0 + 1e-15}) == []
    old_md = "title\n| method | AVEbsld |\n|---|---:|\n| EASY | 1.00 |\n"
    new_md = "title\n| method | AVEbsld | ci_low |\n|---|---:|---:|\n| EASY | 1.00 | 0.5 |\n"
    assert D.diff_markdown(old_md, new_md, "md") == []


def test_compare_reports_changes():
    old_csv = "trace,method,avg_bsld,backfilled\nX,EASY,1.5,3\n"
    # a float cell within CSV_FLOAT_RTOL (the last bit) is equal; a larger change is not
    ulp = "trace,method,avg_bsld,backfilled\nX,EASY,1.5000000000000002,3\n"
    assert D.diff_csv(old_csv, ulp, "c") == []
    (e,) = D.diff_csv(old_csv, "trace,method,avg_bsld,backfilled\nX,EASY,1.5000001,3\n", "c")
    assert "row 1 column 'avg_bsld'" in e and "'1.5'" in e and "'1.5000001'" in e
    (e,) = D.diff_csv(old_csv, "trace,method,avg_bsld,backfilled\nX,EASY,1.5,3.0\n", "csv")
    assert "'backfilled'" in e
    assert any(
        "column 'avg_bsld' missing" in x for x in D.diff_csv(old_csv, "trace,method\nX,EASY\n", "c")
    )
    assert D.diff_csv(old_csv, old_csv + "X,SAF,2,4\n", "csv") == ["csv: recorded 1 rows, now 2"]
    assert D.diff_json({"a": {"b": 1}}, {"a": {}}) == ["$.a.b: key missing (recorded 1)"]
    assert D.diff_json({"a": [1.0]}, {"a": [1.1]}) == ["$.a[0]: recorded 1.0, now 1.1"]
    assert D.diff_json({"n": 3}, {"n": 3.0}) == ["$.n: recorded 3, now 3.0"]
    errs = G.compare_outputs("x", {"f.json": {"k": 1}}, {"f.json": {"k": 2}})
    assert errs == ["tests/golden/x/f.json: $.k: recorded 1, now 2"]
    errs = G.compare_outputs("x", {"f.csv": "a\n1\n"}, {})
    assert errs and "f.csv: not produced any more" in errs[0]
