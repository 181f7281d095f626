"""The stream task (``services/runtime/stream_task.py``): a task's records handled and committed with their
offsets, deferred when they caused nothing, and what a failed transaction leaves (careful mode, strikes,
poison), exercised on a task manager with a recording producer."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError, ProducerFenced

from contracts import topics as T
from services.runtime.stream_task import log_time, next_offsets
from tests.services.runtime_fakes import Rec, manager

CMDS, BETS = f"t.{T.WAGERING_COMMANDS}", f"t.{T.WAGERING_BETS}"


def test_the_logs_time_only_from_a_log_append_time_topic():
    assert log_time(Rec(CMDS, 0, 1, timestamp=1234, timestamp_type=1)) == 1234
    assert log_time(Rec(CMDS, 0, 1, timestamp=1234, timestamp_type=0)) is None


def test_next_offsets_per_input_partition():
    recs = [Rec(CMDS, 2, 5), Rec(BETS, 2, 9), Rec(CMDS, 2, 7)]
    assert next_offsets(recs, 2) == {TopicPartition(CMDS, 2): 8, TopicPartition(BETS, 2): 10}


@pytest.mark.asyncio
async def test_an_undecodable_record_is_dead_lettered_in_its_offsets_transaction():
    tasks, prod = manager()
    tasks.version = None
    await tasks.stream.process(0, [Rec(BETS, 0, 4)])
    await tasks.queue.drain()  # committed behind the call (the commit queue)
    assert prod.sent == [(f"t.{T.dlq('wagering')}", 0, None)]
    assert prod.offsets == [({TopicPartition(BETS, 0): 5}, "t.wagering")]
    assert tasks.positions[0] == {TopicPartition(BETS, 0): 5}
    await tasks.stream.process(0, [Rec(BETS, 0, 4)])  # already handled: nothing again
    assert prod.committed == 1


@pytest.mark.asyncio
async def test_a_task_not_ready_handles_nothing():
    tasks, prod = manager()
    tasks.state[0] = "restoring"
    await tasks.stream.process(0, [Rec(BETS, 0, 4)])
    assert prod.sent == [] and prod.committed == 0


@pytest.mark.asyncio
async def test_a_failed_transaction_restores_the_task_and_its_next_records_go_one_by_one():
    tasks, prod = manager()
    tasks.version = None
    prod.refuse = KafkaConnectionError()
    assert await tasks.stream.handle_and_commit(0, [Rec(BETS, 0, 4)])  # queued: committed behind the call
    assert tasks.state[0] == "ready"
    await tasks.queue.drain()
    assert tasks.state[0] == "restoring" and tasks.enqueued == [0]  # type: ignore[attr-defined]
    assert 0 in tasks.stream.careful and tasks.aborts == 1 and tasks.fenced == 0
    assert tasks.positions[0] == {}  # never skipped


def test_a_record_that_fails_alone_twice_for_good_is_poison_a_fenced_failure_never():
    tasks, _ = manager()
    stream, r = tasks.stream, Rec(BETS, 0, 4)
    stream._strike(0, r, ProducerFenced(), single=True, lettered=False, fenced=True)
    stream._strike(0, r, KafkaConnectionError(), single=True, lettered=False, fenced=False)
    assert stream.strikes == {} and stream.poison == {}
    too_large = MessageSizeTooLargeError("the message is 2000000 bytes")
    stream._strike(0, r, too_large, single=False, lettered=False, fenced=False)  # in a batch: not counted
    stream._strike(0, r, too_large, single=True, lettered=False, fenced=False)
    assert stream.strikes[0] == {(BETS, 4): 1} and stream.poison == {}
    stream._strike(0, r, too_large, single=True, lettered=False, fenced=False)
    assert stream.poison[0] == {(BETS, 4): f"MessageSizeTooLargeError: {too_large}"}
    stream._strike(0, r, too_large, single=True, lettered=True, fenced=False)  # its letter failed too
    assert stream.unletterable[0] == {(BETS, 4)}
