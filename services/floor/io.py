"""How the simulated floor talks to the services: send a command, wait for an event.

:class:`EventLog` keeps every event seen, per table, and lets a dealer wait for the one it needs.
:class:`MemoryFloorIO` drives the in-memory bus; :class:`KafkaFloorIO` a real broker.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import datetime, timezone
from typing import Callable, Protocol

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event, encode
from contracts.envelope import CommandEnvelope, Envelope
from services.runtime.fetch_sessions import SessionConsumer
from services.runtime.memory import MemoryBus
from services.runtime.settings import Settings

Match = Callable[[Envelope], bool]
WATCHED = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)


class FloorTimeout(TimeoutError):
    """The awaited event did not come."""


class EventLog:
    """Events by table, in arrival order, with waiting."""

    def __init__(self) -> None:
        self.by_table: dict[str, list[Envelope]] = defaultdict(list)
        self.changed = asyncio.Condition()

    async def add(self, env: Envelope) -> None:
        async with self.changed:
            self.by_table[env.table_id].append(env)
            self.changed.notify_all()

    def mark(self, table_id: str) -> int:
        return len(self.by_table[table_id])

    def find(self, table_id: str, match: Match, since: int = 0) -> Envelope | None:
        for env in self.by_table[table_id][since:]:
            if match(env):
                return env
        return None


class FloorIO(Protocol):
    log: EventLog

    async def send(self, topic: str, cmd: CommandEnvelope) -> None: ...

    async def wait(self, table_id: str, match: Match, since: int, timeout: float = 30.0) -> Envelope: ...


class MemoryFloorIO:
    """The floor on a :class:`MemoryBus`: every send pumps the bus to quiescence."""

    def __init__(self, bus: MemoryBus):
        self.bus = bus
        self.log = EventLog()
        self._seen: dict[str, int] = defaultdict(int)

    async def _collect(self) -> None:
        for topic in WATCHED:
            recs = self.bus.topics.get(topic, [])
            for rec in recs[self._seen[topic]:]:
                try:
                    await self.log.add(decode_event(rec.value))
                except (UnknownMessageType, Undecodable):
                    continue
            self._seen[topic] = len(recs)

    async def send(self, topic: str, cmd: CommandEnvelope) -> None:
        self.bus.send(topic, cmd)
        await self.bus.pump()
        await self._collect()

    async def wait(self, table_id: str, match: Match, since: int, timeout: float = 30.0) -> Envelope:
        await self.bus.pump()
        await self._collect()
        env = self.log.find(table_id, match, since)
        if env is None:
            raise FloorTimeout(f"{table_id}: the awaited event never came (in-memory bus is idle)")
        return env


class KafkaFloorIO:
    """The floor on a real broker: an idempotent producer for commands and one reader of every event topic.

    ``writers``: connection settings per writer kind of a command topic (:data:`contracts.topics.ROUTES`),
    e.g. ``{"bettor": …}`` so the bettors' commands go out under the ``bettor`` principal on a secured
    broker; any other topic is written with ``settings`` (the console's).
    """

    def __init__(self, settings: Settings, writers: dict[str, Settings] | None = None):
        self.settings = settings
        self.writers = dict(writers or {})
        self.log = EventLog()
        self.producer: AIOKafkaProducer | None = None
        self._producers: dict[str, AIOKafkaProducer] = {}
        self.consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, from_beginning: bool = False) -> None:
        self.producer = AIOKafkaProducer(**self.settings.client_options(),
                                         enable_idempotence=True, linger_ms=0)
        await self.producer.start()
        for kind, ws in self.writers.items():
            self._producers[kind] = AIOKafkaProducer(**ws.client_options(), enable_idempotence=True, linger_ms=0)
            await self._producers[kind].start()
        # every watched topic's partitions, few of which move at a time: fetch sessions (KIP-227) name only those
        reader = SessionConsumer if self.settings.fetch_sessions else AIOKafkaConsumer
        self.consumer = reader(**self.settings.consumer_options(),
                               enable_auto_commit=False, isolation_level="read_committed",
                               auto_offset_reset="earliest")
        await self.consumer.start()
        tps = [TopicPartition(self.settings.topic(t), p) for t in WATCHED for p in range(self.settings.partitions)]
        self.consumer.assign(tps)
        if from_beginning:
            await self.consumer.seek_to_beginning(*tps)
        else:
            await self.consumer.seek_to_end(*tps)
            for tp in tps:  # resolve the positions now, before any command is sent
                await self.consumer.position(tp)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self.consumer is not None
        while True:
            batch = await self.consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for rec in records:
                    try:
                        await self.log.add(decode_event(rec.value))
                    except (UnknownMessageType, Undecodable):
                        continue

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        if self.consumer is not None:
            await self.consumer.stop()
        for prod in self._producers.values():
            await prod.stop()
        if self.producer is not None:
            await self.producer.stop()

    async def send(self, topic: str, cmd: CommandEnvelope) -> None:
        """Send a command as a console does: stamped with the wall clock as it leaves (its ``issued_at`` claim;
        the event's time is the broker's append time of the record)."""
        assert self.producer is not None
        cmd = msgspec.structs.replace(cmd, issued_at=datetime.now(timezone.utc))
        route = T.ROUTES.get(topic)
        producer = self._producers.get(route.writer, self.producer) if route is not None else self.producer
        await producer.send_and_wait(self.settings.topic(topic), encode(cmd), key=T.key(cmd.table_id))

    async def wait(self, table_id: str, match: Match, since: int, timeout: float = 30.0) -> Envelope:
        async def _wait() -> Envelope:
            async with self.log.changed:
                while True:
                    env = self.log.find(table_id, match, since)
                    if env is not None:
                        return env
                    await self.log.changed.wait()

        try:
            return await asyncio.wait_for(_wait(), timeout)
        except asyncio.TimeoutError:
            raise FloorTimeout(f"{table_id}: no matching event within {timeout} s") from None
