"""Every core's per-table state survives a msgspec round trip (what a snapshot needs): checked after every
event each core folds and every command it sends, through whole shoes at tables of several kinds (standard,
no-vig with Dragon 7 and Panda 8, commission accrued per seat, a physical shoe with card reads), including
mid-round states (open books with bets, a round being dealt, a settlement waiting for its book)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import msgspec

from baccarat.money import CommissionMode
from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.commands import (CloseBetting, CollectCommission, LoadShoe, OpenRound, OpenTable, PlaceBet, ReadCard,
                                SeatPlayer, VoidRound)
from contracts.events import CommissionAccrued, RoundResolved, RoundSettled, RoundVoided
from services.dealing.core import DealingState
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from services.runtime.translate import table_spec
from services.settlement.core import SettlementState
from services.shoe.core import ShoeState
from services.wagering.core import WageringState
from tests.services.helpers import floor_bus, payloads

SEATS = [Seat(i, f"player-{i}") for i in range(1, 7)]
AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def round_trip_every_fold(hosts: dict[str, Any]) -> Counter[str]:
    """Wrap each core's evolve/absorb/sent so every state it returns is encoded, decoded as the core's
    ``state_type`` and compared with the original. Returns a counter of what was seen (per core, and the
    mid-round kinds of state)."""
    seen: Counter[str] = Counter()

    def check(core: Any, state: Any) -> None:
        assert type(state) is core.state_type
        back = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=core.state_type)
        assert back == state, (core.name, state)
        seen[core.name] += 1
        if isinstance(state, WageringState) and any(b.status == "open" and b.bets for b in state.books.values()):
            seen["open_book_with_bets"] += 1
        if isinstance(state, DealingState) and state.round is not None and state.round.status == "dealing":
            seen["round_being_dealt"] += 1
        if isinstance(state, DealingState) and state.curator is not None:
            seen["curator_holds_shoe"] += 1
            if state.curator_due:
                seen["curator_decision_due"] += 1
        if isinstance(state, SettlementState) and any(p.result and p.book is None for p in state.pending.values()):
            seen["result_waiting_for_book"] += 1
        if isinstance(state, SettlementState) and any(p.book is not None for p in state.pending.values()):
            seen["book_waiting_for_result"] += 1
        if isinstance(state, SettlementState) and any(state.owed.values()):
            seen["commission_owed"] += 1
        if isinstance(state, ShoeState) and state.shoe is not None and state.source == "physical" and state.drawn:
            seen["physical_shoe_read"] += 1

    for host in hosts.values():
        core = host.core
        for name in ("evolve", "absorb", "sent"):
            real = getattr(core, name)

            def wrapped(state: Any, msg: Any, _real: Any = real, _core: Any = core) -> Any:
                out = _real(state, msg)
                check(_core, out)
                return out

            setattr(core, name, wrapped)
    return seen


async def test_every_state_of_every_core_round_trips_through_whole_shoes():
    bus, hosts = floor_bus(seed=23)
    seen = round_trip_every_fold(hosts)
    io = MemoryFloorIO(bus)
    tables = {"T1": punto_banco_full(), "T2": no_vig_dragon(panda=True),
              "AC": punto_banco_full(commission_mode=CommissionMode.ACCRUE)}
    rounds = 0
    for tid, cfg in tables.items():
        run = await TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock()).run(shoes=1)
        assert run.rejections == ["shoe_complete"]
        rounds += run.rounds
    for seat in (1, 2, 3):
        await io.send(T.SETTLEMENT_COMMANDS, command("AC", f"collect-{seat}", AT, CollectCommission(seat=seat)))
    assert len(payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)) == rounds > 180
    assert payloads(bus, T.SETTLEMENT_EVENTS, CommissionAccrued)
    # every fold of every core was checked: at least one per event of its own stream (3 tables' events)
    own = {"shoe": T.SHOE_EVENTS, "dealing": T.DEALING_EVENTS, "wagering": T.WAGERING_EVENTS,
           "settlement": T.SETTLEMENT_EVENTS}
    for name, stream in own.items():
        assert seen[name] >= len(bus.topics[stream]) > rounds
    for kind in ("open_book_with_bets", "round_being_dealt", "book_waiting_for_result", "commission_owed"):
        assert seen[kind] > 50, kind


async def test_a_curators_states_round_trip_through_a_whole_shoe():
    """The dealing state of a table with a curator (13:69F-3.11): who holds the shoe, the decision due, the
    registry it passes among."""
    import dataclasses
    bus, hosts = floor_bus(seed=29)
    seen = round_trip_every_fold(hosts)
    io = MemoryFloorIO(bus)
    cfg = dataclasses.replace(punto_banco_full(), curator=True)
    run = await TableDealer(io, "CU", cfg, SEATS, random.Random(2), Clock()).run(shoes=1)
    assert run.rejections == ["shoe_complete"]
    assert seen["curator_holds_shoe"] > 500 and seen["curator_decision_due"] > 20


async def test_physical_shoe_and_voided_round_states_round_trip():
    bus, hosts = floor_bus(seed=5)
    seen = round_trip_every_fold(hosts)
    n = iter(range(1, 1000))

    def cmd(payload: Any) -> Any:
        return command("P1", f"c{next(n)}", AT, payload)

    bus.send(T.DEALING_COMMANDS, cmd(OpenTable(config=table_spec(punto_banco_full()))))
    bus.send(T.SHOE_COMMANDS, cmd(LoadShoe(shoe_id="PS", physical=True)))
    await bus.pump()
    # R1: a bet, "No more bets", six cards read (Banker 6 draws on 6); R2: voided with a bet on it
    bus.send(T.WAGERING_COMMANDS, cmd(SeatPlayer(seat=1, player_id="p")))
    bus.send(T.WAGERING_COMMANDS, cmd(SeatPlayer(seat=2, player_id="q")))
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R1", shoe_id="PS")))
    await bus.pump()
    bus.send(T.WAGERING_BETS, cmd(PlaceBet(round_id="R1", seat=1, player_id="p", wager="player",
                                               amount_cents=2500)))
    bus.send(T.WAGERING_COMMANDS, cmd(CloseBetting(round_id="R1")))
    await bus.pump()
    for i, card in enumerate(["As", "3h", "4d", "3c", "6s", "4h"], 1):
        bus.send(T.SHOE_COMMANDS, cmd(ReadCard(shoe_id="PS", round_id="R1", card_number=i, card=card)))
        await bus.pump()
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R2", shoe_id="PS")))
    await bus.pump()
    bus.send(T.WAGERING_BETS, cmd(PlaceBet(round_id="R2", seat=2, player_id="q", wager="banker",
                                               amount_cents=5000)))
    bus.send(T.DEALING_COMMANDS, cmd(VoidRound(round_id="R2", reason="dealer error")))
    await bus.pump()
    assert [r.winner for r in payloads(bus, T.DEALING_EVENTS, RoundResolved)] == ["player"]
    assert [r.round_id for r in payloads(bus, T.DEALING_EVENTS, RoundVoided)] == ["R2"]
    assert [(s.round_id, s.payouts) for s in payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)] == \
        [("R1", 5000), ("R2", 5000)]
    assert seen["physical_shoe_read"] >= 6 and seen["round_being_dealt"] >= 5
    assert min(seen[c] for c in ("shoe", "dealing", "wagering", "settlement")) >= 6
