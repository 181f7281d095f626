"""Kafka plumbing: topic creation, reading a log from offset zero, and the transactional publisher."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.structs import ConsumerRecord

from contracts import topics as T
from contracts.codecs import encode
from contracts.envelope import DeadLetter
from services.runtime.core import Decision
from services.runtime.settings import Settings


async def ensure_topics(settings: Settings, names: Iterable[str]) -> None:
    """Create the given base topics (prefixed) with :data:`contracts.topics.PARTITIONS` partitions and
    :data:`contracts.topics.TOPIC_CONFIG` (history kept forever) if they do not exist."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    try:
        wanted = [settings.topic(n) for n in dict.fromkeys(names)]
        existing = set(await admin.list_topics())
        new = [NewTopic(t, T.PARTITIONS, 1, topic_configs=dict(T.TOPIC_CONFIG)) for t in wanted if t not in existing]
        if new:
            try:
                await admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
        # creation is asynchronous on the controller: wait until every partition has a leader
        for _ in range(300):
            described = await admin.describe_topics(wanted)
            ready = {d["topic"] for d in described if d["error_code"] == 0 and d["partitions"]
                     and all(p["leader"] >= 0 for p in d["partitions"])}
            if ready >= set(wanted):
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"topics without leaders after 30 s: {sorted(set(wanted) - ready)}")
    finally:
        await admin.close()


async def read_log(settings: Settings, topic: str, partitions: Sequence[int] | None = None,
                   ) -> list[ConsumerRecord]:
    """Every committed record of ``topic`` (full name) in ``partitions`` (all when None), from offset zero
    to the end as of the call, in offset order per partition (partitions one after another)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    try:
        await consumer.start()
    except BaseException:
        await consumer.stop()
        raise
    try:
        if topic not in await consumer.topics():
            return []  # never create a topic by reading it (the broker may auto-create on metadata requests)
        if partitions is None:
            parts = await consumer._client.fetch_all_metadata()  # noqa: SLF001 - metadata refresh
            found = parts.partitions_for_topic(topic) or set()
            partitions = sorted(found)
        tps = [TopicPartition(topic, p) for p in partitions]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        end = await consumer.end_offsets(tps)
        out: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
        pending = {tp for tp in tps if end[tp] > 0}
        while pending:
            for tp in list(pending):
                if await consumer.position(tp) >= end[tp]:
                    pending.discard(tp)
            if not pending:
                break
            batch = await consumer.getmany(*pending, timeout_ms=500)
            for tp, records in batch.items():
                out[tp].extend(r for r in records if r.offset < end[tp])
        return [r for tp in tps for r in out[tp]]
    finally:
        await consumer.stop()


class TransactionalPublisher:
    """Publishes each :class:`Decision` atomically (one Kafka transaction), keyed by table id.

    Consumers read with ``isolation_level="read_committed"``, so half a decision is never seen.
    """

    def __init__(self, settings: Settings, service: str):
        self.settings = settings
        self.service = service
        self.producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        self.producer = AIOKafkaProducer(
            bootstrap_servers=self.settings.bootstrap_servers,
            transactional_id=self.settings.transactional_id(self.service),
            enable_idempotence=True,
            linger_ms=0,
        )
        await self.producer.start()

    async def stop(self) -> None:
        if self.producer is not None:
            await self.producer.stop()
            self.producer = None

    async def publish(self, decision: Decision) -> None:
        assert self.producer is not None, "publisher not started"
        key = T.key(decision.table_id)
        async with self.producer.transaction():
            for env in decision.events:
                await self.producer.send(self.settings.topic(env.stream), encode(env), key=key)
            for send in decision.sends:
                await self.producer.send(self.settings.topic(send.topic), encode(send.command), key=key)

    async def publish_many(self, decisions: list[Decision]) -> None:
        """Several decisions in one transaction (batch mode)."""
        assert self.producer is not None, "publisher not started"
        async with self.producer.transaction():
            for decision in decisions:
                key = T.key(decision.table_id)
                for env in decision.events:
                    await self.producer.send(self.settings.topic(env.stream), encode(env), key=key)
                for send in decision.sends:
                    await self.producer.send(self.settings.topic(send.topic), encode(send.command), key=key)

    async def dead_letter(self, letter: DeadLetter) -> None:
        assert self.producer is not None, "publisher not started"
        async with self.producer.transaction():
            key = letter.key.encode() if letter.key else None
            await self.producer.send(self.settings.topic(T.dlq(letter.service)), encode(letter), key=key)


class DirectPublisher(TransactionalPublisher):
    """Publishes without transactions (idempotent producer, ``acks=all``): lower latency, for outputs that
    are each complete on their own (the projection's odds, ledger entries and alerts). A crash may leave
    part of a batch written; the rebuild folds what was written and publishes only the rest."""

    async def start(self) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=self.settings.bootstrap_servers,
                                         enable_idempotence=True, acks="all", linger_ms=0)
        await self.producer.start()

    _pending: list  # type: ignore[type-arg]

    async def enqueue(self, decision: Decision) -> None:
        """Hand a decision to the producer now (sent at once, linger 0); :meth:`flush` awaits delivery."""
        assert self.producer is not None, "publisher not started"
        pending = self.__dict__.setdefault("_pending", [])
        key = T.key(decision.table_id)
        for env in decision.events:
            pending.append(await self.producer.send(self.settings.topic(env.stream), encode(env), key=key))
        for send in decision.sends:
            pending.append(await self.producer.send(self.settings.topic(send.topic), encode(send.command), key=key))

    async def flush(self) -> None:
        """Wait until everything enqueued is acknowledged (raises the first delivery error)."""
        pending, self.__dict__["_pending"] = self.__dict__.get("_pending", []), []
        for f in pending:
            await f

    async def publish(self, decision: Decision) -> None:
        await self.enqueue(decision)
        await self.flush()

    async def publish_many(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            await self.enqueue(decision)
        await self.flush()

    async def dead_letter(self, letter: DeadLetter) -> None:
        assert self.producer is not None, "publisher not started"
        key = letter.key.encode() if letter.key else None
        await self.producer.send_and_wait(self.settings.topic(T.dlq(letter.service)), encode(letter), key=key)
