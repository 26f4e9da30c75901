"""The model zoo's files: one model card (``.json``), model (``.zip``) and page (``.md``)
per agent, and ``README.md``, the zoo's table (data only; load agents with
:func:`hpcgym_agents.load_agent`)."""
