"""Export: tables' events for analytics, as JSON lines or a single Parquet file with the payload as JSON.

Typed Parquet, one flat table per event type (``--format parquet``), is :mod:`croupier.parquet`; which
events an export takes (tables, shoe, gaming day, time), :mod:`croupier.selection`.

Pure over :class:`croupier.log.LogRecord` (an envelope with its Kafka topic, partition, offset and
timestamp), so it is testable without a broker:

* JSON lines: one object per event = the envelope exactly as encoded on the wire
  (:func:`contracts.codecs.encode`) plus ``topic``, ``partition``, ``offset``, ``kafka_timestamp_ms``.
  Each line decodes back with :func:`contracts.codecs.decode_event` (unknown fields are ignored).
* Parquet with the payload as JSON (``--format parquet-json``, needs ``pyarrow``): flat columns
  :data:`PARQUET_COLUMNS`; the payload as its wire JSON in ``payload_json``; ``occurred_at`` a UTC timestamp
  in microseconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

from contracts.codecs import encode

#: ``parquet``: a directory of typed tables, one per event type (:mod:`croupier.parquet`); ``parquet-json``:
#: one file of :data:`PARQUET_COLUMNS`, the payload as JSON text (the layout ``parquet`` had before)
FORMATS = ("jsonl", "parquet", "parquet-json")

PARQUET_COLUMNS = ("event_id", "stream", "table_id", "seq", "type", "occurred_at", "round_id", "shoe_id",
                   "causation_id", "correlation_id", "topic", "partition", "offset", "kafka_timestamp_ms",
                   "payload_json")


class PyarrowMissing(RuntimeError):
    """Parquet was asked for but pyarrow is not installed."""


def jsonl_line(rec: Any) -> bytes:
    """One record as a JSON line (no newline): the wire envelope plus where it sits in Kafka."""
    wire = encode(rec.env)
    assert wire.endswith(b"}")
    extra = (f',"topic":{json.dumps(rec.topic)},"partition":{int(rec.partition)},'
             f'"offset":{int(rec.offset)},"kafka_timestamp_ms":{int(rec.timestamp_ms)}}}')
    return wire[:-1] + extra.encode()


def jsonl_lines(records: Iterable[Any]) -> Iterator[bytes]:
    for rec in records:
        yield jsonl_line(rec) + b"\n"


def write_jsonl(records: Iterable[Any], out: IO[bytes]) -> int:
    """Write the records as JSON lines to a binary stream; returns how many were written."""
    n = 0
    for line in jsonl_lines(records):
        out.write(line)
        n += 1
    return n


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ImportError:
        raise PyarrowMissing("--format parquet needs pyarrow, which is not installed "
                             "(pip install 'pyarrow>=14'); --format jsonl works without it") from None
    return pa


def parquet_table(records: Iterable[Any]) -> Any:
    """The records as a :class:`pyarrow.Table` with :data:`PARQUET_COLUMNS`."""
    pa = _pyarrow()
    cols: dict[str, list[Any]] = {c: [] for c in PARQUET_COLUMNS}
    for rec in records:
        env = rec.env
        cols["event_id"].append(env.event_id)
        cols["stream"].append(env.stream)
        cols["table_id"].append(env.table_id)
        cols["seq"].append(env.seq)
        cols["type"].append(type(env.payload).__struct_config__.tag)
        cols["occurred_at"].append(env.occurred_at)
        cols["round_id"].append(env.round_id)
        cols["shoe_id"].append(env.shoe_id)
        cols["causation_id"].append(env.causation_id)
        cols["correlation_id"].append(env.correlation_id)
        cols["topic"].append(rec.topic)
        cols["partition"].append(rec.partition)
        cols["offset"].append(rec.offset)
        cols["kafka_timestamp_ms"].append(rec.timestamp_ms)
        cols["payload_json"].append(encode(env.payload).decode())
    schema = pa.schema([
        ("event_id", pa.string()), ("stream", pa.string()), ("table_id", pa.string()), ("seq", pa.int64()),
        ("type", pa.string()), ("occurred_at", pa.timestamp("us", tz="UTC")), ("round_id", pa.string()),
        ("shoe_id", pa.string()), ("causation_id", pa.string()), ("correlation_id", pa.string()),
        ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("kafka_timestamp_ms", pa.int64()), ("payload_json", pa.string()),
    ])
    return pa.table(cols, schema=schema)


def write_parquet(records: Iterable[Any], out: Any) -> int:
    """Write the records as Parquet to a path or binary stream; returns how many rows were written."""
    _pyarrow()
    import pyarrow.parquet as pq

    table = parquet_table(records)
    pq.write_table(table, out)
    return int(table.num_rows)


def default_path(table_id: str, fmt: str) -> str:
    """Where an export goes by default: ``<table>.jsonl``, ``<table>-parquet`` (a directory, ``parquet``),
    ``<table>.parquet`` (``parquet-json``); characters unsafe in a file name replaced by ``_``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in table_id).lstrip(".") or "table"
    return {"parquet": f"{safe}-parquet", "parquet-json": f"{safe}.parquet"}.get(fmt, f"{safe}.{fmt}")
