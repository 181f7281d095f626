"""Running the command API: a started Kafka gateway, and the HTTP app over it until stopped.

:func:`open_gateway` connects a :class:`~services.command_api.gateway.KafkaCommandBus` (each command topic
written by its writer principal, :func:`~services.command_api.gateway.writer_settings`) and wraps it in a
:class:`~services.command_api.gateway.CommandGateway`; :func:`serve_command_api` serves
:func:`~services.command_api.http.create_command_api` on ``host:port`` until ``stop`` is set. The wall clock
and the request ids of requests that bring none enter here, at the edge.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import datetime, timezone

from contracts import topics as T
from services.command_api.gateway import (
    DEFAULT_TIMEOUT_S,
    WATCHED,
    CommandGateway,
    KafkaCommandBus,
    since_for,
)
from services.command_api.http import create_command_api
from services.runtime.credentials import Credentials
from services.runtime.https import ServerTls
from services.runtime.settings import Settings


def reader_streams(writers: Mapping[str, Settings] | None) -> tuple[str, ...]:
    """The event topics the API's reader reads: all four (:data:`~services.command_api.gateway.WATCHED`),
    except when it connects as the ``bettor`` principal alone (an API serving only betting terminals on a
    secured broker), which may read only ``dealing.events`` and ``wagering.events``, where its answers come."""
    if writers and "console" not in writers and "bettor" in writers:
        return (T.DEALING_EVENTS, T.WAGERING_EVENTS)
    return WATCHED


def wall_clock() -> datetime:
    """Now, UTC (the ``issued_at`` claim of each command; the events take the broker's append time)."""
    return datetime.now(timezone.utc)


@contextlib.asynccontextmanager
async def open_gateway(settings: Settings, writers: Mapping[str, Settings] | None = None, *,
                       tables: list[str] | None = None, lookback_s: float = 0.0,
                       timeout_s: float = DEFAULT_TIMEOUT_S,
                       streams: tuple[str, ...] = WATCHED) -> AsyncIterator[CommandGateway]:
    """A started gateway on Kafka, stopped on exit. ``tables``: read only their partitions (None: all);
    ``lookback_s``: start reading that long before now, so that a retry from a new process (the command
    line) finds the answer of its first attempt (0: from the end). Raises aiokafka's errors for a broker that
    cannot be reached. ``streams``: the event topics to read (:class:`KafkaCommandBus`)."""
    since = since_for(wall_clock(), lookback_s) if lookback_s > 0 else None
    bus = KafkaCommandBus(settings, writers, tables=tables, since=since, streams=streams)
    try:
        await bus.start()
        yield CommandGateway(bus, wall_clock, timeout_s=timeout_s)
    finally:
        await bus.stop()


async def serve_command_api(settings: Settings, host: str, port: int, tokens: Mapping[str, str] | Credentials,
                            writers: Mapping[str, Settings] | None = None, stop: asyncio.Event | None = None,
                            timeout_s: float = DEFAULT_TIMEOUT_S, tls: ServerTls | None = None) -> None:
    """Serve the command API on ``host:port`` until ``stop`` is set (or SIGINT/SIGTERM). ``tokens``: the
    roles' bearer tokens, or every credential with the bettor credentials
    (:func:`services.runtime.credentials.load_credentials`); checked before anything connects
    (``NoCredentials`` / ``ValueError``). ``tls``: over HTTPS (:mod:`services.runtime.https`)."""
    from services.runtime.credentials import ROLES, check_roles
    from services.runtime.ops import serve_http

    if isinstance(tokens, Credentials):
        check_roles(tokens.roles, ROLES, tokens.bettors)
    else:
        check_roles(tokens, ROLES)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        opening = asyncio.ensure_future(stack.enter_async_context(open_gateway(
            settings, writers, timeout_s=timeout_s, streams=reader_streams(writers))))
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({opening, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not opening.done():  # stopped while still connecting to the broker
            opening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await opening
            return
        gateway = opening.result()
        app = create_command_api(gateway, tokens, new_request_id=lambda: uuid.uuid4().hex)
        await serve_http(app, host, port, stop, tls=tls)
