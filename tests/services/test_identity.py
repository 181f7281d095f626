"""Issue 9, identity: who may choose a shoe's order, the player registry's bounds, and commands routed by
topic (the in-memory bus delivers by topic as Kafka does)."""

from __future__ import annotations

from datetime import datetime, timezone

from baccarat.cards import standard_deck
from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.bounds import MAX_SEATED_PLAYERS
from contracts.commands import LoadShoe, OpenTable, SeatPlayer
from contracts.events import CommandRejected, PlayerSeated, ShoeLoaded
from services.dealing.core import DealingCore
from services.runtime.core import command
from services.runtime.memory import MemoryBus
from services.runtime.translate import table_spec
from services.configs import test_tables as configured_test_tables
from services.shoe.core import ShoeCore
from services.wagering.core import WageringCore
from tests.services.helpers import floor_bus, payloads, seeded_entropy
from tests.vaultkeys import seeded_vault

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
STACKED = [str(c) for c in standard_deck()] * 8  # a stacked order: every suit in sequence


async def _load(table_id: str, patterns: tuple[str, ...]) -> MemoryBus:
    bus = MemoryBus()
    bus.add(ShoeCore(seeded_entropy(1), seeded_vault(1), test_tables=patterns))
    bus.send(T.SHOE_COMMANDS, command(table_id, "load", AT, LoadShoe(shoe_id="S", order=STACKED, cut_at=100)))
    await bus.pump()
    return bus


async def test_a_supplied_shoe_order_is_refused_on_a_live_table():
    bus = await _load("BAC-01", ())
    (rej,) = payloads(bus, T.SHOE_EVENTS, CommandRejected)
    assert (rej.command_id, rej.reason) == ("load", "supplied_order_not_allowed")
    assert payloads(bus, T.SHOE_EVENTS, ShoeLoaded) == []
    bus = await _load("BAC-01", ("TEST-*",))  # other tables are test tables: this one still is not
    assert [r.reason for r in payloads(bus, T.SHOE_EVENTS, CommandRejected)] == ["supplied_order_not_allowed"]


async def test_a_test_table_takes_a_supplied_order_and_says_so():
    bus = await _load("TEST-7", ("TEST-*", "LAB-?"))
    (loaded,) = payloads(bus, T.SHOE_EVENTS, ShoeLoaded)
    assert loaded.source == "supplied" and payloads(bus, T.SHOE_EVENTS, CommandRejected) == []


def test_test_tables_come_from_the_environment_only():
    assert configured_test_tables(environ={}) == ()
    assert configured_test_tables(environ={"CROUPIER_TEST_TABLES": " TEST-*, LAB-? ,"}) == ("TEST-*", "LAB-?")


async def test_the_registry_holds_at_most_max_seated_players_and_refuses_twice_seated():
    bus = MemoryBus()
    bus.add(DealingCore())
    bus.add(WageringCore())
    bus.send(T.DEALING_COMMANDS, command("T1", "open", AT, OpenTable(config=table_spec(punto_banco_full()))))
    await bus.pump()
    for n in range(MAX_SEATED_PLAYERS + 1):
        bus.send(T.WAGERING_COMMANDS, command("T1", f"seat-{n}", AT, SeatPlayer(seat=1 + n % 14,
                                                                                player_id=f"p{n}")))
    bus.send(T.WAGERING_COMMANDS, command("T1", "again", AT, SeatPlayer(seat=1, player_id="p0")))
    bus.send(T.WAGERING_COMMANDS, command("T1", "seat-bad", AT, SeatPlayer(seat=99, player_id="px")))
    await bus.pump()
    assert len(payloads(bus, T.WAGERING_EVENTS, PlayerSeated)) == MAX_SEATED_PLAYERS
    refused = {r.command_id: r.reason for r in payloads(bus, T.WAGERING_EVENTS, CommandRejected)}
    assert refused == {f"seat-{MAX_SEATED_PLAYERS}": "table_full", "again": "already_seated",
                       "seat-bad": "invalid_seat"}


async def test_a_command_on_a_topic_that_does_not_carry_it_is_refused_and_attributed():
    bus, _ = floor_bus()
    # the dealing service's DrawCard topic carries nothing else: a LoadShoe there is refused by the shoe
    bus.send(T.SHOE_DRAWS, command("T1", "sneaky-load", AT, LoadShoe(shoe_id="S"), actor=""))
    await bus.pump()
    (rej,) = [e for e in bus_events(bus, T.SHOE_EVENTS) if isinstance(e.payload, CommandRejected)]
    assert (rej.payload.reason, rej.principal, rej.actor) == ("wrong_topic", "dealing", None)
    assert payloads(bus, T.SHOE_EVENTS, ShoeLoaded) == []


def bus_events(bus: MemoryBus, stream: str) -> list:  # type: ignore[type-arg]
    from tests.services.helpers import events

    return events(bus, stream)


async def test_a_live_table_cannot_open_unregulated_but_a_test_table_can():
    """Regulated terms are locked (baccarat/regulated.py); ``regulated=False`` would unlock them (Player at
    100 to 1, finding 9), so only a test table may say it."""
    import msgspec

    from baccarat.money import Odds
    from baccarat.table import unregulated
    from baccarat.wagers import PayTable
    from contracts.events import TableOpened

    spec = table_spec(unregulated(pay=PayTable(player=Odds(100, 1))))
    assert spec.regulated is False
    bus = MemoryBus()
    bus.add(DealingCore(test_tables=("TRAIN-*",)))
    bus.send(T.DEALING_COMMANDS, command("BAC-01", "open", AT, OpenTable(config=spec)))
    bus.send(T.DEALING_COMMANDS, command("TRAIN-1", "open", AT, OpenTable(config=spec)))
    bus.send(T.DEALING_COMMANDS, command("BAC-02", "open", AT, OpenTable(config=msgspec.structs.replace(spec, regulated=True))))
    await bus.pump()
    refused = {e.table_id: e.payload.reason for e in bus_events(bus, T.DEALING_EVENTS)
               if isinstance(e.payload, CommandRejected)}
    assert refused == {"BAC-01": "unregulated_not_allowed", "BAC-02": "invalid_config"}  # 3.3(a): Player 1 to 1
    assert [e.table_id for e in bus_events(bus, T.DEALING_EVENTS) if isinstance(e.payload, TableOpened)] == ["TRAIN-1"]


async def test_a_command_whose_key_is_not_its_table_is_dead_lettered():
    from contracts.codecs import decode_dead_letter, encode
    from contracts.commands import CloseBetting

    bus, _ = floor_bus()
    bus.append(T.WAGERING_COMMANDS, T.key("T2"), encode(command("T1", "keyed-wrong", AT, CloseBetting(round_id="R1"))))
    await bus.pump()
    (letter,) = [decode_dead_letter(r.value) for r in bus.topics[T.dlq("wagering")]]
    assert letter.error == "misrouted: key b'T2' is not table 'T1''s"
    assert payloads(bus, T.WAGERING_EVENTS, CommandRejected) == []  # nothing decided
