"""The projection's odds, published ahead of their inputs' offsets (issue 30: the prompt stream), on a real
broker: a batch's transaction lost after its odds committed makes the task restore, and no odds are
published twice nor lost.

The projection runs in this process (``build_service``); its task transaction is made to fail once, right after
the prompt transactions of its records committed and before its input offsets would have gone (the crash the
prompt stream opens: odds on ``projection.odds`` for inputs the group will read again). The inputs are a table's
events dealt on the in-memory bus and written to the input topics one by one. Then the odds topic is read raw
(``read_committed``) and checked independently of the projection's code: every point of the shoe once (table,
shoe, step, trigger, round, view), its seqs 1..n without a gap, and every card's public odds there.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.events import CardDrawn, OddsUpdated
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.core import ProjectionCore
from services.rawlog import read_topic
from services.runtime.app import build_service
from services.runtime.kafka import ensure_topics
from tests.services.helpers import floor_bus
from tests.system.conftest import broker_settings
from tests.system.floors import short_shoe

INPUTS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)


async def _dealt() -> list[Any]:
    """A table's input events through a short shoe, as the four services wrote them (in-memory bus)."""
    bus, _ = floor_bus(seed=41)
    dealer = TableDealer(MemoryFloorIO(bus), "PO1", short_shoe(punto_banco_full()),
                         [Seat(i, f"player-{i}") for i in range(1, 4)], random.Random(41), Clock())
    await dealer.run(shoes=1)
    return [r for r in bus.log if r.topic in INPUTS]


async def test_a_batch_lost_after_its_odds_committed_publishes_no_odds_twice_and_loses_none(kafka_bootstrap: str):
    settings = broker_settings(kafka_bootstrap, topic_prefix=f"po{uuid.uuid4().hex[:8]}.", partitions=2)
    await ensure_topics(settings, T.ALL_TOPICS)
    inputs = await _dealt()
    cards = [decode_event(r.value) for r in inputs if r.topic == T.SHOE_EVENTS]
    card_count = sum(isinstance(e.payload, CardDrawn) for e in cards)
    svc = build_service(ProjectionCore(), settings)
    await svc.start()
    await svc.wait_ready()
    tasks = svc.tasks
    assert tasks is not None and tasks.prompt is not None
    real = tasks.collector.transaction
    lost: list[int] = []
    with_odds = 0

    async def lose_the_third(prod: Any, p: int, decisions: Any, letters: Any, checkpoint: Any, offsets: Any,
                             futs: Any, waits: Any = None, **kw: Any) -> None:
        nonlocal with_odds
        if waits and offsets and not lost:
            with_odds += 1
            if with_odds == 3:
                await asyncio.gather(*waits)  # its odds are committed; its offsets never go
                lost.append(p)
                raise KafkaConnectionError("test: the batch's transaction lost after its odds committed")
        await real(prod, p, decisions, letters, checkpoint, offsets, futs, waits, **kw)

    tasks.collector.transaction = lose_the_third  # type: ignore[method-assign]
    producer = AIOKafkaProducer(**settings.client_options(), linger_ms=0)
    await producer.start()
    try:
        restores = tasks.restores
        for r in inputs:
            await producer.send_and_wait(settings.topic(r.topic), r.value, key=r.key)
        odds: list[Any] = []
        for _ in range(240):  # until every card's public odds are there (a loaded CI machine: a minute)
            odds = [decode_event(x.value) for x in await read_topic(settings, settings.topic(T.PROJECTION_ODDS))]
            public_cards = {o.payload.step for o in odds if o.payload.trigger == "card" and o.payload.view == "public"}
            if len(public_cards) >= card_count:
                break
            await asyncio.sleep(0.25)
    finally:
        await producer.stop()
        await svc.stop()
    assert lost, "no batch transaction carried odds: the crash was never injected"
    assert tasks.restores > restores  # the task was restored after the lost transaction
    points = Counter((o.table_id, o.payload.shoe_id, o.payload.step, o.payload.trigger, o.payload.round_id,
                      o.payload.view) for o in odds if isinstance(o.payload, OddsUpdated))
    assert [k for k, n in points.items() if n > 1] == []  # never twice
    assert sorted(o.seq for o in odds) == list(range(1, len(odds) + 1))  # no gap, no seq held twice
    steps = sorted(o.payload.step for o in odds if o.payload.trigger == "card" and o.payload.view == "public")
    assert steps == list(range(steps[0], steps[0] + card_count)) and card_count > 50  # none lost


async def read_until(settings: Any, topic: str, n: int, timeout_s: float = 30) -> list[bytes]:
    """The committed values of ``topic`` (every partition) once there are at least ``n``, or what there is after
    ``timeout_s``: a commit returns once the coordinator logged it, and its markers (so the last stable offset a
    ``read_committed`` reader stops at) follow a moment later (CI read ``[]`` once, reading at once)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    seen = [r.value for r in await read_topic(settings, topic)]
    while len(seen) < n and loop.time() < deadline:
        await asyncio.sleep(0.2)
        seen = [r.value for r in await read_topic(settings, topic)]
    return seen


async def test_a_primed_prompt_transaction_holds_no_reader_back_and_carries_the_next_odds(kafka_bootstrap: str):
    """A prompt producer's next transaction begun with its partition added ahead of any record (the lane's
    primed transaction, :mod:`services.runtime.prompt_lane`): a ``read_committed`` reader is not held back by it
    (another producer's record committed there meanwhile is read), the odds then sent in it are read once it
    commits, and one ended empty leaves nothing. On version 1 transactions: under version 2
    (:mod:`services.runtime.transaction_v2`) a Produce adds its partition itself and there is nothing to prime."""
    from aiokafka import TopicPartition

    from services.runtime.producers import add_partition_ahead
    from services.runtime.record_collector import RecordCollector

    settings = broker_settings(kafka_bootstrap, topic_prefix=f"pp{uuid.uuid4().hex[:8]}.", partitions=1,
                               transaction_v2=False)
    await ensure_topics(settings, [T.PROJECTION_ODDS])
    topic = settings.topic(T.PROJECTION_ODDS)
    tp = TopicPartition(topic, 0)
    collector = RecordCollector(settings, "projection", settings.group("projection"), prompt=True)
    other = AIOKafkaProducer(**settings.client_options(), transactional_id=f"{settings.topic_prefix}other",
                             enable_idempotence=True)
    try:
        await collector.open(0)
        await other.start()
        prod = collector.prompt_producers[0]
        await prod.begin_transaction()
        add_partition_ahead(prod, tp)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while tp not in prod._txn_manager.txn_partitions and loop.time() < deadline:  # its AddPartitionsToTxn
            await asyncio.sleep(0.01)
        assert tp in prod._txn_manager.txn_partitions  # added, before any record
        async with other.transaction():
            await (await other.send(topic, b"another's", partition=0))
        assert await read_until(settings, topic, 1) == [b"another's"]  # not held back by the primed one
        await (await prod.send(topic, b"the odds", partition=0))
        await prod.commit_transaction()
        assert await read_until(settings, topic, 2) == [b"another's", b"the odds"]
        await prod.begin_transaction()  # primed again, then ended empty
        add_partition_ahead(prod, tp)
        await prod.abort_transaction()
        async with prod.transaction():
            await (await prod.send(topic, b"the next odds", partition=0))
        assert await read_until(settings, topic, 3) == [b"another's", b"the odds", b"the next odds"]
    finally:
        await other.stop()
        await collector.close_all()


async def test_the_next_owners_restore_fences_the_old_owners_prompt_producer(kafka_bootstrap: str):
    """A paused owner that lost its task comes back with its prompt transaction open: the next owner's open
    (its restore's fence) aborted it, its commit fails, and a ``read_committed`` reader sees none of it."""
    from aiokafka.errors import KafkaError

    from services.runtime.record_collector import RecordCollector

    settings = broker_settings(kafka_bootstrap, topic_prefix=f"pf{uuid.uuid4().hex[:8]}.", partitions=1)
    await ensure_topics(settings, [T.PROJECTION_ODDS])
    topic = settings.topic(T.PROJECTION_ODDS)
    old = RecordCollector(settings, "projection", settings.group("projection"), prompt=True)
    new = RecordCollector(settings, "projection", settings.group("projection"), prompt=True)
    try:
        await old.open(0)
        assert old.prompt_producers[0]._txn_manager.transactional_id.endswith("projection.task-0.prompt")
        prod = old.prompt_producers[0]
        await prod.begin_transaction()
        await (await prod.send(topic, b"the zombie's odds", partition=0))
        await new.open(0)  # the next owner's restore
        try:
            await prod.commit_transaction()
            committed = True
        except KafkaError:
            committed = False
        assert not committed
        async with new.prompt_producers[0].transaction():
            await (await new.prompt_producers[0].send(topic, b"the owner's odds", partition=0))
        assert await read_until(settings, topic, 1) == [b"the owner's odds"]
    finally:
        await old.close_all()
        await new.close_all()
