"""The settlement service: ``faststream run services.settlement.app:app``."""

from __future__ import annotations

from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings
from services.settlement.core import SettlementCore


def create(settings: Settings | None = None) -> Service:
    """The settlement service, to run inside another program."""
    return build_service(SettlementCore(), settings)


app, broker, host = build_app(SettlementCore())
