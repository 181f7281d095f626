"""Ratings and currency reporting of the hand-worked shift (tests/services/test_cage_statement.py): alice buys
in $500 cash, bets Player $200 (loses) then $300 (wins) and leaves $100 ahead; bob buys in by a $300 marker,
bets Banker $100 (wins $95) and $50 (loses)."""

from __future__ import annotations

from fractions import Fraction

from contracts import topics as T
from contracts.cage import RedeemChips
from services.cage.patrons import currency, ratings, round_half_up
from tests.services.helpers import events
from tests.services.test_cage_statement import Floor, play_the_shift

#: full 8-deck shoe, punto banco (Wizard of Odds, digest §1.14): Banker, Player wins out of Permut(416, 6)
BANKER, PLAYER, TOTAL = 2_292_252_566_437_888, 2_230_518_282_592_256, 4_998_398_275_503_360
ALL = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)


async def played() -> Floor:
    f = Floor()
    await play_the_shift(f)
    f.cage("CAGE", RedeemChips(redemption_id="X1", player_id="alice", amount_cents=60_000), "cashier-1")
    await f.bus.pump()
    return f


async def test_ratings_of_the_shift():
    f = await played()
    alice, bob = ratings(events(f.bus, *ALL))
    assert (alice.player_id, alice.seat, alice.buy_in_cents, alice.rounds, alice.staked_cents) == (
        "alice", 1, 50_000, 2, 50_000)
    assert alice.average_bet_cents == 25_000 and alice.result_cents == 10_000 and alice.left_at is not None
    assert (bob.buy_in_cents, bob.rounds, bob.average_bet_cents, bob.result_cents) == (30_000, 2, 7_500, 4_500)
    assert bob.left_at is None and bob.time_played_ms == 0
    # round 1 from a full 8-deck shoe: the Player's exact edge is the published one
    player_edge_full = Fraction(BANKER - PLAYER, TOTAL)  # a Player bet loses when the Banker wins, voids on a tie
    assert alice.exact_bets == 2 and bob.exact_bets == 2
    round_1 = 20_000 * player_edge_full
    assert round_half_up(round_1) == 247
    assert alice.theo_exact > round_1 > 0  # and round 2's $300 adds its own exact edge
    # the fixed edge: average bet x rounds x 1.2 %
    assert alice.theo_fixed_cents() == 600 and bob.theo_fixed_cents() == 180
    assert 0 < bob.theo_exact_cents < 300  # Banker ~1.06 % of $150


async def test_currency_reporting_lists_mtl_entries_and_ctr_flags():
    f = await played()
    log = events(f.bus, *ALL)
    days = currency(log)
    (alice_day,) = [d for d in days if d.gaming_day == "2026-01-01"]
    assert (alice_day.cash_in_cents, alice_day.cash_out_cents) == (50_000, 60_000)
    assert alice_day.mtl == () and not alice_day.ctr  # the default thresholds: $3,000 and $10,000
    (low,) = [d for d in currency(log, mtl_threshold_cents=50_000, ctr_threshold_cents=55_000)
              if d.player_id == "alice"]
    assert low.mtl == (("cash_out", "X1", 60_000),) and low.ctr  # the $500 buy-in is not above $500
    assert [d.player_id for d in days] == ["alice"]  # bob's marker is not cash
