"""Moved to :mod:`hpcgym.evaluation.published` (the paper's published numbers); this old path
works for one minor version, with a FutureWarning."""

from hpcgym._moved import alias
from hpcgym.evaluation import published as _new

alias(__name__, _new)
