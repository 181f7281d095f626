"""Version 2 transactions (:mod:`services.runtime.transaction_v2`, KIP-890 part 2) against the real broker: no
AddPartitionsToTxn nor AddOffsetsToTxn on the wire, one epoch per ended transaction, exactly the committed
records visible to a ``read_committed`` reader, and transactions with offsets one right after another (the
previous one's markers still being written) all committed. Fencing by the group's generation under version 2:
the ``txn-v2`` runs of tests/system/test_kip447.py."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from services.runtime.kip447 import group_metadata, offset_fetch_stable, send_offsets_to_transaction
from services.runtime.transaction_v2 import cluster_support, enable_transaction_v2
from tests.system.conftest import client_options

MakeTopic = Callable[..., Awaitable[str]]


async def _v2_producer(bootstrap: str) -> tuple[AIOKafkaProducer, Counter[int]]:
    """A started transactional producer on version 2, and a count of the requests it sends by API key."""
    producer = AIOKafkaProducer(**client_options(bootstrap), transactional_id=f"txn-v2-{uuid.uuid4().hex[:10]}",
                                enable_idempotence=True, acks="all")
    await producer.start()
    assert await enable_transaction_v2(producer), await cluster_support(producer.client)
    sent: Counter[int] = Counter()
    client = producer.client
    original = client.send

    async def counting(node_id: int, request: Any, **kw: Any) -> Any:
        sent[request.API_KEY] += 1
        return await original(node_id, request, **kw)

    client.send = counting
    return producer, sent


async def _read(bootstrap: str, topic: str, partitions: int, isolation: str) -> dict[int, list[bytes]]:
    reader = AIOKafkaConsumer(**client_options(bootstrap), isolation_level=isolation, enable_auto_commit=False)
    await reader.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        reader.assign(tps)
        await reader.seek_to_beginning(*tps)
        ends = await reader.end_offsets(tps)
        got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        deadline = asyncio.get_running_loop().time() + 30
        while [await reader.position(tp) for tp in tps] < [ends[tp] for tp in tps]:
            assert asyncio.get_running_loop().time() < deadline, "the reader did not reach the end"
            for tp, records in (await reader.getmany(timeout_ms=200)).items():
                got[tp.partition] += [r.value for r in records]
        return got
    finally:
        await reader.stop()


async def test_commits_and_aborts_without_add_requests_one_epoch_each(kafka_bootstrap: str,
                                                                      kafka_topic: MakeTopic) -> None:
    out = await kafka_topic("out", partitions=2)
    producer, sent = await _v2_producer(kafka_bootstrap)
    try:
        txn = producer._txn_manager
        pid, epoch = txn.producer_id, txn.producer_epoch
        for i in range(3):
            async with producer.transaction():
                for p in (0, 1):
                    await producer.send(out, f"c{i}-{p}".encode(), partition=p)
        await producer.begin_transaction()
        await (await producer.send(out, b"aborted", partition=1))
        await producer.abort_transaction()
        async with producer.transaction():
            await (await producer.send(out, b"last", partition=1))

        assert (txn.producer_id, txn.producer_epoch) == (pid, epoch + 5)  # each EndTxn bumped it once
        assert sent[24] == 0 and sent[25] == 0  # no AddPartitionsToTxn, no AddOffsetsToTxn
        assert sent[26] == 5  # one EndTxn per transaction, the abort's too
        assert await _read(kafka_bootstrap, out, 2, "read_committed") == {
            0: [b"c0-0", b"c1-0", b"c2-0"], 1: [b"c0-1", b"c1-1", b"c2-1", b"last"]}
        # the aborted record was written and aborted, not dropped: an uncommitted reader sees it
        assert b"aborted" in (await _read(kafka_bootstrap, out, 2, "read_uncommitted"))[1]
    finally:
        await producer.stop()


async def test_offsets_in_transactions_one_right_after_another(kafka_bootstrap: str, kafka_topic: MakeTopic) -> None:
    src, out = await kafka_topic("in", partitions=1), await kafka_topic("out", partitions=1)
    group = f"txn-v2-group-{uuid.uuid4().hex[:10]}"
    member = AIOKafkaConsumer(src, **client_options(kafka_bootstrap), group_id=group, enable_auto_commit=False,
                              auto_offset_reset="earliest", heartbeat_interval_ms=100)
    await member.start()
    producer, sent = await _v2_producer(kafka_bootstrap)
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while not member.assignment():
            assert asyncio.get_running_loop().time() < deadline, "the member never joined"
            await member.getmany(timeout_ms=100)
        tp = TopicPartition(src, 0)
        n = 30
        for i in range(n):  # each begins as soon as the one before is answered: its markers are still being written
            async with producer.transaction():
                await producer.send(out, f"r{i}".encode(), partition=0)
                await send_offsets_to_transaction(producer, {tp: i + 1}, group_metadata(member))

        assert sent[24] == 0 and sent[25] == 0 and sent[26] == n
        assert sent[28] >= n  # one TxnOffsetCommit v5 each, more where CONCURRENT_TRANSACTIONS asked again
        assert await offset_fetch_stable(member, [tp]) == {tp: n}
        assert (await _read(kafka_bootstrap, out, 1, "read_committed"))[0] == [f"r{i}".encode() for i in range(n)]
    finally:
        await producer.stop()
        await member.stop()
