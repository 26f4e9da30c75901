"""Moved to :mod:`hpcgym.zoo.leaderboard` (the zoo of shipped agents); this old path works for one
minor version, with a FutureWarning."""

from hpcgym._moved import alias
from hpcgym.zoo import leaderboard as _new

alias(__name__, _new)
