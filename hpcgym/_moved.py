"""Old import paths of modules that moved: the old path works for one minor version, with a
:class:`FutureWarning` that names the new one (a leaf module: any layer may import it).

An old path is no file: :func:`install` puts a finder on :data:`sys.meta_path` that answers
for the old names only, with the module at its new path (the same object: every name,
private ones and later changes included). So ``import hpcgym.evaluation.heldout`` is
``hpcgym.zoo.heldout``, and the moved files keep their history.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType

__all__ = ["MovedFinder", "install"]


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new path."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path goes in the next minor version",
            FutureWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path is loaded already."""


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :attr:`moved` (old dotted path -> new dotted path)."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = self.moved.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install(moved: Mapping[str, str]) -> None:
    """Answer for the old paths of ``moved`` (old dotted path -> new one) from now on; first
    on :data:`sys.meta_path`, so that an old package's submodules are never loaded twice.

    :param moved: old dotted path -> new dotted path
    """
    for finder in sys.meta_path:
        if isinstance(finder, MovedFinder):
            finder.moved.update(moved)
            return
    sys.meta_path.insert(0, MovedFinder(moved))
