"""The pit in a browser: the pages, the query API and the command API as one web app on one origin.

:func:`create_pit_app` composes, in one ASGI app behind the session middleware
(:class:`services.runtime.sessions.SessionAuth`: a login cookie becomes its role's bearer header, CSRF
checked):

* the pages (:class:`services.projection.pages.PitPages`: ``/``, ``/floor``, ``/console/{id}``, ``/replay/{id}``
  (a table's rounds and any round's story from the log, :mod:`croupier.pit_replay`),
  ``/surveillance``, ``/cage``, ``/login``, ``/logout``, ``/live/...``, ``/static/...``), pushed live by the
  :class:`~services.projection.live.LiveFeed` attached to the projection host's folds;
* the command API (:func:`services.command_api.http.create_command_api`) under ``/command`` when a gateway is
  given (``croupier pit``), so the dealer console's forms post to the same origin; without one (``croupier
  serve --api-port``, ``croupier api``) the console is read-only;
* the query API (:func:`services.projection.api.create_api`) at its usual paths (``/tables``, ``/alerts``,
  ``/docs`` ...).

:func:`serve_pit` serves it until ``stop`` (the fan-out task beside it; every live stream ended first, so the
server stops at once). :func:`pit_alone` is ``croupier pit``: a read-only projection replica, the command
gateway on Kafka, the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount

from croupier.pit_replay import replay_reader
from services.projection.live import LiveFeed
from services.projection.pages import PitPages
from services.runtime.credentials import Credentials
from services.runtime.host import ServiceHost
from services.runtime.https import ServerTls, scheme
from services.runtime.sessions import SessionAuth, Sessions
from services.runtime.settings import Settings

#: where the command API is mounted in the pit app
COMMAND_BASE = "/command"
#: how long past the command API's wait the console waits for its answer before saying it has none (seconds)
CONSOLE_MARGIN_S = 5.0


@dataclass
class PitApp:
    """The composed ASGI ``app``, its live ``feed`` (run it: :meth:`LiveFeed.run`), the ``pages`` and the
    ``sessions``; ``cage_log``: the cage pages' Kafka log when the app made it (its consumer and producer are
    stopped with the server, :func:`serve_pit`), None when the caller passed its own or there is none."""

    app: Any
    feed: LiveFeed
    pages: PitPages
    sessions: Sessions
    cage_log: Any = None


def create_pit_app(host: ServiceHost, tokens: Mapping[str, str] | Credentials, *, ready: Callable[[], bool],
                   readiness: Callable[[], tuple[bool, dict[str, Any]]] | None = None,
                   gateway: Any = None, journal: Any = None, secure_cookies: bool = False,
                   new_request_id: Callable[[], str] = lambda: uuid.uuid4().hex,
                   replay: bool = True, cage_log: Any = None) -> PitApp:
    """The pit app over ``host`` (the projection service's host, or a replica's). ``tokens``: the roles'
    ``{role: token}``, or every credential (:func:`services.runtime.credentials.load_credentials`: the
    betting terminals' bettor credentials log in too, and bet for their own players only); no default
    (``NoCredentials`` for none, as the APIs); ``ready``: the projection has
    restored; ``readiness``: ``/health/ready``'s ``(ok, body)`` (also what the pages' banner says: the
    broker answers and every task is restored); ``gateway``: a started
    :class:`~services.command_api.gateway.CommandGateway` (None: no command API, read-only console);
    ``secure_cookies``: the session cookie only over HTTPS; ``replay``: serve ``/replay/...`` (a table's rounds
    and any round's story, read from the log on ``host``'s broker: :mod:`croupier.pit_replay`); ``cage_log``:
    the cage's pages' log (:class:`croupier.cage_pages.CageLog`; default, with ``replay``, Kafka on
    ``host``'s broker: :class:`croupier.pit_cage.KafkaCageLog`; None without: no cage pages)."""
    from services.projection.api import create_api

    creds = tokens if isinstance(tokens, Credentials) else Credentials(tokens)
    query_api = create_api(host, creds.roles, ready=ready, journal=journal, readiness=readiness)
    page_ready = (lambda: bool(readiness()[0])) if readiness is not None else ready
    feed = LiveFeed(lambda: list(host.runner.tables), ready=page_ready).attach(host.runner)
    sessions = Sessions(creds)
    may_send: Mapping[str, frozenset[str]] | None = None
    profiles: tuple[str, ...] = ()
    routes: list[Any] = []
    if gateway is not None:
        from baccarat.table import TABLE_PROFILES
        from services.command_api.actions import ROLE_ACTIONS
        from services.command_api.http import create_command_api

        may_send = ROLE_ACTIONS
        profiles = tuple(TABLE_PROFILES)
        routes.append(Mount(COMMAND_BASE, app=create_command_api(gateway, creds, new_request_id=new_request_id)))
    pages = PitPages(lambda: {t: slot.state for t, slot in host.runner.tables.items()}, feed, sessions,
                     ready=page_ready, may_send=may_send, command_base=COMMAND_BASE if gateway is not None else None,
                     profiles=profiles, secure=secure_cookies,
                     replay=replay_reader(host.settings) if replay else None,
                     answer_within_ms=int((getattr(gateway, "timeout_s", 10.0) + CONSOLE_MARGIN_S) * 1000))
    owned: Any = None  # the cage log this app makes (stopped with the server)
    if cage_log is None and replay:
        from croupier.pit_cage import KafkaCageLog

        # cage.commands' one writer is the console principal (contracts.topics): send as it where the gateway has it
        console = getattr(getattr(gateway, "bus", None), "writers", {}).get("console")
        cage_log = owned = KafkaCageLog(host.settings, writer=console)
    cage_routes: list[Any] = []
    if cage_log is not None:
        from datetime import UTC, datetime

        from croupier.cage_pages import CagePages

        cage_routes = CagePages(pages, cage_log, new_id=lambda: f"pit-cage-{new_request_id()}",
                                clock=lambda: datetime.now(UTC)).routes()
    app = Starlette(routes=[*cage_routes, *pages.routes(), *routes, Mount("", app=query_api)])
    return PitApp(SessionAuth(app, sessions), feed, pages, sessions, owned)


async def serve_pit(pit: PitApp, host: str, port: int, stop: asyncio.Event,
                    context: contextvars.Context | None = None, tls: ServerTls | None = None,
                    sock: socket.socket | None = None) -> None:
    """Serve ``pit`` on ``host:port`` until ``stop`` is set, with its fan-out; the live streams are ended as
    soon as ``stop`` is set (an open ``EventSource`` would hold the server's shutdown). ``tls``: over HTTPS
    (create the app with ``secure_cookies=True`` then). ``sock``: a listener already bound to ``host:port``
    (:func:`services.runtime.ops.bind_listener`). Raises ``PortTaken`` when the port cannot be bound."""
    from services.runtime.ops import serve_http

    async def close_on_stop() -> None:
        await stop.wait()
        pit.feed.close()

    fan_out = asyncio.create_task(pit.feed.run())
    closer = asyncio.create_task(close_on_stop())
    try:
        await serve_http(pit.app, host, port, stop, context=context, tls=tls, sock=sock)
    finally:
        pit.feed.close()
        for task in (closer, fan_out):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if pit.cage_log is not None:  # the cage pages' tail (a consumer) and producer
            with contextlib.suppress(Exception):
                await pit.cage_log.stop()


async def pit_alone(settings: Settings, port: int, host: str = "127.0.0.1",
                    tokens: Mapping[str, str] | Credentials | None = None,
                    writers: Mapping[str, Settings] | None = None, stop: asyncio.Event | None = None,
                    timeout_s: float = 10.0, tls: ServerTls | None = None) -> None:
    """``croupier pit``: a read-only projection replica (its own consumer group, publishes nothing), the
    command gateway on Kafka (each command topic written as its writer principal: ``writers``), and the pit
    app on ``host:port`` until ``stop`` or SIGINT/SIGTERM. Raises ``NoCredentials`` / ``BadCredentials`` for
    the tokens, :class:`croupier.serve.PortTaken` before anything connects. ``tls``: serve HTTPS (the session
    cookie ``Secure``)."""
    from croupier.serving import _stop_on_signals, check_port, projection_replica
    from services.command_api.server import open_gateway, reader_streams
    from services.runtime.credentials import check_roles, load_credentials
    from services.runtime.logging import bind_service, get_logger
    from services.runtime.ops import readiness

    creds = tokens if isinstance(tokens, Credentials) else Credentials(tokens) if tokens else load_credentials(
        what="croupier pit")
    check_roles(creds.roles, bettors=creds.bettors)
    stop = stop or asyncio.Event()
    _stop_on_signals(stop)
    check_port(host, port)
    async with projection_replica(settings, "pit") as (replica, probe), \
            open_gateway(settings, writers, timeout_s=timeout_s, streams=reader_streams(writers)) as gateway:
        pit = create_pit_app(replica.host, creds, ready=lambda: replica.ready,
                             readiness=lambda: readiness({"projection-replica": replica}, probe), gateway=gateway,
                             secure_cookies=tls is not None)
        get_logger("pit").info("pit_started", url=f"{scheme(tls)}://{host}:{port}/")
        await serve_pit(pit, host, port, stop, context=bind_service("pit", settings.instance), tls=tls)


__all__ = ["COMMAND_BASE", "PitApp", "create_pit_app", "pit_alone", "serve_pit"]
