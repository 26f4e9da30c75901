"""The research record of hpcgym, outside the wheel: the probes behind the research report
(``research.probes``) and the retired agents' cards and models (``research/agents``). See
research/README.md."""
