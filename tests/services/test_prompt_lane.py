"""The prompt lane (``services/runtime/prompt_lane.py``, issue 30): the projection's odds go out at once in
transactions of their own, and the transaction that commits their inputs' offsets waits for them; a failed
prompt transaction aborts it and restores the task. On a projection task manager whose producers are fakes."""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError

from baccarat.table import punto_banco_full
from contracts import topics as T
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.core import ProjectionCore
from services.runtime.app import TasksOnly
from services.runtime.assignor import partition_of
from services.runtime.core import Decision, Send
from services.runtime.host import ServiceHost
from services.runtime.prompt_lane import split
from services.runtime.task_manager import TaskManager
from tests.services.helpers import floor_bus
from tests.services.runtime_fakes import Rec, RecordingProducer, settings

INPUTS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
ODDS = f"t.{T.PROJECTION_ODDS}"


@dataclass
class OrderedProducer(RecordingProducer):
    """A recording producer that writes what happened, in order, to a log shared with the other
    (``log``: (name, what)); ``fail``: its transactions fail with this error after their sends."""

    name: str = ""
    log: list[tuple[str, str]] = field(default_factory=list)
    fail: BaseException | None = None
    gate: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        yield
        await self.commit_transaction()

    async def begin_transaction(self) -> None:
        self.log.append((self.name, "begun"))

    async def commit_transaction(self) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            self.log.append((self.name, "aborted"))
            raise self.fail
        self.committed += 1
        self.log.append((self.name, "committed"))

    async def abort_transaction(self) -> None:
        self.aborted += 1
        self.log.append((self.name, "aborted"))

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.log.append((self.name, "offsets"))
        await super().send_offsets_to_transaction(offsets, group_id)


@pytest.fixture(scope="module")
def inputs() -> list[Any]:
    """A table's input records, two rounds into a shoe (the shoe's load, cut, burn and the rounds' cards)."""
    async def run() -> list[Any]:
        bus, _ = floor_bus(seed=5)
        dealer = TableDealer(MemoryFloorIO(bus), "T1", punto_banco_full(), [Seat(1, "player-1")],
                             random.Random(5), Clock())
        await dealer.open_table()
        from contracts.commands import LoadShoe
        from services.runtime.core import command
        await MemoryFloorIO(bus).send(T.SHOE_COMMANDS, command("T1", "load", Clock()(),
                                                               LoadShoe(shoe_id="S", cut_at=40)))
        for n in (1, 2):
            await dealer.play_round("S", f"S-{n}")
        return [r for r in bus.log if r.topic in INPUTS]

    return asyncio.run(run())


def projection_manager() -> tuple[TaskManager, int, OrderedProducer, OrderedProducer]:
    s = settings()
    tasks = TaskManager(ServiceHost(ProjectionCore(), s, TasksOnly()), s, "t.projection")
    tasks.version = None
    p = partition_of("T1", s.partitions)
    log: list[tuple[str, str]] = []
    main, prompt = OrderedProducer(name="main", log=log), OrderedProducer(name="prompt", log=log)
    tasks.producers[p] = main  # type: ignore[assignment]
    tasks.collector.prompt_producers[p] = prompt  # type: ignore[assignment]
    tasks.state[p] = "ready"
    tasks.positions[p] = {}
    tasks.enqueued = []  # type: ignore[attr-defined]
    tasks._enqueue = tasks.enqueued.append  # type: ignore[attr-defined,method-assign]
    return tasks, p, main, prompt


def records(inputs: list[Any], p: int) -> list[Rec]:
    return [Rec(f"t.{r.topic}", p, r.offset, r.key, r.value) for r in inputs]


async def settle(tasks: TaskManager) -> None:
    await tasks.queue.drain()
    assert tasks.prompt is not None
    await tasks.prompt.stop()


def test_split_takes_the_prompt_streams_events_and_keeps_the_rest_in_order():
    odds, ledger, odds2 = (SimpleNamespace(stream=s) for s in (T.PROJECTION_ODDS, T.PROJECTION_LEDGER,
                                                               T.PROJECTION_ODDS))
    send = Send(T.DEALING_COMMANDS, None)  # type: ignore[arg-type]
    rest, prompt = split([Decision("T1", events=(odds, ledger, odds2)), Decision("T2", events=(ledger,)),
                          Decision("T3", events=(odds,), sends=(send,)), Decision("T4", events=(odds2,))],
                         T.PROJECTION_ODDS)
    assert [(d.table_id, d.events, d.sends) for d in rest] == [("T1", (ledger,), ()), ("T2", (ledger,), ()),
                                                               ("T3", (), (send,))]
    assert [(d.table_id, d.events) for d in prompt] == [("T1", (odds, odds2)), ("T3", (odds,)), ("T4", (odds2,))]
    assert split([Decision("T1", events=(ledger,))], T.PROJECTION_ODDS)[1] == []


@pytest.mark.asyncio
async def test_odds_go_in_their_own_transaction_and_the_offsets_only_after_it(inputs):
    tasks, p, main, prompt = projection_manager()
    await asyncio.wait_for(tasks.on_records(records(inputs, p)), 10)
    await asyncio.wait_for(settle(tasks), 10)
    assert prompt.sent and {t for t, _, _ in prompt.sent} == {ODDS}
    assert ODDS not in {t for t, _, _ in main.sent}  # no odds in the batch's transaction
    # the prompt transaction committed before the batch's offsets went, and they went
    assert ("prompt", "committed") in main.log[:main.log.index(("main", "offsets"))]
    shoe = TopicPartition(f"t.{T.SHOE_EVENTS}", p)
    assert main.offsets[-1][0][shoe] == max(r.offset for r in inputs if r.topic == T.SHOE_EVENTS) + 1
    assert tasks.own_next[p][T.PROJECTION_ODDS] == len(prompt.sent)
    assert tasks.state[p] == "ready" and tasks.enqueued == []  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_a_failed_prompt_transaction_commits_no_offsets_and_restores_the_task(inputs):
    tasks, p, main, prompt = projection_manager()
    prompt.fail = KafkaConnectionError("broker away")
    await asyncio.wait_for(tasks.on_records(records(inputs, p)), 10)
    await asyncio.wait_for(settle(tasks), 10)
    assert ("prompt", "aborted") in main.log
    assert main.offsets == [] and ("main", "committed") not in main.log  # the inputs are read again
    assert tasks.state[p] == "restoring" and tasks.enqueued == [p]  # type: ignore[attr-defined]
    assert tasks.own_next.get(p, {}).get(T.PROJECTION_ODDS) is None


@pytest.mark.asyncio
async def test_odds_decided_while_a_prompt_transaction_is_in_flight_go_in_the_next_one(inputs):
    tasks, p, main, prompt = projection_manager()
    prompt.gate = asyncio.Event()
    recs = records(inputs, p)
    cards = [i for i, r in enumerate(recs) if b"card_drawn" in r.value]
    await asyncio.wait_for(tasks.on_records(recs[:cards[0] + 1]), 10)
    await asyncio.wait_for(tasks.on_records(recs[cards[0] + 1:cards[1] + 1]), 10)
    await asyncio.wait_for(tasks.on_records(recs[cards[1] + 1:cards[2] + 1]), 10)
    assert tasks.prompt is not None and len(tasks.prompt.queued[p].decisions) >= 2  # behind the one in flight
    assert main.offsets == []  # no input offset before its odds are committed
    prompt.gate.set()
    await asyncio.wait_for(settle(tasks), 10)
    assert prompt.committed == 2 and tasks.prompt.transactions == 2
    assert main.offsets and tasks.state[p] == "ready"


@pytest.mark.asyncio
async def test_without_prompt_streams_the_odds_stay_in_the_batchs_transaction(inputs):
    s = replace(settings(), prompt_streams=False)
    tasks = TaskManager(ServiceHost(ProjectionCore(), s, TasksOnly()), s, "t.projection")
    assert tasks.prompt is None and not tasks.collector.prompt
    assert tasks.queue.interval_s == 0  # and they are not held back by the commit interval either
    on = TaskManager(ServiceHost(ProjectionCore(), settings(), TasksOnly()), settings(), "t.projection")
    assert on.prompt is not None and on.queue.interval_s == ProjectionCore.commit_interval_ms / 1000 > 0


@dataclass
class SlowAcks(OrderedProducer):
    """Its records are acknowledged only when the test sets ``ack`` (a produce round trip in flight)."""

    ack: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition, key))
        fut = asyncio.get_running_loop().create_future()
        n = len(self.sent) - 1

        async def later() -> None:
            await self.ack.wait()
            fut.set_result(SimpleNamespace(offset=n))

        asyncio.get_running_loop().create_task(later())
        return fut


@pytest.mark.asyncio
async def test_odds_decided_while_a_prompt_transactions_records_are_sent_join_it(inputs):
    tasks, p, main, _ = projection_manager()
    prompt = SlowAcks(name="prompt", log=main.log)
    tasks.collector.prompt_producers[p] = prompt  # type: ignore[assignment]
    recs = records(inputs, p)
    cards = [i for i, r in enumerate(recs) if b"card_drawn" in r.value]
    await asyncio.wait_for(tasks.on_records(recs[:cards[0] + 1]), 10)
    await asyncio.sleep(0)  # its transaction has begun and waits for its records' acknowledgements
    await asyncio.wait_for(tasks.on_records(recs[cards[0] + 1:cards[1] + 1]), 10)
    prompt.ack.set()
    await asyncio.wait_for(settle(tasks), 10)
    assert tasks.prompt is not None
    assert (prompt.committed, tasks.prompt.transactions, tasks.prompt.joins) == (1, 1, 1)
    assert tasks.own_next[p][T.PROJECTION_ODDS] == len(prompt.sent) >= 4  # two cards' odds, both views
    assert main.offsets and tasks.state[p] == "ready"


def prompt_log(prompt: OrderedProducer) -> list[str]:
    return [what for name, what in prompt.log if name == "prompt"]


def two_cards(inputs: list[Any], p: int) -> tuple[list[Rec], list[Rec]]:
    """Task ``p``'s records up to the first card, and those after it up to the second."""
    recs = records(inputs, p)
    cards = [i for i, r in enumerate(recs) if b"card_drawn" in r.value]
    return recs[:cards[0] + 1], recs[cards[0] + 1:cards[1] + 1]


async def feed(tasks: TaskManager, recs: list[Rec]) -> None:
    """Hand ``recs`` to the tasks and wait until their batches' transactions are done."""
    await asyncio.wait_for(tasks.on_records(recs), 10)
    await asyncio.wait_for(tasks.queue.drain(), 10)


@pytest.mark.asyncio
async def test_the_next_prompt_transaction_is_primed_its_partition_added_before_its_odds(inputs):
    tasks, p, _, prompt = projection_manager()
    first, second = two_cards(inputs, p)
    await feed(tasks, first)
    assert tasks.prompt is not None
    # the first began with its odds; once committed the next is begun and its partition added, nothing sent
    assert prompt_log(prompt) == ["begun", "committed", "begun"]
    assert prompt.ahead == [TopicPartition(ODDS, p)] and p in tasks.prompt.primed
    sent = len(prompt.sent)
    await feed(tasks, second)
    assert len(prompt.sent) > sent  # the second card's odds went in the primed transaction, not a new one
    assert prompt_log(prompt) == ["begun", "committed", "begun", "committed", "begun"]
    await asyncio.wait_for(settle(tasks), 10)
    # a stop ends the primed transaction empty (aborted: nothing was sent in it)
    assert prompt_log(prompt) == ["begun", "committed", "begun", "committed", "begun", "aborted"]
    assert (tasks.prompt.transactions, tasks.prompt.primes, tasks.prompt.ended_empty) == (2, 2, 1)
    assert tasks.prompt.primed == {} and all(c.done() for c in tasks.prompt.committers.values())


@pytest.mark.asyncio
async def test_an_idle_primed_transaction_is_refreshed_then_left_ended(inputs, monkeypatch):
    from services.runtime import prompt_lane

    monkeypatch.setattr(prompt_lane, "PRIME_REFRESH_S", 0.05)
    monkeypatch.setattr(prompt_lane, "PRIME_KEEP_S", 0.3)
    tasks, p, _, prompt = projection_manager()
    first, second = two_cards(inputs, p)
    await feed(tasks, first)
    assert tasks.prompt is not None
    committer = tasks.prompt.committers[p]
    await asyncio.wait_for(committer, 5)  # idle past PRIME_KEEP_S: the committer ends
    log = prompt_log(prompt)
    assert log[:3] == ["begun", "committed", "begun"] and log[-1] == "aborted"
    refreshes = log[3:-1]  # each refresh: the primed one ended empty, the next primed
    assert refreshes == ["aborted", "begun"] * (len(refreshes) // 2) and len(refreshes) >= 4
    assert tasks.prompt.primed == {} and tasks.prompt.ended_empty == tasks.prompt.primes == 1 + len(refreshes) // 2
    assert prompt.committed == 1 and tasks.prompt.transactions == 1
    # the next card begins a transaction of its own again, with a new committer
    await asyncio.wait_for(tasks.on_records(second), 10)
    await asyncio.wait_for(settle(tasks), 10)
    assert prompt_log(prompt)[len(log):] == ["begun", "committed", "begun", "aborted"]


@pytest.mark.asyncio
async def test_a_reset_ends_the_primed_transaction_of_the_live_producer_only(inputs):
    tasks, p, _, prompt = projection_manager()
    first, second = two_cards(inputs, p)
    await feed(tasks, first)
    assert tasks.prompt is not None and p in tasks.prompt.primed
    await asyncio.wait_for(tasks.prompt.reset(p), 5)
    assert prompt_log(prompt)[-1] == "aborted" and tasks.prompt.primed == {} and p not in tasks.prompt.committers
    # a restore opened a new prompt producer before its reset: the old one's primed transaction is not touched
    # (its close and the new producer's init_transactions end it); the new one has none to end
    await feed(tasks, second)
    assert p in tasks.prompt.primed
    before = list(prompt.log)
    new = OrderedProducer(name="new", log=prompt.log)
    tasks.collector.prompt_producers[p] = new  # type: ignore[assignment]
    await asyncio.wait_for(tasks.prompt.reset(p), 5)
    assert prompt.log == before and new.aborted == 0 and tasks.prompt.primed == {}


@pytest.mark.asyncio
async def test_with_priming_off_each_prompt_transaction_begins_on_its_own(inputs):
    tasks, p, _, prompt = projection_manager()
    tasks.settings = replace(tasks.settings, prime_transactions=False)
    recs = records(inputs, p)
    cards = [i for i, r in enumerate(recs) if b"card_drawn" in r.value]
    await asyncio.wait_for(tasks.on_records(recs[:cards[1] + 1]), 10)
    await asyncio.wait_for(settle(tasks), 10)
    assert tasks.prompt is not None and tasks.prompt.primes == 0 and prompt.ahead == []
    assert prompt_log(prompt) == ["begun", "committed"] * tasks.prompt.transactions


def test_priming_comes_from_the_environment_on_by_default():
    from services.runtime.settings import Settings

    assert Settings.from_env({}).prime_transactions is True
    assert Settings.from_env({"CROUPIER_PRIME_TRANSACTIONS": "0"}).prime_transactions is False
    assert Settings.from_env({"CROUPIER_PRIME_TRANSACTIONS": "1"}).prime_transactions is True
    with pytest.raises(ValueError):
        Settings.from_env({"CROUPIER_PRIME_TRANSACTIONS": "-1"})
