"""Time is the log's (issue 9, finding 3): an event caused by a command takes the broker's append time of the
command record, keeps the sender's claim as ``claimed_at``, and a back-dated command is refused ``clock_skew``."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from aiokafka import AIOKafkaProducer

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_command, decode_event, encode
from contracts.commands import PlaceBet
from contracts.events import BetPlaced, CommandRejected
from services.floor.dealer import Clock, TableDealer
from services.runtime.core import command
from services.rawlog import read_topic as read_log
from tests.system.late_bets import check_the_call_held_the_bets_in_time, log_bets_call_and_late_bet
from tests.system.test_cluster import SEATS, Cluster


async def test_events_take_the_log_time_and_a_back_dated_command_is_refused(kafka_bootstrap: str):
    c = Cluster(kafka_bootstrap)
    try:
        await c.start()
        d = TableDealer(c.io, "L1", punto_banco_full(), SEATS, random.Random(4), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "L1-shoe-1")
        rid = "L1-shoe-1-round-1"
        since = c.io.log.mark("L1")
        from contracts.commands import OpenRound

        await c.io.send(T.DEALING_COMMANDS, command("L1", "open-1", Clock()(), OpenRound(round_id=rid, shoe_id="L1-shoe-1")))
        await c.io.wait("L1", lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
        now = datetime.now(UTC)
        honest = command("L1", "bet-now", now, PlaceBet(round_id=rid, seat=1, player_id="player-1", wager="banker",
                                                         amount_cents=2_500))
        # a sender who back-dates its bet by five minutes (finding 3: it became an event at the claimed time)
        forged = command("L1", "bet-back-dated", now - timedelta(minutes=5), PlaceBet(
            round_id=rid, seat=2, player_id="player-2", wager="player", amount_cents=100_000))
        prod = AIOKafkaProducer(**c.settings.client_options())
        await prod.start()
        try:  # raw, as any client could: the producer even sets a record timestamp of its choosing
            for cmd in (honest, forged):
                await prod.send_and_wait(c.settings.topic(T.WAGERING_BETS), encode(cmd), key=T.key("L1"),
                                         timestamp_ms=int(cmd.issued_at.timestamp() * 1000))
        finally:
            await prod.stop()
        placed = await c.io.wait("L1", lambda e: isinstance(e.payload, BetPlaced), since, 90)
        refused = await c.io.wait("L1", lambda e: isinstance(e.payload, CommandRejected)
                                  and e.payload.command_id == "bet-back-dated", since, 90)
        assert refused.payload.reason == "clock_skew"
        records = {decode_command(r.value).command_id: r
                   for r in await read_log(c.settings, c.settings.topic(T.WAGERING_BETS))}
        for env, cid in ((placed, "bet-now"), (refused, "bet-back-dated")):
            rec = records[cid]
            assert rec.timestamp_type == 1  # LogAppendTime: the broker's clock, not the producer's
            assert env.occurred_at == datetime.fromtimestamp(rec.timestamp / 1000, UTC)
            assert env.claimed_at == decode_command(rec.value).issued_at
        assert refused.claimed_at is not None and refused.occurred_at - refused.claimed_at > timedelta(minutes=4)
        # the investigator's timeline from the raw log says the same
        log = [decode_event(r.value) for r in await read_log(c.settings, c.settings.topic(T.WAGERING_EVENTS))]
        assert [e.occurred_at for e in log if e.causation_id == "bet-back-dated"] == [refused.occurred_at]
    finally:
        await c.stop()


async def test_bets_read_after_no_more_bets_but_logged_before_it_stand(kafka_bootstrap: str, monkeypatch):
    """Bets logged before "No more bets" stand and a bet logged after it is refused ``betting_closed``,
    when the wagering service gets one record per batch and the fetcher chooses which topic's record comes
    first (``ServiceCore.catch_up``: a call read before bets the log held when it was read waits for
    them, and is read again). On one broker the fetcher mostly hands out the bets first; when it hands out
    the call first, ``Tasks.held`` counts the wait (2 of 3 rounds in the runs of the change). That the wait
    is needed is shown with fakes in ``tests/services/test_catch_up.py``; this shows it on a real broker."""
    import asyncio

    from aiokafka import TopicPartition

    import services.runtime.app as app_module
    from contracts.commands import OpenRound
    from services.runtime.tasks import partition_of

    monkeypatch.setattr(app_module, "MAX_RECORDS", 1)  # every batch holds one record
    c = Cluster(kafka_bootstrap)
    try:
        await c.start()
        d = TableDealer(c.io, "L2", punto_banco_full(), SEATS, random.Random(5), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "L2-shoe-1")
        tasks = c.instances["wagering"][0].tasks
        assert tasks is not None and tasks.consumer is not None
        p = partition_of("L2", c.settings.partitions)
        held = [TopicPartition(c.settings.topic(t), p) for t in (T.WAGERING_COMMANDS, T.WAGERING_BETS)]
        for k in range(1, 4):
            rid = f"L2-shoe-1-round-{k}"
            since = c.io.log.mark("L2")
            await c.io.send(T.DEALING_COMMANDS, command("L2", f"open-{k}", Clock()(),
                                                        OpenRound(round_id=rid, shoe_id="L2-shoe-1")))
            await c.io.wait("L2", lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
            tasks.consumer.pause(*held)  # the service reads them only once all are in the log
            await asyncio.sleep(0.6)  # a fetch in flight (at most fetch_max_wait_ms) ends first
            await log_bets_call_and_late_bet(c, "L2", k, rid)
            tasks.consumer.resume(*held)
            await check_the_call_held_the_bets_in_time(c, "L2", k, since)
        print(f"batches cut before a dealer's command: {tasks.held}")
    finally:
        await c.stop()
