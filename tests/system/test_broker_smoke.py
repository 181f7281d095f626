"""Smoke test of the real broker: topic creation with per-topic retention, keyed produce, replay."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.system.conftest import client_options

N_MESSAGES = 100
N_KEYS = 7
PARTITIONS = 4


async def test_produce_and_replay_keyed_messages(kafka_bootstrap: str, kafka_topic) -> None:
    topic = await kafka_topic("events", partitions=PARTITIONS, config={"retention.ms": "-1"})

    # The per-topic retention override reads back (event topics must never expire).
    admin = AIOKafkaAdminClient(**client_options(kafka_bootstrap))
    await admin.start()
    try:
        [response] = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": None})]
        )
    finally:
        await admin.close()
    [resource] = response.to_object()["resources"]
    assert resource["error_code"] == 0, resource
    entries = {e["config_names"]: e["config_value"] for e in resource["config_entries"]}
    assert entries["retention.ms"] == "-1"

    # Produce 100 keyed messages; remember where the broker put each one.
    sent: list[tuple[bytes, bytes]] = [
        (f"table-{i % N_KEYS}".encode(), f"event-{i:03d}".encode()) for i in range(N_MESSAGES)
    ]
    producer = AIOKafkaProducer(**client_options(kafka_bootstrap), acks="all", enable_idempotence=True)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=k, value=v) for k, v in sent]
        metadata = await asyncio.gather(*futures)
    finally:
        await producer.stop()

    expected: dict[int, list[tuple[int, bytes, bytes]]] = defaultdict(list)
    partition_of_key: dict[bytes, int] = {}
    for (key, value), md in zip(sent, metadata, strict=True):
        assert md.topic == topic
        # One key, one partition (the murmur2 partitioner is deterministic).
        assert partition_of_key.setdefault(key, md.partition) == md.partition
        expected[md.partition].append((md.offset, key, value))
    for records in expected.values():
        offsets = [offset for offset, _, _ in records]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), "offsets not contiguous"
    assert len(expected) > 1, "all keys landed on one partition: the partitioner is not spreading keys"

    # Replay the whole topic from the beginning, as a service rebuilding its state would.
    consumer = AIOKafkaConsumer(
        **client_options(kafka_bootstrap),
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        end_offsets = await consumer.end_offsets(partitions)
        assert sum(end_offsets.values()) == N_MESSAGES

        received: dict[int, list[tuple[int, bytes, bytes]]] = defaultdict(list)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while sum(len(r) for r in received.values()) < N_MESSAGES:
            assert loop.time() < deadline, f"timed out, got {sum(len(r) for r in received.values())}"
            batches = await consumer.getmany(timeout_ms=1000, max_records=50)
            for tp, records in batches.items():
                received[tp.partition].extend((r.offset, r.key, r.value) for r in records)
    finally:
        await consumer.stop()

    assert dict(received) == dict(expected)
    # Per partition the order is the produce order.
    for records in received.values():
        values = [value for _, _, value in records]
        assert values == sorted(values)
    assert sorted(v for records in received.values() for _, _, v in records) == [v for _, v in sent]
