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
