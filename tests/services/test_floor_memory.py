"""The four services on the in-memory bus: whole shoes audited against the rules core, restarts,
rejections, duplicates and bad input."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from baccarat.table import Limits, no_vig_dragon, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.codecs import decode_dead_letter, encode
from contracts.commands import CloseBetting, LeaveSeat, OpenRound, PlaceBet, WithdrawBet
from contracts.events import (
    BetPlaced,
    BettingClosed,
    CommandRejected,
    PlayerSeated,
    BetRejected,
    BetSettled,
    RoundResolved,
    RoundSettled,
)
from croupier.audit import audit
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from services.settlement.core import SettlementCore
from tests.services.helpers import events, floor_bus, payloads

SEATS = [Seat(i, f"player-{i}") for i in range(1, 7)]


async def test_two_tables_full_shoes_audit_clean():
    bus, _ = floor_bus(seed=11)
    io = MemoryFloorIO(bus)
    runs = []
    for tid, cfg in (("T1", punto_banco_full()), ("T2", no_vig_dragon(panda=True))):
        dealer = TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock())
        runs.append(await dealer.run(shoes=1))
    for r in runs:
        assert 60 <= r.rounds <= 90 and r.rejections == ["shoe_complete"]
        assert r.stakes - r.payouts + 0 == r.table_result  # deducted commission: nothing accrued
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.shoes_verified == 2 and rep.rounds_checked == sum(r.rounds for r in runs)
    assert rep.bets_checked == sum(r.bets for r in runs) > 500
    # every wager each table offers was bet and settled at least once
    for tid, cfg in (("T1", punto_banco_full()), ("T2", no_vig_dragon(panda=True))):
        wagers = {e.payload.wager for e in events(bus, T.SETTLEMENT_EVENTS)
                  if e.table_id == tid and isinstance(e.payload, BetSettled)}
        assert wagers == {w.value for w in cfg.wagers}


async def test_settlement_restart_between_resolution_and_settlements():
    bus, hosts = floor_bus(seed=3)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "T1", punto_banco_full(), SEATS, random.Random(3), Clock())
    await dealer.open_table()
    settlement = hosts["settlement"]

    crashed = {"n": 0}
    real_publish = settlement.publisher.publish

    async def crash_on_round_10(decision):
        if any(isinstance(e.payload, RoundSettled) and e.payload.round_id.endswith("round-10")
               for e in decision.events) and not crashed["n"]:
            crashed["n"] += 1
            raise ConnectionError("broker went away")  # dies before anything of the round is published
        await real_publish(decision)

    settlement.publisher.publish = crash_on_round_10
    # the crash is contained (logged and dead-lettered, the service goes on); the round is left unsettled
    for n in range(1, 11):
        bus_round = f"T1-shoe-1-round-{n}"
        if n == 1:
            from contracts.commands import LoadShoe

            await io.send(T.SHOE_COMMANDS, command("T1", "load", Clock()(), LoadShoe(shoe_id="T1-shoe-1", cut_at=50)))
        await io.send(T.DEALING_COMMANDS, command("T1", f"open-{n}", Clock()(), OpenRound(round_id=bus_round,
                                                                                         shoe_id="T1-shoe-1")))
        await io.send(T.WAGERING_BETS, command("T1", f"bet-{n}", Clock()(), PlaceBet(
            round_id=bus_round, seat=1, player_id="p", wager="banker", amount_cents=2500)))
        await io.send(T.WAGERING_COMMANDS, command("T1", f"close-{n}", Clock()(), CloseBetting(round_id=bus_round)))
    assert crashed["n"] == 1
    settled = {p.round_id for p in payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)}
    assert "T1-shoe-1-round-10" not in settled and len(settled) == 9
    # restart: a new settlement service rebuilds from the log and settles what was due, once
    bus.remove(settlement)
    fresh = bus.add(SettlementCore())
    await bus.rebuild(fresh)
    await bus.pump()
    sums = payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)
    assert sorted(s.round_id for s in sums) == sorted(f"T1-shoe-1-round-{n}" for n in range(1, 11))
    # a second restart changes nothing
    bus.remove(fresh)
    again = bus.add(SettlementCore())
    await bus.rebuild(again)
    await bus.pump()
    assert len(payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)) == 10
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]


@pytest.mark.parametrize("victim", ["shoe", "dealing", "wagering", "settlement"])
async def test_restart_any_service_mid_shoe(victim):
    bus, hosts = floor_bus(seed=5)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "T1", punto_banco_full(), SEATS, random.Random(5), Clock())
    await dealer.open_table()
    from contracts.commands import LoadShoe

    await io.send(T.SHOE_COMMANDS, command("T1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=80)))
    for n in range(1, 16):
        assert await dealer.play_round("S", f"S-round-{n}")
    t = Clock()

    # stop the victim; the others carry on and queue work for it; then start it again from the log
    host = hosts[victim]
    bus.remove(host)
    await io.send(T.DEALING_COMMANDS, command("T1", "open-16", t(), OpenRound(round_id="S-round-16", shoe_id="S")))
    new = bus.add(type(host.core)(host.core.entropy, host.core.vault) if victim == "shoe" else type(host.core)())
    await bus.rebuild(new)
    await bus.pump()
    await io.send(T.WAGERING_BETS, command("T1", "bet-16", t(), PlaceBet(
        round_id="S-round-16", seat=2, player_id="p2", wager="player", amount_cents=5000)))
    bus.remove(new)
    await io.send(T.WAGERING_COMMANDS, command("T1", "close-16", t(), CloseBetting(round_id="S-round-16")))
    again = bus.add(type(host.core)(host.core.entropy, host.core.vault) if victim == "shoe" else type(host.core)())
    await bus.rebuild(again)
    await bus.pump()
    assert "S-round-16" in {p.round_id for p in payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)}
    for n in range(17, 200):
        if not await dealer.play_round("S", f"S-round-{n}"):
            break
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    settled = payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)
    assert len(settled) == len({s.bet_id for s in settled})  # none settled twice


async def _table_with_open_round(limits=None):
    bus, hosts = floor_bus(seed=7)
    io = MemoryFloorIO(bus)
    cfg = punto_banco_full(limits=limits or {})
    dealer = TableDealer(io, "T1", cfg, SEATS, random.Random(7), Clock())
    await dealer.open_table()
    from contracts.commands import LoadShoe

    await io.send(T.SHOE_COMMANDS, command("T1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=80)))
    await io.send(T.DEALING_COMMANDS, command("T1", "open", Clock()(), OpenRound(round_id="R1", shoe_id="S")))
    return bus, io, hosts


def _bet(cid, wager="banker", amount=2500, seat=1, round_id="R1", player="player-1", actor=None):
    return command("T1", cid, datetime(2026, 1, 1, tzinfo=timezone.utc),
                   PlaceBet(round_id=round_id, seat=seat, player_id=player, wager=wager, amount_cents=amount),
                   actor=actor)


async def test_only_a_registered_player_bets_only_from_their_own_terminal_and_a_bettor_cannot_close_betting():
    """Issue 9, identity: the player registry (``SeatPlayer``), the actor a terminal names, the one kind of
    writer per command topic, and every event saying who caused it."""
    bus, io, _ = await _table_with_open_round()  # SEATS registered: player-1 at seat 1 ... player-6 at seat 6
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    await io.send(T.WAGERING_BETS, _bet("mine"))
    await io.send(T.WAGERING_BETS, _bet("stranger", player="alice", actor="alice"))  # never registered
    await io.send(T.WAGERING_BETS, _bet("wrong-seat", seat=2))  # player-1 sits at seat 1
    await io.send(T.WAGERING_BETS, _bet("for-another", seat=2, player="player-2", actor="player-1"))
    await io.send(T.WAGERING_BETS, command("T1", "not-mine", at, WithdrawBet(round_id="R1", bet_id="mine"),
                                           actor="player-2"))
    # a bettor's principal writes wagering.bets only: a "No more bets" there is a forgery, refused
    await io.send(T.WAGERING_BETS, command("T1", "forged-close", at, CloseBetting(round_id="R1"), actor="player-2"))
    # a console command that does not name its dealer is refused too
    await io.send(T.WAGERING_COMMANDS, command("T1", "anonymous-close", at, CloseBetting(round_id="R1"), actor=""))
    await io.send(T.WAGERING_BETS, _bet("still-open", seat=2, player="player-2"))
    await io.send(T.WAGERING_COMMANDS, command("T1", "leave", at, LeaveSeat(seat=2, player_id="player-2")))
    await io.send(T.WAGERING_BETS, _bet("after-leaving", seat=2, player="player-2"))
    rejected = {p.command_id: p.reason for p in payloads(bus, T.WAGERING_EVENTS, BetRejected)}
    assert rejected == {"stranger": "unknown_player", "wrong-seat": "unknown_player",
                        "for-another": "actor_mismatch", "not-mine": "not_your_bet",
                        "after-leaving": "unknown_player"}
    refused = {p.command_id: (p.command, p.reason) for p in payloads(bus, T.WAGERING_EVENTS, CommandRejected)}
    assert refused == {"forged-close": ("close_betting", "wrong_topic"),
                       "anonymous-close": ("close_betting", "unattributed")}
    assert payloads(bus, T.WAGERING_EVENTS, BettingClosed) == []  # betting stayed open
    assert [p.bet_id for p in payloads(bus, T.WAGERING_EVENTS, BetPlaced)] == ["mine", "still-open"]
    who = {(type(e.payload).__name__, getattr(e.payload, "bet_id", "")): (e.principal, e.actor)
           for e in events(bus, T.WAGERING_EVENTS)}
    assert who[("BetPlaced", "mine")] == ("bettor", "player-1")
    assert who[("BetPlaced", "still-open")] == ("bettor", "player-2")
    assert who[("PlayerLeft", "")] == ("console", "dealer-T1")
    assert who[("BettingOpened", "")] == ("wagering", None)  # a reaction: the service's own
    seated = [(e.payload.seat, e.payload.player_id, e.principal, e.actor) for e in events(bus, T.WAGERING_EVENTS)
              if isinstance(e.payload, PlayerSeated)]
    assert seated == [(i, f"player-{i}", "console", "dealer-T1") for i in range(1, 7)]
    # every event of the floor is attributed, and DrawCard's card to the dealing service
    assert all(e.principal for e in events(bus))
    assert {e.principal for e in events(bus, T.SHOE_EVENTS) if type(e.payload).__name__ == "CardDrawn"} <= {"dealing"}


async def test_rejections_have_stable_reasons_and_the_table_carries_on():
    bus, io, _ = await _table_with_open_round(limits={Wager.TIE: Limits(500, 10_000)})
    await io.send(T.WAGERING_BETS, _bet("ok"))
    await io.send(T.WAGERING_BETS, _bet("over", wager="tie", amount=10_500))
    await io.send(T.WAGERING_BETS, _bet("under", wager="tie", amount=100))
    await io.send(T.WAGERING_BETS, _bet("disabled", wager="dragon_7"))
    await io.send(T.WAGERING_BETS, _bet("unknown", wager="pairs"))
    await io.send(T.WAGERING_BETS, _bet("seat", seat=99))
    await io.send(T.WAGERING_BETS, _bet("ok"))  # duplicate command: nothing new
    await io.send(T.WAGERING_COMMANDS, command("T1", "close", datetime(2026, 1, 1, tzinfo=timezone.utc),
                                               CloseBetting(round_id="R1")))
    await io.send(T.WAGERING_BETS, _bet("late"))
    await io.send(T.WAGERING_BETS, command("T1", "wd", datetime(2026, 1, 1, tzinfo=timezone.utc),
                                           WithdrawBet(round_id="R1", bet_id="ok"), actor="p1"))
    reasons = {p.command_id: p.reason for p in payloads(bus, T.WAGERING_EVENTS, BetRejected)}
    assert reasons == {"over": "over_table_max", "under": "under_table_min", "disabled": "wager_not_offered",
                       "unknown": "unknown_wager", "seat": "invalid_seat", "late": "betting_closed",
                       "wd": "betting_closed"}
    placed = payloads(bus, T.WAGERING_EVENTS, BetPlaced)
    assert [p.bet_id for p in placed] == ["ok"]
    assert len(payloads(bus, T.DEALING_EVENTS, RoundResolved)) == 1
    assert [s.bet_id for s in payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)] == ["ok"]
    # the table carries on
    await io.send(T.DEALING_COMMANDS, command("T1", "open2", datetime(2026, 1, 1, tzinfo=timezone.utc),
                                              OpenRound(round_id="R2", shoe_id="S")))
    assert io.log.find("T1", lambda e: getattr(e.payload, "round_id", None) == "R2") is not None


async def test_garbage_goes_to_the_dead_letter_topic_and_unknown_types_are_skipped():
    bus, io, hosts = await _table_with_open_round()
    for topic in (T.SHOE_COMMANDS, T.DEALING_COMMANDS, T.WAGERING_COMMANDS, T.SETTLEMENT_COMMANDS):
        bus.append(topic, b"T1", b"\x00\xffnot json")
        unknown = encode(_bet("x")).replace(b'"type":"place_bet"', b'"type":"teleport_chips"')
        bus.append(topic, b"T1", unknown)
    await bus.pump()
    for svc in ("shoe", "dealing", "wagering", "settlement"):
        dl = [decode_dead_letter(r.value) for r in bus.topics[T.dlq(svc)]]
        assert len(dl) == 1 and dl[0].original == b"\x00\xffnot json" and "undecodable" in dl[0].error
        assert hosts[svc].skipped == 1
    # still serving
    await io.send(T.WAGERING_BETS, _bet("after"))
    assert [p.bet_id for p in payloads(bus, T.WAGERING_EVENTS, BetPlaced)] == ["after"]


async def test_casino_night_and_an_accruing_table_through_full_shoes():
    """Casino night (13:47-20.20: 5 % on every winning bet, the literal bank rule) and a punto banco table that
    accrues commission per seat: whole shoes, audited, and every accrued cent collected at the end."""
    from baccarat.money import CommissionMode
    from baccarat.table import casino_night
    from contracts.commands import CollectCommission
    from contracts.events import CommissionAccrued, CommissionCollected

    bus, hosts = floor_bus(seed=31)
    io = MemoryFloorIO(bus)
    tables = {"CN": casino_night(literal_banker_rule=True),
              "AC": punto_banco_full(commission_mode=CommissionMode.ACCRUE)}
    for tid, cfg in tables.items():
        run = await TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock()).run(shoes=1)
        assert run.rejections == ["shoe_complete"] and run.rounds > 60
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    settled = [e.payload for e in events(bus, T.SETTLEMENT_EVENTS) if isinstance(e.payload, BetSettled)]
    cn_wins = [s for s in settled if s.result == "win" and s.bet_id.startswith("CN")]
    assert cn_wins and all(s.commission > 0 for s in cn_wins)  # every winning bet pays commission
    assert not any(s.commission_accrued for s in cn_wins)
    ac = [s for s in settled if s.bet_id.startswith("AC") and s.wager == "banker" and s.result == "win"]
    assert ac and all(s.commission_accrued and s.payout == 2 * s.stake for s in ac)
    owed: dict[int, int] = {}
    for e in events(bus, T.SETTLEMENT_EVENTS):
        if e.table_id == "AC" and isinstance(e.payload, CommissionAccrued):
            owed[e.payload.seat] = e.payload.owed_cents
    assert sum(owed.values()) == sum(s.commission for s in ac)
    for seat in owed:
        await io.send(T.SETTLEMENT_COMMANDS, command("AC", f"collect-{seat}", Clock()(), CollectCommission(seat=seat)))
    collected = {e.payload.seat: e.payload.amount_cents for e in events(bus, T.SETTLEMENT_EVENTS)
                 if isinstance(e.payload, CommissionCollected)}
    assert collected == owed
    assert audit(events(bus)).clean


async def test_a_bettor_cannot_pre_empt_the_consoles_command_id():
    """Command ids are the senders' own: a bet sent under the id the console will give "No more bets" is a
    bet; the console's call under that id is still decided, and a real retry of either is dropped."""
    bus, io, _ = await _table_with_open_round()
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    await io.send(T.WAGERING_BETS, _bet("T1:close-R1"))  # the id the console is about to use
    await io.send(T.WAGERING_COMMANDS, command("T1", "T1:close-R1", at, CloseBetting(round_id="R1")))
    await io.send(T.WAGERING_COMMANDS, command("T1", "T1:close-R1", at, CloseBetting(round_id="R1")))  # retry
    await io.send(T.WAGERING_BETS, _bet("T1:close-R1"))  # retry of the bet: nothing new either
    (closed,) = [e for e in events(bus, T.WAGERING_EVENTS) if isinstance(e.payload, BettingClosed)]
    assert (closed.causation_id, closed.principal) == ("T1:close-R1", "console")
    assert [b.bet_id for b in closed.payload.bets] == ["T1:close-R1"]
    assert [e.payload.reason for e in events(bus, T.WAGERING_EVENTS) if isinstance(e.payload, CommandRejected)] == []


async def test_a_bet_under_another_bets_id_is_refused_not_swallowed():
    """Red team, finding 3: player-2 sends a bet under the id player-1's terminal is about to use; player-1's
    bet under that id is then a different command with a used id: refused ``command_id_reused`` (so the
    terminal learns its bet was not taken), never dropped as if it were a retry."""
    bus, io, _ = await _table_with_open_round()
    await io.send(T.WAGERING_BETS, _bet("bet-7", seat=2, player="player-2"))
    await io.send(T.WAGERING_BETS, _bet("bet-7"))  # player-1's own bet, same id
    await io.send(T.WAGERING_BETS, _bet("bet-7", seat=2, player="player-2"))  # player-2's retry: silent
    refused = [(e.payload.command_id, e.payload.reason, e.actor) for e in events(bus, T.WAGERING_EVENTS)
               if isinstance(e.payload, CommandRejected)]
    assert refused == [("bet-7", "command_id_reused", "player-1")]
    assert [(p.bet_id, p.player_id) for p in payloads(bus, T.WAGERING_EVENTS, BetPlaced)] == [("bet-7", "player-2")]
