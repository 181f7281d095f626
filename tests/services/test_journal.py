"""`/tables/{id}/ledger/journal` on the in-memory bus: the cursor pages through a table's whole journal (every
entry of projection.ledger, not the projection's window), nothing twice, nothing missing; bad cursors are
422s; only the ledger roles may read it. The same against a real broker: tests/system/test_journal_kafka.py."""

from __future__ import annotations

import asyncio
import random

import pytest
from fastapi.testclient import TestClient

from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.events import LedgerPosted
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.api import create_api
from services.projection.core import ProjectionCore
from services.projection.journal import (
    MAX_SCAN,
    BadCursor,
    Collector,
    Cursor,
    RecordsJournal,
    decode_cursor,
    encode_cursor,
)
from services.projection.ledger_state import ENTRY_WINDOW
from tests.services.helpers import floor_bus

TOKENS = {"cage": "c" * 20, "pit": "p" * 20, "surveillance": "s" * 20, "analyst": "a" * 20, "dealer": "d" * 20}
SEATS = [Seat(i, f"player-{i}") for i in range(1, 6)]


@pytest.fixture(scope="module")
def played():
    """Two tables through a full shoe each (T1 well past the projection's window of entries)."""

    async def run():
        bus, _ = floor_bus(seed=5)
        proj = bus.add(ProjectionCore())
        io = MemoryFloorIO(bus)
        for tid, cfg in {"T1": punto_banco_full(), "T2": no_vig_dragon(panda=True)}.items():
            await TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock()).run(shoes=1)
        return bus, proj

    return asyncio.run(run())


def _auth(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[role]}"}


def _journal(bus, table_id: str) -> list[LedgerPosted]:  # type: ignore[no-untyped-def]
    envs = [decode_event(r.value) for r in bus.topics[T.PROJECTION_LEDGER]]
    return [e.payload for e in envs if e.table_id == table_id and isinstance(e.payload, LedgerPosted)]


def _client(bus, proj) -> TestClient:  # type: ignore[no-untyped-def]
    return TestClient(create_api(proj, TOKENS, journal=RecordsJournal(lambda t: list(bus.topics.get(t, [])))))


def _read_all(client: TestClient, table_id: str, limit: int) -> tuple[list[dict], int, str]:
    entries: list[dict] = []
    cursor, pages = None, 0
    while True:
        r = client.get(f"/tables/{table_id}/ledger/journal", params={"limit": limit, **({"cursor": cursor}
                                                                                       if cursor else {})},
                       headers=_auth("cage"))
        assert r.status_code == 200, r.text
        body = r.json()
        pages += 1
        assert body["table_id"] == table_id and len(body["entries"]) <= limit
        entries += body["entries"]
        cursor = body["next_cursor"]
        if not body["more"]:
            return entries, pages, cursor
        assert len(body["entries"]) == limit  # a page short of its limit is the last one (MAX_SCAN aside)


def test_the_cursor_pages_through_the_whole_journal(played):
    bus, proj = played
    client = _client(bus, proj)
    for tid in ("T1", "T2"):
        want = _journal(bus, tid)
        got, pages, _ = _read_all(client, tid, limit=37)
        assert [e["entry_id"] for e in got] == [w.entry_id for w in want]
        assert len({e["entry_id"] for e in got}) == len(got) and pages == -(-len(want) // 37)
        assert sum(x["amount_cents"] for e in got for x in e["lines"]) == 0
        assert all(sum(x["amount_cents"] for x in e["lines"]) == 0 for e in got)
        assert [e["seq"] for e in got] == sorted(e["seq"] for e in got)
        # the whole journal, beyond what the projection holds for /ledger/entries
        held = client.get(f"/tables/{tid}/ledger/entries?limit=10000", headers=_auth("cage"))
        if tid == "T1":
            assert int(held.headers["X-Ledger-Entries-Dropped"]) > 0 and len(held.json()) < len(got)
            assert len(got) > 2 * ENTRY_WINDOW
        # the journal's sums are the projection's running balances
        balances = client.get(f"/tables/{tid}/ledger", headers=_auth("pit")).json()["balances"]
        sums: dict[str, int] = {}
        for e in got:
            for x in e["lines"]:
                sums[x["account"]] = sums.get(x["account"], 0) + x["amount_cents"]
        assert {a: c for a, c in sums.items() if c} == {a: c for a, c in balances.items() if c}


def test_the_last_cursor_reads_what_is_posted_later_and_skips_a_redelivered_record(played):
    bus, proj = played
    records = list(bus.topics[T.PROJECTION_LEDGER])
    t2 = [r for r in records if decode_event(r.value).table_id == "T2"]
    upto = records.index(t2[-3])  # the log as it stood before T2's last 2 entries
    held = records[: upto]
    journal = RecordsJournal(lambda t: held if t == T.PROJECTION_LEDGER else [])
    client = TestClient(create_api(proj, TOKENS, journal=journal))
    got, _, cursor = _read_all(client, "T2", limit=50)
    assert [e["entry_id"] for e in got] == [w.entry_id for w in _journal(bus, "T2")][:-3]
    # later: the last 3 entries are posted, one of the already-read ones a second time before them
    held.append(type(t2[0])(t2[0].topic, 0, len(held), t2[0].key, t2[-4].value))
    held.extend(type(r)(r.topic, 0, len(held) + i, r.key, r.value) for i, r in enumerate(t2[-3:]))
    r = client.get("/tables/T2/ledger/journal", params={"cursor": cursor}, headers=_auth("surveillance"))
    assert r.status_code == 200 and not r.json()["more"]
    assert [e["entry_id"] for e in r.json()["entries"]] == [w.entry_id for w in _journal(bus, "T2")][-3:]


def test_bad_cursors_are_422(played):
    bus, proj = played
    client = _client(bus, proj)
    first = client.get("/tables/T1/ledger/journal?limit=5", headers=_auth("cage")).json()
    t1_cursor = first["next_cursor"]
    other = client.get("/tables/T2/ledger/journal?limit=5", headers=_auth("cage")).json()["next_cursor"]
    end = len(bus.topics[T.PROJECTION_LEDGER])
    cases = {
        "garbage": ("not-a-cursor!", "is not a cursor of this API"),
        "base64 of json, not a cursor": (encode_cursor(Cursor(v=1, table="T1", p=0, o=0)).replace("e", "f"), ""),
        "another table's": (other, "the cursor is for table 'T2', not 'T1'"),
        "past the end": (encode_cursor(Cursor(v=1, table="T1", p=0, o=end + 5)), "past the end"),
        "another partition": (encode_cursor(Cursor(v=1, table="T1", p=3, o=0)), "partition 3"),
        "another version": (encode_cursor(Cursor(v=9, table="T1", p=0, o=0)), "not a cursor of this API"),
    }
    for name, (cursor, message) in cases.items():
        r = client.get("/tables/T1/ledger/journal", params={"cursor": cursor}, headers=_auth("cage"))
        assert r.status_code == 422 and message in r.json()["detail"], (name, r.text)
    assert client.get("/tables/T1/ledger/journal", params={"cursor": t1_cursor},
                      headers=_auth("cage")).status_code == 200
    for limit in (0, 5001):
        assert client.get(f"/tables/T1/ledger/journal?limit={limit}", headers=_auth("cage")).status_code == 422
    assert client.get("/tables/T9/ledger/journal", headers=_auth("cage")).status_code == 404


def test_only_the_ledger_roles_read_the_journal(played):
    bus, proj = played
    client = _client(bus, proj)
    path = "/tables/T1/ledger/journal?limit=3"
    assert client.get(path).status_code == 401
    assert client.get(path, headers={"Authorization": "Bearer " + "x" * 20}).status_code == 401
    for role in TOKENS:
        r = client.get(path, headers=_auth(role))
        assert r.status_code == (200 if role in ("cage", "pit", "surveillance") else 403), role
    doc = client.get("/openapi.json").json()
    assert doc["paths"]["/tables/{table_id}/ledger/journal"]["get"]["security"] == [{"bearer": []}]


def test_cursor_codec_and_the_scan_bound():
    c = Cursor(v=1, table="bac-03", p=7, o=123_456_789, s=42)
    text = encode_cursor(c)
    assert decode_cursor(text, "bac-03") == c and "=" not in text and "bac-03" not in text
    with pytest.raises(BadCursor):
        decode_cursor(text, "bac-04")
    with pytest.raises(BadCursor):
        decode_cursor(encode_cursor(Cursor(v=1, table="bac-03", p=7, o=-1)), "bac-03")
    # a partition full of other tables' records: a page stops after MAX_SCAN records, and says there is more
    got = Collector("T1", Cursor(v=1, table="T1", p=0, o=0), limit=10)
    for off in range(MAX_SCAN + 10):
        if got.full:
            break
        got.add(off, b"T2", None)
    page = got.page(end=MAX_SCAN + 10)
    assert page.entries == [] and page.more and decode_cursor(page.next_cursor, "T1").o == MAX_SCAN
