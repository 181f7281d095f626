"""One turn of a consumer's fetch routine: aiokafka's ``Fetcher._get_actions_per_node`` against the session
fetcher's (:mod:`services.runtime.fetch_sessions`) on the same started consumer (issue 25).

The routine asks what to fetch each time it wakes (a fetch answered, records consumed, a backoff over), so its
cost is paid per fetch. Needs a broker (``KAFKA_BOOTSTRAP_SERVERS``, else 127.0.0.1:19092): one topic of
``--partitions`` partitions, assigned to one consumer at its beginning, deleted after. Both methods run on the
same fetcher, its node not in flight (the sessions' requests name no partition after the first), ``--calls``
calls per repeat; prints the median of ``--repeats`` per call and the ratio::

    fetch_turn: partitions=60 aiokafka_us=66.1 sessions_us=6.4 ratio=10.3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.consumer.fetcher import Fetcher

from services.runtime.fetch_sessions import SessionConsumer
from services.runtime.settings import DEFAULT_BOOTSTRAP


async def run(bootstrap: str, partitions: int, calls: int, repeats: int) -> None:
    topic = f"bench-fetch-turn-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(topic, partitions, 1)])
    consumer = SessionConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        await consumer.start()
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        for tp in tps:
            await consumer.position(tp)
        fetcher = consumer._fetcher
        assignment = consumer._subscription.subscription.assignment
        fetcher._in_flight.clear()  # no await below: the routine does not run meanwhile
        per_call = {}
        for name, turn in (("aiokafka", lambda: Fetcher._get_actions_per_node(fetcher, assignment)),
                           ("sessions", lambda: fetcher._get_actions_per_node(assignment))):
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(calls):
                    turn()
                times.append((time.perf_counter() - t0) / calls * 1e6)
            per_call[name] = statistics.median(times)
        print(f"fetch_turn: partitions={partitions} aiokafka_us={per_call['aiokafka']:.1f} "
              f"sessions_us={per_call['sessions']:.1f} ratio={per_call['aiokafka'] / per_call['sessions']:.1f}")
    finally:
        await consumer.stop()
        await admin.delete_topics([topic])
        await admin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP))
    ap.add_argument("--partitions", type=int, default=60, help="partitions assigned (the floor's reader: 60)")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    asyncio.run(run(a.bootstrap, a.partitions, a.calls, a.repeats))


if __name__ == "__main__":
    main()
