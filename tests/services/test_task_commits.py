"""The tasks of one batch commit concurrently, each through its own producer with its own offsets, and a
batch that caused nothing commits no transaction of its own (``services/runtime/tasks.py``,
``Tasks.on_records``; issue 8's pipeline latency).

The producers are fakes: a transaction's end waits at a barrier that opens only once every task of the
batch has entered its transaction. Committed one after another, the first would wait forever (the test
fails on its timeout); committed together, every transaction ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka import TopicPartition

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import encode
from contracts.envelope import Envelope, event_id
from contracts.events import BetLine, BettingClosed, RoundOpened, RoundResolved, TableOpened
from services.runtime import snapshot as S
from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings
from services.runtime.tasks import Tasks, partition_of, snapshot_topic
from services.runtime.translate import table_spec
from services.settlement.core import SettlementCore
from tests.services.runtime_fakes import committed

AT = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: int = 0
    timestamp_type: int = 0


@dataclass
class FakeProducer:
    """Records what one task's transactions carried; each transaction's end waits at ``barrier``."""

    barrier: asyncio.Barrier
    sent: list[tuple[str, int]] = field(default_factory=list)
    offsets: list[dict[TopicPartition, int]] = field(default_factory=list)
    committed: int = 0

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        yield
        await asyncio.wait_for(self.barrier.wait(), 5)
        self.committed += 1

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(type("Meta", (), {"offset": len(self.sent) - 1})())
        return fut

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.offsets.append(dict(offsets))


def _tasks(partitions: int, barrier: asyncio.Barrier) -> tuple[Tasks, dict[int, FakeProducer]]:
    settings = Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=partitions,
                    processing_guarantee="exactly_once")  # the fakes' producer per task (runtime_fakes.settings)
    host = ServiceHost(SettlementCore(), settings, TasksOnly())
    tasks = Tasks(host, settings, "t.settlement")
    producers = {p: FakeProducer(barrier) for p in range(partitions)}
    tasks.producers = producers  # type: ignore[assignment]
    for p in range(partitions):
        tasks.state[p] = "ready"
        tasks.positions[p] = {}
    tasks.version = None  # no checkpoints in this test
    return tasks, producers


@pytest.mark.asyncio
async def test_a_batch_of_three_tasks_commits_them_concurrently() -> None:
    barrier = asyncio.Barrier(3)
    tasks, producers = _tasks(3, barrier)
    topic = f"t.{T.SETTLEMENT_COMMANDS}"
    # undecodable records: each is dead-lettered inside its task's transaction, with its offset
    batch = [Record(topic, p, 10 + p, None, b"\xff not msgpack") for p in (0, 1, 2)]
    await asyncio.wait_for(committed(tasks, batch), 10)
    for p, prod in producers.items():
        assert prod.committed == 1
        assert prod.sent == [(f"t.{T.dlq('settlement')}", p)]
        assert prod.offsets == [{TopicPartition(topic, p): 11 + p}]
        assert tasks.positions[p] == {TopicPartition(topic, p): 11 + p}
    assert tasks.host.dead_letters == 3


@pytest.mark.asyncio
async def test_a_failed_task_is_restored_while_the_others_commit() -> None:
    barrier = asyncio.Barrier(2)
    tasks, producers = _tasks(3, barrier)
    enqueued: list[int] = []
    tasks._enqueue = enqueued.append  # type: ignore[method-assign]

    async def refuse(offsets: dict[TopicPartition, int], group_id: str) -> None:
        raise RuntimeError("broker went away")

    producers[1].send_offsets_to_transaction = refuse  # type: ignore[method-assign]
    topic = f"t.{T.SETTLEMENT_COMMANDS}"
    batch = [Record(topic, p, 5, None, b"\xff") for p in (0, 1, 2)]
    await asyncio.wait_for(committed(tasks, batch), 10)
    assert [producers[p].committed for p in (0, 1, 2)] == [1, 0, 1]
    assert tasks.state == {0: "ready", 1: "restoring", 2: "ready"}
    assert enqueued == [1]
    assert tasks.positions[1] == {}  # not advanced: the restore seeks back and the record is read again
    assert tasks.positions[0] == {TopicPartition(topic, 0): 6}
    # the failed task's dead letter was forgotten, so the re-read dead-letters it again
    assert tasks.host.dead_letters == 2


# -- batches that caused nothing commit no transaction of their own -------------------------------------
def _table_on(p: int, partitions: int) -> str:
    return next(t for t in (f"T{i}" for i in range(1, 1000)) if partition_of(t, partitions) == p)


def _ev(stream: str, table: str, seq: int, payload: Any, round_id: str | None = None) -> bytes:
    return encode(Envelope(event_id=event_id(stream, table, seq), stream=stream, table_id=table, seq=seq,
                           causation_id=f"c{seq}", correlation_id=round_id or table, occurred_at=AT,
                           round_id=round_id, payload=payload))


def _round_records(table: str, p: int) -> tuple[list[Record], Record]:
    """Settlement's inputs for one round: dealing's events (folded, deciding nothing), then the book (with
    the result already known, it settles the round)."""
    dealing, wagering = f"t.{T.DEALING_EVENTS}", f"t.{T.WAGERING_EVENTS}"
    result = RoundResolved(round_id="R1", shoe_id="S", player_cards=["Tc", "5d", "Td"],
                           banker_cards=["3h", "Ks", "4c"], player_points=5, banker_points=7, winner="banker",
                           player_natural=False, banker_natural=False, cards_required=6, dragon_7=True,
                           panda_8=False)
    book = BettingClosed(round_id="R1", bets=[BetLine(bet_id="b1", seat=1, player_id="p", wager="banker",
                                                      amount_cents=2000)])
    inputs = [Record(dealing, p, 10, T.key(table), _ev(T.DEALING_EVENTS, table, 1,
                                                         TableOpened(config=table_spec(punto_banco_full())))),
              Record(dealing, p, 11, T.key(table), _ev(T.DEALING_EVENTS, table, 2,
                                                         RoundOpened(round_id="R1", shoe_id="S", number=1))),
              Record(dealing, p, 12, T.key(table), _ev(T.DEALING_EVENTS, table, 3, result, "R1"))]
    return inputs, Record(wagering, p, 7, T.key(table), _ev(T.WAGERING_EVENTS, table, 1, book, "R1"))


@pytest.mark.asyncio
async def test_offsets_of_a_batch_that_caused_nothing_ride_with_the_next_transaction() -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    table = _table_on(2, 3)
    inputs, book = _round_records(table, 2)
    await committed(tasks, inputs)
    assert producers[2].committed == 0  # folded, nothing decided: no transaction
    dealing = TopicPartition(f"t.{T.DEALING_EVENTS}", 2)
    assert tasks.positions[2] == {dealing: 13}
    await committed(tasks, [book])  # settles the round: one transaction, with both topics' offsets
    prod = producers[2]
    assert prod.committed == 1
    assert prod.offsets == [{dealing: 13, TopicPartition(f"t.{T.WAGERING_EVENTS}", 2): 8}]
    assert [t for t, _ in prod.sent] == [f"t.{T.SETTLEMENT_EVENTS}"] * 2  # BetSettled, RoundSettled
    assert tasks._uncommitted == {}


@pytest.mark.asyncio
async def test_deferred_offsets_are_committed_alone_once_they_are_old(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.runtime import commit_loop

    monkeypatch.setattr(commit_loop, "DEFER_MAX_S", 0.0)
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    table = _table_on(1, 3)
    inputs, _ = _round_records(table, 1)
    await committed(tasks, inputs[:2])
    assert producers[1].committed == 0
    await committed(tasks, inputs[2:])  # the first deferral is now "old": committed with this batch, alone
    dealing = TopicPartition(f"t.{T.DEALING_EVENTS}", 1)
    assert producers[1].committed == 1
    assert producers[1].offsets == [{dealing: 13}]
    assert producers[1].sent == []


@pytest.mark.asyncio
@pytest.mark.parametrize("snapshots", [False, True])
async def test_a_revocation_commits_the_deferred_offsets(snapshots: bool) -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    if snapshots:
        tasks.version = S.state_version(tasks.host.core)
        tasks._last_checkpoint[0] = time.monotonic()  # none due yet: the batch is deferred
    table = _table_on(0, 3)
    inputs, _ = _round_records(table, 0)
    await committed(tasks, inputs)
    assert producers[0].committed == 0
    dealing = TopicPartition(f"t.{T.DEALING_EVENTS}", 0)
    await tasks.on_partitions_revoked({dealing})
    assert producers[0].offsets == [{dealing: 13}]
    assert producers[0].committed == 1
    assert tasks._uncommitted == {}
    snaps = [t for t, _ in producers[0].sent if t == f"t.{snapshot_topic('settlement')}"]
    # with snapshots, the revocation's checkpoint (the table's snapshot and the checkpoint record) is in
    # the same transaction as the deferred offsets it names
    assert len(snaps) == (2 if snapshots else 0)


@pytest.mark.asyncio
async def test_a_quiet_tasks_deferred_offsets_are_flushed_without_another_batch() -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    table = _table_on(1, 3)
    inputs, _ = _round_records(table, 1)
    await committed(tasks, inputs)
    assert await tasks.flush_deferred() == 0  # not old yet
    assert producers[1].committed == 0
    assert await tasks.flush_deferred(now=time.monotonic() + 1.0) == 1
    assert producers[1].offsets == [{TopicPartition(f"t.{T.DEALING_EVENTS}", 1): 13}]
    assert tasks._uncommitted == {}
    await tasks.stop()  # the flusher started by the deferral is stopped with the tasks
    assert tasks._flusher is None


@pytest.mark.asyncio
async def test_a_failed_flush_restores_the_task() -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    enqueued: list[int] = []
    tasks._enqueue = enqueued.append  # type: ignore[method-assign]
    table = _table_on(2, 3)
    inputs, _ = _round_records(table, 2)
    await committed(tasks, inputs)

    async def fenced(offsets: dict[TopicPartition, int], group_id: str) -> None:
        raise RuntimeError("ProducerFenced")

    producers[2].send_offsets_to_transaction = fenced  # type: ignore[method-assign]
    assert await tasks.flush_deferred(now=time.monotonic() + 1.0) == 0
    assert tasks.state[2] == "restoring" and enqueued == [2]
    assert tasks.aborts == 1
    assert tasks._uncommitted[2]  # kept until the restore: it reads them again from the committed offsets


# -- a fenced producer is never used again ------------------------------------------------------------
class _Fatal:
    """aiokafka's transaction manager in its fatal state (what a ProducerFenced leaves)."""

    state = type("State", (), {"name": "FATAL_ERROR"})()


@pytest.mark.asyncio
async def test_a_failed_checkpoint_on_revocation_restores_the_task_if_it_comes_back() -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    tasks.version = S.state_version(tasks.host.core)
    enqueued: list[int] = []
    tasks._enqueue = enqueued.append  # type: ignore[method-assign]
    tasks._since_checkpoint[1] = 3  # something to checkpoint on revocation

    async def fenced(topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        producers[1]._txn_manager = _Fatal()  # type: ignore[attr-defined]
        raise RuntimeError("ProducerFenced")

    producers[1].send = fenced  # type: ignore[method-assign]
    tps = {TopicPartition(t, p) for t in tasks.input_topics for p in range(3)}
    await tasks.on_partitions_revoked(tps)
    assert tasks.state == {0: "ready", 1: "revoked", 2: "ready"}
    await tasks.on_partitions_assigned(tps)  # the same tasks come back: 1 is restored (a new producer)
    assert tasks.state == {0: "ready", 1: "restoring", 2: "ready"}
    assert enqueued == [1]


@pytest.mark.asyncio
async def test_no_transaction_begins_on_a_fenced_producer() -> None:
    tasks, producers = _tasks(3, asyncio.Barrier(1))
    enqueued: list[int] = []
    tasks._enqueue = enqueued.append  # type: ignore[method-assign]
    producers[0]._txn_manager = _Fatal()  # type: ignore[attr-defined]
    topic = f"t.{T.SETTLEMENT_COMMANDS}"
    await committed(tasks, [Record(topic, 0, 3, None, b"\xff")])
    assert producers[0].committed == 0 and producers[0].sent == []  # not even begun
    assert tasks.state[0] == "restoring" and enqueued == [0]
    assert tasks.positions[0] == {}
