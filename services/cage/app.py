"""The cage service: ``faststream run services.cage.app:app``."""

from __future__ import annotations

from services.cage.core import CageCore
from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings


def create(settings: Settings | None = None) -> Service:
    """The cage service, to run inside another program."""
    return build_service(CageCore(), settings)


app, broker, host = build_app(CageCore())
