"""Commission never above the regulated rate on a regulated table (issue 28, item 7).

13:69F-3.3(c) pays the Banker's Hand 1 to 1 less a commission of at most 5 %; 13:47-20.20(d)5 collects 5 %
of every winning bet. Under the ``house`` rounding policy a commission was rounded *up* to the unit: a $25.25
Banker win owes 126.25 ¢ and was charged 150 ¢ at a 25 ¢ unit (5.94 %), 127 ¢ at 1 ¢ (5.03 %). On a regulated
table the unit's forced choice now goes to the patron (125 ¢, 126 ¢); an unregulated (training) table still
rounds by its policy alone. Casino night's commission on a winning tie is a named option.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baccarat.cards import Card, Rank
from baccarat.chemin import settle_table_bank
from baccarat.errors import IllegalTableConfig
from baccarat.money import CommissionMode, Rounding, RoundingPolicy
from baccarat.round import Winner, resolve
from baccarat.table import (CasinoNightTieCommission, TableConfig, casino_night, chemin_de_fer, punto_banco,
                            punto_banco_full, unregulated)
from baccarat.wagers import BetResult, Wager, settle
from contracts.tables import TableSpec
from services.runtime.translate import table_config, table_spec

FIVE = Fraction(1, 20)
#: P7 B9 (the Banker wins), P7 B6 (the Player wins), a 3-3 tie
BANKER_WINS, PLAYER_WINS, TIE = ((Rank(4), Rank(9), Rank(3), Rank(13)), (Rank(4), Rank(13), Rank(3), Rank(6)),
                                 (Rank(2), Rank(10), Rank(3), Rank(3), Rank(8)))


def _outcome(ranks, table: TableConfig):  # type: ignore[no-untyped-def]
    return resolve([Card(r) for r in ranks], table.odds_ruleset)[0]


@pytest.mark.parametrize("unit, house_charged, capped", [(1, 127, 126), (25, 150, 125), (5, 130, 125)])
def test_a_banker_win_of_25_25_is_charged_at_most_5_percent_on_a_regulated_table(unit, house_charged, capped):
    rounding = Rounding(RoundingPolicy.HOUSE, unit)
    regulated = punto_banco(rounding=rounding)
    s = settle(Wager.BANKER, 2525, _outcome(BANKER_WINS, regulated), regulated)
    assert (s.win, s.commission, s.payout) == (2525, capped, 2525 + 2525 - capped)
    assert s.commission * 20 <= s.win
    # a training table keeps its policy: the fraction to the house
    training = unregulated(rounding=rounding)
    assert settle(Wager.BANKER, 2525, _outcome(BANKER_WINS, training), training).commission == house_charged


def test_half_even_is_capped_too_and_an_exact_commission_is_untouched():
    half = punto_banco(rounding=Rounding(RoundingPolicy.HALF_EVEN, 25))
    # 5 % of 2,750 = 137.5 ¢: half-even to the quarter is 150 ¢; capped, 125 ¢
    assert settle(Wager.BANKER, 2750, _outcome(BANKER_WINS, half), half).commission == 125
    house = punto_banco(rounding=Rounding(RoundingPolicy.HOUSE, 25))
    assert settle(Wager.BANKER, 10_000, _outcome(BANKER_WINS, house), house).commission == 500


@st.composite
def _regulated_tables(draw):  # type: ignore[no-untyped-def]
    unit = draw(st.sampled_from([1, 2, 5, 10, 25, 50, 100, 500]) | st.integers(1, 1_000))
    rounding = Rounding(draw(st.sampled_from(RoundingPolicy)), unit)
    kind = draw(st.sampled_from(["punto_banco", "casino_night", "chemin"]))
    if kind == "casino_night":
        return casino_night(rounding=rounding,
                            casino_night_tie_commission=draw(st.sampled_from(CasinoNightTieCommission)))
    rate = Fraction(draw(st.integers(1, 100)), draw(st.integers(20, 2_000)))
    rate = min(rate, FIVE)
    if kind == "chemin":
        return chemin_de_fer(rounding=rounding, commission_rate=rate)
    mode = draw(st.sampled_from(CommissionMode))
    return punto_banco_full(rounding=rounding, commission_rate=rate, commission_mode=mode)


@settings(max_examples=300, deadline=None)
@given(table=_regulated_tables(), stake=st.integers(1, 10_000_000), cards=st.sampled_from([BANKER_WINS,
                                                                                         PLAYER_WINS, TIE]),
       data=st.data())
def test_commission_is_never_above_the_rate_of_the_win_on_a_regulated_table(table, stake, cards, data):
    outcome = _outcome(cards, table)
    wager = data.draw(st.sampled_from(sorted(table.wagers, key=lambda w: w.value)))
    s = settle(wager, stake, outcome, table)
    rate = table.commission_rate_for(wager)
    assert s.commission <= rate * s.win <= FIVE * s.win
    assert s.commission >= 0 and (s.result is BetResult.WIN or s.commission == 0)
    if table.variant.value == "chemin_de_fer":  # the house's commission on the bank's winnings
        bank = data.draw(st.integers(stake, 20_000_000))
        b = settle_table_bank(bank, stake, outcome.winner, table)
        assert 0 <= b.commission_cents <= table.commission_rate * max(b.won_cents, 0) <= FIVE * max(b.won_cents, 0)


def test_casino_night_tie_commission_is_a_named_option():
    charged = casino_night()
    assert charged.casino_night_tie_commission is CasinoNightTieCommission.CHARGED
    tie = _outcome(TIE, charged)
    s = settle(Wager.TIE, 1000, tie, charged)
    assert (s.win, s.commission, s.payout) == (8000, 400, 8600)  # 8 to 1 less 5 %: 7.6 to 1 net
    exempt = casino_night(casino_night_tie_commission=CasinoNightTieCommission.EXEMPT)
    s = settle(Wager.TIE, 1000, tie, exempt)
    assert (s.win, s.commission, s.payout) == (8000, 0, 9000)
    p = settle(Wager.PLAYER, 1000, _outcome(PLAYER_WINS, exempt), exempt)  # the hands still pay 5 %
    assert (p.win, p.commission, p.payout) == (1000, 50, 1950)
    # on the wire, both ways, and refused off casino night
    spec = table_spec(exempt)
    assert spec.casino_night_tie_commission == "exempt" and table_config(spec) == exempt
    assert TableSpec().casino_night_tie_commission == "charged"
    with pytest.raises(IllegalTableConfig, match="casino night term"):
        punto_banco(casino_night_tie_commission=CasinoNightTieCommission.EXEMPT)


def test_a_regulated_chemin_de_fer_table_refuses_a_commission_above_5_percent():
    with pytest.raises(IllegalTableConfig, match="at most 5 %"):
        chemin_de_fer(commission_rate=Fraction(1, 10))
    with pytest.raises(IllegalTableConfig, match="at most 5 %"):
        chemin_de_fer(commission_rate=Fraction(99, 100))
    assert chemin_de_fer(commission_rate=Fraction(1, 25)).commission_rate == Fraction(1, 25)
    assert chemin_de_fer(regulated=False, commission_rate=Fraction(1, 10)).commission_rate == Fraction(1, 10)
    # the bank's commission is capped as a bettor's: 5 % of 2,525 won at a 25 ¢ unit is 125, not 150
    t = chemin_de_fer(rounding=Rounding(RoundingPolicy.HOUSE, 25))
    assert settle_table_bank(10_000, 2525, Winner.BANKER, t).commission_cents == 125


def test_too_few_decks_at_chemin_de_fer_cites_its_own_section():
    from baccarat.shoe import ShoeRules

    with pytest.raises(IllegalTableConfig, match=r"13:69F-4\.1") as e:
        chemin_de_fer(shoe=ShoeRules(decks=4))
    assert "chemin de fer" in str(e.value) and "13:69F-3.1(a)" not in str(e.value)
    with pytest.raises(IllegalTableConfig, match=r"\(13:69F-3\.1\(a\)\)"):
        punto_banco(shoe=ShoeRules(decks=4))
    with pytest.raises(IllegalTableConfig, match=r"13:47-20\.20\(b\)2"):
        casino_night(shoe=ShoeRules(decks=4))
