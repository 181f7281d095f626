"""Probability and expected value of every wager, exactly, from the odds engine's integer counts.

For one composition the odds engine (:mod:`baccarat.odds`) gives integer counts out of Permut(N, 6); this
module turns them, with a table's pay tables and commission, into exact fractions: the probability that
each wager wins, is void, or loses, and its expected value per unit staked (odds-and-roads.md §2).
Commission enters at its exact rate (rounding to the cent is a settlement matter, not an expectation one);
accrued and deducted commission have the same expected value.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from baccarat.table import TableConfig
from baccarat.wagers import BONUS_CLASSES, Wager


@dataclass(frozen=True, slots=True)
class WagerExpectation:
    """Integer counts (out of ``total``) of win/void/lose for one wager and its exact EV per unit staked."""

    wager: Wager
    total: int
    win: int
    void: int
    ev: Fraction

    @property
    def lose(self) -> int:
        return self.total - self.win - self.void

    @property
    def p_win(self) -> Fraction:
        return Fraction(self.win, self.total)

    @property
    def p_void(self) -> Fraction:
        return Fraction(self.void, self.total)


def _counts_dict(counts: Any) -> Mapping[str, Any]:
    return counts.to_dict() if hasattr(counts, "to_dict") else counts


def wager_expectations(counts: Any, table: TableConfig) -> dict[Wager, WagerExpectation]:
    """Exact probability and EV per unit staked for every wager ``table`` offers.

    ``counts`` is a :class:`baccarat.odds.OutcomeCounts` (or its ``to_dict()`` form plus ``total``).
    EV definitions (odds-and-roads.md §2): Banker 1 to 1 less commission (19 to 20 at 5 %), void on a tie;
    no-vig Banker void on a dragon 7 hand; Player 1 to 1 (less commission where the table charges it on all
    winners, 13:47-20.20(d)4); Tie at the table's odds; card-count, bonus, dragon 7 and panda 8 by the pay
    table.
    """
    c = _counts_dict(counts)
    total = counts.total if hasattr(counts, "total") else c["total"]
    b, p, t = c["banker"], c["player"], c["tie"]
    out: dict[Wager, WagerExpectation] = {}

    def add(w: Wager, win_units: Fraction, win: int, void: int) -> None:
        lose = total - win - void
        out[w] = WagerExpectation(w, total, win, void, (win_units - lose) / total)

    def net(w: Wager, ratio: Fraction) -> Fraction:
        return ratio * (1 - table.commission_rate_for(w))

    for w in sorted(table.wagers, key=lambda x: list(Wager).index(x)):
        if w is Wager.BANKER:
            d7 = c["dragon_7"] if table.no_vig else 0
            win = b - d7
            void = d7 + (t if table.tie_pushes_main_bets else 0)
            add(w, win * net(w, table.pay.banker.ratio), win, void)
        elif w is Wager.PLAYER:
            void = t if table.tie_pushes_main_bets else 0
            add(w, p * net(w, table.pay.player.ratio), p, void)
        elif w is Wager.TIE:
            add(w, t * net(w, table.pay.tie.ratio), t, 0)
        elif w in (Wager.CARDS_4, Wager.CARDS_5, Wager.CARDS_6):
            n = c[w.value]
            add(w, n * net(w, table.pay.odds_for(w).ratio), n, 0)
        elif w in (Wager.BONUS_PLAYER, Wager.BONUS_BANKER):
            side = c["bonus"]["player" if w is Wager.BONUS_PLAYER else "banker"]
            win = 0
            units = Fraction(0)
            for cls in BONUS_CLASSES:
                if cls in ("natural_tie", "lose"):
                    continue
                win += side[cls]
                units += side[cls] * net(w, table.pay.bonus[cls].ratio)
            add(w, units, win, side["natural_tie"])
        elif w in (Wager.DRAGON_7, Wager.PANDA_8):
            n = c[w.value]
            add(w, n * net(w, table.pay.odds_for(w).ratio), n, 0)
    return out
