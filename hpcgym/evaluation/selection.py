"""Moved to :mod:`hpcgym.zoo.selection` (the zoo of shipped agents); this old path works for one
minor version, with a FutureWarning."""

from hpcgym._moved import alias
from hpcgym.zoo import selection as _new

alias(__name__, _new)
