"""An expected fencing is quiet (issue 28, item 10), on the shared broker: a task's producer fenced mid-transaction
by the task's next owner (a second producer with the same transactional id) leaves no "Future exception was never
retrieved ... ProducerFenced" for asyncio to log at error level.

aiokafka's sender dies of the fencing and fails every pending record batch, setting the error on each batch's
drain waiter too, which only a ``flush()`` awaits; a fenced producer's ``stop()`` does not flush. CI's chaos run
logged one such error per batch (settlement-2). The runtime now retrieves them
(:func:`services.runtime.producers.retrieve_batches`). The loop's own safety net
(:func:`services.runtime.producers.quiet_fenced_futures`) is *not* installed here: the test sees what asyncio
would report.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from typing import Any

from contracts import topics as T
from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.tasks import Tasks
from services.wagering.core import WageringCore
from tests.services.runtime_fakes import committed
from tests.services.test_task_commits import Record
from tests.system.conftest import broker_settings, create_topics, delete_topics


async def test_a_task_fenced_mid_transaction_leaves_no_unretrieved_future(kafka_bootstrap: str) -> None:
    prefix = f"fenced{uuid.uuid4().hex[:8]}."
    # fenced by the task's transactional id: a producer per task (exactly_once); under exactly_once_v2 the
    # generation fences (tests/system/test_eos_v2.py)
    settings = broker_settings(kafka_bootstrap, topic_prefix=prefix, partitions=1, processing_guarantee="exactly_once")
    # the records of the fenced transaction: two undecodable bets' dead letters
    names = [settings.topic(T.dlq("wagering")), settings.topic(T.WAGERING_BETS)]
    await create_topics(kafka_bootstrap, names, partitions=1)
    old = Tasks(ServiceHost(WageringCore(), settings, TasksOnly()), settings, f"{prefix}wagering")
    new = Tasks(ServiceHost(WageringCore(), settings, TasksOnly()), settings, f"{prefix}wagering")
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda _lp, ctx: seen.append(ctx))
    try:
        await old.collector.open(0)
        old.state[0] = "ready"
        old.positions[0] = {}
        old.version = None
        restores: list[int] = []
        old._enqueue = restores.append  # type: ignore[method-assign] # the restore is the test's
        await new.collector.open(0)  # the task's next owner: init_transactions fences the old producer
        bets = settings.topic(T.WAGERING_BETS)
        await committed(old, [Record(bets, 0, 1, b"T1", b"\xff"), Record(bets, 0, 2, b"T2", b"\xfe")])
        assert old.state[0] == "restoring" and restores == [0] and old.fenced == 1
        await old.collector.close(0)  # as the restore does: the fenced producer is stopped quietly
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0.05)
        dropped = [f"{c['message']}: {c.get('exception')!r}" for c in seen]
        assert dropped == []
    finally:
        loop.set_exception_handler(before)
        await old.collector.close_all()
        await new.collector.close_all()
        await delete_topics(kafka_bootstrap, names)
