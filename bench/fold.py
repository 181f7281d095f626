"""Benchmark: the cost of folding one table's history through the four deciders (issue 8, finding 6).

1. Deals one shoe at one table through the four services on the in-memory bus (seeded; the floor's bettors).
2. Builds a history of about ``--sizes`` rounds (default 1000 and 8000) by repeating that shoe with fresh
   shoe and round ids (``<id>~<k>``), the table opened once: every repetition is a new shoe, as at a table
   that deals for days.
3. Folds the whole history, in the order it was written, through each core's ``evolve`` (its own and private
   streams) and ``absorb`` (its input streams), as a rebuild or a live service does; no Runner, no I/O.
   Each size is folded ``--repeats`` times; the median CPU time (``time.process_time``: the machine is
   shared, wall time is not this process's) is reported. The history is moved out of the cyclic
   collector's sight first (``gc.freeze``), so a larger history does not make every collection slower.

If the per-table state grows with history (every event copying a dict of every past round), the cost per
event grows with the history and ``ratio`` is about 8; bounded state gives a ratio of about 1.

Last line: ``fold: us_per_event_at_1k=<a> us_per_event_at_8k=<b> ratio=<b/a>`` (the first and last size).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec  # noqa: E402

from baccarat.table import punto_banco_full  # noqa: E402
from contracts import topics as T  # noqa: E402
from contracts.codecs import decode_event  # noqa: E402
from contracts.envelope import Envelope  # noqa: E402
from contracts.events import RoundOpened, TableOpened  # noqa: E402
from services.dealing.core import DealingCore  # noqa: E402
from services.floor.bettors import Seat  # noqa: E402
from services.floor.dealer import Clock, TableDealer  # noqa: E402
from services.floor.io import MemoryFloorIO  # noqa: E402
from services.runtime.logging import configure  # noqa: E402
from services.runtime.memory import MemoryBus  # noqa: E402
from services.settlement.core import SettlementCore  # noqa: E402
from services.shoe.core import Entropy, ShoeCore  # noqa: E402
from contracts.vault import Vault, VaultKeys  # noqa: E402
from services.wagering.core import WageringCore  # noqa: E402

TABLE = "T1"


def cores(seed: int) -> list[Any]:
    rng = random.Random(seed)

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    vault = Vault(VaultKeys((("bench", rng.randbytes(32)),)), nonce=lambda: rng.randbytes(12))
    return [ShoeCore(Entropy(shuffle=shuffle, salt=lambda: rng.randbytes(16)), vault), DealingCore(),
            WageringCore(), SettlementCore()]


async def one_shoe(seed: int) -> list[Envelope]:
    """One shoe dealt at one table: every event of the four services, in the order written."""
    bus = MemoryBus()
    for core in cores(seed):
        bus.add(core)
    seats = [Seat(i, f"player-{i}") for i in range(1, 7)]
    await TableDealer(MemoryFloorIO(bus), TABLE, punto_banco_full(), seats, random.Random(seed), Clock()).run(shoes=1)
    streams = {T.SHOE_EVENTS, T.SHOE_VAULT, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS}
    return [decode_event(r.value) for r in bus.log if bus.settings.base(r.topic) in streams]


def _renamed(x: Any, k: int) -> Any:
    """``x`` (an envelope or event) with its ``round_id``/``shoe_id`` suffixed by ``~k``."""
    changes = {f: f"{getattr(x, f)}~{k}" for f in ("round_id", "shoe_id") if getattr(x, f, None)}
    return msgspec.structs.replace(x, **changes) if changes else x


def history(shoe: list[Envelope], rounds: int) -> tuple[list[Envelope], int]:
    """About ``rounds`` rounds: the shoe repeated under fresh ids (the table opened once). Returns the events
    and the exact number of rounds."""
    per_shoe = sum(isinstance(e.payload, RoundOpened) for e in shoe)
    shoes = max(1, round(rounds / per_shoe))
    out = list(shoe)
    for k in range(1, shoes):
        out.extend(msgspec.structs.replace(_renamed(e, k), payload=_renamed(e.payload, k))
                   for e in shoe if not isinstance(e.payload, TableOpened))
    return out, shoes * per_shoe


def fold(events: list[Envelope], seed: int) -> dict[str, float]:
    """Seconds each core takes to fold ``events`` (own/private streams by evolve, inputs by absorb)."""
    out: dict[str, float] = {}
    for core in cores(seed):
        own = {core.own_stream, *core.private_streams}
        inputs = set(core.input_streams)
        state = core.initial(TABLE)
        evolve, absorb = core.evolve, core.absorb
        t0 = time.process_time()
        for env in events:
            if env.stream in own:
                state = evolve(state, env)
            elif env.stream in inputs:
                state = absorb(state, env)
        out[core.name] = time.process_time() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 8000], help="rounds of history")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=8)
    args = ap.parse_args()
    configure("WARNING")  # the floor's per-event log lines are not the benchmark
    shoe = asyncio.run(one_shoe(args.seed))
    per_event: list[float] = []
    for size in args.sizes:
        events, rounds = history(shoe, size)
        gc.collect()
        gc.freeze()  # the history itself is not what is measured: keep the collector from rescanning it
        runs = [fold(events, args.seed) for _ in range(args.repeats)]
        med = {name: statistics.median(r[name] for r in runs) for name in runs[0]}
        total = statistics.median(sum(r.values()) for r in runs)
        us = total / len(events) * 1e6
        per_event.append(us)
        cores_text = " ".join(f"{n}_s={v:.3f}" for n, v in med.items())
        print(f"rounds={rounds} events={len(events)} total_s={total:.3f} us_per_event={us:.2f} {cores_text}",
              flush=True)
    a, b = per_event[0], per_event[-1]
    print(f"fold: us_per_event_at_1k={a:.2f} us_per_event_at_8k={b:.2f} ratio={b / a:.2f}")


if __name__ == "__main__":
    main()
