"""The zoo of shipped agents: what happens to a trained agent's model card after training.

Above the evaluation harness (:mod:`hpcgym.evaluation`, which it uses and which never imports
it), one module per job:

* :mod:`.selection`: checkpoint selection on validation windows (:func:`select_checkpoint`)
  and the gate of a gated agent (:func:`select_gate`);
* :mod:`.screen`: several runs' checkpoint choices side by side (:func:`compare_selections`);
* :mod:`.ship`: an agent's model and card into a folder of agents (:func:`ship_card`);
* :mod:`.card_text`: the human-readable card ``<name>.md`` (:func:`card_markdown`);
* :mod:`.heldout`: the held-out test of a shipped agent, once, on test windows
  (:func:`heldout_test`);
* :mod:`.leaderboard`: every heuristic and zoo agent on the zoo's test windows, replaying
  what the cards recorded (:func:`leaderboard`); :mod:`.schedule_board`: the same for the
  queue orders of Schedule-v0 (:func:`schedule_boards`).

The card itself (reading, finding, the card a trainer writes into its run folder) is the
harness's input format: :mod:`hpcgym.evaluation.cards`.
"""

from __future__ import annotations

from hpcgym.zoo.card_text import card_markdown
from hpcgym.zoo.heldout import heldout_markdown, heldout_test, replay_heldout
from hpcgym.zoo.leaderboard import leaderboard, leaderboard_markdown
from hpcgym.zoo.schedule_board import schedule_boards, schedule_markdown
from hpcgym.zoo.screen import compare_selections, screen_markdown
from hpcgym.zoo.selection import load_selection, select_checkpoint, select_gate
from hpcgym.zoo.ship import ship_card, ship_model

__all__ = [
    "card_markdown",
    "compare_selections",
    "heldout_markdown",
    "heldout_test",
    "leaderboard",
    "leaderboard_markdown",
    "load_selection",
    "replay_heldout",
    "schedule_boards",
    "schedule_markdown",
    "screen_markdown",
    "select_checkpoint",
    "select_gate",
    "ship_card",
    "ship_model",
]
