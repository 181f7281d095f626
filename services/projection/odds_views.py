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

from typing import NamedTuple

from baccarat.errors import BaccaratError
from baccarat.expectation import BONUS_CLASSES, FLAT_FIELDS, flat_terms
from baccarat.odds import permut6
from baccarat.odds_live import LiveOdds
from baccarat.table import TableConfig
from contracts.events import WagerOdds

__all__ = ["LiveViews", "ViewOdds", "counts_dict", "wager_odds"]

#: most trackers kept (two views and the round judge per table): beyond it the cache starts afresh
MAX_TRACKERS = 3072


class ViewOdds(NamedTuple):
    """One view's odds: ``total`` = Permut(N, 6), ``counts`` as ``OddsUpdated.counts``, ``wagers`` per wager."""

    total: int
    counts: dict[str, int]
    wagers: list[WagerOdds]


def wager_odds(total: int, flat: list[int], config: TableConfig) -> list[WagerOdds]:
    """Every wager ``config`` offers, from the counts in :data:`~baccarat.expectation.FLAT_FIELDS` order out of
    ``total``: probability of a win and of a void, EV per unit (float, for display) and the exact EV as
    ``ev_num / ev_den`` in lowest terms. Floats are the correctly rounded quotients of the integers (the same
    values ``float(Fraction(...))`` gives)."""
    return [WagerOdds(w.value, win / total, void / total, num / den, num, den)
            for w, win, void, num, den in flat_terms(total, flat, config)]


_KEYS: tuple[tuple[str, int], ...] = (
    *((k, FLAT_FIELDS.index(k)) for k in ("banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7",
                                          "panda_8")),
    *((f"bonus_{side}_{cls}", FLAT_FIELDS.index(f"{side}_bonus.{cls}"))
      for side in ("player", "banker") for cls in BONUS_CLASSES),
    *((f"natural_{side}_{p}", FLAT_FIELDS.index(f"{side}_natural_{p}")) for side in ("player", "banker")
      for p in (8, 9)),
)  # fmt: skip


def counts_dict(total: int, flat: list[int]) -> dict[str, int]:
    """The flat counts of ``OddsUpdated.counts``: ``total``, ``banker`` .. ``panda_8``, ``bonus_<side>_<class>``,
    ``natural_<side>_<8|9>`` (all ints, this key order)."""
    out = {"total": total}
    for k, i in _KEYS:
        out[k] = flat[i]
    return out


class LiveViews:
    """Odds trackers by key (e.g. ``(table_id, view)``): :meth:`odds` follows the key's tracker to the
    composition asked and evaluates it. Not thread-safe (a core runs in one event loop)."""

    def __init__(self) -> None:
        self._trackers: dict[object, LiveOdds] = {}

    def odds(self, key: object, composition: tuple[int, ...], config: TableConfig) -> ViewOdds | None:
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
            flat = live.column_counts()
        except BaccaratError:
            return None
        total = permut6(live.total)
        return ViewOdds(total, counts_dict(total, flat), wager_odds(total, flat, config))
