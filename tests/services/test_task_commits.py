"""The tasks of one batch commit concurrently, each through its own producer with its own offsets
(``services/runtime/tasks.py``, ``Tasks.on_records``; issue 8's pipeline latency).

The producers are fakes: a transaction's end waits at a barrier that opens only once every task of the
batch has entered its transaction. Committed one after another, the first would wait forever (the test
fails on its timeout); committed together, every transaction ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition

from contracts import topics as T
from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings
from services.runtime.tasks import Tasks
from services.settlement.core import SettlementCore


@dataclass
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: int = 0
    timestamp_type: int = 0


@dataclass
class FakeProducer:
    """Records what one task's transactions carried; each transaction's end waits at ``barrier``."""

    barrier: asyncio.Barrier
    sent: list[tuple[str, int]] = field(default_factory=list)
    offsets: list[dict[TopicPartition, int]] = field(default_factory=list)
    committed: int = 0

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        yield
        await asyncio.wait_for(self.barrier.wait(), 5)
        self.committed += 1

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(type("Meta", (), {"offset": len(self.sent) - 1})())
        return fut

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.offsets.append(dict(offsets))


def _tasks(partitions: int, barrier: asyncio.Barrier) -> tuple[Tasks, dict[int, FakeProducer]]:
    settings = Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=partitions)
    host = ServiceHost(SettlementCore(), settings, TasksOnly())
    tasks = Tasks(host, settings, "t.settlement")
    producers = {p: FakeProducer(barrier) for p in range(partitions)}
    tasks.producers = producers  # type: ignore[assignment]
    for p in range(partitions):
        tasks.state[p] = "ready"
        tasks.positions[p] = {}
    tasks.version = None  # no checkpoints in this test
    return tasks, producers


@pytest.mark.asyncio
async def test_a_batch_of_three_tasks_commits_them_concurrently() -> None:
    barrier = asyncio.Barrier(3)
    tasks, producers = _tasks(3, barrier)
    topic = f"t.{T.SETTLEMENT_COMMANDS}"
    # undecodable records: each is dead-lettered inside its task's transaction, with its offset
    batch = [Record(topic, p, 10 + p, None, b"\xff not msgpack") for p in (0, 1, 2)]
    await asyncio.wait_for(tasks.on_records(batch), 10)
    for p, prod in producers.items():
        assert prod.committed == 1
        assert prod.sent == [(f"t.{T.dlq('settlement')}", p)]
        assert prod.offsets == [{TopicPartition(topic, p): 11 + p}]
        assert tasks.positions[p] == {TopicPartition(topic, p): 11 + p}
    assert tasks.host.dead_letters == 3


@pytest.mark.asyncio
async def test_a_failed_task_is_restored_while_the_others_commit() -> None:
    barrier = asyncio.Barrier(2)
    tasks, producers = _tasks(3, barrier)
    enqueued: list[int] = []
    tasks._enqueue = enqueued.append  # type: ignore[method-assign]

    async def refuse(offsets: dict[TopicPartition, int], group_id: str) -> None:
        raise RuntimeError("broker went away")

    producers[1].send_offsets_to_transaction = refuse  # type: ignore[method-assign]
    topic = f"t.{T.SETTLEMENT_COMMANDS}"
    batch = [Record(topic, p, 5, None, b"\xff") for p in (0, 1, 2)]
    await asyncio.wait_for(tasks.on_records(batch), 10)
    assert [producers[p].committed for p in (0, 1, 2)] == [1, 0, 1]
    assert tasks.state == {0: "ready", 1: "restoring", 2: "ready"}
    assert enqueued == [1]
    assert tasks.positions[1] == {}  # not advanced: the restore seeks back and the record is read again
    assert tasks.positions[0] == {TopicPartition(topic, 0): 6}
    # the failed task's dead letter was forgotten, so the re-read dead-letters it again
    assert tasks.host.dead_letters == 2
