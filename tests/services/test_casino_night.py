"""Casino-night baccarat (N.J.A.C. 13:47-20.20) as a table of the floor, on the in-memory bus.

Opened from its named profiles (``casino_night``: Table 2 as the bank's rule; ``casino_night_literal``: (e)3 as
it reads), at most 14 players ((b)1), a 5 % commission on every winning bet collected after each round ((d)5:
deducted from the payout in the round's settlement, cents rounded by the table's named policy), even money and
a tie at 8 to 1 ((e)5). Rounds are dealt from a physical shoe whose cards are read (deal order P1 B1 P2 B2).
"""

from __future__ import annotations

import random
from datetime import datetime, timezone
from fractions import Fraction

import pytest

from baccarat.money import Rounding, RoundingPolicy
from baccarat.table import casino_night, profile
from contracts import topics as T
from contracts.commands import CloseBetting, LoadShoe, OpenRound, OpenTable, PlaceBet, ReadCard, SeatPlayer
from contracts.events import (
    BetRejected,
    BetSettled,
    CommandRejected,
    PlayerSeated,
    RoundResolved,
    RoundSettled,
)
from croupier.audit import audit
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import events, floor_bus, payloads

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
PLAYER_NATURAL_8 = ("5h", "2h", "3h", "Kh")  # Player 8 (natural), Banker 2: the player wins
BANKER_NATURAL_9 = ("2s", "9s", "3s", "Ks")  # Player 5, Banker 9 (natural): the bank wins
NATURAL_TIE = ("4h", "5h", "4s", "3s")  # Player 8, Banker 8: a tie
#: Player 2+2 = 4 draws a 5 (9); Banker K+3 = 3: Table 2 draws on 3 against a third card of 5 (the 6: 9, a tie),
#: the literal (e)3.ii draws on 0-2 only and stands on 3 (the player wins, 5 cards)
BANK_3_AGAINST_A_5 = ("2h", "Kh", "2s", "3s", "5h", "6h")


class Table:
    """One casino-night table ``CN`` with the physical shoe ``PS``; players seated as given."""

    def __init__(self, config, players=((1, "alice"), (2, "bob"), (3, "carol"))):  # type: ignore[no-untyped-def]
        self.bus, _ = floor_bus()
        self.n = 0
        self.rounds = 0
        self.send(T.DEALING_COMMANDS, OpenTable(config=table_spec(config)))
        self.send(T.SHOE_COMMANDS, LoadShoe(shoe_id="PS", physical=True))
        self.players = players

    def send(self, topic, payload, actor=None):  # type: ignore[no-untyped-def]
        self.n += 1
        cid = f"c{self.n}"
        self.bus.send(topic, command("CN", cid, AT, payload, actor=actor))
        return cid

    async def seat(self) -> None:
        await self.bus.pump()
        for seat, player in self.players:
            self.send(T.WAGERING_COMMANDS, SeatPlayer(seat=seat, player_id=player))
        await self.bus.pump()

    async def open(self) -> str:
        if not self.rounds:
            await self.seat()
        self.rounds += 1
        rid = f"R{self.rounds}"
        self.send(T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id="PS"))
        await self.bus.pump()
        return rid

    def bet(self, rid, seat, player, wager, cents):  # type: ignore[no-untyped-def]
        return self.send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=seat, player_id=player, wager=wager,
                                                   amount_cents=cents), actor=player)

    async def deal(self, rid, cards):  # type: ignore[no-untyped-def]
        self.send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid))
        await self.bus.pump()
        for i, card in enumerate(cards, 1):
            self.send(T.SHOE_COMMANDS, ReadCard(shoe_id="PS", round_id=rid, card_number=i, card=card))
        await self.bus.pump()

    def settled(self, rid):  # type: ignore[no-untyped-def]
        return {s.bet_id: (s.result, s.win, s.commission, s.payout)
                for s in payloads(self.bus, T.SETTLEMENT_EVENTS, BetSettled) if s.round_id == rid}

    def totals(self, rid):  # type: ignore[no-untyped-def]
        (s,) = [s for s in payloads(self.bus, T.SETTLEMENT_EVENTS, RoundSettled) if s.round_id == rid]
        return s.bets, s.stakes, s.payouts, s.commission, s.table_result


# ---- 13:47-20.20(d)5: 5 % on every winning bet, after each round -------------------------------------------
async def test_every_winning_bet_pays_five_percent_of_its_winnings_and_losers_and_pushes_pay_none():
    t = Table(profile("casino_night"))
    r1 = await t.open()
    a = t.bet(r1, 1, "alice", "player", 2_510)  # wins 2,510; 5 % = 125.5: never above 5 %, 125
    b = t.bet(r1, 2, "bob", "banker", 2_500)  # loses
    c = t.bet(r1, 3, "carol", "tie", 2_500)  # loses
    await t.deal(r1, PLAYER_NATURAL_8)
    assert t.settled(r1) == {a: ("win", 2_510, 125, 4_895), b: ("lose", 0, 0, 0), c: ("lose", 0, 0, 0)}
    assert t.totals(r1) == (3, 7_510, 4_895, 125, 7_510 - 4_895)

    r2 = await t.open()
    a = t.bet(r2, 1, "alice", "banker", 2_530)  # the bank's bet: even money, then 5 % (126.5 -> 126)
    b = t.bet(r2, 2, "bob", "player", 5_000)
    await t.deal(r2, BANKER_NATURAL_9)
    assert t.settled(r2) == {a: ("win", 2_530, 126, 4_934), b: ("lose", 0, 0, 0)}

    r3 = await t.open()
    a = t.bet(r3, 1, "alice", "tie", 2_510)  # 8 to 1: wins 20,080, 5 % = 1,004
    b = t.bet(r3, 2, "bob", "banker", 2_500)  # a tie pushes the bank and player bets: no win, no commission
    c = t.bet(r3, 3, "carol", "player", 3_000)
    await t.deal(r3, NATURAL_TIE)
    assert t.settled(r3) == {a: ("win", 20_080, 1_004, 21_586), b: ("void", 0, 0, 2_500),
                             c: ("void", 0, 0, 3_000)}
    assert t.totals(r3) == (3, 8_010, 27_086, 1_004, 8_010 - 27_086)
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]
    assert rep.rounds_checked == 3 and rep.bets_checked == 8


@pytest.mark.parametrize(("policy", "unit", "stake", "commission"), [
    # 5 % of 2,510 = 125.5 cents. Casino night's 5 % is a maximum (13:47-20.20(d)5): a policy that would
    # round above it rounds down instead (issue 28), so HOUSE and HALF_EVEN take 125 here
    (RoundingPolicy.HOUSE, 1, 2_510, 125),  # commission up would be 126 (5.02 %)
    (RoundingPolicy.PATRON, 1, 2_510, 125),  # commission down
    (RoundingPolicy.HALF_EVEN, 1, 2_510, 125),  # 125.5 -> the even 126, above 5 %: 125
    (RoundingPolicy.HALF_EVEN, 1, 2_530, 126),  # 126.5 -> the even 126
    (RoundingPolicy.HOUSE, 1, 2_540, 127),  # exact: 127
    # 5 % of 2,525 = 126.25 cents, to a quarter chip
    (RoundingPolicy.HOUSE, 25, 2_525, 125),  # up would be 150 (5.94 %)
    (RoundingPolicy.PATRON, 25, 2_525, 125),
    (RoundingPolicy.HALF_EVEN, 25, 2_525, 125),  # 5.05 quarters -> 5
])
async def test_the_commission_is_rounded_by_the_tables_named_policy(policy, unit, stake, commission):
    t = Table(casino_night(rounding=Rounding(policy, unit)))
    r1 = await t.open()
    a = t.bet(r1, 1, "alice", "player", stake)
    await t.deal(r1, PLAYER_NATURAL_8)
    assert t.settled(r1) == {a: ("win", stake, commission, 2 * stake - commission)}
    assert audit(events(t.bus)).clean


# ---- 13:47-20.20(e)3: both readings of the bank's rule, as named profiles ----------------------------------
@pytest.mark.parametrize(("name", "winner", "banker", "cards"), [
    ("casino_night", "tie", ["Kh", "3s", "6h"], 6),  # Table 2: the bank draws on 3 against a 5
    ("casino_night_literal", "player", ["Kh", "3s"], 5),  # the literal (e)3.ii: draws on 0-2 only
])
async def test_the_bank_rule_is_the_profiles_reading(name, winner, banker, cards):
    t = Table(profile(name))
    r1 = await t.open()
    a = t.bet(r1, 1, "alice", "player", 2_500)
    await t.deal(r1, BANK_3_AGAINST_A_5[:cards])
    (res,) = payloads(t.bus, T.DEALING_EVENTS, RoundResolved)
    assert (res.winner, res.player_cards, res.banker_cards, res.cards_required) == (
        winner, ["2h", "2s", "5h"], banker, cards)
    want = ("win", 2_500, 125, 4_875) if winner == "player" else ("void", 0, 0, 2_500)
    assert t.settled(r1) == {a: want}
    assert audit(events(t.bus)).clean


# ---- 13:47-20.20(b)1: at most 14 players -------------------------------------------------------------------
async def test_a_fifteenth_player_or_seat_is_refused():
    players = tuple((i, f"p{i}") for i in range(1, 15))  # 14 players at seats 1..14
    t = Table(profile("casino_night"), players=players)
    r1 = await t.open()
    assert len(payloads(t.bus, T.WAGERING_EVENTS, PlayerSeated)) == 14
    # a 15th player, at an empty seat number or behind a seated player, is one player too many
    t.send(T.WAGERING_COMMANDS, SeatPlayer(seat=15, player_id="p15"))
    t.send(T.WAGERING_COMMANDS, SeatPlayer(seat=3, player_id="p15"))
    await t.bus.pump()
    refused = [(r.command, r.reason) for r in payloads(t.bus, T.WAGERING_EVENTS, CommandRejected)]
    assert refused == [("seat_player", "invalid_seat"), ("seat_player", "over_max_players")]
    # a bet at a 15th seat is refused; the 14 players' bets stand
    t.bet(r1, 15, "p15", "banker", 2_500)
    for seat, player in players:
        t.bet(r1, seat, player, "banker", 2_500)
    await t.deal(r1, BANKER_NATURAL_9)
    assert [(r.seat, r.reason) for r in payloads(t.bus, T.WAGERING_EVENTS, BetRejected)] == [(15, "invalid_seat")]
    assert t.totals(r1) == (14, 14 * 2_500, 14 * 4_875, 14 * 125, 14 * 2_500 - 14 * 4_875)
    # a player leaving frees a place: the 15th player may then sit
    from contracts.commands import LeaveSeat
    t.send(T.WAGERING_COMMANDS, LeaveSeat(seat=3, player_id="p3"))
    t.send(T.WAGERING_COMMANDS, SeatPlayer(seat=3, player_id="p15"))
    await t.bus.pump()
    assert payloads(t.bus, T.WAGERING_EVENTS, PlayerSeated)[-1].player_id == "p15"


async def test_a_punto_banco_table_takes_players_betting_behind_beyond_its_seats():
    """The player cap is casino night's (13:47-20.20(b)1): punto banco's ``max_players`` counts seats."""
    from baccarat.table import punto_banco
    t = Table(punto_banco(max_players=2), players=((1, "a"), (1, "b"), (2, "c"), (2, "d")))
    await t.open()
    assert len(payloads(t.bus, T.WAGERING_EVENTS, PlayerSeated)) == 4


# ---- full shoes through the services --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["casino_night", "casino_night_literal"])
async def test_a_full_casino_night_shoe_with_fourteen_players_audits_clean(name):
    bus, _ = floor_bus(seed=47)
    io = MemoryFloorIO(bus)
    seats = [Seat(i, f"cn-{i}") for i in range(1, 15)]
    cfg = profile(name)
    run = await TableDealer(io, "CN", cfg, seats, random.Random(name), Clock()).run(shoes=1)
    assert run.rejections == ["shoe_complete"] and run.rounds > 60
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.rounds_checked == run.rounds and rep.bets_checked == run.bets
    settled = payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)
    wins = [s for s in settled if s.result == "win"]
    assert {s.wager for s in wins} == {"banker", "player", "tie"}
    odds = {"banker": 1, "player": 1, "tie": 8}
    for s in wins:  # an independent reckoning: even money or 8 to 1, less 5 % of the win rounded up
        assert s.win == s.stake * odds[s.wager]
        assert s.commission == -(-s.win * Fraction(1, 20) // 1) and s.payout == s.stake + s.win - s.commission
        assert not s.commission_accrued
    assert all(s.commission == 0 for s in settled if s.result != "win")
    assert run.commission == sum(s.commission for s in wins)
    # the literal reading shows up: some round where the bank stood on 3-5 after the player drew
    resolved = payloads(bus, T.DEALING_EVENTS, RoundResolved)
    stood = [r for r in resolved if len(r.player_cards) == 3 and len(r.banker_cards) == 2 and
             not r.player_natural and not r.banker_natural and 3 <= _two_card_total(r.banker_cards) <= 5]
    if name == "casino_night_literal":
        assert stood
    else:  # Table 2 has a Banker on 3-5 stand only against certain third cards
        assert all(_stands_by_table_2(_two_card_total(r.banker_cards), r.player_cards[2]) for r in stood)


def _two_card_total(cards: list[str]) -> int:
    from baccarat.cards import hand_points, parse_card
    return hand_points([parse_card(c) for c in cards])


def _stands_by_table_2(banker: int, third: str) -> bool:
    from baccarat.cards import parse_card
    v = parse_card(third).value
    return {3: v == 8, 4: v in (0, 1, 8, 9), 5: v in (0, 1, 2, 3, 8, 9)}[banker]
