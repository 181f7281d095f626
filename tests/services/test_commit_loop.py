"""The commit loop (``services/runtime/commit_loop.py``): deferred offsets, what a transaction carries, and
checkpoints, exercised on a task manager with a recording producer."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import ProducerFenced
from aiokafka.producer.transaction_manager import TransactionManager

from contracts import topics as T
from services.runtime import commit_loop
from services.runtime import snapshot as S
from services.runtime.producers import retrieve_transaction_error
from services.runtime.record_collector import TaskFailed
from tests.services.runtime_fakes import RecordingProducer, manager

BETS = TopicPartition(f"t.{T.WAGERING_BETS}", 0)
CMDS = TopicPartition(f"t.{T.WAGERING_COMMANDS}", 0)


@pytest.mark.asyncio
async def test_deferred_offsets_keep_the_highest_and_ride_with_the_next_transaction():
    tasks, prod = manager()
    tasks.version = None
    loop = tasks.commits
    assert loop.may_defer(0, 10)
    loop.defer(0, {BETS: 5}, 3)
    loop.defer(0, {BETS: 4, CMDS: 9}, 2)  # an older offset never lowers what waits
    assert loop.uncommitted == {0: {BETS: 5, CMDS: 9}} and loop.deferred_records == {0: 5}
    assert loop.flusher is not None and not loop.flusher.done()
    await loop.commit(0, [], [], {BETS: 7}, handled=1)
    assert prod.offsets == [({BETS: 7, CMDS: 9}, "t.wagering")]
    assert loop.uncommitted == {} and loop.deferred_since == {} and loop.deferred_records == {}
    assert loop.since_checkpoint[0] == 5 + 1  # the deferred records and this transaction's
    await loop.stop()
    assert loop.flusher is None


@pytest.mark.asyncio
async def test_no_deferral_past_the_record_bound_or_the_age_bound(monkeypatch):
    tasks, _ = manager()
    tasks.version = None
    loop = tasks.commits
    assert not loop.may_defer(0, commit_loop.DEFER_MAX_RECORDS)
    loop.defer(0, {BETS: 1}, 1)
    assert loop.may_defer(0, 1)
    loop.deferred_since[0] = time.monotonic() - commit_loop.DEFER_MAX_S
    assert not loop.may_defer(0, 1)
    loop.forget(0)
    assert loop.uncommitted == {} and loop.may_defer(0, 1)
    await loop.stop()


@pytest.mark.asyncio
async def test_the_flusher_commits_only_offsets_old_enough():
    tasks, prod = manager()
    tasks.version = None
    loop = tasks.commits
    loop.uncommitted[0] = {BETS: 3}
    loop.deferred_since[0] = 100.0
    assert await loop.flush_deferred(now=100.5) == 0 and prod.offsets == []
    assert await loop.flush_deferred(now=101.0) == 1
    assert prod.offsets == [({BETS: 3}, "t.wagering")] and loop.uncommitted == {}


@pytest.mark.asyncio
async def test_a_failed_flush_restores_the_task():
    tasks, prod = manager()
    tasks.version = None
    prod.refuse = ProducerFenced()
    tasks.commits.uncommitted[0] = {BETS: 3}
    tasks.commits.deferred_since[0] = 0.0
    assert await tasks.commits.flush_deferred(now=10.0) == 0
    assert tasks.state[0] == "restoring" and tasks.enqueued == [0]  # type: ignore[attr-defined]
    assert tasks.aborts == 1 and tasks.fenced == 1 and 0 in tasks._failing_since
    assert tasks.commits.uncommitted == {0: {BETS: 3}}  # kept: the restore reads them again


@pytest.mark.asyncio
async def test_no_transaction_begins_without_a_producer_or_on_a_fenced_one():
    tasks, prod = manager()
    with pytest.raises(TaskFailed, match="no producer"):
        await tasks.commits.commit(1, [], [], {BETS: 1})
    txn = TransactionManager("t", 60_000)
    txn.set_pid_and_epoch(1, 0)
    txn.begin_transaction()
    txn.fatal_error(ProducerFenced())
    prod._txn_manager = txn  # type: ignore[attr-defined]
    with pytest.raises(TaskFailed, match="fenced"):
        await tasks.commits.commit(0, [], [], {BETS: 1})
    assert prod.committed == 0 and prod.offsets == []
    retrieve_transaction_error(prod)


@pytest.mark.asyncio
async def test_a_checkpoint_carries_each_changed_table_and_the_offsets_it_covers():
    tasks, prod = manager(partitions=1)
    runner = tasks.host.runner
    runner.slot("T1").seq = {"wagering.events": 4}
    tasks.positions[0] = {CMDS: 2}
    tasks.own_next[0] = {"wagering.events": 12}
    records = tasks.commits.checkpoint_records(0, {BETS: 6}, force=True)
    assert [k for k, _ in records] == [T.key("T1"), S.CHECKPOINT_KEY]
    snap = S.decode_table(records[0][1])
    assert snap.table_id == "T1" and snap.seq == {"wagering.events": 4} and snap.version == tasks.version
    cp = S.decode_checkpoint(records[1][1])
    assert cp.inputs == {T.WAGERING_COMMANDS: 2, T.WAGERING_BETS: 6} and cp.own == {"wagering.events": 12}
    assert cp.tables == 1 and cp.partition == 0
    await tasks.commits.commit(0, [], [], {BETS: 6}, force_checkpoint=True)
    assert [topic for topic, _, _ in prod.sent] == ["t.wagering.snapshots"] * 2
    assert tasks.commits.checkpoints == 1 and tasks.commits.since_checkpoint[0] == 0
    assert runner.touched == set() and 0 in tasks.snapshot_at


def test_no_checkpoint_without_a_state_version_or_before_one_is_due():
    tasks, _ = manager(partitions=1)
    tasks.host.runner.slot("T1")
    tasks.commits.last_checkpoint[0] = time.monotonic()
    assert tasks.commits.checkpoint_records(0, {}) == []  # not due yet
    tasks.version = None
    assert tasks.commits.checkpoint_records(0, {}, force=True) == []


class SlowProducer(RecordingProducer):
    """A recording producer whose offsets take a while, counting the transactions in flight at once."""

    in_flight = 0
    most = 0

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        SlowProducer.in_flight += 1
        SlowProducer.most = max(SlowProducer.most, SlowProducer.in_flight)
        try:
            await asyncio.sleep(0)  # another task's transaction may start meanwhile
            await asyncio.sleep(0)
            await super().send_offsets_to_transaction(offsets, group_id)
        finally:
            SlowProducer.in_flight -= 1


@pytest.mark.asyncio
async def test_the_flusher_commits_quiet_tasks_concurrently_and_a_failure_restores_only_its_task():
    """The host's lock is held about one transaction, not one per quiet task (issue 25): three tasks' flushes
    are in flight at once; the one refused is restored, the others commit."""
    tasks, _ = manager(ready=(0, 1, 2))
    tasks.version = None
    prods = {p: SlowProducer() for p in (0, 1, 2)}
    prods[1].refuse = ProducerFenced()
    SlowProducer.in_flight = SlowProducer.most = 0
    for p, prod in prods.items():
        tasks.producers[p] = prod  # type: ignore[assignment]
        tasks.commits.uncommitted[p] = {TopicPartition(BETS.topic, p): 3 + p}
        tasks.commits.deferred_since[p] = 0.0
    assert await tasks.commits.flush_deferred(now=10.0) == 2
    assert SlowProducer.most == 3
    assert prods[0].offsets == [({TopicPartition(BETS.topic, 0): 3}, "t.wagering")]
    assert prods[2].offsets == [({TopicPartition(BETS.topic, 2): 5}, "t.wagering")]
    assert prods[1].offsets == [] and tasks.state[1] == "restoring" and tasks.enqueued == [1]  # type: ignore[attr-defined]
    assert tasks.commits.uncommitted == {1: {TopicPartition(BETS.topic, 1): 4}}


class HeldProducer(RecordingProducer):
    """A recording producer whose offsets wait for ``release`` (a transaction in flight, held open)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.waiting.set()
        await self.release.wait()
        await super().send_offsets_to_transaction(offsets, group_id)


@pytest.mark.asyncio
async def test_a_flush_in_flight_holds_neither_the_hosts_lock_nor_its_tasks_next_outcome_back():
    """Issue 30: the flusher's transactions commit outside the host's lock, through the task's committer: a
    batch of any task is decided while one is in flight, and one of the flushed task queues behind it."""
    tasks, _ = manager(ready=(0, 1))
    tasks.version = None
    held = HeldProducer()
    tasks.producers[0] = held  # type: ignore[assignment]
    tasks.commits.uncommitted[0] = {BETS: 3}
    tasks.commits.deferred_since[0] = 0.0
    flush = asyncio.create_task(tasks.commits.flush_deferred(now=10.0))
    await asyncio.wait_for(held.waiting.wait(), 5)
    assert not tasks.host.lock.locked()  # before: held until every flushed task had committed
    assert tasks.queue.busy(0)
    await tasks.queue.submit(0, [], [], {BETS: 8}, 5)  # the flushed task's next batch: behind the flush
    assert tasks.queue.queued[0].offsets == {BETS: 8} and held.offsets == []
    held.release.set()
    assert await asyncio.wait_for(flush, 5) == 1
    await tasks.queue.drain(0)
    assert held.offsets == [({BETS: 3}, "t.wagering"), ({BETS: 8}, "t.wagering")]
    assert tasks.commits.uncommitted == {} and tasks.positions[0][BETS] == 8
