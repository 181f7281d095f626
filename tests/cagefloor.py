"""One table's whole shift on the in-memory floor with the cage service: an opener, rated patrons buying in
by cash and marker (one high roller in cash), a fill of the low tray, the closer, the soft count."""

from __future__ import annotations

import random

from baccarat.table import punto_banco_full
from services.cage.core import CageCore
from services.floor.bettors import Seat
from services.floor.cage import CageClerk
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.memory import MemoryBus
from tests.services.helpers import floor_bus


async def shift_on_floor(table: str, seed: int, patrons: int = 3, high_roller_cents: int = 400_000,
                         bus: MemoryBus | None = None) -> MemoryBus:
    """``table``'s shift ``<table>-s1`` (gaming day 2026-01-01, pit-1; a $1,000 opener, 4 rounds, patrons
    ``pat-1`` …) played on ``bus`` (default a new floor with the cage service); returns the bus."""
    if bus is None:
        bus, _ = floor_bus(seed)
        bus.add(CageCore())
    clerk = CageClerk(f"{table}-s1", "2026-01-01", "pit-1", random.Random(seed), opener_cents=100_000,
                      high_roller_cents=high_roller_cents)
    dealer = TableDealer(MemoryFloorIO(bus), table, punto_banco_full(),
                         [Seat(i, f"pat-{i}") for i in range(1, patrons + 1)], random.Random(seed + 1), Clock(),
                         rounds_per_shoe=4, cage=clerk)
    await dealer.run(shoes=1)
    return bus
