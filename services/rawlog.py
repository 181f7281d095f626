"""The one raw-log reader: a table's (or the floor's) topics read from their start up to their end offsets as of
the call, and the records decoded into envelopes, sorted into what decoded, what did not and what is of a type
this version does not know.

Every reader of the log from offset zero goes through here: the investigator's tools (``croupier replay``,
``export``, ``audit``: :mod:`croupier.log`), the demo's cage summary and the command gateway's scan for the
tables opened (:class:`services.command_api.bus.KafkaCommandBus`). It sits beside the services, not in one of
them, so a service and the command line may both import it (``.importlinter``: no service imports another, the
services never import ``croupier``); it imports nothing of the services.

* :func:`read_to_end` runs the read on a consumer the caller made (its principal, its options): seek every
  partition to its beginning, fetch until each position reaches the end offset taken at the start, and yield
  the records in offset order per partition, batch by batch. Records appended after the start are not read.
* :func:`read_topic` makes a ``read_committed`` consumer from ``settings`` and reads one topic (every
  partition, given ones, or the one a table's key maps to), never creating a topic by reading it.
* :func:`decode_records` / :func:`read_decoded` sort records by :func:`contracts.codecs.decode_event` (or
  ``decode_command``): :class:`Decoded` (``ok``, ``undecodable``, ``unknown``), each record read once.
* :class:`LogTail` reads topics from offset zero once and then, at each call, only what was appended since (a
  cursor per topic-partition on one consumer kept open): the pit's cage pages (:mod:`croupier.pit_cage`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event

if TYPE_CHECKING:
    from aiokafka.structs import ConsumerRecord, TopicPartition

    from services.runtime.settings import Settings

M = TypeVar("M")

#: how long one fetch waits for records (ms); the read ends at the end offsets, never on an empty fetch
FETCH_TIMEOUT_MS = 500


def partition_for(table_id: str, partitions: int) -> int:
    """The partition of ``partitions`` a table's key (:func:`contracts.topics.key`) maps to: murmur2 of the key,
    as every Kafka client's default partitioner computes it."""
    from aiokafka.partitioner import murmur2

    return (murmur2(T.key(table_id)) & 0x7FFFFFFF) % partitions


async def read_to_end(consumer: Any, tps: Sequence[TopicPartition]
                      ) -> AsyncIterator[tuple[TopicPartition, list[ConsumerRecord]]]:
    """Read ``tps`` on ``consumer`` (started; assigned here) from their beginning to their end offsets as of the
    call: yields ``(partition, records)`` batches, in offset order per partition, nothing at or past the end
    offset. Partitions that are empty yield nothing. Raises aiokafka's errors (a broker that cannot be reached,
    a topic this principal may not read)."""
    tps = list(tps)
    if not tps:
        return
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    ends = await consumer.end_offsets(tps)
    pending = {tp for tp in tps if ends[tp] > 0}
    while pending:
        for tp in list(pending):
            if await consumer.position(tp) >= ends[tp]:
                pending.discard(tp)
        if not pending:
            break
        batch = await consumer.getmany(*pending, timeout_ms=FETCH_TIMEOUT_MS)
        for tp, records in batch.items():
            kept = [r for r in records if r.offset < ends[tp]]
            if kept:
                yield tp, kept


def consumer_for(settings: Settings, **options: Any) -> Any:
    """A ``read_committed`` consumer of ``settings``' broker and principal, without a group (nothing committed),
    starting at the earliest offset; ``options`` are aiokafka's (e.g. ``max_partition_fetch_bytes``)."""
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(**settings.client_options(), enable_auto_commit=False, isolation_level="read_committed",
                            auto_offset_reset="earliest", **options)


async def read_topic(settings: Settings, topic: str, partitions: Sequence[int] | None = None, *,
                     table_id: str | None = None) -> list[ConsumerRecord]:
    """Every committed record of ``topic`` (full name) in ``partitions`` (all when None; with ``table_id`` only
    the partition that table's key maps to, from the topic's actual partition count), from offset zero to the
    end as of the call, in offset order per partition (partitions one after another). A topic that does not
    exist gives ``[]`` (it is never created by reading it). Raises aiokafka's errors."""
    from aiokafka import TopicPartition

    consumer = consumer_for(settings)
    try:
        await consumer.start()
    except BaseException:
        await consumer.stop()
        raise
    try:
        from services.runtime.kafka import topic_partitions

        found = await topic_partitions(consumer._client, topic)  # this topic's metadata alone
        if not found:
            return []  # never create a topic by reading it (the request does not auto-create)
        if partitions is None:
            partitions = sorted(found)
            if table_id is not None and found:
                partitions = [partition_for(table_id, len(found))]
        tps = [TopicPartition(topic, p) for p in partitions]
        out: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
        async for tp, records in read_to_end(consumer, tps):
            out[tp].extend(records)
        return [r for tp in tps for r in out[tp]]
    finally:
        await consumer.stop()


@dataclass(frozen=True, slots=True)
class Unknown:
    """A sound envelope of a message type this version does not know: the record and the type's name."""

    record: Any
    type_name: str


@dataclass(frozen=True, slots=True)
class Failed:
    """A record that does not decode at all, and why (the decoder's message)."""

    record: Any
    error: str

    @property
    def key(self) -> str:
        """The record's key as text (``?`` for none)."""
        k = self.record.key
        return k.decode("utf-8", "replace") if k is not None else "?"


@dataclass(slots=True)
class Decoded(Generic[M]):
    """Records sorted by their decoding: ``ok`` (record, message) pairs in read order, ``undecodable``
    (:class:`Failed`), ``unknown`` (:class:`Unknown`)."""

    ok: list[tuple[Any, M]] = field(default_factory=list)
    undecodable: list[Failed] = field(default_factory=list)
    unknown: list[Unknown] = field(default_factory=list)


def decode_records(records: Iterable[Any], decode: Callable[[bytes], M] = decode_event,  # type: ignore[assignment]
                   table_id: str | None = None) -> Decoded[M]:
    """Sort ``records`` (anything with ``value``, ``key``, ``topic``, ``partition``, ``offset``) by ``decode``
    (:func:`contracts.codecs.decode_event` by default, or ``decode_command``): a message of another table than
    ``table_id`` (when given) is left out of ``ok``; an unknown type is kept only when its envelope names
    ``table_id`` (or none is given). A record without a value (a tombstone) is undecodable."""
    import msgspec

    out: Decoded[M] = Decoded()
    for rec in records:
        try:
            msg = decode(rec.value)
        except UnknownMessageType as e:
            probe = msgspec.json.decode(rec.value)  # a sound envelope: the decoder checked it
            if table_id is None or probe.get("table_id") == table_id:
                out.unknown.append(Unknown(rec, e.type_name))
            continue
        except Undecodable as e:
            out.undecodable.append(Failed(rec, str(e)))
            continue
        if table_id is None or getattr(msg, "table_id", None) == table_id:
            out.ok.append((rec, msg))
    return out


async def read_decoded(settings: Settings, topics: Iterable[str], table_id: str | None = None,
                       decode: Callable[[bytes], M] = decode_event,  # type: ignore[assignment]
                       ) -> Decoded[M]:
    """:func:`read_topic` of each of ``topics`` (full names, in the order given; with ``table_id`` only its
    partition) sorted by :func:`decode_records`, each record read and decoded once. Raises aiokafka's errors."""
    out: Decoded[M] = Decoded()
    for topic in topics:
        part = decode_records(await read_topic(settings, topic, table_id=table_id), decode, table_id)
        out.ok += part.ok
        out.undecodable += part.undecodable
        out.unknown += part.unknown
    return out


class LogTail:
    """``topics`` (full names) read from offset zero once, then only what was appended since: one
    ``read_committed`` consumer (:func:`consumer_for`) kept open, its position on each topic-partition the cursor.

    Each :meth:`catch_up` takes the end offsets of every partition as of the call (one request), fetches from the
    cursors until each reaches its end, decodes only those new records (:func:`contracts.codecs.decode_event`:
    what does not decode, or is of an unknown type, is counted in ``skipped`` and left out, as
    :func:`read_decoded` leaves it out of ``ok``) and appends them to what it holds. :meth:`envelopes` is then
    exactly what reading the topics whole would give at least up to those ends, in the same order (topics in the
    order given, partitions one after another, offset order within each). A topic that does not exist yet is
    looked for again at each call (never created by looking); a topic's partitions are those it had when first
    found (a floor's topics are created with their partition count, :data:`contracts.topics.PARTITIONS`).

    A read that fails (aiokafka's errors, a timeout, a cancellation) leaves the tail marked broken: the next
    call stops the consumer and reads from zero again, so a failure never leaves a gap. Calls are serialised
    (one lock). Memory: the decoded envelopes of the topics, as one whole read holds them.
    """

    def __init__(self, settings: Settings, topics: Sequence[str]):
        import asyncio

        self.settings = settings
        self.topics = tuple(topics)
        self.skipped = 0
        self._lock = asyncio.Lock()
        self._consumer: Any = None
        self._broken = False
        self._reset_state()

    def _reset_state(self) -> None:
        self._found: dict[str, list[Any]] = {}  # topic -> its TopicPartitions, once it exists
        self._held: dict[Any, list[Any]] = {}  # TopicPartition -> its envelopes, in offset order
        self._next: dict[Any, int] = {}  # TopicPartition -> the cursor: the next offset to read
        self.skipped = 0

    @property
    def held(self) -> int:
        """How many envelopes the tail holds (grows with each :meth:`catch_up` that finds new records)."""
        return sum(len(v) for v in self._held.values())

    async def catch_up(self) -> list[Any]:
        """Read what was appended since the last call (everything at the first) up to the end offsets as of this
        call; returns the new envelopes (decoded, in the order of :meth:`envelopes`). Raises aiokafka's errors
        (the tail then reads from zero at the next call)."""
        async with self._lock:
            if self._broken:
                await self.stop()
            self._broken = True  # until this read completes
            new = await self._read_new()
            self._broken = False
            return new

    def envelopes(self) -> list[Any]:
        """Every envelope held, topics in the order given, partitions one after another, offset order."""
        return [env for topic in self.topics for tp in self._found.get(topic, ()) for env in self._held[tp]]

    async def _read_new(self) -> list[Any]:
        from aiokafka import TopicPartition

        from services.runtime.kafka import topic_partitions

        if self._consumer is None:
            self._reset_state()
            consumer = consumer_for(self.settings)
            try:
                await consumer.start()
            except BaseException:
                await consumer.stop()
                raise
            self._consumer = consumer
        c = self._consumer
        appeared = []
        for topic in self.topics:
            if topic not in self._found:
                parts = await topic_partitions(c._client, topic)  # this topic's metadata alone: never creates it
                if parts:
                    self._found[topic] = [TopicPartition(topic, p) for p in sorted(parts)]
                    appeared += self._found[topic]
        tps = [tp for topic in self.topics for tp in self._found.get(topic, ())]
        if not tps:
            return []
        if appeared:
            c.assign(tps)  # re-assigning: every cursor is set again (assign forgets positions)
            c.pause(*tps)
            for tp in tps:
                self._held.setdefault(tp, [])
                if tp not in appeared:
                    c.seek(tp, self._next[tp])
            await c.seek_to_beginning(*appeared)
        # the partitions stay paused between calls: no fetch in flight, so the end offsets' request is
        # answered at once, not behind a fetch waiting for records that do not come (fetch_max_wait_ms)
        ends = await c.end_offsets(tps)
        got: dict[Any, list[Any]] = {}
        pending = {tp for tp in tps if await c.position(tp) < ends[tp]}
        c.resume(*pending)
        try:
            while pending:
                batch = await c.getmany(*pending, timeout_ms=FETCH_TIMEOUT_MS)
                for tp, records in batch.items():
                    got.setdefault(tp, []).extend(records)  # all of them: the cursor is past every one fetched
                for tp in list(pending):
                    if await c.position(tp) >= ends[tp]:
                        pending.discard(tp)
                        c.pause(tp)
        finally:
            c.pause(*tps)
        self._next = {tp: await c.position(tp) for tp in tps}
        new: list[Any] = []
        for tp in tps:
            for rec in got.get(tp, ()):
                try:
                    env = decode_event(rec.value)
                except (UnknownMessageType, Undecodable):
                    self.skipped += 1
                    continue
                self._held[tp].append(env)
                new.append(env)
        return new

    async def stop(self) -> None:
        """Close the consumer and forget what is held (a later call reads from zero)."""
        c, self._consumer = self._consumer, None
        self._broken = False
        self._reset_state()
        if c is not None:
            await c.stop()
