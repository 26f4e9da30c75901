"""Other trainers on hpcgym's envs, one readable file each, to copy and adapt:
``cleanrl_ppo.py`` (masked PPO in plain torch, CleanRL style) and ``rllib_ppo.py`` (RLlib
PPO with action masking). Not part of the package. See docs/training.md and
docs/scaling.md."""
