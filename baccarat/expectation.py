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
from math import gcd
from typing import Any, Callable, Mapping

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


@dataclass(frozen=True, slots=True)
class _Line:
    """How one wager is counted: winning outcome classes with their net payout per unit as integers over a
    common denominator ``den`` (pay odds less commission), and the void classes."""

    wager: Wager
    wins: tuple[tuple[Callable[[Any], int], int], ...]
    voids: tuple[Callable[[Any], int], ...]
    den: int


def _net(table: TableConfig, w: Wager, ratio: Fraction) -> Fraction:
    return ratio * (1 - table.commission_rate_for(w))


def _line(w: Wager, table: TableConfig, wins: list[tuple[Callable[[Any], int], Fraction]],
          voids: list[Callable[[Any], int]]) -> _Line:
    den = 1
    for _, r in wins:
        den = den * r.denominator // gcd(den, r.denominator)
    return _Line(w, tuple((g, int(r * den)) for g, r in wins), tuple(voids), den)


def _plan(table: TableConfig) -> tuple[_Line, ...]:
    """The counting plan of every wager ``table`` offers (built once per table configuration)."""
    lines = []
    for w in sorted(table.wagers, key=lambda x: list(Wager).index(x)):
        if w is Wager.BANKER:
            ratio = _net(table, w, table.pay.banker.ratio)
            if table.no_vig:  # void on a dragon 7 hand (3.2(a)6.i)
                wins = [(lambda c: c.banker - c.dragon_7, ratio)]
                voids = [lambda c: c.dragon_7]
            else:
                wins, voids = [(lambda c: c.banker, ratio)], []
            if table.tie_pushes_main_bets:
                voids.append(lambda c: c.tie)
            lines.append(_line(w, table, wins, voids))
        elif w in (Wager.PLAYER, Wager.BANCO, Wager.BANCO_SUIVI):  # banco: chemin de fer's whole-bank wager on the Player's Hand
            voids = [lambda c: c.tie] if table.tie_pushes_main_bets else []
            lines.append(_line(w, table, [(lambda c: c.player, _net(table, w, table.pay.player.ratio))], voids))
        elif w is Wager.TIE:
            lines.append(_line(w, table, [(lambda c: c.tie, _net(table, w, table.pay.tie.ratio))], []))
        elif w in (Wager.CARDS_4, Wager.CARDS_5, Wager.CARDS_6, Wager.DRAGON_7, Wager.PANDA_8):
            name = w.value
            lines.append(_line(w, table, [(lambda c, n=name: getattr(c, n), _net(table, w,
                                                                                table.pay.odds_for(w).ratio))], []))
        elif w in (Wager.BONUS_PLAYER, Wager.BONUS_BANKER):
            side = "player_bonus" if w is Wager.BONUS_PLAYER else "banker_bonus"
            wins = [
                (lambda c, s=side, k=cls: getattr(getattr(c, s), k), _net(table, w, table.pay.bonus[cls].ratio))
                for cls in BONUS_CLASSES if cls not in ("natural_tie", "lose")
            ]
            lines.append(_line(w, table, wins, [lambda c, s=side: getattr(c, s).natural_tie]))
    return tuple(lines)


_PLANS: dict[int, tuple[TableConfig, tuple[_Line, ...]]] = {}


def _plan_for(table: TableConfig) -> tuple[_Line, ...]:
    got = _PLANS.get(id(table))
    if got is None or got[0] is not table:
        if len(_PLANS) > 256:
            _PLANS.clear()
        got = _PLANS[id(table)] = (table, _plan(table))
    return got[1]


def expectation_terms(counts: Any, table: TableConfig) -> list[tuple[Wager, int, int, int, int]]:
    """Per wager ``table`` offers, in table order: ``(wager, win, void, ev_num, ev_den)``, all ints.

    ``counts`` is a :class:`baccarat.odds.OutcomeCounts`; ``win`` and ``void`` are counts out of
    ``counts.total``; the EV per unit staked is ``ev_num / ev_den`` in lowest terms (``ev_den > 0``), the same
    number :func:`wager_expectations` gives as a :class:`~fractions.Fraction`. Integer arithmetic only (the
    projection's per-card path: no Fraction is built).
    """
    total = counts.total
    out = []
    for line in _plan_for(table):
        win = units = 0
        for get, num in line.wins:
            n = get(counts)
            win += n
            units += n * num
        void = 0
        for get in line.voids:
            void += get(counts)
        num = units - (total - win - void) * line.den
        den = total * line.den
        g = gcd(num, den)
        out.append((line.wager, win, void, num // g, den // g))
    return out


def wager_expectations(counts: Any, table: TableConfig) -> dict[Wager, WagerExpectation]:
    """Exact probability and EV per unit staked for every wager ``table`` offers.

    ``counts`` is a :class:`baccarat.odds.OutcomeCounts` (or its ``to_dict()`` form).
    EV definitions (odds-and-roads.md §2): Banker 1 to 1 less commission (19 to 20 at 5 %), void on a tie;
    no-vig Banker void on a dragon 7 hand; Player 1 to 1 (less commission where the table charges it on all
    winners, 13:47-20.20(d)4); Tie at the table's odds; card-count, bonus, dragon 7 and panda 8 by the pay
    table. Integer arithmetic throughout (:func:`expectation_terms`): each wager's EV is one exact fraction
    ``(Σ count × net payout − losing count) / total``.
    """
    if isinstance(counts, Mapping):
        from baccarat.odds import OutcomeCounts

        counts = OutcomeCounts.from_dict(counts)
    total = counts.total
    return {w: WagerExpectation(w, total, win, void, Fraction(num, den))
            for w, win, void, num, den in expectation_terms(counts, table)}
