"""Imitation of LOOKAHEAD1-CLAIRVOYANT by the kernel policy ("imitation, then RL").

* :mod:`research.imitation.data` -- the teacher labels the env's decision points
  (:func:`~research.imitation.data.collect`, behaviour cloning and DAgger episodes);
* :mod:`research.imitation.bc` -- the student (a ``MaskablePPO`` kernel policy of
  :func:`train.build.new_model`) trained by cross-entropy on the masked logits;
* :mod:`research.imitation.measure` -- student, teacher and other agents against EASY-SJBF
  on validation windows (paired geo-mean ratio with a bootstrap interval).

The command line is ``python -m research.imitation``; see ``docs/research/findings.md``.
"""
