"""Benchmark of the whole pipeline on a real Kafka broker: rounds at many tables at once, through the shoe,
dealing, wagering and settlement services, against a raw aiokafka read-process-write loop with the same
transactional hops per round (``bench/rawloop.py``) in the same process on the same broker (issue 8).

Run: ``.venv/bin/python bench/pipeline.py [--tables 20] [--rounds 15] [--pace 2] [--paced-rounds 10]
[--betting 0.5] [--processes] [--bootstrap HOST:PORT] [--cprofile FILE]``
(bootstrap default: ``KAFKA_BOOTSTRAP_SERVERS``, else ``127.0.0.1:19092``; exit status 2 with one line on
stderr when the broker cannot be reached).

* a unique topic prefix (``bench<hex>.``): every topic is created for this run and deleted at the end, with
  the consumer groups of the four services;
* baseline first, on a quiet broker: a plain producer sends to a fresh one-partition topic and a consumer,
  already assigned and positioned at the end, receives it; ``--raw`` times sequentially. Also, as a hint
  for one service hop, the same through a transactional producer and a ``read_committed`` consumer;
* then the four services start in this process (``services.create(name, settings)`` and ``start()``, as
  ``croupier serve``), plus a :class:`KafkaFloorIO` (``--processes``: each service as its own ``croupier
  serve --services NAME`` process instead, as deployed; the floor and the raw loop stay in this one). The bench waits until every service has restored
  (``bench/readiness.py``: its readiness flag if it has one, else its "rebuilt" log line) before the first
  command (``--no-ready-wait``: don't; a service's rebuild then races the messages its subscriber already
  hands it). Each table is driven by a
  :class:`TableDealer`: open the table, load a shoe (``LoadShoe``), one warm-up round (not timed), then
  ``--rounds`` timed rounds (a new shoe when one runs out), all tables concurrently, ``--seats`` seated
  players betting;
* a round's latency: from just before the floor sends "No more bets" (``CloseBetting``) to the moment the
  floor IO's consumer hands it the round's ``RoundSettled`` (stamped as it arrives, before any dealer
  task wakes). Per-hop hints come from the arrival stamps of the round's intermediate events at the floor;
* rounds per second: timed rounds settled / wall time of the timed phase (every table's rounds);
* then a paced phase: ``--paced-rounds`` rounds per table, one round start every ``--pace`` s per table
  (tables spread over the period), "No more bets" called ``--betting`` s after the round's last bet, as a
  dealer calls it once the layout is set (at full speed it follows the bets at once, so it queues behind
  their transactions): "No more bets" → ``RoundSettled`` there is ``close_to_settled`` (from
  the floor's ``CloseBetting`` send, so the wagering hop that makes ``BettingClosed`` is included; the
  ``BettingClosed`` seen → settled figure is printed too);
* then the services are stopped and the raw loop runs the same tables, rounds, pace and betting time, on
  the services' partition count and producer settings, each raw round with
  the bets and card count of one real timed round (so the same hops: 7, 9 or 11 transactions on the round's
  path); ``ratio`` = pipeline rounds/s / raw rounds/s at full speed. The raw loop runs a second time with
  a producer per stage and partition, a batch's partitions committed concurrently (the runtime's writer
  fenced per task), printed on its own line: how much of the gap is that shape and how much the runtime;
  ``ratio`` stays against the first. ``--cprofile FILE``: profile the
  pipeline's timed phase (cProfile, this process) and print the top functions by own time.

Service logs (one JSON line per event) are rendered as usual but written to /dev/null (``--service-logs``);
their warnings and errors go to stderr and are counted. The bench counts the services' transactions (it
wraps aiokafka's AddPartitionsToTxn/EndTxn response handlers, counting only). The last line is exactly
``pipeline: tables=<n> rounds_per_s=<x> p50_ms=<a> p99_ms=<b> raw_rounds_per_s=<y> ratio=<x/y>
close_to_settled_p99_ms=<c>`` (one line; ``p50``/``p99``: the full-speed phase; ``ratio`` a fraction).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

import services
from baccarat.table import punto_banco_full
from bench.hops import HOPS, raw_round_hops, read_topics, service_round_hops
from bench.rawloop import NOT_ENOUGH_REPLICAS, STAGES, RawLoop, run_raw, transactions_on_path
from bench.readiness import LogWatch, wait_restored, watch_service_logs
from bench.serveprocs import free_port, start_serve, stop_all, wait_ready
from contracts import topics as T
from contracts.commands import CloseBetting, CloseShoe, Command, LoadShoe
from contracts.envelope import Envelope
from contracts.events import (
    BettingClosed,
    CardDealt,
    CardDrawn,
    CommandRejected,
    RoundResolved,
    RoundSettled,
    ShoeBurned,
    ShoeClosed,
)
from contracts.tables import ShoeSpec
from contracts.vault import new_key_entry
from croupier.topics import cleanup
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import EventLog, FloorTimeout, KafkaFloorIO
from services.runtime.app import Service
from services.runtime.kafka import ensure_topics
from services.runtime.settings import DEFAULT_BOOTSTRAP, Settings, env_client_options

#: the shoe service needs a vault key: a fresh one for this run (this process and the ones it starts)
os.environ.setdefault("CROUPIER_VAULT_KEYS", new_key_entry("bench"))


client_options = env_client_options  # (the name the benches import)


DECIDERS = ("shoe", "dealing", "wagering", "settlement")
clock = time.perf_counter


# -- instrumentation (bench only: stamps and counters, no behaviour changed) ---------------------------
class TimedEventLog(EventLog):
    """The floor's event log, stamping each event's arrival (``perf_counter``) by event id."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: dict[str, float] = {}

    async def add(self, env: Envelope) -> None:
        self.arrived[env.event_id] = clock()
        await super().add(env)


class TimedDealer(TableDealer):
    """A :class:`TableDealer` that stamps "No more bets" and can load a shoe on its own."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        #: seconds from the last bet to "No more bets" (the paced phase's betting time; 0 at full speed)
        self.betting_s = 0.0
        self.close_sent: dict[str, float] = {}
        self.close_acked: dict[str, float] = {}
        self.shoe_no = 0
        self.shoe_id = ""
        self.round_no = 0

    async def _send(self, topic: str, payload: Command, correlation: str = "", actor: str = "") -> str:
        if isinstance(payload, CloseBetting):
            if self.betting_s:
                await asyncio.sleep(self.betting_s)
            self.close_sent[payload.round_id] = clock()
            cid = await super()._send(topic, payload, correlation, actor)
            self.close_acked[payload.round_id] = clock()
            return cid
        return await super()._send(topic, payload, correlation, actor)

    async def load_shoe(self) -> None:
        """As the start of :meth:`TableDealer.play_shoe`: load a CSPRNG shoe, wait until it is burned."""
        self.shoe_no += 1
        self.round_no = 0
        self.shoe_id = shoe_id = f"{self.table_id}-shoe-{self.shoe_no}"
        rules = self.config.shoe
        spec = ShoeSpec(decks=rules.decks, end_card_offset=rules.end_card_offset, burn=rules.burn.value,
                        end_of_shoe=rules.end_of_shoe.value, min_cut_depth=rules.min_cut_depth)
        cut = self.rng.randint(rules.min_cut_depth, rules.size - rules.min_cut_depth)
        since = self.io.log.mark(self.table_id)
        cid = await self._send(T.SHOE_COMMANDS, LoadShoe(shoe_id=shoe_id, rules=spec, cut_at=cut))
        env = await self.io.wait(self.table_id, lambda e: (isinstance(e.payload, ShoeBurned) and
                                                           e.payload.shoe_id == shoe_id) or self._rejected(cid)(e),
                                 since, self.timeout)
        if isinstance(env.payload, CommandRejected):
            raise RuntimeError(f"{self.table_id}: shoe refused: {env.payload.detail}")  # noqa: TRY004
        self.run_state.shoes += 1

    async def close_shoe(self) -> None:
        shoe_id = self.shoe_id
        since = self.io.log.mark(self.table_id)
        await self._send(T.SHOE_COMMANDS, CloseShoe(shoe_id=shoe_id))
        await self.io.wait(self.table_id, lambda e: isinstance(e.payload, ShoeClosed) and e.payload.shoe_id == shoe_id,
                           since, self.timeout)

    async def next_round(self) -> str:
        """Play the next round of the current shoe (a new shoe when it is finished); its round id."""
        while True:
            self.round_no += 1
            round_id = f"{self.shoe_id}-round-{self.round_no}"
            if await self.play_round(self.shoe_id, round_id):
                return round_id
            await self.close_shoe()
            await self.load_shoe()


class TxnCounters:
    """Counts aiokafka transactional requests (AddPartitionsToTxn, EndTxn) and their retries.

    aiokafka retries an AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS (the previous transaction's
    markers not yet written) after 20 ms, or after ``retry_backoff_ms`` (100 ms) when the transaction
    already holds partitions."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._undo: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        from aiokafka.producer import sender as S

        from services.runtime.transaction_v2 import EndTxnV2Handler

        for cls, name in ((S.AddPartitionsToTxnHandler, "add_partitions"), (S.EndTxnHandler, "end_txn"),
                          (EndTxnV2Handler, "end_txn")):  # version 2 transactions' EndTxn (their own handler)
            orig = cls.handle_response

            def wrapped(handler: Any, resp: Any, _orig: Any = orig, _name: str = name,
                        counts: Counter[str] = self.counts) -> Any:
                backoff = _orig(handler, resp)
                counts[_name] += 1
                if backoff is not None:
                    counts[f"{_name}_retried_{int(backoff * 1000)}ms"] += 1
                return backoff

            self._undo.append((cls, "handle_response", orig))
            cls.handle_response = wrapped  # type: ignore[method-assign]

    def uninstall(self) -> None:
        for cls, name, orig in self._undo:
            setattr(cls, name, orig)
        self._undo.clear()


def cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of the whole machine from /proc/stat (Linux), else None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def machine_busy(before: tuple[int, int] | None, after: tuple[int, int] | None) -> str:
    if before is None or after is None or after[1] == before[1]:
        return "machine CPU: n/a"
    frac = (after[0] - before[0]) / (after[1] - before[1])
    return f"machine CPU {100 * frac:.0f}% busy of {os.cpu_count()} cores (broker and anything else included)"


async def loop_lag(samples: list[float], stop: asyncio.Event, period: float = 0.01) -> None:
    """How late a 10 ms sleep wakes up: a busy event loop delays every hop."""
    while not stop.is_set():
        t = clock()
        await asyncio.sleep(period)
        samples.append(clock() - t - period)


# -- helpers ------------------------------------------------------------------------------------------
async def all_or_cancel(coros: list[Any]) -> list[Any]:
    """Run the coroutines concurrently; on the first failure cancel the others, then raise it."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for t in tasks:
        if t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    return [t.result() for t in tasks]


def pct(xs: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of xs."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))
    return s[k]


def ms(x: float) -> str:
    return f"{x * 1000:.1f}"


def summary(xs: list[float]) -> str:
    if not xs:
        return "n=0"
    return (f"n={len(xs)} p50={ms(pct(xs, 50))} p90={ms(pct(xs, 90))} p99={ms(pct(xs, 99))} "
            f"max={ms(max(xs))} mean={ms(statistics.fmean(xs))} ms")


def quiet_client_logs() -> None:
    """aiokafka reports connection failures through logging; the bench says it once, itself."""
    for name in ("aiokafka", "faststream"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


SERVICE_LOGS: LogWatch = LogWatch()


def route_service_logs(where: str) -> LogWatch:
    """Service hosts log one JSON line per event: rendered as usual into /dev/null (default), to stderr,
    or not at all (``off``); warnings and errors always go to stderr and are counted; "rebuilt" lines
    are seen by the returned :class:`LogWatch` (readiness)."""
    global SERVICE_LOGS
    sink = {"devnull": open(os.devnull, "w"), "stderr": sys.stderr, "off": None}[where]  # noqa: SIM115
    SERVICE_LOGS = watch_service_logs(sink, loud=lambda m: print(m, file=sys.stderr, flush=True))
    return SERVICE_LOGS


async def probe(bootstrap: str, timeout: float = 10.0) -> str | None:
    """None if the broker answers metadata requests, else why not."""
    admin = AIOKafkaAdminClient(**client_options(bootstrap), request_timeout_ms=int(timeout * 1000))
    try:
        await asyncio.wait_for(admin.start(), timeout)
        await asyncio.wait_for(admin.list_topics(), timeout)
        return None
    except TimeoutError:
        return f"no answer within {timeout:.0f} s"
    except Exception as e:  # noqa: BLE001 - any failure means "not reachable"
        text = str(e).strip()
        return text if text.startswith(type(e).__name__) else f"{type(e).__name__}: {text}".rstrip(": ")
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


# -- baseline: raw produce -> consume round trip --------------------------------------------------------
async def raw_roundtrip(bootstrap: str, topic: str, n: int, *, transactional_id: str | None = None) -> list[float]:
    """``n`` sequential round trips: send one message, wait until the consumer (assigned, positioned at the
    end, long-polling) returns it. With ``transactional_id``: each message in its own transaction and a
    ``read_committed`` consumer (one service hop's Kafka cost)."""
    admin = AIOKafkaAdminClient(**client_options(bootstrap))
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        for _ in range(100):
            d = await admin.describe_topics([topic])
            if d and d[0]["error_code"] == 0 and d[0]["partitions"] and d[0]["partitions"][0]["leader"] >= 0:
                break
            await asyncio.sleep(0.05)
    finally:
        await admin.close()
    if transactional_id:
        producer = AIOKafkaProducer(**client_options(bootstrap), transactional_id=transactional_id,
                                    enable_idempotence=True, linger_ms=0)
    else:
        producer = AIOKafkaProducer(**client_options(bootstrap), linger_ms=0)
    consumer = AIOKafkaConsumer(**client_options(bootstrap), enable_auto_commit=False,
                                isolation_level="read_committed" if transactional_id else "read_uncommitted")
    await producer.start()
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_end(tp)
        await consumer.position(tp)
        out: list[float] = []
        for i in range(n + 5):  # 5 warm-up trips
            payload = f"{i}".encode()
            t0 = clock()
            if transactional_id:
                async with producer.transaction():
                    await producer.send(topic, payload)
            else:
                await producer.send_and_wait(topic, payload)
            while True:
                rec = await consumer.getone()
                if rec.value == payload:
                    break
            if i >= 5:
                out.append(clock() - t0)
        return out
    finally:
        await consumer.stop()
        await producer.stop()


# -- the pipeline -------------------------------------------------------------------------------------
@dataclass
class Bench:
    """The four services in this process (``services.create``, as ``croupier serve``) and the floor IO.

    ``processes``: instead, each service as its own ``croupier serve --services NAME`` process (the shape
    they are deployed in), started once each answers ``/health/ready``; their logs go to ``logdir``."""

    settings: Settings
    wait_ready: bool = True
    processes: bool = False
    logdir: Path | None = None
    services: dict[str, Service] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    io: KafkaFloorIO | None = None
    restored_s: dict[str, tuple[float, str]] = field(default_factory=dict)

    async def start(self) -> None:
        await ensure_topics(self.settings, T.ALL_TOPICS)
        await partitions_ready(self.settings, T.ALL_TOPICS)
        if self.processes:
            await self._start_processes()
        else:
            await self._start_here()
        self.io = KafkaFloorIO(self.settings)
        self.io.log = TimedEventLog()
        await self.io.start()

    async def _start_processes(self) -> None:
        logdir = self.logdir or Path(tempfile.mkdtemp(prefix="pipeline-"))
        self.logdir = logdir
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": self.settings.bootstrap_servers,
               "CROUPIER_PARTITIONS": str(self.settings.partitions)}
        urls: dict[str, str] = {}
        t0 = clock()
        for name in DECIDERS:
            port = free_port()
            self.procs.append(start_serve(["--services", name, "--prefix", self.settings.topic_prefix,
                                           "--metrics-port", str(port)], env, logdir / f"{name}.log"))
            urls[name] = f"http://127.0.0.1:{port}/health/ready"
        for name, url in urls.items():
            await wait_ready(url, self.procs, 120)
            self.restored_s[name] = (clock() - t0, "/health/ready")

    async def _start_here(self) -> None:
        started: dict[str, float] = {}
        for name in DECIDERS:
            svc = services.create(name, self.settings)
            self.services[name] = svc  # stopped in stop() even if its start fails half-way
            started[name] = clock()
            await svc.start()
        if self.wait_ready:
            # a service rebuilds from the log on its first partition assignment, while its subscriber may
            # already hand it messages: the timed run starts once every service has restored
            try:
                for name, svc in self.services.items():
                    self.restored_s[name] = await wait_restored(svc, name, SERVICE_LOGS, started[name], 60)
            except TimeoutError as e:
                raise RuntimeError(f"services not restored after 60 s: {e}") from None

    async def stop(self) -> None:
        if self.io is not None:
            await self.io.stop()
            self.io = None
        for name in list(self.services):
            await self.services.pop(name).stop()
        if self.procs:
            await asyncio.to_thread(stop_all, self.procs)
            self.procs.clear()


async def partitions_ready(settings: Settings, names: tuple[str, ...], timeout: float = 30.0) -> None:
    """Wait until every partition answers ListOffsets: right after creation the metadata may already name a
    leader that does not serve the partition yet (NotLeaderForPartition, retried by aiokafka with warnings)."""
    consumer = AIOKafkaConsumer(**settings.client_options())
    await consumer.start()
    client_log = logging.getLogger("aiokafka")
    level = client_log.level
    client_log.setLevel(logging.ERROR)
    try:
        tps = [TopicPartition(settings.topic(n), p) for n in names for p in range(settings.partitions)]
        await asyncio.wait_for(consumer.end_offsets(tps), timeout)
    finally:
        client_log.setLevel(level)
        await consumer.stop()


@dataclass
class RoundSample:
    table_id: str
    round_id: str
    latency: float
    send_ack: float
    hops: dict[str, float]
    cards: int
    bets: int


def round_samples(io: KafkaFloorIO, dealers: list[TimedDealer], timed: dict[str, set[str]]) -> list[RoundSample]:
    log = io.log
    assert isinstance(log, TimedEventLog)
    out: list[RoundSample] = []
    for d in dealers:
        by_round: dict[str, list[Envelope]] = defaultdict(list)
        for env in log.by_table[d.table_id]:
            if env.round_id in timed[d.table_id]:
                by_round[env.round_id].append(env)
        for rid in timed[d.table_id]:
            evs = by_round[rid]
            at = {e.event_id: log.arrived[e.event_id] for e in evs}

            def first(kind: type, evs: list[Envelope] = evs, at: dict[str, float] = at) -> float | None:
                ts = [at[e.event_id] for e in evs if isinstance(e.payload, kind)]
                return min(ts) if ts else None

            t0 = d.close_sent[rid]
            settled = first(RoundSettled)
            closed, drawn, resolved = first(BettingClosed), first(CardDrawn), first(RoundResolved)
            dealt = [at[e.event_id] for e in evs if isinstance(e.payload, CardDealt)]
            assert settled is not None and closed and drawn and resolved
            s = next(e.payload for e in evs if isinstance(e.payload, RoundSettled))
            out.append(RoundSample(
                d.table_id, rid, settled - t0, d.close_acked[rid] - t0,
                {"close->BettingClosed (floor send + wagering)": closed - t0,
                 "BettingClosed->1st CardDrawn (dealing + shoe)": drawn - closed,
                 "1st CardDrawn->RoundResolved (dealing<->shoe, 4-6 cards)": resolved - drawn,
                 "RoundResolved->RoundSettled (settlement)": settled - resolved},
                len(dealt), s.bets))  # type: ignore[union-attr]
    return out


def service_health(bench: Bench) -> str:
    if bench.processes:
        return f"services: in their own processes (dead letters and warnings in their logs, {bench.logdir})"
    parts = [f"{name} dead letters {svc.host.dead_letters}, skipped {svc.host.skipped}"
             for name, svc in bench.services.items()]
    return (f"services: {'; '.join(parts)}; service log warnings/errors: {SERVICE_LOGS.problems}\n"
            f"  fetches (since start): {fetch_summary(bench)}\n"
            f"  group commits (since start): {group_commit_summary(bench)}")


def group_commit_summary(bench: Bench) -> str:
    """Each service instance's grouped transactions (``exactly_once_v2``): how many, the tasks' parts each
    carried, and the parts handed over while the next one waited for them
    (:mod:`services.runtime.group_commit`)."""
    parts = []
    for name, svc in bench.services.items():
        commits = svc.tasks.collector.group_commits if svc.tasks is not None else []
        n = sum(g.transactions for g in commits)
        if not n:
            parts.append(f"{name} none")
            continue
        carried = sum(g.parts for g in commits)
        handed, turns = sum(g.handed_over for g in commits), sum(g.handover_turns for g in commits)
        parts.append(f"{name} {n} transactions, {carried / n:.2f} parts each, {handed} handed over in {turns} turns")
    return "; ".join(parts)


def fetch_summary(bench: Bench) -> str:
    """Each service consumer's fetch sessions (KIP-227): full and incremental requests, partitions per request,
    resets; ``off`` for a consumer fetching as aiokafka does (``CROUPIER_FETCH_SESSIONS=0``)."""
    parts = []
    for name, svc in bench.services.items():
        consumer = svc.tasks.consumer if svc.tasks is not None else None
        sessions = getattr(getattr(consumer, "_fetcher", None), "sessions", None)
        if sessions is None:
            parts.append(f"{name} off")
            continue
        full = sum(s.full_requests for s in sessions.values())
        inc = sum(s.incremental_requests for s in sessions.values())
        sent = sum(s.partitions_sent for s in sessions.values())
        resets = sum(s.resets for s in sessions.values())
        parts.append(f"{name} {full} full + {inc} incremental, {sent / max(full + inc, 1):.1f} partitions each, "
                     f"{resets} resets")
    return "; ".join(parts)


async def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    why = await probe(args.bootstrap)
    if why is not None:
        print(f"pipeline: cannot reach the Kafka broker at {args.bootstrap}: {why}", file=sys.stderr)
        return 2
    route_service_logs(args.service_logs)  # the services' configure() sets the client loggers back to WARNING

    prefix = f"bench{uuid.uuid4().hex[:8]}."
    settings = replace(Settings.from_env(), bootstrap_servers=args.bootstrap, topic_prefix=prefix)
    print(f"broker {args.bootstrap}, topic prefix {prefix!r}, {os.cpu_count()} CPUs, "
          f"tables={args.tables} rounds/table={args.rounds} seats={args.seats} pace={args.pace}s "
          f"paced rounds/table={args.paced_rounds}")

    bench = Bench(settings, wait_ready=not args.no_ready_wait, processes=args.processes)
    raw_loop: RawLoop | None = None
    counters = TxnCounters()
    try:
        # 1. baseline on a quiet broker
        raw = await raw_roundtrip(args.bootstrap, f"{prefix}raw-rtt", args.raw)
        print(f"raw produce->consume round trip (acks=1, read_uncommitted): {summary(raw)}")
        txn = await raw_roundtrip(args.bootstrap, f"{prefix}txn-rtt", args.raw,
                                  transactional_id=f"croupier.{prefix}bench-txn")
        print(f"one transactional hop (txn produce+commit -> read_committed consume): {summary(txn)}")

        # 2. the services and the floor
        t = clock()
        await bench.start()
        io = bench.io
        assert io is not None
        print(f"services and floor started in {ms(clock() - t)} ms"
              f"{' (every service restored: ' if bench.wait_ready else ''}"
              + ", ".join(f"{n} {v:.2f} s by {how}" for n, (v, how) in bench.restored_s.items())
              + (")" if bench.wait_ready else ""))
        seats = [Seat(i, f"player-{i}") for i in range(1, args.seats + 1)]
        dealers = [TimedDealer(io, f"B{i:02d}", punto_banco_full(), seats, random.Random(i), Clock(),
                               timeout=args.timeout) for i in range(1, args.tables + 1)]

        async def setup(d: TimedDealer) -> None:
            await d.open_table()
            await d.load_shoe()
            for _ in range(args.warmup):
                await d.next_round()

        t = clock()
        await all_or_cancel([setup(d) for d in dealers])
        print(f"setup: {args.tables} tables opened, shoes loaded, {args.warmup} warm-up round(s) each, "
              f"in {clock() - t:.1f} s")

        # 3. the timed phase
        timed: dict[str, set[str]] = {d.table_id: set() for d in dealers}

        async def deal(d: TimedDealer) -> None:
            for _ in range(args.rounds):
                timed[d.table_id].add(await d.next_round())

        profiler = None
        if args.cprofile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        counters.install()
        trace = None
        if args.trace:  # the timed phase traced too: where a hop's time goes at full speed
            from bench.hoptrace import HopTrace

            trace = HopTrace()
            trace.install()
            trace.active = True
        lag: list[float] = []
        stop_lag = asyncio.Event()
        lag_task = asyncio.create_task(loop_lag(lag, stop_lag))
        ticks0, cpu0, t0 = cpu_ticks(), time.process_time(), clock()
        try:
            await all_or_cancel([deal(d) for d in dealers])
        finally:
            wall, cpu, ticks1 = clock() - t0, time.process_time() - cpu0, cpu_ticks()
            if profiler is not None:
                profiler.disable()
            stop_lag.set()
            await lag_task
            counters.uninstall()
            if trace is not None:
                trace.active = False
                trace.uninstall()

        samples = round_samples(io, dealers, timed)
        lat = [s.latency for s in samples]
        n = len(samples)
        rounds_per_s = n / wall
        print(f"timed phase: {n} rounds settled in {wall:.2f} s wall, process CPU {cpu:.2f} s "
              f"({100 * cpu / wall:.0f}% of one core); {machine_busy(ticks0, ticks1)}")
        print(f"event-loop lag (10 ms sleep overshoot): {summary(lag)}")
        print(f"round latency, CloseBetting sent -> RoundSettled seen: {summary(lat)}")
        by_cards = defaultdict(list)
        for s in samples:
            by_cards[s.cards].append(s.latency)
        print("  by cards dealt: " + "; ".join(f"{c} cards n={len(v)} p50={ms(pct(v, 50))} ms"
                                               for c, v in sorted(by_cards.items())))
        print(f"  floor's CloseBetting send (idempotent producer ack): {summary([s.send_ack for s in samples])}")
        for hop in samples[0].hops:
            print(f"  {hop}: {summary([s.hops[hop] for s in samples])}")
        c = counters.counts
        tx = c["end_txn"]
        retried = {k: v for k, v in sorted(c.items()) if "retried" in k}
        if bench.processes:
            print("transactions: not counted (the services run in their own processes)")
        else:
            print(f"transactions (EndTxn, all services, timed phase): {tx} = {tx / max(n, 1):.1f} per round, "
                  f"{tx / wall:.0f}/s; AddPartitionsToTxn {c['add_partitions']}, retried {retried or 'never'}")
        print(service_health(bench))
        ru = resource.getrusage(resource.RUSAGE_SELF)
        print(f"max RSS {ru.ru_maxrss / 1024:.0f} MiB; bets per round (mean) "
              f"{statistics.fmean(s.bets for s in samples):.1f}")
        if profiler is not None:
            print_profile(profiler, args.cprofile)
        if trace is not None:
            print("where a timed hop's time goes (--trace; bench/hoptrace.py):")
            for line in trace.report(pct, ms, wall):
                print(line)
        path_tx = [transactions_on_path(s.cards) for s in samples]
        print(f"transactions on a round's path (open 2 + close 5/7/9 by cards): mean {statistics.fmean(path_tx):.2f}")

        # 4. the paced phase: "No more bets" -> settled at a live-like pace
        paced_ids: dict[str, set[str]] = {d.table_id: set() for d in dealers}

        async def paced(d: TimedDealer, i: int) -> None:
            await asyncio.sleep(args.pace * i / len(dealers))  # tables spread over one period
            for _ in range(args.paced_rounds):
                start = clock()
                paced_ids[d.table_id].add(await d.next_round())
                await asyncio.sleep(max(0.0, args.pace - (clock() - start)))

        for d in dealers:
            d.betting_s = args.betting
        paced_counters = TxnCounters()
        paced_counters.install()
        trace = None
        if args.trace:
            from bench.hoptrace import HopTrace

            trace = HopTrace()
            trace.install()
            trace.active = True
        t = clock()
        try:
            await all_or_cancel([paced(d, i) for i, d in enumerate(dealers)])
        finally:
            paced_wall = clock() - t
            paced_counters.uninstall()
            if trace is not None:
                trace.active = False
                trace.uninstall()
        psamples = round_samples(io, dealers, paced_ids)
        close_lat = [s.latency for s in psamples]
        first_hop = next(iter(psamples[0].hops))
        closed_lat = [s.latency - s.hops[first_hop] for s in psamples]
        print(f"paced phase ({args.pace} s per round per table, {len(psamples)} rounds in {paced_wall:.1f} s = "
              f"{len(psamples) / paced_wall:.1f} rounds/s):")
        print(f"  close_to_settled, CloseBetting sent -> RoundSettled seen: {summary(close_lat)}")
        print(f"  BettingClosed seen -> RoundSettled seen: {summary(closed_lat)}")
        for hop in psamples[0].hops:
            print(f"  {hop}: {summary([s.hops[hop] for s in psamples])}")
        if trace is not None:
            print("where a paced hop's time goes (--trace; bench/hoptrace.py):")
            for line in trace.report(pct, ms, paced_wall):
                print(line)
        print(service_health(bench))
        paced_rounds = {r for ids in paced_ids.values() for r in ids}
        log_hops = {"services": service_round_hops(await read_topics(
            bench.settings.client_options(), [bench.settings.topic(n) for n in SERVICE_HOP_TOPICS],
            bench.settings.partitions), paced_rounds)}
        tx_per_round = {"services": paced_counters.counts["end_txn"] / max(len(psamples), 1)}
        await bench.stop()

        # 5. the raw read-process-write loop: same tables, rounds, bets, cards and pace; services stopped
        shapes = [(s.bets, s.cards) for s in samples]
        raw_loop = RawLoop(args.bootstrap, prefix, partitions=bench.settings.partitions)
        await raw_loop.start()
        await run_raw(raw_loop, args.tables, args.warmup, shapes, tag="w")
        tx0, ner0 = raw_loop.transactions, NOT_ENOUGH_REPLICAS.n
        raw_lat, raw_wall = await run_raw(raw_loop, args.tables, args.rounds, shapes, tag="t")
        raw_tx = raw_loop.transactions - tx0
        raw_rps = len(raw_lat) / raw_wall
        print(f"raw loop (4 stages, read_committed + transactional producer, offsets in the transaction): "
              f"{len(raw_lat)} rounds in {raw_wall:.2f} s = {raw_rps:.1f} rounds/s; {raw_tx} transactions = "
              f"{raw_tx / len(raw_lat):.1f} per round; spurious NotEnoughReplicas produce retries (aiokafka#1172): "
              f"{NOT_ENOUGH_REPLICAS.n - ner0}")
        print(f"  raw close -> settled, full speed: {summary(raw_lat)}")
        tx0 = raw_loop.transactions
        raw_paced, _ = await run_raw(raw_loop, args.tables, args.paced_rounds, shapes, pace=args.pace,
                                     betting_s=args.betting, tag="p")
        tx_per_round["raw"] = (raw_loop.transactions - tx0) / max(len(raw_paced), 1)
        print(f"  raw close -> settled, paced ({args.pace} s): {summary(raw_paced)}; NotEnoughReplicas retries "
              f"so far (services and raw): {NOT_ENOUGH_REPLICAS.n}")
        await raw_loop.stop()
        raw_loop = None
        # the same loop with the runtime's fencing shape: a producer per stage and partition, a batch's
        # partitions committed concurrently (what a writer fenced per task costs, apart from the game work)
        raw_loop = RawLoop(args.bootstrap, prefix, partitions=bench.settings.partitions, per_partition=True)
        await raw_loop.start()
        await run_raw(raw_loop, args.tables, args.warmup, shapes, tag="W")
        tx0 = raw_loop.transactions
        pp_lat, pp_wall = await run_raw(raw_loop, args.tables, args.rounds, shapes, tag="T")
        pp_tx = raw_loop.transactions - tx0
        pp_rps = len(pp_lat) / pp_wall
        tx0 = raw_loop.transactions
        pp_paced, _ = await run_raw(raw_loop, args.tables, args.paced_rounds, shapes, pace=args.pace,
                                    betting_s=args.betting, tag="P")
        tx_per_round["raw, a producer per partition"] = (raw_loop.transactions - tx0) / max(len(pp_paced), 1)
        raw_records = await read_topics(client_options(args.bootstrap), [raw_loop.topic(n) for n in (*STAGES, "floor")],
                                        bench.settings.partitions)
        for name, tag in (("raw", "p"), ("raw, a producer per partition", "P")):
            log_hops[name] = raw_round_hops(raw_records, {f"R{t:03d}-{tag}{k}" for t in range(args.tables)
                                                          for k in range(args.paced_rounds)})
        print_hops(log_hops, tx_per_round, args.pace)
        print(f"raw loop, a producer per partition (the runtime's fencing shape): {pp_rps:.1f} rounds/s; "
              f"{pp_tx / len(pp_lat):.1f} transactions per round; close -> settled full speed p99 "
              f"{pct(pp_lat, 99) * 1000:.1f} ms, paced {summary(pp_paced)}; pipeline / this loop: "
              f"{100 * rounds_per_s / pp_rps:.0f}%")
        ratio = rounds_per_s / raw_rps
        print(f"pipeline / raw: {100 * ratio:.0f}% of the raw loop's rate (target >= 50%); close_to_settled p99 "
              f"{pct(close_lat, 99) * 1000:.1f} ms at {args.tables} tables (target <= 100 ms)")
        result = (f"pipeline: tables={args.tables} rounds_per_s={rounds_per_s:.1f} p50_ms={pct(lat, 50) * 1000:.1f} "
                  f"p99_ms={pct(lat, 99) * 1000:.1f} raw_rounds_per_s={raw_rps:.1f} ratio={ratio:.2f} "
                  f"close_to_settled_p99_ms={pct(close_lat, 99) * 1000:.1f}")
    except FloorTimeout as e:
        print(f"pipeline: FAILED: {e}", file=sys.stderr)
        if bench.io is not None:
            table = str(e).split(":")[0]
            last = bench.io.log.by_table.get(table, [])[-6:]
            print(f"  last events of {table}: " + ", ".join(
                f"{type(x.payload).__name__}({x.round_id or x.shoe_id})" for x in last), file=sys.stderr)
        print("  " + service_health(bench), file=sys.stderr)
        result = None
    finally:
        counters.uninstall()
        await bench.stop()
        if raw_loop is not None:
            await raw_loop.stop()
        await cleanup(settings, prefix, keep=args.keep_topics)  # the raw loop's topics and groups too
    stray = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    if stray:
        print(f"warning: {len(stray)} task(s) still pending at exit: {[t.get_coro() for t in stray][:5]}")
    if result is None:
        return 1
    print(result)
    return 0


#: the topics of a round's close path, read back for its hops (:mod:`bench.hops`)
SERVICE_HOP_TOPICS = (T.WAGERING_COMMANDS, T.WAGERING_EVENTS, T.SHOE_EVENTS, T.DEALING_EVENTS, T.SETTLEMENT_EVENTS)


def print_hops(log_hops: dict[str, dict[str, dict[str, float]]], tx_per_round: dict[str, float], pace: float) -> None:
    """The paced rounds' hops (:mod:`bench.hops`: record timestamps read back from the topics), p50 / p99 ms
    per loop, and each loop's transactions per paced round (all its transactions, bets and opens included)."""
    print(f"per hop, paced rounds ({pace} s), from the records' timestamps (append time on command topics, "
          "create time on the others), p50 / p99 ms:")
    names = list(log_hops)
    print("  " + f"{'hop':32}" + "".join(f"{n:>34}" for n in names))
    for hop in HOPS:
        cells = []
        for n in names:
            xs = [h[hop] for h in log_hops[n].values()]
            cells.append(f"{ms(pct(xs, 50))} / {ms(pct(xs, 99))} (n={len(xs)})" if xs else "n=0")
        print("  " + f"{hop:32}" + "".join(f"{c:>34}" for c in cells))
    print("  transactions per paced round: " + "; ".join(f"{n} {v:.1f}" for n, v in tx_per_round.items()))


def print_profile(profiler: Any, path: str, top: int = 25) -> None:
    """Save the profile to ``path`` and print the ``top`` functions by own time (tottime)."""
    import io as _io
    import pstats

    profiler.dump_stats(path)
    out = _io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print(f"cProfile of the timed phase (saved to {path}), top {top} by own time:")
    for line in lines[start:start + top + 1]:
        print("  " + line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Rounds at many tables through the four services on a real Kafka "
                                             "broker, against a raw aiokafka produce->consume round trip.")
    ap.add_argument("--tables", type=int, default=20, help="tables dealing concurrently")
    ap.add_argument("--rounds", type=int, default=15, help="timed rounds per table")
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds per table before the timed phase")
    ap.add_argument("--seats", type=int, default=3, help="seated players betting at each table")
    ap.add_argument("--raw", type=int, default=200, help="raw round trips for the baseline")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
                    help="HOST:PORT (default: KAFKA_BOOTSTRAP_SERVERS, else %(default)s)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a dealer waits for any event")
    ap.add_argument("--service-logs", choices=("devnull", "stderr", "off"), default="devnull")
    ap.add_argument("--pace", type=float, default=2.0,
                    help="paced phase: seconds between one table's round starts (default %(default)s)")
    ap.add_argument("--paced-rounds", type=int, default=10, help="rounds per table in the paced phase")
    ap.add_argument("--betting", type=float, default=0.5,
                    help="paced phase: seconds from a round's last bet to its \"No more bets\" (default %(default)s)")
    ap.add_argument("--cprofile", metavar="FILE", default="",
                    help="profile the timed phase with cProfile into FILE and print the top functions")
    ap.add_argument("--trace", action="store_true",
                    help="paced phase: time the runtime's steps of each batch per service (bench/hoptrace.py)")
    ap.add_argument("--no-ready-wait", action="store_true",
                    help="send the first commands as soon as the services are started (as tests/system does), "
                         "without waiting for every service's first assignment and rebuild")
    ap.add_argument("--keep-topics", action="store_true", help="do not delete this run's topics")
    ap.add_argument("--processes", action="store_true",
                    help="each service as its own `croupier serve` process (as deployed), not in this one; "
                         "its transactions are then not counted, nor profiled")
    args = ap.parse_args(argv)
    if args.tables < 1 or args.rounds < 1:
        ap.error("--tables and --rounds must be at least 1")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
