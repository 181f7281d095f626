"""Chemin de fer: the Dominant Player of 13:69F-4.8(c) and the deal order of 4.8(d)."""

import pytest

from baccarat.cards import Hand
from baccarat.chemin import DEAL_ORDER, ChemWager, controller, dominant_player
from baccarat.errors import BaccaratError, IllegalDecision, InvalidAmount

SEATS = (1, 2, 3, 4, 5, 6, 7, 8, 9)  # counter-clockwise order


def test_banco_wager_takes_control_over_a_larger_wager():
    wagers = [ChemWager(2, 50_000), ChemWager(6, 10_000, banco=True)]
    assert dominant_player(wagers, banker_seat=1, seats_counter_clockwise=SEATS) == 6


def test_highest_wager_against_the_banker():
    wagers = [ChemWager(2, 5_000), ChemWager(5, 20_000), ChemWager(8, 10_000)]
    assert dominant_player(wagers, 1, SEATS) == 5


def test_ties_go_to_the_nearest_seat_counter_clockwise_from_the_banker():
    wagers = [ChemWager(2, 20_000), ChemWager(7, 20_000)]
    assert dominant_player(wagers, banker_seat=5, seats_counter_clockwise=SEATS) == 7  # 5->6->7 before 2
    assert dominant_player(wagers, banker_seat=1, seats_counter_clockwise=SEATS) == 2


def test_refusals():
    with pytest.raises(IllegalDecision):
        dominant_player([], 1, SEATS)
    with pytest.raises(BaccaratError, match="Banker cannot"):
        dominant_player([ChemWager(1, 100)], 1, SEATS)
    with pytest.raises(BaccaratError, match="not at this table"):
        dominant_player([ChemWager(12, 100)], 1, SEATS)
    with pytest.raises(InvalidAmount):
        ChemWager(2, 0)


def test_deal_order_and_control():
    assert DEAL_ORDER == (Hand.PLAYER, Hand.BANKER, Hand.PLAYER, Hand.BANKER)
    assert controller(Hand.BANKER, banker_seat=3, dominant_seat=6) == 3
    assert controller(Hand.PLAYER, banker_seat=3, dominant_seat=6) == 6


# ---- the service-run game's rules (issue 12) -------------------------------------------------------------
from fractions import Fraction

from baccarat.cards import parse_cards
from baccarat.chemin import (
    DEFAULT_OPTION_DRAWS,
    ChemRules,
    DecisionPolicy,
    OptionCell,
    TieBreak,
    bank_expectation,
    option_cell,
    resolve_chemin,
    settle_bank,
)
from baccarat.drawing import CHEMIN_DE_FER, PUNTO_BANCO, Action
from baccarat.errors import IllegalTableConfig, InsufficientCards
from baccarat.money import Rounding, RoundingPolicy
from baccarat.odds import Composition, exact_counts
from baccarat.round import Winner, resolve_recorded
from baccarat.table import TableConfig, chemin_de_fer
from baccarat.wagers import Wager, settle

#: one deal per option cell, in deal order P1 B1 P2 B2 then third cards (the cell is reached by these cards)
CELL_DEALS = {
    OptionCell.PLAYER_5: "3,2,2,K,9,5",       # Player 3+2 = 5: option; Banker 2+K = 2
    OptionCell.BANKER_3_9: "K,2,2,A,9,5",     # Player 2 draws a 9; Banker 2+A = 3 giving 9: option
    OptionCell.BANKER_4_1: "K,2,3,2,A,5",     # Player 3 draws an ace; Banker 4 giving 1: option
    OptionCell.BANKER_5_4: "K,2,4,3,4,5",     # Player 4 draws a 4; Banker 5 giving 4: option
}


def test_each_option_cell_is_decided_both_ways_by_its_controller():
    for cell, cards in CELL_DEALS.items():
        for draw in (True, False):
            o, _, taken = resolve_chemin(parse_cards(cards), {cell.hand: draw})
            assert [(d.cell, d.draw, d.by) for d in taken if d.cell is cell] == [(cell, draw, "participant")]
            hand = o.player if cell.hand.value == "player" else o.banker
            assert len(hand) == (3 if draw else 2), (cell, draw)
    # the Player's option at 5 both ways: stand 5 v Banker 2 drawing the 9 -> 1 (Player wins);
    # draw the 9 -> 4, then the Banker 2 draws the 5 -> 7 (Banker wins)
    o, _, _ = resolve_chemin(parse_cards(CELL_DEALS[OptionCell.PLAYER_5]), {OptionCell.PLAYER_5.hand: False})
    assert (o.player_points, o.banker_points, o.winner) == (5, 1, Winner.PLAYER)
    o, _, _ = resolve_chemin(parse_cards(CELL_DEALS[OptionCell.PLAYER_5]), {OptionCell.PLAYER_5.hand: True})
    assert (o.player_points, o.banker_points, o.winner) == (4, 7, Winner.BANKER)


def test_an_undecided_cell_takes_the_default_policy():
    for cell, cards in CELL_DEALS.items():
        _, _, taken = resolve_chemin(parse_cards(cards))
        assert [(d.cell, d.draw, d.by) for d in taken] == [(cell, cell in DEFAULT_OPTION_DRAWS, "default")]
    stand_all = DecisionPolicy(frozenset())
    _, _, taken = resolve_chemin(parse_cards(CELL_DEALS[OptionCell.BANKER_5_4]), policy=stand_all)
    assert [(d.cell, d.draw) for d in taken] == [(OptionCell.BANKER_5_4, False)]


def test_option_cells_and_the_default_is_the_punto_banco_cell():
    assert option_cell(Hand.BANKER, 4, "1") is OptionCell.BANKER_4_1
    with pytest.raises(IllegalDecision, match="not an option cell"):
        option_cell(Hand.BANKER, 6, "6")
    for cell in OptionCell:
        pb = PUNTO_BANCO.player_action(cell.row) if cell.column is None else PUNTO_BANCO.banker_action(cell.row, cell.column)
        ch = CHEMIN_DE_FER.player_action(cell.row) if cell.column is None else CHEMIN_DE_FER.banker_action(cell.row, cell.column)
        assert ch is Action.OPTION
        assert (pb is Action.DRAW) == (cell in DEFAULT_OPTION_DRAWS)


def test_exact_odds_under_a_stated_policy():
    # the default policy is the punto banco tableau: the published 8-deck counts (digest §1.14)
    c = exact_counts(Composition.full(8), DecisionPolicy().ruleset())
    assert (c.banker, c.player, c.tie) == (2_292_252_566_437_888, 2_230_518_282_592_256, 475_627_426_473_216)
    # standing on the Player's 5 changes the round; every other cell as the default
    s = exact_counts(Composition.full(8), DecisionPolicy.parse(["player_5=stand"]).ruleset())
    assert s.total == c.total and (s.banker, s.player) != (c.banker, c.player)
    assert s.banker + s.player + s.tie == s.total
    assert DecisionPolicy.parse(["player_5=stand"]).ruleset().player_action(5) is Action.STAND
    # brute force on a tiny shoe: every ordered 6-card sequence dealt by resolve under the policy
    from itertools import permutations

    from baccarat.cards import Card, Rank, Suit
    ranks = [Rank.FIVE, Rank.KING, Rank.TWO, Rank.NINE, Rank.FOUR, Rank.ACE, Rank.THREE]
    cards = [Card(r, Suit.SPADES) for r in ranks]
    pol = DecisionPolicy.parse(["player_5=stand", "banker_4_1=draw"])
    wins = {w: 0 for w in Winner}
    for seq in permutations(cards, 6):
        o, _, _ = resolve_chemin(seq, policy=pol)
        wins[o.winner] += 1
    comp = Composition.of([sum(1 for c in cards if c.value == v) for v in range(10)])
    e = exact_counts(comp, pol.ruleset())
    assert (e.banker, e.player, e.tie) == (wins[Winner.BANKER], wins[Winner.PLAYER], wins[Winner.TIE])
    assert bank_expectation(e.banker, e.player, e.total, Fraction(1, 20)) == \
        (Fraction(e.banker) * Fraction(19, 20) - e.player) / e.total


def test_policy_parse_refusals():
    with pytest.raises(IllegalDecision, match="unknown option cell 'banker_6_6'"):
        DecisionPolicy.parse(["banker_6_6=draw"])
    with pytest.raises(IllegalDecision, match="say draw or stand"):
        DecisionPolicy.parse(["player_5=maybe"])


def test_recorded_rounds_re_derive_with_their_decisions():
    cards = parse_cards(CELL_DEALS[OptionCell.BANKER_3_9])
    with pytest.raises(IllegalDecision, match="banker option at row 3 was not decided"):
        resolve_recorded(cards, CHEMIN_DE_FER)
    o, rest = resolve_recorded(cards, CHEMIN_DE_FER, banker_option=False)
    assert (o.banker_points, [str(c) for c in rest]) == (3, ["5"])
    o, rest = resolve_recorded(cards, CHEMIN_DE_FER, banker_option=True)
    assert (o.banker_points, rest) == (8, ())
    with pytest.raises(InsufficientCards):
        resolve_chemin(parse_cards("K,2,2"))


def test_dominant_player_ties_broken_as_configured():
    wagers = [ChemWager(7, 20_000), ChemWager(2, 20_000), ChemWager(4, 5_000)]
    assert dominant_player(wagers, 5, SEATS) == 7  # nearest counter-clockwise from seat 5 (4.8(c)3)
    assert dominant_player(wagers, 5, SEATS, TieBreak.FIRST_WAGER) == 7
    assert dominant_player(wagers, 1, SEATS) == 2
    assert dominant_player(wagers, 1, SEATS, TieBreak.FIRST_WAGER) == 7  # the first wager made
    # the seats' counter-clockwise order is the table's: numbered the other way round, seat 2 is nearer 5
    assert dominant_player(wagers, 5, tuple(reversed(SEATS))) == 2
    # a participant's wagers are summed: two wagers of seat 4 make it the highest
    assert dominant_player(wagers + [ChemWager(4, 16_000)], 5, SEATS) == 4


def test_chem_rules_and_the_table():
    r = ChemRules()
    assert (r.option_seconds, r.tie_break, r.bank_passes_on_loss) == (30, TieBreak.NEAREST_COUNTER_CLOCKWISE, True)
    assert r.seat_order(3) == (1, 2, 3)
    assert r.next_banker_seat(2, 7, occupied=[1, 2, 5]) == 5
    assert r.next_banker_seat(5, 7, occupied=[1, 2, 5]) == 1
    assert r.next_banker_seat(5, 7, occupied=[5]) is None
    with pytest.raises(IllegalTableConfig, match="option_seconds"):
        ChemRules(option_seconds=0)
    with pytest.raises(IllegalTableConfig, match="distinct positive seats"):
        ChemRules(seats_counter_clockwise=(1, 1))
    t = chemin_de_fer()
    assert t.ruleset is CHEMIN_DE_FER and t.commission_rate == Fraction(1, 20)
    assert t.commission_rate_for(Wager.PLAYER) == 0  # the house's commission is on the bank's winnings
    with pytest.raises(IllegalTableConfig, match="4.8.c.: equally high wagers"):
        chemin_de_fer(chemin=ChemRules(tie_break=TieBreak.FIRST_WAGER))
    assert chemin_de_fer(regulated=False, chemin=ChemRules(tie_break=TieBreak.FIRST_WAGER)).chemin.tie_break \
        is TieBreak.FIRST_WAGER
    with pytest.raises(IllegalTableConfig, match="commission on the bank's winnings"):
        chemin_de_fer(commission_rate=Fraction(0))
    with pytest.raises(IllegalTableConfig, match="player .required."):
        TableConfig(variant=chemin_de_fer().variant, wagers=frozenset({Wager.BANCO}))
    with pytest.raises(IllegalTableConfig, match=r"the Banker deals the cards \(13:69F-4.8\(d\)\)"):
        chemin_de_fer(curator=True)
    with pytest.raises(IllegalTableConfig, match="banco_suivi follows a banco"):
        chemin_de_fer(wagers=frozenset({Wager.PLAYER, Wager.BANCO_SUIVI}))


def test_bank_settlement_conserves_money_to_the_cent():
    house = Rounding()  # commission rounded up to the cent (the house's rounding)
    b = settle_bank(100_000, 33_330, Winner.BANKER, Fraction(1, 20), house)
    assert (b.won_cents, b.commission_cents, b.bank_after_cents) == (33_330, 1_667, 131_663)  # 1666.5 -> 1667
    b = settle_bank(100_000, 33_330, Winner.BANKER, Fraction(1, 20), Rounding(RoundingPolicy.HALF_EVEN))
    assert b.commission_cents == 1_666
    b = settle_bank(100_000, 33_330, Winner.PLAYER, Fraction(1, 20), house)
    assert (b.won_cents, b.commission_cents, b.bank_after_cents) == (-33_330, 0, 66_670)
    assert settle_bank(100_000, 33_330, Winner.TIE, Fraction(1, 20), house).bank_after_cents == 100_000
    with pytest.raises(BaccaratError, match="33330 cents of wagers against a bank of 20000"):
        settle_bank(20_000, 33_330, Winner.BANKER, Fraction(1, 20), house)
    # participants + Banker + house sum to zero, for every result
    from baccarat.round import resolve
    table = chemin_de_fer()
    for cards in ("4,K,3,6", "3,2,3,3,9", "2,10,3,3,8"):  # Player wins, Player wins, tie
        for cards_, player_opt in ((cards, None),):
            o, _ = resolve(parse_cards(cards_), PUNTO_BANCO)
            stakes = [(Wager.PLAYER, 2_500), (Wager.PLAYER, 7_525)]
            bettors = sum(settle(w, s, o, table).payout - s for w, s in stakes)
            bank = settle_bank(50_000, 10_025, o.winner, table.commission_rate, table.rounding)
            assert bettors + (bank.won_cents - bank.commission_cents) + bank.commission_cents == 0


from hypothesis import given, settings
from hypothesis import strategies as st
from tests.budget import examples


@settings(max_examples=examples(200), deadline=None)
@given(
    stakes=st.lists(st.integers(1, 50_000), min_size=1, max_size=8),
    spare=st.integers(0, 100_000),
    winner=st.sampled_from(list(Winner)),
    rate=st.sampled_from([Fraction(1, 20), Fraction(1, 40), Fraction(3, 100)]),
    policy=st.sampled_from(list(RoundingPolicy)),
    unit=st.sampled_from([1, 5, 25]),
)
def test_money_is_conserved_between_participants_bank_and_house(stakes, spare, winner, rate, policy, unit):
    rounding = Rounding(policy, unit)
    bank = sum(stakes) + spare
    b = settle_bank(bank, sum(stakes), winner, rate, rounding)
    from baccarat.round import Outcome
    o = Outcome((), (), 0, 0, winner, False, False, 4, False, False, ())
    table = chemin_de_fer(regulated=False, commission_rate=rate)
    bettors = sum(settle(Wager.PLAYER, s, o, table).payout - s for s in stakes)
    assert bettors + (b.won_cents - b.commission_cents) + b.commission_cents == 0
    assert b.bank_after_cents == bank + b.won_cents - b.commission_cents >= 0
    assert 0 <= b.commission_cents <= max(b.won_cents, 0)
    if b.won_cents > 0:  # within one rounding unit of the exact rate, on the unit grid
        assert abs(b.commission_cents - b.won_cents * rate) < unit and b.commission_cents % unit == 0 \
            or b.commission_cents == b.won_cents


def test_the_dominant_player_is_a_participant_not_a_seat():
    from baccarat.chemin import dominant_participant

    # two participants at seat 2 (one betting behind) wager 25,000 between them; ben alone at 3 wagers 20,000
    wagers = [ChemWager(2, 10_000, player_id="ann"), ChemWager(3, 20_000, player_id="ben"),
              ChemWager(2, 15_000, player_id="abe"), ChemWager(2, 6_000, player_id="ann")]
    assert dominant_participant(wagers, 1, SEATS) == (3, "ben")
    # ann's two wagers are summed: 16,000 + 6,000 = 22,000 > 20,000
    assert dominant_participant(wagers + [ChemWager(2, 6_000, player_id="ann")], 1, SEATS) == (2, "ann")
    # equally high at one seat: equally near the Banker, the first wager made decides
    tie = [ChemWager(4, 5_000, player_id="cat"), ChemWager(4, 5_000, player_id="dan")]
    assert dominant_participant(tie, 1, SEATS) == (4, "cat")
    assert dominant_player(tie, 1, SEATS) == 4


def test_the_seat_order_names_the_tables_seats():
    assert chemin_de_fer(max_players=7, chemin=ChemRules(seats_counter_clockwise=(1, 7, 6, 5, 4, 3, 2))).chemin \
        .seat_order(7) == (1, 7, 6, 5, 4, 3, 2)
    with pytest.raises(IllegalTableConfig, match=r"seats_counter_clockwise names seats \[9\] beyond the table's 7"):
        chemin_de_fer(max_players=7, chemin=ChemRules(seats_counter_clockwise=(1, 2, 9)))
