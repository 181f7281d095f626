"""The plumbing every serving command shares (``croupier serve``, ``api``, ``pit``, ``table api``, the demo's
pages): a port checked before anything starts, the signals that stop a server, and a started read-only projection
replica with its broker probe. :mod:`croupier.serve` and :mod:`croupier.pit` both build on it, so neither
imports the other in a circle (:mod:`croupier.serve` re-exports these names).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from collections.abc import AsyncIterator

from croupier.topics import require_prefix
from services.runtime.app import Service
from services.runtime.ops import BrokerProbe, PortTaken, bind_listener
from services.runtime.settings import Settings


def check_port(host: str, port: int) -> None:
    """Raise :class:`PortTaken` if ``host:port`` cannot be bound now (a check before anything starts; the
    server binds again when it starts, :func:`services.runtime.ops.serve_http`)."""
    bind_listener(host, port).close()


def _stop_on_signals(stop: asyncio.Event) -> None:
    """Set ``stop`` on SIGINT or SIGTERM (where the running loop can take signal handlers)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not the main thread
            pass


@contextlib.asynccontextmanager
async def projection_replica(settings: Settings, name: str) -> AsyncIterator[tuple[Service, BrokerProbe]]:
    """A started read-only projection replica (its own consumer group ``<projection-NAME group>.<hex>``;
    publishes nothing) and a started broker probe, both stopped on exit. Refuses a prefix with no topics
    first (:func:`croupier.topics.require_prefix`): a replica must not create topics under a mistyped one."""
    from services.projection.app import create_replica

    await require_prefix(settings)
    replica = create_replica(settings, group=f"{settings.group(f'projection-{name}')}.{uuid.uuid4().hex[:8]}")
    probe = BrokerProbe(settings)
    probe.start()
    try:
        await replica.start()
        try:
            yield replica, probe
        finally:
            await replica.stop()
    finally:
        await probe.stop()
