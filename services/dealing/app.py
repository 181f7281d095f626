"""The dealing service: ``faststream run services.dealing.app:app``."""

from __future__ import annotations

from contracts import topics as T
from services.dealing.core import DealingCore
from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings

#: the dealing service sends DrawCard commands to the shoe (on shoe.draws)
EXTRA_TOPICS = (T.SHOE_DRAWS,)


def create(settings: Settings | None = None) -> Service:
    """The dealing service, to run inside another program."""
    return build_service(DealingCore(), settings, extra_topics=EXTRA_TOPICS)


app, broker, host = build_app(DealingCore(), extra_topics=EXTRA_TOPICS)
