"""A command waits until its task has read what the other topic's log held when the command was read
(``ServiceCore.catch_up``, ``Tasks.caught_up``): the wagering service's "No more bets" is decided after
every bet the log holds before it, even when the bets come in a later fetch (their partition led by another
broker).

The consumer and producers are fakes; the records are undecodable (each is dead-lettered in its task's
transaction), so what is checked is which records a batch takes, where the consumer seeks and which
offsets are committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition

from contracts import topics as T
from services.runtime import partition_group
from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings
from services.runtime.tasks import CATCH_UP_MAX_S, Tasks
from services.wagering.core import WageringCore
from tests.services.runtime_fakes import committed

CMDS, BETS = f"t.{T.WAGERING_COMMANDS}", f"t.{T.WAGERING_BETS}"


@dataclass
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes = b"\xff not msgpack"
    timestamp_type: int = 1


@dataclass
class FakeProducer:
    offsets: list[dict[TopicPartition, int]] = field(default_factory=list)
    sent: int = 0

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        yield

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        import asyncio

        self.sent += 1
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(SimpleNamespace(offset=self.sent))
        return fut

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.offsets.append(dict(offsets))


class FakeConsumer:
    """Positions (next offset to hand out) per partition, as aiokafka's subscription state holds them;
    ``ends``: what ListOffsets answers; seeks are recorded and move the position."""

    def __init__(self, positions: dict[TopicPartition, int], ends: dict[TopicPartition, int]):
        self.pos = dict(positions)
        self.ends = dict(ends)
        self.asked: list[list[TopicPartition]] = []
        self.seeks: list[tuple[TopicPartition, int]] = []
        self.fail = False
        self.silent = False  # ListOffsets never answered (its leader paused)
        states = self

        class Assignment:
            def state_value(self, tp: TopicPartition) -> Any:
                return SimpleNamespace(has_valid_position=True, position=states.pos[tp])

        self._subscription = SimpleNamespace(subscription=SimpleNamespace(assignment=Assignment()))

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        self.asked.append(list(tps))
        if self.fail:
            raise ConnectionError("broker away")
        if self.silent:
            await asyncio.Event().wait()
        return {tp: self.ends[tp] for tp in tps}

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))
        self.pos[tp] = offset


def _tasks(consumer: FakeConsumer) -> tuple[Tasks, FakeProducer]:
    settings = Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=4,
                    processing_guarantee="exactly_once")  # the fakes' producer per task (runtime_fakes.settings)
    host = ServiceHost(WageringCore(), settings, TasksOnly())
    tasks = Tasks(host, settings, "t.wagering")
    prod = FakeProducer()
    tasks.producers = {0: prod}  # type: ignore[dict-item]
    tasks.state[0] = "ready"
    tasks.positions[0] = {}
    tasks.version = None  # no checkpoints here
    tasks.consumer = consumer  # type: ignore[assignment]
    return tasks, prod


def test_the_wagering_service_reads_the_bets_before_deciding_a_dealer_command():
    assert WageringCore.catch_up == ((T.WAGERING_COMMANDS, T.WAGERING_BETS),)
    assert {c for c, _ in WageringCore.catch_up} | {w for _, w in WageringCore.catch_up} <= set(
        WageringCore.command_streams)


@pytest.mark.asyncio
async def test_no_more_bets_read_before_bets_logged_before_it_waits_for_them():
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    # the fetch handed out bet 40 and the call (offset 7); bets 41 and 42 are in the log but not read yet
    consumer = FakeConsumer({cmd: 8, bets: 41}, {cmd: 8, bets: 43})
    tasks, prod = _tasks(consumer)
    await committed(tasks, [Record(CMDS, 0, 7, 1_000_300), Record(BETS, 0, 40, 1_000_100)])
    assert consumer.asked == [[bets]]
    assert tasks.held == 1
    assert consumer.seeks == [(cmd, 7)]  # the call is read again, after the bets
    assert prod.offsets == [{bets: 41}]  # only the bet was taken: the call's offset is not committed
    assert tasks.host.dead_letters == 1
    # the next fetch: the call again with the two bets (41 in time, 42 after the call)
    consumer.pos = {cmd: 8, bets: 43}
    order: list[tuple[str, int]] = []
    collect = tasks.host.collect

    async def spy(batch: list[Any]) -> Any:
        order.extend((t, o) for t, _, o, *_ in batch)
        return await collect(batch)

    tasks.host.collect = spy  # type: ignore[method-assign]
    await committed(tasks, [Record(CMDS, 0, 7, 1_000_300), Record(BETS, 0, 41, 1_000_200),
                            Record(BETS, 0, 42, 1_000_400)])
    assert consumer.asked == [[bets]]  # the ends were asked once, when the call was first read
    assert tasks.held == 1
    assert order == [(BETS, 41), (CMDS, 7), (BETS, 42)]
    assert prod.offsets[-1] == {cmd: 8, bets: 43}
    assert tasks._waits[0] == {}


@pytest.mark.asyncio
async def test_what_follows_a_waiting_command_is_read_again_too():
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    consumer = FakeConsumer({cmd: 10, bets: 51}, {cmd: 10, bets: 52})
    tasks, prod = _tasks(consumer)
    # bet 50 after the call by the log's time (it comes after it in log order), bet 51 not read yet
    await committed(tasks, [Record(CMDS, 0, 8, 2_000), Record(CMDS, 0, 9, 2_500), Record(BETS, 0, 50, 2_100)])
    assert sorted(consumer.seeks) == sorted([(cmd, 8), (bets, 50)])
    assert prod.offsets == []  # nothing was before the call: nothing taken, nothing committed
    assert tasks.host.dead_letters == 0


@pytest.mark.asyncio
async def test_a_command_whose_other_topic_is_read_far_enough_is_decided_at_once():
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    consumer = FakeConsumer({cmd: 8, bets: 41}, {cmd: 8, bets: 41})
    tasks, prod = _tasks(consumer)
    await committed(tasks, [Record(CMDS, 0, 7, 1_000_300), Record(BETS, 0, 40, 1_000_100)])
    assert consumer.seeks == [] and tasks.held == 0
    assert prod.offsets == [{cmd: 8, bets: 41}]
    assert tasks._waits[0] == {}


@pytest.mark.asyncio
async def test_a_command_waits_at_most_catch_up_max_s(monkeypatch):
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    consumer = FakeConsumer({cmd: 8, bets: 41}, {cmd: 8, bets: 43})
    tasks, prod = _tasks(consumer)
    batch = [Record(CMDS, 0, 7, 1_000_300)]
    await committed(tasks, batch)
    assert tasks.held == 1 and prod.offsets == []
    later = time.monotonic() + CATCH_UP_MAX_S + 0.1
    monkeypatch.setattr(partition_group.time, "monotonic", lambda: later)
    await committed(tasks, batch)  # the bets' partition never came: decided anyway
    assert tasks.held == 1
    assert prod.offsets == [{cmd: 8}]


@pytest.mark.asyncio
async def test_a_command_is_decided_at_once_when_the_ends_cannot_be_asked():
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    consumer = FakeConsumer({cmd: 8, bets: 41}, {cmd: 8, bets: 43})
    consumer.fail = True
    tasks, prod = _tasks(consumer)
    await committed(tasks, [Record(CMDS, 0, 7, 1_000_300)])
    assert tasks.held == 0 and prod.offsets == [{cmd: 8}]


@pytest.mark.asyncio
async def test_a_command_waits_for_an_unanswered_ends_request_at_most_catch_up_max_s(monkeypatch):
    # the bets' leader is paused: ListOffsets never answers, and the host's lock (every table of the instance)
    # must not wait for it longer than a command may wait at all
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    consumer = FakeConsumer({cmd: 8, bets: 41}, {cmd: 8, bets: 43})
    consumer.silent = True
    tasks, prod = _tasks(consumer)
    monkeypatch.setattr(partition_group, "CATCH_UP_MAX_S", 0.05)
    await asyncio.wait_for(committed(tasks, [Record(CMDS, 0, 7, 1_000_300)]), 5)
    assert tasks.held == 0 and prod.offsets == [{cmd: 8}]


@pytest.mark.asyncio
async def test_a_task_without_catch_up_topics_never_asks():
    from services.settlement.core import SettlementCore

    settings = Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=4,
                    processing_guarantee="exactly_once")  # the fakes' producer per task (runtime_fakes.settings)
    tasks = Tasks(ServiceHost(SettlementCore(), settings, TasksOnly()), settings, "t.settlement")
    assert tasks._catch_up == {}
