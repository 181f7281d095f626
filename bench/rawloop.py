"""A raw aiokafka read-process-write loop with the pipeline's hops per round and no game work (the
baseline of ``bench/pipeline.py``, issue 8).

Four stages stand for the four services (``dealing``, ``wagering``, ``shoe``, ``settlement``). Each is a
``read_committed`` consumer of its own input topic (the services' partition count, keyed by table, as
``contracts.topics``)
and a transactional producer: it takes what ``getmany`` returns (at most 500 records, as the runtime's batch
mode), and in one transaction writes each record's next hop and commits the consumed offsets
(``send_offsets_to_transaction``). A record carries its remaining route; the last hop goes to the floor's
topic. A round, as the services' topic hops of one round (counted from the events):

* open: floor ``OpenRound`` → dealing (``RoundOpened``) → wagering (``BettingOpened``) → floor;
* bets: floor ``PlaceBet`` × bets → wagering (``BetPlaced``, to a topic nobody waits for);
* close: floor ``CloseBetting`` → wagering (``BettingClosed``) → dealing (``DrawCard`` 1–4) → shoe
  (``CardDrawn`` 1–4) → dealing (``CardDealt``; ``DrawCard`` 5) [→ shoe → dealing for card 5, and again for
  card 6] → settlement (``RoundSettled``) → floor: 5 transactional hops for 4 cards, 7 for 5, 9 for 6.

:func:`run_raw` drives ``tables`` tables concurrently, each round after the last (optionally paced), with
the bets and cards of the real rounds it is given, and returns each round's "No more bets" → settled time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from contracts import topics as T
from services.runtime.settings import FETCH_MAX_WAIT_MS
from services.runtime.settings import env_client_options as client_options

STAGES = ("dealing", "wagering", "shoe", "settlement")
FLOOR, SINK = "floor", "sink"
#: padding so a record is about the size of a real envelope (bytes)
PAD = b"x" * 300
clock = time.perf_counter


class RetryCount(logging.Filter):
    """Counts (and keeps off stderr) aiokafka's "Got error produce response ... NotEnoughReplicasError,
    retrying" warnings (aio-libs/aiokafka#1172). Their cause is the broker's transaction verification
    (KIP-890 part 1, Kafka 3.6+): the partition leader asks the transaction coordinator whether the
    partition is in the producer's transaction, and maps a transient answer (CONCURRENT_TRANSACTIONS,
    COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR...) to NOT_ENOUGH_REPLICAS for a client on an old produce
    version, as aiokafka is, so that it retries (apache/kafka#15087); which answer it is here was not found.
    The client retries after ``retry_backoff_ms`` (10 ms here). With ``transaction.partition.verification.enable=false``
    they were gone (0 against 78-89 per raw run) and neither loop's rate moved (2026-12-02, 2 runs each)."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if "NotEnoughReplicas" in record.getMessage():
            self.n += 1
            return False
        return True


NOT_ENOUGH_REPLICAS = RetryCount()
logging.getLogger("aiokafka.producer.sender").addFilter(NOT_ENOUGH_REPLICAS)


class Hop(msgspec.Struct, frozen=True):
    """A raw record: table, round, what it is, the stages still to visit (the last is the floor's)."""

    table: str
    round: str
    kind: str
    route: list[str]
    pad: bytes = b""


_enc, _dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder(Hop)


def close_route(cards: int) -> list[str]:
    """The stages a "No more bets" visits for a round of ``cards`` cards (4–6), then the floor."""
    extra = ["shoe", "dealing"] * (cards - 4)
    return ["wagering", "dealing", "shoe", "dealing", *extra, "settlement", FLOOR]


def transactions_on_path(cards: int) -> int:
    """Transactional hops on a round's critical path: open (2) + close."""
    return 2 + len(close_route(cards)) - 1


@dataclass
class RawLoop:
    """The four stages and the floor's producer/consumer, on topics ``<prefix>raw.<stage>``."""

    bootstrap: str
    prefix: str
    partitions: int = T.PARTITIONS
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    clients: list[AIOKafkaProducer | AIOKafkaConsumer] = field(default_factory=list)
    waiters: dict[tuple[str, str], asyncio.Future[float]] = field(default_factory=dict)
    transactions: int = 0
    producer: AIOKafkaProducer | None = None
    #: a transactional producer per stage *and partition*, the partitions of a batch committed concurrently:
    #: the runtime's shape (a fenced writer per task, services/runtime/tasks.py) without its game work; False:
    #: one producer per stage, one transaction per batch across all partitions (no per-task fencing)
    per_partition: bool = False

    def topic(self, stage: str) -> str:
        return f"{self.prefix}raw.{stage}"

    async def start(self) -> None:
        names = [self.topic(s) for s in (*STAGES, FLOOR, SINK)]
        admin = AIOKafkaAdminClient(**client_options(self.bootstrap))
        await admin.start()
        try:
            with contextlib.suppress(TopicAlreadyExistsError):
                # the wagering stage's input stands for wagering.commands: stamped by the broker, as a command
                # topic is (so a hop's time from "No more bets" starts at the same point, bench/hops.py)
                await admin.create_topics([NewTopic(n, self.partitions, 1, topic_configs=(
                    dict(T.COMMAND_TOPIC_CONFIG) if n == self.topic("wagering") else {})) for n in names])
        finally:
            await admin.close()
        await self._writable(names)
        for stage in STAGES:
            consumer = await self._consumer(stage, group=f"{self.prefix}raw.{stage}")
            # the services' producer settings (services/runtime/tasks.py): a spurious NOT_ENOUGH_REPLICAS
            # is retried after 10 ms, not the default 100 ms, so the baseline is not slowed where they are not
            shape = "pp" if self.per_partition else "stage"
            producers = []
            for p in range(self.partitions if self.per_partition else 1):
                producer = AIOKafkaProducer(**client_options(self.bootstrap), enable_idempotence=True, linger_ms=0,
                                            acks="all", retry_backoff_ms=10,
                                            transactional_id=f"{self.prefix}raw.{stage}.{shape}-{p}")
                await producer.start()
                self.clients.append(producer)
                producers.append(producer)
            self.tasks.append(asyncio.create_task(self._stage(stage, consumer, producers)))
        floor = await self._consumer(FLOOR, group=None)
        self.tasks.append(asyncio.create_task(self._floor(floor)))
        self.producer = AIOKafkaProducer(**client_options(self.bootstrap), enable_idempotence=True, linger_ms=0)
        await self.producer.start()
        self.clients.append(self.producer)

    async def _writable(self, names: list[str], timeout: float = 30.0) -> None:
        """Right after creation a partition may answer NotEnoughReplicas/NotLeader for a while (retried
        with backoff by the client, which would be timed): write one marker to every partition first."""
        probe = AIOKafkaProducer(**client_options(self.bootstrap), linger_ms=0, request_timeout_ms=2000)
        await probe.start()
        sender = logging.getLogger("aiokafka.producer.sender")
        level = sender.level
        sender.setLevel(logging.ERROR)  # the retries this waits out are expected here
        try:
            marker = _enc.encode(Hop("", "", "marker", []))
            await asyncio.wait_for(asyncio.gather(*(probe.send_and_wait(n, marker, partition=p)
                                                    for n in names for p in range(self.partitions))), timeout)
        finally:
            sender.setLevel(level)
            await probe.stop()

    async def _consumer(self, stage: str, group: str | None) -> AIOKafkaConsumer:
        c = AIOKafkaConsumer(**client_options(self.bootstrap), group_id=group, enable_auto_commit=False,
                             isolation_level="read_committed", auto_offset_reset="earliest",
                             fetch_max_wait_ms=FETCH_MAX_WAIT_MS)  # the services' fetch wait: a like-for-like baseline
        await c.start()
        self.clients.append(c)
        tps = [TopicPartition(self.topic(stage), p) for p in range(self.partitions)]
        c.assign(tps)
        await c.seek_to_end(*tps)
        for tp in tps:
            await c.position(tp)
        return c

    async def _stage(self, stage: str, consumer: AIOKafkaConsumer, producers: list[AIOKafkaProducer]) -> None:
        group = f"{self.prefix}raw.{stage}"

        async def commit(producer: AIOKafkaProducer, batch: dict[TopicPartition, list[Any]]) -> None:
            async with producer.transaction():
                for records in batch.values():
                    for r in records:
                        hop = _dec.decode(r.value)
                        nxt = hop.route[0] if hop.route else SINK
                        out = Hop(hop.table, hop.round, hop.kind, hop.route[1:], PAD)
                        await producer.send(self.topic(nxt), _enc.encode(out), key=T.key(hop.table),
                                            partition=r.partition if self.per_partition else None)
                await producer.send_offsets_to_transaction(
                    {tp: recs[-1].offset + 1 for tp, recs in batch.items()}, group)
            self.transactions += 1

        while True:
            batch = await consumer.getmany(timeout_ms=100, max_records=500)
            if not batch:
                continue
            if self.per_partition:
                await asyncio.gather(*(commit(producers[tp.partition], {tp: recs}) for tp, recs in batch.items()))
            else:
                await commit(producers[0], batch)

    async def _floor(self, consumer: AIOKafkaConsumer) -> None:
        while True:
            batch = await consumer.getmany(timeout_ms=100)
            now = clock()
            for records in batch.values():
                for r in records:
                    hop = _dec.decode(r.value)
                    fut = self.waiters.pop((hop.round, hop.kind), None)
                    if fut is not None and not fut.done():
                        fut.set_result(now)

    async def _send(self, table: str, round_id: str, kind: str, route: list[str], wait: bool) -> float | None:
        assert self.producer is not None
        fut: asyncio.Future[float] | None = None
        if wait:
            fut = self.waiters[(round_id, kind)] = asyncio.get_running_loop().create_future()
        await self.producer.send_and_wait(self.topic(route[0]), _enc.encode(Hop(table, round_id, kind, route[1:], PAD)),
                                          key=T.key(table))
        return None if fut is None else await asyncio.wait_for(fut, 60)

    async def round(self, table: str, round_id: str, bets: int, cards: int, betting_s: float = 0.0) -> float:
        """One round as the floor plays it; returns "No more bets" sent → settled seen (s). ``betting_s``:
        seconds between the last bet and "No more bets" (0: at once)."""
        await self._send(table, round_id, "opened", ["dealing", "wagering", FLOOR], wait=True)
        for i in range(bets):
            await self._send(table, f"{round_id}/bet{i}", "bet", ["wagering", SINK], wait=False)
        if betting_s:
            await asyncio.sleep(betting_s)
        t0 = clock()
        settled = await self._send(table, round_id, "settled", close_route(cards), wait=True)
        assert settled is not None
        return settled - t0

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for c in reversed(self.clients):
            with contextlib.suppress(Exception):
                await c.stop()


async def run_raw(loop: RawLoop, tables: int, rounds: int, shapes: Sequence[tuple[int, int]], *, pace: float = 0.0,
                  betting_s: float = 0.0, tag: str = "") -> tuple[list[float], float]:
    """``rounds`` rounds at each of ``tables`` tables concurrently; round *k* of table *t* takes the
    (bets, cards) of ``shapes[(t * rounds + k) % len(shapes)]``. ``pace``: at least that many seconds
    between one table's round starts (0: back to back); ``betting_s``: seconds from the last bet to "No
    more bets". Returns (latencies s, wall s)."""
    lat: list[float] = []

    async def table(t: int) -> None:
        if pace:  # tables start spread over one pace period, as on a floor
            await asyncio.sleep(pace * t / tables)
        for k in range(rounds):
            start = clock()
            bets, cards = shapes[(t * rounds + k) % len(shapes)]
            lat.append(await loop.round(f"R{t:03d}", f"R{t:03d}-{tag}{k}", bets, cards, betting_s))
            if pace:
                await asyncio.sleep(max(0.0, pace - (clock() - start)))

    t0 = clock()
    await asyncio.gather(*(table(t) for t in range(tables)))
    return lat, clock() - t0
