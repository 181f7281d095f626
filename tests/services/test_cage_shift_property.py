"""Property: on any simulated shift through the services (in-memory bus, a shuffled shoe, patrons who buy in
with cash, markers or chips, bet what they hold and leave; fills when the tray could not cover the round's
worst case, credits when it runs high; accrued commission collected before the closer), the count variance
is zero to the cent, the tray and drop counts match what the cage expected, and neither the tray as the
dealer holds it nor the tray the cage expected is ever below zero.

The floor here keeps its own physical chips: the tray moves by each bet's stake taken and payout handed
(``BetSettled``), commission collected, buy-ins, fills and credits; the closer and the soft count count what
it holds. The cage service follows a different path (``RoundSettled`` totals), so agreement is a check.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baccarat.money import CommissionMode
from baccarat.table import punto_banco
from contracts import topics as T
from contracts.cage import (
    BoughtIn,
    BuyIn,
    CountDropBox,
    CreditHandedOver,
    FillReceived,
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
    ShiftClosed,
)
from contracts.commands import (
    CloseBetting,
    CollectCommission,
    LeaveSeat,
    LoadShoe,
    OpenRound,
    OpenTable,
    PlaceBet,
    SeatPlayer,
)
from contracts.events import BetSettled, CommandRejected, CommissionCollected
from services.cage.core import CageCore
from services.cage.counts import chips_for
from services.cage.statement import statements
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import events, floor_bus, payloads

AT = datetime(2026, 1, 1, 20, tzinfo=timezone.utc)
DENOMS = (100_000, 10_000, 2_500, 500, 100)
NOTES = (10_000, 5_000, 2_000, 1_000, 500, 100)
#: the most a bet can win per unit staked (the tie, 8 to 1)
WORST = {"banker": 1, "player": 1, "tie": 8}

bets = st.tuples(st.integers(0, 2), st.sampled_from(sorted(WORST)), st.integers(1, 40))  # patron, wager, x $25
rounds = st.lists(st.lists(bets, max_size=4), min_size=1, max_size=4)
buy_ins = st.tuples(st.sampled_from(["cash", "marker", "chips"]), st.integers(2, 40))  # method, x $25


class Shift:
    """One table's shift on the in-memory floor, the floor's own chips beside it."""

    def __init__(self, accrue: bool, opener: int, seed: int):
        self.bus, _ = floor_bus(seed)
        self.bus.add(CageCore())
        self.n = 0
        self.tray = opener
        self.cash = 0
        self.markers: list[int] = []
        self.stacks = [0, 0, 0]
        self.slips = 0
        self.low = 0
        mode = CommissionMode.ACCRUE if accrue else CommissionMode.DEDUCT_AT_PAYOUT
        self.send(T.DEALING_COMMANDS, OpenTable(config=table_spec(punto_banco(commission_mode=mode))))
        self.send(T.SHOE_COMMANDS, LoadShoe(shoe_id="S"))
        for p in range(3):
            self.send(T.WAGERING_COMMANDS, SeatPlayer(seat=p + 1, player_id=f"p{p}"))
        self.send(T.CAGE_COMMANDS, RecordOpener(shift_id="S1", gaming_day="2026-01-01", pit="P1",
                                                chips=chips_for(opener, DENOMS), total_cents=opener,
                                                supervisor_id="sup"))
        for p in range(3):
            self.send(T.CAGE_COMMANDS, SetCreditLine(player_id=f"p{p}", line_cents=50_000), actor="cashier",
                      table="CAGE")  # casino-wide lines: at the cage's key

    def send(self, topic: str, payload, actor: str = "dealer", table: str = "T1") -> str:  # type: ignore[no-untyped-def]
        self.n += 1
        self.bus.send(topic, command(table, f"c{self.n}", AT, payload, actor=actor))
        return f"c{self.n}"

    async def buy_in(self, p: int, method: str, cents: int) -> None:
        cid = self.send(T.CAGE_COMMANDS, BuyIn(buy_in_id=f"b{self.n}", seat=p + 1, player_id=f"p{p}",
                                               method=method, amount_cents=cents))
        await self.bus.pump()
        if any(r.command_id == cid for r in payloads(self.bus, T.CAGE_EVENTS, CommandRejected)):
            return  # over the credit line, or a tray too short: refused, nothing moved
        self.stacks[p] += cents
        if method != "chips":
            self.tray -= cents
        if method == "cash":
            self.cash += cents
        elif method == "marker":
            self.markers.append(cents)

    async def fill(self, cents: int) -> None:
        self.slips += 1
        fid = f"F{self.slips}"
        self.send(T.CAGE_COMMANDS, RequestFill(fill_id=fid, chips=chips_for(cents, DENOMS), total_cents=cents),
                  actor="sup")
        self.send(T.CAGE_COMMANDS, IssueFill(fill_id=fid, runner_id="sec"), actor="cashier")
        self.send(T.CAGE_COMMANDS, ReceiveFill(fill_id=fid, supervisor_id="sup"))
        await self.bus.pump()
        self.tray += cents

    async def credit(self, cents: int) -> None:
        self.slips += 1
        cid = f"C{self.slips}"
        self.send(T.CAGE_COMMANDS, RequestCredit(credit_id=cid, chips=chips_for(cents, DENOMS), total_cents=cents),
                  actor="sup")
        self.send(T.CAGE_COMMANDS, HandOverCredit(credit_id=cid, runner_id="sec"))
        self.send(T.CAGE_COMMANDS, ReceiveCredit(credit_id=cid), actor="cashier")
        await self.bus.pump()
        self.tray -= cents

    async def play(self, number: int, round_bets, opener: int) -> None:  # type: ignore[no-untyped-def]
        rid = f"R{number}"
        self.send(T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id="S"))
        await self.bus.pump()
        worst = 0
        for p, wager, units in round_bets:
            cents = min(units * 2_500, self.stacks[p] // 2_500 * 2_500)
            if cents < 2_500:
                continue
            self.send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=p + 1, player_id=f"p{p}", wager=wager,
                                                amount_cents=cents), actor=f"p{p}")
            self.stacks[p] -= cents
            worst += cents * WORST[wager]
        await self.bus.pump()
        if worst > self.tray:  # the dealer must be able to pay the worst case: fill before the result
            await self.fill(-(-(worst - self.tray) // 2_500) * 2_500)
        self.send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid))
        await self.bus.pump()
        for b in payloads(self.bus, T.SETTLEMENT_EVENTS, BetSettled):
            if b.round_id == rid:
                self.tray += b.stake - b.payout
                self.stacks[int(b.player_id[1:])] += b.payout
        self.low = min(self.low, self.tray)
        if self.tray > 3 * opener:
            await self.credit((self.tray - opener) // 2_500 * 2_500)

    async def close(self) -> None:
        self.send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=1))
        self.send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=2))
        self.send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=3))
        await self.bus.pump()
        self.tray += sum(c.amount_cents for c in payloads(self.bus, T.SETTLEMENT_EVENTS, CommissionCollected))
        for p in range(3):
            self.send(T.WAGERING_COMMANDS, LeaveSeat(seat=p + 1, player_id=f"p{p}"))
        self.send(T.CAGE_COMMANDS, RecordCloser(shift_id="S1", chips=chips_for(self.tray, DENOMS),
                                                total_cents=self.tray, supervisor_id="sup"))
        self.send(T.CAGE_COMMANDS, RemoveDropBox(shift_id="S1"), actor="ct1")
        self.send(T.CAGE_COMMANDS, CountDropBox(shift_id="S1", cash=chips_for(self.cash, NOTES), cash_cents=self.cash,
                                                markers=len(self.markers), markers_cents=sum(self.markers),
                                                counters=["ct2", "ct3"]), actor="ct1")
        await self.bus.pump()


async def simulate(accrue: bool, opener: int, seed: int, first, plan) -> Shift:  # type: ignore[no-untyped-def]
    s = Shift(accrue, opener, seed)
    await s.bus.pump()
    for p, (method, units) in enumerate(first):
        await s.buy_in(p, method, units * 2_500)
    for i, (extra, round_bets) in enumerate(plan, 1):
        if extra is not None:
            await s.buy_in(extra[0], extra[1], extra[2] * 2_500)
        await s.play(i, round_bets, opener)
    await s.close()
    return s


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(accrue=st.booleans(), opener=st.integers(4, 200).map(lambda n: n * 2_500), seed=st.integers(0, 2**16),
       first=st.lists(buy_ins, min_size=3, max_size=3),
       plan=st.lists(st.tuples(st.one_of(st.none(), st.tuples(st.integers(0, 2), st.sampled_from(
           ["cash", "marker", "chips"]), st.integers(2, 40))), st.lists(bets, max_size=4)), min_size=1, max_size=4))
def test_any_shift_balances_to_the_cent_and_the_tray_never_goes_below_zero(accrue, opener, seed, first, plan):
    s = asyncio.run(simulate(accrue, opener, seed, first, plan))
    cage = events(s.bus, T.CAGE_EVENTS)
    assert not [e.payload for e in cage if isinstance(e.payload, CommandRejected)
                and e.payload.reason not in ("over_credit_line", "tray_short")]
    (st_,) = statements(cage)
    assert st_.closed and st_.counted and st_.rounds == len(plan)
    (closed,) = [e.payload for e in cage if isinstance(e.payload, ShiftClosed)]
    assert closed.total_cents == s.tray  # the cage expected what the dealer holds
    assert (st_.variance, st_.tray_variance, st_.drop_variance) == (0, 0, 0)
    assert st_.win == st_.game_result
    assert s.low >= 0
    expected = [e.payload.tray_cents for e in cage
                if isinstance(e.payload, (BoughtIn, FillReceived, CreditHandedOver))]
    assert min(expected, default=0) >= 0
