"""Benchmark of the exact odds engine (baccarat.odds.exact_counts) on mid-shoe compositions.

Run: ``.venv/bin/python bench/odds.py [--compositions 400] [--naive 5] [--seed 20240601]``

* one-time table build per ruleset is timed separately and excluded from the per-call numbers (warm-up);
* per-call time: median over many random mid-shoe compositions (8 decks minus 100–300 random cards, from a
  seeded ``random.Random``: the bench is at the edge, randomness is fine here);
* baseline: a straightforward exact nested-loop pure-Python enumerator (values P1, B1, P2, B2, then third cards
  as Table 1 / Table 2 require, falling-factorial weights, unused positions weighted by the falling factorial of
  the cards left) on a handful of the same compositions; both must give identical counts (every field).

The last line is exactly ``odds: median_us=<x> naive_median_ms=<y> speedup=<z>``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baccarat.drawing import PUNTO_BANCO
from baccarat.odds import Composition, exact_counts, table_for
from baccarat.odds_reference import naive_counts



def mid_shoe_compositions(count: int, seed: int) -> list[Composition]:
    """``count`` compositions: a full 8-deck shoe minus 100–300 random cards."""
    rng = random.Random(seed)
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    return [full.without(rng.sample(shoe, rng.randint(100, 300))) for _ in range(count)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compositions", type=int, default=400, help="mid-shoe compositions to time")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes over the compositions")
    ap.add_argument("--naive", type=int, default=5, help="compositions for the nested-loop baseline")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args(argv)

    t0 = time.perf_counter_ns()
    table_for(PUNTO_BANCO)
    build_ms = (time.perf_counter_ns() - t0) / 1e6
    print(f"one-time table build (punto_banco): {build_ms:.1f} ms")

    comps = mid_shoe_compositions(args.compositions, args.seed)
    print(f"compositions: {len(comps)} (8 decks minus 100-300 cards; totals {min(c.total for c in comps)}"
          f"..{max(c.total for c in comps)}), seed {args.seed}")  # fmt: skip
    for c in comps[:50]:  # warm-up
        exact_counts(c)

    samples: list[int] = []
    clock = time.perf_counter_ns
    for _ in range(args.repeats):
        for c in comps:
            t = clock()
            exact_counts(c)
            samples.append(clock() - t)
    samples.sort()
    median_us = statistics.median(samples) / 1e3
    p10, p90 = samples[len(samples) // 10] / 1e3, samples[9 * len(samples) // 10] / 1e3
    print(f"exact_counts: {len(samples)} calls, median {median_us:.1f} us (p10 {p10:.1f}, p90 {p90:.1f})")

    naive_ms: list[float] = []
    for c in comps[: args.naive]:
        t = clock()
        expected = naive_counts(c.counts, PUNTO_BANCO)
        naive_ms.append((clock() - t) / 1e6)
        got = exact_counts(c).to_dict()
        if got != expected:
            raise SystemExit(f"MISMATCH for {c.counts}:\n engine {got}\n naive  {expected}")
    naive_median_ms = statistics.median(naive_ms)
    print(f"naive nested loops: {len(naive_ms)} compositions, identical counts, "
          f"median {naive_median_ms:.1f} ms ({', '.join(f'{x:.0f}' for x in naive_ms)} ms)")  # fmt: skip
    speedup = naive_median_ms * 1e3 / median_us
    print(f"odds: median_us={median_us:.1f} naive_median_ms={naive_median_ms:.1f} speedup={speedup:.0f}")


if __name__ == "__main__":
    main()
