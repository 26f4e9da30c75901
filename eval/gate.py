"""Gate a shipped agent: choose on validation windows how sure its model must be to depart
from the heuristic (never the test split), and ship the gated agent.

    python eval/gate.py AGENT [--taus 0 0.5 0.6 0.7 0.8 0.9 0.95] [--windows 30] \\
        [--length 1024] [--seed 8] [--fallback sjbf] [--reference EASY-SJBF] \\
        [--workload synthetic:...] [--name NAME [--out agents/pretrained]]

``AGENT`` is a shipped agent's name or a model card ``.json``. Each threshold ``tau`` is
played as a gated agent (``hpcgym_agents.GatedAgent``: the fallback heuristic's choice --
by default the one that plays like the reference, ``sjbf`` for EASY-SJBF -- unless the
model gives another action a probability of at least ``tau``; ``tau`` 0 is the model
alone) on the same windows of the card's **validation** split, against the card's reward
reference; the table gives every threshold's share of decisions that departed from the
fallback, mean AVEbsld and paired geometric-mean ratio with its 95% bootstrap interval.
The lowest ratio is chosen (ties: the larger threshold). ``--name`` writes the gated
agent's card ``<out>/<NAME>.json`` (and ``.md``): the model's card with a ``gate`` section
holding the choice, no test section, sharing the model's ``.zip``; test it once with
``eval/heldout.py``. docs/evaluation.md, *Gated agents*.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run by path: `python -m eval.gate`
    import os

    _root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (_root, os.environ.get("PYTHONPATH"))))
    os.execv(sys.executable, [sys.executable, "-m", "eval.gate", *sys.argv[1:]])

from eval import _common as C  # noqa: E402
from hpcgym.cli.errors import UsageError, check_schedulers  # noqa: E402

__all__ = ["main"]


def _tau(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return v


def main(argv: list[str] | None = None) -> int:
    """Choose the gate; returns the exit code (2 on user errors, one line on stderr).

    :param argv: the arguments (default: the process's)
    """
    from hpcgym.evaluation.gating import GATE_FALLBACKS
    from hpcgym.evaluation.selection import DEFAULT_TAUS

    p = C.make_parser("python eval/gate.py", (__doc__ or "").split("\n\n")[0])
    p.add_argument("agent", help="a shipped agent's name or a model card .json")
    p.add_argument(
        "--taus",
        nargs="+",
        type=_tau,
        default=list(DEFAULT_TAUS),
        help="thresholds to compare (default: %(default)s)",
    )
    p.add_argument(
        "--fallback",
        default=None,
        choices=tuple(GATE_FALLBACKS),
        help="heuristic kept where the model is unsure (default: the reference's: sjbf for "
        "EASY-SJBF, EASY++ and ELOSS, easy for EASY)",
    )
    C.add_choice_args(p, seed=8, reference_of="card")
    p.add_argument("--name", default=None, help="ship the gated agent under this name")
    p.add_argument("--out", default=None, help="destination of --name (default agents/pretrained)")
    p.add_argument("--jobs", type=C.positive_int, default=None, help="worker processes")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    args = p.parse_args(argv)
    return C.run(p, lambda: _run(args))


def _card_path(agent: str) -> Path:
    p = Path(agent)
    if p.suffix == ".json" and p.is_file():
        return p
    shipped = C.agents_dir(None) / f"{agent}.json"
    if not p.suffix and shipped.is_file():
        return shipped
    raise UsageError(f"{agent}: neither a model card .json nor a shipped agent ({shipped})")


def _run(args: argparse.Namespace) -> int:
    from hpcgym.evaluation.cards import card_markdown, load_model_card
    from hpcgym.evaluation.selection import gated_card, select_gate
    from hpcgym.evaluation.windows import load_quartiles_text

    path = _card_path(args.agent)
    if args.reference is not None:
        check_schedulers([args.reference], "--reference")
    out = C.agents_dir(args.out)
    if args.name is not None:
        C.check_outputs(out=str(out))
        if (out / f"{args.name}.json").exists():
            raise UsageError(f"{out / f'{args.name}.json'} exists: choose another --name")
    try:
        card = load_model_card(path)
        sel = select_gate(
            card,
            agent_loader=C.agent_loader(),
            taus=args.taus,
            fallback=args.fallback,
            windows=args.windows,
            length=args.length,
            seed=args.seed,
            reference=args.reference,
            workload=args.workload,
            jobs=args.jobs,
            progress=args.progress,
        )
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    load = load_quartiles_text(sel.get("offered_load"))
    where = (
        f"windows of the generated workload {sel['trace']}"
        if sel["generated"]
        else "validation windows"
    )
    print(
        f"{card.name} gated with fallback {sel['fallback']}: {sel['windows']} {where} of "
        f"{sel['length']} jobs (seed {sel['seed']}" + (f"; {load}" if load else "") + f"); "
        f"{sel['reference']}: mean AVEbsld {sel['reference_mean_avg_bsld']:.2f}\n"
    )
    print(f"| tau | departures | mean AVEbsld | ratio vs {sel['reference']} [95%] | wins |")
    print("|---:|---:|---:|---:|---:|")
    for r in sel["candidates"]:
        mark = " <- chosen" if r["tau"] == sel["chosen_tau"] else ""
        print(
            f"| {r['tau']:g} | {100 * r['departure_rate']:.1f}% | {r['mean_avg_bsld']:.2f} | "
            f"{r['geo_ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | "
            f"{r['wins']}/{sel['windows']} |{mark}"
        )
    if args.name is None:
        print(f"\nship it: python eval/gate.py {args.agent} ... --name NAME")
        return 0
    data = gated_card(card, sel, args.name, out)
    jpath = out / f"{args.name}.json"
    jpath.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    mpath = jpath.with_suffix(".md")
    mpath.write_text(card_markdown(data), encoding="utf-8")
    print(f"\nwrote {jpath} and {mpath}; test it once: python eval/heldout.py {jpath} --seed S")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
