"""Benchmark: the projection service's delay from a card to its odds, and its rebuild speed.

1. Deals ``--tables`` tables (default 50) for ``--rounds`` rounds each through the four services on the
   in-memory bus, to get realistic event streams (shoe, dealing, wagering, settlement).
2. Starts the projection service (its own process, ``croupier serve --services projection``) on the real
   broker under a fresh topic prefix and, once it is ready (its ready file), replays those streams into
   Kafka, all tables concurrently (opening at staggered moments), each at a dealing pace:
   ``--card-interval-ms`` (default 500) before each card, a card every half second at every table, several
   times a live floor's pace.
3. For every card, the delay from the ``CardDrawn`` record being written (its Kafka timestamp) to the
   public ``OddsUpdated`` for it being written; p50 and p99.
4. Rebuilds a fresh projection replica from offset zero and reports seconds per 100,000 events read.
5. Deletes the run's topics (unless ``--keep-topics``).

Last line: ``projection: tables=<n> odds_p50_ms=<a> odds_p99_ms=<b> rebuild_s_per_100k=<c>``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402

from baccarat.table import no_vig_dragon, punto_banco_full  # noqa: E402
from contracts import topics as T  # noqa: E402
from contracts.codecs import decode_event  # noqa: E402
from contracts.commands import LoadShoe  # noqa: E402
from contracts.events import CardDrawn, OddsUpdated  # noqa: E402
from croupier.topics import cleanup  # noqa: E402
from services.dealing.core import DealingCore  # noqa: E402
from services.floor.bettors import Seat  # noqa: E402
from services.floor.dealer import Clock, TableDealer  # noqa: E402
from services.floor.io import MemoryFloorIO  # noqa: E402
from services.projection.core import ProjectionCore  # noqa: E402
from services.runtime.core import command  # noqa: E402
from services.runtime.host import NullPublisher, ServiceHost  # noqa: E402
from services.rawlog import read_topic as read_log  # noqa: E402
from services.runtime.kafka import ensure_topics  # noqa: E402
from services.runtime.memory import MemoryBus  # noqa: E402
from services.runtime.settings import Settings  # noqa: E402
from services.settlement.core import SettlementCore  # noqa: E402
from services.shoe.core import Entropy, ShoeCore  # noqa: E402
from contracts.vault import Vault, VaultKeys  # noqa: E402
from services.wagering.core import WageringCore  # noqa: E402

INPUTS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)


def floor_bus(rng: random.Random) -> MemoryBus:
    """An in-memory bus with the shoe (seeded shuffles, a bench vault key), dealing, wagering and settlement
    services (also used by bench/projection_card.py)."""
    bus = MemoryBus()

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    vault = Vault(VaultKeys((("bench", rng.randbytes(32)),)), nonce=lambda: rng.randbytes(12))
    for core in (ShoeCore(Entropy(shuffle, lambda: rng.randbytes(16)), vault), DealingCore(), WageringCore(),
                 SettlementCore()):
        bus.add(core)
    return bus


async def deal_in_memory(tables: int, rounds: int) -> MemoryBus:
    rng = random.Random(7)
    bus = floor_bus(rng)
    io = MemoryFloorIO(bus)
    seats = [Seat(i, f"player-{i}") for i in range(1, 6)]
    for n in range(tables):
        tid = f"B{n:02d}"
        cfg = punto_banco_full() if n % 2 else no_vig_dragon(panda=True)
        dealer = TableDealer(io, tid, cfg, seats, random.Random(n), Clock())
        await dealer.open_table()
        await io.send(T.SHOE_COMMANDS, command(tid, f"{tid}-load", Clock()(), LoadShoe(shoe_id=f"{tid}-S", cut_at=60)))
        for r in range(1, rounds + 1):
            await dealer.play_round(f"{tid}-S", f"{tid}-S-{r}")
    return bus


async def replay_table(producer: AIOKafkaProducer, settings: Settings, records: list, interval_s: float,
                       start_after_s: float, acked: dict[tuple[str, int], float]) -> None:
    """Write one table's records at the dealing pace; ``acked``: (table, seq) of each card -> wall time (ms)
    its append was acknowledged."""
    await asyncio.sleep(start_after_s)  # tables open at different moments, as on a floor
    for rec in records:
        env = decode_event(rec.value)
        card = rec.topic == T.SHOE_EVENTS and isinstance(env.payload, CardDrawn)
        if card:
            await asyncio.sleep(interval_s)
        await producer.send_and_wait(settings.topic(rec.topic), rec.value, key=rec.key)
        if card:
            acked[(env.table_id, env.seq)] = time.time() * 1000


async def watch_odds(settings: Settings, seen: dict[tuple[str, int], float], stop: asyncio.Event) -> None:
    """A ``read_committed`` reader of the odds topic, as the pit's: (table, step) of each public card
    ``OddsUpdated`` -> wall time (ms) it was first read (its transaction committed and visible)."""
    consumer = AIOKafkaConsumer(settings.topic(T.PROJECTION_ODDS), **settings.client_options(),
                                isolation_level="read_committed", auto_offset_reset="earliest",
                                enable_auto_commit=False, fetch_max_wait_ms=100)
    await consumer.start()
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=100)
            t = time.time() * 1000
            for recs in batch.values():
                for r in recs:
                    env = decode_event(r.value)
                    o = env.payload
                    if isinstance(o, OddsUpdated) and o.trigger == "card" and o.view == "public":
                        seen.setdefault((env.table_id, o.step), t)
    finally:
        await consumer.stop()


async def wait_ready(ready: Path, proc: asyncio.subprocess.Process, timeout_s: float = 120.0) -> None:
    """Wait until the projection process's ready file exists (raises ``RuntimeError`` if the process ends
    first, ``TimeoutError`` after ``timeout_s`` seconds)."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        if proc.returncode is not None:
            raise RuntimeError(f"the projection process ended with {proc.returncode} before it was ready")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the projection was not ready after {timeout_s:.0f} s")
        await asyncio.sleep(0.1)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--card-interval-ms", type=float, default=500.0,
                    help="pause before each card at each table (a live table deals a card every 2-5 s)")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    ap.add_argument("--keep-topics", action="store_true", help="do not delete this run's topics at the end")
    args = ap.parse_args()
    # a SIGTERM (``timeout``, a job's stop) cancels the run, so the ``finally`` blocks stop the projection's
    # process and delete the run's topics: Python's default ends at once and left that child running
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)

    t0 = time.perf_counter()
    bus = await deal_in_memory(args.tables, args.rounds)
    by_table: dict[str, list] = defaultdict(list)
    for rec in bus.log:
        if rec.topic in INPUTS:
            by_table[rec.key.decode()].append(rec)
    n_inputs = sum(len(v) for v in by_table.values())
    print(f"dealt {args.tables} tables x {args.rounds} rounds in memory: {n_inputs} input events "
          f"({time.perf_counter() - t0:.1f} s)")

    settings = replace(Settings.from_env(), bootstrap_servers=args.bootstrap,
                       topic_prefix=f"benchproj{uuid.uuid4().hex[:6]}.")
    try:
        await ensure_topics(settings, T.ALL_TOPICS)
    except Exception as e:
        print(f"error: cannot reach Kafka at {args.bootstrap}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    try:
        last = await measure(args, settings, by_table)
    finally:
        await cleanup(settings, settings.topic_prefix, keep=args.keep_topics)
    if last is None:
        return 1
    print(last)
    return 0


async def measure(args: argparse.Namespace, settings: Settings, by_table: dict[str, list]) -> str | None:
    """Steps 2-4 on the broker of ``settings``, under its fresh topic prefix; returns the last line to print
    (None: no odds updates observed, said on stderr)."""
    # the projection runs in its own process, as in production (the replaying producer here would otherwise
    # share its event loop)
    # (``croupier serve --services projection``, with a per-card trace: bench/projection_trace.py)
    trace = Path(tempfile.mkdtemp(prefix="benchproj")) / "trace.txt"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).with_name("projection_trace.py")), args.bootstrap,
        settings.topic_prefix, str(trace), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        cwd=str(Path(__file__).resolve().parents[1]))
    producer = AIOKafkaProducer(**settings.client_options(), linger_ms=0)
    await producer.start()
    acked: dict[tuple[str, int], float] = {}
    visible: dict[tuple[str, int], float] = {}
    watching = asyncio.Event()
    watcher = asyncio.create_task(watch_odds(settings, visible, watching))
    try:
        # process start, group join and (empty) rebuild: a loaded machine has taken over 20 s, and cards dealt
        # before would measure the start, not the live path
        await wait_ready(trace.with_name("ready"), proc)
        t1 = time.perf_counter()
        stagger = random.Random(3)
        interval = args.card_interval_ms / 1000
        await asyncio.gather(*(replay_table(producer, settings, recs, interval, stagger.uniform(0, 5 * interval),
                                            acked)
                               for recs in by_table.values()))
        print(f"replayed into Kafka in {time.perf_counter() - t1:.1f} s")
        cards = sum(1 for recs in by_table.values() for r in recs
                    if r.topic == T.SHOE_EVENTS and isinstance(decode_event(r.value).payload, CardDrawn))
        odds_topic = settings.topic(T.PROJECTION_ODDS)
        # until the public odds of (nearly) every card are visible, or none came for 30 s (a card's odds are
        # skipped when a later card of its table was folded first: the projection publishes the latest); a
        # loaded machine has stalled the projection for over 10 s at a time, so 30 s
        last, quiet = -1, 0
        while len(visible) < cards - 2 * args.tables and quiet < 60:
            quiet = quiet + 1 if len(visible) == last else 0
            last = len(visible)
            await asyncio.sleep(0.5)
    finally:
        await asyncio.sleep(0.5)
        watching.set()
        await watcher
        await producer.stop()
        with contextlib.suppress(ProcessLookupError):  # gone already (``timeout`` signals the whole group)
            proc.terminate()
        await proc.wait()
    # the projection's process is this process's only waited-for child: its CPU, whatever the machine's load
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = ru.ru_utime + ru.ru_stime

    # delays: the CardDrawn record's timestamp to the public OddsUpdated record's timestamp (both ms)
    shoe_steps: dict[tuple[str, int], int] = {}
    for rec in await read_log(settings, settings.topic(T.SHOE_EVENTS)):
        env = decode_event(rec.value)
        if isinstance(env.payload, CardDrawn):
            key = env.table_id
            shoe_steps[(key, env.seq)] = rec.timestamp
    # the step of a card = its seq in shoe.events minus the loaded and (no cut) events before the burn
    card_ts: dict[tuple[str, int], int] = {}
    for (tid, seq), ts in shoe_steps.items():
        card_ts[(tid, seq)] = ts
    delays: list[float] = []
    timeline: list[tuple[int, float]] = []
    for rec in await read_log(settings, odds_topic):
        env = decode_event(rec.value)
        o = env.payload
        if isinstance(o, OddsUpdated) and o.trigger == "card" and o.view == "public":
            # shoe.events per table: 1 shoe_loaded, 2 shoe_cut, 3 shoe_burned, then cards: step s is seq s + 2
            ts = card_ts.get((env.table_id, o.step + 2))
            if ts is not None:
                delays.append(rec.timestamp - ts)
                timeline.append((ts, rec.timestamp - ts))
    if not delays:
        print("error: no odds updates observed", file=sys.stderr)
        return None
    p50, p99 = statistics.median(delays), pct(delays, 0.99)
    timeline.sort()
    t_first = timeline[0][0]
    buckets: dict[int, list[float]] = defaultdict(list)
    for ts, d in timeline:
        buckets[(ts - t_first) // 1000].append(d)
    print("p99 by second of the run: " + " ".join(f"{k}s:{pct(v, 0.99):.0f}" for k, v in sorted(buckets.items())))
    print(f"card -> odds delay over {len(delays)} cards: p50 {p50:.1f} ms, p90 {pct(delays, 0.9):.1f} ms, "
          f"p99 {p99:.1f} ms, max {max(delays):.1f} ms")
    print_breakdown(card_ts, acked, visible, trace)
    print(f"projection process CPU: {cpu_s:.1f} s, {cpu_s * 1000 / max(len(card_ts), 1):.1f} ms per card dealt "
          f"(start and stop included)")

    replica = ServiceHost(ProjectionCore(), settings, NullPublisher())

    async def read(topic: str) -> list:
        return await read_log(settings, topic)

    records = 0
    for t in (*INPUTS, T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS):
        records += len(await read(settings.topic(t)))
    t2 = time.perf_counter()
    await replica.rebuild(read)
    rebuild_s = time.perf_counter() - t2
    per_100k = rebuild_s / records * 100_000
    print(f"rebuild from zero: {records} events in {rebuild_s:.2f} s (reading from Kafka included)")
    return (f"projection: tables={args.tables} odds_p50_ms={p50:.1f} odds_p99_ms={p99:.1f} "
            f"rebuild_s_per_100k={per_100k:.1f}")


def print_breakdown(card_ts: dict[tuple[str, int], int], acked: dict[tuple[str, int], float],
                    visible: dict[tuple[str, int], float], trace: Path) -> None:
    """Where a card's time went (ms, p50 and p99 of each stage over the cards traced at every stage): the
    ``CardDrawn``'s append (its timestamp to its acknowledgement), the projection's read (to the batch
    reaching its tasks), the wait for its turn (to the fold's start), the fold and odds, the wait for the
    transaction, the transaction (to its commit), and the ``OddsUpdated`` becoming visible to a
    ``read_committed`` reader."""
    read: dict[tuple[str, int], float] = {}
    fold: dict[tuple[str, int], tuple[float, float]] = {}
    txn: dict[tuple[str, int], tuple[float, float, int, int]] = {}
    wire: dict[tuple[str, int], dict[str, tuple[float, int, int]]] = {}
    gcs: dict[int, list[float]] = {}
    full: list[tuple[float, float]] = []  # (ms since the first card, ms) of each full collection
    lines = trace.read_text().splitlines() if trace.exists() else []
    for line in lines:
        f = line.split()
        if f[0] == "read":
            read.setdefault((f[1], int(f[2])), float(f[3]))
        elif f[0] == "fold":
            fold.setdefault((f[1], int(f[2])), (float(f[3]), float(f[4])))
        elif f[0] == "txn":
            txn.setdefault((f[1], int(f[2]) + 2), (float(f[3]), float(f[4]), int(f[5]), int(f[6])))
        elif f[0] == "gc":
            gcs.setdefault(int(f[1]), []).append(float(f[2]))
            if int(f[1]) == 2 and card_ts:
                full.append((float(f[3]) - min(card_ts.values()), float(f[2])))
        elif f[0] == "count":
            print(f"transactions committed: {f[1]} of the tasks (outcomes and offsets), {f[2]} of the prompt lane "
                  f"(odds alone); {(int(f[1]) + int(f[2])) / max(len(card_ts), 1):.2f} per card")
        elif f[0] == "wire":
            parts = {}
            for item in f[3:]:
                name, _, v = item.partition("=")
                ms, count, retried = v.split("/")
                parts[name] = (float(ms), int(count), int(retried))
            wire.setdefault((f[1], int(f[2]) + 2), parts)
    if gcs:
        print("garbage collections of the projection's process (ms each): " + "; ".join(
            f"generation {g}: n={len(v)} p50 {statistics.median(v):.2f} max {max(v):.1f}" for g, v in sorted(gcs.items()))
            + "; the full ones at " + ", ".join(f"{at / 1000:+.1f} s ({ms:.0f} ms)" for at, ms in full)
            + " from the first card")
    stages: dict[str, list[float]] = defaultdict(list)
    names = ("append", "read", "queue", "fold+odds", "to txn", "txn", "visible", "total")
    checkpointed = 0
    for key, ts in card_ts.items():
        if not all(key in d for d in (acked, read, fold, txn)) or (key[0], key[1] - 2) not in visible:
            continue
        f0, f1 = fold[key]
        x0, x1, _, cp = txn[key]
        checkpointed += cp
        marks = (ts, acked[key], read[key], f0, f1, x0, x1, visible[(key[0], key[1] - 2)])
        for name, a, b in zip(names, marks, marks[1:]):
            stages[name].append(b - a)
        stages["total"].append(marks[-1] - marks[0])
    if not stages:
        print("breakdown: no card traced at every stage", file=sys.stderr)
        return
    n = len(stages["total"])
    print(f"breakdown over {n} cards ({checkpointed} in a transaction with a checkpoint), ms:")
    for name in names:
        xs = stages[name]
        print(f"  {name:<10} p50 {statistics.median(xs):7.1f}  p99 {pct(xs, 0.99):7.1f}")
    print_wire([wire[k] for k in card_ts if k in wire], [txn[k][2] for k in card_ts if k in txn])


def print_wire(wires: list[dict[str, tuple[float, int, int]]], sizes: list[int]) -> None:
    """The wire of the transactions that carried a card's odds: per request kind (bench/projection_trace.py),
    the ms its requests took in one transaction (their backoff sleeps included; p50 and p99 over the
    transactions), the requests per transaction and the share of them answered with an error to retry
    (CONCURRENT_TRANSACTIONS while the previous commit's markers are written, mostly)."""
    if not wires:
        return
    print(f"wire of those transactions ({len(wires)}; records per transaction p50 {statistics.median(sizes):.0f} "
          f"p99 {pct(sizes, 0.99):.0f}), ms per transaction:")
    for name in ("addparts", "produce", "addoffsets", "txnoffsets", "endtxn"):
        ms = [w.get(name, (0.0, 0, 0))[0] for w in wires]
        count = sum(w.get(name, (0.0, 0, 0))[1] for w in wires)
        retried = sum(w.get(name, (0.0, 0, 0))[2] for w in wires)
        print(f"  {name:<10} p50 {statistics.median(ms):7.1f}  p99 {pct(ms, 0.99):7.1f}  "
              f"requests/txn {count / len(wires):4.2f}  retried {retried / max(count, 1):4.0%}")


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except asyncio.CancelledError:
        print("projection: stopped by SIGTERM (its projection process stopped, its topics deleted)", file=sys.stderr)
        sys.exit(143)
