"""Benchmark: how the projection's fold cost per event grows with one table's history (issue 8, finding 6).

Deals one table (punto banco, five seats betting) on the in-memory floor (``services/floor`` over
``services/runtime/memory.py``) for at least 1,000 and then at least 8,000 rounds (whole shoes), then folds
each history into a fresh projection the way a restart does (own streams, then the four input streams,
then what is due; ``ServiceHost.rebuild``) and times the fold alone (median of ``--repeat`` runs).

Last line: ``fold_projection: us_per_event_at_1k=<a> us_per_event_at_8k=<b> ratio=<b/a>``; a ratio near 1
means the per-event cost does not grow with history. ``--root DIR`` folds with another checkout's code
(e.g. ``--root /work/main`` with that checkout's interpreter) to compare against it; with ``--cache DIR``
both fold the same saved records (the first run deals and saves them).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

_ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="checkout whose code to run")
_ap.add_argument("--small", type=int, default=1000, help="rounds of the small history")
_ap.add_argument("--large", type=int, default=8000, help="rounds of the large history")
_ap.add_argument("--repeat", type=int, default=3, help="folds per history (median reported)")
_ap.add_argument("--cache", default="", help="directory: save each dealt history there, or fold a saved one "
                                             "(so two checkouts fold the very same records)")
ARGS = _ap.parse_args()
sys.path.insert(0, ARGS.root)

from baccarat.table import punto_banco_full  # noqa: E402
from contracts import topics as T  # noqa: E402
from services.dealing.core import DealingCore  # noqa: E402
from services.floor.bettors import Seat  # noqa: E402
from services.floor.dealer import Clock, TableDealer  # noqa: E402
from services.floor.io import MemoryFloorIO  # noqa: E402
from services.projection.core import ProjectionCore  # noqa: E402
from services.runtime.host import NullPublisher, ServiceHost  # noqa: E402
from services.runtime.memory import MemoryBus, Record  # noqa: E402
from services.runtime.logging import configure  # noqa: E402
from services.runtime.settings import Settings  # noqa: E402
from services.settlement.core import SettlementCore  # noqa: E402
from services.shoe.core import Entropy, ShoeCore  # noqa: E402
from contracts.vault import Vault, VaultKeys  # noqa: E402
from services.wagering.core import WageringCore  # noqa: E402


async def deal(rounds: int) -> tuple[MemoryBus, int]:
    """One table's log with at least ``rounds`` rounds (whole shoes), projection included; returns the bus
    and the rounds dealt."""
    rng = random.Random(11)

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    bus = MemoryBus()
    vault = Vault(VaultKeys((("bench", rng.randbytes(32)),)), nonce=lambda: rng.randbytes(12))
    for core in (ShoeCore(Entropy(shuffle, lambda: rng.randbytes(16)), vault), DealingCore(), WageringCore(),
                 SettlementCore(), ProjectionCore()):
        bus.add(core)
    dealer = TableDealer(MemoryFloorIO(bus), "T1", punto_banco_full(), [Seat(i, f"player-{i}") for i in range(1, 6)],
                         random.Random(5), Clock())
    await dealer.open_table()
    shoe = 0
    while dealer.run_state.rounds < rounds:
        shoe += 1
        await dealer.play_shoe(shoe)
    return bus, dealer.run_state.rounds


def save(bus: MemoryBus, rounds: int, path: str) -> None:
    """Write ``bus``'s topics (key and value of every record) and the rounds dealt to ``path`` (msgpack)."""
    import msgspec

    data = {"rounds": rounds, "topics": {t: [[r.key, r.value] for r in recs] for t, recs in bus.topics.items()}}
    with open(path, "wb") as f:
        f.write(msgspec.msgpack.encode(data))


def load(path: str) -> tuple[MemoryBus, int]:
    """The bus and rounds :func:`save` wrote."""
    import msgspec

    with open(path, "rb") as f:
        data = msgspec.msgpack.decode(f.read())
    bus = MemoryBus()
    for t, recs in data["topics"].items():
        bus.topics[t] = [Record(t, 0, i, k, v) for i, (k, v) in enumerate(recs)]
    return bus, data["rounds"]


async def fold(bus: MemoryBus) -> tuple[float, int]:
    """Seconds to rebuild a fresh projection from ``bus`` and the records it folded."""
    host = ServiceHost(ProjectionCore(), Settings(), NullPublisher())

    async def read(topic: str) -> list:  # type: ignore[type-arg]
        return list(bus.topics.get(topic, []))

    t0 = time.perf_counter()
    n = await host.rebuild(read)
    return time.perf_counter() - t0, n


async def main() -> None:
    configure("ERROR")  # one JSON line per event would dominate the timing
    per_event = []
    for target in (ARGS.small, ARGS.large):
        t0 = time.perf_counter()
        path = os.path.join(ARGS.cache, f"fold-history-{target}.msgpack") if ARGS.cache else ""
        if path and os.path.exists(path):
            bus, rounds = load(path)
        else:
            bus, rounds = await deal(target)
            if path:
                os.makedirs(ARGS.cache, exist_ok=True)
                save(bus, rounds, path)
        dealt_s = time.perf_counter() - t0
        runs = [await fold(bus) for _ in range(ARGS.repeat)]
        s = statistics.median(r[0] for r in runs)
        n = runs[0][1]
        per_event.append(s / n * 1e6)
        print(f"history: rounds={rounds} events={n} dealt_s={dealt_s:.1f} fold_s={s:.3f} "
              f"us_per_event={per_event[-1]:.1f}", flush=True)
    a, b = per_event
    print(f"fold_projection: us_per_event_at_1k={a:.1f} us_per_event_at_8k={b:.1f} ratio={b / a:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
