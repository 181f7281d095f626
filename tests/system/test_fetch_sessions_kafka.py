"""Incremental fetch sessions (KIP-227, :mod:`services.runtime.fetch_sessions`) against the real broker.

A consumer fetching in sessions must read what aiokafka's own reads, record for record: every record of every
partition once and in order, whatever moves between fetches (records on a few partitions at a time, a seek
back, a pause, a transaction aborted), and recover when the broker ends its session. Each test also checks that
the session was used (one full request, then incremental ones naming a few partitions), so a consumer that had
quietly fallen back to full fetches fails it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from services.runtime.fetch_sessions import SessionConsumer, SessionFetcher
from tests.system.conftest import client_options

MakeTopic = Callable[..., Awaitable[str]]
PARTITIONS = 12
READ_TIMEOUT_S = 30.0


@pytest.fixture
async def producer(kafka_bootstrap: str) -> AsyncIterator[AIOKafkaProducer]:
    """A started idempotent producer, stopped after the test."""
    started = AIOKafkaProducer(**client_options(kafka_bootstrap), enable_idempotence=True)
    await started.start()
    yield started
    await started.stop()


async def _consumer(bootstrap: str, topic: str, cls: type[AIOKafkaConsumer] = SessionConsumer,
                    **options: Any) -> AIOKafkaConsumer:
    consumer = cls(**client_options(bootstrap), enable_auto_commit=False, auto_offset_reset="earliest",
                   isolation_level="read_committed", fetch_max_wait_ms=200, **options)
    await consumer.start()
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    return consumer


async def _read(consumer: AIOKafkaConsumer, want: int) -> dict[int, list[bytes]]:
    """``want`` records, by partition, in the order read (fails after :data:`READ_TIMEOUT_S`)."""
    got: dict[int, list[bytes]] = {}
    deadline = asyncio.get_running_loop().time() + READ_TIMEOUT_S
    n = 0
    while n < want:
        assert asyncio.get_running_loop().time() < deadline, f"read {n} of {want} records"
        for tp, records in (await consumer.getmany(timeout_ms=100)).items():
            got.setdefault(tp.partition, []).extend(r.value for r in records)
            n += len(records)
    return got


async def _nothing_more(consumer: AIOKafkaConsumer, wait_ms: int = 600) -> None:
    extra = await consumer.getmany(timeout_ms=wait_ms)
    assert not any(extra.values()), f"read more than was written: {extra}"


def _session(consumer: AIOKafkaConsumer) -> Any:
    fetcher = consumer._fetcher
    assert isinstance(fetcher, SessionFetcher)
    (session,) = fetcher.sessions.values()  # one broker
    return session


async def test_a_session_consumer_reads_every_record_once_in_order_naming_few_partitions(
        kafka_bootstrap: str, kafka_topic: MakeTopic, producer: AIOKafkaProducer) -> None:
    topic = await kafka_topic(partitions=PARTITIONS)
    consumer = await _consumer(kafka_bootstrap, topic)
    try:
        written: dict[int, list[bytes]] = {}
        read: dict[int, list[bytes]] = {}
        for i in range(120):  # a record on one partition at a time, as a floor's cards come
            p = (i * 7) % PARTITIONS
            value = f"{p}:{i}".encode()
            await producer.send_and_wait(topic, value, partition=p)
            written.setdefault(p, []).append(value)
            for q, values in (await _read(consumer, 1)).items():
                read.setdefault(q, []).extend(values)
        assert read == written
        await _nothing_more(consumer)
        session = _session(consumer)
        assert session.session_id != 0 and session.resets == 0
        assert session.full_requests == 1 and session.incremental_requests >= 100
        # a full fetch names all 12 partitions; here a fetch names the one that moved (and the first all 12)
        assert session.partitions_sent / (session.full_requests + session.incremental_requests) < 2
    finally:
        await consumer.stop()


async def test_a_seek_back_a_pause_and_an_aborted_transaction_read_as_aiokafka_reads_them(
        kafka_bootstrap: str, kafka_topic: MakeTopic, producer: AIOKafkaProducer) -> None:
    topic = await kafka_topic(partitions=PARTITIONS)
    txn = AIOKafkaProducer(**client_options(kafka_bootstrap), transactional_id=f"{topic}-txn")
    await txn.start()
    session_reader = await _consumer(kafka_bootstrap, topic)
    plain_reader = await _consumer(kafka_bootstrap, topic, cls=AIOKafkaConsumer)
    readers = (session_reader, plain_reader)
    try:
        for p in range(PARTITIONS):
            await producer.send_and_wait(topic, f"first-{p}".encode(), partition=p)
        for r in readers:
            assert sum(map(len, (await _read(r, PARTITIONS)).values())) == PARTITIONS
        # an aborted transaction on partition 3, then a committed record there
        await txn.begin_transaction()
        await txn.send_and_wait(topic, b"aborted", partition=3)
        await txn.abort_transaction()
        await producer.send_and_wait(topic, b"after-abort", partition=3)
        for r in readers:
            assert await _read(r, 1) == {3: [b"after-abort"]}
        # partition 5 paused: a record written meanwhile waits for its resume; partition 6 reads meanwhile
        tp5 = TopicPartition(topic, 5)
        for r in readers:
            r.pause(tp5)
        await producer.send_and_wait(topic, b"while-paused", partition=5)
        await producer.send_and_wait(topic, b"beside-the-pause", partition=6)
        for r in readers:
            assert await _read(r, 1) == {6: [b"beside-the-pause"]}
            await _nothing_more(r, 400)
            r.resume(tp5)
            assert await _read(r, 1) == {5: [b"while-paused"]}
        # a seek back on partition 0 reads it again from the start
        for r in readers:
            r.seek(TopicPartition(topic, 0), 0)
            assert await _read(r, 1) == {0: [b"first-0"]}
            await _nothing_more(r, 400)
        session = _session(session_reader)
        assert session.full_requests == 1 and session.resets == 0 and session.incremental_requests > 0
    finally:
        for r in readers:
            await r.stop()
        await txn.stop()


async def test_a_session_the_broker_no_longer_knows_is_opened_again_without_losing_a_record(
        kafka_bootstrap: str, kafka_topic: MakeTopic, producer: AIOKafkaProducer) -> None:
    topic = await kafka_topic(partitions=PARTITIONS)
    consumer = await _consumer(kafka_bootstrap, topic)
    try:
        n = 0

        async def write_and_read(count: int) -> None:
            nonlocal n
            values = []
            for _ in range(count):
                values.append(f"r{n}".encode())
                await producer.send_and_wait(topic, values[-1], partition=n % PARTITIONS)
                n += 1
            got = await _read(consumer, count)
            assert sorted(v for vs in got.values() for v in vs) == sorted(values)

        await write_and_read(24)
        session = _session(consumer)
        opened = session.session_id
        # the next request's epoch is one the broker does not expect: INVALID_FETCH_SESSION_EPOCH (71). (A fetch
        # in flight meanwhile would set the epoch right again when answered: then the next round tries again.)
        for _ in range(5):
            session.epoch += 5
            await write_and_read(24)
            if session.resets:
                break
        assert session.resets == 1 and session.full_requests == 2
        # then a session id the broker never gave: FETCH_SESSION_ID_NOT_FOUND (70)
        session.session_id = 0x7FFF_FFF0 if session.session_id != 0x7FFF_FFF0 else 0x7FFF_FFF1
        await write_and_read(24)
        assert session.resets == 2 and session.full_requests == 3
        assert session.session_id not in (0, opened)  # a new session, in use again
        await write_and_read(12)
        await _nothing_more(consumer)
    finally:
        await consumer.stop()
