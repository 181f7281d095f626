"""What one producer per instance (KIP-447) saves against a producer per partition (the runtime's fencing shape
today), on the broker alone, no game work.

``.venv/bin/python bench/kip447.py [--partitions 12] [--seconds 4] [--reps 3] [--bootstrap HOST:PORT]``
(bootstrap default: ``KAFKA_BOOTSTRAP_SERVERS``, else ``127.0.0.1:19092``).

A *unit* is what a batch spanning ``N`` tasks commits: for each of ``N`` partitions one output record (about a
small event's size) and its input offset. Two shapes, in the same process, against the same consumer group
(one member joined, its metadata read once):

* ``one``: one transactional producer writes the ``N`` records and sends the ``N`` offsets with the group
  metadata (:func:`services.runtime.kip447.send_offsets_to_transaction`, TxnOffsetCommit v3+) in **one**
  transaction per unit;
* ``per_partition``: ``N`` transactional producers, one per partition, each writing its record and sending its
  offset with the group id (aiokafka's TxnOffsetCommit v0, as ``record_collector.py``) in its own
  transaction, the ``N`` transactions of a unit at once (as the runtime commits a batch's tasks).

Each rep runs each shape for ``--seconds``, one after the other (alternating which goes first), units back to
back. Printed per shape: the median over reps of units/s and of transactions/s; the last line
``kip447: partitions=N one_units_per_s=… per_partition_units_per_s=… one_txn_per_s=…
per_partition_txn_per_s=… ratio=… load1=… produce_retries=…`` (``ratio``: units/s of ``one`` over ``per_partition``, the
baseline; ``load1``: the machine's one-minute load average at the end; ``produce_retries``: aiokafka's
NOT_ENOUGH_REPLICAS retries, counted and silenced as in ``bench/rawloop.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench.rawloop, as bench/pipeline.py

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.rawloop import NOT_ENOUGH_REPLICAS
from services.runtime.kip447 import GroupMetadata, group_metadata, send_offsets_to_transaction
from services.runtime.settings import env_client_options

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"
RECORD = b"x" * 300
clock = time.perf_counter


async def _producer(bootstrap: str) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(**env_client_options(bootstrap), transactional_id=f"kip447-bench-{uuid.uuid4().hex}",
                                enable_idempotence=True, acks="all", linger_ms=0, retry_backoff_ms=10)
    await producer.start()
    return producer


class Shapes:
    """The two shapes' producers over ``partitions`` partitions of ``src`` (offsets) and ``out`` (records)."""

    def __init__(self, bootstrap: str, src: str, out: str, partitions: int, group: str) -> None:
        self.bootstrap, self.src, self.out, self.n, self.group = bootstrap, src, out, partitions, group
        self.one: AIOKafkaProducer | None = None
        self.each: list[AIOKafkaProducer] = []
        self.meta: GroupMetadata | None = None
        self.offset = 0

    async def start(self, meta: GroupMetadata) -> None:
        self.meta = meta
        self.one = await _producer(self.bootstrap)
        self.each = list(await asyncio.gather(*(_producer(self.bootstrap) for _ in range(self.n))))

    async def stop(self) -> None:
        for p in [self.one, *self.each]:
            if p is not None:
                await p.stop()

    async def unit_one(self) -> int:
        assert self.one is not None and self.meta is not None
        self.offset += 1
        async with self.one.transaction():
            futs = [await self.one.send(self.out, RECORD, partition=p) for p in range(self.n)]
            await send_offsets_to_transaction(self.one, {TopicPartition(self.src, p): self.offset
                                                         for p in range(self.n)}, self.meta)
            await asyncio.gather(*futs)
        return 1

    async def unit_per_partition(self) -> int:
        self.offset += 1

        async def task(p: int, producer: AIOKafkaProducer) -> None:
            async with producer.transaction():
                fut = await producer.send(self.out, RECORD, partition=p)
                await producer.send_offsets_to_transaction({TopicPartition(self.src, p): self.offset}, self.group)
                await fut

        await asyncio.gather(*(task(p, prod) for p, prod in enumerate(self.each)))
        return self.n


async def _timed(unit, seconds: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(units/s, transactions/s) of ``unit`` run back to back for ``seconds``."""
    await unit()  # warm: connections, coordinators
    units = txns = 0
    t0 = clock()
    while clock() - t0 < seconds:
        txns += await unit()
        units += 1
    dt = clock() - t0
    return units / dt, txns / dt


async def main(args: argparse.Namespace) -> None:
    opts = env_client_options(args.bootstrap)
    tag = uuid.uuid4().hex[:8]
    src, out, group = f"kip447-bench-in-{tag}", f"kip447-bench-out-{tag}", f"kip447-bench-{tag}"
    admin = AIOKafkaAdminClient(**opts)
    await admin.start()
    await admin.create_topics([NewTopic(src, args.partitions, 1), NewTopic(out, args.partitions, 1)])
    member = AIOKafkaConsumer(src, **opts, group_id=group, enable_auto_commit=False, heartbeat_interval_ms=500)
    shapes = Shapes(args.bootstrap, src, out, args.partitions, group)
    try:
        await member.start()
        deadline = clock() + 60
        while len(member.assignment()) < args.partitions and clock() < deadline:
            await member.getmany(timeout_ms=100)
        await shapes.start(group_metadata(member))
        rates: dict[str, list[tuple[float, float]]] = {"one": [], "per_partition": []}
        for rep in range(args.reps):
            order = ["one", "per_partition"] if rep % 2 == 0 else ["per_partition", "one"]
            for shape in order:
                unit = shapes.unit_one if shape == "one" else shapes.unit_per_partition
                rates[shape].append(await _timed(unit, args.seconds))
                print(f"rep {rep} {shape}: units_per_s={rates[shape][-1][0]:.1f} "
                      f"txn_per_s={rates[shape][-1][1]:.1f}", flush=True)
        med = {k: (statistics.median(u for u, _ in v), statistics.median(t for _, t in v)) for k, v in rates.items()}
        print(f"kip447: partitions={args.partitions} one_units_per_s={med['one'][0]:.1f} "
              f"per_partition_units_per_s={med['per_partition'][0]:.1f} one_txn_per_s={med['one'][1]:.1f} "
              f"per_partition_txn_per_s={med['per_partition'][1]:.1f} "
              f"ratio={med['one'][0] / med['per_partition'][0]:.2f} load1={os.getloadavg()[0]:.2f} "
              f"produce_retries={NOT_ENOUGH_REPLICAS.n}")
    finally:
        await shapes.stop()
        await member.stop()
        await admin.delete_topics([src, out])
        await admin.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP))
    asyncio.run(main(ap.parse_args()))
