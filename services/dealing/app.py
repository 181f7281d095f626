"""The dealing service: ``faststream run services.dealing.app:app``."""

from __future__ import annotations

from services.dealing.core import DealingCore
from services.runtime.app import build_app

core = DealingCore()
app, broker, host = build_app(core, extra_topics=("shoe.commands",))
