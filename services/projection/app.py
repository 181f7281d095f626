"""The projection service: ``faststream run services.projection.app:app``.

Consumes the four event streams in batches and publishes odds, ledger entries and alerts without
transactions (each output is complete on its own; a rebuild publishes only what was not written). The query API runs beside it with ``croupier serve --api-port`` or alone with ``croupier api``.
"""

from __future__ import annotations

from services.projection.core import ProjectionCore
from services.runtime.app import Service, build_app, build_service
from services.runtime.host import NullPublisher
from services.runtime.kafka import DirectPublisher
from services.runtime.settings import Settings


def create(settings: Settings | None = None) -> Service:
    """The projection service, to run inside another program."""
    settings = settings or Settings.from_env()
    return build_service(ProjectionCore(), settings, batch=True, publisher=DirectPublisher(settings, "projection"))


def create_replica(settings: Settings, group: str) -> Service:
    """A read-only replica: folds the same streams (its own consumer group) and publishes nothing; for a
    query API run apart from the projection service."""
    return build_service(ProjectionCore(), settings, batch=True, publisher=NullPublisher(), group=group)


_settings = Settings.from_env()
app, broker, host = build_app(ProjectionCore(), _settings, batch=True,
                              publisher=DirectPublisher(_settings, "projection"))
