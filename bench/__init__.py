"""Benchmark scripts (``python bench/<name>.py``; see bench/README.md). A package only so
that the import contracts of pyproject.toml can state that nothing imports them."""
