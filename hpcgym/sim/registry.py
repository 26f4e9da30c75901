"""The one registry of heuristics: queue policies, backfillers, queue deciders (choosers),
runtime estimators and the heuristic agents of the envs.

Every consumer reads it: :func:`hpcgym.sim.schedulers.get_scheduler` (and so ``hpcgym
simulate``, ``hpcgym compare``, the envs' reward reference, the evaluation), the listings of
the command line, the heuristic agents of the envs and their gates. A new heuristic
is one call:

* :func:`register_policy` -- a queue policy: a Python priority function
  ``key(view) -> keys`` (one key per waiting job of a
  :class:`~hpcgym.sim.priority.QueueView`, lower first, ties by submission). It is then
  valid wherever a queue policy is (``NAME+EASY``, ``policy=NAME,backfill=sjbf``,
  ``reference="NAME+EASY-SJBF"``); the engine plays it through its external queue decisions
  (:class:`~hpcgym.sim.priority.PriorityChooser`), in the one event loop;
* :func:`register_backfill` -- a backfiller: a decider class ``decide(sim) -> job | None``
  (:mod:`hpcgym.sim.deciders`), valid as ``backfill=NAME`` or ``decider=NAME``;
* :func:`register_chooser` -- a queue decider ``choose(sim) -> job``
  (:mod:`hpcgym.sim.queue_deciders`), valid as ``decider=NAME``;
* :func:`register_estimator` -- a runtime estimator (:mod:`hpcgym.sim.estimators`, whose
  table this registry lists; :mod:`hpcgym.predictors` registers its own there).

The built-in queue policies and backfillers are the compiled core's (:attr:`Heuristic.kernel`
is their id). Installed packages add theirs through the entry point group
``hpcgym.heuristics`` (a module that registers on import, or a function called without
arguments), loaded on the first lookup. The old tables (``POLICIES``, ``BACKFILLS``,
``DECIDERS``, ``CHOOSERS``, ``AGENT_HEURISTICS``, ``GATE_FALLBACKS``) are read-only views
of this one. See ``docs/heuristics.md``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import runpy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from hpcgym.sim import _layout as L
from hpcgym.sim.estimators import ESTIMATORS, register_estimator
from hpcgym.suggest import did_you_mean

__all__ = [
    "KINDS",
    "Heuristic",
    "RegistryView",
    "get_heuristic",
    "heuristic_names",
    "list_heuristics",
    "load_heuristics",
    "register_agent_heuristic",
    "register_backfill",
    "register_chooser",
    "register_estimator",
    "register_policy",
    "unregister",
]

#: the kinds of heuristics, as :func:`get_heuristic` and :func:`list_heuristics` name them
KINDS: tuple[str, ...] = ("policy", "backfill", "chooser", "estimator", "agent")

_WHAT = {
    "policy": "policy",
    "backfill": "backfill",
    "chooser": "queue decider",
    "estimator": "estimator",
    "agent": "heuristic agent",
}


@dataclass(frozen=True)
class Heuristic:
    """One registered heuristic.

    :param kind: one of :data:`KINDS`
    :param name: its name (queue policies upper case, the others lower case)
    :param description: one line for listings
    :param kernel: the compiled core's id of a built-in policy or backfiller, else ``None``
    :param formula: a queue policy's key (``s`` submit, ``r`` run time, ``n`` processors,
        ``w`` wait; lower first)
    :param key: a Python queue policy's priority function ``key(view) -> keys``
    :param factory: a backfiller's decider class or a queue decider's class (or a loader of
        it without arguments, for the built-ins)
    :param alias_of: the name this one is another spelling of (``SPF`` of ``SJF``)
    :param builtin: shipped with hpcgym
    :param label: a heuristic agent's default label in reports
    :param plays: a deterministic heuristic agent's choice in the guarded env, else ``""``
    :param fallback: a gate may fall back to this agent: its place in the gates' list
        (lower first); ``None``: not a fallback
    :param tasks: the tasks a heuristic agent plays
    :param mirrors: the registered backfiller whose choices a heuristic agent makes in the
        env (``easy``, ``sjbf``): the gate fallback of a reference with that backfilling
    """

    kind: str
    name: str
    description: str = ""
    kernel: int | None = None
    formula: str = ""
    key: Callable[[Any], Any] | None = None
    factory: Any = None
    alias_of: str | None = None
    builtin: bool = False
    label: str = ""
    plays: str = ""
    fallback: int | None = None
    tasks: tuple[str, ...] = ()
    mirrors: str | None = None

    @property
    def compiled(self) -> bool:
        """Whether the compiled engine core runs it itself."""
        return self.kernel is not None

    def resolve(self) -> Any:
        """The decider or chooser class (a built-in's loader is called once)."""
        f = self.factory
        if isinstance(f, _Lazy):
            return f()
        return f


class _Lazy:
    """A built-in class loaded on first use (the deciders import the lookahead code)."""

    def __init__(self, module: str, attr: str) -> None:
        self.module, self.attr = module, attr
        self._cls: Any = None

    def __call__(self) -> Any:
        if self._cls is None:
            self._cls = getattr(importlib.import_module(self.module), self.attr)
        return self._cls


_TABLES: dict[str, dict[str, Heuristic]] = {k: {} for k in KINDS if k != "estimator"}
_plugins_loaded = False
#: changes with every registration (the views' caches)
_version = 0


def _key(kind: str, name: str) -> str:
    text = str(name).strip()
    return text.upper() if kind == "policy" else text.lower()


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}{did_you_mean(kind, KINDS)}; valid: {KINDS}")


def _add(entry: Heuristic, overwrite: bool) -> Heuristic:
    table = _TABLES[entry.kind]
    key = _key(entry.kind, entry.name)
    if not key or any(c in key for c in "+,=: "):
        raise ValueError(
            f"bad {_WHAT[entry.kind]} name {entry.name!r}: non-empty, without '+', ',', '=', "
            "':' or spaces (they separate the parts of a scheduler name)"
        )
    if entry.kind == "policy" and not entry.builtin:
        from hpcgym.sim.schedulers import NAMED

        if key == "EXTERNAL" or key in {n.upper() for n in NAMED}:
            raise ValueError(
                f"queue policy name {key!r} is taken (a named scheduler, or 'external'): "
                "choose another"
            )
    old = table.get(key)
    if old is not None and not overwrite:
        raise ValueError(
            f"{_WHAT[entry.kind]} {key!r} is already registered"
            + (" (a built-in)" if old.builtin else " (use overwrite=True to replace it)")
        )
    if old is not None and old.builtin:
        raise ValueError(f"{_WHAT[entry.kind]} {key!r} is a built-in and cannot be replaced")
    entry = replace(entry, name=key)
    table[key] = entry
    _bump()
    return entry


def register_policy(
    name: str,
    key: Callable[[Any], Any],
    *,
    description: str = "",
    overwrite: bool = False,
) -> Heuristic:
    """Register a queue policy given as a Python priority function.

    At every queue decision the engine asks ``key(view)`` for one key per waiting job
    (``view``: a :class:`~hpcgym.sim.priority.QueueView`, jobs in submission order) and
    makes the job with the lowest key the head, ties to the earlier submission; the jobs
    behind it keep that order, which EASY backfills in. This is exactly what a built-in
    policy does (tested: SJF's keys reproduce SJF).

    :param name: the policy's name (any case; shown upper case, as the built-ins)
    :param key: ``key(view) -> array`` of finite keys, one per job of ``view.jobs``
    :param description: one line for listings
    :param overwrite: replace a policy registered before (not a built-in)
    :return: the registered entry
    """
    if not callable(key):
        raise TypeError(f"the key of queue policy {name!r} must be callable, got {key!r}")
    return _add(Heuristic("policy", name, description, key=key), overwrite)


def register_backfill(
    name: str,
    decider: Any,
    *,
    description: str = "",
    overwrite: bool = False,
) -> Heuristic:
    """Register a backfiller given as a decider class.

    An instance (built with the scheduler's options as keyword arguments) is called at every
    decision point of the engine, ``decider(sim) -> job | None`` (the job to start now, or
    ``None`` to stop backfilling there); its class attribute ``candidates`` (``"easy"`` or
    ``"fit"``) says which jobs are candidates (:mod:`hpcgym.sim.deciders`).

    :param name: the backfiller's name (any case; shown lower case)
    :param decider: the decider class (or a factory with keyword options)
    :param description: one line for listings
    :param overwrite: replace a backfiller registered before (not a built-in)
    :return: the registered entry
    """
    if not callable(decider):
        raise TypeError(f"backfiller {name!r} needs a decider class, got {decider!r}")
    return _add(Heuristic("backfill", name, description, factory=decider), overwrite)


def register_chooser(
    name: str,
    chooser: Any,
    *,
    description: str = "",
    overwrite: bool = False,
) -> Heuristic:
    """Register a queue decider (chooser) class: an instance is called at every queue
    decision, ``chooser(sim) -> job`` (the waiting job that becomes the head);
    :mod:`hpcgym.sim.queue_deciders`. Valid as ``decider=NAME`` in scheduler specs.

    :param name: its name (any case; shown lower case)
    :param chooser: the class (or a factory with keyword options)
    :param description: one line for listings
    :param overwrite: replace one registered before (not a built-in)
    :return: the registered entry
    """
    if not callable(chooser):
        raise TypeError(f"queue decider {name!r} needs a class, got {chooser!r}")
    return _add(Heuristic("chooser", name, description, factory=chooser), overwrite)


def register_agent_heuristic(
    name: str,
    *,
    label: str,
    description: str = "",
    plays: str = "",
    fallback: int | None = None,
    tasks: tuple[str, ...] = ("backfill",),
    mirrors: str | None = None,
    overwrite: bool = False,
) -> Heuristic:
    """Register the name of a heuristic agent of the envs (``--agents NAME``). The agent
    object is built by the installed agent loader, which the library never
    imports; this entry is what the library knows of it.

    :param name: the agent's name (lower case)
    :param label: its default label in reports
    :param description: one line for listings
    :param plays: a deterministic agent's choice in the guarded env (``"EASY's choice"``)
    :param fallback: a gate may fall back to it: its place in the list of fallbacks
    :param tasks: the tasks it plays (``backfill``, ``schedule``)
    :param mirrors: the registered backfiller whose choices it makes in the env, if any
    :param overwrite: replace one registered before (not a built-in)
    """
    entry = Heuristic(
        "agent",
        name,
        description,
        label=label,
        plays=plays,
        fallback=fallback,
        tasks=tuple(tasks),
        mirrors=None if mirrors is None else get_heuristic("backfill", mirrors).name,
    )
    return _add(entry, overwrite)


def unregister(kind: str, name: str) -> None:
    """Remove a heuristic registered from Python (not a built-in, not an estimator).

    :raises ValueError: unknown name, or a built-in
    """
    entry = get_heuristic(kind, name)
    if entry.builtin or kind == "estimator":
        raise ValueError(f"{_WHAT[kind]} {entry.name!r} is a built-in and cannot be removed")
    del _TABLES[kind][entry.name]
    _bump()


def _bump() -> None:
    global _version
    _version += 1


# ------------------------------------------------------------------------ plugins
#: the environment variable naming files or modules of heuristics (``os.pathsep`` between
#: them) that every process loads on its first lookup -- worker processes too
PLUGIN_ENV = "HPCGYM_HEURISTICS"
_loaded_sources: set[str] = set()


def load_heuristics(source: str) -> None:
    """Load a Python file or module that registers heuristics (its ``register_*`` calls),
    once per process, and name it in :data:`PLUGIN_ENV` so that the worker processes of
    an evaluation load it too (``hpcgym compare --plugin FILE``).

    :param source: a ``.py`` file or an importable module name
    :raises ValueError: the file or module does not exist (what it raised otherwise
        propagates)
    """
    text = str(source).strip()
    path = os.path.abspath(text) if text.endswith(".py") or os.sep in text else None
    key = path or text
    if key not in _loaded_sources:
        if path is not None:
            if not os.path.isfile(path):
                raise ValueError(f"heuristics file {text!r} not found")
            _loaded_sources.add(key)
            runpy.run_path(path, run_name=f"hpcgym_heuristics_{len(_loaded_sources)}")
        else:
            if importlib.util.find_spec(text) is None:
                raise ValueError(f"heuristics module {text!r} not found (a .py file, or a module)")
            _loaded_sources.add(key)
            importlib.import_module(text)
    named = [s for s in os.environ.get(PLUGIN_ENV, "").split(os.pathsep) if s]
    if key not in named:
        os.environ[PLUGIN_ENV] = os.pathsep.join([*named, key])


def _load_plugins() -> None:
    """On the first lookup of the process: load the entry point group ``hpcgym.heuristics``
    and the sources named by :data:`PLUGIN_ENV` (later ones come through
    :func:`load_heuristics`)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="hpcgym.heuristics"):
        obj = ep.load()
        if callable(obj) and not isinstance(obj, type):
            obj()
    for source in os.environ.get(PLUGIN_ENV, "").split(os.pathsep):
        if source and source not in _loaded_sources:
            load_heuristics(source)


# ------------------------------------------------------------------------ lookup


def _estimators() -> dict[str, Heuristic]:
    out = {}
    for name, entry in ESTIMATORS.items():
        cls = entry.cls if isinstance(entry.cls, type) else None
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls is not None and cls.__doc__ else ""
        own = str(getattr(entry.cls, "__module__", "")).startswith("hpcgym.")
        out[name] = Heuristic("estimator", name, doc, builtin=own, factory=entry.cls)
    return out


def _table(kind: str) -> dict[str, Heuristic]:
    _check_kind(kind)
    _load_plugins()
    return _estimators() if kind == "estimator" else _TABLES[kind]


def get_heuristic(kind: str, name: str) -> Heuristic:
    """The registered heuristic ``name`` of ``kind`` (any case).

    :param kind: one of :data:`KINDS`
    :param name: its name
    :raises ValueError: for an unknown name, with the valid choices and the nearest
    """
    table = _table(kind)
    key = _key(kind, name)
    if kind == "estimator":
        from hpcgym.sim.estimators import canonical_name

        key = canonical_name(key).partition(":")[0]
    if key not in table:
        raise ValueError(
            f"unknown {_WHAT[kind]} {name!r}{did_you_mean(name, table)}; valid choices: "
            f"{', '.join(table)}"
        )
    return table[key]


def list_heuristics(kind: str | None = None) -> list[Heuristic]:
    """Every registered heuristic (of ``kind``), in registration order, built-ins first."""
    kinds = KINDS if kind is None else (kind,)
    return [h for k in kinds for h in _table(k).values()]


def heuristic_names(kind: str, aliases: bool = True, compiled: bool | None = None) -> list[str]:
    """The names of ``kind``.

    :param kind: one of :data:`KINDS`
    :param aliases: include other spellings (``SPF``, ``LPF``)
    :param compiled: ``True``: only the compiled core's; ``False``: only Python ones
    """
    return [
        h.name
        for h in _table(kind).values()
        if (aliases or h.alias_of is None) and (compiled is None or h.compiled == compiled)
    ]


class RegistryView(Mapping[str, Any]):
    """A read-only, live view of one kind of the registry as an old-style table.

    :param kind: one of :data:`KINDS`
    :param value: what the table maps a name to (e.g. the kernel id)
    :param keep: which entries the table has
    :param order: a sort key of the entries (default: the registry's order)
    """

    def __init__(
        self,
        kind: str,
        value: Callable[[Heuristic], Any],
        keep: Callable[[Heuristic], bool] = lambda h: True,
        order: Callable[[Heuristic], Any] | None = None,
    ) -> None:
        self._kind, self._value, self._keep, self._order = kind, value, keep, order
        self._cache: tuple[int, dict[str, Heuristic]] | None = None
        self._values: dict[str, Any] = {}

    def _entries(self) -> dict[str, Heuristic]:
        cache = self._cache
        if cache is not None and cache[0] == _version and self._kind != "estimator":
            return cache[1]
        table = _table(self._kind)
        items = [(k, h) for k, h in table.items() if self._keep(h)]
        if self._order is not None:
            order = self._order
            items.sort(key=lambda kh: order(kh[1]))
        self._cache = (_version, dict(items))
        self._values = {}
        return self._cache[1]

    def copy(self) -> dict[str, Any]:
        """A plain dict of the table now (as the old tables' ``copy()``)."""
        return dict(self.items())

    def __getitem__(self, name: str) -> Any:
        entries = self._entries()
        values = self._values
        if name not in values:
            entry = entries.get(name)
            if entry is None:
                raise KeyError(name)
            values[name] = self._value(entry)
        return values[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries()

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __repr__(self) -> str:
        return repr(dict(self.items()))


# -------------------------------------------------------------------- built-ins
def _builtin(entry: Heuristic) -> None:
    _TABLES[entry.kind][entry.name] = replace(entry, builtin=True)


def _builtins() -> None:
    pol = [
        ("FCFS", L.POL_FCFS, "s", "first come, first served", None),
        ("SJF", L.POL_SJF, "r", "shortest (estimated) job first", None),
        ("SPF", L.POL_SJF, "r", "shortest processing time first (= SJF)", "SJF"),
        ("SQF", L.POL_SQF, "n", "smallest job (processors) first", None),
        ("SAF", L.POL_SAF, "r*n", "smallest area first (Carastan-Santos et al.)", None),
        ("LJF", L.POL_LJF, "-r", "longest job first", None),
        ("LPF", L.POL_LJF, "-r", "longest processing time first (= LJF)", "LJF"),
        ("LQF", L.POL_LQF, "-n", "largest job (processors) first", None),
        ("LAF", L.POL_LAF, "-r*n", "largest area first", None),
        ("WFP3", L.POL_WFP3, "-(w/r)^3*n", "WFP3 (Tang et al.)", None),
        ("UNICEF", L.POL_UNICEF, "-w/(log2(max(n,2))*r)", "UNICEF (Tang et al.)", None),
        ("F1", L.POL_F1, "log10(r)*n + 870*log10(s)", "F1 (Carastan-Santos et al.)", None),
        ("F2", L.POL_F2, "sqrt(r)*n + 25600*log10(s)", "F2 (Carastan-Santos et al.)", None),
        ("F3", L.POL_F3, "r*n + 6.86e6*log10(s)", "F3 (Carastan-Santos et al.)", None),
        ("F4", L.POL_F4, "r*sqrt(n) + 5.3e5*log10(s)", "F4 (Carastan-Santos et al.)", None),
    ]
    for name, kid, formula, desc, alias in pol:
        _builtin(Heuristic("policy", name, desc, kernel=kid, formula=formula, alias_of=alias))

    def lazy(module: str, attr: str) -> _Lazy:
        return _Lazy(f"hpcgym.sim.{module}", attr)

    bf = [  # (the deciders' old table listed probabilistic first)
        (
            "probabilistic",
            None,
            lazy("deciders", "ProbabilisticBackfiller"),
            "Nissimov's probabilistic test on HMM runtime distributions (EASY-HMM)",
        ),
        ("none", L.BF_NONE, None, "no backfilling (strict head-of-line blocking)"),
        (
            "easy",
            L.BF_EASY,
            lazy("deciders", "EasyDecider"),
            "EASY (Lifka 1995): the first job in queue order that cannot delay the head",
        ),
        ("sjbf", L.BF_SJBF, None, "EASY with the shortest estimate first (EASY-SJBF)"),
        ("conservative", L.BF_CONSERVATIVE, None, "conservative: a reservation for every job"),
        ("external", L.BF_EXTERNAL, None, "the caller decides at each decision point (RL env)"),
        (
            "lookahead1-clairvoyant",
            None,
            lazy("lookahead", "LookaheadOracle"),
            "clairvoyant one-step lookahead over EASY-SJBF rollouts (a reference point)",
        ),
        (
            "lookahead1-online",
            None,
            lazy("lookahead", "Lookahead"),
            "online one-step lookahead over Monte Carlo futures",
        ),
    ]
    for name, bf_id, factory, desc in bf:
        _builtin(Heuristic("backfill", name, desc, kernel=bf_id, factory=factory))
    ch = [
        ("policy", "PolicyChooser", "the first job of a built-in policy's order"),
        (
            "schedule-lookahead1-clairvoyant",
            "ScheduleOracle",
            "clairvoyant one-step lookahead over the head of the queue (a reference point)",
        ),
        (
            "schedule-lookahead1-online",
            "ScheduleLookahead",
            "online one-step lookahead over the head of the queue",
        ),
    ]
    for name, attr, desc in ch:
        _builtin(Heuristic("chooser", name, desc, factory=lazy("queue_deciders", attr)))
    bs = ("backfill", "schedule")
    ag = [
        ("easy", "EasyAgent", "EASY's choice", 1, ("backfill",), "EASY, read from the rows"),
        ("sjbf", "SJBFAgent", "EASY-SJBF's choice", 0, ("backfill",), "EASY-SJBF, from the rows"),
        ("stop", "StopAlways", "STOP: never backfill", 3, ("backfill",), "never backfills"),
        ("random", "RandomValid", "a random valid row", None, bs, "a random valid row"),
        ("first", "FirstValid", "the first valid row", 2, bs, "the first valid row"),
    ]
    for name, label, plays, fb, tasks, desc in ag:
        mirrors = name if name in ("easy", "sjbf") else None  # the backfillers they play
        entry = Heuristic("agent", name, desc, label=label, plays=plays, fallback=fb, tasks=tasks)
        _builtin(replace(entry, mirrors=mirrors))


_builtins()
