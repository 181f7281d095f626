"""Fakes shared by the runtime's unit tests (``test_record_collector``, ``test_commit_loop``,
``test_state_restorer``, ``test_partition_group``, ``test_stream_task``, ``test_task_manager``): a recording
transactional producer, a consumer that records pauses and seeks, a record, and a task manager on a
wagering host whose producers are fakes."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from aiokafka import TopicPartition

from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings
from services.runtime.task_manager import TaskManager
from services.wagering.core import WageringCore


@dataclass
class Rec:
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    value: bytes = b"\xff not msgpack"
    timestamp: int = 0
    timestamp_type: int = 0


@dataclass
class RecordingProducer:
    """A task's producer: what each transaction sent (topic, partition, key), its offsets, and how many
    transactions committed; ``refuse``: the offsets are refused with that error."""

    sent: list[tuple[str, int, bytes | None]] = field(default_factory=list)
    offsets: list[tuple[dict[TopicPartition, int], str]] = field(default_factory=list)
    committed: int = 0
    refuse: BaseException | None = None
    stopped: bool = False
    #: transactions aborted (``abort_transaction``), and the partitions added to one ahead of its records
    aborted: int = 0
    ahead: list[TopicPartition] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        yield
        self.committed += 1

    async def begin_transaction(self) -> None:
        pass

    async def commit_transaction(self) -> None:
        self.committed += 1

    async def abort_transaction(self) -> None:
        self.aborted += 1

    def __post_init__(self) -> None:
        # what :func:`services.runtime.producers.add_partition_ahead` reaches of aiokafka's producer (a test may
        # put a real ``TransactionManager`` in its place)
        self._txn_manager: Any = SimpleNamespace(maybe_add_partition_to_txn=self.ahead.append)

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition, key))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(SimpleNamespace(offset=len(self.sent) - 1, topic=topic, partition=partition))
        return fut

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.offsets.append((dict(offsets), group_id))

    async def stop(self) -> None:
        self.stopped = True


class RecordingConsumer:
    """A group consumer: pauses, resumes and seeks recorded; ``positions`` as its subscription state holds
    them; ``stable``/``high``: the last stable offset and high watermark as last fetched."""

    def __init__(self, positions: dict[TopicPartition, int] | None = None,
                 stable: dict[TopicPartition, int] | None = None, high: dict[TopicPartition, int] | None = None):
        self.pos = dict(positions or {})
        self.stable = dict(stable or {})
        self.high = dict(high or {})
        self.paused: list[TopicPartition] = []
        self.resumed: list[TopicPartition] = []
        self.seeks: list[tuple[TopicPartition, int]] = []
        pos = self.pos

        class Assignment:
            def state_value(self, tp: TopicPartition) -> Any:
                if tp not in pos:
                    return None
                return SimpleNamespace(has_valid_position=True, position=pos[tp])

        self._subscription = SimpleNamespace(subscription=SimpleNamespace(assignment=Assignment()))

    def assignment(self) -> set[TopicPartition]:
        return set(self.pos)

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        if tp not in self.stable:
            raise KeyError(tp)  # aiokafka raises for a partition not assigned
        return self.stable[tp]

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get(tp)

    def pause(self, *tps: TopicPartition) -> None:
        self.paused.extend(tps)

    def resume(self, *tps: TopicPartition) -> None:
        self.resumed.extend(tps)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))
        self.pos[tp] = offset


def settings(partitions: int = 4) -> Settings:
    """Settings for the fakes: a producer per task (``exactly_once``), which the fakes here model task by task;
    ``exactly_once_v2`` (the default) is tested on fakes in test_group_commit.py and on the broker in
    tests/system (test_eos_v2.py, test_chaos.py under both)."""
    return Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=partitions,
                    processing_guarantee="exactly_once")


def manager(partitions: int = 4, ready: tuple[int, ...] = (0,)) -> tuple[TaskManager, RecordingProducer]:
    """A wagering service's task manager whose ready tasks write through one recording producer; restores
    are only queued (``enqueued``), never run."""
    s = settings(partitions)
    tasks = TaskManager(ServiceHost(WageringCore(), s, TasksOnly()), s, "t.wagering")
    prod = RecordingProducer()
    for p in ready:
        tasks.producers[p] = prod  # type: ignore[assignment]
        tasks.state[p] = "ready"
        tasks.positions[p] = {}
    tasks.enqueued = []  # type: ignore[attr-defined]
    tasks._enqueue = tasks.enqueued.append  # type: ignore[attr-defined,method-assign]
    return tasks, prod


async def committed(tasks: TaskManager, records: list[Any]) -> None:
    """``tasks.on_records(records)``, then wait until what the batch caused is committed (or its transaction
    failed): the commit queue commits behind the call (:mod:`services.runtime.commit_queue`)."""
    await tasks.on_records(records)
    await tasks.queue.drain()
