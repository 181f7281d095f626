"""The whole floor on the secured broker: each service under its own principal, the dealer and bettors as
``console``, the audit reading as ``surveillance``; one full shoe, audited clean.
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
from services.runtime.kafka import ensure_topics, read_log
from tests.system.secured import SecuredBroker
from tests.system.test_floor_kafka import EXTRA, SEATS, Floor


class SecuredFloor(Floor):
    """:class:`Floor` with one principal per service (``shoe``, ``dealing``, ``wagering``, ``settlement``),
    the floor's commands sent as ``console`` and the log read as ``surveillance``."""

    def __init__(self, broker: SecuredBroker):
        super().__init__(broker.bootstrap)
        self.broker = broker
        self.settings = broker.settings("surveillance")
        self.io = KafkaFloorIO(broker.settings("console"))

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
    dealer = TableDealer(secured_floor.io, "T1", punto_banco_full(), SEATS, random.Random(5), Clock(), timeout=60)
    run = await dealer.run(shoes=1)
    assert run.rounds >= 60 and run.rejections == ["shoe_complete"], run
    rep = audit(await secured_floor.log())
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.shoes_verified == 1
    assert rep.rounds_checked == run.rounds and rep.bets_checked == run.bets
