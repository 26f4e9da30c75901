"""EASY and SJBF backfilling as observation-only agents of the hpcgym backfilling env.

Both agents read only the observation (and the action mask) of
:class:`hpcgym.envs.backfill_env.BackfillEnv`, so they run wherever a trained policy runs
(``predict`` has SB3's signature, see :class:`agents.heuristic.HeuristicAgent`). Played in
the env they reproduce the engine's built-in backfillers exactly (same start times; this
is tested in ``tests/test_env.py``):

* :class:`EasyAgent`: at every decision point start the first job in the base policy's
  backfill order that EASY allows (column ``easy``: the engine's own EASY test,
  ``hpcgym.sim.view.easy_test``), until none is left: the engine's one EASY pass
  (``hpcgym.sim._core.easy_next``) read from the rows. In ``guarded`` mode
  with the FCFS base policy that is simply the first valid row; in general the ``rank``
  column gives the backfill order. Equals the engine's ``backfill="easy"``.
* :class:`SJBFAgent`: the EASY-allowed job with the smallest estimate (column ``estimate``,
  a monotone function of the runtime estimate), ties by row (= FCFS). Equals
  ``backfill="sjbf"`` (``EASY-SJBF``).

Starting the first allowed job repeatedly is the same as EASY's single pass over the order:
a start only lowers the free and extra processors, so a job that EASY did not allow earlier
in the pass does not become allowed later at the same time.

Caveat: the env shows the first ``max_queue`` candidates by FCFS; if the job EASY would
pick is beyond them, the agents cannot see it (``info["overflow_decisions"]`` counts such
decision points; none occur with the default ``max_queue=128`` on 256-job windows of the
usual traces in guarded mode).
"""

from __future__ import annotations

import numpy as np

from hpcgym.envs.observation import COL_EASY, COL_EST, COL_RANK, COL_VALID
from hpcgym_agents.heuristic import HeuristicAgent

__all__ = ["EasyAgent", "SJBFAgent"]


def _pick_min(observations: np.ndarray, masks: np.ndarray, column: int) -> np.ndarray:
    """Per observation, the valid, unmasked, EASY-allowed row with the smallest value in
    ``column`` (ties: the lowest row), or STOP (``K``) if there is none."""
    k = observations.shape[1]
    ok = masks[:, :k] & (observations[:, :, COL_VALID] > 0.5) & (observations[:, :, COL_EASY] > 0.5)
    key = np.where(ok, observations[:, :, column].astype(np.float64), np.inf)
    best = key.argmin(axis=1)  # first occurrence of the minimum: ties by row
    return np.where(ok.any(axis=1), best, k).astype(np.int64)


class EasyAgent(HeuristicAgent):
    """EASY backfilling: the first EASY-allowed job in the base policy's backfill order."""

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return _pick_min(observations, masks, COL_RANK)


class SJBFAgent(HeuristicAgent):
    """EASY-SJBF: the EASY-allowed job with the shortest estimate (ties: FCFS)."""

    def select(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return _pick_min(observations, masks, COL_EST)
