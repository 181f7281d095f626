"""The cage's events in the typed Parquet export: one table per cage event type, counts by denomination as
Arrow lists of structs, cents as int64, a gaming day as a date; DuckDB re-derives the shift statement's win
from the files alone, and every row reads back as the contract struct it was."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from contracts import topics as T
from contracts.cage import CAGE_EVENTS, BoughtIn, DropBoxCounted, ShiftOpened
from croupier import parquet as P
from croupier.log import LogRecord
from services.cage.statement import statements
from tests.cagefloor import shift_on_floor
from tests.services.helpers import events

pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")


async def _cage_log() -> list[LogRecord]:
    bus = await shift_on_floor("P1", seed=9, patrons=2)
    envs = events(bus, T.CAGE_EVENTS)
    return [LogRecord(T.CAGE_EVENTS, 0, i, 1_767_225_600_000 + i, e) for i, e in enumerate(envs)]


@pytest.fixture(scope="module")
def records() -> list[LogRecord]:
    return asyncio.run(_cage_log())


@pytest.fixture(scope="module")
def out(records, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("cage-export")
    P.write_directory(records, d)
    return d


def test_every_cage_event_type_is_a_typed_table(records, out):  # type: ignore[no-untyped-def]
    assert {tp.__name__ for tp in CAGE_EVENTS} <= set(P.EVENT_TYPES)
    want = Counter(type(r.env.payload).__name__ for r in records)
    assert {"ShiftOpened", "ShiftClosed", "FillRequested", "FillIssued", "FillReceived", "BoughtIn",
            "DropBoxRemoved", "DropBoxCounted", "CreditLineSet"} <= set(want)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.parquet" for n in want)
    types = {f.name: P.type_text(f.type) for f in P.event_schema(ShiftOpened)}
    assert types["chips"] == "list<struct<denomination_cents: int64, count: int64>>"
    assert types["total_cents"] == "int64" and types["gaming_day"] == "date32"
    assert {f.name: P.type_text(f.type) for f in P.event_schema(DropBoxCounted)}["counters"] == "list<string>"
    assert P.event_schema(BoughtIn).metadata[P.META_EVENT_TYPE] == b"BoughtIn"


def test_duckdb_re_derives_the_statement_from_the_files(records, out):  # type: ignore[no-untyped-def]
    (st,) = statements([r.env for r in records])
    def total(name: str, col: str = "total_cents") -> int:
        path = out / f"{name}.parquet"
        return duckdb.sql(f"select coalesce(sum({col}), 0) from '{path}'").fetchall()[0][0] if path.exists() else 0

    win = total("ShiftClosed") - total("ShiftOpened") + total("CreditHandedOver") - total("FillReceived") \
        + total("DropBoxCounted", "drop_cents")
    assert win == st.win == st.game_result and total("FillReceived") == st.fills > 0
    # the opener's chips by denomination add up to its total, in SQL
    assert duckdb.sql(f"select sum(c.denomination_cents * c.count), max(total_cents) from "
                      f"(select unnest(chips) as c, total_cents from '{out}/ShiftOpened.parquet')").fetchall() == [
        (st.opener, st.opener)]
    cash = sum(r.env.payload.amount_cents for r in records
               if isinstance(r.env.payload, BoughtIn) and r.env.payload.method == "cash")
    assert duckdb.sql(f"select sum(amount_cents) from '{out}/BoughtIn.parquet' where method = 'cash'").fetchall() \
        == [(cash,)] and cash >= 400_000


def test_rows_read_back_as_the_contract_structs(records, out):  # type: ignore[no-untyped-def]
    back = P.read_directory(out)
    got = sorted((r for rs in back.values() for r in rs), key=lambda r: r.offset)
    assert [r.env for r in got] == [r.env for r in records]


async def _marker_log() -> list[LogRecord]:
    """bob's markers at two tables, issued at ``CAGE`` and booked at each (the in-memory floor of
    ``tests/services/test_cage_credit.py``), as Kafka records."""
    from contracts.cage import CAGE_KEY, BuyIn, SetCreditLine
    from tests.services.test_cage_statement import Floor

    f = Floor()
    for table in ("T1", "T2"):
        await f.open_table(table, f"{table}-s1", 100_000, "pit-1", [(2, "bob")])
    f.cage(CAGE_KEY, SetCreditLine(player_id="bob", line_cents=50_000), "cashier-1")
    f.cage("T1", BuyIn(buy_in_id="M1", seat=2, player_id="bob", method="marker", amount_cents=30_000), "dealer-1")
    f.cage("T2", BuyIn(buy_in_id="M2", seat=2, player_id="bob", method="marker", amount_cents=20_000), "dealer-1")
    await f.bus.pump()
    envs = events(f.bus, T.CAGE_EVENTS)
    return [LogRecord(T.CAGE_EVENTS, 0, i, 1_767_225_600_000 + i, e) for i, e in enumerate(envs)]


def test_a_marker_issued_names_its_table_in_payload_table_id(tmp_path):  # type: ignore[no-untyped-def]
    """``MarkerIssued.table_id`` (the table the marker was drawn at) collides with the envelope's ``table_id``
    (``CAGE``, the key that decided it): ``payload_table_id``, the export's one rule for such a field (as
    ``payload_round_id``, ``payload_shoe_id``); no other cage event has a prefixed column. The files join a
    marker issued to the table's ``BoughtIn`` one to one, and read back as the contract structs."""
    from contracts.cage import MarkerIssued

    records = asyncio.run(_marker_log())
    P.write_directory(records, tmp_path)
    assert list(P.payload_columns(MarkerIssued))[0] == "payload_table_id"
    assert P.payload_columns(MarkerIssued)["payload_table_id"] == "table_id"
    prefixed = {tp.__name__: [c for c in P.payload_columns(tp) if c.startswith(P.PAYLOAD_PREFIX)]
                for tp in CAGE_EVENTS}
    assert {k: v for k, v in prefixed.items() if v} == {"MarkerIssued": ["payload_table_id"]}
    m, b = tmp_path / "MarkerIssued.parquet", tmp_path / "BoughtIn.parquet"
    assert duckdb.sql(f"select table_id, payload_table_id, buy_in_id, amount_cents from '{m}' order by all"
                      ).fetchall() == [("CAGE", "T1", "M1", 30_000), ("CAGE", "T2", "M2", 20_000)]
    joined = duckdb.sql(f"select b.table_id, b.buy_in_id, b.amount_cents = m.amount_cents from '{b}' b join '{m}' m "
                        f"on m.payload_table_id = b.table_id and m.buy_in_id = b.buy_in_id "
                        f"where b.method = 'marker' order by all").fetchall()
    assert joined == [("T1", "M1", True), ("T2", "M2", True)]
    back = [r.env for rs in P.read_directory(tmp_path).values() for r in rs if isinstance(r.env.payload, MarkerIssued)]
    assert sorted((e.table_id, e.payload.table_id) for e in back) == [("CAGE", "T1"), ("CAGE", "T2")]
