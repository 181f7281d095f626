"""Settlement of every wager on every outcome class (13:69F-3.2), commission, rounding, conservation."""


import pytest
from hypothesis import given
from hypothesis import strategies as st

from baccarat.cards import Card, Hand, Rank, parse_cards
from baccarat.drawing import PUNTO_BANCO
from baccarat.errors import InvalidAmount, UnknownWager, WagerNotOffered
from baccarat.money import CommissionMode, Rounding, RoundingPolicy
from baccarat.round import resolve
from baccarat.table import CommissionScope, casino_night, no_vig_dragon, punto_banco, punto_banco_full, unregulated
from baccarat.wagers import BetResult, Wager, bonus_class, settle

W, L, VOID = BetResult.WIN, BetResult.LOSE, BetResult.VOID
STAKE = 2000

OUTCOMES = {
    "player_by_1_4_cards": "4,K,3,6",  # P7 B6
    "tie_3_5_cards": "2,10,3,3,8",  # 3-3 non-natural tie
    "banker_dragon_7": "10,3,5,K,10,4",  # B three-card 7 beats P5, 6 cards
    "natural_tie_8": "4,5,4,3",  # 8-8
    "player_nat9_over_nat8": "9,8,K,J",
    "player_by_9_non_natural": "10,10,K,Q,9,10",  # P9 (3 cards) B0
    "banker_by_5_non_natural": "10,10,K,5,10",  # P0 B5, Banker 5 stands on a 0: 5 cards
    "banker_natural_9": "4,9,3,K",  # P7 B9
    "player_panda_8": "2,K,3,6,3",  # P 2+3+3 = 8 (3 cards) beats B6
}

# Expected (result, payout in cents) for a 2,000-cent bet on a full punto banco table (commission deducted).
FULL = {
    "player_by_1_4_cards": dict(banker=(L, 0), player=(W, 4000), tie=(L, 0), cards_4=(W, 5000), cards_5=(L, 0),
                                cards_6=(L, 0), bonus_player=(L, 0), bonus_banker=(L, 0)),
    "tie_3_5_cards": dict(banker=(VOID, 2000), player=(VOID, 2000), tie=(W, 18000), cards_4=(L, 0),
                          cards_5=(W, 6000), cards_6=(L, 0), bonus_player=(L, 0), bonus_banker=(L, 0)),
    "banker_dragon_7": dict(banker=(W, 3900), player=(L, 0), tie=(L, 0), cards_4=(L, 0), cards_5=(L, 0),
                            cards_6=(W, 6000), bonus_player=(L, 0), bonus_banker=(L, 0)),
    "natural_tie_8": dict(banker=(VOID, 2000), player=(VOID, 2000), tie=(W, 18000), cards_4=(W, 5000),
                          cards_5=(L, 0), cards_6=(L, 0), bonus_player=(VOID, 2000), bonus_banker=(VOID, 2000)),
    "player_nat9_over_nat8": dict(banker=(L, 0), player=(W, 4000), tie=(L, 0), cards_4=(W, 5000), cards_5=(L, 0),
                                  cards_6=(L, 0), bonus_player=(W, 4000), bonus_banker=(L, 0)),
    "player_by_9_non_natural": dict(banker=(L, 0), player=(W, 4000), tie=(L, 0), cards_4=(L, 0), cards_5=(L, 0),
                                    cards_6=(W, 6000), bonus_player=(W, 62000), bonus_banker=(L, 0)),
    "banker_by_5_non_natural": dict(banker=(W, 3900), player=(L, 0), tie=(L, 0), cards_4=(L, 0), cards_5=(W, 6000),
                                    cards_6=(L, 0), bonus_player=(L, 0), bonus_banker=(W, 6000)),
    "banker_natural_9": dict(banker=(W, 3900), player=(L, 0), tie=(L, 0), cards_4=(W, 5000), cards_5=(L, 0),
                             cards_6=(L, 0), bonus_player=(L, 0), bonus_banker=(W, 4000)),
    "player_panda_8": dict(banker=(L, 0), player=(W, 4000), tie=(L, 0), cards_4=(L, 0), cards_5=(W, 6000),
                           cards_6=(L, 0), bonus_player=(L, 0), bonus_banker=(L, 0)),
}

# No-vigorish table with dragon 7 and the panda 8 extension.
NO_VIG = {
    "banker_dragon_7": dict(banker=(VOID, 2000), player=(L, 0), tie=(L, 0), dragon_7=(W, 82000), panda_8=(L, 0)),
    "banker_by_5_non_natural": dict(banker=(W, 4000), player=(L, 0), dragon_7=(L, 0), panda_8=(L, 0)),
    "player_panda_8": dict(banker=(L, 0), player=(W, 4000), dragon_7=(L, 0), panda_8=(W, 52000)),
    "tie_3_5_cards": dict(banker=(VOID, 2000), player=(VOID, 2000), tie=(W, 18000), dragon_7=(L, 0), panda_8=(L, 0)),
    "banker_natural_9": dict(banker=(W, 4000), dragon_7=(L, 0)),
}


def outcome(name):
    return resolve(parse_cards(OUTCOMES[name]), PUNTO_BANCO)[0]


@pytest.mark.parametrize("name,wager", [(n, w) for n, row in FULL.items() for w in row])
def test_full_table_settlement(name, wager):
    s = settle(Wager(wager), STAKE, outcome(name), punto_banco_full())
    assert (s.result, s.payout) == FULL[name][wager]


@pytest.mark.parametrize("name,wager", [(n, w) for n, row in NO_VIG.items() for w in row])
def test_no_vig_table_settlement(name, wager):
    s = settle(Wager(wager), STAKE, outcome(name), no_vig_dragon(panda=True))
    assert (s.result, s.payout) == NO_VIG[name][wager]
    assert s.commission == 0


def test_outcome_flags():
    assert outcome("banker_dragon_7").dragon_7 and not outcome("banker_by_5_non_natural").dragon_7
    assert outcome("player_panda_8").panda_8 and not outcome("player_by_9_non_natural").panda_8


@pytest.mark.parametrize(
    "name,player_class,banker_class",
    [
        ("natural_tie_8", "natural_tie", "natural_tie"),
        ("player_nat9_over_nat8", "natural_win", "lose"),
        ("player_by_9_non_natural", "win_by_9", "lose"),
        ("banker_by_5_non_natural", "lose", "win_by_5"),
        ("banker_natural_9", "lose", "natural_win"),
        ("player_by_1_4_cards", "lose", "lose"),
        ("tie_3_5_cards", "lose", "lose"),
    ],
)
def test_bonus_matrix(name, player_class, banker_class):
    o = outcome(name)
    assert bonus_class(o, Hand.PLAYER) == player_class and bonus_class(o, Hand.BANKER) == banker_class


def test_bonus_margins_four_through_nine_pay_the_table():
    # Non-natural Player wins by k: Player 9 (three cards) over Banker 9-k.
    table = punto_banco_full()
    expected = {4: 1, 5: 2, 6: 4, 7: 6, 8: 10, 9: 30}
    for k, x in expected.items():
        o = resolve(parse_cards("10,10,K,Q,9,10"), PUNTO_BANCO)[0]
        o = type(o)(**{**{f: getattr(o, f) for f in o.__slots__}, "banker_points": 9 - k})
        s = settle(Wager.BONUS_PLAYER, 100, o, table)
        assert (s.result, s.win) == (W, 100 * x), k
    for k in (1, 2, 3):
        o = resolve(parse_cards("10,10,K,Q,9,10"), PUNTO_BANCO)[0]
        o = type(o)(**{**{f: getattr(o, f) for f in o.__slots__}, "banker_points": 9 - k})
        assert settle(Wager.BONUS_PLAYER, 100, o, table).result is L


def test_banker_commission_rounding_policies():
    o = outcome("banker_by_5_non_natural")
    cases = {RoundingPolicy.HOUSE: (2, 48), RoundingPolicy.PATRON: (1, 49), RoundingPolicy.HALF_EVEN: (1, 49)}
    for policy, (commission, payout) in cases.items():
        s = settle(Wager.BANKER, 25, o, unregulated(rounding=Rounding(policy)))
        assert (s.win, s.commission, s.payout) == (25, commission, payout), policy
        # a regulated table never charges more than 5 %: 1.25 cents is 1 cent under every policy
        s = settle(Wager.BANKER, 25, o, punto_banco(rounding=Rounding(policy)))
        assert (s.win, s.commission, s.payout) == (25, 1, 49), policy
    # 19 to 20 on whole multiples of 20 is exact under every policy: stake 100 -> profit 95.
    s = settle(Wager.BANKER, 100, o, punto_banco())
    assert s.payout - s.stake == 95 and s.commission == 5


def test_card_count_rounding_three_to_two():
    o = outcome("player_by_1_4_cards")
    for policy, win in {RoundingPolicy.HOUSE: 37, RoundingPolicy.PATRON: 38, RoundingPolicy.HALF_EVEN: 38}.items():
        assert settle(Wager.CARDS_4, 25, o, punto_banco_full(rounding=Rounding(policy))).win == win
    # a quarter-chip unit: 3 to 2 on $1.00 = 150 cents, rounded down to 150 (already whole quarters)
    assert settle(Wager.CARDS_4, 100, o, punto_banco_full(rounding=Rounding(unit_cents=25))).win == 150
    assert settle(Wager.CARDS_4, 125, o, punto_banco_full(rounding=Rounding(unit_cents=25))).win == 175


def test_commission_accrued_to_the_seat():
    s = settle(Wager.BANKER, 2000, outcome("banker_by_5_non_natural"), punto_banco(commission_mode=CommissionMode.ACCRUE))
    assert (s.payout, s.commission, s.commission_owed, s.commission_accrued) == (4000, 100, 100, True)
    assert s.patron_net == 1900 and s.house_net == -1900


def test_casino_night_commission_on_all_winning_bets():
    table = casino_night()
    p = settle(Wager.PLAYER, 2000, outcome("player_by_1_4_cards"), table)
    assert (p.win, p.commission, p.payout) == (2000, 100, 3900)
    t = settle(Wager.TIE, 2000, outcome("tie_3_5_cards"), table)
    assert (t.win, t.commission, t.payout) == (16000, 800, 17200)
    b = settle(Wager.BANKER, 2000, outcome("banker_by_5_non_natural"), table)
    assert (b.win, b.commission, b.payout) == (2000, 100, 3900)
    with pytest.raises(WagerNotOffered):
        settle(Wager.BONUS_PLAYER, 2000, outcome("tie_3_5_cards"), table)


@pytest.mark.parametrize("stake", [0, -5, 10.0, True, "100"])
def test_bad_stakes_are_refused(stake):
    with pytest.raises(InvalidAmount):
        settle(Wager.PLAYER, stake, outcome("tie_3_5_cards"), punto_banco())


def test_unknown_and_disabled_wagers():
    with pytest.raises(UnknownWager, match="known: banker"):
        Wager.parse("pairs")
    assert Wager.parse(" Dragon_7 ") is Wager.DRAGON_7
    with pytest.raises(WagerNotOffered, match="dragon_7 is not offered"):
        settle(Wager.DRAGON_7, 100, outcome("banker_dragon_7"), punto_banco())


tables = st.sampled_from(
    [
        punto_banco_full(rounding=Rounding(p, u), commission_mode=m)
        for p in RoundingPolicy
        for u in (1, 5, 25)
        for m in CommissionMode
    ]
    + [no_vig_dragon(panda=True), casino_night(),
       # commission accrued on every winner: not casino night (13:47-20.20(d)5), an unregulated test table
       unregulated(commission_mode=CommissionMode.ACCRUE, commission_scope=CommissionScope.ALL_WINNERS)]
)


@given(
    st.lists(st.sampled_from(list(Rank)), min_size=6, max_size=6),
    tables,
    st.integers(min_value=1, max_value=10_000_000),
    st.data(),
)
def test_settlement_never_creates_or_loses_a_cent(ranks, table, stake, data):
    o = resolve([Card(r) for r in ranks], table.ruleset)[0]
    wager = data.draw(st.sampled_from(sorted(table.wagers, key=lambda w: w.value)))
    s = settle(wager, stake, o, table)
    assert all(isinstance(x, int) for x in (s.payout, s.win, s.commission))
    assert s.patron_net + s.house_net == 0
    if s.result is L:
        assert (s.payout, s.win, s.commission) == (0, 0, 0)
    elif s.result is VOID:
        assert (s.payout, s.win, s.commission) == (s.stake, 0, 0)
    else:
        exact = stake * s.odds.ratio
        assert abs(s.win - exact) < table.rounding.unit_cents
        deducted = 0 if s.commission_accrued else s.commission
        assert s.payout + deducted == stake + s.win  # the commission is exactly what the patron did not get
        rate = table.commission_rate_for(wager)
        assert abs(s.commission - s.win * rate) < table.rounding.unit_cents or s.commission == s.win
        assert 0 <= s.commission <= s.win
