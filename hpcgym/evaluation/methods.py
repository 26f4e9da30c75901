"""Methods: what is evaluated — an engine scheduler or an agent played through the env.

:func:`scheduler_method` and :func:`agent_method` turn what a user types (``EASY``,
``SJF+EASY``, ``easy``, ``LABEL=path/to/model.zip``, a model card, a run folder...) or
an agent object (a loaded SB3 model, any callable ``fn(obs, info) -> action``) into a
:class:`Method`. :data:`AGENT_HEURISTICS` is the one table of heuristic agent names.
Every agent plays the env of its task (``hpcgym/Schedule-v0`` or ``hpcgym/Backfill-v0``):
its card's, the one its spaces fit (:func:`~hpcgym.evaluation.loaders.task_of_spaces`), or
the one stated with ``task=``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcgym.evaluation.cards import (
    RUN_CARD_FILE,
    ModelCard,
    is_model_card,
    load_model_card,
    load_run_card,
    run_dir_of,
)
from hpcgym.evaluation.gating import read_gate
from hpcgym.evaluation.loaders import (
    default_agents_dir,
    read_sb3_zip,
    resolve_agent_name,
    task_of_spaces,
)
from hpcgym.sim.registry import RegistryView, get_heuristic
from hpcgym.suggest import did_you_mean
from hpcgym.tasks import DEFAULT_TASK, card_task

__all__ = [
    "AGENT_HEURISTICS",
    "DEFAULT_SCHEDULERS",
    "TASK_NAMES",
    "Method",
    "MethodUnavailable",
    "agent_method",
    "build_methods",
    "card_method",
    "object_method",
    "scheduler_method",
    "unique_labels",
]

#: Heuristic agents selectable by name (``--agents easy sjbf stop random first``) -> the
#: default label of the method: a read-only view of the registered heuristic agents
#: (:mod:`hpcgym.sim.registry`). The agent object itself comes from the caller's
#: ``agent_loader`` (:mod:`hpcgym.evaluation.loaders`), called with the name.
AGENT_HEURISTICS: Mapping[str, str] = RegistryView("agent", lambda h: h.label)

#: The tasks an agent plays (``--task``): the env of each is ``hpcgym.envs.task_env(task)``
#: (the built-in ones; :func:`hpcgym.tasks.list_tasks` has every registered task).
TASK_NAMES: tuple[str, ...] = ("schedule", "backfill")

#: Schedulers of ``eval/compare.py`` when neither ``--schedulers`` nor ``--agents`` is given.
DEFAULT_SCHEDULERS: tuple[str, ...] = ("EASY", "EASY-AR", "EASY-SJBF", "SAF", "EASY++")


class MethodUnavailable(ValueError):
    """A method cannot be evaluated (unknown scheduler, missing model, ...)."""


@dataclass
class Method:
    """One evaluated method.

    :param label: unique display name (table column / row)
    :param kind: ``scheduler`` (the engine's built-in backfilling) or ``agent``
    :param spec: scheduler spec (``get_scheduler``), heuristic name, or model ``.zip`` path
    :param env: env arguments of an agent (``task``: ``schedule`` for a
        :class:`~hpcgym.envs.schedule_env.ScheduleEnv`, else a
        :class:`~hpcgym.envs.backfill_env.BackfillEnv`; ``max_queue=None``: taken from the
        model's observation space)
    :param card: the model card dict of a model (``None`` otherwise)
    :param est_scale: observation scale override (the training trace's, ``scales="card"``)
    :param wait_scale: wait scale override (``scales="card"``)
    :param agent_seed: base seed of ``RandomValid`` (per window: ``(agent_seed, start)``)
    :param env_seed: ``reset`` seed of every window (stochastic estimators)
    :param agent: an agent object given in Python (:func:`object_method`): played as is,
        in the calling process
    """

    label: str
    kind: str
    spec: str
    env: dict[str, Any] = field(default_factory=dict)
    card: dict[str, Any] | None = None
    est_scale: float | None = None
    wait_scale: float | None = None
    agent_seed: int = 0
    env_seed: int = 0
    agent: Any = field(default=None, repr=False, compare=False)

    @property
    def is_model(self) -> bool:
        """An agent loaded from a model file (not a heuristic, not an object)."""
        return self.kind == "agent" and self.agent is None and self.spec not in AGENT_HEURISTICS

    @property
    def task(self) -> str:
        """The task an agent plays (``schedule`` or ``backfill``; schedulers: ``backfill``)."""
        return str(self.env.get("task", DEFAULT_TASK))

    @property
    def steps(self) -> int | None:
        """Training timesteps of a model from its card, if known."""
        if self.card and self.card.get("steps") is not None:
            return int(self.card["steps"])
        return None

    @property
    def policy(self) -> str:
        """The queue policy the method schedules with (a scheduler's spec, an agent's env)."""
        if self.kind == "scheduler":
            from hpcgym.sim import get_scheduler

            return str(get_scheduler(self.spec).policy).upper()
        return str(self.env.get("policy", self.env.get("order", "FCFS"))).upper()

    def to_dict(self) -> dict[str, Any]:
        """The method as JSON (``results.json``, ``methods``)."""
        out: dict[str, Any] = {"label": self.label, "kind": self.kind, "spec": self.spec}
        if self.kind == "scheduler":
            from hpcgym.sim import get_scheduler

            out["scheduler"] = get_scheduler(self.spec).to_dict()
        else:
            out["env"] = dict(self.env)
            if self.card is not None:
                out["card"] = {
                    k: self.card.get(k)
                    for k in ("name", "trace", "policy", "mode", "steps", "seed")
                    if k in self.card
                }
            if self.est_scale is not None:
                out["est_scale"] = self.est_scale
            if self.wait_scale is not None:
                out["wait_scale"] = self.wait_scale
            if self.spec == "random":
                out["agent_seed"] = self.agent_seed
            out["env_seed"] = self.env_seed
        return out


def scheduler_method(spec: str, label: str | None = None) -> Method:
    """An engine scheduler (validated now).

    :raises MethodUnavailable: unknown name (the message lists the valid ones)
    """
    from hpcgym.sim import get_scheduler

    try:
        s = get_scheduler(spec)
    except ValueError as exc:
        raise MethodUnavailable(str(exc)) from None
    return Method(label=label or s.name, kind="scheduler", spec=spec)


def _task_env(task: str, k: int | None, policy: str | None, mode: str) -> dict[str, Any]:
    """The env arguments of an agent without a card: Backfill-v0's queue policy and mode,
    or Schedule-v0's queue order (``policy``; ``None``: the env's default for the trace)."""
    from hpcgym.tasks import get_task

    return get_task(task).agent_env(policy, mode, k)


def _check_task(task: str | None) -> str | None:
    if task is None:
        return None
    from hpcgym.tasks import get_task

    try:
        return get_task(task).name
    except ValueError as exc:
        raise MethodUnavailable(str(exc)) from None


def object_method(
    agent: Any,
    *,
    task: str | None = None,
    label: str | None = None,
    policy: str | None = None,
    mode: str = "guarded",
    max_queue: int | None = None,
    env_seed: int = 0,
) -> Method:
    """An agent object given in Python, played as is in the env of its task.

    :param agent: a loaded SB3 / sb3-contrib model (``MaskablePPO.load(...)``, ``PPO``,
        ``DQN``...: anything with SB3's ``predict``) or a callable ``fn(obs, info) ->
        action`` for one env (a hand-written rule, a torch module wrapped in a function)
    :param task: ``schedule`` or ``backfill``; needed when the agent has no
        ``observation_space`` / ``action_space`` (a callable), else checked against them
    :param label: the method's name (default: the function's or the class's name)
    :param policy: Backfill-v0's queue policy (FCFS) / Schedule-v0's queue order (the
        env's default for the trace)
    :param mode: Backfill-v0's mode (``guarded``)
    :param max_queue: K (default: the agent's observation rows, else 128)
    :param env_seed: ``reset`` seed of every window
    :raises MethodUnavailable: not an agent, no task, or spaces of another task
    """
    from hpcgym.evaluation.play import check_agent

    try:
        check_agent(agent)
    except TypeError as exc:
        raise MethodUnavailable(str(exc)) from None
    name = label or getattr(agent, "__name__", None) or type(agent).__name__
    task = _check_task(task)
    obs_space = getattr(agent, "observation_space", None)
    act_space = getattr(agent, "action_space", None)
    if obs_space is not None and act_space is not None:
        try:
            task = task_of_spaces(obs_space, act_space, task=task, what=f"the agent {name!r}")
        except ValueError as exc:
            raise MethodUnavailable(str(exc)) from None
        max_queue = max_queue or int(obs_space.shape[0])
    elif task is None:
        raise MethodUnavailable(
            f"the agent {name!r} has no observation_space / action_space to tell its task "
            f"from: say which env it plays, task='schedule' (hpcgym/Schedule-v0) or "
            "task='backfill' (hpcgym/Backfill-v0)"
        )
    return Method(
        label=name,
        kind="agent",
        spec=f"python:{name}",
        env=_task_env(task, max_queue or 128, policy, mode),
        env_seed=env_seed,
        agent=agent,
    )


def _split_label(text: str) -> tuple[str | None, str]:
    """``LABEL=spec`` (the label has no path separator) or just ``spec``."""
    if "=" in text:
        head, rest = text.split("=", 1)
        if head and "/" not in head and os.sep not in head and not Path(text).exists():
            return head, rest
    return None, text


def agent_method(
    spec: str | os.PathLike[str] | Any,
    *,
    task: str | None = None,
    policy: str | None = None,
    mode: str = "guarded",
    max_queue: int | None = None,
    agents_dir: str | os.PathLike[str] | None = None,
    scales: str = "target",
    agent_seed: int = 0,
    env_seed: int = 0,
    label: str | None = None,
) -> Method:
    """An agent played through the env.

    ``spec`` is ``[LABEL=]WHAT`` with ``WHAT`` one of: a heuristic name
    (:data:`AGENT_HEURISTICS`), a model card ``.json``, a model ``.zip`` of any
    Stable-Baselines3 / sb3-contrib algorithm (configured from ``<stem>.json`` next to it,
    else from the card its trainer wrote into the run folder holding it,
    :data:`~hpcgym.evaluation.cards.RUN_CARD_FILE`, else from its spaces (the task) and
    ``policy``/``mode``/``max_queue``), a run folder (the model of its card) or the name of
    a card in ``agents_dir``. An agent object (a loaded
    model, a callable ``fn(obs, info) -> action``) is :func:`object_method`'s.

    :param task: ``schedule`` or ``backfill``: the env the agent plays. Default: its card's,
        else the one its spaces fit; stated, it is checked against them (a mismatch is an
        error naming the spaces). Heuristics: ``backfill`` (``first`` and ``random`` also
        play ``schedule``)
    :param policy: Backfill-v0's queue policy of heuristics and of models without a card
        (default FCFS); Schedule-v0's queue order (default: the env's for the trace)
    :param mode, max_queue: env of heuristics and of models without a card
        (``max_queue=None``: 128 for heuristics, the model's own for models)
    :param scales: ``target`` (default: observation scales of the evaluated trace, as the
        env computes them and as the paper did) or ``card`` (the training trace's scales
        from the card, when known)
    :raises MethodUnavailable: nothing matches ``spec`` (the message lists the choices)
    """
    if scales not in ("target", "card"):
        raise ValueError(f"unknown scales {scales!r}; valid: target, card")
    if not isinstance(spec, str | os.PathLike):
        return object_method(
            spec,
            task=task,
            label=label,
            policy=policy,
            mode=mode,
            max_queue=max_queue,
            env_seed=env_seed,
        )
    task = _check_task(task)
    given_label, what = _split_label(os.fspath(spec))
    label = label or given_label
    key = what.strip().lower()
    if key in AGENT_HEURISTICS:
        played = task or DEFAULT_TASK
        if played not in get_heuristic("agent", key).tasks:  # the registry says who plays what
            plays = [n for n in AGENT_HEURISTICS if played in get_heuristic("agent", n).tasks]
            raise MethodUnavailable(
                f"{key!r} does not play the {played} task; there: "
                f"{', '.join(plays) or 'no heuristic agent'} (hpcgym.sim.registry)"
            )
        env = _task_env(task or DEFAULT_TASK, max_queue or 128, policy, mode)
        name = AGENT_HEURISTICS[key]
        pol = str(env.get("policy", env.get("order", "FCFS")))
        default_label = name if pol == "FCFS" else f"{pol}+{name}"
        if card_task({"task": task}).orders_queue:
            order = env.get("order")
            default_label = f"{task}-{order}+{name}" if order else f"{task}-{name}"
        return Method(
            label=label or default_label,
            kind="agent",
            spec=key,
            env=env,
            agent_seed=agent_seed,
            env_seed=env_seed,
        )
    p = Path(what).expanduser()
    card: ModelCard | None = None
    if p.suffix == ".json" and p.is_file():
        card = load_model_card(p)
    elif p.suffix == ".zip" and p.is_file():
        side = p.with_suffix(".json")
        if is_model_card(side):
            card = load_model_card(side)
        elif run_dir_of(p) is not None:
            card = load_run_card(p)
        else:
            try:
                model_task = task_of_spaces(read_sb3_zip(p), None, task=task, what=f"model {p}")
            except ValueError as exc:
                raise MethodUnavailable(str(exc)) from None
            return Method(
                label=label or p.stem,
                kind="agent",
                spec=str(p),
                env=_task_env(model_task, max_queue, policy, mode),
                env_seed=env_seed,
            )
    elif p.is_dir() and (p / RUN_CARD_FILE).is_file():
        card = load_run_card(p)
    else:
        found = Path(agents_dir) if agents_dir is not None else default_agents_dir()
        # no folder of shipped agents (no agent loader installed): nothing is found in it
        d = found if found is not None else Path("<no agents folder: pass agents_dir>")
        if agents_dir is None and not (d / f"{what}.json").is_file():
            zoo, replacement = resolve_agent_name(what)
            if replacement is not None:
                raise MethodUnavailable(
                    f"the agent {what!r} left the model zoo: use {replacement!r} (the zoo "
                    "agent of the same trace, queue policy and estimator), or its card "
                    f"research/agents/{what.lower()}.json in the hpcgym repository"
                )
            what = zoo or what
        for cand in (d / f"{what}.json", d / what):
            if cand.suffix == ".json" and cand.is_file():
                card = load_model_card(cand)
                break
        if card is None and (d / f"{what}.zip").is_file():
            return agent_method(
                str(d / f"{what}.zip"),
                task=task,
                policy=policy,
                mode=mode,
                max_queue=max_queue,
                scales=scales,
                env_seed=env_seed,
                label=label or what,
            )
        if card is None:
            avail = (
                sorted(x.stem for x in d.glob("*.json") if is_model_card(x)) if d.is_dir() else []
            )
            hint = did_you_mean(what, [*AGENT_HEURISTICS, *avail])
            raise MethodUnavailable(
                f"unknown agent {os.fspath(spec)!r}{hint}: not a heuristic "
                f"({', '.join(AGENT_HEURISTICS)}), "
                "not an existing .zip model / model card .json / run folder with a "
                f"{RUN_CARD_FILE}, and "
                f"no card {what}.json in {d} (available: {', '.join(avail) or 'none'})"
            )
    assert card is not None
    method = card_method(card, label=label, scales=scales, env_seed=env_seed)
    if task is not None and method.task != task:
        raise MethodUnavailable(
            f"the agent {os.fspath(spec)!r} plays the {method.task} task (its card "
            f"{card.source or card.name}), not {task!r}"
        )
    return method


def card_method(
    card: ModelCard, label: str | None = None, scales: str = "target", env_seed: int = 0
) -> Method:
    """The agent :class:`Method` of a model card (env from the card; see
    :func:`agent_method` for ``scales``). A gated agent's card (:mod:`.gating`) is its own
    spec: the agent loader builds the gated agent from the card's file.

    :raises MethodUnavailable: a gated card that was not read from a file
    """
    spec = str(card.model)
    if read_gate(card.data) is not None:
        if card.source is None:
            raise MethodUnavailable(
                f"the gated agent {card.name} needs its card file: load it with load_model_card"
            )
        spec = str(card.source)
    method = Method(
        label=label or card.name,
        kind="agent",
        spec=spec,
        env=dict(card.env),
        card=card.to_dict(),
        env_seed=env_seed,
    )
    if scales == "card":
        method.est_scale = card.est_scale
        method.wait_scale = card.wait_scale
    return method


def unique_labels(methods: list[Method]) -> None:
    """Make the labels unique in place: the second ``X`` becomes ``X#2`` and so on.

    :param methods: the methods (their ``label`` is changed)
    """
    seen: dict[str, int] = {}
    for m in methods:
        base = m.label
        if base in seen:
            seen[base] += 1
            m.label = f"{base}#{seen[base]}"
        else:
            seen[base] = 1


def build_methods(
    schedulers: Sequence[str], agents: Sequence[Any] = (), **agent_kwargs: Any
) -> tuple[list[Method], list[tuple[str, str, Exception]]]:
    """The methods of scheduler and agent specs, in that order, and the specs that failed.

    :param schedulers: scheduler specs (:func:`scheduler_method`)
    :param agents: agent specs or objects (:func:`agent_method`)
    :param agent_kwargs: more arguments of :func:`agent_method` (``task``, ``policy``,
        ``mode``...)
    :return: ``(methods, failures)``; a failure is ``(kind, spec, error)`` with ``kind``
        ``scheduler`` or ``agent`` (an unknown name, a missing or malformed agent file)
    """
    methods: list[Method] = []
    failures: list[tuple[str, str, Exception]] = []
    for s in schedulers:
        try:
            methods.append(scheduler_method(s))
        except MethodUnavailable as exc:
            failures.append(("scheduler", s, exc))
    for a in agents:
        try:
            methods.append(agent_method(a, **agent_kwargs))
        except (MethodUnavailable, FileNotFoundError, ValueError) as exc:
            failures.append(("agent", a if isinstance(a, str) else repr(a), exc))
    return methods, failures
