"""A stopping instance's hand-over (``TaskManager.hand_over``, issue 25): every ready task's deferred offsets
committed, its producer closed, and no batch decided after; a revocation's checkpoints committed concurrently.
The hand-over on a real broker and processes is ``tests/system/test_handover.py``."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition

from contracts import topics as T
from tests.services.runtime_fakes import committed
from tests.services.test_task_commits import _round_records, _table_on, _tasks


@pytest.mark.asyncio
async def test_a_hand_over_commits_every_tasks_deferred_offsets_at_once_and_decides_nothing_after() -> None:
    tasks, producers = _tasks(2, asyncio.Barrier(2))  # each transaction ends only when both have begun
    producers = dict(producers)  # the task manager's own map is emptied as it closes them
    dealing = f"t.{T.DEALING_EVENTS}"
    for p in (0, 1):
        inputs, _ = _round_records(_table_on(p, 2), p)
        await committed(tasks, inputs)  # folded, nothing decided: the offsets wait (deferred)
    assert [producers[p].committed for p in (0, 1)] == [0, 0]
    await asyncio.wait_for(tasks.hand_over(), 10)
    for p in (0, 1):
        assert producers[p].committed == 1
        assert producers[p].offsets == [{TopicPartition(dealing, p): 13}]
    assert tasks.producers == {} and tasks.closing
    # a batch the consumer still hands over is not decided: its offsets are never committed
    inputs, book = _round_records(_table_on(0, 2), 0)
    await tasks.on_records([book])
    assert producers[0].committed == 1 and tasks.commits.uncommitted == {}


@pytest.mark.asyncio
async def test_a_hand_over_whose_commit_fails_still_closes_and_does_not_raise() -> None:
    tasks, producers = _tasks(1, asyncio.Barrier(2))  # a transaction that never ends: the broker away
    producers = dict(producers)
    inputs, _ = _round_records(_table_on(0, 1), 0)
    await committed(tasks, inputs)
    import services.runtime.task_manager as M

    old, M.HAND_OVER_MAX_S = M.HAND_OVER_MAX_S, 0.2
    try:
        await asyncio.wait_for(tasks.hand_over(), 10)
    finally:
        M.HAND_OVER_MAX_S = old
    assert producers[0].committed == 0 and tasks.producers == {}


@pytest.mark.asyncio
async def test_a_revocation_commits_its_tasks_checkpoints_concurrently() -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(3))  # one after another, the first would wait forever
    for p in (0, 1, 2):
        inputs, _ = _round_records(_table_on(p, 3), p)
        await committed(tasks, inputs)
    revoked = {TopicPartition(f"t.{T.DEALING_EVENTS}", p) for p in (0, 1, 2)}
    await asyncio.wait_for(tasks.on_partitions_revoked(revoked), 10)
    assert [producers[p].committed for p in (0, 1, 2)] == [1, 1, 1]
    assert all(tasks.state[p] == "ready" for p in (0, 1, 2))
