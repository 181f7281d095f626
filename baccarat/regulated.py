"""The terms a regulation fixes, which a regulated table may not configure otherwise.

:func:`check_regulated_terms` is called by :class:`baccarat.table.TableConfig` on construction and raises
:class:`baccarat.errors.IllegalTableConfig` naming the section broken. It applies to a punto banco table
with ``regulated=True`` (the default; ``regulated=False`` is a test or training table) and to every
casino-night table (13:47-20.20 is the whole definition of that variant).

Locked, punto banco (N.J.A.C. 13:69F-3):

* 3.3(a): the Player's Hand pays 1 to 1, so no commission on it (commission scope ``banker_only``);
* 3.3(b): the Tie pays at least 8 to 1, commission-free;
* 3.3(c) [P]: the Banker's Hand pays 1 to 1 less a commission; on a standard table the commission is
  more than 0 and at most 5 % of the amount won (the 19 to 20 of the industry; 3.3(e) is an unretrieved
  exception that may lower it, so a lower rate stays configurable); the no-vigorish variation (3.3(h))
  takes none;
* 3.2(a)1.iii, 2.iii: a tie voids (pushes) Banker and Player wagers;
* 3.1(a): at least six decks (checked by the table itself).

Locked, casino night (N.J.A.C. 13:47-20.20):

* (d)5: a 5 % commission on all winning bets, collected after each round: rate exactly 1/20, scope
  ``all_winners``, mode ``deduct_at_payout`` (no accrual);
* (e)5.i: winning hands are paid even money (Player and Banker 1 to 1); (e)5.ii: a winning tie bet is
  paid 8 to 1, exactly;
* (b)1 at most 14 players, (b)2 at least six decks, (e)1 bank, player and tie only (checked by the table).

Left configurable where the texts are silent (README "Configuration"): seats on a punto banco table, the
Tie above 8 to 1, commission mode (deduct or accrue) and a rate under 5 % in punto banco, rounding,
limits, whether a tie pushes main bets at casino night, the card-count, bonus and dragon 7 pay tables.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from baccarat.drawing import Variant
from baccarat.errors import IllegalTableConfig
from baccarat.money import CommissionMode, CommissionScope, Odds

if TYPE_CHECKING:  # pragma: no cover
    from baccarat.table import TableConfig

EVEN_MONEY = Odds(1, 1)
#: 13:69F-3.3(c) [P] (the industry's 19 to 20) and 13:47-20.20(d)5 (stated): 5 % of the amount won
FIVE_PERCENT = Fraction(1, 20)
#: 13:69F-3.3(b) "at least"; 13:47-20.20(e)5.ii "shall be paid 8 to 1"
TIE_ODDS = Odds(8, 1)


def _same(odds: Odds, want: Odds) -> bool:
    return odds.ratio == want.ratio


def check_regulated_terms(t: TableConfig) -> None:
    """Raise :class:`IllegalTableConfig` naming the section if ``t`` changes a term its regulation fixes.

    Does nothing for an unregulated punto banco table. Call after the structural checks of the table.
    """

    if t.variant is Variant.CASINO_NIGHT:
        if t.commission_rate != FIVE_PERCENT:
            raise IllegalTableConfig(
                f"casino night collects a 5 % commission (13:47-20.20(d)5), got {t.commission_rate}")
        if t.commission_scope is not CommissionScope.ALL_WINNERS:
            raise IllegalTableConfig("casino night collects the commission on all winning bets "
                                     "(13:47-20.20(d)5): commission_scope must be all_winners")
        if t.commission_mode is not CommissionMode.DEDUCT_AT_PAYOUT:
            raise IllegalTableConfig("casino night collects the commission after each round (13:47-20.20(d)5): "
                                     "commission_mode must be deduct_at_payout, not accrue")
        for name in ("player", "banker"):
            odds = getattr(t.pay, name)
            if not _same(odds, EVEN_MONEY):
                raise IllegalTableConfig(
                    f"casino night pays winning hands even money (13:47-20.20(e)5.i): {name} pays {odds}")
        if not _same(t.pay.tie, TIE_ODDS):
            raise IllegalTableConfig(
                f"casino night pays a winning tie bet 8 to 1 (13:47-20.20(e)5.ii), got {t.pay.tie}")
        return
    if not t.regulated:
        return
    if t.variant is Variant.CHEMIN_DE_FER:
        _check_chemin(t)
        return
    if not _same(t.pay.player, EVEN_MONEY):
        raise IllegalTableConfig(f"the Player's Hand pays 1 to 1 (13:69F-3.3(a)), got {t.pay.player}")
    if t.commission_scope is not CommissionScope.BANKER_ONLY:
        raise IllegalTableConfig("commission on every winner would pay the Player's Hand less than 1 to 1 "
                                 "(13:69F-3.3(a)) and the Tie less than its odds (3.3(b)): "
                                 "commission_scope must be banker_only")
    if not _same(t.pay.banker, EVEN_MONEY):
        raise IllegalTableConfig(
            f"the Banker's Hand pays 1 to 1 less the commission (13:69F-3.3(c)), got {t.pay.banker}")
    if not t.no_vig and not (0 < t.commission_rate <= FIVE_PERCENT):
        raise IllegalTableConfig(
            f"a standard table pays the Banker's Hand 1 to 1 less a commission of more than 0 and at most "
            f"5 % (13:69F-3.3(c)), got {t.commission_rate}; the no-commission game is the no-vigorish "
            "variation (3.3(h))")
    if t.pay.tie.ratio < TIE_ODDS.ratio:
        raise IllegalTableConfig(f"the Tie must pay at least 8 to 1 (13:69F-3.3(b)), got {t.pay.tie}")
    if not t.tie_pushes_main_bets:
        raise IllegalTableConfig("a tie voids Banker and Player wagers (13:69F-3.2(a)1.iii, 2.iii): "
                                 "tie_pushes_main_bets must be true")


def _check_chemin(t: TableConfig) -> None:
    """A regulated chemin de fer table: wagers against the Banker are paid even money by the bank, a tie
    returns them, and a tie for the highest wager goes to the seat nearest the Banker counter-clockwise
    (13:69F-4.8(c)3 [V]). The house's commission on the bank's winnings is more than 0 and at most 5 %, the
    punto banco maximum of 13:69F-3.3(c) (its rate is a configuration, default 5 %: the 13:69F-4 commission
    text was not retrieved, and a regulated table takes no more than the regulated baccarat rate)."""
    from baccarat.chemin import TieBreak

    if not _same(t.pay.player, EVEN_MONEY):
        raise IllegalTableConfig(f"a wager against the Banker is paid even money by the bank, got {t.pay.player}")
    if not t.tie_pushes_main_bets:
        raise IllegalTableConfig("a tie returns the wagers against the Banker: tie_pushes_main_bets must be true")
    if t.chemin.tie_break is not TieBreak.NEAREST_COUNTER_CLOCKWISE:
        raise IllegalTableConfig("13:69F-4.8(c): equally high wagers give control to the seat nearest the Banker "
                                 "moving counterclockwise; another tie break is for an unregulated table only")
    if not (0 < t.commission_rate <= FIVE_PERCENT):
        raise IllegalTableConfig(f"the house's commission on the bank's winnings must be more than 0 and at most "
                                 f"5 % on a regulated table (13:69F-3.3(c)'s rate; the 13:69F-4 commission text "
                                 f"was not retrieved), got {t.commission_rate}")


__all__ = ["EVEN_MONEY", "FIVE_PERCENT", "TIE_ODDS", "check_regulated_terms"]
