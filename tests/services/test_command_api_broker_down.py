"""No command left hanging: with the broker unreachable (nothing listening) or silent (a listener that never
answers, as a broker stopped mid-request looks from the client), a command API request is answered 503
``broker_unavailable`` within its wait, and the producer that held the command is abandoned (so it cannot
deliver it when the broker comes back: the dealer's retry is the only copy)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from services.command_api.gateway import CommandGateway, KafkaCommandBus
from services.command_api.http import ANSWER_GRACE_S, create_command_api
from services.command_api.server import wall_clock
from services.runtime.settings import Settings

TOKENS = {"dealer": "dealer-token-0123456789"}
H = {"Authorization": f"Bearer {TOKENS['dealer']}"}
#: the request's wait (ms): short, so the test is quick; the claim is the same at the default 10 s
WAIT_MS = 1500


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def silent_broker() -> AsyncIterator[int]:
    """A listener that takes connections and never answers (a broker gone quiet); yields its port."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(4096):
            pass

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for w in held:
            w.close()
        server.close()


def bus_at(port: int) -> KafkaCommandBus:
    """A gateway bus whose broker was reachable once (the table is known) and is not now."""
    bus = KafkaCommandBus(Settings(bootstrap_servers=f"127.0.0.1:{port}", topic_prefix="down-"))
    bus.index.tables.add("T1")
    return bus


async def seat(bus: KafkaCommandBus, key: str) -> tuple[httpx.Response, float]:
    gw = CommandGateway(bus, wall_clock)
    app = create_command_api(gw, TOKENS)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as c:
        t0 = time.monotonic()
        r = await c.post(f"/tables/T1/seats?wait_ms={WAIT_MS}", json={"actor": "d-1", "seat": 1, "player_id": "p-1"},
                         headers={**H, "Idempotency-Key": key})
        return r, time.monotonic() - t0


async def test_an_unreachable_broker_is_a_503_within_the_wait():
    bus = bus_at(free_port())  # nothing listens there
    r, took = await seat(bus, "seat-1")
    assert r.status_code == 503, r.text
    detail = r.json()["detail"]
    assert detail["reason"] == "broker_unavailable"
    assert "will not be delivered later" in detail["detail"] and "same request id" in detail["detail"]
    assert took < WAIT_MS / 1000 + ANSWER_GRACE_S, took
    assert bus._producers == {}  # nothing left that could deliver it
    await bus.stop()


async def test_a_silent_broker_is_a_503_within_the_wait_and_the_command_is_dropped():
    async with silent_broker() as port:
        bus = bus_at(port)
        r, took = await seat(bus, "seat-1")
        assert r.status_code == 503, r.text
        assert r.json()["detail"]["reason"] == "broker_unavailable"
        assert "did not acknowledge the command within" in r.json()["detail"]["detail"]
        assert WAIT_MS / 1000 <= took < WAIT_MS / 1000 + ANSWER_GRACE_S, took
        assert bus._producers == {}  # the producer holding the command was abandoned
        # the retry (same key) is answered the same way, again within its wait: no request hangs
        r2, took2 = await seat(bus, "seat-1")
        assert r2.status_code == 503 and took2 < WAIT_MS / 1000 + ANSWER_GRACE_S
        await bus.stop()
