"""Cards, point counts, odds notation and rounding units."""

from fractions import Fraction

import pytest

from baccarat.cards import Card, Rank, Suit, parse_card, parse_cards, point_count, standard_deck
from baccarat.errors import InvalidAmount, InvalidCard, InvalidOdds
from baccarat.money import Odds, Rounding, RoundingPolicy, format_cents, require_cents


def test_values_13_69F_3_1_b():
    assert [r.value_points for r in Rank] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0]


def test_point_count_examples_13_47_20_20_e_4():
    assert point_count([7, 8]) == 5 and point_count([1, 2, 9]) == 2 and point_count([1, 2, 4]) == 7
    with pytest.raises(InvalidCard):
        point_count([10])


def test_parsing():
    assert [c.rank for c in parse_cards("A,T,5,K")] == [Rank.ACE, Rank.TEN, Rank.FIVE, Rank.KING]
    assert parse_card("10s") == Card(Rank.TEN, Suit.SPADES) and parse_card("qh") == Card(Rank.QUEEN, Suit.HEARTS)
    with pytest.raises(InvalidCard, match="card 2: unknown rank 'X'"):
        parse_cards("A,X")
    assert len(set(standard_deck())) == 52


def test_odds_notation():
    assert Odds.parse("19 to 20") == Odds(19, 20) and Odds.parse("3:2") == Odds(3, 2) and str(Odds(8, 1)) == "8 to 1"
    for bad in ("19 for 20", "x to 1", "1 to 0", "-1 to 1"):
        with pytest.raises(InvalidOdds):
            Odds.parse(bad)


def test_rounding_units_and_policies():
    r = Rounding(RoundingPolicy.HOUSE, 25)
    assert r.win(Fraction(149)) == 125 and r.commission(Fraction(1)) == 25
    assert Rounding(RoundingPolicy.HALF_EVEN).win(Fraction(5, 2)) == 2
    assert Rounding(RoundingPolicy.HALF_EVEN).win(Fraction(7, 2)) == 4
    with pytest.raises(InvalidAmount):
        Rounding(unit_cents=0)


def test_cents():
    assert require_cents(5) == 5 and format_cents(123456) == "$1,234.56" and format_cents(-5) == "-$0.05"
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(InvalidAmount):
            require_cents(bad)
