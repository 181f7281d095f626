"""On a cluster a dealer's "No more bets" and the bets before it come from different brokers (issue 8).

``wagering.commands`` and ``wagering.bets`` are created with each partition of the one led by broker 1 and
of the other by broker 2. Bets, the call and a late bet are logged while the wagering service is not
fetching them; then broker 2 is paused (SIGSTOP), so the call is read and the bets logged before it are
not. The call must wait for them (``ServiceCore.catch_up``, ``Tasks.caught_up``): with the wait, the bets
stand; without it (``catch_up = ()``), the call is decided with no bets and they are refused
``betting_closed`` (checked when the test was written).
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
from contracts.commands import CloseBetting, OpenRound, PlaceBet
from contracts.events import BetRejected, BettingClosed, BetWithdrawn, RoundSettled
from services.floor.dealer import Clock, TableDealer
from services.runtime.core import command
from services.runtime.kafka import topic_config
from services.runtime.tasks import _position, partition_of
from tests.system.test_cluster import SEATS, Cluster
from tests.system.twobrokers import TwoBrokers, start_two_brokers


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoBrokers]:
    cluster = start_two_brokers(Path(tmp_path_factory.mktemp("two-brokers")))
    try:
        yield cluster
    finally:
        cluster.stop()


async def _split_wagering_topics(c: Cluster) -> None:
    """The wagering service's two command topics, every partition of one on broker 1, of the other on 2."""
    s = c.settings
    admin = AIOKafkaAdminClient(**s.client_options())
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic(s.topic(base), -1, -1, replica_assignments={p: [node] for p in range(s.partitions)},
                     topic_configs=topic_config(base))
            for base, node in ((T.WAGERING_COMMANDS, 1), (T.WAGERING_BETS, 2))])
    finally:
        await admin.close()


async def test_bets_led_by_a_paused_broker_stand_when_the_call_is_read_first(two_brokers: TwoBrokers):
    c = Cluster(two_brokers.bootstrap)
    try:
        await _split_wagering_topics(c)
        await c.start()
        d = TableDealer(c.io, "S1", punto_banco_full(), SEATS, random.Random(7), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "S1-shoe-1")
        tasks = c.instances["wagering"][0].tasks
        assert tasks is not None and tasks.consumer is not None
        p = partition_of("S1", c.settings.partitions)
        calls, bets = (TopicPartition(c.settings.topic(t), p) for t in (T.WAGERING_COMMANDS, T.WAGERING_BETS))
        for k in (1, 2):
            rid = f"S1-shoe-1-round-{k}"
            since = c.io.log.mark("S1")
            await c.io.send(T.DEALING_COMMANDS, command("S1", f"open-{k}", Clock()(),
                                                        OpenRound(round_id=rid, shoe_id="S1-shoe-1")))
            await c.io.wait("S1", lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
            tasks.consumer.pause(calls, bets)  # logged while the service is not fetching them
            await asyncio.sleep(0.6)  # a fetch in flight (at most fetch_max_wait_ms) ends first

            def bet(n: int) -> object:
                seat = 1 + (n - 1) % len(SEATS)  # bet 4 is seat 1's second bet
                return command("S1", f"bet-{k}-{n}", Clock()(), PlaceBet(
                    round_id=rid, seat=seat, player_id=f"player-{seat}", wager="banker" if n < 4 else "player",
                    amount_cents=2_500))

            for n in (1, 2, 3):
                await c.io.send(T.WAGERING_BETS, bet(n))
            await c.io.send(T.WAGERING_COMMANDS, command("S1", f"close-{k}", Clock()(), CloseBetting(round_id=rid)))
            call_next = _position(tasks.consumer, calls)
            assert call_next is not None
            await asyncio.sleep(0.01)  # the late bet gets a later log time than the call
            await c.io.send(T.WAGERING_BETS, bet(4))
            held = tasks.held
            two_brokers.pause(2)  # the bets' leader: the call comes from broker 1, the bets from nowhere
            try:
                tasks.consumer.resume(calls, bets)
                deadline = time.monotonic() + 1.5
                while (_position(tasks.consumer, calls) or 0) <= call_next and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)  # until the call has been handed to the service
                read_first = (_position(tasks.consumer, calls) or 0) > call_next
                await asyncio.sleep(0.2)  # it is being decided (or, with the wait, its batch was cut)
            finally:
                two_brokers.resume(2)
            assert read_first, "the call was not read while the bets' leader was paused"
            closed = await c.io.wait("S1", lambda e: isinstance(e.payload, BettingClosed), since, 90)
            assert sorted(b.bet_id for b in closed.payload.bets) == [f"bet-{k}-{n}" for n in (1, 2, 3)], k

            def fourth_refused(e: object) -> bool:
                x = e.payload  # type: ignore[attr-defined]
                return ((isinstance(x, BetWithdrawn) and x.bet_id == f"bet-{k}-4")
                        or (isinstance(x, BetRejected) and e.causation_id == f"bet-{k}-4"))  # type: ignore[attr-defined]

            fourth = await c.io.wait("S1", fourth_refused, since, 90)
            assert fourth.payload.reason == "betting_closed"
            await c.io.wait("S1", lambda e: isinstance(e.payload, RoundSettled), since, 90)
            assert tasks.held > held, k  # the call's batch was cut and read again
    finally:
        await c.stop()
