"""The dealing service: ``faststream run services.dealing.app:app``."""

from __future__ import annotations

from contracts import topics as T
from services.configs import test_tables
from services.dealing.core import DealingCore
from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings

#: the dealing service sends DrawCard commands to the shoe (on shoe.draws)
EXTRA_TOPICS = (T.SHOE_DRAWS,)


def core(settings: Settings | None = None) -> DealingCore:
    """The dealing core with the test tables of ``CROUPIER_TEST_TABLES`` (:func:`services.configs.test_tables`)."""
    return DealingCore(test_tables(settings.extra if settings is not None else None))


def create(settings: Settings | None = None) -> Service:
    """The dealing service, to run inside another program."""
    return build_service(core(settings), settings, extra_topics=EXTRA_TOPICS)


app, broker, host = build_app(core(), extra_topics=EXTRA_TOPICS)
