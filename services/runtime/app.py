"""Build a FastStream app for a service core: one broker, one subscriber, rebuild on every assignment.

The subscriber consumes the service's command topic and its input topics in one consumer group. On every
partition assignment the listener rebuilds the service's state from offset zero of its own events and its
inputs (only the assigned partitions: a table lives on the same partition number in every topic) and then
seeks every assigned partition back to the beginning: duplicates are dropped by ``seq`` and by command id,
and anything never handled is handled now.
"""

from __future__ import annotations

from typing import Any

from aiokafka import ConsumerRebalanceListener, TopicPartition
from faststream import FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from contracts import topics as T
from services.runtime.core import ServiceCore
from services.runtime.host import Publisher, ServiceHost
from services.runtime.kafka import TransactionalPublisher, ensure_topics, read_log
from services.runtime.logging import configure
from services.runtime.settings import Settings


class _Rebuild(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, host: ServiceHost):
        self.host = host
        self.subscriber: Any = None
        self.partitions: list[int] = []

    async def rebuild(self) -> None:
        """Rebuild the host from the log of the partitions this instance holds."""
        parts = self.partitions
        host = self.host

        async def read(topic: str) -> list[Any]:
            return await read_log(host.settings, topic, parts)

        await host.rebuild(read)

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        return None

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.partitions = sorted({tp.partition for tp in assigned})
        await self.rebuild()
        if assigned and self.subscriber is not None and self.subscriber.consumer is not None:
            await self.subscriber.consumer.seek_to_beginning(*assigned)


def topics_of(core: ServiceCore[Any]) -> list[str]:
    """Base names of every topic a service touches."""
    names = [core.own_stream, *core.private_streams, *core.input_streams, T.dlq(core.name)]
    if core.command_stream:
        names.append(core.command_stream)
    return names


class Service:
    """One service wired for Kafka: its FastStream ``app`` and ``broker``, its ``host``; :meth:`start` and
    :meth:`stop` run it inside another program (tests, ``croupier demo``) without ``faststream run``."""

    def __init__(self, app: FastStream, broker: KafkaBroker, host: ServiceHost, topics: list[str]):
        self.app, self.broker, self.host, self.topics = app, broker, host, topics

    async def start(self) -> None:
        await ensure_topics(self.host.settings, self.topics)
        if isinstance(self.host.publisher, TransactionalPublisher):
            await self.host.publisher.start()
        await self.broker.start()

    async def stop(self) -> None:
        await self.broker.stop()
        if isinstance(self.host.publisher, TransactionalPublisher):
            await self.host.publisher.stop()


def build_service(core: ServiceCore[Any], settings: Settings | None = None, *,
                  extra_topics: tuple[str, ...] = (), batch: bool = True, publisher: Publisher | None = None,
                  group: str | None = None) -> Service:
    """Everything :func:`build_app` makes, as a :class:`Service`."""
    app, broker, host = build_app(core, settings, extra_topics=extra_topics, batch=batch, publisher=publisher,
                                  group=group)
    return Service(app, broker, host, topics_of(core) + list(extra_topics))


def build_app(core: ServiceCore[Any], settings: Settings | None = None, *,
              extra_topics: tuple[str, ...] = (), publisher: Publisher | None = None, batch: bool = True,
              group: str | None = None) -> tuple[FastStream, KafkaBroker, ServiceHost]:
    """A FastStream app running ``core`` against the broker of ``settings`` (environment by default).

    ``publisher``: where decisions go (default: a :class:`TransactionalPublisher` on the same broker;
    handler tests under ``TestKafkaBroker`` pass an in-memory one, a read-only replica a
    :class:`NullPublisher`). ``batch``: consume records in batches and publish all a batch caused in one
    transaction (throughput: the projection). ``group``: the consumer group (default: the service's).
    """
    configure()
    settings = settings or Settings.from_env()
    broker = KafkaBroker(settings.bootstrap_servers, logger=None)
    publisher = publisher or TransactionalPublisher(settings, core.name)
    host = ServiceHost(core, settings, publisher)
    listener = _Rebuild(host)

    async def handle(msg: KafkaMessage) -> None:
        rec = msg.raw_message
        await host.handle(rec.topic, rec.partition, rec.offset, rec.key, msg.body)

    async def handle_batch(msg: KafkaMessage) -> None:
        if host.stale:  # a batch failed to publish: catch the state up with the log first
            await listener.rebuild()
        raw = msg.raw_message
        records = raw if isinstance(raw, (list, tuple)) else (raw,)
        await host.handle_batch([(r.topic, r.partition, r.offset, r.key, r.value) for r in records])

    subscriber = broker.subscriber(
        *host.subscribed_topics,
        group_id=group or settings.group(core.name),
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        listener=listener,
        include_in_schema=False,
        **({"batch": True, "max_records": 500, "batch_timeout_ms": 5} if batch else {}),
    )
    subscriber(handle_batch if batch else handle)
    listener.subscriber = subscriber
    app = FastStream(broker)

    @app.on_startup
    async def _start() -> None:
        await ensure_topics(settings, topics_of(core) + list(extra_topics))
        if isinstance(publisher, TransactionalPublisher):
            await publisher.start()

    @app.after_shutdown
    async def _stop() -> None:
        if isinstance(publisher, TransactionalPublisher):
            await publisher.stop()

    return app, broker, host
