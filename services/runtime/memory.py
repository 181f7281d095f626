"""An in-memory bus for tests and simulations without a broker: topics are lists, delivery is in order.

Each :class:`ServiceHost` given to the bus publishes into it; :meth:`MemoryBus.pump` delivers every record
to the hosts subscribed to its topic until nothing is left. Offsets are real list positions, so a host can
be rebuilt from the bus exactly as from Kafka (:meth:`MemoryBus.rebuild`).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from contracts import topics as T
from contracts.codecs import encode
from contracts.envelope import CommandEnvelope, DeadLetter
from services.runtime.core import Decision, ServiceCore
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings


@dataclass(frozen=True, slots=True)
class Record:
    """A stored message (the fields the host reads of a Kafka record)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


class _BusPublisher:
    def __init__(self, bus: "MemoryBus", service: str):
        self.bus = bus
        self.service = service

    async def publish(self, decision: Decision) -> None:
        key = T.key(decision.table_id)
        for env in decision.events:
            self.bus.append(env.stream, key, encode(env))
        for send in decision.sends:  # keyed by the table it is for (the cage's marker steps cross keys)
            self.bus.append(send.topic, T.key(send.command.table_id), encode(send.command))

    async def dead_letter(self, letter: DeadLetter) -> None:
        self.bus.append(T.dlq(letter.service), letter.key.encode() if letter.key else None, encode(letter))


class MemoryBus:
    """Topics as lists; hosts as subscribers."""

    def __init__(self, settings: Settings | None = None):
        self.settings = settings or Settings()
        self.topics: dict[str, list[Record]] = defaultdict(list)
        self.hosts: list[ServiceHost] = []
        self.queue: deque[Record] = deque()
        #: every record in the order it was written, across topics
        self.log: list[Record] = []

    def append(self, topic: str, key: bytes | None, value: bytes) -> Record:
        rec = Record(topic, 0, len(self.topics[topic]), key, value)
        self.topics[topic].append(rec)
        self.queue.append(rec)
        self.log.append(rec)
        return rec

    def add(self, core: ServiceCore[Any]) -> ServiceHost:
        """A host for ``core`` publishing into this bus and subscribed to its topics."""
        host = ServiceHost(core, self.settings, _BusPublisher(self, core.name))
        self.hosts.append(host)
        return host

    def remove(self, host: ServiceHost) -> None:
        """Stop delivering to ``host`` (a crashed or stopped service)."""
        self.hosts.remove(host)

    def send(self, topic: str, cmd: CommandEnvelope) -> Record:
        """Publish a command as a caller would."""
        return self.append(topic, T.key(cmd.table_id), encode(cmd))

    async def pump(self, limit: int = 1_000_000) -> int:
        """Deliver queued records until none is left; returns how many were delivered."""
        n = 0
        while self.queue and n < limit:
            rec = self.queue.popleft()
            for host in list(self.hosts):
                if rec.topic in host.subscribed_topics:
                    await host.handle(rec.topic, rec.partition, rec.offset, rec.key, rec.value)
            n += 1
        return n

    async def rebuild(self, host: ServiceHost) -> int:
        """Rebuild ``host`` from the bus's logs (as after a restart) and re-deliver every topic it consumes
        from the beginning, as a Kafka partition assignment does (duplicates are dropped by command id and
        by seq)."""

        async def read(topic: str) -> list[Record]:
            return list(self.topics.get(topic, []))

        n = await host.rebuild(read)
        for topic in host.subscribed_topics:
            for rec in list(self.topics.get(topic, [])):
                await host.handle(rec.topic, rec.partition, rec.offset, rec.key, rec.value)
        return n
