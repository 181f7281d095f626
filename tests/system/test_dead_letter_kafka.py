"""A ~0.9 MB record on every command topic is dead-lettered with its digest and the table carries on
(issue 28, item 5), on the shared broker.

Before, a 900,238-byte ``PlaceBet`` on ``wagering.bets`` was dead-lettered with its whole value (1.2 MB of
base64), over the broker's limit: the wagering service's transaction failed every 2 s for 11 minutes, partition
0 never advanced and a legitimate round stayed at ``BettingOpened``.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaProducer

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_dead_letter
from contracts.commands import LoadShoe
from contracts.envelope import MAX_DEAD_LETTER_ORIGINAL
from services.cage.core import CageCore
from services.floor.dealer import Clock, TableDealer
from services.rawlog import read_topic as read_log
from services.runtime.core import command
from tests.system.test_floor_kafka import SEATS, Floor

READER = {T.SHOE_COMMANDS: "shoe", T.SHOE_DRAWS: "shoe", T.DEALING_COMMANDS: "dealing",
          T.DEALING_OPTIONS: "dealing", T.WAGERING_COMMANDS: "wagering", T.WAGERING_BETS: "wagering",
          T.SETTLEMENT_COMMANDS: "settlement", T.CAGE_COMMANDS: "cage", T.CAGE_MARKERS: "cage"}


@pytest.fixture
async def floor(kafka_bootstrap: str) -> AsyncIterator[Floor]:
    f = Floor(kafka_bootstrap)
    f.cores["cage"] = CageCore()  # the floor's four services and the cage, the reader of cage.commands
    await f.start()
    try:
        yield f
    finally:
        await f.stop()


def _huge(topic: str) -> bytes:
    """A 900,238-byte command whose ids are 450,000 characters (undecodable: over the ids' bound)."""
    ids = "x" * 450_000
    body = (b'{"command_id":"' + ids.encode() + b'","table_id":"D1","issued_at":"2026-01-01T00:00:00Z",'
            b'"actor":"a","payload":{"type":"place_bet","round_id":"' + ids.encode() + b'"}, "t":"'
            + topic.encode() + b'"}')
    return body + b" " * (900_238 - len(body))


async def test_a_900_kb_record_on_every_command_topic_is_dead_lettered_and_the_table_carries_on(floor: Floor):
    assert set(READER) == set(T.COMMAND_TOPICS)
    producer = AIOKafkaProducer(**floor.settings.client_options(), max_request_size=1_048_576)
    await producer.start()
    try:
        for topic in T.COMMAND_TOPICS:
            await producer.send_and_wait(floor.settings.topic(topic), _huge(topic), key=b"D1")
    finally:
        await producer.stop()
    # the table on the same partitions plays a round meanwhile
    dealer = TableDealer(floor.io, "D1", punto_banco_full(), SEATS, random.Random(3), Clock(), timeout=30)
    await dealer.open_table()
    await floor.io.send(T.SHOE_COMMANDS, command("D1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=30)))
    assert await dealer.play_round("S", "S-1")
    assert await dealer.play_round("S", "S-2")
    for svc in ("shoe", "dealing", "wagering", "settlement", "cage"):
        mine = {floor.settings.topic(t) for t, s in READER.items() if s == svc}
        for _ in range(100):
            letters = [decode_dead_letter(r.value) for r in await read_log(floor.settings,
                                                                           floor.settings.topic(T.dlq(svc)))]
            if len(letters) >= len(mine):
                break
            await asyncio.sleep(0.1)
        assert {d.topic for d in letters} == mine, svc
        for d in letters:
            original = _huge(floor.settings.base(d.topic))
            assert (d.original_size, d.original_truncated) == (900_238, True)
            assert d.original_sha256 == hashlib.sha256(original).hexdigest()
            assert d.original == original[:MAX_DEAD_LETTER_ORIGINAL] and "undecodable" in d.error
        assert floor.services[svc].tasks.stuck() == {}  # type: ignore[union-attr]
