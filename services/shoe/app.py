"""The shoe service: ``faststream run services.shoe.app:app``.

Entropy enters here, at the edge: ``secrets.SystemRandom`` shuffles and ``secrets.token_bytes`` salts.
"""

from __future__ import annotations

import secrets

from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings
from services.shoe.core import Entropy, ShoeCore


def secure_entropy() -> Entropy:
    """The production entropy: a CSPRNG shuffle and a 16-byte salt from ``secrets``."""
    rng = secrets.SystemRandom()

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    return Entropy(shuffle=shuffle, salt=lambda: secrets.token_bytes(16))


def create(settings: Settings | None = None) -> Service:
    """The shoe service, to run inside another program."""
    return build_service(ShoeCore(secure_entropy()), settings)


app, broker, host = build_app(ShoeCore(secure_entropy()))
