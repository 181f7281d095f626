"""The projection's odds per view, in exact integers, kept up to date card by card.

The projection publishes both views' odds (public, surveillance; odds-and-roads.md §3) after every card.
Each (table, view) has a :class:`baccarat.odds_live.LiveOdds` tracker that follows the shoe (a card, a burn:
only the cards gone are taken out, :meth:`~baccarat.odds_live.LiveOdds.follow`), and the per-wager figures
are computed from the integer counts (:func:`baccarat.expectation.expectation_terms`): no ``Fraction`` on
the per-card path. The trackers are a cache: what is published depends only on the composition (a tracker
equals the full evaluation after every step, tests/unit/test_odds_live.py), so a rebuild, a restart or a
fresh core publish the same odds.
"""

from __future__ import annotations

from baccarat.errors import BaccaratError
from baccarat.expectation import expectation_terms
from baccarat.odds import OutcomeCounts
from baccarat.odds_live import LiveOdds
from baccarat.table import TableConfig
from contracts.events import WagerOdds

__all__ = ["LiveViews", "counts_dict", "wager_odds"]

#: most trackers kept (two views and the round judge per table): beyond it the cache starts afresh
MAX_TRACKERS = 3072


def wager_odds(counts: OutcomeCounts, config: TableConfig) -> list[WagerOdds]:
    """Every wager ``config`` offers: probability of a win and of a void, EV per unit (float, for display) and
    the exact EV as ``ev_num / ev_den`` in lowest terms. Floats are the correctly rounded quotients of the
    integers (the same values ``float(Fraction(...))`` gives)."""
    total = counts.total
    return [WagerOdds(wager=w.value, p_win=win / total, p_void=void / total, ev=num / den, ev_num=num, ev_den=den)
            for w, win, void, num, den in expectation_terms(counts, config)]


_BONUS = ("natural_win", "natural_tie", "win_by_4", "win_by_5", "win_by_6", "win_by_7", "win_by_8", "win_by_9",
          "lose")


def counts_dict(c: OutcomeCounts) -> dict[str, int]:
    """The flat counts of ``OddsUpdated.counts``: ``total``, ``banker`` .. ``panda_8``, ``bonus_<side>_<class>``,
    ``natural_<side>_<8|9>`` (all ints, this key order)."""
    out = {"total": c.total, "banker": c.banker, "player": c.player, "tie": c.tie, "cards_4": c.cards_4,
           "cards_5": c.cards_5, "cards_6": c.cards_6, "dragon_7": c.dragon_7, "panda_8": c.panda_8}
    for side, b in (("player", c.player_bonus), ("banker", c.banker_bonus)):
        for k in _BONUS:
            out[f"bonus_{side}_{k}"] = getattr(b, k)
    out["natural_player_8"] = c.player_natural_8
    out["natural_player_9"] = c.player_natural_9
    out["natural_banker_8"] = c.banker_natural_8
    out["natural_banker_9"] = c.banker_natural_9
    return out


class LiveViews:
    """Odds trackers by key (e.g. ``(table_id, view)``): :meth:`odds` follows the key's tracker to the
    composition asked and evaluates it. Not thread-safe (a core runs in one event loop)."""

    def __init__(self) -> None:
        self._trackers: dict[object, LiveOdds] = {}

    def odds(self, key: object, composition: tuple[int, ...],
             config: TableConfig) -> tuple[OutcomeCounts, list[WagerOdds]] | None:
        """Exact counts and per-wager odds of ``composition`` under ``config`` (None below 6 cards, for invalid
        counts, or for a ruleset without fixed drawing: chemin de fer)."""
        ruleset = config.odds_ruleset
        try:
            live = self._trackers.get(key)
            if live is None or (live.ruleset is not ruleset and live.ruleset != ruleset):
                if len(self._trackers) >= MAX_TRACKERS:
                    self._trackers.clear()
                live = self._trackers[key] = LiveOdds(composition, ruleset)
            else:
                live.follow(composition)
            if live.total < 6:
                return None
            counts = live.counts()
        except BaccaratError:
            return None
        return counts, wager_odds(counts, config)
