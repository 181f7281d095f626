"""Group commit (``services/runtime/group_commit.py``, ``exactly_once_v2``): the tasks of one instance commit
through one producer, what they hand over at once in one transaction; a failure fails every part in it."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any

import pytest
from aiokafka import TopicPartition

from services.runtime import group_commit as group_commit_module
from services.runtime.app import TasksOnly
from services.runtime.group_commit import GroupCommit, Part
from services.runtime.host import ServiceHost
from services.runtime.settings import Settings
from services.runtime.task_manager import TaskManager
from services.wagering.core import WageringCore
from tests.services.runtime_fakes import Rec, RecordingProducer, settings

BETS = "t.wagering.commands"


class SlowProducer(RecordingProducer):
    """A producer whose transactions wait for ``gate`` before they commit; ``log`` records begin/commit/abort."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.log: list[str] = []

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        self.log.append("begin")
        try:
            yield
            await self.gate.wait()
        except BaseException:
            self.log.append("abort")
            raise
        self.committed += 1
        self.log.append("commit")


def recorder() -> tuple[GroupCommit, list[tuple[Any, dict[TopicPartition, int]]]]:
    sent: list[tuple[Any, dict[TopicPartition, int]]] = []

    async def send_offsets(prod: Any, offsets: dict[TopicPartition, int]) -> None:
        if getattr(prod, "refuse", None) is not None:
            raise prod.refuse
        sent.append((prod, dict(offsets)))

    return GroupCommit(send_offsets, lambda prod: getattr(prod, "dead", False)), sent


def part(prod: Any, p: int, offset: int, topic: str = BETS, alone: bool = False, waits: list[Any] | None = None,
         ) -> Part:
    futs: list[tuple[str | None, Any]] = []

    async def write(on: Any) -> None:
        futs.append((None, await on.send(f"out-{p}", b"x", partition=p)))

    return Part(prod, p, write, {TopicPartition(topic, p): offset}, futs, list(waits or ()), alone)


@pytest.mark.asyncio
async def test_parts_handed_over_in_one_turn_commit_in_one_transaction_with_all_their_offsets():
    gc, sent = recorder()
    prod = SlowProducer()
    parts = [part(prod, p, 10 + p) for p in range(3)]
    await asyncio.gather(*(gc.commit(x) for x in parts))
    assert prod.log == ["begin", "commit"]
    assert prod.sent == [("out-0", 0, None), ("out-1", 1, None), ("out-2", 2, None)]
    assert sent == [(prod, {TopicPartition(BETS, 0): 10, TopicPartition(BETS, 1): 11, TopicPartition(BETS, 2): 12})]
    assert (gc.transactions, gc.parts) == (1, 3)


@pytest.mark.asyncio
async def test_parts_handed_over_while_a_transaction_is_in_flight_all_go_in_the_next_one_in_order():
    gc, sent = recorder()
    prod = SlowProducer()
    prod.gate.clear()
    first = asyncio.create_task(gc.commit(part(prod, 0, 5)))
    await asyncio.sleep(0.01)  # the first transaction is open, waiting at its commit
    later = [asyncio.create_task(gc.commit(part(prod, p, 20 + p))) for p in (1, 2, 0)]
    await asyncio.sleep(0.01)
    assert prod.log == ["begin"] and not any(t.done() for t in later)
    prod.gate.set()
    await asyncio.gather(first, *later)
    assert prod.log == ["begin", "commit", "begin", "commit"]
    assert [off for _, off in sent] == [
        {TopicPartition(BETS, 0): 5},
        {TopicPartition(BETS, 1): 21, TopicPartition(BETS, 2): 22, TopicPartition(BETS, 0): 20}]
    assert [s[0] for s in prod.sent] == ["out-0", "out-1", "out-2", "out-0"]


@pytest.mark.asyncio
async def test_a_failed_transaction_fails_every_part_in_it_and_the_next_ones_still_commit():
    gc, sent = recorder()
    prod = SlowProducer()
    prod.refuse = RuntimeError("ILLEGAL_GENERATION")
    outcomes = await asyncio.gather(*(gc.commit(part(prod, p, 1)) for p in (0, 1)), return_exceptions=True)
    assert [type(o).__name__ for o in outcomes] == ["RuntimeError", "RuntimeError"]
    assert outcomes[0] is outcomes[1]  # the one transaction's error, for each of its tasks
    assert prod.log == ["begin", "abort"] and prod.committed == 0
    prod.refuse = None
    await gc.commit(part(prod, 0, 2))
    assert prod.log[-2:] == ["begin", "commit"] and sent == [(prod, {TopicPartition(BETS, 0): 2})]


@pytest.mark.asyncio
async def test_a_part_marked_alone_has_a_transaction_of_its_own_and_order_is_kept():
    gc, sent = recorder()
    prod = SlowProducer()
    parts = [part(prod, 0, 1), part(prod, 1, 1, alone=True), part(prod, 2, 1), part(prod, 3, 1)]
    await asyncio.gather(*(gc.commit(x) for x in parts))
    assert [sorted(tp.partition for tp in off) for _, off in sent] == [[0], [1], [2, 3]]
    assert prod.committed == 3


@pytest.mark.asyncio
async def test_parts_for_a_replaced_producer_never_share_a_transaction_with_the_new_ones():
    gc, sent = recorder()
    old, new = SlowProducer(), SlowProducer()
    old.dead = True  # type: ignore[attr-defined]
    outcomes = await asyncio.gather(gc.commit(part(old, 0, 1)), gc.commit(part(new, 1, 1)), return_exceptions=True)
    assert isinstance(outcomes[0], RuntimeError) and "fenced" in str(outcomes[0])
    assert outcomes[1] is None
    assert old.log == [] and new.log == ["begin", "commit"] and sent == [(new, {TopicPartition(BETS, 1): 1})]


@pytest.mark.asyncio
async def test_prompt_transactions_are_awaited_before_the_offsets_and_one_that_failed_aborts_all():
    gc, sent = recorder()
    prod = SlowProducer()
    prompt: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    task = asyncio.gather(gc.commit(part(prod, 0, 3, waits=[prompt])), gc.commit(part(prod, 1, 3)),
                          return_exceptions=True)
    await asyncio.sleep(0.01)
    assert sent == [] and prod.log == ["begin"]  # records sent, offsets wait for the prompt transaction
    prompt.set_exception(ConnectionError("prompt transaction failed"))
    outcomes = await task
    assert [type(o) for o in outcomes] == [ConnectionError, ConnectionError]
    assert prod.log == ["begin", "abort"] and sent == []


@pytest.mark.asyncio
async def test_a_caller_cancelled_meanwhile_does_not_cancel_the_transaction_of_the_others():
    gc, sent = recorder()
    prod = SlowProducer()
    prod.gate.clear()
    mine = asyncio.create_task(gc.commit(part(prod, 0, 7)))
    other = asyncio.create_task(gc.commit(part(prod, 1, 7)))
    await asyncio.sleep(0.01)
    mine.cancel()
    await asyncio.sleep(0)
    prod.gate.set()
    await other
    assert mine.cancelled() and prod.log == ["begin", "commit"] and len(sent[0][1]) == 2


def v2_manager(ready: tuple[int, ...]) -> tuple[TaskManager, SlowProducer, list[Any]]:
    s: Settings = replace(settings(), processing_guarantee="exactly_once_v2")
    tasks = TaskManager(ServiceHost(WageringCore(), s, TasksOnly()), s, "t.wagering")
    prod = SlowProducer()
    sent: list[Any] = []
    assert tasks.collector.group_commit is not None

    async def send_offsets(on: Any, offsets: dict[TopicPartition, int]) -> None:
        sent.append(dict(offsets))

    tasks.collector.group_commit.send_offsets = send_offsets  # type: ignore[method-assign]
    for p in ready:
        tasks.producers[p] = prod  # type: ignore[assignment]
        tasks.state[p] = "ready"
        tasks.positions[p] = {TopicPartition(t, p): 40 + p for t in tasks.input_topics}
    tasks._enqueue = lambda p: None  # type: ignore[method-assign]
    return tasks, prod, sent


@pytest.mark.asyncio
async def test_under_v2_the_tasks_of_one_batch_commit_in_one_transaction_carrying_every_tasks_positions():
    tasks, prod, sent = v2_manager((0, 1))
    assert tasks.collector.v2 and tasks.settings.processing_guarantee == "exactly_once_v2"
    # undecodable commands: each task dead-letters its record (an outcome to commit, not deferred)
    await tasks.on_records([Rec(BETS, 0, 41), Rec(BETS, 1, 42)])
    await tasks.queue.drain()
    assert prod.committed == 1 and tasks.collector.group_commit.transactions == 1  # type: ignore[union-attr]
    (offsets,) = sent
    # the batch's offsets, and the untouched input partitions' current positions (the generation fences
    # only a transaction that sends offsets)
    assert offsets[TopicPartition(BETS, 0)] == 42 and offsets[TopicPartition(BETS, 1)] == 43
    others = {tp: off for tp, off in offsets.items() if tp.topic != BETS}
    assert others and all(off == 40 + tp.partition for tp, off in others.items())
    assert set(others) == {TopicPartition(t, p) for t in tasks.input_topics if t != BETS for p in (0, 1)}


@pytest.mark.asyncio
async def test_under_v2_a_revocations_checkpoints_of_several_tasks_go_in_one_transaction_with_offsets():
    tasks, prod, sent = v2_manager((0, 1, 2))
    for p in (0, 1, 2):
        tasks.commits.since_checkpoint[p] = 5  # tables changed since the last checkpoint
    await tasks.on_partitions_revoked({TopicPartition(BETS, p) for p in (0, 1, 2)})
    assert prod.committed == 1 and len(sent) == 1
    assert {tp.partition for tp in sent[0]} == {0, 1, 2}  # none without offsets: all fenced by the generation


def test_the_guarantee_comes_from_the_environment_and_an_unknown_one_is_refused():
    env = {"CROUPIER_PROCESSING_GUARANTEE": "EXACTLY_ONCE_V2", "CROUPIER_TRANSACTION_TIMEOUT_MS": "8000"}
    s = Settings.from_env(env)
    assert (s.processing_guarantee, s.transaction_timeout_ms) == ("exactly_once_v2", 8000)
    assert Settings.from_env({}).processing_guarantee == "exactly_once_v2"
    with pytest.raises(ValueError, match="CROUPIER_PROCESSING_GUARANTEE='at_least_once'.*exactly_once_v2"):
        Settings.from_env({"CROUPIER_PROCESSING_GUARANTEE": "at_least_once"})
    with pytest.raises(ValueError, match="CROUPIER_TRANSACTION_TIMEOUT_MS"):
        Settings.from_env({"CROUPIER_TRANSACTION_TIMEOUT_MS": "10"})


def test_the_instance_producers_id_is_the_services_and_instances_and_unique_to_the_process():
    s = replace(settings(), processing_guarantee="exactly_once_v2", instance="pit-7")
    a = TaskManager(ServiceHost(WageringCore(), s, TasksOnly()), s, "t.wagering").collector
    b = TaskManager(ServiceHost(WageringCore(), s, TasksOnly()), s, "t.wagering").collector
    assert a.instance_id.startswith("croupier.t.wagering.pit-7.") and b.instance_id.startswith("croupier.t.wagering.pit-7.")
    assert a.instance_id != b.instance_id  # twins with one configuration never fence each other by id


@pytest.mark.asyncio
async def test_with_two_instance_producers_task_p_writes_through_the_p_mod_2th_and_each_groups_its_own():
    s = replace(settings(), processing_guarantee="exactly_once_v2", instance_producers=2)
    tasks = TaskManager(ServiceHost(WageringCore(), s, TasksOnly()), s, "t.wagering")
    c = tasks.collector
    assert len(c.group_commits) == 2 and len(c.shared) == 2
    prods = [SlowProducer(), SlowProducer()]
    for i, g in enumerate(c.group_commits):
        async def send_offsets(on: Any, offsets: dict[TopicPartition, int]) -> None:
            pass
        g.send_offsets = send_offsets  # type: ignore[method-assign]
    await asyncio.gather(*(c.transaction(prods[p % 2], p, [], [], [], {TopicPartition(BETS, p): 1}, [])
                           for p in range(4)))
    assert [g.parts for g in c.group_commits] == [2, 2]  # tasks 0 and 2, 1 and 3
    assert [g.transactions for g in c.group_commits] == [1, 1]
    assert [pr.committed for pr in prods] == [1, 1]
    assert Settings.from_env({"CROUPIER_INSTANCE_PRODUCERS": "3"}).instance_producers == 3


@pytest.mark.asyncio
async def test_the_next_transaction_waits_for_what_the_committed_tasks_had_queued():
    """Two busy tasks, each with a second outcome queued behind its first: both firsts commit together, and
    the seconds, handed over a few turns after their committers wake, go together in the next transaction
    instead of one transaction each (without the wait, the first to arrive would begin a transaction alone)."""
    gc, sent = recorder()
    prod = SlowProducer()
    queued = {0: [11], 1: [21]}  # what each task decided while its first part was in flight
    gc.more_queued = lambda p: bool(queued.get(p))

    async def task(p: int, first: int) -> None:
        await gc.commit(part(prod, p, first))
        for _ in range(p + 1):  # the two committers wake after different numbers of turns
            await asyncio.sleep(0)
        second = queued[p].pop()
        await gc.commit(part(prod, p, second))

    await asyncio.gather(task(0, 10), task(1, 20))
    assert prod.log == ["begin", "commit", "begin", "commit"]
    assert [offsets for _, offsets in sent] == [
        {TopicPartition(BETS, 0): 10, TopicPartition(BETS, 1): 20},
        {TopicPartition(BETS, 0): 11, TopicPartition(BETS, 1): 21}]
    assert gc.handed_over == 2 and 2 <= gc.handover_turns < group_commit_module.MAX_HANDOVER_TURNS


@pytest.mark.asyncio
async def test_no_wait_when_nothing_is_queued_and_a_bounded_one_when_a_hand_over_never_comes():
    gc, sent = recorder()
    prod = SlowProducer()
    await gc.commit(part(prod, 0, 10))
    assert gc.handover_turns == 0  # nothing queued: the runner ends at once
    gc.more_queued = lambda p: True  # claims more, never hands it over (its outcome dropped by a restore)
    await gc.commit(part(prod, 0, 11))
    await asyncio.sleep(0.01)
    assert gc.handover_turns == group_commit_module.MAX_HANDOVER_TURNS and gc.handed_over == 0
    assert len(sent) == 2
