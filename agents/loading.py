"""Loading agents by name or file: the one place that knows agent files.

:func:`load_agent` turns what a user types after ``--agents`` into an object with SB3's
``predict(observation, ..., action_masks=...)``:

* a heuristic name (:data:`HEURISTICS`): ``easy``, ``sjbf``, ``stop``, ``random``, ``first``;
* a Stable-Baselines3 / sb3-contrib ``.zip`` file, loaded on the CPU with the algorithm
  its saved policy class belongs to (:func:`load_model`): a ``MaskablePPO`` of
  :class:`KernelPolicy` (trained by ``train/ppo.py`` or shipped in ``agents/pretrained/``),
  a stock ``MaskablePPO("MlpPolicy", ...)``, ``PPO``, ``A2C``, ``DQN``, ``QRDQN``;
* a model card ``.json``: its model; with a ``gate`` section (a gated agent,
  :mod:`hpcgym.evaluation.gating`) a :class:`~hpcgym_agents.gated.GatedAgent` of it;
* the name of a zoo agent (``sdsc-sp2-fcfs``, ``hpc2n-sjf-eloss``...: :func:`pretrained_agents`),
  found in :func:`pretrained_dir` (its card, else its ``.zip``); a trace's short name
  (:data:`ALIASES`: ``sdsc-sp2``, ``hpc2n``, ``lublin1``, ``lublin2``) is its FCFS agent, and
  the name a zoo agent was trained as (its card's ``"trained_as"``) is that agent.

Agents that left the zoo are listed in ``pretrained/retired.json`` with the zoo agent that
replaces them: loading one by name fails with a message that names the replacement and
where the retired agent's card is kept (``research/agents/`` of the repository, which
loads by path from a checkout).

hpcgym's evaluation never imports this package: its callers pass :func:`load_agent` in,
and ``hpcgym compare`` finds it through the entry point group ``hpcgym.agent_loaders``.

Agents saved before the package was renamed (``agents`` -> ``hpcgym_agents``) pickled the
policy class as ``agents.kernel_policy.KernelPolicy``; :func:`load_model` passes the class
itself (``custom_objects``), so those files load without any module called ``agents``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hpcgym.suggest import did_you_mean
from hpcgym_agents.easy import EasyAgent, SJBFAgent
from hpcgym_agents.heuristic import FirstValid, HeuristicAgent, RandomValid, StopAlways

__all__ = [
    "ALIASES",
    "HEURISTICS",
    "load_agent",
    "load_card_agent",
    "load_model",
    "pretrained_agents",
    "pretrained_dir",
    "resolve_name",
    "retired_agents",
]

#: Heuristic agents selectable by name.
HEURISTICS: dict[str, type[HeuristicAgent]] = {
    "easy": EasyAgent,
    "sjbf": SJBFAgent,
    "stop": StopAlways,
    "random": RandomValid,
    "first": FirstValid,
}


#: Short names: a trace's name is its recommended agent, the FCFS one with the requested
#: runtime as the reservation estimator (the configuration of RLBackfilling).
ALIASES: dict[str, str] = {
    "sdsc-sp2": "sdsc-sp2-fcfs",
    "hpc2n": "hpc2n-fcfs",
    "lublin1": "lublin1-fcfs",
    "lublin-1": "lublin1-fcfs",
    "lublin2": "lublin2-fcfs",
    "lublin-2": "lublin2-fcfs",
}


def pretrained_dir() -> Path:
    """The folder of the shipped agents (``agents/pretrained``)."""
    return Path(__file__).resolve().parent / "pretrained"


def pretrained_agents() -> list[str]:
    """Names of the zoo agents (``<trace>-<queue policy>[-<estimator>]``): their models and
    the cards of gated agents (which share a model with another agent)."""
    d = pretrained_dir()
    names = {p.stem for p in d.glob("*.zip")}  # retired.json is not a card: no gate
    names.update(p.stem for p in d.glob("*.json") if _gate_of(p) is not None)
    return sorted(names)


def _card_field(card: Path, key: str) -> Any:
    try:
        data = json.loads(card.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get(key) if isinstance(data, dict) else None


def retired_agents() -> dict[str, str]:
    """Agents that left the zoo, by name: the name of the zoo agent that replaces each (the
    one of the same trace, queue policy and reservation estimator)."""
    path = pretrained_dir() / "retired.json"
    if not path.is_file():
        return {}
    table = _card_field(path, "retired")
    return {str(k): str(v) for k, v in (table or {}).items()}


def resolve_name(name: str) -> str | None:
    """The zoo agent a name means (itself, an alias or a ``trained_as`` name), or ``None``.

    :param name: a name as a user types it (any case)
    """
    key = name.lower()
    zoo = pretrained_agents()
    if key in zoo:
        return key
    if key in ALIASES and ALIASES[key] in zoo:
        return ALIASES[key]
    for card in sorted(pretrained_dir().glob("*.json")):
        trained_as = _card_field(card, "trained_as")
        if trained_as and str(trained_as).lower() == key:
            return card.stem
    return None


def _gate_of(card: Path) -> dict[str, Any] | None:
    """The checked gate section of a card file (``None``: no gate, or not a card)."""
    try:
        data = json.loads(card.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    from hpcgym.evaluation.gating import read_gate

    return read_gate(data, f"model card {card}")


def load_card_agent(path: str | os.PathLike[str]) -> Any:
    """The agent of a model card ``.json``: its model, gated when the card has a gate.

    :param path: the card
    :raises FileNotFoundError: the card or its model is missing
    :raises ValueError: a malformed card or gate (the message names the file and the key)
    """
    from hpcgym.evaluation.cards import load_model_card
    from hpcgym_agents.gated import GatedAgent

    card = load_model_card(path)
    model = load_model(card.model)
    gate = _gate_of(Path(path))
    if gate is None:
        return model
    return GatedAgent(model, HEURISTICS[gate["fallback"]](), gate["tau"])


#: the algorithms a saved policy class is loaded with, by the class's module (first match);
#: classes of other modules try these in turn
_ALGORITHMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hpcgym_agents.", ("sb3_contrib:MaskablePPO",)),
    ("agents.kernel_policy", ("sb3_contrib:MaskablePPO",)),
    ("sb3_contrib.common.maskable", ("sb3_contrib:MaskablePPO",)),
    ("sb3_contrib.qrdqn", ("sb3_contrib:QRDQN",)),
    ("stable_baselines3.dqn", ("stable_baselines3:DQN",)),
    ("stable_baselines3.common.policies", ("stable_baselines3:PPO", "stable_baselines3:A2C")),
)
_ANY_ALGORITHM: tuple[str, ...] = (
    "sb3_contrib:MaskablePPO",
    "stable_baselines3:PPO",
    "stable_baselines3:A2C",
    "stable_baselines3:DQN",
    "sb3_contrib:QRDQN",
)


def _algorithm(ref: str) -> Any:
    import importlib

    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def load_model(path: str | os.PathLike[str], device: str = "cpu", **kwargs: Any) -> Any:
    """Load a Stable-Baselines3 / sb3-contrib model with the algorithm its file names.

    The policy class saved in the file (read without unpickling:
    :func:`hpcgym.evaluation.loaders.read_sb3_zip`) chooses the algorithm: the project's
    :class:`KernelPolicy` (any version, also as pickled before the package was renamed)
    and sb3-contrib's maskable policies -> ``MaskablePPO``; ``ActorCriticPolicy``
    (``"MlpPolicy"`` of PPO / A2C) -> ``PPO``, else ``A2C``; DQN's -> ``DQN``; QR-DQN's ->
    ``QRDQN``. A policy class of any other module is tried with each of these in turn.

    :param path: the ``.zip`` file
    :param device: torch device of the loaded model
    :param kwargs: more arguments of the algorithm's ``load`` (``env``, ``custom_objects``...)
    :return: the model
    :raises ValueError: not an SB3 file, a recurrent policy (its ``predict`` needs a state
        the evaluation does not keep), or no algorithm loads it (each one's error)
    """
    from hpcgym.evaluation.loaders import read_sb3_zip

    info = read_sb3_zip(path)
    module = info.policy_module
    if module.startswith("sb3_contrib.common.recurrent"):
        raise ValueError(
            f"{path}: a recurrent policy ({info.policy_name}, RecurrentPPO) keeps a state "
            "between steps; play it as a callable fn(obs, info) -> action that carries the "
            "LSTM state (model.predict(obs, state=..., episode_start=...))"
        )
    kernel = module.startswith(("hpcgym_agents.", "agents.kernel_policy"))
    if kernel:
        from hpcgym_agents.kernel_policy import KernelPolicy

        kwargs["custom_objects"] = {
            "policy_class": KernelPolicy,
            **kwargs.get("custom_objects", {}),
        }
    refs = next((algos for prefix, algos in _ALGORITHMS if module.startswith(prefix)), None)
    errors: list[str] = []
    for ref in refs or _ANY_ALGORITHM:
        try:
            algorithm = _algorithm(ref)
        except ImportError as exc:
            errors.append(f"{ref.partition(':')[2]}: {exc} (pip install 'hpcgym[train]')")
            continue
        try:
            return algorithm.load(path, device=device, **kwargs)
        except Exception as exc:  # noqa: BLE001 - each algorithm's reason is reported
            if refs is not None and len(refs) == 1:
                raise
            errors.append(f"{ref.partition(':')[2]}: {type(exc).__name__}: {exc}")
    raise ValueError(
        f"{path}: no algorithm loads this model (policy class "
        f"{module}.{info.policy_name or '?'}; {info.spaces}): " + "; ".join(errors)
    )


def load_agent(spec: str | os.PathLike[str], seed: int | None = None) -> Any:
    """An agent from a heuristic name, a ``.zip`` file or a shipped agent's name.

    :param spec: ``easy`` | ``sjbf`` | ``stop`` | ``random`` | ``first``, a path to a
        ``MaskablePPO`` ``.zip`` or to a model card ``.json`` (:func:`load_card_agent`), or a
        name of :func:`pretrained_agents`, an alias (:data:`ALIASES`) or a zoo agent's
        ``trained_as`` name
    :param seed: seed of :class:`RandomValid` (ignored by the other agents)
    :return: an object with SB3's ``predict`` signature
    :raises FileNotFoundError: the spec is neither a name nor an existing file (the message
        lists the valid names), or names an agent that left the zoo (the message names its
        replacement)
    """
    text = os.fspath(spec)
    key = text.lower()
    if key == "random":
        return RandomValid(seed=seed)
    if key in HEURISTICS:
        return HEURISTICS[key]()
    path = Path(text)
    if not path.exists() and not path.suffix:
        name = resolve_name(text)
        if name is None:
            replacement = retired_agents().get(key)
            if replacement is not None:
                raise FileNotFoundError(
                    f"the agent {text!r} left the model zoo: use {replacement!r} (the zoo "
                    f"agent of the same trace, queue policy and estimator); the retired "
                    f"agent's card is research/agents/{key}.json in the hpcgym repository "
                    "and loads by that path from a checkout"
                )
        shipped = [pretrained_dir() / f"{name}{ext}" for ext in (".json", ".zip")] if name else []
        path = next((f for f in shipped if f.exists()), path)
    if path.suffix == ".json" and path.is_file():
        return load_card_agent(path)
    if not path.exists():
        hint = did_you_mean(text, [*HEURISTICS, *pretrained_agents(), *ALIASES])
        raise FileNotFoundError(
            f"no agent {text!r}{hint}: not a file, not a heuristic "
            f"({', '.join(HEURISTICS)}) and not a zoo agent "
            f"({', '.join(pretrained_agents()) or 'none'}; short names: "
            f"{', '.join(ALIASES)})"
        )
    return load_model(path)
