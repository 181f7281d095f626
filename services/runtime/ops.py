"""Operations endpoints of a service process: ``/metrics``, ``/health/live``, ``/health/ready``.

``croupier serve --metrics-port P`` serves :func:`create_ops_app` on P (the query API serves the same three
paths itself). Both are cheap: no state digest, no request to the broker on the request's path.

* **Liveness** (``/health/live``, always 200 while the event loop answers): the process works; restart it
  only when this fails.
* **Readiness** (``/health/ready``, 200 or 503): the broker answers (:class:`BrokerProbe`, a metadata
  request every couple of seconds in the background), and every service of the process holds an assignment
  whose tasks are all restored and none stuck (:func:`readiness`; a task is *stuck* when its transactions
  have failed for :data:`services.runtime.task_manager.STUCK_AFTER_S` without one succeeding: its partition does not
  advance). A service still waiting for its broker, rebalancing, restoring or stuck is not ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import socket
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from services.runtime import metrics
from services.runtime.logging import get_logger
from services.runtime.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from services.runtime.https import ServerTls
    from starlette.applications import Starlette

    from services.runtime.app import Service


async def _ask_brokers(admin: Any) -> None:
    """One metadata request that names no topic: the brokers and the controller, nothing else. (The admin
    client's ``describe_cluster`` asks for every topic's metadata and drops it: on a broker holding 18,000
    partitions that answer was a fifth of a quiet projection's CPU, every two seconds.) Falls back to
    ``describe_cluster`` on a client without the request builder.

    The request goes to a node picked at random; when it fails there, every other known node is asked in
    turn before the error is raised: one node of a cluster down (killed, restarting) is a cluster that
    works, where the probe used to report ``broker_unreachable`` whenever its pick was that node (seen in
    ``bench/chaos.py --brokers 3``'s instance logs: every instance, one after another, for 2 s each)."""
    try:
        from aiokafka.protocol.metadata import MetadataRequest

        send = admin._send_request  # noqa: SLF001 - aiokafka's admin client has no public "no topics" call
    except (ImportError, AttributeError):
        await admin.describe_cluster()
        return
    request = MetadataRequest([], allow_auto_topic_creation=False)
    try:
        await send(request)
        return
    except Exception as e:  # noqa: BLE001 - any failure at that node: the others are asked
        error = e
    cluster = getattr(getattr(admin, "_client", None), "cluster", None)
    for node in sorted(b.nodeId for b in (cluster.brokers() if cluster is not None else ())):
        try:
            await send(request, node)
            return
        except Exception:  # noqa: BLE001, S112 - the next node; the first error is the one raised
            continue
    raise error


class BrokerProbe:
    """Whether the broker answers, as of the last probe (:attr:`reachable`).

    :meth:`start` probes every ``interval_s`` seconds in the background: an admin client's metadata
    request naming no topic (with the settings' credentials), at most ``timeout_s`` seconds; a failure closes the client,
    and the next probe connects afresh. :attr:`reachable` is False until the first probe answered, and
    also when the last answer is older than three intervals (the probe itself is stuck).
    """

    def __init__(self, settings: Settings, *, interval_s: float = 2.0, timeout_s: float = 2.0):
        self.settings = settings
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        #: the last probe's error ("" after an answer)
        self.last_error = "not probed yet"
        self._ok_at: float | None = None
        self._ok = False
        self._admin: Any = None
        self._task: asyncio.Task[None] | None = None
        self.log = get_logger("ops")

    @property
    def reachable(self) -> bool:
        """True when the last probe answered, less than three intervals ago."""
        return (self._ok and self._ok_at is not None
                and time.monotonic() - self._ok_at < 3 * max(self.interval_s, self.timeout_s))

    async def check(self) -> bool:
        """Probe once now; returns (and records) whether the broker answered within ``timeout_s``."""
        from aiokafka.admin import AIOKafkaAdminClient

        try:
            if self._admin is None:
                self._admin = AIOKafkaAdminClient(**self.settings.client_options(),
                                                  request_timeout_ms=int(self.timeout_s * 1000))
                await asyncio.wait_for(self._admin.start(), self.timeout_s)
            await asyncio.wait_for(_ask_brokers(self._admin), self.timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - anything but an answer: unreachable
            was = self._ok
            self._ok, self.last_error = False, f"{type(e).__name__}: {e}"
            if was:
                self.log.warning("broker_unreachable", bootstrap=self.settings.bootstrap_servers,
                                 error=self.last_error)
            await self._close_admin()
            return False
        if not self._ok and self._ok_at is not None:
            self.log.info("broker_reachable", bootstrap=self.settings.bootstrap_servers)
        self._ok, self._ok_at, self.last_error = True, time.monotonic(), ""
        return True

    async def _close_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):
                await admin.close()

    def start(self) -> None:
        """Probe in the background until :meth:`stop` (idempotent)."""
        if self._task is None or self._task.done():
            metrics.LIVE.track_probe(self)
            self._task = asyncio.create_task(self._loop(), name="broker-probe")

    async def _loop(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.interval_s)

    async def stop(self) -> None:
        """Stop probing and close the client."""
        metrics.LIVE.untrack_probe(self)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self._close_admin()


def service_status(service: Service | None) -> dict[str, Any]:
    """``{"started", "assigned", "restored", "tasks": {state: count}, "stuck": {task: seconds}}`` of one
    service (None: not started: still waiting for its broker)."""
    if service is None:
        return {"started": False, "assigned": False, "restored": False, "tasks": {}}
    tasks = service.tasks
    if tasks is None:  # handler tests: no tasks, nothing to restore
        return {"started": True, "assigned": True, "restored": True, "tasks": {}}
    counts: dict[str, int] = {}
    for s in list(tasks.state.values()):
        counts[s] = counts.get(s, 0) + 1
    return {"started": True, "assigned": tasks.assignment_held, "restored": tasks.ready,
            "tasks": dict(sorted(counts.items())), "stuck": tasks.stuck()}


def readiness(services: Mapping[str, Service | None], probe: BrokerProbe | None) -> tuple[bool, dict[str, Any]]:
    """(ready, body) of a process running ``services`` (name -> service, None while not started): ready
    when the broker answers (``probe``; None: not checked) and every service holds an assignment whose tasks
    are all restored and none stuck. ``body``: ``{"ready", "broker_reachable", "services": {name: service_status}}``."""
    status = {name: service_status(svc) for name, svc in services.items()}
    broker = probe.reachable if probe is not None else True
    ok = broker and bool(status) and all(s["started"] and s["assigned"] and s["restored"] and not s.get("stuck")
                                         for s in status.values())
    body: dict[str, Any] = {"ready": ok, "broker_reachable": broker, "services": status}
    if probe is not None and not broker:
        body["broker_error"] = probe.last_error
    return ok, body


def create_ops_app(services: Callable[[], Mapping[str, Service | None]], probe: BrokerProbe | None) -> Starlette:
    """The ops ASGI app: ``/metrics`` (:data:`services.runtime.metrics.REGISTRY`), ``/health/live`` and
    ``/health/ready`` (:func:`readiness` of ``services()``, 503 when not ready). Every endpoint runs on the
    event loop (never in a thread beside it), so it reads the services' state between two of its changes."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def metrics_endpoint(request: Any) -> Response:
        return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)

    async def live(request: Any) -> JSONResponse:
        return JSONResponse({"live": True, "services": sorted(services())})

    async def ready(request: Any) -> JSONResponse:
        ok, body = readiness(services(), probe)
        return JSONResponse(body, status_code=200 if ok else 503)

    return Starlette(routes=[Route("/metrics", metrics_endpoint), Route("/health/live", live),
                             Route("/health/ready", ready)])


class PortTaken(OSError):
    """A port this process was asked to serve on cannot be bound (already in use, or not an address of this
    machine)."""


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (IPv6 when ``host`` holds a colon) and listening, with
    ``SO_REUSEADDR`` as asyncio's own servers set it; the caller owns it (hand it to :func:`serve_http`, which
    closes it; a connection made before the server serves it waits in the backlog). It must listen to hold the
    port: Linux lets a second ``SO_REUSEADDR`` socket bind a port that is bound but not listening.

    Binding here, not inside uvicorn, makes a taken port a :class:`PortTaken` at the caller, not uvicorn's
    ``sys.exit(3)`` inside a task (a ``SystemExit`` that escapes the event loop), and a port found free is held
    from then on: no moment for another process to take it between a check and the bind. Raises
    :class:`PortTaken` (the message says why: in use, or not an address of this machine)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as e:
        sock.close()
        why = "is already in use" if e.errno == errno.EADDRINUSE else "cannot be bound"
        raise PortTaken(f"port {host}:{port} {why} ({e.strerror})") from None
    sock.setblocking(False)
    return sock


async def serve_http(app: Any, host: str, port: int, stop: asyncio.Event,
                     context: contextvars.Context | None = None, tls: ServerTls | None = None,
                     sock: socket.socket | None = None) -> None:
    """Serve the ASGI ``app`` on ``host:port`` (uvicorn, in this event loop) until ``stop`` is set; over HTTPS
    with ``tls`` (:func:`services.runtime.https.server_tls`, checked before).
    ``context``: the contextvars the server runs in (its log lines name that service). ``log_config=None``:
    uvicorn's records go to the root logger, rendered as JSON like every other line
    (:mod:`services.runtime.logging`), not through the plain-text handlers uvicorn would install.
    ``sock``: a listener already bound to ``host:port`` (:func:`bind_listener`); without one, it is bound
    here. Raises :class:`PortTaken` when the port cannot be bound, ``RuntimeError`` when uvicorn does not start
    (never uvicorn's ``SystemExit``). The socket is closed on return."""
    import uvicorn

    if sock is None:
        sock = bind_listener(host, port)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None,
                                           access_log=False, lifespan="off",
                                           **(tls.uvicorn_options() if tls is not None else {})))

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit as e:  # uvicorn's sys.exit(STARTUP_FAILURE): an exception here, never an exit
            raise RuntimeError(f"the HTTP server on {host}:{port} did not start (uvicorn exit {e.code})") from None

    task = asyncio.create_task(run(), context=context)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        server.should_exit = True
        try:
            await task
        finally:
            sock.close()
