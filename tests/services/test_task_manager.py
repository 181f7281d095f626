"""The task manager (``services/runtime/task_manager.py``): assignment and revocation (sticky tasks, paused
restores, dropped tasks), the views readiness and metrics read (lag, stuck, snapshot ages), and a failed
task paused for its restore, exercised with a recording consumer and producers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiokafka import TopicPartition

from contracts import topics as T
from services.runtime.task_manager import STUCK_AFTER_S
from tests.services.runtime_fakes import RecordingConsumer, RecordingProducer, manager

CMDS, BETS = f"t.{T.WAGERING_COMMANDS}", f"t.{T.WAGERING_BETS}"


def _all(tasks, p: int) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t in tasks.input_topics}


@pytest.mark.asyncio
async def test_an_assignment_keeps_a_sticky_task_restores_new_ones_and_drops_the_moved():
    tasks, prod = manager(ready=(0, 1))
    moved = RecordingProducer()
    tasks.producers[1] = moved  # type: ignore[assignment]
    tasks.consumer = RecordingConsumer()  # type: ignore[assignment]
    tasks.host.runner.slot("T1")  # a table of whichever task; dropped with it if its task moved
    await tasks.on_partitions_assigned(_all(tasks, 0) | _all(tasks, 2))
    assert tasks.state == {0: "ready", 2: "restoring"}
    assert set(tasks.consumer.paused) == _all(tasks, 2)  # type: ignore[attr-defined]
    assert tasks.enqueued == [2]  # type: ignore[attr-defined]
    assert moved.stopped and 1 not in tasks.producers and tasks.producers[0] is prod
    assert 1 not in tasks.positions and tasks.assignment_held


def _in_group(consumer: RecordingConsumer, member_id: str, generation: int) -> RecordingConsumer:
    """``consumer`` as a group member: the group metadata aiokafka's coordinator holds."""
    consumer._group_id = "t.wagering"  # type: ignore[attr-defined]
    consumer._coordinator = SimpleNamespace(  # type: ignore[attr-defined]
        group_id="t.wagering", generation=generation, member_id=member_id, _group_instance_id=None)
    return consumer


@pytest.mark.asyncio
async def test_a_task_assigned_back_after_a_generation_without_this_member_is_restored_not_kept():
    """Chaos run 2026-12-05 (three brokers): a dealing instance dropped from its group (session expired) got
    its task back two generations later and kept its state and positions, while the other instance had dealt
    that table meanwhile: the same seqs written twice. Only a member that held on from one generation to the
    next keeps a task (Kafka Streams' tasks lost)."""
    tasks, _ = manager(ready=())
    consumer = tasks.consumer = _in_group(RecordingConsumer(), "m-1", 5)  # type: ignore[assignment]
    both = _all(tasks, 0) | _all(tasks, 1)
    await tasks.on_partitions_assigned(both)
    assert tasks.enqueued == [0, 1]  # type: ignore[attr-defined]  # the first assignment restores everything
    tasks.state.update({0: "ready", 1: "ready"})
    consumer._coordinator.generation = 6  # type: ignore[attr-defined]  # the next generation, same member
    await tasks.on_partitions_assigned(both)
    assert tasks.state == {0: "ready", 1: "ready"} and tasks.enqueued == [0, 1]  # type: ignore[attr-defined]
    consumer._coordinator.generation = 8  # type: ignore[attr-defined]  # generation 7 went by without it
    await tasks.on_partitions_assigned(both)
    assert tasks.state == {0: "restoring", 1: "restoring"}
    assert tasks.enqueued == [0, 1, 0, 1]  # type: ignore[attr-defined]
    assert set(consumer.paused) == both
    tasks.state.update({0: "ready", 1: "ready"})
    consumer._coordinator.member_id, consumer._coordinator.generation = "m-2", 9  # type: ignore[attr-defined]
    await tasks.on_partitions_assigned(_all(tasks, 1))  # rejoined as a new member: its session had expired
    assert tasks.state == {1: "restoring"} and tasks.enqueued[-1:] == [1]  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_a_revocation_checkpoints_a_ready_task_and_marks_a_restoring_one():
    tasks, prod = manager(ready=(0,))
    tasks.state[1] = "restoring"
    tasks._assigned = True
    tasks.commits.since_checkpoint[0] = 3
    await tasks.on_partitions_revoked(_all(tasks, 0) | _all(tasks, 1))
    assert not tasks.assignment_held
    assert tasks.state == {0: "ready", 1: "revoked"}
    assert prod.committed == 1  # the checkpoint's transaction
    assert [topic for topic, _, _ in prod.sent] == ["t.wagering.snapshots"]  # no table changed: the checkpoint


@pytest.mark.asyncio
async def test_a_failed_checkpoint_on_revocation_never_keeps_the_producer():
    tasks, prod = manager(ready=(0,))
    prod.refuse = RuntimeError("fenced meanwhile")
    tasks.commits.uncommitted[0] = {TopicPartition(BETS, 0): 4}
    await tasks.on_partitions_revoked(_all(tasks, 0))
    assert tasks.state[0] == "revoked"  # assigned back, it is restored with a new producer


def test_lag_is_the_last_stable_offset_less_the_position_as_last_fetched():
    tasks, _ = manager()
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    tasks.consumer = RecordingConsumer(positions={cmd: 5, bets: 2}, stable={cmd: 9, bets: 2})  # type: ignore[assignment]
    assert tasks.lag() == {(T.WAGERING_COMMANDS, 0): 4, (T.WAGERING_BETS, 0): 0}
    tasks.consumer = None
    assert tasks.lag() == {}


def test_a_task_failing_for_stuck_after_s_is_stuck_and_readiness_follows_its_tasks():
    tasks, _ = manager(ready=(0, 1))
    tasks.consumer = RecordingConsumer()  # type: ignore[assignment]
    assert tasks.ready
    tasks.restore_after_failure(1)
    assert tasks.state[1] == "restoring" and not tasks.ready
    assert set(tasks.consumer.paused) == _all(tasks, 1)  # type: ignore[attr-defined]
    since = tasks._failing_since[1]
    assert tasks.stuck(now=since + STUCK_AFTER_S - 1) == {}
    assert tasks.stuck(now=since + STUCK_AFTER_S) == {1: STUCK_AFTER_S}
    tasks.state.pop(1)
    assert tasks.stuck(now=since + STUCK_AFTER_S) == {}  # not held any more


def test_snapshot_ages_of_held_tasks_only_and_none_for_a_replica():
    tasks, _ = manager(ready=(0, 1))
    tasks.snapshot_at.update({0: 100.0, 1: 90.0, 5: 10.0})
    assert tasks.snapshot_ages(110.0) == {0: 10.0, 1: 20.0}
    tasks.transactional = False
    assert tasks.snapshot_ages(110.0) == {}


@pytest.mark.asyncio
async def test_stop_closes_every_producer_and_forgets_the_assignment():
    tasks, prod = manager(ready=(0,))
    tasks._assigned = True
    await tasks.stop()
    assert prod.stopped and tasks.producers == {} and tasks.state == {} and not tasks.assignment_held
