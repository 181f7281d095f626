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


#: The flat form of :class:`baccarat.odds.OutcomeCounts` (after ``total``), in its argument order, which is the
#: order the odds engines return (:func:`baccarat.odds.outcome_counts`): a wager's classes are indices into it.
FLAT_FIELDS: tuple[str, ...] = (
    "banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8",
    "player_natural_8", "player_natural_9", "banker_natural_8", "banker_natural_9",
    *(f"{side}_bonus.{cls}" for side in ("player", "banker") for cls in BONUS_CLASSES),
)  # fmt: skip
_AT = {name: i for i, name in enumerate(FLAT_FIELDS)}


def flat_counts(counts: Any) -> list[int]:
    """The 30 counts of an :class:`~baccarat.odds.OutcomeCounts` in :data:`FLAT_FIELDS` order."""
    out = [getattr(counts, name) for name in FLAT_FIELDS[:12]]
    out.extend(getattr(counts.player_bonus, cls) for cls in BONUS_CLASSES)
    out.extend(getattr(counts.banker_bonus, cls) for cls in BONUS_CLASSES)
    return out


@dataclass(frozen=True, slots=True)
class _Line:
    """How one wager is counted: winning outcome classes ``(index, minus index or -1, net payout)`` with the
    payout per unit as an integer over a common denominator ``den`` (pay odds less commission), and the void
    classes (indices), all into the :data:`FLAT_FIELDS` counts."""

    wager: Wager
    wins: tuple[tuple[int, int, int], ...]
    voids: tuple[int, ...]
    den: int


def _net(table: TableConfig, w: Wager, ratio: Fraction) -> Fraction:
    return ratio * (1 - table.commission_rate_for(w))


def _line(w: Wager, wins: list[tuple[str, Fraction]], voids: list[str]) -> _Line:
    """``wins``: (class, net ratio); a class ``"a-b"`` counts ``a`` less ``b``."""
    den = 1
    for _, r in wins:
        den = den * r.denominator // gcd(den, r.denominator)
    terms = []
    for name, r in wins:
        plus, _, minus = name.partition("-")
        terms.append((_AT[plus], _AT[minus] if minus else -1, int(r * den)))
    return _Line(w, tuple(terms), tuple(_AT[v] for v in voids), den)


def _plan(table: TableConfig) -> tuple[_Line, ...]:
    """The counting plan of every wager ``table`` offers (built once per table configuration)."""
    lines = []
    for w in sorted(table.wagers, key=lambda x: list(Wager).index(x)):
        if w is Wager.BANKER:
            ratio = _net(table, w, table.pay.banker.ratio)
            if table.no_vig:  # void on a dragon 7 hand (3.2(a)6.i)
                wins, voids = [("banker-dragon_7", ratio)], ["dragon_7"]
            else:
                wins, voids = [("banker", ratio)], []
            if table.tie_pushes_main_bets:
                voids.append("tie")
            lines.append(_line(w, wins, voids))
        elif w in (Wager.PLAYER, Wager.BANCO, Wager.BANCO_SUIVI):  # banco: chemin de fer's whole-bank wager on the Player's Hand
            voids = ["tie"] if table.tie_pushes_main_bets else []
            lines.append(_line(w, [("player", _net(table, w, table.pay.player.ratio))], voids))
        elif w is Wager.TIE:
            lines.append(_line(w, [("tie", _net(table, w, table.pay.tie.ratio))], []))
        elif w in (Wager.CARDS_4, Wager.CARDS_5, Wager.CARDS_6, Wager.DRAGON_7, Wager.PANDA_8):
            lines.append(_line(w, [(w.value, _net(table, w, table.pay.odds_for(w).ratio))], []))
        elif w in (Wager.BONUS_PLAYER, Wager.BONUS_BANKER):
            side = "player_bonus" if w is Wager.BONUS_PLAYER else "banker_bonus"
            wins = [(f"{side}.{cls}", _net(table, w, table.pay.bonus[cls].ratio))
                    for cls in BONUS_CLASSES if cls not in ("natural_tie", "lose")]
            lines.append(_line(w, wins, [f"{side}.natural_tie"]))
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
    number :func:`wager_expectations` gives as a :class:`~fractions.Fraction`. See :func:`flat_terms`.
    """
    return flat_terms(counts.total, flat_counts(counts), table)


def flat_terms(total: int, flat: list[int], table: TableConfig) -> list[tuple[Wager, int, int, int, int]]:
    """:func:`expectation_terms` from the counts in :data:`FLAT_FIELDS` order out of ``total`` (as the odds
    engines return them). Integer arithmetic only (the projection's per-card path: no Fraction is built)."""
    out = []
    for line in _plan_for(table):
        win = units = 0
        for i, j, num in line.wins:
            n = flat[i] - flat[j] if j >= 0 else flat[i]
            win += n
            units += n * num
        void = 0
        for i in line.voids:
            void += flat[i]
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
