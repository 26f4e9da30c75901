"""Moved to :mod:`hpcgym.paper.table5` (the paper reproduction); this old path works for one
minor version, with a FutureWarning."""

from hpcgym._moved import alias
from hpcgym.paper import table5 as _new

alias(__name__, _new)
