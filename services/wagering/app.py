"""The wagering service: ``faststream run services.wagering.app:app``."""

from __future__ import annotations

from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings
from services.wagering.core import WageringCore


def create(settings: Settings | None = None) -> Service:
    """The wagering service, to run inside another program."""
    return build_service(WageringCore(), settings)


app, broker, host = build_app(WageringCore())
