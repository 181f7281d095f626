"""The four services against a real Kafka broker: whole shoes at two tables audited against the rules core,
restarts of every service mid-shoe, rejections, duplicates, dead letters."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timezone

import pytest

from baccarat.table import Limits, no_vig_dragon, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.codecs import decode_dead_letter, decode_event, encode
from contracts.commands import CloseBetting, LoadShoe, OpenRound, PlaceBet
from contracts.envelope import Envelope
from contracts.events import (
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BetWithdrawn,
    RoundResolved,
    RoundSettled,
)
from croupier.audit import audit
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import KafkaFloorIO
from services.runtime.app import Service, build_service
from services.runtime.core import command
from services.rawlog import read_topic as read_log
from services.runtime.kafka import ensure_topics
from services.runtime.host import NullPublisher, ServiceHost
from services.projection.core import ProjectionCore
from services.projection.digest import state_digest
from tests.services.helpers import make_cores
from tests.system.floors import short_shoe, short_spec
from tests.system.conftest import broker_settings

SEATS = [Seat(i, f"player-{i}") for i in range(1, 6)]
EXTRA = {"dealing": (T.SHOE_DRAWS,)}


class Floor:
    """Four services in this process on a real broker, under a topic prefix of their own."""

    def __init__(self, bootstrap: str, projection: bool = False):
        self.settings = broker_settings(bootstrap, topic_prefix=f"t{uuid.uuid4().hex[:8]}.")
        self.cores = make_cores(seed=17)
        if projection:
            self.cores["projection"] = ProjectionCore()
        self.services: dict[str, Service] = {}
        self.io = KafkaFloorIO(self.settings)

    async def start(self) -> None:
        await ensure_topics(self.settings, T.ALL_TOPICS)
        for name in self.cores:
            await self.start_service(name)
        await self.io.start()

    async def start_service(self, name: str) -> Service:
        core = self.cores[name]
        fresh = type(core)(core.entropy, core.vault) if name == "shoe" else type(core)()  # type: ignore[attr-defined]
        svc = build_service(fresh, self.settings, extra_topics=EXTRA.get(name, ()))
        await svc.start()
        await svc.wait_ready()
        self.services[name] = svc
        return svc

    async def stop_service(self, name: str) -> None:
        await self.services.pop(name).stop()

    async def stop(self) -> None:
        await self.io.stop()
        for name in list(self.services):
            await self.stop_service(name)

    async def log(self) -> list[Envelope]:
        out = []
        for stream in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS):
            for rec in await read_log(self.settings, self.settings.topic(stream)):
                out.append(decode_event(rec.value))
        return out


@pytest.fixture
async def floor(kafka_bootstrap: str) -> AsyncIterator[Floor]:
    f = Floor(kafka_bootstrap)
    await f.start()
    try:
        yield f
    finally:
        await f.stop()


def _wagers_settled(events: list[Envelope], table_id: str) -> set[str]:
    return {e.payload.wager for e in events if e.table_id == table_id and isinstance(e.payload, BetSettled)}


async def test_two_tables_deal_whole_shoes_and_every_settlement_checks_out(floor: Floor):
    # short shoes (tests/system/floors.py): every round to the cutting card, the last round and the reveal
    tables = {"T1": short_shoe(punto_banco_full()), "T2": short_shoe(no_vig_dragon(panda=True))}
    dealers = [TableDealer(floor.io, tid, cfg, SEATS, random.Random(tid), Clock(), timeout=60)
               for tid, cfg in tables.items()]
    runs = await asyncio.gather(*(d.run(shoes=1) for d in dealers))
    for r in runs:
        assert r.rounds >= 10 and r.rejections == ["shoe_complete"], r
    log = await floor.log()
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.shoes_verified == 2
    assert rep.rounds_checked == sum(r.rounds for r in runs)
    assert rep.bets_checked == sum(r.bets for r in runs)
    for tid, cfg in tables.items():
        assert _wagers_settled(log, tid) == {w.value for w in cfg.wagers}
    resolved = [e for e in log if isinstance(e.payload, RoundResolved)]
    assert len(resolved) == sum(r.rounds for r in runs)


async def test_every_service_restarts_mid_shoe_and_the_shoe_completes(floor: Floor):
    dealer = TableDealer(floor.io, "T1", short_shoe(punto_banco_full()), SEATS, random.Random(9), Clock(),
                         timeout=60)
    await dealer.open_table()
    shoe_id = "T1-shoe-1"
    since = floor.io.log.mark("T1")
    await floor.io.send(T.SHOE_COMMANDS, command("T1", "load-1", Clock()(), LoadShoe(shoe_id=shoe_id, cut_at=77,
                                                                                     rules=short_spec())))
    await floor.io.wait("T1", lambda e: type(e.payload).__name__ == "ShoeBurned", since, 60)

    # settlement dies between receiving a round's result and publishing its settlements
    settlement = floor.services["settlement"]
    assert settlement.tasks is not None
    real = settlement.tasks._commit
    died = asyncio.Event()

    async def die_on_round_4(p, decisions, letters, offsets, handled=0, **kw):  # type: ignore[no-untyped-def]
        if any(getattr(e.payload, "round_id", "").endswith("round-4") for d in decisions for e in d.events):
            died.set()
            raise ConnectionError("settlement process killed")
        await real(p, decisions, letters, offsets, handled, **kw)

    settlement.tasks._commit = die_on_round_4  # type: ignore[method-assign]
    # a short shoe deals about 12 rounds (tests/system/floors.py): every restart comes before its end
    restarts = {2: "shoe", 6: "dealing", 8: "wagering"}
    n = 0
    while True:
        n += 1
        rid = f"{shoe_id}-round-{n}"
        if n == 4:
            # play round 4 by hand: its settlement never comes from the dying process
            since = floor.io.log.mark("T1")
            await floor.io.send(T.DEALING_COMMANDS, command("T1", "open-4", Clock()(), OpenRound(round_id=rid,
                                                                                               shoe_id=shoe_id)))
            await floor.io.wait("T1", lambda e: getattr(e.payload, "round_id", "") == rid
                                and type(e.payload).__name__ == "BettingOpened", since, 60)
            await floor.io.send(T.WAGERING_BETS, command("T1", "bet-4", Clock()(), PlaceBet(
                round_id=rid, seat=1, player_id="player-1", wager="banker", amount_cents=10_000)))
            await floor.io.send(T.WAGERING_COMMANDS, command("T1", "close-4", Clock()(), CloseBetting(round_id=rid)))
            await asyncio.wait_for(died.wait(), 60)
            await floor.stop_service("settlement")
            await floor.start_service("settlement")
            await floor.io.wait("T1", lambda e: isinstance(e.payload, RoundSettled) and e.payload.round_id == rid,
                                since, 60)
            continue
        if n in restarts:
            await floor.stop_service(restarts[n])
            await floor.start_service(restarts[n])
        if not await dealer.play_round(shoe_id, rid):
            break
    assert dealer.run_state.rejections == ["shoe_complete"] and n > 8  # past every restart above
    log = await floor.log()
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    settled = [e.payload for e in log if isinstance(e.payload, BetSettled)]
    assert len(settled) == len({s.bet_id for s in settled})  # no bet settled twice
    books = {b.bet_id for e in log if type(e.payload).__name__ == "BettingClosed" for b in e.payload.bets}
    assert books == {s.bet_id for s in settled}  # and none left unsettled


async def test_rejections_and_duplicates_and_the_table_carries_on(floor: Floor):
    cfg = punto_banco_full(limits={Wager.TIE: Limits(500, 10_000)})
    dealer = TableDealer(floor.io, "T9", cfg, SEATS, random.Random(1), Clock(), timeout=60)
    await dealer.open_table()
    since = floor.io.log.mark("T9")
    await floor.io.send(T.SHOE_COMMANDS, command("T9", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=30)))
    await floor.io.wait("T9", lambda e: type(e.payload).__name__ == "ShoeBurned", since, 60)
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def bet(cid: str, wager: str = "banker", amount: int = 2500) -> object:
        return command("T9", cid, at, PlaceBet(round_id="S-1", seat=1, player_id="player-1", wager=wager,
                                               amount_cents=amount))

    for attempt in range(100):  # the dealing service may not have seen the shoe yet
        since = floor.io.log.mark("T9")
        cid = f"open-{attempt}"
        await floor.io.send(T.DEALING_COMMANDS, command("T9", cid, at, OpenRound(round_id="S-1", shoe_id="S")))
        env = await floor.io.wait("T9", lambda e: type(e.payload).__name__ == "BettingOpened"
                                  or getattr(e.payload, "command_id", "") == cid, since, 60)
        if type(env.payload).__name__ == "BettingOpened":
            break
        await asyncio.sleep(0.05)
    for b in (bet("ok"), bet("over", "tie", 20_000), bet("disabled", "dragon_7"), bet("ok")):
        await floor.io.send(T.WAGERING_BETS, b)  # type: ignore[arg-type]
    await floor.io.send(T.WAGERING_COMMANDS, command("T9", "close", at, CloseBetting(round_id="S-1")))
    await asyncio.sleep(0.01)  # the log's times are milliseconds: a bet in the call's own millisecond stands
    await floor.io.send(T.WAGERING_BETS, bet("late"))  # type: ignore[arg-type]
    # the late bet, on the bettors' topic, may be read before the call (an earlier fetch): then the call
    # returns it; read after it, it is refused. Either way it is never in the book.
    await floor.io.wait("T9", lambda e: getattr(e.payload, "command_id", "") == "late"
                        or (isinstance(e.payload, BetWithdrawn) and e.payload.bet_id == "late"), since, 60)
    await floor.io.wait("T9", lambda e: isinstance(e.payload, RoundSettled), since, 60)
    log = [e for e in await floor.log() if e.table_id == "T9"]
    reasons = {e.payload.command_id: e.payload.reason for e in log if isinstance(e.payload, BetRejected)}
    returned = [(e.payload.bet_id, e.payload.reason) for e in log if isinstance(e.payload, BetWithdrawn)]
    placed = [e.payload.bet_id for e in log if isinstance(e.payload, BetPlaced)]
    if returned:
        assert returned == [("late", "betting_closed")] and placed == ["ok", "late"]
        assert reasons == {"over": "over_table_max", "disabled": "wager_not_offered"}
    else:
        assert reasons == {"over": "over_table_max", "disabled": "wager_not_offered", "late": "betting_closed"}
        assert placed == ["ok"]  # the duplicate: nothing
    assert [b.bet_id for e in log if isinstance(e.payload, BettingClosed) for b in e.payload.bets] == ["ok"]
    assert [e.payload.bet_id for e in log if isinstance(e.payload, BetSettled)] == ["ok"]
    assert await dealer.play_round("S", "S-2")  # and the table carries on


async def test_garbage_is_dead_lettered_and_unknown_types_skipped_and_services_keep_serving(floor: Floor):
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(**floor.settings.client_options())
    await producer.start()
    try:
        unknown = encode(command("G1", "u1", datetime(2026, 1, 1, tzinfo=timezone.utc),
                                 CloseBetting(round_id="x"))).replace(b'"close_betting"', b'"teleport_chips"')
        for topic in (T.SHOE_COMMANDS, T.DEALING_COMMANDS, T.WAGERING_COMMANDS, T.SETTLEMENT_COMMANDS):
            await producer.send_and_wait(floor.settings.topic(topic), b"\x00\xff garbage", key=b"G1")
            await producer.send_and_wait(floor.settings.topic(topic), unknown, key=b"G1")
    finally:
        await producer.stop()
    for svc in ("shoe", "dealing", "wagering", "settlement"):
        for _ in range(200):
            recs = await read_log(floor.settings, floor.settings.topic(T.dlq(svc)))
            if recs and floor.services[svc].host.skipped >= 1:
                break
            await asyncio.sleep(0.1)
        letters = [decode_dead_letter(r.value) for r in recs]
        assert [d.original for d in letters] == [b"\x00\xff garbage"], svc
        assert "undecodable" in letters[0].error and letters[0].topic == floor.settings.topic(
            {"shoe": T.SHOE_COMMANDS, "dealing": T.DEALING_COMMANDS, "wagering": T.WAGERING_COMMANDS,
             "settlement": T.SETTLEMENT_COMMANDS}[svc])
        assert floor.services[svc].host.skipped == 1
    # still serving: a table plays a round
    dealer = TableDealer(floor.io, "G1", punto_banco_full(), SEATS, random.Random(2), Clock(), timeout=60)
    await dealer.open_table()
    await floor.io.send(T.SHOE_COMMANDS, command("G1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=30)))
    assert await dealer.play_round("S", "S-1")


async def test_projection_replay_from_zero_equals_live(kafka_bootstrap: str):
    floor = Floor(kafka_bootstrap, projection=True)
    await floor.start()
    try:
        tables = {"P1": short_shoe(punto_banco_full()), "P2": short_shoe(no_vig_dragon(panda=True))}
        dealers = [TableDealer(floor.io, tid, cfg, SEATS, random.Random(tid), Clock(), timeout=60)
                   for tid, cfg in tables.items()]
        runs = await asyncio.gather(*(d.run(shoes=1) for d in dealers))
        assert all(r.rejections == ["shoe_complete"] for r in runs)
        live = floor.services["projection"].host

        async def read(topic: str) -> list:
            return await read_log(floor.settings, topic)

        replica = ServiceHost(ProjectionCore(), floor.settings, NullPublisher())
        for _ in range(100):  # the live projection may still be catching up with the last round
            await replica.rebuild(read)
            if state_digest(replica.runner.tables) == state_digest(live.runner.tables):
                break
            await asyncio.sleep(0.2)
        assert state_digest(replica.runner.tables) == state_digest(live.runner.tables)
        assert sorted(live.runner.tables) == ["P1", "P2"]
        for tid in tables:
            st = live.runner.tables[tid].state
            settled = [e.payload.table_result for e in await floor.log()
                       if e.table_id == tid and isinstance(e.payload, RoundSettled)]
            assert st.ledger.table_result(tid) == sum(settled)
            assert len(st.results(f"{tid}-shoe-1")) == next(r.rounds for r in runs if r.table_id == tid)
        odds = [decode_event(r.value).payload for r in await read(floor.settings.topic(T.PROJECTION_ODDS))]
        cards = sum(type(e.payload).__name__ == "CardDealt" for e in await floor.log())
        assert len(odds) >= 2 * cards > 200 and {o.view for o in odds} == {"public", "surveillance"}
    finally:
        await floor.stop()
