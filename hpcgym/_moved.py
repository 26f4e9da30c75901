"""Old import paths of modules that moved: the old path works for one minor version, with a
:class:`FutureWarning` that names the new one (a leaf module: any layer may import it)."""

from __future__ import annotations

import sys
import warnings
from types import ModuleType

__all__ = ["alias"]


def alias(old: str, new: ModuleType) -> None:
    """Make the module ``old`` the module ``new`` (the same object: every name, private ones
    and later changes included) and warn that ``old`` moved.

    :param old: the old dotted path (the shim module's ``__name__``)
    :param new: the module at its new path
    """
    warnings.warn(
        f"{old} moved to {new.__name__}; the old path goes in the next minor version",
        FutureWarning,
        stacklevel=3,
    )
    sys.modules[old] = new
