"""The cage on a real Kafka broker: a two-table shift (a few rounds each) through the five game services and
the cage service: openers, rated patrons buying in by cash and marker, a fill and a credit, closers and soft
counts; every statement re-derived from ``cage.events`` balances to the cent, and the log as ``croupier audit``
reads it from Kafka (``cage.events`` with the game's streams) audits clean. Then a fill nobody requested is
written into ``cage.events`` (a forged slip): the audit, and the replay's marks, find it at its record."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from contracts import topics as T
from contracts.cage import BoughtIn, FillReceived, MarkerIssued
from contracts.codecs import decode_event, encode
from contracts.envelope import Envelope, event_id
from croupier.audit import audit
from croupier.log import read_for_audit
from croupier.parquet import write_directory
from croupier.replay import TableStory, read_floor, read_table
from services.cage.core import CageCore
from services.cage.statement import alerts, statements
from services.rawlog import read_topic as read_log
from tests.services.test_cage_floor import clerks, dealers
from tests.system.test_floor_kafka import Floor


async def test_a_two_table_shift_through_the_services_balances(kafka_bootstrap: str, tmp_path):  # type: ignore[no-untyped-def]
    floor = Floor(kafka_bootstrap)
    floor.cores["cage"] = CageCore()
    await floor.start()
    try:
        cl = clerks()
        ds = dealers(floor.io, cl)
        for d in ds:
            d.rounds_per_shoe = 3
            d.timeout = 60
        runs = await asyncio.gather(*(d.run(shoes=1) for d in ds))
        log, undecodable, unknown = await read_for_audit(floor.settings)
        cage = [decode_event(r.value) for r in await read_log(floor.settings, floor.settings.topic(T.CAGE_EVENTS))]
    finally:
        await floor.stop()
    assert [r.rounds for r in runs] == [3, 3]
    rows = statements(cage)
    assert [(r.table_id, r.closed, r.counted, r.rounds) for r in sorted(rows, key=lambda r: r.table_id)] == [
        ("T1", True, True, 3), ("T2", True, True, 3)]
    for r in rows:
        assert (r.variance, r.tray_variance, r.drop_variance) == (0, 0, 0), r
        assert r.closer == cl[r.table_id].tray and r.drop > 0
    by = {r.table_id: r for r in rows}
    assert by["T1"].fill_slips >= 1 and by["T2"].credit_slips >= 1
    assert alerts(rows) == []
    # casino-wide credit: every marker booked at a table was issued at CAGE (another partition than T1's at 3
    # partitions: the cage's Send crossed partitions inside the transaction), and none issued went unbooked
    issued = sorted((e.payload.table_id, e.payload.buy_in_id) for e in cage if isinstance(e.payload, MarkerIssued))
    booked = sorted((e.table_id, e.payload.buy_in_id) for e in cage
                    if isinstance(e.payload, BoughtIn) and e.payload.method == "marker")
    assert issued == booked and {t for t, _ in issued} == {"T1", "T2"}, (issued, booked)
    assert sorted(e.event_id for e in log if e.stream == T.CAGE_EVENTS) == sorted(e.event_id for e in cage)
    rep = audit(log, undecodable=undecodable, unknown=unknown)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    # a forged fill: received at T1's table, never requested nor issued, written straight into cage.events
    # (tests/unit/test_audit_cage.py forges one inside an open shift: fill_forged)
    t1 = [e for e in cage if e.table_id == "T1"]
    seq = max(e.seq for e in t1) + 1
    forged = Envelope(event_id=event_id(T.CAGE_EVENTS, "T1", seq), stream=T.CAGE_EVENTS, table_id="T1", seq=seq,
                      causation_id="forged", correlation_id="forged", occurred_at=datetime.now(UTC),
                      payload=FillReceived(fill_id="F-forged", shift_id=by["T1"].shift_id, total_cents=100_000,
                                           by="dl-x", supervisor_id="sup-x", tray_cents=0))
    await _write(floor.settings, forged)
    log, undecodable, unknown = await read_for_audit(floor.settings)
    found = audit(log, undecodable=undecodable, unknown=unknown).discrepancies
    # after T1's closer (no shift open), and written by nobody the broker knows (no principal on the record)
    assert sorted((d.table_id, d.kind, d.where) for d in found) == [
        ("T1", "cage_out_of_shift", f"cage.events#{seq}"), ("T1", "unattributed_event", f"cage.events#{seq}")], found
    story = TableStory([r.env for r in await read_table(floor.settings, "T1")], "T1")
    assert "cage_out_of_shift" in [m["kind"] for m in story.marks.by_record[f"cage.events#{seq}"]]
    # the export reads the floor as the replay does: the cage's records are in it, typed tables of their own
    records = await read_floor(floor.settings)
    assert {r.env.event_id for r in records if r.env.stream == T.CAGE_EVENTS} == \
        {e.event_id for e in cage} | {forged.event_id}
    counts = write_directory(records, tmp_path / "export")
    assert counts["FillReceived"] == sum(isinstance(e.payload, FillReceived) for e in cage) + 1
    assert counts["ShiftClosed"] == 2 and counts["DropBoxCounted"] == 2 and counts["MarkerIssued"] == len(issued)


async def _write(settings, env: Envelope) -> None:  # type: ignore[no-untyped-def]
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(**settings.client_options())
    await p.start()
    try:
        await p.send_and_wait(settings.topic(T.CAGE_EVENTS), encode(env), key=T.key(env.table_id))
    finally:
        await p.stop()
