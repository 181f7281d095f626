"""Money edge cases (issue 9, finding 7), on the in-memory bus with a physical shoe whose cards are read.

Rounds (deal order P1 B1 P2 B2): 2s 9s 3s Ks is Player 5, Banker 9 (a natural: the Banker wins, 4 cards);
5h 2h 3h Kh is Player 8 (a natural), Banker 2: the Player wins.
"""

from __future__ import annotations

from datetime import datetime, timezone

from baccarat.money import CommissionMode, Rounding, RoundingPolicy
from baccarat.table import Limits, punto_banco, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.commands import (
    CloseBetting,
    CollectCommission,
    LoadShoe,
    OpenRound,
    OpenTable,
    PlaceBet,
    ReadCard,
    SeatPlayer,
    WithdrawBet,
)
from contracts.events import (
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BetWithdrawn,
    CommandRejected,
    CommissionAccrued,
    CommissionCollected,
)
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import floor_bus, payloads

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
BANKER_NATURAL_9 = ("2s", "9s", "3s", "Ks")  # Player 5, Banker 9
PLAYER_NATURAL_8 = ("5h", "2h", "3h", "Kh")  # Player 8, Banker 2
PLAYERS = ((1, "alice"), (1, "bob"), (2, "carol"), (2, "bob"))


class Table:
    """One table with a physical shoe ``PS`` on the in-memory floor; commands get ids c1, c2, ..."""

    def __init__(self, config):  # type: ignore[no-untyped-def]
        self.bus, _ = floor_bus()
        self.n = 0
        self.rounds = 0
        self.send(T.DEALING_COMMANDS, OpenTable(config=table_spec(config)))
        self.send(T.SHOE_COMMANDS, LoadShoe(shoe_id="PS", physical=True))

    def send(self, topic, payload, cid=None, actor=None):  # type: ignore[no-untyped-def]
        self.n += 1
        cid = cid or f"c{self.n}"
        self.bus.send(topic, command("M1", cid, AT, payload, actor=actor))
        return cid

    def withdraw(self, rid, bet_id, player, cid=None):  # type: ignore[no-untyped-def]
        """``player`` withdraws ``bet_id`` from the betting terminal."""
        return self.send(T.WAGERING_BETS, WithdrawBet(round_id=rid, bet_id=bet_id), cid, actor=player)

    async def open(self) -> str:
        await self.bus.pump()
        if not self.rounds:  # the table is open: the player registry takes these, at these seats
            for seat, player in PLAYERS:
                self.send(T.WAGERING_COMMANDS, SeatPlayer(seat=seat, player_id=player))
        self.rounds += 1
        rid = f"R{self.rounds}"
        self.send(T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id="PS"))
        await self.bus.pump()
        return rid

    def bet(self, rid, seat, player, wager, cents, cid=None):  # type: ignore[no-untyped-def]
        return self.send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=seat, player_id=player, wager=wager,
                                                        amount_cents=cents), cid)

    async def deal(self, rid, cards):  # type: ignore[no-untyped-def]
        self.send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid))
        await self.bus.pump()
        for i, card in enumerate(cards, 1):
            self.send(T.SHOE_COMMANDS, ReadCard(shoe_id="PS", round_id=rid, card_number=i, card=card))
        await self.bus.pump()

    def of(self, stream, kind):  # type: ignore[no-untyped-def]
        return payloads(self.bus, stream, kind)


# ---- accrued commission is owed per player, not per seat ---------------------------------------------------
async def test_a_second_player_at_a_seat_does_not_pay_the_first_ones_commission():
    t = Table(punto_banco(commission_mode=CommissionMode.ACCRUE))
    r1 = await t.open()
    t.bet(r1, 1, "alice", "banker", 4_000)  # wins 4,000, owes 200 (5 %)
    t.bet(r1, 1, "bob", "banker", 2_500)  # wins 2,500, owes 125
    t.bet(r1, 2, "carol", "banker", 3_000)  # wins 3,000, owes 150
    await t.deal(r1, BANKER_NATURAL_9)
    acc = t.of(T.SETTLEMENT_EVENTS, CommissionAccrued)
    assert [(a.seat, a.player_id, a.amount_cents, a.owed_cents) for a in acc] == [
        (1, "alice", 200, 200), (1, "bob", 125, 125), (2, "carol", 150, 150)]
    # bob leaves: he pays his 125 cents, not alice's
    t.send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=1, player_id="bob"))
    await t.bus.pump()
    assert [(c.seat, c.player_id, c.amount_cents) for c in t.of(T.SETTLEMENT_EVENTS, CommissionCollected)] == [
        (1, "bob", 125)]
    # a second round: alice accrues on top of her 200; bob starts again from 0
    r2 = await t.open()
    t.bet(r2, 1, "alice", "banker", 2_500)
    t.bet(r2, 1, "bob", "banker", 2_500)
    await t.deal(r2, BANKER_NATURAL_9)
    acc = [a for a in t.of(T.SETTLEMENT_EVENTS, CommissionAccrued) if a.round_id == r2]
    assert [(a.player_id, a.amount_cents, a.owed_cents) for a in acc] == [("alice", 125, 325), ("bob", 125, 125)]
    # bob has paid already and owes nothing more than his own; a player who owes nothing is refused
    t.send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=1, player_id="dave"), "nobody")
    # no player named: every player at the seat settles his own box
    t.send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=1))
    await t.bus.pump()
    assert [(c.seat, c.player_id, c.amount_cents) for c in t.of(T.SETTLEMENT_EVENTS, CommissionCollected)] == [
        (1, "bob", 125), (1, "alice", 325), (1, "bob", 125)]
    rej = [r for r in t.of(T.SETTLEMENT_EVENTS, CommandRejected) if r.command_id == "nobody"]
    assert [(r.reason, r.detail) for r in rej] == [("nothing_owed", "player dave at seat 1 owes no commission")]


# ---- the base bet of a bonus wager cannot be withdrawn from under it (13:69F-3.2(b), (a)5) ---------------
async def test_withdrawing_the_base_bet_a_bonus_depends_on_is_refused():
    t = Table(punto_banco_full(bonus_requires_base_bet=True))
    r1 = await t.open()
    base = t.bet(r1, 1, "alice", "player", 2_500)
    bonus = t.bet(r1, 1, "alice", "bonus_player", 500)
    other = t.bet(r1, 2, "bob", "banker", 2_500)
    await t.bus.pump()
    t.withdraw(r1, base, "alice", "wd-base")
    t.withdraw(r1, other, "bob", "wd-other")  # no bonus depends on it
    await t.bus.pump()
    rej = {r.command_id: r.reason for r in t.of(T.WAGERING_EVENTS, BetRejected)}
    assert rej == {"wd-base": "bonus_depends_on_bet"}
    assert [w.bet_id for w in t.of(T.WAGERING_EVENTS, BetWithdrawn)] == [other]
    # the bonus first, then the base: both come back
    t.withdraw(r1, bonus, "alice", "wd-bonus")
    t.withdraw(r1, base, "alice", "wd-base-2")
    await t.deal(r1, PLAYER_NATURAL_8)
    assert [w.bet_id for w in t.of(T.WAGERING_EVENTS, BetWithdrawn)] == [other, bonus, base]
    assert t.of(T.WAGERING_EVENTS, BettingClosed)[0].bets == []


async def test_a_second_base_bet_on_the_seat_keeps_the_bonus_covered():
    t = Table(punto_banco_full(bonus_requires_base_bet=True))
    r1 = await t.open()
    first = t.bet(r1, 1, "alice", "player", 2_500)
    t.bet(r1, 1, "alice", "banker", 2_500)
    t.bet(r1, 1, "alice", "bonus_player", 500)
    t.withdraw(r1, first, "alice")
    await t.deal(r1, PLAYER_NATURAL_8)
    assert [w.bet_id for w in t.of(T.WAGERING_EVENTS, BetWithdrawn)] == [first]
    assert sorted(b.wager for b in t.of(T.WAGERING_EVENTS, BettingClosed)[0].bets) == ["banker", "bonus_player"]


async def test_without_the_requirement_the_base_bet_may_go():
    t = Table(punto_banco_full())
    r1 = await t.open()
    base = t.bet(r1, 1, "alice", "player", 2_500)
    t.bet(r1, 1, "alice", "bonus_player", 500)
    t.withdraw(r1, base, "alice")
    await t.bus.pump()
    assert [w.bet_id for w in t.of(T.WAGERING_EVENTS, BetWithdrawn)] == [base]


# ---- stakes are a multiple of the rounding unit ----------------------------------------------------------
async def test_a_stake_that_is_not_a_multiple_of_the_rounding_unit_is_refused():
    quarter = Rounding(RoundingPolicy.HOUSE, 25)
    t = Table(punto_banco(rounding=quarter, limits={Wager.PLAYER: Limits(25, 100_000),
                                                    Wager.BANKER: Limits(25, 100_000)}))
    r1 = await t.open()
    t.bet(r1, 1, "alice", "player", 30, "p30")  # 30 ¢ at a 25 ¢ unit
    t.bet(r1, 1, "alice", "player", 50, "p50")
    t.bet(r1, 2, "bob", "banker", 2_510, "b2510")
    t.bet(r1, 2, "bob", "banker", 2_500, "b2500")
    await t.deal(r1, PLAYER_NATURAL_8)
    rej = {r.command_id: (r.reason, r.amount_cents) for r in t.of(T.WAGERING_EVENTS, BetRejected)}
    assert rej == {"p30": ("stake_not_multiple_of_unit", 30), "b2510": ("stake_not_multiple_of_unit", 2_510)}
    assert [p.bet_id for p in t.of(T.WAGERING_EVENTS, BetPlaced)] == ["p50", "b2500"]
    settled = {s.bet_id: (s.result, s.win, s.payout) for s in t.of(T.SETTLEMENT_EVENTS, BetSettled)}
    assert settled == {"p50": ("win", 50, 100), "b2500": ("lose", 0, 0)}
