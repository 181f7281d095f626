"""Typed Parquet (one flat table per event type) and the export's filters, without a broker: the log of the
services on the in-memory bus written out, read back with DuckDB, pandas and into the contract structs;
the CLI's many-table and filtered exports and their usage errors."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import typing
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from contracts.codecs import decode_event
from contracts.events import (
    AnyEvent,
    BetPlaced,
    BetSettled,
    BettingClosed,
    LedgerPosted,
    RoundOpened,
    RoundSettled,
    TableOpened,
)
from croupier import parquet as P
from croupier import replay as replay_mod
from croupier.cli import app
from croupier.log import LogRecord
from croupier.selection import Selection, SelectionError, round_shoes, select
from services.projection.ledger import gaming_day
from tests.unit.test_replay_export import _floor

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def records() -> list[LogRecord]:
    return asyncio.run(_floor())


@pytest.fixture(scope="module")
def out(records, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("export")
    P.write_directory(records, d)
    return d


def _q(sql: str) -> list[tuple]:
    return duckdb.sql(sql).fetchall()


def _of(records, kind: type) -> list:
    return [r.env.payload for r in records if isinstance(r.env.payload, kind)]


# ---- DuckDB reads the export: real values, row counts per type -----------------------------------------------
def test_duckdb_reads_every_event_type_with_the_logs_counts(records, out):
    want = Counter(type(r.env.payload).__name__ for r in records)
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(f"{name}.parquet" for name in want)
    assert len(want) >= 20  # the whole story: shoe, dealing, wagering, settlement, ledger, alerts
    for name, n in want.items():
        assert _q(f"select count(*) from '{out}/{name}.parquet'") == [(n,)], name
    # one type per file, its tag in every row
    assert _q(f"select distinct type from '{out}/BetSettled.parquet'") == [("bet_settled",)]


def test_duckdb_sums_equal_the_logs(records, out):
    settled = _of(records, BetSettled)
    assert _q(f"select sum(payout), sum(stake), sum(commission), count(*) from '{out}/BetSettled.parquet'") == [
        (sum(s.payout for s in settled), sum(s.stake for s in settled), sum(s.commission for s in settled),
         len(settled))]
    assert sum(s.payout for s in settled) > 1_000_000  # real money went through
    # per table and result, grouped by DuckDB, equal to the log's
    got = {(t, r): p for t, r, p in _q(
        f"select table_id, result, sum(payout) from '{out}/BetSettled.parquet' group by all")}
    want: Counter = Counter()
    for rec in records:
        if isinstance(rec.env.payload, BetSettled):
            want[(rec.env.table_id, rec.env.payload.result)] += rec.env.payload.payout
    assert got == dict(want)
    # the house's result: stakes - payouts + commission accrued, RoundSettled's table_result
    rs = _of(records, RoundSettled)
    assert _q(f"select sum(table_result) from '{out}/RoundSettled.parquet'") == [(sum(x.table_result for x in rs),)]


def test_nested_columns_are_arrow_lists_structs_and_maps(records, out):
    # a bet book is a list of structs: unnest it
    books = _of(records, BettingClosed)
    assert _q(f"select count(*), sum(b.amount_cents) from (select unnest(bets) as b "
              f"from '{out}/BettingClosed.parquet')") == [
        (sum(len(x.bets) for x in books), sum(b.amount_cents for x in books for b in x.bets))]
    placed = _of(records, BetPlaced)
    assert sum(b.amount_cents for x in books for b in x.bets) == sum(p.amount_cents for p in placed)
    # every journal entry balances: the lines (a list of structs) sum to 0, entry by entry
    entries = _of(records, LedgerPosted)
    assert _q(f"select count(*), count(*) filter (where s <> 0) from (select entry_id, sum(l.amount_cents) as s "
              f"from (select entry_id, unnest(lines) as l from '{out}/LedgerPosted.parquet') group by entry_id)") == [
        (len(entries), 0)]
    assert _q(f"select sum(l.amount_cents), count(*) from (select unnest(lines) as l "
              f"from '{out}/LedgerPosted.parquet')") == [(0, sum(len(e.lines) for e in entries))]
    # a table's configuration is a struct with a nested struct and maps
    cfg = {r.env.table_id: r.env.payload.config for r in records if isinstance(r.env.payload, TableOpened)}
    rows = _q(f"select table_id, config.shoe.decks, config.wagers, config.limits['tie'].max_cents "
              f"from '{out}/TableOpened.parquet' order by table_id")
    assert [(t, d, sorted(w)) for t, d, w, _ in rows] == [
        (t, cfg[t].shoe.decks, sorted(cfg[t].wagers)) for t in sorted(cfg)]
    assert {t: m for t, _, _, m in rows}["T2"] == cfg["T2"].limits["tie"].max_cents == 10_000


def test_column_types(out):
    s = pq.read_schema(out / "BetSettled.parquet")
    ts = pa.timestamp("us", tz="UTC")
    assert (s.field("seq").type, s.field("payout").type, s.field("stake").type, s.field("seat").type) == (
        pa.int64(), pa.int64(), pa.int64(), pa.int64())
    assert (s.field("occurred_at").type, s.field("claimed_at").type) == (ts, ts)
    assert s.field("kafka_timestamp").type == pa.timestamp("ms", tz="UTC")
    assert s.field("commission_accrued").type == pa.bool_()
    assert not s.field("payout").nullable and s.field("round_id").nullable  # the envelope's is optional
    assert s.field("payload_round_id").type == pa.string() and not s.field("payload_round_id").nullable
    assert s.metadata[b"croupier.event_type"] == b"BetSettled"
    led = pq.read_schema(out / "LedgerPosted.parquet").field("lines").type
    assert led == pa.list_(pa.field("item", pa.struct([pa.field("account", pa.string(), nullable=False),
                                                       pa.field("amount_cents", pa.int64(), nullable=False)]),
                                    nullable=False))
    cfg = pq.read_schema(out / "TableOpened.parquet").field("config").type
    assert cfg.field("pay").type == pa.map_(pa.string(), pa.field("value", pa.string(), nullable=False))
    assert cfg.field("shoe").type.field("decks").type == pa.int64()
    for p in out.iterdir():  # no JSON text anywhere
        assert "payload_json" not in pq.read_schema(p).names


def test_pandas_reads_typed_columns(records, out):
    import pandas as pd

    df = pd.read_parquet(out / "BetSettled.parquet")
    assert str(df["payout"].dtype) == "int64" and str(df["occurred_at"].dtype) == "datetime64[us, UTC]"
    assert int(df["payout"].sum()) == sum(s.payout for s in _of(records, BetSettled))
    assert len(df) == len(_of(records, BetSettled))


# ---- the columns are the contracts' --------------------------------------------------------------------------
def _json_kind(prop: dict, defs: dict) -> str:
    if "$ref" in prop:
        return _json_kind(defs[prop["$ref"].split("/")[-1]], defs)
    if "anyOf" in prop:
        kinds = {_json_kind(p, defs) for p in prop["anyOf"]} - {"null"}
        assert len(kinds) == 1, prop
        return kinds.pop()
    t = prop.get("type")
    if t is None and "enum" in prop:
        t = {str: "string", int: "integer"}[type(prop["enum"][0])]
    if t == "object":
        return "struct" if "properties" in prop else "map"
    return {"integer": "int64", "string": "string", "boolean": "bool", "number": "double", "array": "list",
            "null": "null"}[t]


def _arrow_kind(t) -> str:  # type: ignore[no-untyped-def]
    for kind, test in (("timestamp", pa.types.is_timestamp), ("int64", pa.types.is_int64),
                       ("string", pa.types.is_string), ("bool", pa.types.is_boolean),
                       ("double", pa.types.is_float64), ("list", pa.types.is_list), ("struct", pa.types.is_struct),
                       ("map", pa.types.is_map), ("binary", pa.types.is_binary), ("date", pa.types.is_date32)):
        if test(t):
            return kind
    raise AssertionError(t)


@pytest.mark.parametrize("event_type", typing.get_args(AnyEvent), ids=lambda t: t.__name__)
def test_each_event_types_columns_follow_its_json_schema(event_type):
    tag = event_type.__struct_config__.tag
    doc = json.loads((ROOT / "docs" / "schema" / "events" / f"{tag}.json").read_text())
    defs = doc["$defs"]
    envelope = defs[next(k for k in defs if k.endswith("Envelope"))]
    payload = defs[event_type.__name__]
    schema = P.event_schema(event_type)
    expected: dict[str, str] = {}
    for name, prop in envelope["properties"].items():
        if name != "payload":
            expected[name] = _json_kind(prop, defs)
    for name, prop in payload["properties"].items():
        if name != "type":
            expected[P.PAYLOAD_PREFIX + name if name in expected else name] = _json_kind(prop, defs)
    got = {f.name: _arrow_kind(f.type) for f in schema if f.name not in (*P.LOCATION_COLUMNS, "type")}
    # times are strings in JSON (RFC 3339) and timestamps in Arrow; bytes base64 strings and binary; a
    # gaming day a YYYY-MM-DD string and a date
    assert got == {k: (got[k] if v == "string" and got.get(k) in ("timestamp", "binary", "date") else v)
                   for k, v in expected.items()}
    assert {k for k, v in got.items() if v == "timestamp"} >= {"occurred_at", "claimed_at"}
    assert [f.name for f in schema][: len(P.ENVELOPE_COLUMNS)] == list(P.ENVELOPE_COLUMNS)


# ---- round trip: log -> Parquet -> the contract structs ------------------------------------------------------
def test_round_trip_from_the_log_to_parquet_and_back(records, out):
    back = P.read_directory(out)
    by_type = P.group_by_type(records)
    assert set(back) == {t.__name__ for t in by_type}
    for event_type, recs in by_type.items():
        got = back[event_type.__name__]
        assert got == recs, event_type.__name__  # LogRecord: Kafka location, timestamp and the Envelope struct
        assert all(type(r.env.payload) is event_type for r in got)
    # and each decoded envelope still encodes to the wire bytes the log had
    from contracts.codecs import encode

    assert sorted(encode(r.env) for rs in back.values() for r in rs) == sorted(encode(r.env) for r in records)


def test_round_trip_of_every_golden_event(tmp_path):
    """Every event type, including those this floor's log lacks (odds, vault records, irregularities)."""
    goldens = sorted((ROOT / "contracts" / "golden" / "v1").glob("event.*.json"))
    recs = [LogRecord("t", 3, i, 1_700_000_000_123 + i, decode_event(p.read_bytes())) for i, p in enumerate(goldens)]
    kinds = {type(r.env.payload) for r in recs}
    assert kinds == set(typing.get_args(AnyEvent))
    counts = P.write_directory(recs, tmp_path)
    assert sum(counts.values()) == len(recs)
    back = P.read_directory(tmp_path)
    assert sorted((r for rs in back.values() for r in rs), key=lambda r: r.offset) == recs


def test_a_value_beyond_int64_is_a_clear_error(records):
    rec = next(r for r in records if isinstance(r.env.payload, RoundSettled))
    big = LogRecord(rec.topic, rec.partition, rec.offset, rec.timestamp_ms,
                    msgspec.structs.replace(rec.env, payload=msgspec.structs.replace(rec.env.payload,
                                                                                     stakes=2**63)))
    with pytest.raises(P.ParquetError, match="RoundSettled: a value does not fit"):
        P.arrow_table(RoundSettled, [big])
    with pytest.raises(P.ParquetError, match="not a typed croupier export"):
        P.records_of(pa.table({"x": [1]}))


# ---- selection: shoe, gaming day, time -----------------------------------------------------------------------
def test_a_shoe_takes_its_rounds_events_even_those_naming_no_shoe(records):
    t2 = select(records, Selection(tables=("T2",), shoe_id="S"))
    rounds = {p.round_id for p in _of(t2, RoundOpened)}
    assert rounds == {"S-1", "S-2", "S-3"}
    settled = _of(t2, BetSettled)
    assert settled and {s.round_id for s in settled} == {"S-1", "S-2", "S-3"}
    assert len(settled) == len([p for r in records if r.env.table_id == "T2" for p in [r.env.payload]
                                if isinstance(p, BetSettled)])
    # the table's configuration and seat registrations belong to no shoe; everything else of T2 does
    left = {type(r.env.payload).__name__ for r in records if r.env.table_id == "T2" and r not in t2}
    assert left == {"TableOpened", "PlayerSeated"}
    assert round_shoes(records)[("T1", "T1-shoe-1-round-3")] == "T1-shoe-1"
    assert select(records, Selection(shoe_id="nope")) == []


def test_time_window_and_gaming_day_use_occurred_at(records):
    t2 = [r for r in records if r.env.table_id == "T2"]
    times = sorted({r.env.occurred_at for r in t2})
    since, until = times[3], times[10]
    got = select(records, Selection(tables=("T2",), since=since, until=until))
    assert got and all(since <= r.env.occurred_at < until for r in got)
    assert len(got) == sum(1 for r in t2 if since <= r.env.occurred_at < until)
    # T1's clock starts 2026-01-01 00:00, before the 06:00 cutoff: the previous gaming day; T2's on 2026-01-02
    days = Counter(gaming_day(r.env.occurred_at) for r in records)
    assert set(days) == {"2025-12-31", "2026-01-01"}
    assert len(select(records, Selection(gaming_day="2025-12-31"))) == days["2025-12-31"]
    assert {r.env.table_id for r in select(records, Selection(gaming_day="2026-01-01"))} == {"T2"}
    with pytest.raises(SelectionError, match="YYYY-MM-DD"):
        Selection(gaming_day="2026-1-2")
    with pytest.raises(SelectionError, match="must be before"):
        Selection(since=until, until=since)


# ---- the CLI -------------------------------------------------------------------------------------------------
runner = CliRunner()


@pytest.fixture
def fake_kafka(monkeypatch, records):
    async def read_table(settings, table_id, **_):  # type: ignore[no-untyped-def]
        return [r for r in records if r.env.table_id == table_id]

    async def read_floor(settings, **_):  # type: ignore[no-untyped-def]
        return list(records)

    async def known_tables(settings, **_):  # type: ignore[no-untyped-def]
        return ["T1", "T2"]

    monkeypatch.setattr(replay_mod, "read_table", read_table)
    monkeypatch.setattr(replay_mod, "read_floor", read_floor)
    monkeypatch.setattr(replay_mod, "known_tables", known_tables)


def _error(r, code: int, message: str) -> None:  # type: ignore[no-untyped-def]
    assert r.exit_code == code, (r.exit_code, r.output)
    err = r.stderr.strip()
    assert err.startswith("error:") and "\n" not in err and message in err, err


def test_cli_exports_every_table_as_typed_parquet(fake_kafka, records, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["export", "--format", "parquet"])
    assert r.exit_code == 0, r.output
    settled = _of(records, BetSettled)
    assert r.stdout.startswith(f"exported {len(records)} events of 2 table(s) to floor-parquet (parquet): ")
    assert f"BetSettled {len(settled)}" in r.stdout
    assert _q("select count(distinct table_id), sum(payout) from 'floor-parquet/BetSettled.parquet'") == [
        (2, sum(s.payout for s in settled))]
    # again into the same directory: refused without --overwrite, replaced with it
    _error(runner.invoke(app, ["export", "--format", "parquet"]), 2, "already holds an export")
    r = runner.invoke(app, ["export", "--format", "parquet", "--table", "T2", "--out", "floor-parquet",
                            "--overwrite"])
    assert r.exit_code == 0, r.output
    t2 = [x for x in records if x.env.table_id == "T2"]
    assert sum(len(v) for v in P.read_directory("floor-parquet").values()) == len(t2)
    assert not (tmp_path / "floor-parquet" / "ShoeFinished.parquet").exists()  # T1's alone: gone


def test_cli_several_tables_and_filters(fake_kafka, records, tmp_path):
    out = tmp_path / "f.jsonl"
    r = runner.invoke(app, ["export", "--format", "jsonl", "--table", "T2", "--table", "T1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    envs = [decode_event(x) for x in out.read_bytes().splitlines()]
    assert envs == [x.env for x in records if x.env.table_id == "T2"] + [x.env for x in records
                                                                          if x.env.table_id == "T1"]
    assert r.stdout.startswith(f"exported {len(envs)} events of tables T2, T1 to {out} (jsonl)")
    # a shoe and a time window together
    t2 = [x for x in records if x.env.table_id == "T2"]
    since = min(x.env.occurred_at for x in t2 if isinstance(x.env.payload, RoundOpened)
                and x.env.payload.round_id == "S-2")
    r = runner.invoke(app, ["export", "--format", "parquet", "--table", "T2", "--shoe", "S",
                            "--since", since.isoformat(), "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    want = select(records, Selection(tables=("T2",), shoe_id="S", since=since))
    assert f"(shoe S, occurred_at >= {since.isoformat()})" in r.stdout
    assert _q(f"select round_id, count(*) from '{tmp_path}/s/BetSettled.parquet' group by all order by 1") == [
        (rid, sum(1 for x in want if isinstance(x.env.payload, BetSettled) and x.env.payload.round_id == rid))
        for rid in ("S-2", "S-3")]
    # a gaming day, until a time: UTC without an offset
    r = runner.invoke(app, ["export", "--format", "jsonl", "--gaming-day", "2026-01-01", "--until",
                            "2026-01-02T00:00:00.5", "--out", str(out)])
    assert r.exit_code == 0, r.output
    until = datetime(2026, 1, 2, 0, 0, 0, 500_000, tzinfo=UTC)
    want = [x.env for x in records if gaming_day(x.env.occurred_at) == "2026-01-01" and x.env.occurred_at < until]
    assert [decode_event(x) for x in out.read_bytes().splitlines()] == want and want


@pytest.mark.parametrize("args,code,message", [
    (["--format", "parquet", "--out", "-"], 2, "writes a directory"),
    (["--format", "jsonl", "--gaming-day", "01/02/2026"], 2, "--gaming-day must be a date YYYY-MM-DD"),
    (["--format", "jsonl", "--since", "yesterday"], 2, "cannot read 'yesterday' as a time"),
    (["--format", "jsonl", "--since", "2026-01-02", "--until", "2026-01-01"], 2, "must be before --until"),
    (["--format", "jsonl", "--table", "T1", "--shoe", "S9"], 2, "unknown shoe 'S9' at table T1: 1 shoe(s): T1-shoe-1"),
    (["--format", "jsonl", "--table", "T1", "--table", "T7"], 2, "no events for table 'T7'"),
    (["--format", "xml"], 2, "unknown format 'xml'"),
])
def test_cli_export_usage_errors_exit_2(fake_kafka, args, code, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _error(runner.invoke(app, ["export", *args]), code, message)


def test_cli_export_every_table_of_an_unreachable_broker_exits_1():
    r = runner.invoke(app, ["export", "--format", "jsonl", "--out", "-", "--bootstrap", "127.0.0.1:1",
                            "--prefix", "nowhere."])
    _error(r, 1, "cannot reach Kafka at 127.0.0.1:1")


def test_a_file_where_the_directory_should_be(fake_kafka, tmp_path):
    f = tmp_path / "x.parquet"
    f.write_bytes(b"")
    _error(runner.invoke(app, ["export", "--format", "parquet", "--table", "T1", "--out", str(f)]), 2,
           "is a file")


# ---- issue 28, item 9: the shoe of every round's event, a gaming day a date, "none" a null -----------------
def test_the_rounds_events_name_their_shoe_and_the_ledgers_day_is_a_date(records, out):
    shoes = {r.env.payload.round_id: r.env.payload.shoe_id for r in records
             if type(r.env.payload).__name__ == "RoundOpened"}
    for kind in ("BetPlaced", "BetSettled", "RoundSettled", "LedgerPosted"):
        rows = _q(f"select round_id, shoe_id from '{out / (kind + '.parquet')}' where round_id is not null")
        assert rows and all(shoe == shoes[rnd] for rnd, shoe in rows), kind
    s = pq.read_schema(out / "LedgerPosted.parquet")
    assert s.field("gaming_day").type == pa.date32() and not s.field("gaming_day").nullable
    assert s.field("payload_shoe_id").nullable and s.field("payload_round_id").nullable
    f = out / "LedgerPosted.parquet"
    assert _q(f"select count(*) from '{f}' where payload_shoe_id = '' or payload_round_id = ''") == [(0,)]
    posted = _of(records, LedgerPosted)
    # an entry of no shoe ("" in the contract) is a null, and reads back as ""
    rec = next(r for r in records if isinstance(r.env.payload, LedgerPosted))
    none = dataclasses.replace(rec, env=msgspec.structs.replace(
        rec.env, payload=msgspec.structs.replace(rec.env.payload, shoe_id="", round_id="")))
    table = P.arrow_table(LedgerPosted, [none])
    assert table.column("payload_shoe_id").to_pylist() == [None] == table.column("payload_round_id").to_pylist()
    assert P.records_of(table) == [none]
    days = _q(f"select distinct gaming_day from '{f}' order by 1")
    assert [d.isoformat() for (d,) in days] == sorted({p.gaming_day for p in posted})
