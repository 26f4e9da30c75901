"""Research probes: scripts that measure a question about the schedulers, predictors or
agents (how much room an ordering leaves, how large a gain the test criterion detects,
...). Each runs as ``python research/probes/<name>.py`` and imports as
``research.probes.<name>``. See research/README.md."""
