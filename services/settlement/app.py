"""The settlement service: ``faststream run services.settlement.app:app``."""

from __future__ import annotations

from services.runtime.app import build_app
from services.settlement.core import SettlementCore

core = SettlementCore()
app, broker, host = build_app(core)
