"""Restart time of each service against 1k, 10k and 100k rounds of history (issue 8, "Proven by the project").

Run: ``.venv/bin/python bench/rebuild.py [--rounds 1000,10000,100000] [--tables N] [--timeout 300]
[--bootstrap HOST:PORT] [--keep-topics]`` (exit 2 with one line on stderr when the broker cannot be reached).

For each size:

1. **History, generated, not dealt live.** The five services (shoe with a seeded shuffle, dealing, wagering,
   settlement, projection) run on the in-memory bus (``services/runtime/memory.py``) driven by the simulated
   floor (``services/floor``), as ``tests/services/test_floor_memory.py``: ``--tables`` tables (default
   ``max(4, rounds // 500)``: about 500 rounds, six shoes, per table), 3 seated players betting. Every
   record written to the bus (each service's events on all its streams, the floor's commands and the
   dealing service's ``DrawCard`` on the command topics, dead letters) is written raw, in bus order, into
   Kafka topics of a fresh prefix by a plain producer (no idempotence, acks=1, big batches, linger, no
   compression), keyed as the services key (``contracts.topics.key``: the table id). The bus is emptied
   every ``--chunk`` records, between rounds, so memory stays bounded by the services' own state. The
   topics are created first with the services' own ``ensure_topics``; their partition counts are checked
   against ``contracts.topics.PARTITIONS`` and the records per topic against the end offsets.
2. **Restarts.** Each service alone, ``services.create(name, settings)`` and ``start()`` (as ``croupier
   serve``), twice: *cold* (its consumer group committed at the end of the history, as a service that had
   handled it all, but no snapshot yet: a fold from offset zero) then *warm* (the same group again, after a
   clean ``stop()``: the checkpoint the cold start wrote after its long fold, plus the tail). Timed from just before ``start()``:

   * ``ready``: the service says it has restored (``bench/readiness.py``: its readiness flag if it has one,
     else its "rebuilt" log line);
   * projection, ``done``: its state digest (the query API's ``/health``, in process) equals the digest the
     in-memory projection reached (polled after ``ready``);
   * shoe, dealing, wagering, settlement, ``done``: the answer to a probe command sent just before
     ``start()`` behind the history on its command topic (an unknown table's ``CloseShoe`` /
     ``OpenRound`` / ``CloseBetting`` / ``CollectCommission``, each answered by a ``CommandRejected`` on
     the service's events): the service is serving new commands again. The projection is measured first,
     so the probes' rejections are not in its history.

   A start that does not finish within ``--timeout`` s is reported as such (and stopped).

The per-service table is printed for each size; the last line is exactly
``rebuild: s_at_1k=<a> s_at_10k=<b> s_at_100k=<c>``: at each size the slowest service's warm ``done``
seconds (``timeout>T`` when one did not finish; ``-`` for a size not run).
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

import services
from baccarat.table import punto_banco_full
from bench.pipeline import TimedDealer, partitions_ready, probe, quiet_client_logs
from bench.readiness import LogWatch, wait_restored, watch_service_logs
from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event, encode
from contracts.commands import CloseBetting, CloseShoe, CollectCommission, Command, OpenRound
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
def seeded_entropy(seed: int) -> Any:
    """A reproducible shuffle and salt for the in-memory shoe service (the bench's only randomness)."""
    from services.shoe.core import Entropy

    rng = random.Random(seed)

    def shuffle(cards: list[Any]) -> list[Any]:
        rng.shuffle(cards)
        return cards

    return Entropy(shuffle=shuffle, salt=lambda: rng.randbytes(16))


def memory_floor(seed: int) -> tuple[MemoryBus, dict[str, Any]]:
    """The five services on an in-memory bus (as ``tests/services``)."""
    from services.dealing.core import DealingCore
    from services.projection.core import ProjectionCore
    from services.settlement.core import SettlementCore
    from services.shoe.core import ShoeCore
    from services.wagering.core import WageringCore

    bus = MemoryBus()
    from contracts.vault import Vault, VaultKeys

    rng = random.Random(f"vault-{seed}")
    vault = Vault(VaultKeys((("bench", rng.randbytes(32)),)), nonce=lambda: rng.randbytes(12))
    cores = {"shoe": ShoeCore(seeded_entropy(seed), vault), "dealing": DealingCore(), "wagering": WageringCore(),
             "settlement": SettlementCore(), "projection": ProjectionCore()}
    return bus, {name: bus.add(core) for name, core in cores.items()}


async def projection_digest(host: Any) -> tuple[str, int]:
    """(digest, tables) of ``host``'s projection state, as the query API reports it (in process)."""
    from services.projection.digest import state_digest

    tables = dict(host.runner.tables)
    return state_digest(tables), len(tables)


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


class KafkaWriter:
    """A fast plain producer (no idempotence, acks=1, 1 MiB batches, 20 ms linger, no compression)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, acks=1, linger_ms=20,
                                         max_batch_size=1 << 20, compression_type=None,
                                         max_request_size=8 << 20, request_timeout_ms=60_000)

    async def write(self, records: list[Any], counts: Counter[str]) -> None:
        pending = []
        for r in records:
            pending.append(await self.producer.send(self.settings.topic(r.topic), r.value, key=r.key))
            counts[r.topic] += 1
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)


class OverBudget(RuntimeError):
    """Generating the history would take longer than ``--gen-budget`` allows."""


async def generate(settings: Settings, rounds: int, tables: int, chunk: int, budget: float,
                   seed: int = 17) -> History:
    """Deal ``rounds`` rounds over ``tables`` tables in memory, writing every record into Kafka as it goes.
    Raises :class:`OverBudget` (with the rounds reached and the rate) once ``budget`` s have passed."""
    hist = History(rounds=rounds, tables=tables)
    bus, hosts = memory_floor(seed)
    io = MemoryFloorIO(bus)
    writer = KafkaWriter(settings)
    await writer.producer.start()
    t0 = clock()

    async def flush() -> None:
        records, bus.log = bus.log, []
        await writer.write(records, hist.records)
        for lst in bus.topics.values():  # nothing reads them but a bus rebuild, which the bench never does
            lst.clear()
        io._seen.clear()
        io.log.by_table.clear()  # between rounds: a dealer takes its marks at the start of each step

    try:
        per = [rounds // tables + (1 if i < rounds % tables else 0) for i in range(tables)]
        done = 0
        for i, n in enumerate(per):
            d = TimedDealer(io, f"H{i:03d}", punto_banco_full(), SEATS, random.Random(seed * 1000 + i),
                            Clock(datetime(2026, 1, 1, tzinfo=UTC)), timeout=5)
            await d.open_table()
            await d.load_shoe()
            for _ in range(n):
                await d.next_round()
                done += 1
                if len(bus.log) >= chunk:
                    await flush()
                    rate = done / (clock() - t0)
                    print(f"  generated {done}/{rounds} rounds, {sum(hist.records.values())} records "
                          f"({rate:.0f} rounds/s; RSS {rss_mib():.0f} MiB)", flush=True)
                    if clock() - t0 > budget and done < rounds:
                        raise OverBudget(
                            f"generation stopped at {done} of {rounds} rounds after {clock() - t0:.0f} s "
                            f"(--gen-budget {budget:.0f} s): {rate:.0f} rounds/s on {os.cpu_count()} CPUs, "
                            f"{(rounds - done) / rate / 60:.0f} more minutes needed; the in-memory services "
                            f"(the projection's exact odds twice per card, the bus delivering every record to "
                            f"every host) bound it, not Kafka")
            d.close_sent.clear()
            d.close_acked.clear()
        await flush()
        await writer.producer.flush()
    finally:
        await writer.producer.stop()
    hist.gen_s = clock() - t0
    hist.digest, _ = await projection_digest(hosts["projection"])
    return hist


async def check_topics(settings: Settings, hist: History) -> None:
    """Every topic has ``PARTITIONS`` partitions and holds exactly what was written (end offsets)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    try:
        described = await admin.describe_topics([settings.topic(t) for t in T.ALL_TOPICS])
    finally:
        await admin.close()
    wrong = {d["topic"]: len(d["partitions"]) for d in described if len(d["partitions"]) != T.PARTITIONS}
    if wrong:
        raise RuntimeError(f"topics without {T.PARTITIONS} partitions: {wrong}")
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap_servers)
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


class ProbeWatch:
    """A reader of a service's own events, positioned at the end before its probe command is sent."""

    def __init__(self, settings: Settings, topic: str):
        self.settings, self.topic = settings, settings.topic(topic)
        self.consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap_servers, enable_auto_commit=False,
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
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, enable_idempotence=True)
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
        if probe_watch is not None:
            left = timeout - (clock() - t0)
            out.done = await asyncio.wait_for(probe_watch.wait_for(cid), max(left, 0.1)) - t0
        else:
            errors: Counter[str] = Counter()
            while True:
                try:
                    have, tables = await projection_digest(svc.host)
                except Exception as e:  # noqa: BLE001 - /health read mid-rebuild; counted, polled again
                    errors[f"{type(e).__name__}: {e}"] += 1
                    have, tables = "", -1
                if errors and have == digest:
                    out.note = f"/health failed {sum(errors.values())}x while restoring ({errors.most_common(1)[0][0]}); "
                if have == digest:
                    out.done = clock() - t0
                    out.note += f"{tables} tables"
                    break
                if clock() - t0 > timeout:
                    raise TimeoutError(f"digest {have[:12]} != {digest[:12]} after {timeout:.0f} s")
                await asyncio.sleep(0.25)
    except TimeoutError as e:
        out.note = f"timeout: {e}"
    finally:
        with contextlib.suppress(Exception):
            await svc.stop()
        if probe_watch is not None:
            await probe_watch.stop()
    return out


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


async def cleanup(settings: Settings, prefix: str) -> None:
    """Delete the prefix's topics (the history can be gigabytes on a shared broker)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    try:
        await admin.start()
        mine = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if mine:
            await admin.delete_topics(mine)
        print(f"deleted {len(mine)} topics {prefix}*")
    except Exception as e:  # noqa: BLE001
        print(f"warning: cleanup failed: {type(e).__name__}: {e}")
    finally:
        await admin.close()


async def one_size(args: argparse.Namespace, rounds: int, watch: LogWatch) -> float | str:
    """Generate, write and restart every service for one size; the slowest warm ``done`` (or why not)."""
    prefix = f"rebuild{uuid.uuid4().hex[:8]}."
    settings = Settings(bootstrap_servers=args.bootstrap, topic_prefix=prefix)
    tables = args.tables or max(4, rounds // 500)
    print(f"\n== {rounds} rounds over {tables} tables, topic prefix {prefix!r}", flush=True)
    try:
        await ensure_topics(settings, T.ALL_TOPICS)  # the services' own topic creation
        await partitions_ready(settings, T.ALL_TOPICS)
        hist = await generate(settings, rounds, tables, args.chunk, args.gen_budget)
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
            for phase in ("cold", "warm"):
                s = await start_once(settings, name, f"{phase}{uuid.uuid4().hex[:4]}", watch, hist.digest,
                                     args.timeout)
                rows[name][phase] = s
                print(f"  {name:<10} {phase}: ready {fmt(s.ready)} s ({s.how or 'not seen'}), done {fmt(s.done)} s"
                      f"{' ' + s.note if s.note else ''}; RSS {rss_mib():.0f} MiB", flush=True)
    finally:
        if not args.keep_topics:
            await cleanup(settings, prefix)
    print(f"\nrestart times at {rounds} rounds (s from start(); done = projection digest equal / probe answered)")
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
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per in-process /health request
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
    ap = argparse.ArgumentParser(description="Restart time of each service against generated history.")
    ap.add_argument("--rounds", default="1000,10000,100000",
                    type=lambda s: [int(x) for x in s.split(",") if x.strip()],
                    help="history sizes in rounds, comma-separated (default %(default)s)")
    ap.add_argument("--tables", type=int, default=0, help="tables (default: max(4, rounds // 500))")
    ap.add_argument("--chunk", type=int, default=50_000, help="records per write to Kafka (memory bound)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one start may take")
    ap.add_argument("--gen-budget", type=float, default=1200.0,
                    help="seconds the generation of one size may take (default %(default)s)")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP))
    ap.add_argument("--service-logs", choices=("devnull", "stderr", "off"), default="devnull")
    ap.add_argument("--keep-topics", action="store_true", help="do not delete each size's topics")
    args = ap.parse_args(argv)
    if not args.rounds or min(args.rounds) < 1:
        ap.error("--rounds needs positive sizes")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
