"""The CMA-ES search of a linear (or one-hidden-layer) backfilling score on the real
objective, a research method built on the trainer: :mod:`research.search.linear_search`
(the policy family, objective and search), :mod:`research.search.kernel_score` (the
score with a hidden layer) and the command line, ``python -m research.search``
(:mod:`research.search.search`). Its result ships as a ``train/ppo.py --total-steps 0``
run. See docs/training.md, *Searching a linear score*.
"""
