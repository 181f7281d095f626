"""Typed Parquet of the event log: one flat table per event type, its columns from the contracts.

``croupier export --format parquet --out DIR`` writes ``DIR/<EventType>.parquet`` (e.g.
``DIR/BetSettled.parquet``), one file per event type present in the export, one row per event. The columns
of every file, in this order:

* the envelope (:class:`contracts.envelope.Envelope`): ``event_id``, ``stream``, ``table_id``, ``seq``,
  ``causation_id``, ``correlation_id``, ``occurred_at``, ``schema``, ``round_id``, ``shoe_id``,
  ``claimed_at``, ``principal``, ``actor``;
* ``type``: the event's tag (``bet_settled``), the same in every row of a file;
* where the record sits in Kafka: ``kafka_topic``, ``kafka_partition`` (int32), ``kafka_offset``,
  ``kafka_timestamp`` (the record's own Kafka timestamp, ms, UTC: when it was written, which for a reaction
  published later is after ``occurred_at``);
* the payload's fields, in the contract's order, under their own names; a payload field whose name is an
  envelope column (``round_id``, ``shoe_id``; ``MarkerIssued.table_id``, the table a marker was drawn at, whose
  envelope ``table_id`` is ``CAGE``) is ``payload_<name>``: one rule for every event type. Where the contract writes "none" as
  ``""`` (an id field ``round_id`` / ``shoe_id`` whose default is ``""``, e.g. ``LedgerPosted.shoe_id``) the
  column is nullable and "none" is null; a ``gaming_day`` (``YYYY-MM-DD``) is an Arrow ``date32``. Both read
  back as the contract's text.

Types come from the msgspec types of :mod:`contracts.events` (the same types the JSON Schemas of
``docs/schema/events`` are generated from): ``int`` is int64 (cents, seats, counts, seq), ``float``
float64, ``bool`` bool, ``str`` string, ``datetime`` a UTC timestamp in microseconds, ``bytes`` binary,
``X | None`` a nullable X (every other column is non-nullable), a list an Arrow list, a nested struct
(``TableSpec``, ``BetLine``, ``LedgerLine``, ``WagerOdds``) an Arrow struct, a dict (``pay``, ``limits``,
``counts``) an Arrow map. Each file's schema metadata names its event type (``croupier.event_type``) and
the envelope schema version. :func:`read_records` turns the rows back into the contract structs.

Needs ``pyarrow`` (a dependency of the package); DuckDB and pandas read the files as they are.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi

from contracts.envelope import SCHEMA_VERSION, Envelope
from contracts.events import AnyEvent
from croupier.log import LogRecord

#: every event type by class name and by tag
EVENT_TYPES: dict[str, type] = {tp.__name__: tp for tp in typing.get_args(AnyEvent)}
TYPE_OF_TAG: dict[str, type] = {tp.__struct_config__.tag: tp for tp in EVENT_TYPES.values()}

#: the envelope's fields (its payload aside), in the contract's order
ENVELOPE_COLUMNS: tuple[str, ...] = tuple(f for f in Envelope.__struct_fields__ if f != "payload")
#: where the record sits in Kafka
LOCATION_COLUMNS = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")
#: the prefix of a payload field whose name is an envelope column
PAYLOAD_PREFIX = "payload_"
SUFFIX = ".parquet"
META_EVENT_TYPE = b"croupier.event_type"
META_SCHEMA = b"croupier.schema_version"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ParquetError(ValueError):
    """A value or file that does not fit the typed layout (a type this module cannot map, an int beyond
    int64, a file that is not one of ours)."""


def _pa() -> Any:
    import pyarrow as pa

    return pa


def _unwrap(info: Any) -> Any:
    while isinstance(info, mi.Metadata):
        info = info.type
    return info


def _optional(info: Any) -> tuple[Any, bool]:
    """``(type, nullable)``: ``X | None`` is a nullable ``X``."""
    info = _unwrap(info)
    if isinstance(info, mi.UnionType):
        rest = [t for t in info.types if not isinstance(_unwrap(t), mi.NoneType)]
        if len(rest) == 1 and len(rest) < len(info.types):
            return _unwrap(rest[0]), True
    return info, False


def arrow_type(info: Any) -> Any:
    """The Arrow type of a msgspec type (:mod:`msgspec.inspect` info). Raises :class:`ParquetError` for a
    type with no typed mapping here (a union of several types, an untyped value)."""
    pa = _pa()
    info, _ = _optional(info)
    if isinstance(info, mi.StrType):
        return pa.string()
    if isinstance(info, mi.BoolType):
        return pa.bool_()
    if isinstance(info, mi.IntType):
        return pa.int64()
    if isinstance(info, mi.FloatType):
        return pa.float64()
    if isinstance(info, mi.DateTimeType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(info, (mi.BytesType, mi.ByteArrayType)):
        return pa.binary()
    if isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return pa.list_(pa.field("item", arrow_type(info.item_type), nullable=_optional(info.item_type)[1]))
    if isinstance(info, mi.DictType):
        return pa.map_(arrow_type(info.key_type), pa.field("value", arrow_type(info.value_type),
                                                            nullable=_optional(info.value_type)[1]))
    if isinstance(info, mi.StructType):
        return pa.struct([_field(f.name, f.type) for f in info.fields])
    if isinstance(info, mi.EnumType):
        return pa.string() if all(isinstance(m.value, str) for m in info.cls) else pa.int64()
    if isinstance(info, mi.LiteralType):
        return pa.string() if all(isinstance(v, str) for v in info.values) else pa.int64()
    raise ParquetError(f"no typed Parquet column for {info!r}")


def _field(name: str, info: Any) -> Any:
    _, nullable = _optional(info)
    return _pa().field(name, arrow_type(info), nullable=nullable)


#: payload id fields whose contract default ``""`` means "none": a nullable column, "" written as null
EMPTY_AS_NULL = ("round_id", "shoe_id")
#: payload fields holding a calendar date as ``YYYY-MM-DD`` text: an Arrow date32 column
DATE_FIELDS = ("gaming_day",)


def _payload_kind(field: Any) -> str:
    """``"date"``, ``"empty_null"`` or ``""`` (as the contract types it) of a payload field's column."""
    if field.name in DATE_FIELDS and isinstance(_unwrap(field.type), mi.StrType):
        return "date"
    if field.name in EMPTY_AS_NULL and field.default == "":
        return "empty_null"
    return ""


def _payload_field(col: str, field: Any) -> Any:
    pa = _pa()
    kind = _payload_kind(field)
    if kind == "date":
        return pa.field(col, pa.date32(), nullable=False)
    if kind == "empty_null":
        return pa.field(col, pa.string(), nullable=True)
    return _field(col, field.type)


def _to_column(kind: str, value: Any) -> Any:
    if kind == "date":
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ParquetError(f"gaming_day {value!r} is not a date YYYY-MM-DD") from None
    if kind == "empty_null":
        return value or None
    return value


def _from_column(kind: str, value: Any) -> Any:
    if kind == "date":
        return value.isoformat() if value is not None else value
    if kind == "empty_null":
        return "" if value is None else value
    return value


def payload_columns(event_type: type) -> dict[str, str]:
    """``{column: payload field}`` of an event type, in the contract's order (envelope names prefixed)."""
    taken = {*ENVELOPE_COLUMNS, *LOCATION_COLUMNS, "type"}
    return {(PAYLOAD_PREFIX + f if f in taken else f): f for f in event_type.__struct_fields__}


_ENVELOPE_INFO = {f.name: f.type for f in mi.type_info(Envelope).fields}
_SCHEMAS: dict[type, Any] = {}


def event_schema(event_type: type) -> Any:
    """The :class:`pyarrow.Schema` of an event type's file (columns as the module docstring lists them)."""
    if event_type in _SCHEMAS:
        return _SCHEMAS[event_type]
    pa = _pa()
    if event_type not in EVENT_TYPES.values():
        raise ParquetError(f"{event_type!r} is not an event of contracts.events")
    fields = [_field(name, _ENVELOPE_INFO[name]) for name in ENVELOPE_COLUMNS]
    fields += [pa.field("type", pa.string(), nullable=False),
               pa.field("kafka_topic", pa.string(), nullable=False),
               pa.field("kafka_partition", pa.int32(), nullable=False),
               pa.field("kafka_offset", pa.int64(), nullable=False),
               pa.field("kafka_timestamp", pa.timestamp("ms", tz="UTC"), nullable=False)]
    info = {f.name: f for f in mi.type_info(event_type).fields}
    fields += [_payload_field(col, info[name]) for col, name in payload_columns(event_type).items()]
    schema = pa.schema(fields, metadata={META_EVENT_TYPE: event_type.__name__.encode(),
                                         META_SCHEMA: str(SCHEMA_VERSION).encode()})
    _SCHEMAS[event_type] = schema
    return schema


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value, builtin_types=(datetime, bytes, bytearray))


def arrow_table(event_type: type, records: Iterable[LogRecord]) -> Any:
    """The records (all of ``event_type``) as a :class:`pyarrow.Table` of :func:`event_schema`. Raises
    :class:`ParquetError` for a record of another type or a value that does not fit its column."""
    pa = _pa()
    schema = event_schema(event_type)
    cols: dict[str, list[Any]] = {name: [] for name in schema.names}
    tag = event_type.__struct_config__.tag
    pcols = payload_columns(event_type)
    kinds = {f.name: _payload_kind(f) for f in mi.type_info(event_type).fields}
    for rec in records:
        env = rec.env
        if type(env.payload) is not event_type:
            raise ParquetError(f"a {type(env.payload).__name__} among the {event_type.__name__} rows")
        for name in ENVELOPE_COLUMNS:
            cols[name].append(getattr(env, name))
        cols["type"].append(tag)
        cols["kafka_topic"].append(rec.topic)
        cols["kafka_partition"].append(rec.partition)
        cols["kafka_offset"].append(rec.offset)
        cols["kafka_timestamp"].append(rec.timestamp_ms)
        for col, name in pcols.items():
            cols[col].append(_to_column(kinds[name], _builtins(getattr(env.payload, name))))
    try:
        return pa.table(cols, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        raise ParquetError(f"{event_type.__name__}: a value does not fit its column: {e}") from None


def group_by_type(records: Iterable[LogRecord]) -> dict[type, list[LogRecord]]:
    """The records by event type, each type's in the order given, types in the contracts' order."""
    groups: dict[type, list[LogRecord]] = {}
    for rec in records:
        groups.setdefault(type(rec.env.payload), []).append(rec)
    order = list(EVENT_TYPES.values())
    return dict(sorted(groups.items(), key=lambda kv: order.index(kv[0])))


def file_name(event_type: type) -> str:
    """``BetSettled.parquet``."""
    return event_type.__name__ + SUFFIX


def owned_files(directory: str | Path) -> list[Path]:
    """The files of ``directory`` named after an event type (what :func:`write_directory` writes)."""
    d = Path(directory)
    return sorted(p for p in d.glob("*" + SUFFIX) if p.name[: -len(SUFFIX)] in EVENT_TYPES) if d.is_dir() else []


def write_directory(records: Iterable[LogRecord], directory: str | Path) -> dict[str, int]:
    """Write one ``<EventType>.parquet`` per event type present in ``records`` into ``directory`` (created
    if missing; a file of the same name is replaced, other files are left alone). Returns ``{event type
    name: rows}`` in the contracts' order. Raises :class:`ParquetError` (a value that does not fit) and
    ``OSError``."""
    import pyarrow.parquet as pq

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for event_type, recs in group_by_type(records).items():
        table = arrow_table(event_type, recs)
        pq.write_table(table, d / file_name(event_type))
        counts[event_type.__name__] = table.num_rows
    return counts


def _from_arrow(info: Any, value: Any) -> Any:
    """A value as :meth:`pyarrow.Table.to_pylist` gives it, back in the shape msgspec converts (maps from
    their ``(key, value)`` pairs to dicts, nested all the way down)."""
    info, _ = _optional(info)
    if value is None:
        return None
    if isinstance(info, mi.DictType):
        return {_from_arrow(info.key_type, k): _from_arrow(info.value_type, v) for k, v in value}
    if isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return [_from_arrow(info.item_type, v) for v in value]
    if isinstance(info, mi.StructType):
        return {f.name: _from_arrow(f.type, value[f.name]) for f in info.fields if f.name in value}
    return value


def records_of(table: Any, event_type: type | None = None) -> list[LogRecord]:
    """The rows of a typed table back as :class:`croupier.log.LogRecord` s of contract structs
    (``event_type`` from the table's metadata when not given). Raises :class:`ParquetError` for a table
    that is not one of ours or a row that does not convert (msgspec's message names the field)."""
    meta = table.schema.metadata or {}
    if event_type is None:
        name = meta.get(META_EVENT_TYPE, b"").decode()
        event_type = EVENT_TYPES.get(name)
        if event_type is None:
            raise ParquetError(f"not a typed croupier export (event type {name!r} in the schema metadata)")
    fields = mi.type_info(event_type).fields
    info = {f.name: f.type for f in fields}
    kinds = {f.name: _payload_kind(f) for f in fields}
    pcols = payload_columns(event_type)
    missing = [c for c in (*ENVELOPE_COLUMNS, *LOCATION_COLUMNS, *pcols) if c not in table.column_names]
    if missing:
        raise ParquetError(f"{event_type.__name__}: columns missing: {', '.join(missing)}")
    tag = event_type.__struct_config__.tag
    out = []
    for row in table.to_pylist():
        payload = {"type": tag, **{name: _from_column(kinds[name], _from_arrow(info[name], row[col]))
                                   for col, name in pcols.items()}}
        env = {name: row[name] for name in ENVELOPE_COLUMNS if row[name] is not None}
        try:
            envelope = msgspec.convert({**env, "payload": payload}, Envelope)
        except msgspec.ValidationError as e:
            raise ParquetError(f"{event_type.__name__} row at offset {row['kafka_offset']}: {e}") from None
        ms = (row["kafka_timestamp"] - _EPOCH) // timedelta(milliseconds=1)
        out.append(LogRecord(row["kafka_topic"], row["kafka_partition"], row["kafka_offset"], ms, envelope))
    return out


def read_file(path: str | Path) -> list[LogRecord]:
    """One ``<EventType>.parquet`` back as log records (see :func:`records_of`)."""
    import pyarrow.parquet as pq

    return records_of(pq.read_table(path))


def read_directory(directory: str | Path) -> dict[str, list[LogRecord]]:
    """Every ``<EventType>.parquet`` of ``directory`` back as log records, ``{event type name: records}``."""
    return {p.name[: -len(SUFFIX)]: read_file(p) for p in owned_files(directory)}


def type_text(t: Any) -> str:
    """An Arrow type in words that do not depend on the pyarrow version: ``int64``, ``timestamp[us, UTC]``,
    ``list<struct<account: string, amount_cents: int64>>``, ``map<string, int64>``."""
    pa = _pa()
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}, {t.tz}]" if t.tz else f"timestamp[{t.unit}]"
    if pa.types.is_list(t):
        return f"list<{type_text(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{type_text(t.key_type)}, {type_text(t.item_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{t.field(i).name}: {type_text(t.field(i).type)}"
                                     for i in range(t.num_fields)) + ">"
    names = {pa.string(): "string", pa.int64(): "int64", pa.int32(): "int32", pa.bool_(): "bool",
             pa.float64(): "float64", pa.binary(): "binary", pa.date32(): "date32"}
    if t in names:
        return names[t]
    raise ParquetError(f"no name for the Arrow type {t}")
