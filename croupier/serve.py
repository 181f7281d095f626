"""``croupier serve`` and ``croupier api``: services (and the query API) in one process until SIGINT/SIGTERM.

``serve(..., metrics_port=P)`` also serves the process's operations endpoints on P (``/metrics``,
``/health/live``, ``/health/ready``: :mod:`services.runtime.ops`) from the start, so a process still waiting
for its broker answers live and not ready. The query API serves the same three paths itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from pathlib import Path

import services
from croupier.readyfile import ReadyFile, keep_ready_file
from croupier.serving import PortTaken, _stop_on_signals, check_port, projection_replica
from services.runtime.app import Service
from services.runtime.gc_policy import freeze_startup_heap
from services.runtime.https import ServerTls, scheme
from services.runtime.logging import bind_service, get_logger
from services.runtime.ops import BrokerProbe, bind_listener, create_ops_app, readiness, serve_http
from services.runtime.settings import Settings


def _load_tokens() -> dict[str, str]:
    from services.projection.auth import load_tokens

    return load_tokens()


async def _run_api(service: Service, host: str, port: int, tokens: Mapping[str, str], stop: asyncio.Event,
                   probe: BrokerProbe | None = None, label: str = "projection", tls: ServerTls | None = None) -> None:
    from croupier.pit import create_pit_app, serve_pit

    # the query API with the pit's read-only pages beside it (croupier/pit.py; no command API here)
    pit = create_pit_app(service.host, tokens, ready=lambda: service.ready,
                         readiness=lambda: readiness({label: service}, probe), secure_cookies=tls is not None)
    await serve_pit(pit, host, port, stop, context=bind_service("api", service.host.settings.instance), tls=tls)


async def serve(names: list[str], settings: Settings, stop: asyncio.Event | None = None, *,
                api_port: int | None = None, api_host: str = "127.0.0.1",
                tokens: Mapping[str, str] | None = None, metrics_port: int | None = None,
                metrics_host: str = "127.0.0.1", ready_file: Path | None = None, tls: ServerTls | None = None) -> None:
    """Start the named services (and the query API beside the projection), run until ``stop`` is set or
    a signal arrives, then stop them. ``tokens``: the API's ``{role: token}`` (default: from the environment,
    :func:`services.projection.auth.load_tokens`; raises ``NoCredentials`` before anything starts when the
    API is asked for and no credential is configured). ``metrics_port``: serve ``/metrics``,
    ``/health/live`` and ``/health/ready`` there (on ``metrics_host``) for the whole run. ``ready_file``: a
    file that exists exactly while every named service runs and is ready (:mod:`croupier.readyfile`; a
    container's health check). ``tls``: the API over HTTPS (:mod:`services.runtime.https`). Once every service
    is up, the heap built to start is frozen out of the garbage collector's walks
    (:func:`services.runtime.gc_policy.freeze_startup_heap`). Raises
    :class:`PortTaken` before anything starts when a port cannot be bound (or both ports are the same)."""
    log = get_logger("serve")
    stop = stop or asyncio.Event()
    _stop_on_signals(stop)
    if api_port is not None:
        tokens = tokens or _load_tokens()
        check_port(api_host, api_port)  # bound again when the API starts (PortTaken then if taken meanwhile)
    if metrics_port is not None and metrics_port == api_port:
        raise PortTaken(f"the metrics port {metrics_port} is the API's port: give each its own")
    # the metrics port is bound now and served at once: taken, it fails here, before anything starts
    metrics_sock = bind_listener(metrics_host, metrics_port) if metrics_port is not None else None
    running: list[Service] = []
    started: dict[str, Service | None] = dict.fromkeys(names)
    probe = BrokerProbe(settings)
    probe.start()
    ops_stop = asyncio.Event()
    ops: asyncio.Task[None] | None = None
    if metrics_port is not None:
        ops = asyncio.create_task(serve_http(create_ops_app(lambda: started, probe), metrics_host, metrics_port,
                                             ops_stop, sock=metrics_sock))
        log.info("metrics_started", url=f"http://{metrics_host}:{metrics_port}/metrics")
    keeper = (asyncio.create_task(keep_ready_file(ReadyFile(ready_file),
                                                  lambda: running if len(running) == len(names) else [], stop))
              if ready_file is not None else None)
    try:
        for name in names:
            svc = services.create(name, settings)
            # a service waits for its broker (with backoff, not ready meanwhile), as a deployed one must;
            # Ctrl-C or SIGTERM still stops it while it waits
            starting = asyncio.ensure_future(svc.start(retry_s=float("inf")))
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not starting.done():
                starting.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await starting
                running.append(svc)
                break
            starting.result()
            running.append(svc)
            started[name] = svc
            log.info("service_started", name=name, bootstrap=settings.bootstrap_servers)
        if running and len(running) == len(names):  # every service up: what was built to start lives on
            log.info("startup_heap_frozen", objects=freeze_startup_heap())  # (services/runtime/gc_policy.py)
        projection = started.get("projection")
        if api_port is not None and projection is not None:
            log.info("api_started", url=f"{scheme(tls)}://{api_host}:{api_port}/docs")
            await _run_api(projection, api_host, api_port, tokens or {}, stop, probe, tls=tls)
        else:
            await stop.wait()
    finally:
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        for svc in reversed(running):
            await svc.stop()
        ops_stop.set()
        if ops is not None:
            with contextlib.suppress(Exception):
                await ops
        await probe.stop()
        if metrics_sock is not None:  # closed by its server (again here, harmless)
            metrics_sock.close()
        log.info("stopped", services=names)


async def api_alone(settings: Settings, port: int, host: str = "127.0.0.1",
                    tokens: Mapping[str, str] | None = None, stop: asyncio.Event | None = None,
                    tls: ServerTls | None = None) -> None:
    """The query API over a read-only projection replica (its own consumer group; publishes nothing).
    ``tokens`` as in :func:`serve` (checked before anything starts); ``tls``: over HTTPS."""
    tokens = tokens or _load_tokens()
    stop = stop or asyncio.Event()
    _stop_on_signals(stop)
    check_port(host, port)
    async with projection_replica(settings, "api") as (replica, probe):
        get_logger("api").info("api_started", url=f"{scheme(tls)}://{host}:{port}/docs")
        await _run_api(replica, host, port, tokens, stop, probe, label="projection-replica", tls=tls)
