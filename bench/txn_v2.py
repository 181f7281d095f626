"""Benchmark: one producer's transactions on aiokafka's protocol version 1 against version 2
(:mod:`services.runtime.transaction_v2`, KIP-890 part 2), and under version 2 the offsets sent beside the records
against after them (issue 25).

Each transaction is what a task's outcome costs: one record (300 bytes, to one of 12 partitions) and its input
offset with the consumer group's metadata (:func:`services.runtime.kip447.send_offsets_to_transaction`), ``--gap``
seconds apart (0.05 by default: no transaction meets the previous one's markers). The three shapes run
``--txns`` transactions each, in turn, ``--repeat`` times, in one process on one broker, each on a producer of
its own:

* ``v1``: AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit v3+, EndTxn (aiokafka's sender);
* ``v2_side``: Produce v12 and TxnOffsetCommit v5 sent side by side, then EndTxn v5: the broker adds one
  partition per transactional id at a time and answers the older addition NETWORK_EXCEPTION (the client's
  produce retry, 10 ms later, logged as "Unable to verify the partition has been added");
* ``v2``: the records answered first, then the offsets, then EndTxn (what the group commit does).

Prints each shape's p50 / p90 / p99 of a transaction's duration (ms) per repeat; last line:
``txn_v2: v1_p50_ms=… v2_p50_ms=… v1_p90_ms=… v2_side_p90_ms=… v2_p90_ms=… ratio_p90=…`` (medians over the
repeats; ``ratio_p90`` = v1 / v2).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from services.runtime.kip447 import group_metadata, send_offsets_to_transaction
from services.runtime.record_collector import quick_concurrent_retry
from services.runtime.transaction_v2 import enable_transaction_v2

SHAPES = ("v1", "v2_side", "v2")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


async def run_shape(bootstrap: str, shape: str, src: str, out: str, member: AIOKafkaConsumer, n: int,
                    gap: float) -> list[float]:
    """``n`` transactions of ``shape`` on a new producer; their durations (s)."""
    prod = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"bench-txn-v2-{uuid.uuid4().hex[:8]}",
                            enable_idempotence=True, acks="all", linger_ms=0, retry_backoff_ms=10)
    await prod.start()
    try:
        if shape != "v1" and not await enable_transaction_v2(prod):
            raise SystemExit("txn_v2: the broker has no transaction version 2 (see the warning above)")
        tp = TopicPartition(src, 0)
        took = []
        for i in range(n):
            t0 = time.perf_counter()
            async with prod.transaction():
                sent = await prod.send(out, b"x" * 300, partition=i % 12)
                if shape == "v2":
                    await sent
                await send_offsets_to_transaction(prod, {tp: i + 1}, group_metadata(member))
            took.append(time.perf_counter() - t0)
            await asyncio.sleep(gap)
        return took
    finally:
        await prod.stop()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    ap.add_argument("--txns", type=int, default=200, help="transactions per shape and repeat")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between transactions")
    args = ap.parse_args()
    quick_concurrent_retry()  # the runtime's version 1 retry, as the services run it
    tag = uuid.uuid4().hex[:8]
    src, out = f"bench-txn-v2-in-{tag}", f"bench-txn-v2-out-{tag}"
    admin = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap)
    await admin.start()
    member = AIOKafkaConsumer(src, bootstrap_servers=args.bootstrap, group_id=f"bench-txn-v2-{tag}",
                              enable_auto_commit=False)
    try:
        await admin.create_topics([NewTopic(src, 1, 1), NewTopic(out, 12, 1)])
        await member.start()
        while not member.assignment():
            await member.getmany(timeout_ms=100)
        figures: dict[str, dict[str, list[float]]] = {s: {"p50": [], "p90": [], "p99": []} for s in SHAPES}
        for r in range(args.repeat):
            for shape in SHAPES:
                took = await run_shape(args.bootstrap, shape, src, out, member, args.txns, args.gap)
                row = {q: 1000 * pct(took, float(q[1:]) / 100) for q in ("p50", "p90", "p99")}
                for q, v in row.items():
                    figures[shape][q].append(v)
                print(f"repeat {r + 1} {shape:8} n={len(took)} " + " ".join(f"{q}={v:.1f}" for q, v in row.items())
                      + " ms", flush=True)
        med = {s: {q: statistics.median(v) for q, v in f.items()} for s, f in figures.items()}
        print(f"txn_v2: v1_p50_ms={med['v1']['p50']:.1f} v2_p50_ms={med['v2']['p50']:.1f} "
              f"v1_p90_ms={med['v1']['p90']:.1f} v2_side_p90_ms={med['v2_side']['p90']:.1f} "
              f"v2_p90_ms={med['v2']['p90']:.1f} ratio_p90={med['v1']['p90'] / med['v2']['p90']:.2f}")
        return 0
    finally:
        await member.stop()
        await admin.delete_topics([src, out])
        await admin.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
