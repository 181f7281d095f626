"""The commit queue (``services/runtime/commit_queue.py``): a task's next batches are decided while its
transaction is in flight and committed together after it, in order; a failed transaction drops what was
queued behind it (the restore reads it again); a checkpoint taken while later batches are decided keeps
their tables for the next one. Exercised on a task manager whose producer holds its transactions open until
the test lets them commit."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError

from contracts import topics as T
from services.runtime import commit_queue
from services.runtime.snapshot import snapshot_topic
from tests.services.runtime_fakes import Rec, RecordingProducer, manager

BETS = f"t.{T.WAGERING_BETS}"
TP = TopicPartition(BETS, 0)
CMDS = TopicPartition(f"t.{T.WAGERING_COMMANDS}", 0)
DLQ = f"t.{T.dlq('wagering')}"


@dataclass
class HeldProducer(RecordingProducer):
    """A recording producer whose transactions wait for ``release`` before they send their offsets;
    ``attempts``: the transactions that reached their offsets."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    attempts: int = 0

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.attempts += 1
        await self.release.wait()
        await super().send_offsets_to_transaction(offsets, group_id)


def held_manager() -> tuple[Any, HeldProducer]:
    tasks, _ = manager()
    tasks.version = None
    prod = HeldProducer()
    tasks.producers[0] = prod
    return tasks, prod


@pytest.mark.asyncio
async def test_the_next_batches_are_decided_while_a_transaction_commits_and_commit_after_it_together():
    tasks, prod = held_manager()
    # undecodable records: each makes a dead letter, an outcome that must be committed with its offset
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 4)]), 5)  # returns with its transaction in flight
    assert tasks.queue.busy(0) and prod.attempts == 1 and prod.committed == 0
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 5)]), 5)
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 6), Rec(BETS, 0, 7)]), 5)
    assert tasks.queue.queued[0].records == 3 and tasks.queue.queued[0].batches == 2
    assert prod.attempts == 1 and tasks.positions[0] == {}  # nothing committed yet, nothing skipped
    prod.release.set()
    await tasks.queue.drain()
    assert prod.committed == 2 and tasks.queue.merged == 1  # the two queued batches in one transaction
    assert prod.offsets == [({TP: 5}, "t.wagering"), ({TP: 8}, "t.wagering")]
    assert prod.sent == [(DLQ, 0, None)] * 4
    assert tasks.positions[0] == {TP: 8} and tasks.state[0] == "ready" and not tasks.queue.busy(0)


@pytest.mark.asyncio
async def test_a_failed_transaction_drops_what_was_queued_behind_it_and_restores_the_task():
    tasks, prod = held_manager()
    prod.refuse = KafkaConnectionError()
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 4)]), 5)
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 5)]), 5)
    assert tasks.host.dead_letters == 2
    prod.release.set()
    await tasks.queue.drain()
    assert prod.attempts == 1 and prod.committed == 0  # the queued batch was never written
    assert tasks.state[0] == "restoring" and tasks.enqueued == [0] and tasks.queue.queued == {}
    assert tasks.positions[0] == {} and 0 in tasks.stream.careful
    # both letters forgotten: the re-read after the restore dead-letters both records again
    assert tasks.host.dead_letters == 0


@pytest.mark.asyncio
async def test_a_table_changed_while_its_checkpoint_commits_goes_into_the_next_checkpoint():
    tasks, prod = held_manager()
    tasks.version = "v1"
    runner = tasks.host.runner
    tasks.partitions = 1
    runner.slot("T1")
    commit = asyncio.create_task(tasks.commits.commit(0, [], [], {TP: 6}, force_checkpoint=True))
    while prod.attempts == 0:
        await asyncio.sleep(0)
    assert runner.touched == set()  # in the checkpoint being written
    runner.slot("T2")
    runner.touched.add("T1")  # T1 changed again after its snapshot
    prod.release.set()
    await commit
    assert tasks.commits.checkpoints == 1 and runner.touched == {"T1", "T2"}


@pytest.mark.asyncio
async def test_offsets_deferred_beyond_a_transaction_in_flight_wait_for_the_next_one():
    tasks, prod = held_manager()
    loop = tasks.commits
    loop.defer(0, {TP: 5}, 1)
    commit = asyncio.create_task(loop.commit(0, [], [], {CMDS: 3}))
    while prod.attempts == 0:
        await asyncio.sleep(0)
    loop.defer(0, {TP: 9}, 1)
    prod.release.set()
    await commit
    assert prod.offsets == [({TP: 5, CMDS: 3}, "t.wagering")]
    assert loop.uncommitted == {0: {TP: 9}}
    await loop.commit(0, [], [], {TP: 7})  # the highest of each partition is committed, never a lower one
    assert prod.offsets[-1] == ({TP: 9}, "t.wagering") and loop.uncommitted == {}
    await loop.stop()


@dataclass
class CheckpointingProducer(HeldProducer):
    """A held producer that records, per committed transaction, whether it carried a checkpoint."""

    checkpoints: list[bool] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        start = len(self.sent)
        async with super().transaction():
            yield
        self.checkpoints.append(any(t == f"t.{snapshot_topic('wagering')}" for t, _, _ in self.sent[start:]))


@pytest.mark.asyncio
async def test_no_checkpoint_holds_a_batch_waiting_for_room_in_a_full_queue(monkeypatch):
    """Issue 30: a batch decided while its task's queue is full waits for the transaction in flight; the
    committer meanwhile begins the queued transaction, which must carry no checkpoint (the tables hold the
    waiting batch, its offsets are not in it: a restore from it would take that batch's records, read again,
    for duplicates and never write what they caused); the next transaction, with the batch, carries it."""
    monkeypatch.setattr(commit_queue, "MAX_QUEUED_RECORDS", 1)
    tasks, _ = manager()
    prod = CheckpointingProducer()
    tasks.producers[0] = prod  # type: ignore[assignment]
    tasks.commits.checkpoint_due = lambda p: True  # type: ignore[method-assign]  # every transaction would carry one
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 4)]), 5)  # its transaction held in flight
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 5)]), 5)  # queued behind it: the queue is full
    waiting = asyncio.create_task(tasks.on_records([Rec(BETS, 0, 6)]))  # decided, then waits for room
    while 0 not in tasks.stream.unqueued:
        await asyncio.sleep(0)
    prod.release.set()
    await asyncio.wait_for(waiting, 5)
    await tasks.queue.drain()
    assert prod.checkpoints == [True, False, True]  # before: [True, True, True]
    assert prod.offsets == [({TP: 5}, "t.wagering"), ({TP: 6}, "t.wagering"), ({TP: 7}, "t.wagering")]
    assert tasks.stream.unqueued == set() and tasks.positions[0] == {TP: 7}


@pytest.mark.asyncio
async def test_with_a_commit_interval_a_tasks_transactions_begin_at_most_that_often_and_merge_what_waited():
    tasks, prod = held_manager()
    prod.release.set()
    tasks.queue.interval_s = 0.2
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 4)]), 5)  # the first begins at once
    await asyncio.sleep(0.02)
    assert prod.attempts == 1
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 5)]), 5)
    await asyncio.wait_for(tasks.on_records([Rec(BETS, 0, 6)]), 5)
    await asyncio.sleep(0.05)
    assert prod.attempts == 1 and tasks.queue.queued[0].batches == 2  # waiting for the interval
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await tasks.queue.drain()
    assert prod.committed == 2 and tasks.queue.merged == 1  # the two waiting batches in one transaction
    assert loop.time() - t0 > 0.05  # it waited for the interval
    assert prod.offsets == [({TP: 5}, "t.wagering"), ({TP: 7}, "t.wagering")]
    t0 = loop.time()
    await tasks.queue.drain()  # nothing queued: a drain never waits for the interval
    assert loop.time() - t0 < 0.05 and not tasks.queue.busy(0)
