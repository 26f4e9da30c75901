"""``hpcgym heuristics``: every registered heuristic (queue policies, backfillers, queue
deciders, estimators, heuristic agents), from :mod:`hpcgym.sim.registry`."""

from __future__ import annotations

import argparse
import json

from hpcgym.cli.errors import UsageError
from hpcgym.cli.simulate import add_plugin_arg, load_plugins

__all__ = ["add_parser", "run_heuristics"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``heuristics`` command to the main parser."""
    from hpcgym.sim.registry import KINDS

    p = sub.add_parser(
        "heuristics",
        help="list the registered heuristics (policies, backfillers, estimators...)",
        description="Every registered heuristic, built-in or registered in Python "
        "(docs/heuristics.md: add one with register_policy, register_backfill...).",
    )
    p.add_argument("--kind", default=None, help=f"only one kind: {', '.join(KINDS)}")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_plugin_arg(p)
    p.set_defaults(func=run_heuristics)


def run_heuristics(args: argparse.Namespace) -> int:
    """Run ``hpcgym heuristics``: one line per heuristic (or JSON)."""
    from hpcgym.sim.registry import KINDS, list_heuristics
    from hpcgym.suggest import did_you_mean

    load_plugins(args)
    if args.kind is not None and args.kind not in KINDS:
        raise UsageError(
            f"--kind {args.kind}: unknown kind{did_you_mean(args.kind, KINDS)}; valid: "
            + ", ".join(KINDS)
        )
    rows = [
        {
            "kind": h.kind,
            "name": h.name,
            "source": "compiled" if h.compiled else ("built-in" if h.builtin else "Python"),
            "description": h.description + (f" [key {h.formula}]" if h.formula else ""),
        }
        for h in list_heuristics(args.kind)
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    wn = max(len(r["name"]) for r in rows)
    kind = None
    for r in rows:
        if r["kind"] != kind:
            kind = r["kind"]
            print(f"{kind}:")
        print(f"  {r['name']:<{wn}}  {r['source']:<8}  {r['description']}".rstrip())
    return 0
