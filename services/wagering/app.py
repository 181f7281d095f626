"""The wagering service: ``faststream run services.wagering.app:app``."""

from __future__ import annotations

from services.runtime.app import build_app
from services.wagering.core import WageringCore

core = WageringCore()
app, broker, host = build_app(core)
