"""The cage on a real Kafka broker: a two-table shift (a few rounds each) through the five game services and
the cage service: openers, rated patrons buying in by cash and marker, a fill and a credit, closers and soft
counts; every statement re-derived from ``cage.events`` balances to the cent, and the game's own log still
audits clean."""

from __future__ import annotations

import asyncio

from contracts import topics as T
from contracts.codecs import decode_event
from croupier.audit import audit
from services.cage.core import CageCore
from services.cage.statement import alerts, statements
from services.rawlog import read_topic as read_log
from tests.services.test_cage_floor import clerks, dealers
from tests.system.test_floor_kafka import Floor


async def test_a_two_table_shift_through_the_services_balances(kafka_bootstrap: str):
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
        log = await floor.log()
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
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
