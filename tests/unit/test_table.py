"""Table configuration validation (13:69F-3.1(a), 3.2(a)6.iii, 3.2(b), 3.3(b); 13:47-20.20)."""

from fractions import Fraction

import pytest

from baccarat.drawing import CASINO_NIGHT, CASINO_NIGHT_LITERAL, PUNTO_BANCO, Variant
from baccarat.errors import IllegalTableConfig, InvalidAmount, WagerNotOffered
from baccarat.money import CommissionMode, Odds, Rounding, RoundingPolicy
from baccarat.shoe import ShoeRules
from baccarat.table import (
    CommissionScope,
    Limits,
    TableConfig,
    casino_night,
    no_vig_dragon,
    punto_banco,
    punto_banco_full,
    unregulated,
)
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
    with pytest.raises(IllegalTableConfig, match="against the Banker: player .required., banco and banco_suivi; got banker"):
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


# ---- regulated terms are locked (issue 9, finding 6) ----------------------------------------------------
def casino_night_table(**kw):
    """A casino-night TableConfig built field by field (the factory fixes the commission scope)."""
    return TableConfig(variant=Variant.CASINO_NIGHT, **kw)


# Each refused term, cell by cell: (factory, keyword arguments, the section the error must name).
REFUSED_TERMS = [
    # punto banco, 13:69F-3.3(a): the Player's Hand pays 1 to 1
    (punto_banco, {"pay": PayTable(player=Odds(2, 1))}, r"13:69F-3\.3\(a\)"),
    (punto_banco, {"pay": PayTable(player=Odds(100, 1))}, r"13:69F-3\.3\(a\)"),
    (punto_banco, {"pay": PayTable(player=Odds(19, 20))}, r"13:69F-3\.3\(a\)"),
    # 3.3(a)/(b): commission on every winner would pay the Player less than 1 to 1
    (punto_banco, {"commission_scope": CommissionScope.ALL_WINNERS}, r"13:69F-3\.3\(a\)"),
    # 3.3(c): the Banker's Hand pays 1 to 1 less the commission
    (punto_banco, {"pay": PayTable(banker=Odds(2, 1))}, r"13:69F-3\.3\(c\)"),
    (punto_banco, {"pay": PayTable(banker=Odds(19, 20))}, r"13:69F-3\.3\(c\)"),
    (punto_banco, {"commission_rate": Fraction(0)}, r"13:69F-3\.3\(c\)"),
    (punto_banco, {"commission_rate": Fraction(1, 10)}, r"13:69F-3\.3\(c\)"),
    (no_vig_dragon, {"pay": PayTable(banker=Odds(3, 2))}, r"13:69F-3\.3\(c\)"),
    # 3.3(b): the Tie pays at least 8 to 1
    (punto_banco, {"pay": PayTable(tie=Odds(7, 1))}, r"13:69F-3\.3\(b\)"),
    # 3.2(a)1.iii, 2.iii: a tie voids (pushes) Banker and Player wagers
    (punto_banco, {"tie_pushes_main_bets": False}, r"13:69F-3\.2\(a\)1\.iii"),
    (no_vig_dragon, {"tie_pushes_main_bets": False}, r"13:69F-3\.2\(a\)1\.iii"),
    # 3.1(a): at least six decks
    (punto_banco, {"shoe": ShoeRules(decks=4)}, r"13:69F-3\.1\(a\)"),
    # casino night, 13:47-20.20(d)5: 5 % on all winning bets, collected after each round
    (casino_night, {"commission_rate": Fraction(0)}, r"13:47-20\.20\(d\)5"),
    (casino_night, {"commission_rate": Fraction(1, 10)}, r"13:47-20\.20\(d\)5"),
    (casino_night, {"commission_rate": Fraction(1, 25)}, r"13:47-20\.20\(d\)5"),
    (casino_night, {"commission_mode": CommissionMode.ACCRUE}, r"13:47-20\.20\(d\)5"),
    (casino_night_table, {"commission_scope": CommissionScope.BANKER_ONLY}, r"13:47-20\.20\(d\)5"),
    # (e)5.i winning hands are paid even money; (e)5.ii a winning tie bet is paid 8 to 1
    (casino_night, {"pay": PayTable(player=Odds(2, 1))}, r"13:47-20\.20\(e\)5\.i"),
    (casino_night, {"pay": PayTable(banker=Odds(19, 20))}, r"13:47-20\.20\(e\)5\.i"),
    (casino_night, {"pay": PayTable(tie=Odds(9, 1))}, r"13:47-20\.20\(e\)5\.ii"),
    (casino_night, {"pay": PayTable(tie=Odds(7, 1))}, r"13:47-20\.20\(e\)5\.ii"),
    # (b)1 at most 14 players; (b)2 at least six decks
    (casino_night, {"max_players": 15}, r"13:47-20\.20\(b\)1"),
    (casino_night, {"shoe": ShoeRules(decks=5)}, r"13:47-20\.20\(b\)2"),
    (casino_night, {"shoe": ShoeRules(decks=5), "regulated": False}, r"13:47-20\.20\(b\)2"),
]


@pytest.mark.parametrize(("factory", "kw", "section"), REFUSED_TERMS,
                         ids=[f"{f.__name__}-{'-'.join(k)}-{i}" for i, (f, k, _) in enumerate(REFUSED_TERMS)])
def test_regulated_terms_cannot_be_configured_away(factory, kw, section):
    with pytest.raises(IllegalTableConfig, match=section):
        factory(**kw)


PUNTO_BANCO_REFUSALS = [t for t in REFUSED_TERMS if t[0] not in (casino_night, casino_night_table)]


@pytest.mark.parametrize(("factory", "kw", "section"), PUNTO_BANCO_REFUSALS)
def test_an_unregulated_table_may_change_the_punto_banco_terms(factory, kw, section):
    t = factory(regulated=False, **kw)
    for name, value in kw.items():
        assert getattr(t, name) == value


def test_casino_night_is_always_13_47_20_20():
    # 13:47-20.20 is the whole definition of the variant: regulated=False does not unlock it
    with pytest.raises(IllegalTableConfig, match=r"13:47-20\.20\(d\)5"):
        casino_night(commission_mode=CommissionMode.ACCRUE, regulated=False)


def test_what_the_texts_leave_open_stays_configurable():
    # punto banco: a Tie above 8 to 1 (3.3(b) "at least"), accrued commission, a lower commission (3.3(e)
    # [U]), rounding, seats; casino night: whether a tie pushes main bets (the text is silent), rounding, seats
    assert punto_banco(pay=PayTable(tie=Odds(9, 1))).pay.tie == Odds(9, 1)
    assert punto_banco(commission_mode=CommissionMode.ACCRUE).commission_mode is CommissionMode.ACCRUE
    assert punto_banco(commission_rate=Fraction(1, 25)).commission_rate == Fraction(1, 25)
    assert punto_banco(max_players=20).max_players == 20
    assert casino_night(tie_pushes_main_bets=False).tie_pushes_main_bets is False
    assert casino_night(max_players=7, rounding=Rounding(RoundingPolicy.HALF_EVEN, 25)).max_players == 7
    assert unregulated(commission_mode=CommissionMode.ACCRUE,
                       commission_scope=CommissionScope.ALL_WINNERS).regulated is False


def test_the_defaults_are_the_regulated_terms():
    for t in (punto_banco(), punto_banco_full(), no_vig_dragon(panda=True), casino_night(),
              casino_night(literal_banker_rule=True)):
        assert (t.pay.player, t.pay.banker) == (Odds(1, 1), Odds(1, 1))
        assert t.pay.tie == Odds(8, 1)
    assert casino_night().commission_rate == Fraction(1, 20)


def test_named_profiles_give_their_games_and_an_unknown_name_is_refused_with_the_list():
    from baccarat.table import TABLE_PROFILES, profile
    from baccarat.wagers import Wager

    assert profile("punto_banco").variant is Variant.PUNTO_BANCO and Wager.DRAGON_7 not in profile("punto_banco").wagers
    assert profile("punto_banco_basic").wagers == frozenset({Wager.BANKER, Wager.PLAYER, Wager.TIE})
    nv = profile("no_vig_dragon_7")
    assert nv.no_vig and Wager.DRAGON_7 in nv.wagers and Wager.PANDA_8 not in nv.wagers
    assert Wager.PANDA_8 in profile("no_vig_dragon_7_panda_8").wagers
    assert profile("casino_night").ruleset is CASINO_NIGHT
    assert profile("casino_night_literal").ruleset is CASINO_NIGHT_LITERAL
    assert profile("casino_night").max_players == 14
    with pytest.raises(IllegalTableConfig, match="unknown table profile 'chemin'.*casino_night_literal"):
        profile("chemin")
    assert profile("punto_banco_curator").curator and not profile("punto_banco").curator
    assert profile("chemin_de_fer").wagers == frozenset({Wager.PLAYER, Wager.BANCO, Wager.BANCO_SUIVI})
    assert len(TABLE_PROFILES) == 8
