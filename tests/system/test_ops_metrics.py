"""``croupier serve --metrics-port`` and the query API's ``/metrics`` after a short floor on a real broker: every
named metric is exposed, with the counts the floor's work caused (checked against the log where the log
says it), and a read-only replica (``croupier api``) reports its own."""

from __future__ import annotations

import asyncio
import random
import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

import services
from baccarat.table import Limits, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.commands import LoadShoe, OpenRound, PlaceBet
from contracts.events import BetRejected, BettingOpened, OddsUpdated, ShoeBurned
from croupier.serve import api_alone, serve
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import KafkaFloorIO
from services.runtime.app import Service
from services.runtime.core import command
from services.rawlog import read_topic as read_log
from services.runtime.kafka import ensure_topics
from services.runtime.tasks import partition_of
from tests.system.conftest import broker_settings

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
TOKENS = {"analyst": "analyst-token-0123456789", "surveillance": "surveillance-token-0123456789"}
TABLE = "OM1"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class OverLimitDealer(TableDealer):
    """Every round also carries a tie bet over the table's maximum (one ``over_table_max`` a round)."""

    def extra_bets(self, round_id: str) -> list[PlaceBet]:
        return [PlaceBet(round_id=round_id, seat=1, player_id="player-1", wager="tie", amount_cents=20_000)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def scrape(client: httpx.AsyncClient, url: str) -> Samples:
    """Every sample of the exposition at ``url``: {(sample name, sorted labels): value}."""
    r = await client.get(url)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(r.text) for s in fam.samples}


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def series(samples: Samples, name: str, **labels: str) -> list[dict[str, str]]:
    return [dict(ls) for (n, ls), _ in samples.items() if n == name and set(labels.items()) <= set(ls)]


async def until(check: Callable[[], Any], what: str, timeout: float = 120.0) -> Any:
    """Poll the coroutine function ``check`` until it returns something truthy (that is returned)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.25)
    raise AssertionError(f"{what}: never true (last: {last!r})")


async def test_every_metric_after_a_short_floor(kafka_bootstrap: str, monkeypatch):
    # a zombie fences the wagering task by its transactional id below: a producer per task (exactly_once)
    settings = broker_settings(kafka_bootstrap, topic_prefix=f"om{uuid.uuid4().hex[:8]}.", partitions=2,
                               snapshot_interval_s=1.0, processing_guarantee="exactly_once")
    created: dict[str, Service] = {}
    real_create = services.create

    def create(name: str, s: Any = None) -> Service:
        created[name] = svc = real_create(name, s)
        return svc

    monkeypatch.setattr(services, "create", create)
    api_port, metrics_port, replica_port = _free_port(), _free_port(), _free_port()
    ops, api, replica_api = (f"http://127.0.0.1:{p}" for p in (metrics_port, api_port, replica_port))
    await ensure_topics(settings, T.ALL_TOPICS)
    stop, replica_stop = asyncio.Event(), asyncio.Event()
    run = asyncio.create_task(serve(list(services.NAMES), settings, stop, api_port=api_port, tokens=TOKENS,
                                    metrics_port=metrics_port))
    io = KafkaFloorIO(settings)
    replica: asyncio.Task[None] | None = None
    async with httpx.AsyncClient(timeout=10) as client:
        try:
            async def ready(base: str) -> bool:
                try:
                    return (await client.get(f"{base}/health/ready")).status_code == 200
                except httpx.TransportError:
                    return False

            await until(lambda: ready(ops), "the serve process ready")
            # the registry is the process's: other tests in this pytest process counted before this one, so
            # the counters are compared as increases over this baseline
            base = await scrape(client, f"{ops}/metrics")

            def grew(m: Samples, name: str, **labels: str) -> float:
                return total(m, name, **labels) - total(base, name, **labels)

            await io.start()
            clock = Clock(datetime.now(UTC))
            cfg = punto_banco_full(limits={Wager.TIE: Limits(500, 10_000)})
            dealer = OverLimitDealer(io, TABLE, cfg, SEATS, random.Random(3), clock, timeout=90)
            await dealer.open_table()
            since = io.log.mark(TABLE)
            await io.send(T.SHOE_COMMANDS, command(TABLE, "load", clock(), LoadShoe(shoe_id="S", cut_at=40)))
            await io.wait(TABLE, lambda e: isinstance(e.payload, ShoeBurned), since, 90)
            # a zombie takes the wagering task's transactional id: its next transaction is fenced, aborted,
            # the task restored and the batch re-read
            p = partition_of(TABLE, settings.partitions)
            zombie = AIOKafkaProducer(**settings.client_options(), enable_idempotence=True,
                                      transactional_id=f"{settings.group_prefix}.{settings.topic_prefix}"
                                                       f"wagering.task-{p}")
            await zombie.start()
            await zombie.stop()
            for n in range(1, 4):
                assert await dealer.play_round("S", f"S-{n}")
            garbage = AIOKafkaProducer(**settings.client_options())
            await garbage.start()
            try:
                await garbage.send_and_wait(settings.topic(T.DEALING_COMMANDS), b"\x00\xff garbage", key=T.key(TABLE))
            finally:
                await garbage.stop()
            since = io.log.mark(TABLE)
            await io.send(T.DEALING_COMMANDS, command(TABLE, "open-4", clock(), OpenRound(round_id="S-4", shoe_id="S")))
            await io.wait(TABLE, lambda e: isinstance(e.payload, BettingOpened), since, 90)

            async def settled() -> Samples | None:
                m = await scrape(client, f"{ops}/metrics")
                quiet = total(m, "croupier_consumer_lag") == 0 and len(series(m, "croupier_consumer_lag")) == sum(
                    len(svc.host.subscribed_topics) * settings.partitions for svc in created.values())
                done = (grew(m, "croupier_dead_letters_total", service="dealing") >= 1
                        and total(m, "croupier_open_rounds", service="dealing", table=TABLE) == 1
                        and all(grew(m, "croupier_checkpoints_total", service=s) > 0 for s in services.NAMES))
                return m if quiet and done else None

            m = await until(settled, "the floor's work in the metrics, nothing left to consume")
            log = {s: [decode_event(r.value) for r in await read_log(settings, settings.topic(s))]
                   for s in (T.WAGERING_EVENTS, T.PROJECTION_ODDS)}
            for name in services.NAMES:
                svc = created[name]
                assert grew(m, "croupier_messages_handled_total", service=name) > 0, name
                assert grew(m, "croupier_handler_seconds_count", service=name) == grew(
                    m, "croupier_messages_handled_total", service=name), name
                assert grew(m, "croupier_transaction_seconds_count", service=name) > 0, name
                assert total(m, "croupier_restore_seconds_count", service=name) >= settings.partitions, name
                assert total(m, "croupier_tasks", service=name, state="ready") == settings.partitions, name
                assert total(m, "croupier_ready", service=name) == 1, name
                assert total(m, "croupier_tables", service=name) == 1, name  # the one table, nothing more
                want = {(svc.host.settings.base(t), str(q)) for t in svc.host.subscribed_topics
                        for q in range(settings.partitions)}
                assert {(s["topic"], s["partition"]) for s in series(m, "croupier_consumer_lag", service=name)} == want
                # only the table's task handled records, so only it has checkpointed
                assert [s["partition"] for s in series(m, "croupier_snapshot_age_seconds", service=name)] == [str(p)]
            refused = [e.payload for e in log[T.WAGERING_EVENTS] if isinstance(e.payload, BetRejected)]
            # each round's over-limit tie bet is refused once: over_table_max, or betting_closed when the
            # fenced batch's re-read took "No more bets" first (across batches the call wins)
            extra = [r for r in refused if r.wager == "tie" and r.amount_cents == 20_000]
            assert len(extra) == 3 and {r.reason for r in extra} <= {"over_table_max", "betting_closed"}
            assert any(r.reason == "over_table_max" for r in extra)
            for reason in {r.reason for r in refused}:  # the metric counts what the log holds, once
                assert grew(m, "croupier_messages_rejected_total", service="wagering", type="place_bet",
                            reason=reason) == sum(1 for r in refused if r.reason == reason), reason
            assert grew(m, "croupier_transaction_aborts_total", service="wagering", fenced="true") >= 1
            assert grew(m, "croupier_dead_letters_total", service="dealing", reason="undecodable") == 1
            for view in ("public", "surveillance"):
                published = sum(1 for e in log[T.PROJECTION_ODDS]
                                if isinstance(e.payload, OddsUpdated) and e.payload.view == view)
                assert published > 0
                assert grew(m, "croupier_odds_latency_seconds_count", view=view) == published, view
            assert total(m, "croupier_open_rounds", service="settlement", table=TABLE) == 1  # S-4: not settled
            assert total(m, "croupier_broker_reachable") == 1
            assert total(m, "process_resident_memory_bytes") > 0

            assert (await client.get(f"{ops}/health/live")).json()["live"] is True
            body = (await client.get(f"{ops}/health/ready")).json()
            assert body["ready"] is True and body["broker_reachable"] is True
            assert {n: s["tasks"] for n, s in body["services"].items()} == {
                n: {"ready": settings.partitions} for n in services.NAMES}
            # the API beside the projection: the same registry, and its own requests counted by route
            for _ in range(2):
                assert (await client.get(f"{api}/health/ready")).status_code == 200
            a = await scrape(client, f"{api}/metrics")
            assert total(a, "croupier_api_requests_total", route="/health/ready", status="200") >= 2
            assert total(a, "croupier_messages_handled_total", service="projection") >= total(
                m, "croupier_messages_handled_total", service="projection")
            live_digest = (await client.get(f"{api}/digest", headers={"Authorization": f"Bearer {TOKENS['analyst']}"})).json()
            assert "digest" not in (await client.get(f"{api}/health")).json()

            # a read-only replica (croupier api) restores from the projection's checkpoint and reports itself
            replica = asyncio.create_task(api_alone(settings, replica_port, tokens=TOKENS, stop=replica_stop))
            await until(lambda: ready(replica_api), "the replica ready")

            async def same_digest() -> bool:
                r = await client.get(f"{replica_api}/digest",
                                     headers={"Authorization": f"Bearer {TOKENS['surveillance']}"})
                return r.status_code == 200 and r.json() == live_digest

            await until(same_digest, "the replica's digest equals the live projection's")
            r = await scrape(client, f"{replica_api}/metrics")
            assert total(r, "croupier_restore_seconds_count", service="projection-replica", source="snapshot") >= 1
            assert total(r, "croupier_tables", service="projection-replica") == 1
            assert total(r, "croupier_ready", service="projection-replica") == 1
            assert series(r, "croupier_consumer_lag", service="projection-replica")
            assert not series(r, "croupier_snapshot_age_seconds", service="projection-replica")  # writes none
            assert not series(r, "croupier_transaction_seconds_count", service="projection-replica")
        finally:
            replica_stop.set()
            if replica is not None:
                await replica
            stop.set()
            await run
            await io.stop()
