"""Agent loaders: how evaluation gets agent objects without importing the agents package.

An agent loader is a function ``loader(spec) -> policy``: ``spec`` is a heuristic name
(``easy``, ``sjbf``, ``stop``, ``random``, ``first``), a model ``.zip`` path or the model
card ``.json`` of a gated agent (:mod:`hpcgym.evaluation.gating`), the result has SB3's
``predict``. Callers pass one in (``agent_loader=...``); the agents package that
ships with hpcgym declares its loader in the entry-point group :data:`AGENT_LOADER_GROUP`,
which :func:`resolve_agent_loader` reads (``hpcgym compare --agents`` uses it).

Which task an agent plays: :func:`read_sb3_zip` reads what a Stable-Baselines3 ``.zip``
says about itself (its policy class, observation and action spaces) from the file's
JSON, without loading or unpickling anything, and :func:`task_of_spaces` tells the task
from the spaces: ``Discrete(K)`` over ``(K, F)`` rows is ``hpcgym/Schedule-v0``,
``Discrete(K + 1)`` (the last action is STOP) is ``hpcgym/Backfill-v0``.
"""

from __future__ import annotations

import json
import pickletools
import sys
import zipfile
from base64 import b64decode
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcgym.evaluation.play import Policy
from hpcgym.tasks import get_task, list_tasks

__all__ = [
    "AGENT_LOADER_GROUP",
    "AgentLoader",
    "LoaderUnavailable",
    "ModelFile",
    "default_agents_dir",
    "read_sb3_zip",
    "resolve_agent_loader",
    "resolve_agent_name",
    "task_of_spaces",
]

#: Turns an agent spec (heuristic name or model ``.zip`` path) into a :class:`Policy`.
AgentLoader = Callable[[str], Policy]
#: Entry-point group of the installed agent loaders (``default`` is the one used).
AGENT_LOADER_GROUP = "hpcgym.agent_loaders"


class LoaderUnavailable(ValueError):
    """No agent loader is installed under the asked name."""


def resolve_agent_loader(name: str = "default") -> AgentLoader:
    """The agent loader installed under ``name`` in the entry-point group
    :data:`AGENT_LOADER_GROUP`.

    :param name: the entry point's name
    :raises LoaderUnavailable: no such loader is installed (the message says what to do)
    """
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group=AGENT_LOADER_GROUP)}
    if name not in found:
        have = ", ".join(sorted(found)) or "none"
        raise LoaderUnavailable(
            f"no agent loader {name!r} in the entry-point group {AGENT_LOADER_GROUP!r} "
            f"(installed: {have}): install hpcgym with its agents (pip install -e . in the "
            "checkout), or evaluate agents with python eval/compare.py"
        )
    return found[name].load()  # type: ignore[no-any-return]


def default_agents_dir() -> Path | None:
    """The shipped agents' folder of the installed agent loader: the ``pretrained_dir()``
    of the loader's module, or ``None`` without a loader or such a function."""
    try:
        loader = resolve_agent_loader()
    except LoaderUnavailable:
        return None
    folder = getattr(sys.modules.get(loader.__module__), "pretrained_dir", None)
    return Path(folder()) if callable(folder) else None


def resolve_agent_name(name: str) -> tuple[str | None, str | None]:
    """What the installed agent loader's package makes of an agent name: ``(zoo name,
    replacement)``. The zoo name is set when ``name`` is a zoo agent, an alias or a zoo
    agent's ``trained_as`` name (the module's ``resolve_name``); the replacement when
    ``name`` is an agent that left the zoo (the module's ``retired_agents``). Both are
    ``None`` without a loader or when the name means nothing to it.

    :param name: an agent name as a user types it
    """
    try:
        loader = resolve_agent_loader()
    except LoaderUnavailable:
        return None, None
    module = sys.modules.get(loader.__module__)
    resolve = getattr(module, "resolve_name", None)
    retired = getattr(module, "retired_agents", None)
    zoo = resolve(name) if callable(resolve) else None
    replacement = None if zoo or not callable(retired) else retired().get(name.lower())
    return zoo, replacement


@dataclass(frozen=True)
class ModelFile:
    """What a Stable-Baselines3 ``.zip`` says about itself (:func:`read_sb3_zip`).

    :param path: the file
    :param policy_module: module of the saved policy class
        (``sb3_contrib.common.maskable.policies``...; ``""`` when unreadable)
    :param policy_name: name of the policy class (``MaskableActorCriticPolicy``...)
    :param obs_shape: the observation space's shape (``()`` when not a ``Box``)
    :param obs_type: the observation space's class name (``Box``...)
    :param action_n: the number of actions of a ``Discrete`` action space (``None``
        otherwise)
    :param action_type: the action space's class name (``Discrete``...)
    """

    path: Path
    policy_module: str
    policy_name: str
    obs_shape: tuple[int, ...]
    obs_type: str
    action_n: int | None
    action_type: str

    @property
    def spaces(self) -> str:
        """The spaces as text, for messages: ``Box(128, 16) -> Discrete(128)``."""
        shape = ", ".join(str(d) for d in self.obs_shape)
        act = f"Discrete({self.action_n})" if self.action_n is not None else self.action_type
        return f"{self.obs_type}({shape}) -> {act}"


def _type_name(entry: Any) -> str:
    """``Box`` from SB3's ``":type:": "<class 'gymnasium.spaces.box.Box'>"``."""
    text = str(entry.get(":type:", "")) if isinstance(entry, dict) else ""
    return text.rsplit(".", 1)[-1].rstrip("'>") or "?"


def _pickled_global(text: str) -> tuple[str, str]:
    """``(module, name)`` of a class pickled by reference (SB3's ``":serialized:"``),
    read from the pickle's opcodes: nothing is unpickled or imported."""
    try:
        strings = [
            arg for op, arg, _ in pickletools.genops(b64decode(text)) if isinstance(arg, str)
        ]
    except (ValueError, TypeError):
        return "", ""
    return (strings[0], strings[1]) if len(strings) >= 2 else ("", "")


def read_sb3_zip(path: str | Path) -> ModelFile:
    """The policy class and spaces a Stable-Baselines3 / sb3-contrib ``.zip`` was saved
    with, read from its ``data`` JSON (no torch, no unpickling).

    :param path: the ``.zip`` (``model.save(...)`` of any SB3 algorithm)
    :raises ValueError: not an SB3 model file (the message names the file)
    """
    p = Path(path)
    try:
        with zipfile.ZipFile(p) as z:
            data = json.loads(z.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(
            f"{p}: not a Stable-Baselines3 model file (model.save(...) writes a .zip with a "
            f"'data' entry): {exc}"
        ) from None
    policy = data.get("policy_class", {})
    module = str(policy.get("__module__", "")) if isinstance(policy, dict) else ""
    name = ""
    if isinstance(policy, dict) and policy.get(":serialized:"):
        pmod, name = _pickled_global(str(policy[":serialized:"]))
        module = module or pmod
    obs = data.get("observation_space", {})
    act = data.get("action_space", {})
    try:
        shape = tuple(int(d) for d in json.loads(str(obs.get("_shape", "[]"))))
    except (ValueError, TypeError, AttributeError):
        shape = ()
    n = act.get("n") if isinstance(act, dict) else None
    return ModelFile(
        path=p,
        policy_module=module,
        policy_name=name,
        obs_shape=shape,
        obs_type=_type_name(obs),
        action_n=int(n) if n is not None and str(n).lstrip("-").isdigit() else None,
        action_type=_type_name(act),
    )


def _space_parts(space: Any) -> tuple[tuple[int, ...], int | None, str]:
    shape = tuple(int(d) for d in getattr(space, "shape", None) or ())
    n = getattr(space, "n", None)
    return shape, None if n is None else int(n), type(space).__name__


def task_of_spaces(
    observation_space: Any,
    action_space: Any,
    *,
    task: str | None = None,
    what: str = "the agent",
) -> str:
    """The hpcgym task whose env has these spaces: ``schedule`` (``Discrete(K)`` over
    ``(K, F)`` observation rows: action ``i`` picks row ``i``) or ``backfill``
    (``Discrete(K + 1)``: the last action is STOP).

    :param observation_space: a Gymnasium space, or a :class:`ModelFile` (then
        ``action_space`` is ignored)
    :param action_space: a Gymnasium space
    :param task: the task the user stated, checked against the spaces
    :param what: the agent, as messages name it
    :raises ValueError: spaces of neither task, or of another task than ``task`` (the
        message names the spaces)
    """
    if isinstance(observation_space, ModelFile):
        mf = observation_space
        shape, n, spaces = mf.obs_shape, mf.action_n, mf.spaces
    else:
        shape, _, otype = _space_parts(observation_space)
        _, n, atype = _space_parts(action_space)
        act = f"Discrete({n})" if n is not None else atype
        spaces = f"{otype}({', '.join(str(d) for d in shape)}) -> {act}"
    fits: list[str] = []
    if len(shape) == 2 and n is not None:
        fits = [t for t in list_tasks() if get_task(t).fits_spaces(shape[0], shape[1], n)]
    found = task if task in fits else (fits[0] if fits else None)
    if found is None:
        raise ValueError(
            f"{what} has the spaces {spaces}, which fit no registered task "
            f"({', '.join(get_task(t).env_id for t in list_tasks())}; e.g. Schedule-v0: "
            "observation (K, F), Discrete(K); Backfill-v0: Discrete(K + 1)); an agent "
            "trained on a wrapped env (flattened observations...) can be played as a "
            "callable fn(obs, info) -> action that undoes the wrapper"
        )
    if task is not None and task != found:
        raise ValueError(
            f"{what} was given task={task!r}, but its spaces {spaces} are those of the "
            f"{found} task ({get_task(found).env_id})"
        )
    return found
