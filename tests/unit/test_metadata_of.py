"""``services.runtime.kafka.metadata_of``: the metadata of the topics asked for alone, never creating one, from
whichever broker of the cluster answers (a dead broker is skipped)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka.cluster import ClusterMetadata
from aiokafka.errors import KafkaConnectionError, NodeNotReadyError

from services.runtime.kafka import metadata_of, topic_partitions


@dataclass
class _Response:
    """A Metadata v5 answer: brokers 1-3, topic ``t`` with partitions 0-2 led by broker 1; ``ghost`` unknown."""

    API_VERSION = 5
    controller_id = 1
    brokers: list[Any] = field(default_factory=lambda: [(n, "127.0.0.1", 9000 + n, None) for n in (1, 2, 3)])
    topics: list[Any] = field(default_factory=lambda: [
        (0, "t", False, [(0, p, 1, [1], [1], []) for p in range(3)]),
        (3, "ghost", False, []),  # UNKNOWN_TOPIC_OR_PARTITION
    ])


class _Client:
    """Brokers 1-3 known; ``dead`` refuse every request; every request is recorded."""

    def __init__(self, dead: set[int]):
        self.cluster = ClusterMetadata()
        self.cluster.update_metadata(_Response())
        self.dead, self.sent = dead, []

    def get_random_node(self) -> int:
        return 1

    async def send(self, node: int, request: Any) -> _Response:
        self.sent.append((node, request))
        if node in self.dead:
            raise NodeNotReadyError(f"node {node} is down")
        return _Response()


def test_the_topics_asked_for_alone_and_none_created():
    c = _Client(dead=set())
    md = asyncio.run(metadata_of(c, ["t", "ghost"]))
    assert md.partitions_for_topic("t") == {0, 1, 2} and md.partitions_for_topic("ghost") is None
    ((_, request),) = c.sent
    assert request._topics == ["t", "ghost"] and request._allow_auto_topic_creation is False
    assert asyncio.run(topic_partitions(c, "ghost")) is None


def test_a_dead_broker_is_skipped_and_all_dead_raises_the_last_error():
    c = _Client(dead={1, 2})
    assert asyncio.run(topic_partitions(c, "t")) == {0, 1, 2}
    assert c.sent[-1][0] == 3 and len(c.sent) <= 3
    with pytest.raises(NodeNotReadyError):
        asyncio.run(metadata_of(_Client(dead={1, 2, 3}), ["t"]))


def test_no_broker_known_raises_a_connection_error():
    c = _Client(dead=set())
    c.cluster = ClusterMetadata()

    async def bootstrap() -> None:  # the bootstrap found no broker either
        return None

    c.get_random_node = lambda: None  # type: ignore[method-assign]
    c.bootstrap = bootstrap  # type: ignore[attr-defined]
    with pytest.raises(KafkaConnectionError):
        asyncio.run(metadata_of(c, ["t"]))
