"""Where the gateway's commands go and its events come from (:class:`CommandBus`): :class:`KafkaCommandBus` (aiokafka:
an idempotent producer per writer principal, one ``read_committed`` reader of the four event topics, no consumer
group) and :class:`MemoryCommandBus` (the in-memory bus of :mod:`services.runtime.memory`, for tests)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError, KafkaTimeoutError

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event, encode
from contracts.envelope import CommandEnvelope
from contracts.events import TableOpened
from services.command_api.index import EventIndex
from services.rawlog import decode_records, partition_for, read_to_end
from services.runtime.logging import get_logger
from services.runtime.memory import MemoryBus
from services.runtime.settings import Settings

log = get_logger("command_api")
#: the event topics the gateway reads (the console principal may read all four)
WATCHED = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
#: how often it checks the reader's positions meanwhile (seconds)
CATCH_UP_POLL_S = 0.02
#: how long the Kafka reader waits after a failed fetch before fetching again (seconds)
READ_RETRY_S = 1.0


class CommandBus(Protocol):
    """Where commands go and events come from."""

    index: EventIndex

    async def send(self, topic: str, cmd: CommandEnvelope, writer: str, timeout_s: float | None = None) -> None:
        """Publish ``cmd`` on ``topic`` (base name) as the ``writer`` principal kind, acknowledged within
        ``timeout_s`` seconds (None: unbounded) or never delivered (raises ``KafkaError``)."""
        ...

    async def settle(self) -> None:
        """Let what was sent be decided and read (the in-memory bus pumps; Kafka does nothing)."""
        ...

    async def catch_up(self, timeout_s: float) -> None:
        """Wait (up to ``timeout_s``) until every event appended before the call has been read, on every
        partition read (the in-memory bus: :meth:`settle`)."""
        ...


class MemoryCommandBus:
    """The gateway on a :class:`~services.runtime.memory.MemoryBus` (tests): each send is delivered at once,
    every decision read whole."""

    def __init__(self, bus: MemoryBus):
        self.bus = bus
        self.index = EventIndex()
        self._seen: dict[str, int] = {}
        #: every command sent, with its topic and writer (tests count them)
        self.sent: list[tuple[str, str, CommandEnvelope]] = []

    async def send(self, topic: str, cmd: CommandEnvelope, writer: str, timeout_s: float | None = None) -> None:
        self.sent.append((topic, writer, cmd))
        self.bus.send(topic, cmd)

    async def settle(self) -> None:
        await self.bus.pump()
        for topic in WATCHED:
            recs = self.bus.topics.get(topic, [])
            for rec in recs[self._seen.get(topic, 0):]:
                try:
                    self.index.add(decode_event(rec.value))
                except (UnknownMessageType, Undecodable):
                    continue
            self._seen[topic] = len(recs)
        await self.index.notify()

    async def catch_up(self, timeout_s: float) -> None:
        await self.settle()


class KafkaCommandBus:
    """The gateway on a real broker.

    ``writers``: connection settings per writer principal kind (``console``, ``bettor``; e.g. from
    :func:`writer_settings`), so each command topic is written by its one writer on a secured broker; a kind
    not given writes with ``settings``. The reader connects as the ``console`` writer if given (the console
    principal may read the four event topics), else as the ``bettor`` writer, else with ``settings``.
    ``tables``: read only these tables'
    partitions (the command line: one table); None: every partition. ``since``: start reading at this time
    (``offsets_for_times``: a retry from a new process finds the answer its first attempt got); None: at
    the end. ``streams``: the event topics to read (default the four; a principal that may read fewer, such
    as ``bettor``, reads only those its answers come on).
    """

    def __init__(self, settings: Settings, writers: Mapping[str, Settings] | None = None,
                 tables: list[str] | None = None, since: datetime | None = None,
                 streams: Iterable[str] = WATCHED):
        self.settings = settings
        self.streams = tuple(streams)
        self.writers = dict(writers or {})
        self.tables = tables
        self.since = since
        self.index = EventIndex()
        self._producers: dict[str, AIOKafkaProducer] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._fetch = 0
        self._tps: list[TopicPartition] = []

    async def start(self) -> None:
        """Connect the producers and the reader; returns once the reader's positions are fixed (before any
        command is sent). Raises aiokafka's errors for a broker that cannot be reached."""
        for kind in ("console", "bettor"):
            p = self._producer(kind)
            await p.start()
            self._producers[kind] = p
        reader = self.writers.get("console") or self.writers.get("bettor") or self.settings
        self._consumer = AIOKafkaConsumer(**reader.consumer_options(), enable_auto_commit=False,
                                          isolation_level="read_committed", auto_offset_reset="earliest")
        await self._consumer.start()
        n = self.settings.partitions
        parts = sorted({partition_for(t, n) for t in self.tables}) if self.tables else list(range(n))
        tps = [TopicPartition(self.settings.topic(t), p) for t in self.streams for p in parts]
        self._consumer.assign(tps)
        if self.since is None:
            await self._consumer.seek_to_end(*tps)
        else:
            ms = int(self.since.timestamp() * 1000)
            found = await self._consumer.offsets_for_times({tp: ms for tp in tps})
            ends = await self._consumer.end_offsets(tps)
            for tp in tps:
                at = found.get(tp)
                self._consumer.seek(tp, at.offset if at is not None else ends[tp])
        for tp in tps:
            await self._consumer.position(tp)
        self._tps = tps
        await self._scan_tables(reader, parts)
        self._task = asyncio.create_task(self._read(tps))

    async def _scan_tables(self, reader: Settings, parts: list[int]) -> None:
        """Read the dealing events of ``parts`` from their start up to their end as of now and note every
        table a ``TableOpened`` was read for (:attr:`EventIndex.tables`: the gateway answers 404 for a
        table it has not seen opened, and a table opened before this reader's ``since`` is still known).
        Raises aiokafka's errors for a broker that cannot be reached."""
        self.index.tables_complete = False
        scan = AIOKafkaConsumer(**reader.client_options(), enable_auto_commit=False,
                                isolation_level="read_committed", auto_offset_reset="earliest")
        await scan.start()
        try:
            tps = [TopicPartition(self.settings.topic(T.DEALING_EVENTS), p) for p in parts]
            async for _, records in read_to_end(scan, tps):
                # only a TableOpened matters here: the others are not decoded
                opened = [r for r in records if r.value is not None and b"table_opened" in r.value]
                for _, env in decode_records(opened).ok:
                    if isinstance(env.payload, TableOpened):
                        self.index.tables.add(env.table_id)
        finally:
            await scan.stop()
        self.index.tables_complete = True

    async def _read(self, tps: list[TopicPartition]) -> None:
        """Index every event read, forever (until cancelled). A failure never ends it: a broker's error
        (``KafkaError``) or any other exception (a record the index cannot take, a bug) is logged
        (``command_api_read_failed``, with the traceback for a non-Kafka one) and recorded in
        :attr:`EventIndex.reader_error`, so waiting requests answer 503 ``reader_failed`` rather than time
        out; the next fetch read without a failure clears it."""
        assert self._consumer is not None
        c = self._consumer
        while True:
            failed: str | None = None
            try:
                batch = await c.getmany(timeout_ms=100)
                self._fetch += 1
                for tp, records in batch.items():
                    for rec in records:
                        try:
                            self.index.add(decode_event(rec.value), tp, self._fetch)
                        except (UnknownMessageType, Undecodable):
                            continue
                        except Exception as e:  # one record the index cannot take: the rest are read
                            failed = f"{type(e).__name__}: {e}"
                            log.exception("command_api_read_failed", error=failed, topic=tp.topic,
                                          partition=tp.partition, offset=rec.offset)
                for tp in tps:
                    lso = c.last_stable_offset(tp)
                    if lso is not None and lso >= 0 and await c.position(tp) >= lso:
                        self.index.caught_up(tp, self._fetch)
            except KafkaError as e:  # the broker went away: keep trying
                failed = f"{type(e).__name__}: {e}"
                log.warning("command_api_read_failed", error=failed)
            except Exception as e:  # not the broker's: logged with its traceback, and reading goes on
                failed = f"{type(e).__name__}: {e}"
                log.exception("command_api_read_failed", error=failed)
            self.index.reader_error = failed
            await self.index.notify()
            if failed is not None:
                await asyncio.sleep(READ_RETRY_S)

    async def send(self, topic: str, cmd: CommandEnvelope, writer: str, timeout_s: float | None = None) -> None:
        """Append ``cmd`` to ``topic`` as ``writer``, acknowledged within ``timeout_s`` (None: unbounded) or
        never: a command the broker did not acknowledge in time is abandoned with its producer
        (:meth:`_abandon`: its buffered batches failed, its connections closed; an idempotent aiokafka
        producer would retry it forever and deliver it whenever the broker came back), so the caller's
        retry is the only copy. Raises ``KafkaTimeoutError`` after ``timeout_s``, aiokafka's errors for a
        broker that refused it."""
        kind = writer if writer in self._producers or writer in ("console", "bettor") else "console"
        producer = self._producers.get(kind)
        try:
            async with asyncio.timeout(timeout_s):
                if producer is None:  # abandoned after a failed delivery: a fresh one (a new producer id)
                    producer = self._producers[kind] = self._producer(kind)
                    await producer.start()
                await producer.send_and_wait(self.settings.topic(topic), encode(cmd), key=T.key(cmd.table_id))
        except TimeoutError:
            await self._abandon(kind, producer)
            raise KafkaTimeoutError(f"the broker did not acknowledge the command within {timeout_s:g} s; it "
                                    "was dropped (never delivered later)") from None
        except BaseException:
            await self._abandon(kind, producer)
            raise

    def _producer(self, kind: str) -> AIOKafkaProducer:
        return AIOKafkaProducer(**self.writers.get(kind, self.settings).client_options(),
                                enable_idempotence=True, linger_ms=0)

    async def _abandon(self, kind: str, producer: AIOKafkaProducer | None) -> None:
        """Drop ``producer`` without delivering what it still holds: its batches fail
        (``KafkaTimeoutError``), its sender stops, its connections close. The next send starts a new one."""
        if self._producers.get(kind) is producer:
            self._producers.pop(kind, None)
        if producer is None:
            return
        abandoned = KafkaTimeoutError("abandoned: not acknowledged in time")
        acc = getattr(producer, "_message_accumulator", None)
        if acc is not None:
            acc.fail_all(abandoned)
        sender = getattr(producer, "_sender", None)
        task = getattr(sender, "sender_task", None)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        producer._closed = True  # its stop() would wait to flush what was failed here
        with contextlib.suppress(Exception):
            await producer.client.close()
        log.warning("command_api_producer_abandoned", writer=kind)

    async def settle(self) -> None:
        return None

    async def catch_up(self, timeout_s: float) -> None:
        """Wait until the reader has read, on every partition it reads, up to where that partition ended
        (its last stable offset) when this was called, so a round's events on one topic are not shown without
        those of the others (the partitions are fetched in no set order); returns after ``timeout_s``
        regardless, or at once on a broker's error (the view is then what was read)."""
        c = self._consumer
        if c is None or not self._tps:
            return
        try:
            async with asyncio.timeout(timeout_s):
                ends = await c.end_offsets(self._tps)  # read_committed: the last stable offsets
                # a record's position moves on only once the reader holds it: it indexes a batch without awaiting
                for tp, end in ends.items():
                    while await c.position(tp) < end:
                        await asyncio.sleep(CATCH_UP_POLL_S)
        except (TimeoutError, KafkaError):
            pass

    async def stop(self) -> None:
        """Stop the reader and the producers."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        if self._consumer is not None:
            await self._consumer.stop()
        for p in self._producers.values():
            await p.stop()
