"""``croupier serve``: several services in one process until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import signal

import services
from services.runtime.logging import get_logger
from services.runtime.settings import Settings


async def serve(names: list[str], settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Start the named services, run until ``stop`` is set (or a signal arrives), then stop them."""
    log = get_logger("serve")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not the main thread
            pass
    running = []
    try:
        for name in names:
            svc = services.create(name, settings)
            await svc.start()
            running.append(svc)
            log.info("service_started", name=name, bootstrap=settings.bootstrap_servers)
        await stop.wait()
    finally:
        for svc in reversed(running):
            await svc.stop()
        log.info("stopped", services=names)
