"""services.runtime.ops.serve_http and bind_listener: a taken port is a PortTaken at the caller, never
uvicorn's ``sys.exit(3)`` (a CI run's demo lost its pit's port to another test between the check and the
bind; the SystemExit escaped the event loop and broke the next test's setup too)."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from croupier.serving import PortTaken as ServingPortTaken
from croupier.serving import check_port
from services.runtime.ops import PortTaken, bind_listener, serve_http


def _app() -> Starlette:
    async def hello(_request):
        return PlainTextResponse("hello")

    return Starlette(routes=[Route("/", hello)])


def _taken() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, s.getsockname()[1]


async def test_a_taken_port_is_a_port_taken_not_a_system_exit():
    holder, port = _taken()
    try:
        with pytest.raises(PortTaken, match=f"127.0.0.1:{port} is already in use"):
            await serve_http(_app(), "127.0.0.1", port, asyncio.Event())
        with pytest.raises(PortTaken):
            bind_listener("127.0.0.1", port)
        with pytest.raises(PortTaken):
            check_port("127.0.0.1", port)
    finally:
        holder.close()
    assert ServingPortTaken is PortTaken  # croupier's commands catch the one class


async def test_a_bound_listener_holds_its_port_then_serves_and_is_closed_after():
    sock = bind_listener("127.0.0.1", 0)
    port = sock.getsockname()[1]
    # held: nobody else can bind it meanwhile, with SO_REUSEADDR or without
    with pytest.raises(PortTaken):
        bind_listener("127.0.0.1", port)
    with pytest.raises(PortTaken):
        check_port("127.0.0.1", port)
    stop = asyncio.Event()
    server = asyncio.create_task(serve_http(_app(), "127.0.0.1", port, stop, sock=sock))
    async with httpx.AsyncClient() as client:
        for _ in range(200):
            try:
                r = await client.get(f"http://127.0.0.1:{port}/")
                break
            except httpx.ConnectError:
                await asyncio.sleep(0.02)
        assert (r.status_code, r.text) == (200, "hello")
    stop.set()
    await server
    assert sock.fileno() == -1  # closed by serve_http
    bind_listener("127.0.0.1", port).close()  # and the port is free again


def test_an_address_not_of_this_machine_is_named_so():
    with pytest.raises(PortTaken, match=r"port 192\.0\.2\.1:\d+ cannot be bound"):  # TEST-NET-1 (RFC 5737)
        bind_listener("192.0.2.1", 0)
