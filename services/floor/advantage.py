"""An advantage player: bets a side wager only when its exact expected value, from the cards seen at the
table (the public view, odds-and-roads.md §3), is positive. This is what surveillance is there to find.

It keeps its own count of the cards it has seen (the exposed burn card and every card dealt) and asks the
rules core's exact odds engine, as a player with a perfect computer would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from baccarat.cards import VALUE_COUNTS_PER_DECK, parse_card
from baccarat.expectation import wager_expectations
from baccarat.odds import Composition, exact_counts
from baccarat.table import TableConfig
from baccarat.wagers import MAIN_WAGERS, Wager
from contracts.commands import PlaceBet


@dataclass
class AdvantagePlayer:
    """Seat ``seat``; bets ``stake_cents`` on the best positive-EV side wager, otherwise sits out."""

    seat: int
    player_id: str
    stake_cents: int = 10_000
    seen: list[int] = field(default_factory=lambda: [0] * 10)
    decks: int = 8

    def new_shoe(self, decks: int) -> None:
        self.decks = decks
        self.seen = [0] * 10

    def saw(self, card: str) -> None:
        """A card was exposed at the table (a dealt card, or the burn's exposed card)."""
        self.seen[parse_card(card).value] += 1

    def best_side_bet(self, config: TableConfig) -> tuple[Wager, Fraction] | None:
        """The side wager with the highest positive EV from the public view (None: all negative, or the table
        offers no side wager, as at casino night)."""
        if not any(w not in MAIN_WAGERS and w is not Wager.TIE for w in config.wagers):
            return None
        comp = [n * self.decks - s for n, s in zip(VALUE_COUNTS_PER_DECK, self.seen)]
        if sum(comp) < 6 or min(comp) < 0:
            return None
        ev = wager_expectations(exact_counts(Composition.of(comp), config.odds_ruleset), config)
        side = [(e.ev, w) for w, e in ev.items() if w not in MAIN_WAGERS and w is not Wager.TIE and e.ev > 0]
        if not side:
            return None
        x, w = max(side, key=lambda t: t[0])
        return w, x

    def bet(self, config: TableConfig, round_id: str) -> PlaceBet | None:
        best = self.best_side_bet(config)
        if best is None:
            return None
        wager, _ = best
        lim = config.limits_for(wager)
        amount = max(lim.min_cents, min(self.stake_cents, lim.max_cents))
        return PlaceBet(round_id=round_id, seat=self.seat, player_id=self.player_id, wager=wager.value,
                        amount_cents=amount)
