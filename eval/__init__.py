"""Evaluation commands (thin CLIs over :mod:`hpcgym.evaluation`); see docs/evaluation.md."""
