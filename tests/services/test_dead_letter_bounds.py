"""Dead letters never outgrow the broker's limit, and a record that cannot be dead-lettered never stops its
partition (issue 28, item 5).

A 900,238-byte ``PlaceBet`` was dead-lettered with its whole value (1.2 MB of base64): the letter exceeded
the broker's limit, the task's transaction failed every 2 s for 11 minutes and partition 0 never advanced,
while ``/health/ready`` said 200. The producer here is a fake that refuses, as the broker does, any record over
:data:`contracts.bounds.RECORD_LIMIT_BYTES`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

from contracts import topics as T
from contracts.bounds import RECORD_LIMIT_BYTES
from contracts.codecs import decode_dead_letter
from contracts.envelope import MAX_DEAD_LETTER_ORIGINAL
from services.runtime.app import TasksOnly
from services.runtime.host import ServiceHost
from services.runtime.ops import readiness
from services.runtime.settings import Settings
from services.runtime.tasks import STUCK_AFTER_S, Tasks
from services.wagering.core import WageringCore
from tests.services.runtime_fakes import committed
from tests.services.test_task_commits import Record

BETS = f"t.{T.WAGERING_BETS}"
DLQ = f"t.{T.dlq('wagering')}"


@dataclass
class LimitedProducer:
    """A task's producer that refuses a record over the broker's limit (or every dead letter, ``no_dlq``)."""

    no_dlq: bool = False
    sent: list[tuple[str, bytes]] = field(default_factory=list)
    offsets: list[dict[TopicPartition, int]] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def transaction(self) -> Any:
        mark = len(self.sent)
        try:
            yield
        except BaseException:
            del self.sent[mark:]  # aborted: nothing of it is read
            raise

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        if len(value) > RECORD_LIMIT_BYTES or (self.no_dlq and topic == DLQ):
            raise MessageSizeTooLargeError(f"the message is {len(value)} bytes")
        self.sent.append((topic, value))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(type("Meta", (), {"offset": len(self.sent) - 1})())
        return fut

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        self.offsets.append(dict(offsets))


def _tasks(producer: LimitedProducer) -> Tasks:
    settings = Settings(bootstrap_servers="unused:9092", topic_prefix="t.", partitions=1,
                    processing_guarantee="exactly_once")  # the fakes' producer per task (runtime_fakes.settings)
    tasks = Tasks(ServiceHost(WageringCore(), settings, TasksOnly()), settings, "t.wagering")
    tasks.producers = {0: producer}  # type: ignore[dict-item]
    tasks.state[0] = "ready"
    tasks.positions[0] = {}
    tasks.version = None
    tasks._enqueue = lambda p: None  # type: ignore[method-assign] # the test restores by hand
    return tasks


def _huge_bet() -> bytes:
    """A 900,238-byte PlaceBet with 450,000-character ids (over the decoder's bounds: undecodable)."""
    ids = "x" * 450_000
    body = json.dumps({"command_id": "b1", "table_id": "T1", "issued_at": "2026-01-01T00:00:00Z", "actor": "p",
                       "payload": {"type": "place_bet", "round_id": ids, "player_id": ids, "seat": 1,
                                   "wager": "banker", "amount_cents": 2500}}).encode()
    return body + b" " * (900_238 - len(body))


async def _until_advanced(tasks: Tasks, rec: Record, rounds: int = 8) -> int:
    """Read ``rec`` again after every failed transaction (as the restore's seek does); returns the reads."""
    for n in range(1, rounds + 1):
        tasks.state[0] = "ready"
        await asyncio.wait_for(committed(tasks, [rec]), 10)
        if tasks.positions[0].get(TopicPartition(BETS, 0)) == rec.offset + 1:
            return n
    return -1


@pytest.mark.asyncio
async def test_a_900_kb_record_is_dead_lettered_at_once_with_its_digest_and_a_bounded_prefix():
    producer = LimitedProducer()
    tasks = _tasks(producer)
    value = _huge_bet()
    rec = Record(BETS, 0, 7, b"T1", value)
    assert await _until_advanced(tasks, rec) == 1  # one transaction: no failure, no retry
    (topic, raw), = producer.sent
    assert topic == DLQ and len(raw) < RECORD_LIMIT_BYTES // 10
    letter = decode_dead_letter(raw)
    assert (letter.topic, letter.offset, letter.key) == (BETS, 7, "T1")
    assert letter.original_size == 900_238 and letter.original_truncated
    assert letter.original == value[:MAX_DEAD_LETTER_ORIGINAL]
    assert letter.original_sha256 == hashlib.sha256(value).hexdigest()
    assert letter.error.startswith("undecodable") and len(letter.error) <= 2_000
    assert producer.offsets == [{TopicPartition(BETS, 0): 8}]
    assert tasks.stuck() == {}


@pytest.mark.asyncio
async def test_a_record_that_cannot_be_dead_lettered_is_passed_over_and_its_partition_advances():
    producer = LimitedProducer(no_dlq=True)
    tasks = _tasks(producer)
    rec = Record(BETS, 0, 3, b"T1", b"\xff not a command")
    # batch, alone twice (poison), its letter refused once: then passed over with its offset
    assert await _until_advanced(tasks, rec) == 5
    assert producer.sent == [] and producer.offsets == [{TopicPartition(BETS, 0): 4}]
    assert tasks.stuck() == {}  # advanced: no longer failing


@pytest.mark.asyncio
async def test_readiness_reports_a_stuck_partition():
    producer = LimitedProducer()
    tasks = _tasks(producer)

    async def away(offsets: dict[TopicPartition, int], group_id: str) -> None:
        raise ConnectionError("broker away")

    producer.send_offsets_to_transaction = away  # type: ignore[method-assign]
    assert await _until_advanced(tasks, Record(BETS, 0, 1, b"T1", b"\xff"), rounds=3) == -1
    since = tasks._failing_since[0]
    assert tasks.stuck(since + STUCK_AFTER_S - 1) == {}
    assert tasks.stuck(since + STUCK_AFTER_S + 5) == {0: STUCK_AFTER_S + 5}

    class Svc:
        pass

    svc = Svc()
    svc.tasks = tasks  # type: ignore[attr-defined]
    tasks.consumer = object()  # type: ignore[assignment]
    tasks._assigned = True
    tasks.state[0] = "ready"
    tasks._failing_since[0] = since - STUCK_AFTER_S - 5  # failing for longer than STUCK_AFTER_S
    ok, body = readiness({"wagering": svc}, None)  # type: ignore[dict-item]
    assert not ok and list(body["services"]["wagering"]["stuck"]) == [0]
    del tasks._failing_since[0]
    assert readiness({"wagering": svc}, None)[0]  # type: ignore[dict-item]
