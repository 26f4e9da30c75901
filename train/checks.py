"""Checks of training options that need more than the option's own parser: the torch
device, the scheduler registry (:class:`train.config.TrainConfig` calls them)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["baseline_problems", "device_problems"]


def device_problems(device: str) -> list[str]:
    """Why ``device`` cannot train here (``[]``: it can). ``cpu`` needs no torch import."""
    if device in ("cpu", "auto"):
        return []
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        return [f"--device: expected a torch device such as cpu, cuda, cuda:1, mps, got {device!r}"]
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return [
                f"--device {device}: CUDA is not available on this machine (torch "
                f"{torch.__version__}); use --device cpu"
            ]
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            return [f"--device {device}: this machine has {torch.cuda.device_count()} CUDA devices"]
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        return [f"--device {device}: MPS is not available on this machine; use --device cpu"]
    elif dev.type not in ("cuda", "mps", "cpu"):
        return [f"--device: expected cpu, cuda[:N], mps or auto, got {device!r}"]
    return []


def baseline_problems(baselines: Sequence[str]) -> list[str]:
    """Unknown scheduler names in ``baselines``, with the valid names (``[]``: all known)."""
    if not baselines:
        return []
    from hpcgym.sim.schedulers import get_scheduler, list_schedulers

    unknown = []
    for name in baselines:
        try:
            get_scheduler(name)
        except (ValueError, KeyError):
            unknown.append(name)
    if not unknown:
        return []
    return [
        f"--baselines: unknown scheduler {', '.join(map(repr, unknown))}; valid names: "
        f"{', '.join(list_schedulers())}"
    ]
