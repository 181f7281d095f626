"""The task manager (``services/runtime/task_manager.py``): assignment and revocation (sticky tasks, paused
restores, dropped tasks), the views readiness and metrics read (lag, stuck, snapshot ages), and a failed
task paused for its restore, exercised with a recording consumer and producers."""

from __future__ import annotations

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
