"""Benchmark: a task's transactions back to back, with aiokafka's fixed 20 ms retry after
CONCURRENT_TRANSACTIONS against the runtime's quick retry (``record_collector.quick_concurrent_retry``, issue 30).

One transactional producer (as a task's: idempotent, ``acks=all``, ``linger_ms=0``, ``retry_backoff_ms=10``)
commits ``--txns`` transactions one after another, each one record and its input offset
(``send_offsets_to_transaction``), as a busy task's committer does. Rounds of ``--per-round`` transactions
alternate between the two retries in the same process (baseline first), so both meet the same load.

Prints the p50 and p90 of a transaction's duration (ms) and the share of transactions whose first
AddPartitionsToTxn was answered CONCURRENT_TRANSACTIONS, for each; last line:
``txn_retry: base_p50_ms=… quick_p50_ms=… ratio=… base_p90_ms=… quick_p90_ms=… ratio_p90=… base_retried=…
quick_retried=…`` (ratios: base / quick).
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

from aiokafka import AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402
from aiokafka.producer import sender as aks  # noqa: E402

from services.runtime import record_collector as rc  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--txns", type=int, default=400)
    ap.add_argument("--per-round", type=int, default=50)
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    args = ap.parse_args()
    rc.quick_concurrent_retry()
    quick = rc.CONCURRENT_TXN_FIRST_BACKOFF_S
    concurrent = {"n": 0}
    handle = aks.AddPartitionsToTxnHandler.handle_response

    def counting(self: object, resp: object) -> object:  # count the CONCURRENT_TRANSACTIONS answers
        concurrent["n"] += any(code == 51 for _, parts in resp.errors for _, code in parts)  # type: ignore[attr-defined]
        return handle(self, resp)

    aks.AddPartitionsToTxnHandler.handle_response = counting  # type: ignore[method-assign]
    topic = f"benchtxn{uuid.uuid4().hex[:6]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(topic, 1, 1), NewTopic(topic + ".in", 1, 1)])
    prod = AIOKafkaProducer(bootstrap_servers=args.bootstrap, transactional_id=topic + ".task-0",
                            enable_idempotence=True, acks="all", linger_ms=0, retry_backoff_ms=10)
    await prod.start()
    times: dict[str, list[float]] = {"base": [], "quick": []}
    retried: dict[str, int] = {"base": 0, "quick": 0}
    try:
        i = 0
        while i < args.txns:
            for side in ("base", "quick"):
                rc.CONCURRENT_TXN_FIRST_BACKOFF_S = quick if side == "quick" else aks.BACKOFF_OVERRIDE
                for _ in range(args.per_round):
                    i += 1
                    before = concurrent["n"]
                    t0 = time.perf_counter()
                    async with prod.transaction():
                        await prod.send(topic, b"x" * 300, partition=0)
                        await prod.send_offsets_to_transaction({TopicPartition(topic + ".in", 0): i}, topic)
                    times[side].append((time.perf_counter() - t0) * 1000)
                    retried[side] += concurrent["n"] > before
    finally:
        rc.CONCURRENT_TXN_FIRST_BACKOFF_S = quick
        await prod.stop()
        await admin.delete_topics([topic, topic + ".in"])
        await admin.close()
    for side, xs in times.items():
        print(f"{side:>5}: {len(xs)} transactions, p50 {statistics.median(xs):.1f} ms, p90 {pct(xs, 0.9):.1f} ms, "
              f"first AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS in {retried[side] / len(xs):.0%}")
    b, q = statistics.median(times["base"]), statistics.median(times["quick"])
    b90, q90 = pct(times["base"], 0.9), pct(times["quick"], 0.9)
    print(f"txn_retry: base_p50_ms={b:.1f} quick_p50_ms={q:.1f} ratio={b / q:.2f} base_p90_ms={b90:.1f} "
          f"quick_p90_ms={q90:.1f} ratio_p90={b90 / q90:.2f} "
          f"base_retried={retried['base'] / len(times['base']):.2f} quick_retried={retried['quick'] / len(times['quick']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
