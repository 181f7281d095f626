"""Benchmark: the projection's per-card work (both odds views) on whole 8-deck shoes, in memory.

Run: ``.venv/bin/python bench/projection_card.py [--shoes 2] [--repeat 3]``

1. Deals ``--shoes`` whole 8-deck shoes (one table, punto banco with every side wager, five bettors) through the
   shoe, dealing, wagering and settlement services on the in-memory bus (seeded ``random.Random``).
2. Feeds every input event, in log order, to a fresh :class:`ProjectionCore` (``absorb``, then ``react``, then
   ``evolve`` of what it emitted, as the service host does), ``--repeat`` times.
3. Per ``CardDrawn``: the CPU time (this thread's, so other processes on a shared machine do not count) of absorb + react + evolve, which computes both views' odds (public and
   surveillance) and builds their ``OddsUpdated``. Median over every card of every pass; absorb and react
   medians shown apart, and (a separate pass) the two views' ``odds_for`` calls alone. Baseline in the same process: the same react with the odds computed the old way
   (a full evaluation and ``Fraction`` expectations per view, :func:`baseline_odds`), ratio printed; and,
   alternating with the timed passes, the same core with the two views' trackers stepped apart (no
   ``LiveViews.follow_pair``: each view's ``odds_for`` takes the card out of its own tracker), ratio printed.

Last line: ``projection_card: card_us=<both views, per card> cards=<n>``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from baccarat.table import punto_banco_full
from bench.projection import floor_bus
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.envelope import Envelope
from contracts.events import CardDrawn, WagerOdds
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection import core as projection
from services.projection.core import ProjectionCore
from services.projection.odds_views import LiveViews
from services.runtime.core import Emit
from services.runtime.logging import configure

INPUTS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)


async def deal(shoes: int, seed: int) -> list[Envelope]:
    """Every input event of ``shoes`` whole 8-deck shoes at one table, in log order."""
    rng = random.Random(seed)
    bus = floor_bus(rng)
    seats = [Seat(i, f"player-{i}") for i in range(1, 6)]
    await TableDealer(MemoryFloorIO(bus), "B01", punto_banco_full(), seats, random.Random(seed), Clock()).run(
        shoes=shoes)
    return [decode_event(r.value) for r in bus.log if r.topic in INPUTS]


def baseline_odds(composition: tuple[int, ...], config, *_):  # type: ignore[no-untyped-def]
    """The projection's odds before issue 26: a full evaluation and Fraction expectations, per view."""
    from baccarat.errors import BaccaratError
    from baccarat.expectation import wager_expectations
    from baccarat.odds import Composition, exact_counts
    from services.projection.odds_views import ViewOdds

    try:
        counts = exact_counts(Composition.of(composition), config.odds_ruleset)
    except BaccaratError:
        return None
    wagers = [WagerOdds(wager=w.value, p_win=float(e.p_win), p_void=float(e.p_void), ev=float(e.ev),
                        ev_num=e.ev.numerator, ev_den=e.ev.denominator)
              for w, e in wager_expectations(counts, config).items()]
    d = counts.to_dict()
    flat = {k: v for k, v in d.items() if isinstance(v, int)}
    for side in ("player", "banker"):
        for k, v in d["bonus"][side].items():
            flat[f"bonus_{side}_{k}"] = v
    for k, v in d["naturals"].items():
        flat[f"natural_{k}"] = v
    return ViewOdds(counts.total, flat, wagers)


_FOLLOW_PAIR = LiveViews.follow_pair

#: CPU ns of each odds_for call while :func:`timing_odds` is on
_ODDS_NS: list[int] = []


def timing_odds(on: bool) -> None:
    """Wrap the core's ``odds_for`` and ``LiveViews.follow_pair`` (both views' trackers stepped together) to
    record each call's CPU time in ``_ODDS_NS`` (or unwrap them)."""
    for owner, name in ((projection, "odds_for"), (LiveViews, "follow_pair")):
        current = getattr(owner, name)
        if on:
            def timed(*args, _current=current):  # type: ignore[no-untyped-def]
                t = time.thread_time_ns()
                got = _current(*args)
                _ODDS_NS.append(time.thread_time_ns() - t)
                return got
            timed.wrapped = current  # type: ignore[attr-defined]
            setattr(owner, name, timed)
        else:
            setattr(owner, name, getattr(current, "wrapped", current))


def pairing(on: bool) -> None:
    """Both views' trackers stepped together (the default) or, off, each by its own ``odds_for`` (the A/B)."""
    if on:
        LiveViews.follow_pair = _FOLLOW_PAIR  # type: ignore[method-assign]
    else:
        LiveViews.follow_pair = lambda self, keys, compositions, config: None  # type: ignore[method-assign]


def feed(envs: list[Envelope], odds_per_card: list[int] | None = None,
         ) -> tuple[list[int], list[int], list[int], list[object]]:
    """Fold ``envs`` into a fresh core; per card: ns of absorb+react+evolve, of absorb, of react; outputs.
    ``odds_per_card``: gets, per card, the ns of the odds_for calls of its react (with :func:`timing_odds`)."""
    core = ProjectionCore()
    state = core.initial("B01")
    clock = time.thread_time_ns  # CPU time of this thread: the machine is shared, wall time is noise
    total, absorb, react, published = [], [], [], []
    seq = 0
    for env in envs:
        t0 = clock()
        state = core.absorb(state, env)
        t1 = clock()
        before = len(_ODDS_NS)
        out = core.react(state, env)
        t2 = clock()
        if odds_per_card is not None and isinstance(env.payload, CardDrawn):
            odds_per_card.append(sum(_ODDS_NS[before:]))
        for e in out:
            if isinstance(e, Emit):
                seq += 1
                state = core.evolve(state, Envelope(
                    event_id=f"p{seq}", stream=e.stream or T.PROJECTION_ODDS, table_id="B01", seq=seq,
                    causation_id=e.causation_id or "", correlation_id="", occurred_at=e.occurred_at or env.occurred_at,
                    round_id=e.round_id, shoe_id=e.shoe_id, payload=e.payload))
        t3 = clock()
        if isinstance(env.payload, CardDrawn):
            total.append(t3 - t0)
            absorb.append(t1 - t0)
            react.append(t2 - t1)
        published.extend(e.payload for e in out if isinstance(e, Emit))
    return total, absorb, react, published


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shoes", type=int, default=2, help="whole 8-deck shoes to deal")
    ap.add_argument("--repeat", type=int, default=3, help="passes over the events (fresh core each)")
    ap.add_argument("--seed", type=int, default=26)
    args = ap.parse_args(argv)
    configure("ERROR")  # one JSON line per event would swamp the output

    envs = asyncio.run(deal(args.shoes, args.seed))
    cards = sum(isinstance(e.payload, CardDrawn) for e in envs)
    print(f"dealt: {args.shoes} shoe(s), {len(envs)} input events, {cards} cards")

    from baccarat.odds import ENGINE

    feed(envs)  # warm-up (tables, plans)
    totals, absorbs, reacts, unpaired = [], [], [], []
    published: list[object] = []
    for _ in range(args.repeat):  # alternating: views stepped together (measured) / apart (the A/B baseline)
        t, a, r, published = feed(envs)
        totals += t
        absorbs += a
        reacts += r
        pairing(False)
        try:
            t, _, _, apart = feed(envs)
        finally:
            pairing(True)
        unpaired += t
        if apart != published:
            raise SystemExit("MISMATCH: the outputs differ with the views stepped apart")
    med = statistics.median(totals) / 1e3
    print(f"engine {ENGINE}: per card {statistics.median(totals) / 1e3:.1f} us (absorb "
          f"{statistics.median(absorbs) / 1e3:.1f}, react {statistics.median(reacts) / 1e3:.1f}), "
          f"{len(totals)} cards timed")
    apart_med = statistics.median(unpaired) / 1e3
    print(f"views stepped apart (each by its own follow): per card {apart_med:.1f} us; together: {med:.1f} us "
          f"({apart_med / med:.2f}x)")

    odds_ns: list[int] = []
    timing_odds(True)
    try:
        feed(envs, odds_ns)
    finally:
        timing_odds(False)
    print(f"of which odds (both views' follow_pair + odds_for in react): {statistics.median(odds_ns) / 1e3:.1f} us per card")

    current = projection.odds_for
    projection.odds_for = baseline_odds  # type: ignore[assignment]
    try:
        feed(envs)
        base_t, _, base_r, base_published = feed(envs)
    finally:
        projection.odds_for = current  # type: ignore[assignment]
    if base_published != published:
        raise SystemExit("MISMATCH: the projection's outputs differ from the baseline's")
    base = statistics.median(base_t) / 1e3
    print(f"baseline (full evaluation + Fraction per view): per card {base:.1f} us (react "
          f"{statistics.median(base_r) / 1e3:.1f}); identical outputs ({len(published)} events); "
          f"speedup {base / med:.1f}x")
    print(f"projection_card: card_us={med:.1f} cards={len(totals)}")


if __name__ == "__main__":
    main()
