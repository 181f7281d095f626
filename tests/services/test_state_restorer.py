"""The state restorer (``services/runtime/state_restorer.py``): a checkpoint decoded and installed into the
host's tables, refused when of another version or undecodable, and the restore queue's one-at-a-time rule
(the workers' concurrency is ``test_restore_workers.py``'s)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition

from contracts import topics as T
from services.runtime import snapshot as S
from services.runtime.state_restorer import StateRestorer, decode_checkpoint, install
from tests.services.runtime_fakes import RecordingConsumer, manager


def _checkpoint(tasks: Any, version: str) -> tuple[bytes, bytes]:
    """A checkpoint of task 0 covering table T1, as the commit loop writes it: (its record, T1's)."""
    runner = tasks.host.runner
    slot = runner.slot("T1")
    slot.seq = {"wagering.events": 3}
    slot.causes = {"dealer|c1": "e1"}
    table = S.encode(S.TableSnapshot(version=version, table_id="T1", state=S.encode_state(slot.state),
                                     seq=dict(slot.seq), input_seq={}, causes=dict(slot.causes),
                                     last_event_id="e1"))
    cp = S.encode(S.Checkpoint(version=version, partition=0, own={"wagering.events": 4},
                               inputs={T.WAGERING_BETS: 7}, tables=1))
    runner.reset()
    return cp, table


def test_a_checkpoint_is_decoded_and_installed_into_the_runners_slots():
    tasks, _ = manager(partitions=1)
    cp_raw, table = _checkpoint(tasks, tasks.version)
    decoded = decode_checkpoint(cp_raw, [table], tasks.version, tasks.host.core.state_type)
    assert decoded is not None
    cp, slots = decoded
    assert cp.inputs == {T.WAGERING_BETS: 7} and cp.own == {"wagering.events": 4}
    install(tasks.host.runner, slots)
    slot = tasks.host.runner.tables["T1"]
    assert slot.seq == {"wagering.events": 3} and slot.causes == {"dealer|c1": "e1"}
    assert slot.last_event_id == "e1"


def test_another_version_is_never_misread():
    tasks, _ = manager(partitions=1)
    cp_raw, table = _checkpoint(tasks, "wagering:0:old")
    assert decode_checkpoint(cp_raw, [table], tasks.version, tasks.host.core.state_type) is None
    cp_now, _ = _checkpoint(tasks, tasks.version)
    with pytest.raises(ValueError, match="table snapshot of version"):
        decode_checkpoint(cp_now, [table], tasks.version, tasks.host.core.state_type)


def _reading(records: list[tuple[bytes, bytes]]) -> Any:
    async def read_range(topic: str, p: int, start: int, stop: int | None = None, worker: int = 0,
                         ) -> AsyncIterator[list[Any]]:
        assert topic == "t.wagering.snapshots" and start == 0
        yield [SimpleNamespace(key=k, value=v, timestamp=1_700_000_000_000) for k, v in records]
    return read_range


@pytest.mark.asyncio
async def test_the_latest_checkpoint_of_the_snapshot_topic_is_loaded_with_its_time():
    tasks, _ = manager(partitions=1)
    cp_raw, table = _checkpoint(tasks, tasks.version)
    restorer = tasks.restorer
    restorer.read_range = _reading([(T.key("T1"), b"older"), (T.key("T1"), table),  # type: ignore[method-assign]
                                    (S.CHECKPOINT_KEY, cp_raw)])
    cp = await restorer.load_snapshots(0)
    assert cp is not None and cp.inputs == {T.WAGERING_BETS: 7}
    assert tasks.host.runner.tables["T1"].seq == {"wagering.events": 3}
    assert tasks.snapshot_at[0] == 1_700_000_000.0


@pytest.mark.asyncio
async def test_an_undecodable_or_missing_checkpoint_means_a_full_rebuild():
    tasks, _ = manager(partitions=1)
    restorer = tasks.restorer
    restorer.read_range = _reading([(S.CHECKPOINT_KEY, b"\xff garbage")])  # type: ignore[method-assign]
    assert await restorer.load_snapshots(0) is None and tasks.host.runner.tables == {}
    restorer.read_range = _reading([(T.key("T1"), b"a table without its checkpoint")])  # type: ignore[method-assign]
    assert await restorer.load_snapshots(0) is None and 0 not in tasks.snapshot_at


@pytest.mark.asyncio
async def test_a_task_enqueued_while_it_restores_is_restored_once_more_after_never_twice_at_once():
    tasks, _ = manager()
    restorer = StateRestorer(tasks)
    restorer.active.add(2)
    restorer.enqueue(2)
    assert restorer.again == {2} and restorer.queue.qsize() == 0
    restorer.enqueue(3)
    restorer.enqueue(3)
    assert restorer.queue.qsize() == 1 and restorer.queued == {3}
    assert sorted(w.get_name() for w in restorer.workers) == [f"wagering-restore-{i}" for i in range(4)]
    await restorer.stop()
    assert restorer.workers == [] and restorer.again == set()


@pytest.mark.asyncio
async def test_a_restore_overtaken_by_a_rebalance_publishes_nothing_and_the_next_one_does():
    """Chaos run 2026-12-05 (SIGSTOPs): a dealing instance's restore began after a failed transaction, just
    as the instance (dropped from its group) rejoined; it read the committed offsets and the log while the
    other instance still held the task, finished after the assignment that gave the task back, and published
    from what it had read: five of a table's events written twice. Only a restore begun after the latest
    rebalance may publish and resume the task."""
    tasks, _ = manager(ready=())
    consumer = RecordingConsumer()

    async def committed(tp: Any) -> None:
        return None

    consumer.committed = committed  # type: ignore[attr-defined]
    tasks.consumer = consumer  # type: ignore[assignment]

    async def open_producer(p: int) -> None:
        return None

    tasks.collector.open = open_producer  # type: ignore[method-assign]
    restorer = tasks.restorer
    published: list[int] = []
    rebalance = [True]

    async def load_snapshots(p: int, worker: int = 0) -> None:
        return None

    async def fold_tail(p: int, cp: Any, committed: Any, worker: int, marks: Any, t0: float) -> tuple[int, dict]:
        if rebalance.pop() if rebalance else False:  # the first restore: the group rebalances as it reads
            await tasks.on_partitions_assigned({TopicPartition(t, 0) for t in tasks.input_topics})
        return 0, {}

    async def publish_due(p: int, cp: Any, n: int) -> None:
        published.append(p)

    restorer.load_snapshots = load_snapshots  # type: ignore[method-assign]
    restorer.fold_tail = fold_tail  # type: ignore[method-assign]
    restorer.publish_due = publish_due  # type: ignore[method-assign]
    tasks.state[0] = "restoring"
    await restorer.restore(0)
    assert published == [] and tasks.state[0] == "restoring"
    assert tasks.enqueued == [0]  # type: ignore[attr-defined]  # queued again by the assignment
    await restorer.restore(0)  # the restore begun after it
    assert published == [0] and tasks.state[0] == "ready"
