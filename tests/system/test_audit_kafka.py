"""`croupier audit` against a real broker: two tables play a few rounds, the audit is clean with the right
counts; then a forged settlement, a garbage record and an event of an unknown type are written into the
event topics with a plain producer, and the audit names the first two and only counts the third."""

from __future__ import annotations

import asyncio
import json
import random

from aiokafka import AIOKafkaProducer
from msgspec.structs import replace
from typer.testing import CliRunner

from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event, encode
from contracts.commands import CloseShoe, LoadShoe
from contracts.envelope import event_id
from contracts.events import BetSettled, ShoeBurned, ShoeClosed
from croupier.cli import app
from services.floor.dealer import Clock, TableDealer
from services.runtime.core import command
from services.rawlog import read_topic as read_log
from tests.system.conftest import client_options
from tests.system.test_floor_kafka import SEATS, Floor

ROUNDS = 4


async def _play(floor: Floor, table_id: str, config) -> TableDealer:  # type: ignore[no-untyped-def]
    dealer = TableDealer(floor.io, table_id, config, SEATS, random.Random(table_id), Clock(), timeout=60)
    await dealer.open_table()
    shoe = f"{table_id}-shoe-1"
    since = floor.io.log.mark(table_id)
    await floor.io.send(T.SHOE_COMMANDS, command(table_id, f"{table_id}-load", Clock()(),
                                                 LoadShoe(shoe_id=shoe, cut_at=60)))
    await floor.io.wait(table_id, lambda e: isinstance(e.payload, ShoeBurned), since, 60)
    for n in range(1, ROUNDS + 1):
        assert await dealer.play_round(shoe, f"{shoe}-round-{n}")
    since = floor.io.log.mark(table_id)
    await floor.io.send(T.SHOE_COMMANDS, command(table_id, f"{table_id}-close", Clock()(), CloseShoe(shoe_id=shoe)))
    await floor.io.wait(table_id, lambda e: isinstance(e.payload, ShoeClosed), since, 60)
    return dealer


def _audit(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["audit", *args])


async def test_croupier_audit_on_kafka_clean_then_catches_a_forged_settlement(kafka_bootstrap: str):
    floor = Floor(kafka_bootstrap)
    await floor.start()
    try:
        dealers = await asyncio.gather(_play(floor, "K1", punto_banco_full()),
                                       _play(floor, "K2", no_vig_dragon(panda=True)))
    finally:
        await floor.stop()
    log = await floor.log()
    bets = sum(d.run_state.bets for d in dealers)
    where = ["--bootstrap", kafka_bootstrap, "--prefix", floor.settings.topic_prefix]

    r = await asyncio.to_thread(_audit, *where)
    assert r.exit_code == 0, r.output
    assert (f"audited {len(log)} events of 2 table(s): 2 shoe(s) verified, {2 * ROUNDS} round(s) and {bets} bet(s) "
            f"checked, 0 round(s) in play") in r.stdout
    assert "0 discrepancies: clean" in r.stdout
    # every event a command caused matched its command's record: topic writer, actor, the broker's append time
    caused = [e for e in log if e.principal != e.stream.split(".")[0]]
    assert caused and all(e.principal for e in log)
    commands = len({(e.table_id, e.causation_id) for e in caused})
    assert (f"provenance: {len(caused)} event(s) matched to their command among ") in r.stdout, r.stdout
    assert commands <= int(r.stdout.split(" event(s) matched to their command among ")[1].split()[0])
    r = await asyncio.to_thread(_audit, *where, "--table", "K2", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["clean"], d["tables"], d["shoes_verified"], d["rounds_checked"], d["bets_checked"]) == (
        True, 1, 1, ROUNDS, dealers[1].run_state.bets)
    assert d["provenance"]["status"] == "checked" and d["provenance"]["events_checked"] == sum(
        1 for e in caused if e.table_id == "K2")
    for args, message in ((("--table", "K9"), "no events for table 'K9'"),
                          (("--shoe", "K1-shoe-7"), "no events for shoe 'K1-shoe-7'")):
        r = await asyncio.to_thread(_audit, *where, *args)
        # the CLI's own output, without the JSON log lines of the clients still in this process (a repeat
        # summary of the floor's producer is written when its interval ends, into whatever stderr is then)
        said = [line for line in r.stderr.splitlines() if line.strip() and not line.startswith("{")]
        assert r.exit_code == 2 and len(said) == 1 and said[0].startswith(f"error: {message}"), r.stderr

    # forge: a second BetSettled under the seq of a real one, paying 100 cents more; garbage; an unknown type
    topic = floor.settings.topic(T.SETTLEMENT_EVENTS)
    real = next(e for e in (decode_event(r.value) for r in await read_log(floor.settings, topic))
                if e.table_id == "K1" and isinstance(e.payload, BetSettled) and e.payload.payout > 0)
    forged = replace(real, payload=replace(real.payload, payout=real.payload.payout + 100))
    # a newer producer's event of an unknown type takes the next seq: counted, not a gap, not a discrepancy
    nxt = 1 + max(e.seq for e in log if e.table_id == "K1" and e.stream == T.SETTLEMENT_EVENTS)
    unknown = encode(replace(real, seq=nxt, event_id=event_id(T.SETTLEMENT_EVENTS, "K1", nxt))).replace(
        b'"type":"bet_settled"', b'"type":"bet_teleported"')
    producer = AIOKafkaProducer(**client_options(kafka_bootstrap))
    await producer.start()
    try:
        await producer.send_and_wait(topic, encode(forged), key=T.key("K1"))
        await producer.send_and_wait(floor.settings.topic(T.DEALING_EVENTS), b"\x00 not an event", key=T.key("K2"))
        await producer.send_and_wait(topic, unknown, key=T.key("K1"))
    finally:
        await producer.stop()

    r = await asyncio.to_thread(_audit, *where)
    assert r.exit_code == 1, r.output
    lines = r.stdout.splitlines()
    assert (f"K1 duplicate_seq settlement.events#{real.seq}: the same seq appears twice (two different bet_settled: "
            f"payload.payout {real.payload.payout} then {real.payload.payout + 100})") in lines
    # the forged copy named where it is (its partition's record under that seq), with what the rules pay
    assert any(line.startswith(f"K1 bet_settled_twice settlement.events#{real.seq}: bet {real.payload.bet_id} of ")
               for line in lines), lines
    assert any(line.startswith(f"K1 settlement_mismatch settlement.events#{real.seq}: bet {real.payload.bet_id} (")
               and f"; the rules give {real.payload.result} with payout " in line for line in lines), lines
    assert any(line.startswith(f"K2 undecodable_record {floor.settings.topic(T.DEALING_EVENTS)}[") for line in lines)
    assert "undecodable records: 1; events of unknown types skipped: 1 (bet_teleported 1)" in lines
    assert not any(line.startswith("K2 ") and "undecodable" not in line for line in lines)  # K2 is otherwise clean
    r = await asyncio.to_thread(_audit, *where, "--table", "K2")
    assert r.exit_code == 1 and [ln.split()[1] for ln in r.stdout.splitlines()[3:]
                                  if not ln.startswith(("vault:", "provenance:"))] == ["undecodable_record"]

    # a principal that may not read the command topics (analytics: event topics only) sees none of them: the
    # provenance is "attribution only", a note, never a command_missing for every command-caused event (issue
    # 28: 34 false discrepancies on one table). On this plain broker the topics are deleted to hide them.
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**client_options(kafka_bootstrap))
    await admin.start()
    try:
        hidden = [floor.settings.topic(t) for t in T.COMMAND_TOPICS]
        await admin.delete_topics([t for t in hidden if t in set(await admin.list_topics())])
        for _ in range(100):
            if not set(hidden) & set(await admin.list_topics()):
                break
            await asyncio.sleep(0.1)
    finally:
        await admin.close()
    r = await asyncio.to_thread(_audit, *where, "--table", "K2")
    assert r.exit_code == 1 and "command_missing" not in r.stdout, r.stdout
    assert [ln.split()[1] for ln in r.stdout.splitlines()[3:] if ln.startswith("K2 ")] == ["undecodable_record"]
    assert any(ln.startswith("provenance: attribution only, events not matched to commands (cannot read the "
                             "command topics: CommandsUnreadable: no command topic is visible")
               for ln in r.stdout.splitlines()), r.stdout
