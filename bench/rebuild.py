"""Restart time of each service against 1k, 10k and 100k rounds of history (issue 8, "Proven by the project").

Run: ``.venv/bin/python bench/rebuild.py [--rounds 1000,10000,100000] [--tables N] [--timeout 300]
[--warm-runs 3] [--workers 2] [--gen-budget 2400] [--bootstrap HOST:PORT] [--keep-topics]`` (exit 2 with one line on stderr
when the broker cannot be reached).

For each size:

1. **History, generated, not dealt live.** The five services (shoe, dealing, wagering, settlement,
   projection) run on the in-memory bus (``services/runtime/memory.py``; :class:`RoutedBus` delivers exactly
   as its ``pump`` but looks each topic's subscribers up once) driven by the simulated floor
   (``services/floor``), as ``tests/services/test_floor_memory.py``: ``--tables`` tables (default
   ``max(4, rounds // 500)``: about 500 rounds, six shoes, per table), 3 seated players betting, dealt one
   table after another. The shuffle, the salt and the vault's nonces are reseeded per table from
   ``(seed, table index)``, so a table's history does not depend on which tables share a process: the tables
   are split over ``--workers`` spawned processes (default 2; table *i* to worker ``i % workers``), each
   with its own five services and producer (``tests/unit/test_bench_helpers.py`` checks that two workers
   write byte for byte the records of one, per table in the same order, with the same digest). Every
   record written to the bus (each service's events on all its streams, the floor's commands and the
   dealing service's ``DrawCard`` on the command topics, dead letters) is written raw, in bus order, into
   Kafka topics of a fresh prefix by a plain producer (no idempotence, acks=1, no compression) that fills
   each partition's 1 MiB batches itself (``send_batch``, the partition the default partitioner gives the
   key: ``contracts.topics.key``, the table id). The bus is emptied every ``--chunk`` records, between
   rounds, so memory stays bounded by the services' own state; the services' info log lines (one per
   event, to /dev/null anyway) are dropped while generating, warnings are not. The topics are created first
   with the services' own ``ensure_topics``; their partition counts are checked against
   ``contracts.topics.PARTITIONS`` and the records per topic against the end offsets. The expected
   projection digest is ``state_digest`` over every worker's in-memory projection states (shipped as msgpack
   of the core's ``state_type``); the test also checks that a projection rebuilt from the written records
   alone reaches it and has nothing left to write. Generation stops with a message once ``--gen-budget`` s
   (default 2400) have passed.
2. **Restarts.** Each service alone, ``services.create(name, settings)`` and ``start()`` (as ``croupier
   serve``), twice: *cold* (its consumer group committed at the end of the history, as a service that had
   handled it all, but no snapshot yet: a fold from offset zero) then *warm* (the same group again, after a
   clean ``stop()``: the checkpoint the cold start wrote after its long fold, plus the tail). Timed from just before ``start()``:

   * ``ready``: the service says it has restored (``bench/readiness.py``: its readiness flag if it has one,
     else its "rebuilt" log line);
   * projection, ``done``: its state digest (the query API's ``/digest``, in process) equals the digest the
     in-memory projection reached (polled after ``ready``, timed when the states were taken, not after
     the bench has hashed them);
   * ``phases``: the restore's own marks (the services' ``restored`` log lines), summed over the tasks it
     restored: ``fence`` (the transactional producer's init, fencing the previous owner), ``committed``
     (the group's committed offsets), ``snapshot`` (reading and decoding the checkpoint), ``own`` (the own
     streams' tail after it), ``inputs`` (the input streams' tail up to the committed offsets);
   * shoe, dealing, wagering, settlement, ``done``: the answer to a probe command sent just before
     ``start()`` behind the history on its command topic (an unknown table's ``CloseShoe`` /
     ``OpenRound`` / ``CloseBetting`` / ``CollectCommission``, each answered by a ``CommandRejected`` on
     the service's events): the service is serving new commands again. The projection is measured first,
     so the probes' rejections are not in its history.

   The warm start is repeated ``--warm-runs`` times (default 3) and its median is the figure (the machine
   is shared and noisy); every run is printed. A start that does not finish within ``--timeout`` s is
   reported as such (and stopped).

The per-service table is printed for each size; the last line is exactly
``rebuild: s_at_1k=<a> s_at_10k=<b> s_at_100k=<c>``: at each size the slowest service's warm ``done``
seconds, the median of its warm runs (``timeout>T`` when one did not finish; ``-`` for a size not run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import resource
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import murmur2

import services
from baccarat.table import punto_banco_full
from bench.pipeline import TimedDealer, partitions_ready, probe, quiet_client_logs
from bench.readiness import LogWatch, wait_restored, watch_service_logs
from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event, encode
from contracts.commands import CloseBetting, CloseShoe, CollectCommission, Command, OpenRound
from croupier.topics import cleanup
from services.floor.bettors import Seat
from services.floor.dealer import Clock
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from services.runtime.kafka import ensure_topics
from services.runtime.memory import MemoryBus
from services.runtime.settings import DEFAULT_BOOTSTRAP, Settings

clock = time.perf_counter
#: measured in this order: the projection before any probe writes a rejection into its inputs
ORDER = ("projection", "shoe", "dealing", "wagering", "settlement")
#: service -> (command topic, own events topic, a command its core rejects for an unknown table)
PROBES: dict[str, tuple[str, str, Command]] = {
    "shoe": (T.SHOE_COMMANDS, T.SHOE_EVENTS, CloseShoe(shoe_id="probe-shoe")),
    "dealing": (T.DEALING_COMMANDS, T.DEALING_EVENTS, OpenRound(round_id="probe-round", shoe_id="probe-shoe")),
    "wagering": (T.WAGERING_COMMANDS, T.WAGERING_EVENTS, CloseBetting(round_id="probe-round")),
    "settlement": (T.SETTLEMENT_COMMANDS, T.SETTLEMENT_EVENTS, CollectCommission(seat=1)),
}
SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]


# -- 1. history -------------------------------------------------------------------------------------
class BenchRandomness:
    """The bench's only randomness: the in-memory shoe service's shuffle and salt and the vault's nonces.

    Reseeded at the start of each table (:meth:`for_table`): the tables of one process are dealt one after
    another, so every shoe of table *i* is shuffled, salted and sealed from ``(seed, i)`` alone, and a
    table's history is the same whichever tables share its process (``--workers``)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.cards = random.Random(f"cards-{seed}")
        self.nonces = random.Random(f"nonce-{seed}")

    def for_table(self, index: int) -> None:
        """Reseed for the table dealt next (its index in the whole history)."""
        self.cards.seed(f"cards-{self.seed}-{index}")
        self.nonces.seed(f"nonce-{self.seed}-{index}")

    def entropy(self) -> Any:
        """The shoe service's :class:`~services.shoe.core.Entropy`, drawing from :attr:`cards`."""
        from services.shoe.core import Entropy

        def shuffle(cards: list[Any]) -> list[Any]:
            self.cards.shuffle(cards)
            return cards

        return Entropy(shuffle=shuffle, salt=lambda: self.cards.randbytes(16))

    def nonce(self) -> bytes:
        """A vault nonce, drawing from :attr:`nonces`."""
        from contracts.vault import NONCE_BYTES

        return self.nonces.randbytes(NONCE_BYTES)


class RoutedBus(MemoryBus):
    """The in-memory bus, delivering exactly as :meth:`MemoryBus.pump` does (every record, in order, to
    each subscribed host in the order the hosts were added) but looking each topic's subscribers up once
    instead of rebuilding every host's topic list for every record (a tenth of the generation's time)."""

    def __init__(self, settings: Settings | None = None):
        super().__init__(settings)
        self._routes: dict[str, list[Any]] = {}

    def add(self, core: Any) -> Any:
        """As :meth:`MemoryBus.add`; the routes are looked up again."""
        self._routes.clear()
        return super().add(core)

    def remove(self, host: Any) -> None:
        """As :meth:`MemoryBus.remove`; the routes are looked up again."""
        self._routes.clear()
        super().remove(host)

    async def pump(self, limit: int = 1_000_000) -> int:
        """Deliver queued records until none is left; returns how many were delivered."""
        n = 0
        routes = self._routes
        while self.queue and n < limit:
            rec = self.queue.popleft()
            hosts = routes.get(rec.topic)
            if hosts is None:
                hosts = routes[rec.topic] = [h for h in self.hosts if rec.topic in h.subscribed_topics]
            for host in hosts:
                await host.handle(rec.topic, rec.partition, rec.offset, rec.key, rec.value)
            n += 1
        return n


def memory_floor(seed: int) -> tuple[MemoryBus, dict[str, Any], BenchRandomness]:
    """The five services on an in-memory bus (as ``tests/services``), and the randomness they draw from."""
    from contracts.vault import Vault
    from services.dealing.core import DealingCore
    from services.projection.core import ProjectionCore
    from services.settlement.core import SettlementCore
    from services.shoe.app import vault_keys
    from services.shoe.core import ShoeCore
    from services.wagering.core import WageringCore

    rand = BenchRandomness(seed)
    vault = Vault(vault_keys(), nonce=rand.nonce)  # the key the services get too
    bus = RoutedBus()
    cores = {"shoe": ShoeCore(rand.entropy(), vault), "dealing": DealingCore(), "wagering": WageringCore(),
             "settlement": SettlementCore(), "projection": ProjectionCore()}
    return bus, {name: bus.add(core) for name, core in cores.items()}, rand


_DIGESTS: dict[int, Any] = {}


async def projection_digest(host: Any) -> tuple[str, int, float]:
    """(digest, tables, when) of ``host``'s projection state, as the query API reports it (in process):
    ``when`` is the clock reading at which the tables were taken (states are immutable, so the digest, computed
    after, is of the state at ``when``; hashing 200 tables takes seconds and is the bench's work). Each
    host's tables are re-encoded only when their state changed since the last poll
    (:class:`services.projection.digest.DigestCache`), so polling does not load the restore it times."""
    from services.projection.digest import DigestCache

    cache = _DIGESTS.setdefault(id(host), DigestCache())
    when = clock()
    tables = dict(host.runner.tables)
    return cache.digest(tables), len(tables), when


async def commit_history(settings: Settings, name: str) -> None:
    """Commit ``name``'s consumer group at the end of every topic it consumes: what a restart of a service
    that had handled the whole history finds (its offsets are committed with its events)."""
    topics = services.create(name, settings).host.subscribed_topics
    consumer = AIOKafkaConsumer(**settings.client_options(), group_id=settings.group(name),
                                enable_auto_commit=False, isolation_level="read_committed")
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t in topics for p in range(settings.partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        await consumer.commit({tp: off for tp, off in ends.items() if off > 0} or None)
    finally:
        await consumer.stop()


@dataclass
class History:
    """What was generated and written for one size."""

    rounds: int = 0
    tables: int = 0
    records: Counter[str] = field(default_factory=Counter)
    digest: str = ""
    gen_s: float = 0.0
    #: the records themselves, when generated without a broker (``generate(settings=None)``)
    written: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition a keyed record lands on: murmur2 of the key, as every Kafka client's default
    partitioner computes it (``services.runtime.tasks.partition_of`` for a table id)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class KafkaWriter:
    """A fast plain producer (no idempotence, acks=1, 1 MiB batches, 20 ms linger, no compression) that
    fills each partition's batches itself (``create_batch``/``send_batch``, the partition from
    :func:`partition_for_key`), in the order given: the per-record ``send`` cost a third of the generation."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.producer = AIOKafkaProducer(**settings.client_options(), acks=1, linger_ms=20,
                                         max_batch_size=1 << 20, compression_type=None,
                                         max_request_size=8 << 20, request_timeout_ms=60_000)

    async def write(self, records: list[Any], counts: Counter[str]) -> None:
        """Write ``records`` (bus records: topic, key, value) and count them per topic, once delivered."""
        producer, n = self.producer, self.settings.partitions
        open_batches: dict[tuple[str, int], Any] = {}
        sent: list[Any] = []
        written: Counter[str] = Counter()
        for r in records:
            topic = self.settings.topic(r.topic)
            written[r.topic] += 1
            if r.key is None:  # no key: the default partitioner's choice, as before
                sent.append(await producer.send(topic, r.value))
                continue
            tp = (topic, partition_for_key(r.key, n))
            batch = open_batches.get(tp)
            if batch is None:
                batch = open_batches[tp] = producer.create_batch()
            if batch.append(key=r.key, value=r.value, timestamp=None) is None:  # full: send it, start the next
                sent.append(await producer.send_batch(batch, tp[0], partition=tp[1]))
                batch = open_batches[tp] = producer.create_batch()
                if batch.append(key=r.key, value=r.value, timestamp=None) is None:
                    raise RuntimeError(f"a record of {len(r.value)} bytes does not fit an empty batch")
        for (topic, p), batch in open_batches.items():
            if batch.record_count():
                sent.append(await producer.send_batch(batch, topic, partition=p))
        await asyncio.gather(*sent)
        counts.update(written)


class ListWriter:
    """A writer that keeps the records instead (``generate(settings=None)``: the history without a broker)."""

    def __init__(self) -> None:
        self.producer = self
        self.records: list[tuple[str, bytes | None, bytes]] = []

    async def start(self) -> None:
        """Nothing to start."""

    async def stop(self) -> None:
        """Nothing to stop."""

    async def flush(self) -> None:
        """Nothing to flush."""

    async def write(self, records: list[Any], counts: Counter[str]) -> None:
        """Keep ``records`` as (topic, key, value) and count them per topic."""
        for r in records:
            self.records.append((r.topic, r.key, r.value))
            counts[r.topic] += 1


class OverBudget(RuntimeError):
    """Generating the history would take longer than ``--gen-budget`` allows."""


@dataclass
class Part:
    """What one process generated: its tables' records per topic, each table's projection state (msgpack of
    the core's ``state_type``, as a snapshot holds it) and, without a broker, the records themselves."""

    rounds: int = 0
    records: Counter[str] = field(default_factory=Counter)
    states: dict[str, bytes] = field(default_factory=dict)
    written: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)


@contextlib.contextmanager
def warnings_only() -> Any:
    """Drop the services' info lines while the history is generated (one rendered JSON line per event,
    written to /dev/null anyway: a tenth of the generation's time); warnings and errors still go through.
    Loggers bound inside the block keep the filter; the restarted services are created after it."""
    import structlog

    before = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    try:
        yield
    finally:
        structlog.configure(wrapper_class=before)


def split_rounds(rounds: int, tables: int) -> list[int]:
    """Rounds per table: ``rounds`` over ``tables``, the first ``rounds % tables`` tables one more."""
    return [rounds // tables + (1 if i < rounds % tables else 0) for i in range(tables)]


async def generate_tables(settings: Settings | None, tables: list[tuple[int, int]], chunk: int, budget: float,
                          seed: int = 17, name: str = "") -> Part:
    """Deal ``tables`` ((table index, rounds) each, one table after another) on one in-memory floor, writing
    every record into Kafka as it goes (``settings`` None: kept in :attr:`Part.written` instead). Raises
    :class:`OverBudget` (with the rounds reached and the rate) once ``budget`` s have passed."""
    part = Part()
    total = sum(n for _, n in tables)
    bus, hosts, rand = memory_floor(seed)
    io = MemoryFloorIO(bus)
    writer: Any = KafkaWriter(settings) if settings is not None else ListWriter()
    await writer.producer.start()
    t0 = clock()

    async def flush() -> None:
        records, bus.log = bus.log, []
        await writer.write(records, part.records)
        for lst in bus.topics.values():  # nothing reads them but a bus rebuild, which the bench never does
            lst.clear()
        io._seen.clear()
        io.log.by_table.clear()  # between rounds: a dealer takes its marks at the start of each step

    try:
        for i, n in tables:
            rand.for_table(i)
            d = TimedDealer(io, f"H{i:03d}", punto_banco_full(), SEATS, random.Random(seed * 1000 + i),
                            Clock(datetime(2026, 1, 1, tzinfo=UTC)), timeout=5)
            await d.open_table()
            await d.load_shoe()
            for _ in range(n):
                await d.next_round()
                part.rounds += 1
                if len(bus.log) >= chunk:
                    await flush()
                    rate = part.rounds / (clock() - t0)
                    print(f"  {name}generated {part.rounds}/{total} rounds, {sum(part.records.values())} records "
                          f"({rate:.0f} rounds/s; RSS {rss_mib():.0f} MiB)", flush=True)
                    if clock() - t0 > budget and part.rounds < total:
                        raise OverBudget(
                            f"{name}generation stopped at {part.rounds} of {total} rounds after "
                            f"{clock() - t0:.0f} s (--gen-budget {budget:.0f} s): {rate:.0f} rounds/s, "
                            f"{(total - part.rounds) / rate / 60:.0f} more minutes needed; the in-memory "
                            f"services (the projection's exact odds twice per card, every host's handling of "
                            f"every record) bound it, not Kafka")
            d.close_sent.clear()
            d.close_acked.clear()
        await flush()
        await writer.producer.flush()
    finally:
        await writer.producer.stop()
    import msgspec

    part.states = {tid: msgspec.msgpack.encode(slot.state) for tid, slot in hosts["projection"].runner.tables.items()}
    if isinstance(writer, ListWriter):
        part.written = writer.records
    return part


def _generate_in_child(bootstrap: str | None, prefix: str, tables: list[tuple[int, int]], chunk: int,
                       budget: float, seed: int, name: str) -> Part:
    """:func:`generate_tables` in a worker process (spawned: its own services, logs and producer)."""
    quiet_client_logs()
    watch_service_logs(open(os.devnull, "w"), loud=lambda m: print(m, file=sys.stderr, flush=True))  # noqa: SIM115
    settings = None if bootstrap is None else replace(Settings.from_env(), bootstrap_servers=bootstrap,
                                                         topic_prefix=prefix)
    with warnings_only():
        return asyncio.run(generate_tables(settings, tables, chunk, budget, seed, name))


def digest_of_states(states: dict[str, bytes]) -> str:
    """The projection's state digest (``services.projection.digest.state_digest``) over tables whose
    states were generated in several processes (decoded with the core's ``state_type``)."""
    import msgspec

    from services.projection.core import ProjectionCore
    from services.projection.digest import state_digest

    @dataclass
    class _Slot:
        state: Any

    codec = ProjectionCore.state_type
    return state_digest({tid: _Slot(msgspec.msgpack.decode(b, type=codec)) for tid, b in states.items()})


async def generate(settings: Settings | None, rounds: int, tables: int, chunk: int, budget: float,
                   seed: int = 17, workers: int = 1) -> History:
    """Deal ``rounds`` rounds over ``tables`` tables in memory, writing every record into Kafka as it goes
    (``settings`` None: kept in :attr:`History.written`). With ``workers`` > 1 the tables are dealt by that
    many spawned processes (table *i* by worker ``i % workers``; tables are independent and each draws its
    randomness from ``(seed, i)``, so the history is the same for any ``workers``), each with its own
    in-memory floor and producer; the projection's digest is taken over all their tables' states."""
    hist = History(rounds=rounds, tables=tables)
    per = list(enumerate(split_rounds(rounds, tables)))
    workers = max(1, min(workers, tables))
    t0 = clock()
    if workers == 1:
        with warnings_only():
            parts = [await generate_tables(settings, per, chunk, budget, seed)]
    else:
        import multiprocessing

        bootstrap = None if settings is None else settings.bootstrap_servers
        prefix = "" if settings is None else settings.topic_prefix
        loop = asyncio.get_running_loop()
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = await asyncio.gather(*(
                loop.run_in_executor(pool, _generate_in_child, bootstrap, prefix, per[w::workers], chunk, budget,
                                     seed, f"[worker {w}] ")
                for w in range(workers)))
    hist.gen_s = clock() - t0
    states: dict[str, bytes] = {}
    for part in parts:
        hist.records.update(part.records)
        states.update(part.states)
        hist.written.extend(part.written)
    hist.digest = digest_of_states(states)
    return hist


async def check_topics(settings: Settings, hist: History) -> None:
    """Every topic has ``PARTITIONS`` partitions and holds exactly what was written (end offsets)."""
    admin = AIOKafkaAdminClient(**settings.client_options())
    await admin.start()
    try:
        described = await admin.describe_topics([settings.topic(t) for t in T.ALL_TOPICS])
    finally:
        await admin.close()
    wrong = {d["topic"]: len(d["partitions"]) for d in described if len(d["partitions"]) != T.PARTITIONS}
    if wrong:
        raise RuntimeError(f"topics without {T.PARTITIONS} partitions: {wrong}")
    consumer = AIOKafkaConsumer(**settings.client_options())
    await consumer.start()
    try:
        tps = [TopicPartition(settings.topic(t), p) for t in T.ALL_TOPICS for p in range(T.PARTITIONS)]
        end = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    have = Counter({t: sum(end[TopicPartition(settings.topic(t), p)] for p in range(T.PARTITIONS))
                    for t in T.ALL_TOPICS})
    missing = {t: (hist.records[t], have[t]) for t in T.ALL_TOPICS if have[t] != hist.records[t]}
    if missing:
        raise RuntimeError(f"records written vs end offsets differ: {missing}")


# -- 2. restarts ------------------------------------------------------------------------------------
@dataclass
class Start:
    """One start of one service: seconds from just before ``start()``; None when not reached."""

    ready: float | None = None
    how: str = ""
    done: float | None = None
    note: str = ""
    #: restore phase -> seconds summed over the tasks restored (from the ``restored`` log lines' marks)
    phases: dict[str, float] = field(default_factory=dict)


#: the marks of a ``restored`` log line, in order (each is seconds from the restore's start)
PHASES = ("fence", "committed", "snapshot", "own", "inputs")


def restore_phases(lines: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds spent in each restore phase (:data:`PHASES`), summed over ``lines`` (``restored`` log
    records, each with ``marks``: phase -> seconds since that task's restore began), plus ``publish`` (the
    rest of each restore: reactions published, the consumer resumed) and ``tasks`` (how many)."""
    out = dict.fromkeys((*PHASES, "publish"), 0.0)
    for rec in lines:
        marks, last = rec.get("marks") or {}, 0.0
        for ph in PHASES:
            at = float(marks.get(ph, last))
            out[ph] += at - last
            last = at
        out["publish"] += float(rec.get("seconds", last)) - last
    out["tasks"] = float(len(lines))
    return out


def median_start(runs: list[Start]) -> Start:
    """The run whose ``done`` is the median of ``runs`` (the lower middle one for an even count; a run
    that did not finish counts as the slowest)."""
    ordered = sorted(runs, key=lambda r: float("inf") if r.done is None else r.done)
    return ordered[(len(ordered) - 1) // 2]


class ProbeWatch:
    """A reader of a service's own events, positioned at the end before its probe command is sent."""

    def __init__(self, settings: Settings, topic: str):
        self.settings, self.topic = settings, settings.topic(topic)
        self.consumer = AIOKafkaConsumer(**settings.client_options(), enable_auto_commit=False,
                                         isolation_level="read_committed")

    async def start(self) -> None:
        await self.consumer.start()
        tps = [TopicPartition(self.topic, p) for p in range(self.settings.partitions)]
        self.consumer.assign(tps)
        await self.consumer.seek_to_end(*tps)
        for tp in tps:
            await self.consumer.position(tp)

    async def wait_for(self, command_id: str) -> float:
        while True:
            batch = await self.consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for r in records:
                    try:
                        env = decode_event(r.value)
                    except (UnknownMessageType, Undecodable):
                        continue
                    if env.causation_id == command_id:
                        return clock()

    async def stop(self) -> None:
        await self.consumer.stop()


async def send_probe(settings: Settings, name: str, tag: str) -> str:
    topic, _, payload = PROBES[name]
    table = f"probe-{name}-{tag}"
    cid = f"{table}:cmd:1"
    env = command(table, cid, datetime.now(UTC), payload)
    producer = AIOKafkaProducer(**settings.client_options(), enable_idempotence=True)
    await producer.start()
    try:
        await producer.send_and_wait(settings.topic(topic), encode(env), key=T.key(table))
    finally:
        await producer.stop()
    return cid


async def start_once(settings: Settings, name: str, tag: str, watch: LogWatch, digest: str,
                     timeout: float) -> Start:
    """Start ``name`` once against the history, time it, stop it."""
    out = Start()
    probe_watch: ProbeWatch | None = None
    cid = ""
    if name in PROBES:
        probe_watch = ProbeWatch(settings, PROBES[name][1])
        await probe_watch.start()
    svc = services.create(name, settings)
    try:
        if probe_watch is not None:
            cid = await send_probe(settings, name, tag)
        t0 = clock()
        await svc.start()
        out.ready, out.how = await wait_restored(svc, name, watch, t0, timeout)
        lines = [f for t, f in zip(watch.seen.get(name, []), watch.fields.get(name, []), strict=True)
                 if t >= t0 and f.get("event") == "restored"]
        out.phases = restore_phases(lines)
        if probe_watch is not None:
            left = timeout - (clock() - t0)
            out.done = await asyncio.wait_for(probe_watch.wait_for(cid), max(left, 0.1)) - t0
        else:
            errors: Counter[str] = Counter()
            while True:
                try:
                    have, tables, when = await projection_digest(svc.host)
                except Exception as e:  # noqa: BLE001 - /digest read mid-rebuild; counted, polled again
                    errors[f"{type(e).__name__}: {e}"] += 1
                    have, tables, when = "", -1, clock()
                if errors and have == digest:
                    out.note = f"/digest failed {sum(errors.values())}x while restoring ({errors.most_common(1)[0][0]}); "
                if have == digest:
                    out.done = when - t0
                    out.note += f"{tables} tables"
                    break
                if clock() - t0 > timeout:
                    raise TimeoutError(f"digest {have[:12]} != {digest[:12]} after {timeout:.0f} s")
                await asyncio.sleep(0.25)
    except TimeoutError as e:
        out.note = f"timeout: {e}"
    finally:
        _DIGESTS.pop(id(svc.host), None)
        with contextlib.suppress(Exception):
            await svc.stop()
        if probe_watch is not None:
            await probe_watch.stop()
    return out


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


async def one_size(args: argparse.Namespace, rounds: int, watch: LogWatch) -> float | str:
    """Generate, write and restart every service for one size; the slowest warm ``done`` (or why not)."""
    prefix = f"rebuild{uuid.uuid4().hex[:8]}."
    settings = replace(Settings.from_env(), bootstrap_servers=args.bootstrap, topic_prefix=prefix)
    tables = args.tables or max(4, rounds // 500)
    print(f"\n== {rounds} rounds over {tables} tables, topic prefix {prefix!r}", flush=True)
    try:
        await ensure_topics(settings, T.ALL_TOPICS)  # the services' own topic creation
        await partitions_ready(settings, T.ALL_TOPICS)
        hist = await generate(settings, rounds, tables, args.chunk, args.gen_budget, workers=args.workers)
        await check_topics(settings, hist)
        total = sum(hist.records.values())
        print(f"history: {total} records in {hist.gen_s:.1f} s ({rounds / hist.gen_s:.0f} rounds/s, "
              f"{total / hist.gen_s:.0f} records/s, generated and written); {T.PARTITIONS} partitions per topic "
              f"checked, end offsets = records written; projection digest {hist.digest[:16]}")
        print("  " + ", ".join(f"{t} {n}" for t, n in sorted(hist.records.items())))
        rows: dict[str, dict[str, Start]] = {}
        for name in ORDER:
            await commit_history(settings, name)  # as if it had handled the history; no snapshot yet
            rows[name] = {}
            warm: list[Start] = []
            for phase in ("cold", *["warm"] * max(1, args.warm_runs)):
                s = await start_once(settings, name, f"{phase}{uuid.uuid4().hex[:4]}", watch, hist.digest,
                                     args.timeout)
                if phase == "cold":
                    rows[name][phase] = s
                else:
                    warm.append(s)
                ph = s.phases
                print(f"  {name:<10} {phase}: ready {fmt(s.ready)} s ({s.how or 'not seen'}), done {fmt(s.done)} s"
                      f"{' ' + s.note if s.note else ''}; RSS {rss_mib():.0f} MiB", flush=True)
                if ph.get("tasks"):
                    print(f"  {'':<10} {'':<4}  restore phases over {ph['tasks']:.0f} tasks (s): "
                          + ", ".join(f"{k} {ph[k]:.2f}" for k in (*PHASES, "publish")), flush=True)
            rows[name]["warm"] = median_start(warm)
    finally:
        await cleanup(settings, prefix, keep=args.keep_topics)
    print(f"\nrestart times at {rounds} rounds (s from start(); done = projection digest equal / probe answered; "
          f"warm: the median of {max(1, args.warm_runs)} runs)")
    print(f"  {'service':<11}{'cold ready':>11}{'cold done':>11}{'warm ready':>11}{'warm done':>11}")
    for name, r in rows.items():
        print(f"  {name:<11}{fmt(r['cold'].ready):>11}{fmt(r['cold'].done):>11}{fmt(r['warm'].ready):>11}"
              f"{fmt(r['warm'].done):>11}")
    if any(r["warm"].done is None for r in rows.values()):
        return f"timeout>{args.timeout:.0f}"
    worst = max(rows, key=lambda n: rows[n]["warm"].done or 0.0)
    print(f"  slowest warm restart: {worst}")
    return float(rows[worst]["warm"].done or 0.0)


def label(rounds: int) -> str:
    return f"{rounds // 1000}k" if rounds % 1000 == 0 else str(rounds)


async def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per in-process /digest request
    why = await probe(args.bootstrap)
    if why is not None:
        print(f"rebuild: cannot reach the Kafka broker at {args.bootstrap}: {why}", file=sys.stderr)
        return 2
    sink = open(os.devnull, "w") if args.service_logs == "devnull" else None  # noqa: SIM115, ASYNC230
    watch = watch_service_logs(sink if args.service_logs != "stderr" else sys.stderr,
                               loud=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"broker {args.bootstrap}, {os.cpu_count()} CPUs, sizes {args.rounds}, timeout {args.timeout:.0f} s per start")
    results: dict[str, str] = {}
    for n in args.rounds:
        try:
            r = await one_size(args, n, watch)
        except OverBudget as e:
            print(f"rebuild: {n} rounds not measured: {e}")
            r = "-"
        except Exception as e:  # noqa: BLE001 - report and go on to print the line
            import traceback

            traceback.print_exc()
            print(f"rebuild: {n} rounds FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            r = "failed"
        results[label(n)] = f"{r:.2f}" if isinstance(r, float) else r
    keys = [label(n) for n in (1000, 10000, 100000)]
    extra = [k for k in results if k not in keys]
    print("rebuild: " + " ".join(f"s_at_{k}={results.get(k, '-')}" for k in keys + extra))
    return 0


def main(argv: list[str] | None = None) -> int:
    if not (os.environ.get("CROUPIER_VAULT_KEYS") or os.environ.get("CROUPIER_VAULT_KEY_FILE")):
        import secrets

        from contracts.vault import new_key_entry

        # a key for this run only: the generated shoes and the restarted shoe service share it
        os.environ["CROUPIER_VAULT_KEYS"] = new_key_entry("bench-1", secrets.token_bytes(32))
    ap = argparse.ArgumentParser(description="Restart time of each service against generated history.")
    ap.add_argument("--rounds", default="1000,10000,100000",
                    type=lambda s: [int(x) for x in s.split(",") if x.strip()],
                    help="history sizes in rounds, comma-separated (default %(default)s)")
    ap.add_argument("--tables", type=int, default=0, help="tables (default: max(4, rounds // 500))")
    ap.add_argument("--chunk", type=int, default=50_000, help="records per write to Kafka (memory bound)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one start may take")
    ap.add_argument("--gen-budget", type=float, default=2400.0,
                    help="seconds the generation of one size may take (default %(default)s)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes generating the history, tables split between them (default %(default)s)")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP))
    ap.add_argument("--warm-runs", type=int, default=3, help="warm starts per service; the median is the figure")
    ap.add_argument("--service-logs", choices=("devnull", "stderr", "off"), default="devnull")
    ap.add_argument("--keep-topics", action="store_true", help="do not delete each size's topics")
    args = ap.parse_args(argv)
    if not args.rounds or min(args.rounds) < 1:
        ap.error("--rounds needs positive sizes")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
