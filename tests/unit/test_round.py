"""Rounds: the digest's deal vectors (rules.md §1.14), 13:69F-3.12(a), and properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baccarat.cards import Card, Hand, Rank, hand_points, parse_cards
from baccarat.drawing import CHEMIN_DE_FER, PUNTO_BANCO
from baccarat.errors import IllegalDecision, InsufficientCards
from baccarat.round import (
    NeedCard,
    Outcome,
    Winner,
    add_card,
    decide,
    misdeal_player_third,
    next_step,
    resolve,
    start,
)

# (cards in deal order, player points, banker points, winner, cards, dragon 7)
VECTORS = [
    ("4,K,3,6", "4,3", "K,6", 7, 6, Winner.PLAYER, 4, False),
    ("2,10,3,3,8", "2,3,8", "10,3", 3, 3, Winner.TIE, 5, False),
    ("A,3,4,3,6,4", "A,4,6", "3,3,4", 1, 0, Winner.PLAYER, 6, False),
    ("10,3,5,K,10,4", "10,5,10", "3,K,4", 5, 7, Winner.BANKER, 6, True),
    ("4,5,4,3", "4,4", "5,3", 8, 8, Winner.TIE, 4, False),
    ("9,8,K,J", "9,K", "8,J", 9, 8, Winner.PLAYER, 4, False),
    ("10,10,K,Q,9,10", "10,K,9", "10,Q,10", 9, 0, Winner.PLAYER, 6, False),
    ("3,2,3,3,9", "3,3", "2,3,9", 6, 4, Winner.PLAYER, 5, False),
]


@pytest.mark.parametrize("cards,player,banker,pp,bp,winner,n,dragon", VECTORS)
def test_digest_deal_vectors(cards, player, banker, pp, bp, winner, n, dragon):
    out, rest = resolve(parse_cards(cards + ",7,7"), PUNTO_BANCO)
    assert tuple(c.rank for c in out.player) == tuple(c.rank for c in parse_cards(player))
    assert tuple(c.rank for c in out.banker) == tuple(c.rank for c in parse_cards(banker))
    assert (out.player_points, out.banker_points, out.winner) == (pp, bp, winner)
    assert out.cards_required == n and out.dragon_7 is dragon
    assert [c.rank for c in rest] == [Rank.SEVEN, Rank.SEVEN]  # unused cards come back in order


def test_reasons_name_the_rule_cells():
    out, _ = resolve(parse_cards("A,3,4,3,6,4"), PUNTO_BANCO)
    third = out.reasons[4:]
    assert (third[0].hand, third[0].rule, third[0].row) == (Hand.PLAYER, "table_1", 5)
    assert (third[1].hand, third[1].rule, third[1].row, third[1].column) == (Hand.BANKER, "table_2", 6, "6")
    assert "13:69F-3.9(c) Table 2 row 6 column 6" in third[1].describe()
    out, _ = resolve(parse_cards("3,2,3,3,9"), PUNTO_BANCO)
    assert out.reasons[-1].column == "stood"


def test_too_few_cards_is_a_typed_error():
    with pytest.raises(InsufficientCards, match="needs card 5"):
        resolve(parse_cards("A,3,4,3"), PUNTO_BANCO)


def test_misdealt_player_card_becomes_banker_third_when_table_2_obliges():
    # Player 7 stands; Banker 4 must draw when the Player stood -> the misdealt card is the Banker's third.
    deal = start(PUNTO_BANCO)
    for c in parse_cards("3,2,4,2"):
        deal = add_card(deal, c)
    deal, disp = misdeal_player_third(deal, Card(Rank.FIVE))
    assert disp.became_banker_third
    out = next_step(deal)
    assert isinstance(out, Outcome)
    assert out.banker_points == 9 and out.winner is Winner.BANKER and out.cards_required == 5
    assert "13:69F-3.12(a)" in out.reasons[-1].source and out.reasons[-1].column == "stood"


def test_misdealt_player_card_is_discarded_when_banker_stands():
    # Player 6 stands; Banker 7 stands -> discarded, round is 4 required cards.
    deal = start(PUNTO_BANCO)
    for c in parse_cards("3,3,3,4"):
        deal = add_card(deal, c)
    deal, disp = misdeal_player_third(deal, Card(Rank.NINE))
    assert not disp.became_banker_third
    out = next_step(deal)
    assert isinstance(out, Outcome)
    assert out.cards_required == 4 and out.discarded == (Card(Rank.NINE),)
    assert (out.player_points, out.banker_points) == (6, 7)


def test_misdealt_card_on_a_natural_is_discarded():
    deal = start(PUNTO_BANCO)
    for c in parse_cards("4,2,4,2"):  # Player natural 8, Banker 4
        deal = add_card(deal, c)
    deal, disp = misdeal_player_third(deal, Card(Rank.ACE))
    assert not disp.became_banker_third and next_step(deal).cards_required == 4


def test_a_legitimate_player_third_is_not_a_misdeal():
    deal = start(PUNTO_BANCO)
    for c in parse_cards("A,2,2,2"):
        deal = add_card(deal, c)
    with pytest.raises(IllegalDecision):
        misdeal_player_third(deal, Card(Rank.ACE))


def test_chemin_de_fer_options_are_decided_by_the_controller():
    cards = parse_cards("2,K,3,4,9,5")  # Player 5 (option), Banker 4
    with pytest.raises(IllegalDecision, match="needs a decision"):
        resolve(cards, CHEMIN_DE_FER)
    stand, _ = resolve(cards, CHEMIN_DE_FER, player_option=False)
    assert stand.player_points == 5 and len(stand.banker) == 3  # Banker 4 draws when the Player stood
    draw, _ = resolve(cards, CHEMIN_DE_FER, player_option=True)
    assert draw.player_points == 4 and len(draw.banker) == 2  # Banker 4 stands on a 9
    # Banker 5 on a Player third card of 4 is an option cell.
    opt = parse_cards("K,K,3,5,4,2")
    with pytest.raises(IllegalDecision):
        resolve(opt, CHEMIN_DE_FER)
    out, _ = resolve(opt, CHEMIN_DE_FER, banker_option=True)
    assert out.banker_points == 7 and out.reasons[-1].decision is True
    deal = start(CHEMIN_DE_FER)
    with pytest.raises(IllegalDecision):
        decide(deal, Hand.PLAYER, True)


ranks = st.sampled_from(list(Rank))


@given(st.lists(ranks, min_size=6, max_size=12))
def test_properties_of_any_round(rs):
    cards = tuple(Card(r) for r in rs)
    out, rest = resolve(cards, PUNTO_BANCO)
    # card conservation: hands then the rest are exactly the input
    used = len(out.player) + len(out.banker)
    assert sorted(out.player + out.banker) == sorted(cards[:used]) and rest == cards[used:]
    assert 0 <= out.player_points <= 9 and 0 <= out.banker_points <= 9
    assert out.player_points == hand_points(out.player) and out.banker_points == hand_points(out.banker)
    assert 4 <= out.cards_required <= 6 and len(out.reasons) == used
    assert out.winner is (
        Winner.PLAYER if out.player_points > out.banker_points
        else Winner.BANKER if out.banker_points > out.player_points else Winner.TIE
    )
    if out.natural:
        assert used == 4
    # the stepwise machine agrees with resolve
    deal = start(PUNTO_BANCO)
    for c in cards:
        step = next_step(deal)
        if isinstance(step, Outcome):
            break
        assert isinstance(step, NeedCard)
        deal = add_card(deal, c)
    assert next_step(deal) == out
