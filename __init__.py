"""The root of an hpcgym clone, when Python imports it as the package ``hpcgym``.

Python looks for ``import hpcgym`` in the running script's folder first. A script run
from the folder that holds a clone named ``hpcgym`` would find the clone's root there and
import it as an empty namespace package, so nothing of hpcgym would load
(``gymnasium.make("hpcgym/Schedule-v0")`` then fails with ``NamespaceNotFound: Namespace
hpcgym not found``). This file makes that import load the package inside the clone
(``hpcgym/``) instead. It is not part of the installed package and is never imported
otherwise (docs/install.md, "Troubleshooting").
"""

from pathlib import Path as _Path

if __name__ == "hpcgym":  # the clone's root imported as the package: load the real one
    _inner = _Path(__file__).resolve().parent / "hpcgym"
    __path__ = [str(_inner)]
    if __spec__ is not None and __spec__.submodule_search_locations is not None:
        __spec__.submodule_search_locations[:] = [str(_inner)]
    __file__ = str(_inner / "__init__.py")
    exec(compile(_Path(__file__).read_text(encoding="utf-8"), __file__, "exec"))
