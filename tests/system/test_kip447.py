"""KIP-447 on aiokafka (:mod:`services.runtime.kip447`) against the real broker: input offsets sent in a
transaction with the consumer group's metadata, a zombie's commit fenced by the group coordinator and its
transaction aborted, and a new owner's offset fetch waiting for an open transaction (``require_stable``).

Each test joins one or two consumers to a group of its own (heartbeats every 100 ms so a rebalance completes in
well under a second) and writes through a transactional producer whose transactional id is *not* derived from
the partition: the group generation is what fences here.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import IllegalGenerationError, UnknownMemberIdError
from aiokafka.structs import TopicPartition

from services.runtime.kip447 import (
    FencedInstanceIdError,
    GroupMetadata,
    fetch_offsets,
    group_metadata,
    offset_fetch_stable,
    send_offsets_to_transaction,
)
from services.runtime.transaction_v2 import cluster_support, enable_transaction_v2, uses_transaction_v2
from tests.system.conftest import client_options

MakeTopic = Callable[..., Awaitable[str]]
JOIN_TIMEOUT_S = 30.0


def _uid(name: str) -> str:
    return f"kip447-{name}-{uuid.uuid4().hex[:10]}"


async def _member(bootstrap: str, group: str, topic: str, *, instance: str | None = None,
                  session_ms: int = 10_000) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(topic, **client_options(bootstrap), group_id=group, group_instance_id=instance,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                isolation_level="read_committed", session_timeout_ms=session_ms,
                                heartbeat_interval_ms=100)
    await consumer.start()
    return consumer


async def _until(members: list[AIOKafkaConsumer], done: Callable[[], bool]) -> dict[TopicPartition, list[Any]]:
    """Poll ``members`` (which drives their joins) until ``done()``; the records the first member got."""
    got: dict[TopicPartition, list[Any]] = {}
    deadline = asyncio.get_running_loop().time() + JOIN_TIMEOUT_S
    while not done():
        assert asyncio.get_running_loop().time() < deadline, "the group did not settle"
        for i, m in enumerate(members):
            batch = await m.getmany(timeout_ms=50)
            if i == 0:
                for tp, records in batch.items():
                    got.setdefault(tp, []).extend(records)
    return got


@pytest.fixture(params=[False, True], ids=["txn-v1", "txn-v2"])
def protocol_v2(request: pytest.FixtureRequest) -> bool:
    """Each test twice: the producer on aiokafka's transactions (version 1: AddPartitionsToTxn, AddOffsetsToTxn,
    TxnOffsetCommit v3/v4), and on version 2 (:mod:`services.runtime.transaction_v2`: TxnOffsetCommit v5 adds
    the offsets partition itself, each EndTxn bumps the epoch). Fencing by generation must hold in both."""
    return bool(request.param)


async def _producer(bootstrap: str, protocol_v2: bool) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(**client_options(bootstrap), transactional_id=_uid("txn"), enable_idempotence=True)
    await producer.start()
    if protocol_v2:  # the test broker (Kafka 4.4, formatted with its defaults) has transaction.version 2
        assert await enable_transaction_v2(producer), await cluster_support(producer.client)
        assert uses_transaction_v2(producer)
    return producer


async def _committed_values(bootstrap: str, topic: str, partitions: int = 1) -> tuple[list[bytes], int]:
    """What a read_committed reader sees in ``topic`` from offset zero, and how far it can read (the sum of
    the partitions' last stable offsets: an open transaction holds it back)."""
    reader = AIOKafkaConsumer(**client_options(bootstrap), isolation_level="read_committed",
                              enable_auto_commit=False)
    await reader.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        reader.assign(tps)
        await reader.seek_to_beginning(*tps)
        ends = await reader.end_offsets(tps)
        values: list[bytes] = []
        deadline = asyncio.get_running_loop().time() + JOIN_TIMEOUT_S
        while [await reader.position(tp) for tp in tps] < [ends[tp] for tp in tps]:
            assert asyncio.get_running_loop().time() < deadline, "the reader did not reach the end"
            for records in (await reader.getmany(timeout_ms=200)).values():
                values.extend(r.value for r in records)
        return values, sum(ends.values())
    finally:
        await reader.stop()


async def _high_watermarks(bootstrap: str, topic: str) -> int:
    reader = AIOKafkaConsumer(**client_options(bootstrap), isolation_level="read_uncommitted")
    await reader.start()
    try:
        tp = TopicPartition(topic, 0)
        return (await reader.end_offsets([tp]))[tp]
    finally:
        await reader.stop()


async def _seed(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(**client_options(bootstrap))
    await producer.start()
    try:
        for v in values:
            await producer.send_and_wait(topic, v, partition=0)
    finally:
        await producer.stop()


async def test_offsets_committed_with_the_group_metadata(kafka_bootstrap: str, kafka_topic: MakeTopic,
        protocol_v2: bool) -> None:
    src, out = await kafka_topic("in", partitions=1), await kafka_topic("out", partitions=1)
    await _seed(kafka_bootstrap, src, [b"a", b"b", b"c"])
    group = _uid("group")
    member = await _member(kafka_bootstrap, group, src)
    producer = await _producer(kafka_bootstrap, protocol_v2)
    try:
        tp = TopicPartition(src, 0)
        records: list[Any] = []
        deadline = asyncio.get_running_loop().time() + JOIN_TIMEOUT_S
        while len(records) < 3:
            assert asyncio.get_running_loop().time() < deadline
            records.extend((await member.getmany(tp, timeout_ms=200)).get(tp, []))
        meta = group_metadata(member)
        assert meta.group_id == group and meta.generation_id >= 1 and meta.member_id.startswith("aiokafka")
        assert meta.group_instance_id is None

        async with producer.transaction():
            for r in records:
                await producer.send(out, r.value.upper(), partition=0)
            await send_offsets_to_transaction(producer, {tp: records[-1].offset}, meta)
            await send_offsets_to_transaction(producer, {tp: records[-1].offset + 1}, meta)  # again (aiokafka #1098)

        assert await _committed_values(kafka_bootstrap, out) == ([b"A", b"B", b"C"], 3 + 1)  # + the marker
        assert await member.committed(tp) == 3
        assert await offset_fetch_stable(member, [tp]) == {tp: 3}
    finally:
        await producer.stop()
        await member.stop()


async def _zombie_commit(bootstrap: str, producer: AIOKafkaProducer, out: str, stale: GroupMetadata,
                         tp: TopicPartition) -> BaseException:
    """The zombie's transaction: writes two records, then sends offsets with its stale metadata; returns what
    that raised, after aborting the transaction as a fenced member must."""
    await producer.begin_transaction()
    await producer.send_and_wait(out, b"zombie-1", partition=0)
    await producer.send_and_wait(out, b"zombie-2", partition=0)
    with pytest.raises(Exception) as raised:
        await send_offsets_to_transaction(producer, {tp: 1}, stale)
    await producer.abort_transaction()
    return raised.value


async def _after_the_zombie(bootstrap: str, producer: AIOKafkaProducer, out: str) -> None:
    """What a read_committed reader sees once the zombie aborted: none of its records, the partition readable
    to its end (the abort markers are written: nothing left open), and the same producer's next transaction
    alone (a transaction left open on the broker would take the zombie's records into that commit)."""
    values, stable = await _committed_values(bootstrap, out)
    assert values == []
    assert stable == await _high_watermarks(bootstrap, out) == 2 + 1  # two aborted records and the abort marker
    async with producer.transaction():
        await producer.send_and_wait(out, b"next", partition=0)
    assert (await _committed_values(bootstrap, out))[0] == [b"next"]


async def test_a_zombie_of_an_old_generation_is_fenced(kafka_bootstrap: str, kafka_topic: MakeTopic,
        protocol_v2: bool) -> None:
    src, out = await kafka_topic("in", partitions=2), await kafka_topic("out", partitions=1)
    group = _uid("group")
    first = await _member(kafka_bootstrap, group, src)
    second: AIOKafkaConsumer | None = None
    producer = await _producer(kafka_bootstrap, protocol_v2)
    try:
        await _until([first], lambda: len(first.assignment()) == 2)
        stale = group_metadata(first)
        second = await _member(kafka_bootstrap, group, src)  # joins: the group rebalances
        members = [first, second]
        await _until(members, lambda: all(len(m.assignment()) == 1 for m in members)
                     and group_metadata(first).generation_id == group_metadata(second).generation_id)
        now = group_metadata(first)
        assert now.generation_id > stale.generation_id and now.member_id == stale.member_id
        tp = TopicPartition(src, 0)

        error = await _zombie_commit(kafka_bootstrap, producer, out, stale, tp)

        assert isinstance(error, IllegalGenerationError), repr(error)
        assert f"generation {stale.generation_id}" in str(error)
        assert await first.committed(tp) is None  # the fenced offsets were never committed
        await _after_the_zombie(kafka_bootstrap, producer, out)
        async with producer.transaction():  # the same member with its current metadata commits as before
            await send_offsets_to_transaction(producer, {tp: 1}, group_metadata(first))
        # committed once the broker has written the commit marker into the offsets topic, which follows EndTxn's
        # answer: asked again for up to 10 s (a loaded CI run read None right after the commit)
        for _ in range(50):
            if await first.committed(tp) == 1:
                break
            await asyncio.sleep(0.2)
        assert await first.committed(tp) == 1
    finally:
        await producer.stop()
        for m in (first, second):
            if m is not None:
                await m.stop()


async def test_a_static_member_replaced_by_its_twin_is_fenced(kafka_bootstrap: str, kafka_topic: MakeTopic,
        protocol_v2: bool) -> None:
    src, out = await kafka_topic("in", partitions=1), await kafka_topic("out", partitions=1)
    group, instance = _uid("group"), _uid("instance")
    first = await _member(kafka_bootstrap, group, src, instance=instance)
    twin: AIOKafkaConsumer | None = None
    producer = await _producer(kafka_bootstrap, protocol_v2)
    try:
        await _until([first], lambda: len(first.assignment()) == 1)
        stale = group_metadata(first)
        assert stale.group_instance_id == instance
        await first.stop()  # paused, as far as the group knows: a static member sends no LeaveGroup
        twin = await _member(kafka_bootstrap, group, src, instance=instance)
        await _until([twin], lambda: len(twin.assignment()) == 1)
        assert group_metadata(twin).member_id != stale.member_id

        error = await _zombie_commit(kafka_bootstrap, producer, out, stale, TopicPartition(src, 0))

        assert isinstance(error, FencedInstanceIdError), repr(error)
        await _after_the_zombie(kafka_bootstrap, producer, out)
    finally:
        await producer.stop()
        await first.stop()
        if twin is not None:
            await twin.stop()


async def test_a_member_that_left_is_fenced(kafka_bootstrap: str, kafka_topic: MakeTopic,
        protocol_v2: bool) -> None:
    src, out = await kafka_topic("in", partitions=2), await kafka_topic("out", partitions=1)
    group = _uid("group")
    first = await _member(kafka_bootstrap, group, src)
    second = await _member(kafka_bootstrap, group, src)
    producer = await _producer(kafka_bootstrap, protocol_v2)
    try:
        members = [first, second]
        await _until(members, lambda: all(len(m.assignment()) == 1 for m in members))
        stale = group_metadata(first)
        await first.stop()  # leaves the group (LeaveGroup): its member id is gone, the group lives on

        error = await _zombie_commit(kafka_bootstrap, producer, out, stale, TopicPartition(src, 0))

        assert isinstance(error, UnknownMemberIdError), repr(error)  # validated before the generation
        await _after_the_zombie(kafka_bootstrap, producer, out)
    finally:
        await producer.stop()
        await second.stop()


async def test_a_member_paused_past_its_session_is_fenced(kafka_bootstrap: str, kafka_topic: MakeTopic,
        protocol_v2: bool) -> None:
    """The zombie does not know it was evicted: it reads its group metadata when it commits, as a resumed
    process would, and still gets fenced. Lasts the broker's minimum session timeout (6 s)."""
    src, out = await kafka_topic("in", partitions=2), await kafka_topic("out", partitions=1)
    group = _uid("group")
    paused = await _member(kafka_bootstrap, group, src, session_ms=6_000)
    other = await _member(kafka_bootstrap, group, src)
    producer = await _producer(kafka_bootstrap, protocol_v2)
    try:
        members = [paused, other]
        await _until(members, lambda: all(len(m.assignment()) == 1 for m in members))
        before = group_metadata(paused)
        await paused._coordinator._stop_heartbeat_task()  # paused: silent to the group, unaware of the rest
        await _until([other], lambda: len(other.assignment()) == 2)  # evicted after its session: other has all
        assert group_metadata(other).generation_id > before.generation_id
        resumed = group_metadata(paused)
        assert resumed == before  # what the zombie believes when it resumes

        error = await _zombie_commit(kafka_bootstrap, producer, out, resumed, TopicPartition(src, 0))

        assert isinstance(error, UnknownMemberIdError), repr(error)
        await _after_the_zombie(kafka_bootstrap, producer, out)
    finally:
        await producer.stop()
        await other.stop()
        await paused.stop()


async def test_a_new_owner_waits_for_the_open_transaction(kafka_bootstrap: str, kafka_topic: MakeTopic,
        protocol_v2: bool) -> None:
    src, out = await kafka_topic("in", partitions=1), await kafka_topic("out", partitions=1)
    group = _uid("group")
    member = await _member(kafka_bootstrap, group, src)
    producer = await _producer(kafka_bootstrap, protocol_v2)
    owner = AIOKafkaConsumer(**client_options(kafka_bootstrap), group_id=group, enable_auto_commit=False)
    await owner.start()  # the next owner: asks for the group's offsets only
    try:
        await _until([member], lambda: len(member.assignment()) == 1)
        tp = TopicPartition(src, 0)
        await producer.begin_transaction()
        await producer.send_and_wait(out, b"x", partition=0)
        await send_offsets_to_transaction(producer, {tp: 17}, group_metadata(member))

        assert await fetch_offsets(owner._client, group, [tp]) == {tp: (-1, 88)}  # UNSTABLE_OFFSET_COMMIT
        assert await fetch_offsets(owner._client, group, [tp], require_stable=False) == {tp: (-1, 0)}
        waits: list[list[TopicPartition]] = []
        seen = asyncio.Event()

        def unstable(tps: list[TopicPartition]) -> None:
            waits.append(tps)
            seen.set()

        fetch = asyncio.create_task(offset_fetch_stable(owner, [tp], on_unstable=unstable, backoff_s=0.02))
        await seen.wait()
        assert not fetch.done() and waits[0] == [tp]
        await producer.commit_transaction()

        assert await fetch == {tp: 17}
        assert await fetch_offsets(owner._client, group, [tp]) == {tp: (17, 0)}
    finally:
        await producer.stop()
        await owner.stop()
        await member.stop()
