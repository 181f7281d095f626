"""Tasks are restored by several workers at once, a task never by two (``services/runtime/tasks.py``,
``Tasks._enqueue`` / ``_restore_loop``, :data:`RESTORE_WORKERS`; issue 8: a killed instance's tasks all
move at one rebalance, and one after another the last waited behind the others).

``Tasks.restore`` is replaced by a fake that holds each restore until the test lets it go, so the test sees
how many run at once, with which worker index, and whether one task ever ran twice at a time.
"""

from __future__ import annotations

import asyncio

import pytest

from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings
from services.runtime.tasks import RESTORE_WORKERS, Tasks
from services.settlement.core import SettlementCore


class Restores:
    """A fake ``Tasks.restore``: each call waits for its task's gate, then marks the task ready."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.running: dict[int, int] = {}  # task -> worker restoring it now
        self.most = 0
        self.overlaps: list[int] = []
        self.done: list[int] = []
        self.workers_seen: set[int] = set()
        self.gates: dict[int, asyncio.Event] = {}
        self.fail_once: set[int] = set()
        self.unfinished: set[int] = set()  # tasks whose next restore ends leaving them "restoring"

    def gate(self, p: int) -> asyncio.Event:
        return self.gates.setdefault(p, asyncio.Event())

    async def __call__(self, p: int, worker: int = 0) -> None:
        if p in self.running:
            self.overlaps.append(p)
        if worker in self.running.values():
            self.overlaps.append(-1 - worker)  # one worker, two restores: its reader would be shared
        self.running[p] = worker
        self.workers_seen.add(worker)
        self.most = max(self.most, len(self.running))
        try:
            await self.gate(p).wait()
            self.gates.pop(p, None)  # the next restore of p waits for a new gate
            if p in self.fail_once:
                self.fail_once.discard(p)
                raise ConnectionError("broker away")
            self.done.append(p)
            if p in self.unfinished:
                self.unfinished.discard(p)
                return
            self.tasks.state[p] = "ready"
        finally:
            self.running.pop(p, None)


def _tasks(partitions: int) -> tuple[Tasks, Restores]:
    settings = Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=partitions,
                    processing_guarantee="exactly_once")  # the fakes' producer per task (runtime_fakes.settings)
    tasks = Tasks(ServiceHost(SettlementCore(), settings, TasksOnly()), settings, "t.settlement")
    fake = Restores(tasks)
    tasks.restore = fake  # type: ignore[method-assign]
    return tasks, fake


async def _until(cond, timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not cond():
            await asyncio.sleep(0.001)

    await asyncio.wait_for(wait(), timeout)


async def test_eight_tasks_are_restored_by_restore_workers_at_once_each_by_one_worker() -> None:
    assert RESTORE_WORKERS == 4
    tasks, fake = _tasks(8)
    for p in range(8):
        tasks.state[p] = "restoring"
        tasks._enqueue(p)
    await _until(lambda: len(fake.running) == RESTORE_WORKERS)
    await asyncio.sleep(0.05)
    assert sorted(fake.running) == [0, 1, 2, 3]  # queued order; no fifth before one ends
    assert sorted(fake.running.values()) == [0, 1, 2, 3]
    freed = fake.running[2]
    fake.gate(2).set()
    await _until(lambda: 4 in fake.running)  # the freed worker takes the next task
    assert fake.running[4] == freed
    for p in range(8):
        fake.gate(p).set()
    await _until(lambda: len(fake.done) == 8)
    assert sorted(fake.done) == list(range(8))
    assert fake.most == RESTORE_WORKERS and fake.overlaps == []
    assert fake.workers_seen == set(range(RESTORE_WORKERS))
    assert all(tasks.state[p] == "ready" for p in range(8))
    await tasks.stop()
    assert tasks._workers == []


async def _restoring_and_enqueued_again(partitions: int, times: int = 1) -> tuple[Tasks, Restores]:
    """Tasks whose task 0 is being restored (held at its gate) and was enqueued ``times`` more meanwhile."""
    tasks, fake = _tasks(partitions)
    tasks.state[0] = "restoring"
    tasks._enqueue(0)
    await _until(lambda: 0 in fake.running)
    for _ in range(times):
        tasks._enqueue(0)
    return tasks, fake


async def test_a_task_enqueued_again_while_restoring_is_restored_once_more_after_never_twice_at_once() -> None:
    # revoked and assigned back while its first restore reads the log: the next restore must wait for it
    tasks, fake = await _restoring_and_enqueued_again(4, times=2)
    await asyncio.sleep(0.05)
    assert list(fake.running) == [0] and fake.overlaps == []
    fake.unfinished.add(0)  # the first restore ends with the task still to restore
    fake.gate(0).set()
    await _until(lambda: fake.done == [0])
    await _until(lambda: 0 in fake.running)  # once more, after the first ended
    fake.gate(0).set()
    await _until(lambda: fake.done == [0, 0])
    await asyncio.sleep(0.05)
    assert fake.done == [0, 0] and fake.overlaps == [] and not fake.running  # twice, not three times
    assert tasks.state[0] == "ready"
    await tasks.stop()


async def test_a_task_enqueued_again_while_restoring_is_not_restored_again_once_ready() -> None:
    tasks, fake = await _restoring_and_enqueued_again(2)
    fake.gate(0).set()
    await _until(lambda: fake.done == [0])
    await asyncio.sleep(0.05)
    assert fake.done == [0] and not fake.running and tasks.state[0] == "ready"
    await tasks.stop()


async def test_a_failed_restore_is_retried_after_its_backoff_while_the_other_workers_go_on() -> None:
    tasks, fake = _tasks(3)
    fake.fail_once.add(0)
    for p in range(3):
        tasks.state[p] = "restoring"
        tasks._enqueue(p)
    await _until(lambda: len(fake.running) == 3)
    fake.gate(0).set()  # fails: retried after 0.2 s
    fake.gate(1).set()
    fake.gate(2).set()
    await _until(lambda: sorted(fake.done) == [1, 2])
    await _until(lambda: 0 in fake.running, timeout=3)
    assert tasks.state[0] == "restoring"
    fake.gate(0).set()
    await _until(lambda: sorted(fake.done) == [0, 1, 2])
    assert fake.overlaps == []
    await tasks.stop()


async def test_a_worker_backing_off_after_a_failed_restore_leaves_the_next_restore_of_its_task_alone() -> None:
    tasks, fake = _tasks(4)
    fake.fail_once.add(0)
    tasks.state[0] = "restoring"
    tasks._enqueue(0)
    await _until(lambda: 0 in fake.running)
    fake.gate(0).set()  # fails: its worker waits 0.2 s before queueing it again
    await _until(lambda: 0 not in fake.running)
    tasks._enqueue(0)  # assigned again meanwhile: another worker restores it, held at its gate
    await _until(lambda: 0 in fake.running)
    await asyncio.sleep(0.4)  # the first worker's back-off ends while the second restore runs
    tasks._enqueue(0)
    await asyncio.sleep(0.05)
    assert fake.overlaps == [] and list(fake.running) == [0]
    fake.gate(0).set()
    await _until(lambda: fake.done == [0])
    await asyncio.sleep(0.3)
    assert fake.done == [0] and fake.overlaps == [] and tasks.state[0] == "ready"
    await tasks.stop()


@pytest.mark.parametrize("state", ["revoked", "ready"])
async def test_a_task_no_longer_restoring_is_skipped(state: str) -> None:
    tasks, fake = _tasks(2)
    tasks.state[0] = state
    tasks._enqueue(0)
    await asyncio.sleep(0.05)
    assert fake.done == [] and not fake.running
    await tasks.stop()
