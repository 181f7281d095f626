"""Benchmark: one cage page request's read of the log, whole (as before) and incremental (issue 23).

Run: ``.venv/bin/python bench/cage_pages.py [--shoes 2] [--runs 5] [--bootstrap HOST:PORT]`` (bootstrap default:
``KAFKA_BOOTSTRAP_SERVERS``, else ``127.0.0.1:19092``; exit status 2 with one line on stderr when the broker
cannot be reached).

The log: the simulated floor of ``tests/services/test_cage_floor.py`` (two tables, openers, rated patrons'
cash and marker buy-ins, fills, credits, closers, soft counts; ``--shoes`` shoes of 8 rounds per table) run
on the in-memory bus, its records of the topics the cage's pages read (:data:`croupier.cage_pages.READS`)
written raw into Kafka topics of a fresh prefix (``cagebench<hex>.``, deleted at the end).

Timed, each ``--runs`` times (the median printed, every run listed), on this machine's wall clock:

* ``whole``: the read each cage page made before, at every request: the topics visible (one metadata
  request), then each topic read from offset zero on a consumer of its own (``croupier.log.read_events``);
* ``first``: :meth:`croupier.pit_cage.KafkaCageLog.events` on a fresh log (its tail reads everything once);
* ``warm``: the same log's next request, nothing appended;
* ``append``: the next request after ``--append`` records more on ``cage.events`` (copies of its last ones).

Then the fold a page does on those events (``statement``: :func:`croupier.cage_pages.statement_json`;
``ratings``: :func:`services.cage.patrons.ratings`), CPU, to show what is left of a request. Each incremental
read's events are checked equal to a whole read's of the same log (``same=True``).

Last line, exactly: ``cage_pages: events=<n> whole_ms=<a> warm_ms=<b> append_ms=<c> ratio=<a/b>
statement_ms=<s> ratings_ms=<r> same=<True|False>``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


async def floor_records(shoes: int) -> dict[str, list[Any]]:
    """The simulated cage floor's records per topic of the pages' reads (in-memory bus)."""
    from croupier.cage_pages import READS
    from services.cage.core import CageCore
    from services.floor.io import MemoryFloorIO
    from tests.services.helpers import floor_bus
    from tests.services.test_cage_floor import clerks, dealers

    bus, _ = floor_bus(seed=7)
    bus.add(CageCore())
    io = MemoryFloorIO(bus)
    for d in dealers(io, clerks()):
        await d.run(shoes=shoes)
    return {t: list(bus.topics.get(t, [])) for t in READS}


async def timed(runs: int, fn: Callable[[], Awaitable[Any]]) -> tuple[list[float], Any]:
    """``runs`` calls of ``fn``: their wall times (ms) and the last result."""
    out, got = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        got = await fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out, got


async def main(args: argparse.Namespace) -> int:
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

    from contracts import topics as T
    from croupier.cage_pages import READS, statement_json
    from croupier.log import read_events, visible_topics
    from croupier.pit_cage import KafkaCageLog
    from services.cage.patrons import ratings
    from services.runtime.kafka import ensure_topics
    from services.runtime.settings import Settings

    settings = Settings(bootstrap_servers=args.bootstrap, topic_prefix=f"cagebench{uuid.uuid4().hex[:8]}.")
    recs = await floor_records(args.shoes)
    try:
        await ensure_topics(settings, READS)
    except Exception as e:  # noqa: BLE001 - the one line the bench promises
        print(f"cage_pages: the broker at {args.bootstrap} cannot be reached: {e}", file=sys.stderr)
        return 2
    producer = AIOKafkaProducer(**settings.client_options(), linger_ms=5)
    await producer.start()

    async def write(topic: str, records: list[Any]) -> None:
        for r in records:
            await producer.send(settings.topic(topic), r.value, key=r.key)
        await producer.flush()

    log = KafkaCageLog(settings)
    try:
        for topic, records in recs.items():
            await write(topic, records)
        n = sum(len(v) for v in recs.values())

        async def whole() -> list[Any]:
            existing = await visible_topics(settings)
            streams = tuple(s for s in READS if settings.topic(s) in existing)
            return [r.env for r in await read_events(settings, None, streams)]

        whole_ms, whole_envs = await timed(args.runs, whole)
        first_ms, first_envs = await timed(1, log.events)
        warm_ms, warm_envs = await timed(args.runs, log.events)
        append_ms: list[float] = []
        rng = random.Random(1)
        for _ in range(args.runs):
            await write(T.CAGE_EVENTS, rng.sample(recs[T.CAGE_EVENTS], args.append))
            ms, after = await timed(1, log.events)
            append_ms += ms
        same = first_envs == whole_envs and warm_envs == whole_envs and after == (await whole())
        stmt_ms, _ = await timed(args.runs, lambda: asyncio.sleep(0, statement_json(whole_envs, None)))
        rate_ms, _ = await timed(args.runs, lambda: asyncio.sleep(0, ratings(whole_envs)))
    finally:
        await log.stop()
        await producer.stop()
        admin = AIOKafkaAdminClient(**settings.client_options())
        await admin.start()
        try:
            await admin.delete_topics([settings.topic(t) for t in READS])
        finally:
            await admin.close()

    def show(name: str, xs: list[float]) -> float:
        med = statistics.median(xs)
        print(f"{name:>9}: median {med:8.1f} ms  runs " + " ".join(f"{x:.1f}" for x in xs))
        return med

    print(f"log: {n} records ({', '.join(f'{t}={len(v)}' for t, v in recs.items())}), "
          f"{args.shoes} shoe(s) per table; load1={os.getloadavg()[0]:.2f}")
    w = show("whole", whole_ms)
    show("first", first_ms)
    m = show("warm", warm_ms)
    a = show("append", append_ms)
    s = show("statement", stmt_ms)
    r = show("ratings", rate_ms)
    print(f"cage_pages: events={n} whole_ms={w:.1f} warm_ms={m:.1f} append_ms={a:.1f} ratio={w / m:.1f} "
          f"statement_ms={s:.1f} ratings_ms={r:.1f} same={same}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shoes", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--append", type=int, default=5)
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    raise SystemExit(asyncio.run(main(ap.parse_args())))
