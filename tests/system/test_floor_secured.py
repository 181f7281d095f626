"""The whole floor on the secured broker: each service under its own principal, the dealer as ``console``, the
bettors as ``bettor``, the audit reading as ``surveillance``; one full shoe, audited clean, every event
attributed; a bettor's forged "No more bets" refused by the broker on the console's topic and by the wagering
service on the bettors' own.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event
from contracts.envelope import Envelope
from croupier.audit import audit
from services.floor.dealer import Clock, TableDealer
from services.floor.io import KafkaFloorIO
from services.runtime.app import build_service
from services.rawlog import read_topic as read_log
from services.runtime.kafka import ensure_topics
from tests.system.floors import short_shoe
from tests.system.secured import SecuredBroker
from tests.system.test_floor_kafka import EXTRA, SEATS, Floor


class SecuredFloor(Floor):
    """:class:`Floor` with one principal per service (``shoe``, ``dealing``, ``wagering``, ``settlement``),
    the dealer's commands sent as ``console``, the bets as ``bettor`` and the log read as ``surveillance``."""

    def __init__(self, broker: SecuredBroker):
        super().__init__(broker.bootstrap)
        self.broker = broker
        self.settings = broker.settings("surveillance")
        self.io = KafkaFloorIO(broker.settings("console"), writers={"bettor": broker.settings("bettor")})

    async def start(self) -> None:
        await ensure_topics(self.broker.settings("admin"), T.ALL_TOPICS)
        for name in self.cores:
            await self.start_service(name)
        await self.io.start()

    async def start_service(self, name: str):  # type: ignore[no-untyped-def]
        core = self.cores[name]
        fresh = type(core)(core.entropy, core.vault) if name == "shoe" else type(core)()  # type: ignore[attr-defined]
        svc = build_service(fresh, self.broker.settings(name), extra_topics=EXTRA.get(name, ()))
        await svc.start()
        self.services[name] = svc
        return svc

    async def log(self) -> list[Envelope]:
        out = []
        for stream in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS):
            for rec in await read_log(self.settings, self.settings.topic(stream)):
                try:  # the secured broker's prefix is shared with test_acl, which writes raw probes there
                    env = decode_event(rec.value)
                except (Undecodable, UnknownMessageType):
                    continue
                if env.table_id == "T1":
                    out.append(env)
        return out


@pytest.fixture
async def secured_floor(secured_kafka: SecuredBroker) -> AsyncIterator[SecuredFloor]:
    f = SecuredFloor(secured_kafka)
    try:
        await asyncio.wait_for(f.start(), 120)
        yield f
    finally:
        await f.stop()


async def test_a_full_shoe_with_every_service_under_its_own_principal(secured_floor: SecuredFloor):
    dealer = TableDealer(secured_floor.io, "T1", short_shoe(punto_banco_full()), SEATS, random.Random(5), Clock(),
                         timeout=60)
    run = await dealer.run(shoes=1)  # a short shoe (tests/system/floors.py): to its cutting card and the reveal
    assert run.rounds >= 10 and run.rejections == ["shoe_complete"], run
    rep = audit(await secured_floor.log())
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.shoes_verified == 1
    assert rep.rounds_checked == run.rounds and rep.bets_checked == run.bets
    log = await secured_floor.log()
    assert all(e.principal for e in log)  # every event attributed
    bets = [e for e in log if type(e.payload).__name__ == "BetPlaced"]
    assert bets and {e.principal for e in bets} == {"bettor"}
    assert all(e.actor == e.payload.player_id for e in bets)


async def test_a_forged_close_betting_from_a_bettors_principal_is_refused(secured_floor: SecuredFloor):
    from datetime import datetime, timezone

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError

    from contracts.codecs import encode
    from contracts.commands import CloseBetting, LoadShoe, OpenRound, PlaceBet
    from contracts.events import BetPlaced, BettingClosed, CommandRejected
    from services.runtime.core import command

    io, broker = secured_floor.io, secured_floor.broker
    dealer = TableDealer(io, "F1", punto_banco_full(), SEATS, random.Random(6), Clock(), timeout=60)
    await dealer.open_table()
    since = io.log.mark("F1")
    await io.send(T.SHOE_COMMANDS, command("F1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=40)))
    await io.wait("F1", lambda e: type(e.payload).__name__ == "ShoeBurned", since, 60)
    for attempt in range(100):  # the dealing service may not have seen the shoe yet
        since = io.log.mark("F1")
        await io.send(T.DEALING_COMMANDS, command("F1", f"open-{attempt}", Clock()(),
                                                  OpenRound(round_id="R1", shoe_id="S")))
        env = await io.wait("F1", lambda e: type(e.payload).__name__ in ("BettingOpened", "CommandRejected"),
                            since, 60)
        if type(env.payload).__name__ == "BettingOpened":
            break
        await asyncio.sleep(0.05)
    now = datetime.now(timezone.utc)
    forged = command("F1", "forged-close", now, CloseBetting(round_id="R1"), actor="player-1")
    bettor = AIOKafkaProducer(**broker.settings("bettor").client_options())
    await bettor.start()
    try:
        # the console's topic: the broker refuses the write, nothing reaches the log
        with pytest.raises(TopicAuthorizationFailedError):
            await bettor.send_and_wait(broker.settings("bettor").topic(T.WAGERING_COMMANDS), encode(forged),
                                       key=T.key("F1"))
        # the bettors' own topic: written, and refused by the wagering service as not a bettor's command
        await bettor.send_and_wait(broker.settings("bettor").topic(T.WAGERING_BETS), encode(forged),
                                   key=T.key("F1"))
    finally:
        await bettor.stop()
    refused = await io.wait("F1", lambda e: isinstance(e.payload, CommandRejected)
                            and e.payload.command_id == "forged-close", since, 60)
    assert (refused.payload.reason, refused.principal, refused.actor) == ("wrong_topic", "bettor", "player-1")
    # betting is still open: a real bet is taken, and only the dealer's call closes the book
    await io.send(T.WAGERING_BETS, command("F1", "real-bet", Clock()(), PlaceBet(
        round_id="R1", seat=1, player_id="player-1", wager="banker", amount_cents=2_500)))
    placed = await io.wait("F1", lambda e: isinstance(e.payload, BetPlaced), since, 60)
    assert (placed.principal, placed.actor) == ("bettor", "player-1")
    await io.send(T.WAGERING_COMMANDS, command("F1", "close", Clock()(), CloseBetting(round_id="R1")))
    closed = await io.wait("F1", lambda e: isinstance(e.payload, BettingClosed), since, 60)
    assert [b.bet_id for b in closed.payload.bets] == ["real-bet"]
    assert (closed.principal, closed.actor, closed.causation_id) == ("console", "dealer-F1", "close")
