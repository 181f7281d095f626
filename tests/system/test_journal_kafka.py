"""`/tables/{id}/ledger/journal` against a real broker: a floor of three tables (two of them on the same
partition of projection.ledger) deals a few rounds with the projection; each table's journal read through
the cursor, a few entries a page, is the whole journal on the topic: the entry ids in order, none twice,
none missing, and the lines sum to 0."""

from __future__ import annotations

import asyncio
import random

import httpx

from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.commands import LoadShoe
from contracts.events import LedgerPosted, RoundSettled
from croupier.log import read_events
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.projection.api import create_api
from services.runtime.core import command
from services.runtime.tasks import partition_of
from tests.system.test_floor_kafka import Floor

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
ROUNDS = 6
LIMIT = 4
TOKENS = {"cage": "c" * 20, "analyst": "a" * 20}


def _tables(partitions: int) -> list[str]:
    """Two table ids on one partition, and a third on another."""
    seen: dict[int, str] = {}
    for i in range(1000):
        tid = f"JR{i}"
        p = partition_of(tid, partitions)
        if p in seen:
            other = next(f"JR{j}" for j in range(1000) if partition_of(f"JR{j}", partitions) != p)
            return [seen[p], tid, other]
        seen[p] = tid
    raise AssertionError("no two table ids on one partition")


async def _play(floor: Floor, tid: str, cfg) -> str:  # type: ignore[no-untyped-def]
    clock = Clock()
    dealer = TableDealer(floor.io, tid, cfg, SEATS, random.Random(tid), clock, timeout=60)
    await dealer.open_table()
    shoe = f"{tid}-S"
    await floor.io.send(T.SHOE_COMMANDS, command(tid, f"{tid}-load", clock(), LoadShoe(shoe_id=shoe, cut_at=50)))
    for n in range(1, ROUNDS + 1):
        assert await dealer.play_round(shoe, f"{shoe}-{n}")
    return f"{shoe}-{ROUNDS}"


async def _journal(settings, tid: str, last_round: str) -> list[LedgerPosted]:  # type: ignore[no-untyped-def]
    """The table's LedgerPosted events on the topic, once the last round's settlements are posted."""
    for _ in range(300):
        envs = [r.env for r in await read_events(settings, tid, (T.PROJECTION_LEDGER,))]
        if any(isinstance(e.payload, LedgerPosted) and e.payload.round_id == last_round
               and e.payload.kind.startswith("bet_") for e in envs):
            await asyncio.sleep(0.5)  # the rest of that round's entries, in the same transaction or the next
            envs = [r.env for r in await read_events(settings, tid, (T.PROJECTION_LEDGER,))]
            return [e.payload for e in envs if isinstance(e.payload, LedgerPosted)]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{tid}: the ledger of {last_round} was never posted")


async def test_a_floors_journal_read_through_the_cursor_is_the_whole_journal(kafka_bootstrap: str):
    floor = Floor(kafka_bootstrap, projection=True)
    await floor.start()
    try:
        s = floor.settings
        tids = _tables(s.partitions)
        assert partition_of(tids[0], s.partitions) == partition_of(tids[1], s.partitions)
        cfgs = [punto_banco_full(), no_vig_dragon(panda=True), punto_banco_full()]
        last = await asyncio.gather(*(_play(floor, t, c) for t, c in zip(tids, cfgs)))
        journals = {t: await _journal(s, t, r) for t, r in zip(tids, last)}
        # the projection has folded every settlement it posted for (its state is what the API checks a table by)
        host = floor.services["projection"].host
        for _ in range(100):
            if all(t in host.runner.tables for t in tids):
                break
            await asyncio.sleep(0.1)
        api = create_api(host, TOKENS)
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://croupier") as client:
            cage = {"Authorization": f"Bearer {TOKENS['cage']}"}
            for tid in tids:
                want = journals[tid]
                assert len(want) > 8 * LIMIT  # many pages
                got: list[dict] = []
                cursor, pages = None, 0
                while True:
                    params = {"limit": str(LIMIT), **({"cursor": cursor} if cursor else {})}
                    r = await client.get(f"/tables/{tid}/ledger/journal", params=params, headers=cage)
                    assert r.status_code == 200, r.text
                    body = r.json()
                    pages += 1
                    got += body["entries"]
                    cursor = body["next_cursor"]
                    if not body["more"]:
                        break
                    assert len(body["entries"]) == LIMIT
                ids = [e["entry_id"] for e in got]
                after = [r.env.payload for r in await read_events(s, tid, (T.PROJECTION_LEDGER,))
                         if isinstance(r.env.payload, LedgerPosted)]
                assert [w.entry_id for w in after] == [w.entry_id for w in want], tid  # nothing posted since
                assert ids == [w.entry_id for w in want], tid  # in order, nothing missing
                assert len(set(ids)) == len(ids) and pages >= len(want) // LIMIT  # nothing twice
                assert sum(x["amount_cents"] for e in got for x in e["lines"]) == 0
                assert all(sum(x["amount_cents"] for x in e["lines"]) == 0 for e in got)
                assert [(e["kind"], e["round_id"], e["player_id"]) for e in got] == [
                    (w.kind, w.round_id, w.player_id) for w in want]
                # the last cursor reads nothing more (until something is posted), and stays usable
                r = await client.get(f"/tables/{tid}/ledger/journal", params={"cursor": cursor}, headers=cage)
                assert r.status_code == 200 and r.json()["entries"] == [] and not r.json()["more"]
            # a cursor of the other table on the same partition, and garbage: 422; the analyst: 403
            r = await client.get(f"/tables/{tids[0]}/ledger/journal", params={"cursor": cursor}, headers=cage)
            assert r.status_code == 422 and f"the cursor is for table {tids[2]!r}" in r.json()["detail"]
            r = await client.get(f"/tables/{tids[0]}/ledger/journal", params={"cursor": "abc"}, headers=cage)
            assert r.status_code == 422
            r = await client.get(f"/tables/{tids[0]}/ledger/journal",
                                 headers={"Authorization": f"Bearer {TOKENS['analyst']}"})
            assert r.status_code == 403
        settled = [r.env for t in tids for r in await read_events(s, t, (T.SETTLEMENT_EVENTS,))
                   if isinstance(r.env.payload, RoundSettled)]
        assert len(settled) == ROUNDS * len(tids)
    finally:
        await floor.stop()
