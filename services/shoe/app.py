"""The shoe service: ``faststream run services.shoe.app:app``.

Entropy enters here, at the edge: ``secrets.SystemRandom`` shuffles and ``secrets.token_bytes`` salts.
"""

from __future__ import annotations

import secrets

from services.runtime.app import build_app
from services.shoe.core import Entropy, ShoeCore

_rng = secrets.SystemRandom()


def _shuffle(cards: list) -> list:  # type: ignore[type-arg]
    _rng.shuffle(cards)
    return cards


core = ShoeCore(Entropy(shuffle=_shuffle, salt=lambda: secrets.token_bytes(16)))
app, broker, host = build_app(core)
