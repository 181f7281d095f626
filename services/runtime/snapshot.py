"""Snapshots: a service's per-table state on a compacted topic, so a restore reads a snapshot plus the tail.

A **checkpoint** of a task (one partition number *p*) is written inside the task's own Kafka transaction,
beside the events and the input offsets of that transaction, on ``<service>.snapshots`` partition *p*:

* one :class:`TableSnapshot` per table changed since the previous checkpoint, keyed by table id: the
  core's state (msgpack of ``core.state_type``) and the runner's bookkeeping (seq per own stream, seq per
  input stream, the recent command ids for duplicate detection);
* one :class:`Checkpoint` keyed ``__checkpoint__``: the offsets the snapshots cover: for each own stream
  the next offset to read, for each input stream the next offset (the one committed in the same
  transaction).

Because a table's snapshot is rewritten at every checkpoint after it changed, the latest record of every
key in the partition describes the state at the latest checkpoint. A restore folds the own streams from the
checkpoint's offsets to their end and the inputs from the checkpoint's offsets to the committed offsets
(duplicates are dropped by seq, so starting early is harmless and starting late is impossible).

The topic is compacted; nothing else needs it: the event topics remain the record (investigators and
``croupier audit`` read them from offset zero), snapshots are a cache. A snapshot of another **version**
(the :data:`FORMAT` or the schema of the state type changed) or one that cannot be decoded is ignored with
a log line, and the task is rebuilt from offset zero; it is never misread.
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Any

import msgspec

#: bump when the layout of the records below changes (2: the state is zlib-compressed msgpack)
FORMAT = 3  # 3: remembered command ids are scoped by principal (``<principal>|<id>``), with digests
#: the largest snapshot record a checkpoint writes (the snapshot topics take records up to 16 MiB); a
#: checkpoint with a larger one is not written at all (the previous one stays valid)
MAX_RECORD_BYTES = 15 * 1024 * 1024
CHECKPOINT_KEY = b"__checkpoint__"


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """What a task's latest snapshots cover. Offsets are {base topic name: next offset in partition p}."""

    version: str
    partition: int
    own: dict[str, int]
    inputs: dict[str, int]
    tables: int


class TableSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """One table's state at a checkpoint. ``state``: zlib-compressed msgpack of the core's ``state_type``."""

    version: str
    table_id: str
    state: bytes
    seq: dict[str, int]
    input_seq: dict[str, int]
    #: remembered cause key -> digest of the command it was ("" when not known: an event's cause)
    causes: dict[str, str]
    last_event_id: str | None = None


_ENC = msgspec.msgpack.Encoder()
_CHECKPOINT = msgspec.msgpack.Decoder(Checkpoint)
_TABLE = msgspec.msgpack.Decoder(TableSnapshot)


def snapshot_topic(service: str) -> str:
    """Base name of a service's compacted snapshot topic."""
    return f"{service}.snapshots"


def state_version(core: Any) -> str | None:
    """The snapshot version of ``core``'s state: service name, :data:`FORMAT` and a fingerprint of the JSON
    schema of ``core.state_type`` (so a changed state type never reads an old snapshot). None when the core
    has no ``state_type`` (it is then always rebuilt from offset zero)."""
    st = getattr(core, "state_type", None)
    if st is None:
        return None
    try:
        schema = msgspec.json.encode(msgspec.json.schema(st))
    except (TypeError, ValueError):  # a type msgspec cannot describe: fall back to its annotations
        schema = repr(getattr(st, "__annotations__", st)).encode()
    return f"{core.name}:{FORMAT}:{hashlib.sha256(schema).hexdigest()[:16]}"


def encode(obj: Checkpoint | TableSnapshot) -> bytes:
    """msgpack bytes of a checkpoint or a table snapshot."""
    return _ENC.encode(obj)


def encode_state(state: Any) -> bytes:
    """Compressed msgpack bytes of a core state (zlib level 1: a projection table's ledger and odds
    compress several times over, at little cost)."""
    return zlib.compress(_ENC.encode(state), 1)


def decode_checkpoint(raw: bytes) -> Checkpoint:
    """Raises ``msgspec.DecodeError`` / ``msgspec.ValidationError`` for bytes that are not a checkpoint."""
    return _CHECKPOINT.decode(raw)


def decode_table(raw: bytes) -> TableSnapshot:
    """Raises ``msgspec.DecodeError`` / ``msgspec.ValidationError`` for bytes that are not a table snapshot."""
    return _TABLE.decode(raw)


def decode_state(raw: bytes, state_type: type) -> Any:
    """A core state from :func:`encode_state` bytes (raises ``zlib.error`` or msgspec errors when they do not
    fit the type)."""
    return msgspec.msgpack.decode(zlib.decompress(raw), type=state_type)
