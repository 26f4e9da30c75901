"""Named schedulers: a name for every (policy, backfill, estimate, correction) triple
the literature uses, accepted wherever a scheduler is asked for (``hpcgym simulate
--scheduler``, the env's reward normalizer, evaluation).

Spellings accepted by :func:`get_scheduler`:

* a named scheduler, e.g. ``EASY``, ``EASY-AR``, ``EASY-SJBF``, ``EASY++``, ``SAF``,
  ``ELOSS``, ``CONSERVATIVE``, ``EASY-HMM`` (see :data:`NAMED`; case-insensitive).
  ``EASY-HMM`` is *decider-backed*: the engine runs with external backfilling and a
  Python decider (:mod:`hpcgym.sim.deciders`, Nissimov's probabilistic test with HMM
  runtime distributions) decides at the engine's decision points;
* ``POLICY+NAME``: a named scheduler with another queue policy, e.g. ``SJF+EASY``,
  ``WFP3+EASY-AR``, ``F1+EASY``, ``FCFS+NONE`` (no backfilling);
* a key-value spec, e.g. ``policy=SJF,backfill=sjbf,estimate=actual,correction=doubling``
  (keys: policy, backfill, estimate, rank_estimate (or ``rank``), correction, starvation,
  decider, warm); with a
  ``decider``, any other key is an option of the decider
  (``decider=lookahead1-clairvoyant,backfill=sjbf,k=8``);
* a named scheduler followed by ``key=value`` options, e.g. ``LOOKAHEAD1-CLAIRVOYANT,k=8,
  horizon=256``, ``LOOKAHEAD1-ONLINE,samples=8,seed=3``, ``EASY-HMM,tau=0.1`` or
  ``SJF+EASY,estimate=actual``: the keys above replace the scheduler's own, other keys
  are options of its decider. Values are read as int, float, ``true``/``false`` or text.
  ``warm=log`` (or ``warm=N`` jobs) warm-starts an online estimator from the trace's
  recorded schedule before the window (``ELOSS,warm=log``; :mod:`hpcgym.sim.warmstart`).
  ``rank=NAME`` (or ``rank_estimate=NAME``) gives the queue policy its own ranking
  estimator while ``estimate`` serves the reservations and backfilling only
  (``SAF+EASY-SJBF,estimate=eloss,rank=log-ridge``; ``SJF+EASY,rank=actual`` ranks by the
  real run times and reserves by the requests).

``LOOKAHEAD1-CLAIRVOYANT`` and ``LOOKAHEAD1-ONLINE`` (:mod:`hpcgym.sim.lookahead`) are
decider-backed one-step lookahead backfillers over EASY-SJBF rollouts;
``SCHEDULE-LOOKAHEAD1-CLAIRVOYANT`` and ``SCHEDULE-LOOKAHEAD1-ONLINE``
(:mod:`hpcgym.sim.queue_deciders`) choose the head of the queue the same way, rolled out
with the reference order. The CLAIRVOYANT ones see the window's future: reference
points, not schedulers a site could run, and -- one step of lookahead -- not bounds on
anything. Their old names (``LOOKAHEAD-ORACLE``, ``LOOKAHEAD``, ``SCHEDULE-ORACLE``,
``SCHEDULE-LOOKAHEAD``) still resolve, with a :class:`FutureWarning`
(:mod:`hpcgym.sim.renamed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hpcgym.sim.engine import CORRECTIONS, SimResult, Simulation
from hpcgym.sim.estimators import BUILTIN_ESTIMATORS, canonical_name, make_estimator
from hpcgym.sim.registry import get_heuristic, heuristic_names
from hpcgym.sim.renamed import RENAMED_DECIDERS, RENAMED_SCHEDULERS, renamed
from hpcgym.sim.warmstart import warm_label
from hpcgym.suggest import did_you_mean
from hpcgym.workload.core import Workload

__all__ = ["NAMED", "SchedulerSpec", "get_scheduler", "is_clairvoyant", "list_schedulers"]


@dataclass(frozen=True)
class SchedulerSpec:
    """A complete scheduler: queue policy, backfilling, runtime estimate, correction.

    :param name: display name
    :param policy: queue policy (:data:`hpcgym.sim.engine.POLICIES`)
    :param backfill: ``none``, ``easy``, ``sjbf`` or ``conservative``
    :param estimate: ``request``, ``actual`` or a predictor name of
        :func:`hpcgym.sim.estimators.make_estimator`
    :param estimate_kwargs: keyword arguments of the predictor
    :param correction: ``requested``, ``incremental`` or ``doubling``
    :param starvation: starvation threshold in seconds, ``"auto"`` or ``None``
    :param description: one line for listings
    :param decider: name of a registered decider (:func:`hpcgym.sim.deciders.make_decider`)
        that makes the backfill decisions at the engine's decision points instead of the
        compiled ``backfill``; ``None`` (default): the compiled backfiller
    :param decider_kwargs: keyword arguments of the decider
    :param warm: warm-start the online estimator from the trace's accounting log before
        the window: ``"log"`` (every job before it) or a number of jobs
        (:mod:`hpcgym.sim.warmstart`); ``None`` (default): cold, as the estimator of a
        window has always been. It warms the ranking estimator too
    :param rank_estimate: the estimator the queue policy ranks by (a name as for
        ``estimate``), apart from ``estimate``, which then serves the reservations and
        backfilling only; ``None`` (default): ``estimate`` does both
    :param rank_estimate_kwargs: keyword arguments of the ranking predictor
    :param shadow_window: ``> 0``: the head's reservation as Slurm's will-run test plans
        it, in windows of this many seconds (:class:`~hpcgym.sim.engine.Simulation`;
        ``SLURM-EASY``); ``0`` (default): exact
    :param shadow_origin: the clock time of time 0 (aligns those windows; a Slurm
        replay's ``t0``)
    """

    name: str
    policy: str = "FCFS"
    backfill: str = "easy"
    estimate: str = "request"
    estimate_kwargs: tuple[tuple[str, Any], ...] = field(default=())
    correction: str = "incremental"
    starvation: float | str | None = None
    description: str = ""
    decider: str | None = None
    decider_kwargs: tuple[tuple[str, Any], ...] = field(default=())
    warm: str | None = None
    rank_estimate: str | None = None
    rank_estimate_kwargs: tuple[tuple[str, Any], ...] = field(default=())
    shadow_window: float = 0.0
    shadow_origin: float = 0.0

    def _estimator(self) -> Any:
        return self._make_estimator(self.estimate, self.estimate_kwargs)

    def _make_estimator(self, name: str, kwargs: tuple[tuple[str, Any], ...]) -> Any:
        kw = dict(kwargs)
        if self.warm is not None:
            kw["warm"] = self.warm
        elif name.lower() in BUILTIN_ESTIMATORS and not kw:
            return name.lower()
        return make_estimator(name, **kw)

    @property
    def ranks_apart(self) -> bool:
        """Whether the queue ranks by another estimator than the reservations use."""
        if self.rank_estimate is None:
            return False
        return (canonical_name(self.rank_estimate), self.rank_estimate_kwargs) != (
            canonical_name(self.estimate),
            self.estimate_kwargs,
        )

    def _rank_estimator(self) -> Any:
        """The ranking estimator of a new simulation, or ``None`` (the estimate ranks)."""
        if not self.ranks_apart:
            return None
        assert self.rank_estimate is not None
        return self._make_estimator(self.rank_estimate, self.rank_estimate_kwargs)

    def make_simulation(
        self,
        workload: Workload,
        seed: int | np.random.Generator | None = 0,
        *,
        backfill: str | None = None,
        candidates: str = "easy",
    ) -> Simulation:
        """A fresh :class:`Simulation` of ``workload`` with this scheduler.

        ``backfill="external"`` keeps the policy/estimate/correction but hands the
        backfill decisions to the caller (the RL env does this); the external
        backfill order is this scheduler's (``sjbf`` for SJBF schedulers). A
        decider-backed scheduler (``backfill=None``) gets external backfilling with the
        decider's candidate mode and a fresh decider, which :meth:`Simulation.run` uses.
        """
        decider = self.make_decider() if backfill is None else None
        chooser = None
        if getattr(decider, "decides", "backfill") == "queue":
            chooser, decider = decider, None  # a queue decider: policy="external"
        rest = self.policy
        if not get_heuristic("policy", self.policy).compiled:  # a Python priority function
            chooser, rest = self._priority_chooser(chooser, decider)
        if decider is not None:
            backfill, candidates = "external", decider.candidates
        return Simulation(
            workload,
            policy="external" if chooser is not None else self.policy,
            rest_order=rest,
            chooser=chooser,
            backfill=backfill or self.backfill,
            estimate=self._estimator(),
            correction=self.correction,
            starvation=self.starvation,
            candidates=candidates,
            external_order="sjbf" if self.backfill == "sjbf" else "policy",
            seed=seed,
            decider=decider,
            rank_estimate=self._rank_estimator(),
            shadow_window=float(self.shadow_window),
            shadow_origin=float(self.shadow_origin),
        )

    def _priority_chooser(self, chooser: Any, decider: Any) -> tuple[Any, str]:
        """The chooser that plays this scheduler's Python queue policy, and the rest order
        it needs (:mod:`hpcgym.sim.priority`)."""
        from hpcgym.sim.priority import REST_ORDER, PriorityChooser

        why = None
        if chooser is not None:
            why = f"the queue decider {self.decider!r} chooses the head itself"
        elif decider is not None and hasattr(decider, "_futures"):
            why = f"the lookahead {self.decider!r} rolls out with a compiled queue policy"
        elif self.starvation is not None:
            why = "the starvation rule is not available to a Python priority function"
        elif self.ranks_apart:
            why = "a Python priority function ranks by its own keys, not by rank="
        if why is not None:
            raise ValueError(f"scheduler {self.name!r} with queue policy {self.policy!r}: {why}")
        return PriorityChooser(self.policy), REST_ORDER

    def make_decider(self) -> Any:
        """A fresh decider of this scheduler, or ``None`` (compiled backfilling)."""
        if self.decider is None:
            return None
        from hpcgym.sim.deciders import make_decider
        from hpcgym.sim.queue_deciders import CHOOSERS, make_chooser

        name = renamed(self.decider.lower(), RENAMED_DECIDERS, "decider")
        if name in CHOOSERS:
            return make_chooser(name, **dict(self.decider_kwargs))

        return make_decider(name, **dict(self.decider_kwargs))

    def simulate(self, workload: Workload, seed: int | np.random.Generator | None = 0) -> SimResult:
        res = self.make_simulation(workload, seed).run()
        res.config["scheduler"] = self.name
        return res

    def with_policy(self, policy: str) -> SchedulerSpec:
        new = get_heuristic("policy", policy).name
        own = re.compile(rf"\b{re.escape(self.policy)}\b")
        desc = self.description
        if own.search(desc):  # "FCFS + EASY ..." -> "SJF + EASY ...", "SAF order" too
            desc = own.sub(new, desc, count=1)
        elif desc:
            desc = f"{new} queue; {desc}"
        return replace(self, name=f"{new}+{self.name}", policy=new, description=desc)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "policy": self.policy,
            "backfill": self.backfill,
            "estimate": self.estimate,
            "estimate_kwargs": dict(self.estimate_kwargs),
            "correction": self.correction,
            "starvation": self.starvation,
            "decider": self.decider,
            "decider_kwargs": dict(self.decider_kwargs),
            **({"warm": self.warm} if self.warm is not None else {}),
            **({"shadow_window": self.shadow_window} if self.shadow_window else {}),
            **(
                {
                    "rank_estimate": self.rank_estimate,
                    "rank_estimate_kwargs": dict(self.rank_estimate_kwargs),
                }
                if self.ranks_apart
                else {}
            ),
        }


def policy_name(name: str, policy: str = "FCFS") -> str:
    """The name reports give the scheduler ``name`` played with queue ``policy``: the bare
    name for FCFS (the named schedulers' own queue), ``POLICY+NAME`` otherwise, e.g.
    ``policy_name("EASY-SJBF", "sjf") == "SJF+EASY-SJBF"``. Unlike
    :meth:`SchedulerSpec.with_policy`, FCFS adds no prefix; both are valid
    :func:`get_scheduler` names.

    :param name: a scheduler name (:data:`NAMED`, or any name a report uses)
    :param policy: a queue policy (:data:`POLICIES`, any case)
    :raises ValueError: for an unknown policy, with the valid choices
    """
    policy = get_heuristic("policy", policy).name
    return name if policy == "FCFS" else f"{policy}+{name}"


def _policies() -> list[str]:
    """Every registered queue policy's name (compiled and Python)."""
    return heuristic_names("policy")


def _check(kind: str, value: str, table: Any) -> None:
    if value.lower() not in {k.lower() for k in table}:
        hint = did_you_mean(value, table)
        raise ValueError(f"unknown {kind} {value!r}{hint}; valid choices: {', '.join(table)}")


def _s(name: str, desc: str, **kw: Any) -> SchedulerSpec:
    return SchedulerSpec(name=name, description=desc, **kw)


#: The named schedulers.
NAMED: dict[str, SchedulerSpec] = {
    s.name: s
    for s in [
        _s("EASY", "FCFS + EASY backfilling with user requests (Lifka 1995)"),
        _s("EASY-AR", "FCFS + EASY with actual runtimes (clairvoyant)", estimate="actual"),
        _s("EASY-SJBF", "FCFS + EASY, shortest-request-first backfill order", backfill="sjbf"),
        _s(
            "EASY-SJBF-AR",
            "FCFS + EASY-SJBF with actual runtimes",
            backfill="sjbf",
            estimate="actual",
        ),
        _s("NONE", "no backfilling (strict head-of-line blocking)", backfill="none"),
        _s(
            "CONSERVATIVE", "FCFS + conservative backfilling with requests", backfill="conservative"
        ),
        _s(
            "CONSERVATIVE-AR",
            "FCFS + conservative backfilling with actual runtimes",
            backfill="conservative",
            estimate="actual",
        ),
        _s(
            "SLURM-EASY",
            "FCFS + EASY with requests, the reservation as Slurm's sched/backfill plans it "
            "(bf_job_part_count_reserve=1, bf_busy_nodes: will-run windows of 30 s)",
            shadow_window=30.0,
        ),
        _s("SAF", "SAF order + EASY with requests (Carastan-Santos)", policy="SAF"),
        _s(
            "EASY++",
            "FCFS + AVE2 predictions + incremental correction + SJBF (Tsafrir et al.; "
            "predictsim's incremental variant, as in Gaussier et al.'s tables)",
            backfill="sjbf",
            estimate="ave2",
            correction="incremental-offset",
        ),
        _s(
            "ELOSS",
            "FCFS + E-Loss learned predictions + incremental correction + SJBF (Gaussier "
            "et al.'s C-V triple; predictsim's incremental variant, as EASY++)",
            backfill="sjbf",
            estimate="eloss",
            correction="incremental-offset",
        ),
        _s("TANG-user", "FCFS + EASY, user-adjusted requests (Tang et al.)", estimate="tang-user"),
        _s(
            "TANG-project",
            "FCFS + EASY, project-adjusted requests (Tang et al.)",
            estimate="tang-project",
        ),
        _s(
            "TANG-combined",
            "FCFS + EASY, combined user/project adjusting (Tang et al. Eq. 5)",
            estimate="tang-combined",
        ),
        _s(
            "TANG-selective",
            "FCFS + EASY, adjusted estimates for order/eligibility, requests for the shadow",
            estimate="tang-selective",
        ),
        _s(
            "LOOKAHEAD1-CLAIRVOYANT",
            "CLAIRVOYANT one-step lookahead, a reference point (not a scheduler a site could "
            "run, not a bound): FCFS + guarded one-step lookahead over EASY-SJBF rollouts "
            "that see the window's actual future (options k=16, horizon=window, "
            "rollout=same|actual)",
            backfill="sjbf",
            decider="lookahead1-clairvoyant",
        ),
        _s(
            "LOOKAHEAD1-ONLINE",
            "FCFS + guarded online one-step lookahead over EASY-SJBF rollouts of Monte Carlo "
            "futures sampled from the past (options k=16, samples=4, horizon=6h, seed=0, z=1)",
            backfill="sjbf",
            decider="lookahead1-online",
        ),
        _s(
            "SCHEDULE-LOOKAHEAD1-CLAIRVOYANT",
            "CLAIRVOYANT one-step lookahead, a reference point (not a scheduler a site could "
            "run, not a bound): over the head of the queue, the first k=8 jobs of the "
            "reference order (the POLICY of POLICY+SCHEDULE-LOOKAHEAD1-CLAIRVOYANT) rolled "
            "out with that policy and EASY-SJBF on the window's actual future (options k, "
            "horizon)",
            backfill="sjbf",
            decider="schedule-lookahead1-clairvoyant",
        ),
        _s(
            "SCHEDULE-LOOKAHEAD1-ONLINE",
            "online one-step lookahead over the head of the queue, a reference point: the "
            "first k=8 jobs of the reference order rolled out with that policy and EASY-SJBF "
            "on Monte Carlo futures sampled from the past (options of LOOKAHEAD1-ONLINE, z=1)",
            backfill="sjbf",
            decider="schedule-lookahead1-online",
        ),
        _s(
            "EASY-HMM",
            "FCFS + EASY whose backfill test is Nissimov's probabilistic one (tau=0.05) on "
            "HMM runtime distributions; requests for the reservation",
            estimate="hmm",
            estimate_kwargs=(("point", "request"),),
            decider="probabilistic",
            decider_kwargs=(("tau", 0.05),),
        ),
    ]
}

_LOOKUP = {k.lower(): v for k, v in NAMED.items()}


def list_schedulers() -> list[str]:
    return list(NAMED)


_SPEC_KEYS = (
    "policy",
    "backfill",
    "estimate",
    "rank_estimate",
    "correction",
    "starvation",
    "decider",
    "warm",
    "shadow_window",
    "shadow_origin",
)
#: other spellings of spec keys
_KEY_ALIASES = {"rank": "rank_estimate", "rank_estimator": "rank_estimate", "estimator": "estimate"}


_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def starvation_seconds(text: str | float) -> float:
    """A starvation threshold in seconds: a number of seconds, or a number with a unit
    ``s``, ``m``/``min``, ``h`` or ``d`` (``"54h"``).

    :raises ValueError: for anything else, or a threshold that is not positive
    """
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(s|m|min|h|d)?", str(text).strip())
    if m is None:
        raise ValueError(
            f"bad starvation threshold {text!r}: want seconds, a time such as 54h or 90m, or auto"
        )
    value = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if value <= 0:
        raise ValueError(f"starvation threshold must be > 0 seconds, got {text!r}")
    return value


def starvation_label(seconds: float) -> str:
    """The spelling of a threshold in scheduler names: whole hours as ``54h``, else
    seconds (``starvation_seconds(starvation_label(x)) == x``)."""
    hours = float(seconds) / 3600.0
    return f"{hours:g}h" if hours == int(hours) else f"{float(seconds):g}"


def _value(text: str) -> Any:
    """A decider option's value: int, float, bool or the text."""
    t = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", t):
        return int(t)
    if re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", t):
        return float(t)
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    return t


def _parse_kv(parts: list[str], spec: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``key=value`` parts -> (scheduler fields, decider options)."""
    kw: dict[str, Any] = {}
    opts: dict[str, Any] = {}
    for part in parts:
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"bad scheduler spec part {part!r} in {spec!r} (want key=value)")
        k, v = (x.strip() for x in part.split("=", 1))
        k = k.lower().replace("-", "_")
        k = _KEY_ALIASES.get(k, k)
        if k in _SPEC_KEYS:
            kw[k] = v
        else:
            opts[k] = _value(v)
    if "policy" in kw:
        kw["policy"] = get_heuristic("policy", kw["policy"]).name
    if "backfill" in kw:
        valid = [b for b in heuristic_names("backfill") if b != "external"]
        _check("backfill", kw["backfill"], valid)  # external: only the env's own
        bf = get_heuristic("backfill", kw["backfill"])
        if bf.compiled:
            kw["backfill"] = bf.name
        else:  # a backfiller given as a decider: backfill=NAME means decider=NAME
            kw.pop("backfill")
            kw.setdefault("decider", bf.name)
    if "correction" in kw:
        _check("correction", kw["correction"], CORRECTIONS)
    if "starvation" in kw and kw["starvation"] != "auto":
        kw["starvation"] = starvation_seconds(kw["starvation"])
    if "warm" in kw:
        kw["warm"] = warm_label(kw["warm"])
    for k in ("shadow_window", "shadow_origin"):
        if k in kw:
            try:
                kw[k] = float(kw[k])
            except ValueError:
                raise ValueError(f"{k} must be a number of seconds, not {kw[k]!r}") from None
    if "decider" in kw:
        from hpcgym.sim.deciders import DECIDERS
        from hpcgym.sim.queue_deciders import CHOOSERS

        kw["decider"] = renamed(kw["decider"].lower(), RENAMED_DECIDERS, "decider")
        _check("decider", kw["decider"], {**DECIDERS, **CHOOSERS})
    return kw, opts


def _with_options(spec: SchedulerSpec, opts: dict[str, Any], text: str) -> SchedulerSpec:
    """``spec`` with decider options ``opts`` (checked by building the decider)."""
    if not opts:
        return spec
    if spec.decider is None:
        raise ValueError(
            f"unknown scheduler spec key(s) {', '.join(opts)} in {text!r}; valid: "
            f"{', '.join(_SPEC_KEYS)} (other keys are options of a decider, and this "
            "scheduler has none)"
        )
    merged = {**dict(spec.decider_kwargs), **opts}
    spec = replace(spec, decider_kwargs=tuple(merged.items()))
    spec.make_decider()  # raises ValueError on a bad option
    return spec


def _new_name(name: str) -> str:
    """``name`` (``NAME`` or ``POLICY+NAME``) with an old scheduler name replaced by the
    new one (:mod:`hpcgym.sim.renamed`; a :class:`FutureWarning` says so)."""
    policy, plus, rest = name.partition("+")
    if rest and policy.strip().upper() in _policies():
        return policy + plus + renamed(rest, RENAMED_SCHEDULERS)
    return renamed(name, RENAMED_SCHEDULERS)


def get_scheduler(spec: str | SchedulerSpec) -> SchedulerSpec:
    """Resolve a scheduler name or spec string (see module doc)."""
    if isinstance(spec, SchedulerSpec):
        return spec
    text = spec.strip()
    head, comma, tail = text.partition(",")
    if "=" not in head:  # the name part: an old name becomes the new one
        text = _new_name(head) + comma + tail
    if "=" in text:
        parts = text.split(",")
        if "=" not in parts[0]:  # NAME,key=value,...
            base = get_scheduler(parts[0])
            kw, opts = _parse_kv(parts[1:], spec)
            base = replace(base, name=text, **kw)
            return _with_options(base, opts, spec)
        kw, opts = _parse_kv(parts, spec)
        name = "{}+{}/{}".format(
            kw.get("policy", "FCFS"),
            kw.get("backfill", "easy").upper(),
            kw.get("estimate", "request"),
        )
        if "rank_estimate" in kw:
            name += f"/rank={kw['rank_estimate']}"
        if "decider" in kw:
            name += f"+{kw['decider']}"
        return _with_options(SchedulerSpec(name=name, **kw), opts, spec)
    if text.lower() in _LOOKUP:
        return _LOOKUP[text.lower()]
    policy, _, rest = text.partition("+")
    if rest and policy.upper() in _policies():  # POLICY+NAME (NAME may hold "+": SJF+EASY++)
        named = _LOOKUP.get(rest.lower())
        if named is None:
            hint = did_you_mean(rest, NAMED)
            raise ValueError(
                f"unknown scheduler {rest!r}{hint} in {spec!r}; valid: {', '.join(NAMED)}"
            )
        return replace(named.with_policy(policy), name=f"{policy.upper()}+{named.name}")
    known = [*NAMED, *(f"{p}+{n}" for p in _policies() for n in NAMED)]
    raise ValueError(
        f"unknown scheduler {spec!r}{did_you_mean(text, known)}; valid names: "
        f"{', '.join(NAMED)}; or POLICY+NAME "
        f"(policies: {', '.join(_policies())}), or key=value,... ({', '.join(_SPEC_KEYS)}, and "
        "the decider's options), or NAME,key=value,..."
    )


#: Deciders that see the window's actual future (the ORACLE reference points).
CLAIRVOYANT_DECIDERS: frozenset[str] = frozenset(
    {
        "lookahead1-clairvoyant",
        "schedule-lookahead1-clairvoyant",
        "lookahead-oracle",  # the former names
        "schedule-oracle",
    }
)


def is_clairvoyant(scheduler: str | SchedulerSpec) -> bool:
    """Whether a scheduler uses what no scheduler knows in advance: the jobs' actual run
    times (``estimate=actual`` or ``rank_estimate=actual``: ``EASY-AR``,
    ``SJF+EASY-SJBF-AR``...) or the window's future
    (the ORACLE deciders, :data:`CLAIRVOYANT_DECIDERS`). Such a method is a reference point,
    not a competitor; tables and TensorBoard runs mark it. A name that is no scheduler (an
    agent's label) is not clairvoyant.

    :param scheduler: a name or spec of :func:`get_scheduler`, or a spec
    """
    try:
        spec = get_scheduler(scheduler)
    except (ValueError, KeyError, TypeError):
        return False
    decider = (spec.decider or "").lower()
    rank = str(getattr(spec, "rank_estimate", None) or "").lower()
    return "actual" in (spec.estimate.lower(), rank) or decider in CLAIRVOYANT_DECIDERS
