"""Shared helpers for service tests on the in-memory bus."""

from __future__ import annotations

import random

from contracts import topics as T
from contracts.codecs import decode_event
from contracts.envelope import Envelope
from services.dealing.core import DealingCore
from services.runtime.memory import MemoryBus
from services.settlement.core import SettlementCore
from services.shoe.core import Entropy, ShoeCore
from services.wagering.core import WageringCore
from tests.vaultkeys import seeded_vault


def seeded_entropy(seed: int) -> Entropy:
    rng = random.Random(seed)

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    return Entropy(shuffle=shuffle, salt=lambda: rng.randbytes(16))


def make_cores(seed: int = 1) -> dict[str, object]:
    return {
        "shoe": ShoeCore(seeded_entropy(seed), seeded_vault(seed)),
        "dealing": DealingCore(),
        "wagering": WageringCore(),
        "settlement": SettlementCore(),
    }


def floor_bus(seed: int = 1) -> tuple[MemoryBus, dict[str, object]]:
    bus = MemoryBus()
    hosts = {name: bus.add(core) for name, core in make_cores(seed).items()}  # type: ignore[arg-type]
    return bus, hosts


def events(bus: MemoryBus, *streams: str) -> list[Envelope]:
    streams = streams or (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
    return [decode_event(r.value) for s in streams for r in bus.topics.get(s, [])]


def payloads(bus: MemoryBus, stream: str, kind: type) -> list:  # type: ignore[type-arg]
    return [e.payload for e in events(bus, stream) if isinstance(e.payload, kind)]
