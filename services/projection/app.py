"""The projection service: ``faststream run services.projection.app:app``.

Consumes the four event streams and publishes odds, ledger entries and alerts, each partition's in its own
transaction with the input offsets (as every service). The query API runs beside it with
``croupier serve --api-port`` or alone with ``croupier api`` (a read-only replica restored from the
projection's snapshots).
"""

from __future__ import annotations

from services.projection.core import ProjectionCore
from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings


def create(settings: Settings | None = None) -> Service:
    """The projection service, to run inside another program."""
    return build_service(ProjectionCore(), settings)


def create_replica(settings: Settings, group: str) -> Service:
    """A read-only replica: restores from the projection's snapshots, follows the same streams (its own
    consumer group) and publishes nothing; for a query API run apart from the projection service."""
    return build_service(ProjectionCore(), settings, group=group, replica_of="projection")


app, broker, host = build_app(ProjectionCore())
