"""A stopped instance hands its tasks over at once (issue 25), on a real broker.

* A restore reader reaches the end of a range that ends in a transaction's commit marker (every own stream's
  tail after a checkpoint) without waiting for a poll's timeout: the marker brings no record, and the reader
  waited its whole 500 ms poll for one on every restore from a fresh checkpoint.
* A SIGTERM'd instance commits, closes its producers and leaves its group (LeaveGroup): the survivor is
  assigned its tasks long before the session timeout could have expired, and its tasks move on. Timings
  on this shared machine are not asserted; ``bench/handover.py`` prints them (and those of ``kill -9``).
"""

from __future__ import annotations

import asyncio
import json
import signal
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from aiokafka import AIOKafkaProducer

from croupier.handover import measure_handover
from services.runtime import state_restorer as R
from services.runtime.app import SESSION_TIMEOUT_MS
from services.runtime.kafka import ensure_topics
from tests.system.conftest import broker_settings


async def test_a_restore_reads_to_a_commit_marker_without_waiting_half_a_second(kafka_bootstrap: str):
    settings = broker_settings(kafka_bootstrap, topic_prefix=f"mk{uuid.uuid4().hex[:8]}.", partitions=1)
    await ensure_topics(settings, ["marker.events"])
    topic = settings.topic("marker.events")
    prod = AIOKafkaProducer(**settings.client_options(), transactional_id=settings.transactional_id("dealing"))
    await prod.start()
    try:
        async with prod.transaction():
            await prod.send_and_wait(topic, b"event", partition=0)
    finally:
        await prod.stop()
    restorer = R.StateRestorer(SimpleNamespace(settings=settings, service="marker"))  # type: ignore[arg-type]
    try:
        reader = await restorer.reader(0)
        polls: list[int] = []
        getmany = reader.getmany

        async def counted(*a: Any, timeout_ms: int = 0, **kw: Any) -> Any:
            polls.append(timeout_ms)
            return await getmany(*a, timeout_ms=timeout_ms, **kw)

        reader.getmany = counted  # type: ignore[method-assign]
        assert await restorer.end_offset(topic, 0) == 2  # the event and its transaction's commit marker

        async def read(start: int) -> list[bytes]:
            return [r.value for chunk in [c async for c in restorer.read_range(topic, 0, start)] for r in chunk]

        assert await asyncio.wait_for(read(0), 20) == [b"event"]
        # only the marker left (the checkpoint's own tail): the fetch brings no record and moves the position
        # past it, and the poll that waited for a record ends after READ_POLL_MS (it waited 500 ms)
        polls.clear()
        assert await asyncio.wait_for(read(1), 20) == []
        assert polls and max(polls) == R.READ_POLL_MS <= 50, polls
    finally:
        await restorer.stop()


async def test_a_sigterm_hands_the_tasks_over_by_leaving_the_group(kafka_bootstrap: str, tmp_path: Path):
    lines: list[Any] = []
    res = await measure_handover(kafka_bootstrap, signal.SIGTERM, partitions=2, per_partition=2, warm_rounds=2,
                                 after_rounds=0, workdir=tmp_path, out=lines.append)
    assert res.errors == [] and len(res.victim_tasks) == 1, lines
    handed = [json.loads(x) for x in (tmp_path / "dealing-2.log").read_text().splitlines()
              if '"handed_over"' in x]
    # it committed its task (with a checkpoint) and closed its producer before the survivor was assigned it
    assert len(handed) == 1 and handed[0]["committed"] == res.victim_tasks, handed
    assert res.assigned_s is not None and res.at_signal_s(handed[0]["timestamp"]) < res.assigned_s, res.line()
    # the survivor got the task before the session could have expired: by the LeaveGroup, not the timeout
    assert res.assigned_s is not None and res.assigned_s < SESSION_TIMEOUT_MS / 1000, res.line()
    # and wrote the task's next event after it (the floor went on)
    assert res.stall_s is not None, res.line()
