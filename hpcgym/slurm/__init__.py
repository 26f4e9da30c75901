"""hpcgym and a real Slurm: the policy bridge (:mod:`hpcgym.slurm.bridge`)."""
