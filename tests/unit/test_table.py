"""Table configuration validation (13:69F-3.1(a), 3.2(a)6.iii, 3.2(b), 3.3(b); 13:47-20.20)."""

import pytest

from baccarat.drawing import CASINO_NIGHT, CASINO_NIGHT_LITERAL, PUNTO_BANCO, Variant
from baccarat.errors import IllegalTableConfig, InvalidAmount, WagerNotOffered
from baccarat.money import Odds
from baccarat.shoe import ShoeRules
from baccarat.table import Limits, TableConfig, casino_night, no_vig_dragon, punto_banco, punto_banco_full
from baccarat.wagers import PayTable, Wager


@pytest.mark.parametrize("other", [Wager.CARDS_4, Wager.CARDS_5, Wager.CARDS_6, Wager.BONUS_PLAYER, Wager.BONUS_BANKER])
def test_dragon_7_not_with_card_count_or_bonus(other):
    with pytest.raises(IllegalTableConfig, match=r"3.2\(a\)6.iii"):
        TableConfig(wagers={Wager.BANKER, Wager.DRAGON_7, other}, no_vig=True)


def test_dragon_7_needs_the_no_vig_variation():
    with pytest.raises(IllegalTableConfig, match="no-vigorish"):
        TableConfig(wagers={Wager.BANKER, Wager.DRAGON_7})


def test_panda_8_is_an_extension():
    with pytest.raises(IllegalTableConfig, match=r"outside 13:69F-3.2\(a\)"):
        TableConfig(wagers={Wager.BANKER, Wager.PANDA_8}, no_vig=True)
    assert Wager.PANDA_8 in no_vig_dragon(panda=True).wagers


@pytest.mark.parametrize("decks", [1, 2, 4, 5])
def test_regulated_tables_need_six_decks(decks):
    with pytest.raises(IllegalTableConfig, match="at least 6"):
        TableConfig(shoe=ShoeRules(decks=decks))
    with pytest.raises(IllegalTableConfig):
        casino_night(shoe=ShoeRules(decks=decks), regulated=False)
    assert TableConfig(shoe=ShoeRules(decks=decks), regulated=False).shoe.decks == decks


def test_casino_night_rules():
    assert casino_night(max_players=14).max_players == 14
    with pytest.raises(IllegalTableConfig, match="at most 14"):
        casino_night(max_players=15)
    with pytest.raises(IllegalTableConfig, match="bank, player and tie only"):
        casino_night(wagers={Wager.BANKER, Wager.CARDS_4})
    assert casino_night().ruleset is CASINO_NIGHT
    assert casino_night(literal_banker_rule=True).ruleset is CASINO_NIGHT_LITERAL
    assert punto_banco().ruleset is PUNTO_BANCO


def test_tie_pays_at_least_8_to_1():
    with pytest.raises(IllegalTableConfig, match="at least 8 to 1"):
        TableConfig(pay=PayTable(tie=Odds(7, 1)))
    assert TableConfig(pay=PayTable(tie=Odds(9, 1))).pay.tie == Odds(9, 1)


def test_chemin_de_fer_is_not_a_house_banked_table():
    with pytest.raises(IllegalTableConfig, match="between participants"):
        TableConfig(variant=Variant.CHEMIN_DE_FER)


def test_limits():
    t = punto_banco(limits={Wager.TIE: Limits(500, 10_000)})
    assert t.limits_for(Wager.TIE) == Limits(500, 10_000)
    assert t.limits_for(Wager.BANKER).min_cents == 2_500
    with pytest.raises(InvalidAmount, match="over the tie maximum"):
        t.check_stake(Wager.TIE, 10_001)
    with pytest.raises(InvalidAmount, match="under the tie minimum"):
        t.check_stake(Wager.TIE, 499)
    with pytest.raises(WagerNotOffered):
        t.check_stake(Wager.CARDS_4, 1_000)
    with pytest.raises(IllegalTableConfig, match="below the minimum"):
        Limits(1_000, 500)
    with pytest.raises(InvalidAmount):
        Limits(0, 500)
    with pytest.raises(IllegalTableConfig, match="does not offer"):
        punto_banco(limits={Wager.CARDS_4: Limits(100, 200)})


def test_other_refusals():
    with pytest.raises(IllegalTableConfig, match="at least one wager"):
        TableConfig(wagers=frozenset())
    with pytest.raises(IllegalTableConfig, match="bonus_requires_base_bet"):
        TableConfig(wagers={Wager.BONUS_PLAYER}, bonus_requires_base_bet=True)
    with pytest.raises(IllegalTableConfig, match="bonus pay table lacks win_by_4"):
        punto_banco_full(pay=PayTable(bonus={"natural_win": Odds(1, 1)}))
    with pytest.raises(IllegalTableConfig, match="max_players"):
        punto_banco(max_players=0)
