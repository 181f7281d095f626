"""The cage's statements against hand-worked shifts, through the services on the in-memory bus (a physical
shoe whose cards are read, so every round is known in advance).

The shift of :func:`test_a_shift_by_hand` (cents; 5 % commission deducted on a winning Banker bet):

=====================================  ========  ======  =======  ==================
step                                   tray      drop    game     patrons' chips
=====================================  ========  ======  =======  ==================
opener: 20 x $25 + 100 x $5            100,000
alice buys in $500 cash                 50,000   50,000           alice 50,000
bob buys in by a $300 marker            20,000   80,000           bob 30,000
fill $500 (requested, issued, recvd)    70,000
round 1 (Banker natural 9): alice
  Player 20,000 loses, bob Banker
  10,000 wins 9,500 (payout 19,500)     80,500            10,500  alice 30,000, bob 39,500
round 2 (Player natural 8): alice
  Player 30,000 wins (payout 60,000),
  bob Banker 5,000 loses                55,500           -14,500  alice 60,000, bob 34,500
alice leaves $100 ahead
credit $200 to the cage                 35,500
closer                                  35,500
=====================================  ========  ======  =======  ==================

win = 35,500 − 100,000 + 20,000 − 50,000 + 80,000 = −14,500 = the game result; variance 0;
hold = −14,500 / 80,000 = −18.125 % (shown −18.13).
"""

from __future__ import annotations

from datetime import datetime, timezone
from fractions import Fraction

from baccarat.table import punto_banco
from contracts import topics as T
from contracts.cage import (
    BuyIn,
    CountDropBox,
    HandOverCredit,
    IssueFill,
    ReceiveCredit,
    ReceiveFill,
    RecordCloser,
    RecordOpener,
    RemoveDropBox,
    RequestCredit,
    RequestFill,
    SetCreditLine,
)
from contracts.commands import CloseBetting, LeaveSeat, LoadShoe, OpenRound, OpenTable, PlaceBet, ReadCard, SeatPlayer
from services.cage.core import CageCore
from services.cage.statement import alerts, csv_text, rollup, statements
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.cagedesk import chips
from tests.services.helpers import events, floor_bus
from tests.services.test_state_codec import round_trip_every_fold

AT = datetime(2026, 1, 1, 20, tzinfo=timezone.utc)
BANKER_NATURAL_9 = ("2s", "9s", "3s", "Ks")
PLAYER_NATURAL_8 = ("5h", "2h", "3h", "Kh")


class Floor:
    """Tables with physical shoes, the four game services and the cage on the in-memory bus."""

    def __init__(self) -> None:
        self.bus, _ = floor_bus()
        self.cage_host = self.bus.add(CageCore())
        self.n = 0
        self.rounds = 0

    def send(self, table: str, topic: str, payload, actor=None):  # type: ignore[no-untyped-def]
        self.n += 1
        self.bus.send(topic, command(table, f"c{self.n}", AT, payload, actor=actor))

    def cage(self, table: str, payload, actor: str) -> None:  # type: ignore[no-untyped-def]
        self.send(table, T.CAGE_COMMANDS, payload, actor=actor)

    async def open_table(self, table: str, shift: str, opener: int, pit: str, players) -> None:  # type: ignore[no-untyped-def]
        self.send(table, T.DEALING_COMMANDS, OpenTable(config=table_spec(punto_banco())))
        self.send(table, T.SHOE_COMMANDS, LoadShoe(shoe_id=f"{table}-S", physical=True))
        for seat, player in players:
            self.send(table, T.WAGERING_COMMANDS, SeatPlayer(seat=seat, player_id=player))
        self.cage(table, RecordOpener(shift_id=shift, gaming_day="2026-01-01", pit=pit,
                                      chips=chips((2_500, opener // 5_000), (500, opener // 1_000)),
                                      total_cents=opener, supervisor_id="sup-1"), "dealer-1")
        await self.bus.pump()

    async def round(self, table: str, bets, cards) -> None:  # type: ignore[no-untyped-def]
        self.rounds += 1
        rid = f"R{self.rounds}"
        self.send(table, T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id=f"{table}-S"))
        await self.bus.pump()
        for seat, player, wager, cents in bets:
            self.send(table, T.WAGERING_BETS, PlaceBet(round_id=rid, seat=seat, player_id=player, wager=wager,
                                                       amount_cents=cents))
        self.send(table, T.WAGERING_COMMANDS, CloseBetting(round_id=rid))
        await self.bus.pump()
        for i, card in enumerate(cards, 1):
            self.send(table, T.SHOE_COMMANDS, ReadCard(shoe_id=f"{table}-S", round_id=rid, card_number=i, card=card))
        await self.bus.pump()

    async def fill(self, table: str, fid: str, cents: int) -> None:
        self.cage(table, RequestFill(fill_id=fid, chips=chips((2_500, cents // 2_500)), total_cents=cents), "sup-1")
        self.cage(table, IssueFill(fill_id=fid, runner_id="sec-1"), "cashier-1")
        self.cage(table, ReceiveFill(fill_id=fid, supervisor_id="sup-1"), "dealer-1")
        await self.bus.pump()

    async def credit(self, table: str, cid: str, cents: int) -> None:
        self.cage(table, RequestCredit(credit_id=cid, chips=chips((2_500, cents // 2_500)), total_cents=cents),
                  "sup-1")
        self.cage(table, HandOverCredit(credit_id=cid, runner_id="sec-1"), "dealer-1")
        self.cage(table, ReceiveCredit(credit_id=cid), "cashier-1")
        await self.bus.pump()

    async def close(self, table: str, shift: str, closer: int, cash: int, markers: int, n_markers: int) -> None:
        self.cage(table, RecordCloser(shift_id=shift, chips=chips((500, closer // 500)), total_cents=closer,
                                      supervisor_id="sup-1"), "dealer-1")
        self.cage(table, RemoveDropBox(shift_id=shift), "ct-1")
        self.cage(table, CountDropBox(shift_id=shift, cash=chips((10_000, cash // 10_000)), cash_cents=cash,
                                      markers=n_markers, markers_cents=markers, counters=["ct-2", "ct-3"]), "ct-1")
        await self.bus.pump()

    def statements(self):  # type: ignore[no-untyped-def]
        return statements(events(self.bus, T.CAGE_EVENTS))


async def play_the_shift(f: Floor, table: str = "T1", closer: int = 35_500, cash: int = 50_000) -> None:
    await f.open_table(table, "S1", 100_000, "P1", ((1, "alice"), (2, "bob")))
    f.cage(table, BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=50_000,
                        cash=chips((10_000, 5))), "dealer-1")
    f.cage("CAGE", SetCreditLine(player_id="bob", line_cents=100_000), "cashier-1")
    f.cage(table, BuyIn(buy_in_id="M1", seat=2, player_id="bob", method="marker", amount_cents=30_000), "dealer-1")
    await f.fill(table, "F1", 50_000)
    await f.round(table, ((1, "alice", "player", 20_000), (2, "bob", "banker", 10_000)), BANKER_NATURAL_9)
    await f.round(table, ((1, "alice", "player", 30_000), (2, "bob", "banker", 5_000)), PLAYER_NATURAL_8)
    f.send(table, T.WAGERING_COMMANDS, LeaveSeat(seat=1, player_id="alice"))
    await f.credit(table, "C1", 20_000)
    await f.close(table, "S1", closer, cash, 30_000, 1)


async def test_a_shift_by_hand():
    f = Floor()
    await play_the_shift(f)
    (s,) = f.statements()
    assert (s.table_id, s.shift_id, s.pit, s.gaming_day) == ("T1", "S1", "P1", "2026-01-01")
    assert (s.opener, s.closer, s.fills, s.credits, s.open_fills) == (100_000, 35_500, 50_000, 20_000, 0)
    assert (s.drop_cash, s.drop_markers, s.drop) == (50_000, 30_000, 80_000)
    assert s.win == -14_500 and s.game_result == -14_500 and s.rounds == 2
    assert s.variance == 0 and s.tray_variance == 0 and s.drop_variance == 0
    assert s.hold == Fraction(-14_500, 80_000) and s.hold_pct == "-18.13"
    assert alerts([s]) == []
    assert csv_text([s]).splitlines()[1].startswith("T1,S1,2026-01-01,P1,100000,35500,50000,1,20000,1,0,")


async def test_a_rack_gone_missing_is_a_variance_and_an_alert():
    """The closer counts $25 short: the win is $25 below the game result."""
    f = Floor()
    await play_the_shift(f, closer=33_000)
    (s,) = f.statements()
    assert s.win == -17_000 and s.game_result == -14_500 and s.variance == -2_500 and s.tray_variance == -2_500
    assert alerts([s]) == [s]


async def test_a_short_drop_count_is_a_variance():
    f = Floor()
    await play_the_shift(f, cash=40_000)
    (s,) = f.statements()
    assert (s.drop, s.drop_variance, s.variance) == (70_000, -10_000, -10_000)
    assert alerts([s]) == [s]


async def test_an_open_fill_is_visible_and_rollups_by_pit_and_day():
    f = Floor()
    await play_the_shift(f, "T1")
    # a second table in another pit: a fill issued and never received, a patron who only buys in
    await f.open_table("T2", "S1", 50_000, "P2", ((3, "carol"),))
    f.cage("T2", BuyIn(buy_in_id="B1", seat=3, player_id="carol", method="cash", amount_cents=20_000), "dealer-1")
    f.cage("T2", RequestFill(fill_id="F9", chips=chips((2_500, 4)), total_cents=10_000), "sup-1")
    f.cage("T2", IssueFill(fill_id="F9", runner_id="sec-1"), "cashier-1")
    await f.bus.pump()
    t1, t2 = f.statements()
    assert (t2.open_fills, t2.fills, t2.closed, t2.counted) == (1, 0, False, False)
    await f.close("T2", "S1", 30_000, 20_000, 0, 0)
    t1, t2 = f.statements()
    assert (t2.win, t2.game_result, t2.variance, t2.hold_pct) == (0, 0, 0, "0.00")
    (day,) = rollup([t1, t2], "gaming_day")
    assert (day.tables, day.shifts, day.drop, day.win, day.game_result, day.variance) == (2, 2, 100_000, -14_500,
                                                                                         -14_500, 0)
    assert (day.open_fills, day.hold_pct) == (1, "-14.50")
    p1, p2 = rollup([t1, t2], "pit")
    assert (p1.pit, p1.win, p2.pit, p2.drop) == ("P1", -14_500, "P2", 20_000)


async def test_every_cage_state_of_the_shift_round_trips_as_a_snapshot():
    """The cage's state after every fold encodes and decodes (msgpack, as in a snapshot) to itself."""
    f = Floor()
    seen = round_trip_every_fold({"cage": f.cage_host})
    await play_the_shift(f)
    assert seen["cage"] > 20


async def test_a_voided_round_is_not_a_round_of_the_shift():
    """Fix 9 of issue 24: a round voided after its bets (their stakes returned, 13:69F-3.2(d)) is neither a
    round nor a game result of the shift, as on the pit's cage figures and in the replay."""
    from contracts.commands import VoidRound

    f = Floor()
    await play_the_shift(f)
    await f.open_table("T2", "S1", 100_000, "P1", ((1, "alice"),))
    f.cage("T2", BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=50_000,
                       cash=chips((10_000, 5))), "dealer-1")
    f.send("T2", T.DEALING_COMMANDS, OpenRound(round_id="V1", shoe_id="T2-S"))
    await f.bus.pump()
    f.send("T2", T.WAGERING_BETS, PlaceBet(round_id="V1", seat=1, player_id="alice", wager="banker",
                                           amount_cents=20_000))
    f.send("T2", T.WAGERING_COMMANDS, CloseBetting(round_id="V1"))
    await f.bus.pump()
    f.send("T2", T.DEALING_COMMANDS, VoidRound(round_id="V1", reason="card exposed"))
    await f.bus.pump()
    settled = [e.payload for e in events(f.bus) if type(e.payload).__name__ == "RoundSettled"
               and e.table_id == "T2"]
    assert [(s.round_id, s.stakes, s.payouts, s.table_result) for s in settled] == [("V1", 20_000, 20_000, 0)]
    await f.close("T2", "S1", 50_000, 50_000, 0, 0)  # the tray gave alice $500 of chips for her cash
    t1, t2 = f.statements()
    assert (t1.rounds, t2.rounds, t2.game_result, t2.variance) == (2, 0, 0, 0)
