"""The audit's provenance check (croupier/provenance.py): every event attributed, each command-caused event
matching its command's record; a tampering test for each kind of bend (issue 9)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from datetime import timedelta

import msgspec
import pytest

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_command
from contracts.commands import CloseBetting
from contracts.envelope import Envelope
from contracts.events import BetPlaced, BettingClosed, CardDrawn
from croupier.audit import audit
from croupier.provenance import CommandRecord
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from tests.services.helpers import events, floor_bus

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]


def command_records(bus) -> list[CommandRecord]:  # type: ignore[no-untyped-def]
    """The bus's command topics as the audit reads Kafka's: on the in-memory bus the log's time of a command
    is its ``issued_at`` (there is no broker clock), so each record's append time is that."""
    out = []
    for topic in T.COMMAND_TOPICS:
        for r in bus.topics.get(topic, []):
            cmd = decode_command(r.value)
            out.append(CommandRecord(topic, r.partition, r.offset, int(cmd.issued_at.timestamp() * 1000), True, cmd))
    return out


async def _floor() -> tuple[list[Envelope], list[CommandRecord]]:
    bus, _ = floor_bus(seed=3)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "P1", punto_banco_full(), SEATS, random.Random(3), Clock())
    await dealer.open_table()
    from contracts.commands import LoadShoe

    await io.send(T.SHOE_COMMANDS, command("P1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=40)))
    for n in range(1, 6):
        assert await dealer.play_round("S", f"S-{n}")
    return events(bus), command_records(bus)


@pytest.fixture(scope="module")
def floor() -> tuple[list[Envelope], list[CommandRecord]]:
    return asyncio.run(_floor())


def kinds(rep) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(d.kind for d in rep.discrepancies)


def index(log: list[Envelope], kind: type) -> int:
    return next(i for i, e in enumerate(log) if isinstance(e.payload, kind))


def test_the_floor_is_attributed_and_every_command_caused_event_matches_its_record(floor):
    log, cmds = floor
    rep = audit(log, commands=cmds)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.rounds_checked == 5 and rep.bets_checked > 0  # the floor worked
    p = rep.provenance
    assert p.status == "checked" and p.commands == len(cmds)
    caused = [e for e in log if e.principal != e.stream.split(".")[0]]
    assert p.events_checked == len(caused) > 5
    assert {e.principal for e in caused} == {"console", "bettor", "dealing"}
    assert audit(log).provenance.to_dict()["status"] == "not_read"  # without the commands: attribution only


def test_a_back_dated_event_is_flagged(floor):
    log, cmds = floor
    i = index(log, BetPlaced)
    forged = list(log)
    forged[i] = msgspec.structs.replace(log[i], occurred_at=log[i].occurred_at - timedelta(minutes=5))
    assert kinds(audit(forged, commands=cmds)) == ["event_time_mismatch"]


def test_an_event_nobody_commanded_is_flagged(floor):
    """A BetPlaced written straight into wagering.events (as finding 9 did with a RoundResolved), naming the
    bettor principal, at the next seq: no command topic holds its cause."""
    log, cmds = floor
    i = max(j for j, e in enumerate(log) if e.stream == T.WAGERING_EVENTS)
    last = log[i]
    bet = BetPlaced(round_id="S-5", bet_id="ghost", seat=1, player_id="player-1", wager="banker", amount_cents=2500)
    from contracts.envelope import event_id

    ghost = msgspec.structs.replace(last, seq=last.seq + 1, event_id=event_id(last.stream, last.table_id, last.seq + 1),
                    causation_id="ghost", principal="bettor", actor="player-1", payload=bet)
    assert "command_missing" in kinds(audit(log + [ghost], commands=cmds))


def test_an_unattributed_event_and_a_wrong_principal_are_flagged(floor):
    log, cmds = floor
    i = index(log, BetPlaced)
    j = index(log, CardDrawn)
    forged = list(log)
    forged[i] = msgspec.structs.replace(log[i], principal="console")  # a bet the dealer's console made: not its topic's writer
    forged[j] = msgspec.structs.replace(log[j], principal=None, actor=None)
    assert kinds(audit(forged, commands=cmds)) == ["principal_mismatch", "unattributed_event"]
    assert kinds(audit(forged)) == ["unattributed_event"]


def test_an_unattributed_command_that_was_acted_on_is_flagged(floor):
    """A "No more bets" record without its dealer, which a service took (it must refuse ``unattributed``)."""
    log, cmds = floor
    k = next(n for n, r in enumerate(cmds) if isinstance(r.command.payload, CloseBetting))
    bent = list(cmds)
    bent[k] = replace(cmds[k], command=msgspec.structs.replace(cmds[k].command, actor=""))
    closed = next(e for e in log if isinstance(e.payload, BettingClosed) and e.causation_id == cmds[k].command.command_id)
    forged = [msgspec.structs.replace(e, actor=None) if e is closed else e for e in log]
    assert kinds(audit(forged, commands=bent)) == ["unattributed_command"]


def test_a_command_acted_on_from_a_topic_that_does_not_carry_it_is_flagged(floor):
    log, cmds = floor
    k = next(n for n, r in enumerate(cmds) if isinstance(r.command.payload, CloseBetting))
    moved = list(cmds)
    moved[k] = replace(cmds[k], topic=T.WAGERING_BETS)  # as if a bettor's "No more bets" had been taken
    assert kinds(audit(log, commands=moved)) == ["principal_mismatch", "wrong_topic_accepted"]


def test_the_same_id_from_two_principals_is_matched_to_the_events_own_writer(floor):
    """A bettor's record under the id of a console command (ids are the senders'): the console's events are
    still matched to the console's record, and the audit stays clean."""
    log, cmds = floor
    k = next(n for n, r in enumerate(cmds) if isinstance(r.command.payload, CloseBetting))
    from contracts.commands import PlaceBet

    clash = CommandRecord(T.WAGERING_BETS, 0, 10**6, cmds[k].timestamp_ms - 5, True, msgspec.structs.replace(
        cmds[k].command, actor="player-1", payload=PlaceBet(round_id="S-1", seat=1, player_id="player-1",
                                                            wager="banker", amount_cents=2500)))
    assert audit(log, commands=[clash] + cmds).clean


def test_an_event_relabelled_as_a_reaction_with_no_cause_in_the_log_is_flagged(floor):
    """Red team, finding 6: a forged BetPlaced naming the wagering service itself as its principal (as if it
    were a reaction) must still have a cause in the log."""
    log, cmds = floor
    i = max(j for j, e in enumerate(log) if e.stream == T.WAGERING_EVENTS)
    last = log[i]
    from contracts.envelope import event_id

    bet = BetPlaced(round_id="S-5", bet_id="ghost", seat=1, player_id="player-1", wager="banker", amount_cents=2500)
    ghost = msgspec.structs.replace(last, seq=last.seq + 1, event_id=event_id(last.stream, last.table_id, last.seq + 1),
                                    causation_id="nothing-at-all", principal="wagering", actor=None, payload=bet)
    assert "cause_missing" in kinds(audit(log + [ghost], commands=cmds))
